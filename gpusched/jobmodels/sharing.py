"""GPU sharing with gradient accumulation: the SJF-BSBF job model (eq. 3-7 and xi).

Y. Luo, Q. Wang, S. Shi, J. Lai, S. Qi, J. Zhang and X. Wang, "Scheduling Deep Learning Jobs
in Multi-Tenant GPU Clusters via Wise Resource Sharing" (SJF-BSBF), Sec. IV-A and Sec. V.

* eq. 3: computation :math:`t_{comp}(b) = \\alpha_{comp} + \\beta_{comp} b` for a per-GPU
  (sub-)batch ``b``;
* eq. 4: all-reduce :math:`t_{comm} = \\alpha_{comm} + \\beta_{comm} M`. ``M`` is fixed per
  model, so each model has one constant per link kind (within one server, or across
  servers) plus a term linear in the GPU count ``N`` (ring rounds, eq. 2):
  ``alpha + beta * max(N - 2, 0)``; 0 on one GPU;
* eq. 7: with ``s`` accumulation steps of ``B / s`` samples,
  :math:`t_{iter} = (s-1) t_{comp}(B/s) + (t_{comp}(B/s)^\\delta + t_{comm}^\\delta)^{1/\\delta}`;
* eq. 5-6: a job sharing a GPU runs at :math:`t \\xi`, with :math:`\\xi` per model pair.

The numbers (``gpusched/data/sharing.toml``) are fitted to Pollux's public profiles of the
six models the paper uses (``bert``, ``cifar10``, ``deepspeech2``, ``imagenet``, ``ncf``,
``yolov3``); the file's header gives every source and assumption. The paper's own
interference ratios (its Fig. 3) are not recoverable, so :func:`derive_xi` derives xi from
the time model (time-slicing of computation, see there) and the TOML holds its output.

Sub-batches (Alg. 2): ``B, ceil(B/2), ceil(B/4), ..., 1`` (distinct values, descending).
A sub-batch ``b`` takes ``s = ceil(B / b)`` accumulation steps; eq. 7 is evaluated at
``B / s`` samples per step (the ``s`` steps process exactly ``B`` samples), and memory at
``b`` (the largest step, ``b >= B / s``).

Jobs whose ``model`` is not one of the six are *plain*: rate 1 anywhere, no sub-batch
(config None), no memory, and the engine's default xi (time-slicing, 2) against every job.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.core.state import XI_DEFAULT
from gpusched.errors import CatalogueError, ParamError, TraceError, did_you_mean, show_name
from gpusched.io.files import parse_toml

__all__ = [
    "JOB_MODEL",
    "MODELS",
    "Profile",
    "SharingJobModel",
    "SharingPerf",
    "XiTableError",
    "default_xi",
    "derive_xi",
    "gavel_xi",
    "load_profiles",
    "load_xi_table",
    "mem_gb",
    "sub_batches",
    "t_comm",
    "t_comp",
    "t_iter",
]

#: The six models, in the order of xi's rows and columns (the trace ``model`` column).
MODELS: tuple[str, ...] = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")

#: Kind of a plain job (a model not in :data:`MODELS`) in :meth:`SharingPerf.interference`.
PLAIN = len(MODELS)

_DEFAULT = Path(__file__).resolve().parent.parent / "data" / "sharing.toml"
_GAVEL = _DEFAULT.with_name("sharing_xi_gavel.toml")
#: The 7 parameters of eq. 7's iteration time (the goodput model fits the same ones).
THROUGHPUT_FIELDS = (
    "alpha_comp_s",
    "beta_comp_s",
    "intra_alpha_s",
    "intra_beta_s",
    "inter_alpha_s",
    "inter_beta_s",
    "delta",
)
_FIELDS = (
    *THROUGHPUT_FIELDS,
    "batch_size",
    "params",
    "mem_base_gb",
    "mem_per_sample_gb",
)
_POSITIVE_INT = re.compile(r"[0-9]+")
#: Largest per-GPU batch a trace may give (keeps ``log2`` searches and memory finite).
MAX_BATCH = 1_000_000
#: Largest xi table file read, bytes (36 ratios take well under 1 KiB).
MAX_XI_TABLE_BYTES = 64 * 1024


class XiTableError(ParamError):
    """A user xi table (``load_xi_table``) is missing, not TOML, or malformed."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One model's time and memory parameters (a ``[models.<name>]`` table).

    Attributes
    ----------
    name
        Model name, one of :data:`MODELS`.
    alpha_comp_s, beta_comp_s
        eq. 3: computation time per step, s, and per sample, s.
    intra_alpha_s, intra_beta_s
        eq. 4 within one server: constant, s, and per GPU beyond two, s.
    inter_alpha_s, inter_beta_s
        The same across servers, s.
    delta
        eq. 7 overlap degree (1 = none, large = full overlap).
    batch_size
        Default per-GPU batch :math:`B_k`, samples.
    params
        Trainable parameters, count (documentation of ``mem_base_gb``).
    mem_base_gb, mem_per_sample_gb
        GPU memory: fixed part, GB, and per sample of the sub-batch, GB.
    """

    name: str
    alpha_comp_s: float
    beta_comp_s: float
    intra_alpha_s: float
    intra_beta_s: float
    inter_alpha_s: float
    inter_beta_s: float
    delta: float
    batch_size: int
    params: float
    mem_base_gb: float
    mem_per_sample_gb: float


# --------------------------------------------------------------------------- equations


def t_comp(p: Profile, b: float) -> float:
    """eq. 3: computation time of one step of ``b`` samples per GPU, s."""
    return p.alpha_comp_s + p.beta_comp_s * b


def t_comm(p: Profile, n_gpus: Any, n_servers: Any) -> Any:
    """eq. 4: all-reduce time of one iteration on ``n_gpus`` GPUs over ``n_servers``, s.

    0 on one GPU; else ``alpha + beta * max(n_gpus - 2, 0)`` of the intra-server link when
    ``n_servers == 1``, of the inter-server link otherwise. Integers give a float; arrays
    (broadcast together) give an array, elementwise the same (Pollux's goodput model,
    :mod:`gpusched.jobmodels.goodput`, evaluates many configurations at once).
    """
    if np.ndim(n_gpus) or np.ndim(n_servers):
        k = np.asarray(n_gpus)
        extra = np.maximum(k - 2, 0)
        intra = p.intra_alpha_s + p.intra_beta_s * extra
        inter = p.inter_alpha_s + p.inter_beta_s * extra
        return np.where(k <= 1, 0.0, np.where(np.asarray(n_servers) <= 1, intra, inter))
    if n_gpus <= 1:
        return 0.0
    extra = max(n_gpus - 2, 0)
    if n_servers <= 1:
        return p.intra_alpha_s + p.intra_beta_s * extra
    return p.inter_alpha_s + p.inter_beta_s * extra


def t_iter(p: Profile, batch: Any, sub_batch: Any, n_gpus: Any, n_servers: Any) -> Any:
    """eq. 7: one iteration of ``batch`` samples per GPU in steps of at most ``sub_batch``, s.

    Pollux's eq. 11 is the same form: an atomic batch ``m`` with ``s`` accumulation steps
    is ``t_iter(p, m * (s + 1), m, ...)``. Integer arrays broadcast (see :func:`t_comm`).

    Parameters
    ----------
    p
        The model.
    batch
        The user's per-GPU batch :math:`B`, samples (>= 1).
    sub_batch
        Largest samples per step, ``1 <= sub_batch <= batch``; ``s = ceil(batch /
        sub_batch)`` steps of ``batch / s`` samples each.
    n_gpus, n_servers
        GPUs the job holds and the servers they are on.

    Returns
    -------
    float
        :math:`(s-1) t_{comp}(B/s) + (t_{comp}(B/s)^\\delta + t_{comm}^\\delta)^{1/\\delta}`.
    """
    s = -(-batch // sub_batch)
    tc = t_comp(p, batch / s)
    tm = t_comm(p, n_gpus, n_servers)
    d = p.delta
    overlap: float = (tc**d + tm**d) ** (1.0 / d)
    return (s - 1) * tc + overlap


def mem_gb(p: Profile, sub_batch: int) -> float:
    """GPU memory of one worker holding steps of ``sub_batch`` samples, GB."""
    return p.mem_base_gb + p.mem_per_sample_gb * sub_batch


def sub_batches(batch: int) -> list[int]:
    """Alg. 2's candidates: ``batch, ceil(batch/2), ceil(batch/4), ..., 1``, distinct, descending."""
    out = [batch]
    while out[-1] > 1:
        out.append(-(-out[-1] // 2))
    return out


def ideal_servers(n_gpus: int, gpus_per_server: int) -> int:
    """Fewest servers holding ``n_gpus`` GPUs (the ideal placement)."""
    return max(1, -(-n_gpus // gpus_per_server))


def derive_xi(profiles: dict[str, Profile], n_gpus: int = 4, n_servers: int = 1) -> np.ndarray:
    """Interference ratios from the time model: ``xi[a, b] = 1 + u_a * u_b``.

    ``u = t_comp / t_iter`` is a job's computation duty cycle at its default batch on
    ``n_gpus`` GPUs of ``n_servers`` servers (default: one 4-GPU server of the paper's
    testbed). Two jobs time-slice a GPU's computation: while ``a`` computes (a fraction
    ``u_a`` of its iteration) its partner computes a fraction ``u_b`` of the time and each
    such second costs two, so ``a``'s iteration grows by ``u_a * u_b`` of itself; its
    all-reduce is assumed not to contend (different links). Range ``[1, 2]``, the range of
    the paper's sensitivity sweep (Sec. VI).

    Returns
    -------
    numpy.ndarray
        ``(6, 6)`` float64 in :data:`MODELS` order.
    """
    u = np.empty(len(MODELS))
    for k, name in enumerate(MODELS):
        p = profiles[name]
        b = p.batch_size
        u[k] = t_comp(p, b) / t_iter(p, b, b, n_gpus, n_servers)
    return 1.0 + np.outer(u, u)


# --------------------------------------------------------------------------- files


def _read_toml(path: Path, err: type[Exception]) -> dict[str, Any]:
    try:
        return parse_toml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise err(f"{show_name(path)}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise err(f"{show_name(path)}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise err(f"{show_name(path)}: not valid TOML: {exc}") from None


def _profile(path: Path, name: str, tbl: Any) -> Profile:
    where = f"{show_name(path)}: [models.{name}]"
    if not isinstance(tbl, dict):
        raise CatalogueError(f"{where}: expected a table")
    extra = sorted(set(tbl) - set(_FIELDS))
    if extra:
        raise CatalogueError(f"{where}: unknown key {extra[0]!r}")
    vals: dict[str, float] = {}
    for key in _FIELDS:
        v = tbl.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise CatalogueError(f"{where}: {key}: expected a finite number >= 0, got {v!r}")
        vals[key] = float(v)
    batch = tbl["batch_size"]
    if not isinstance(batch, int) or batch < 1:
        raise CatalogueError(f"{where}: batch_size: expected an integer >= 1, got {batch!r}")
    if vals["delta"] < 1:
        raise CatalogueError(f"{where}: delta: expected a number >= 1, got {vals['delta']!r}")
    del vals["batch_size"]
    return Profile(name=name, batch_size=batch, **vals)


@functools.cache
def _load(path: Path) -> tuple[dict[str, Profile], dict[str, Any]]:
    doc = _read_toml(path, CatalogueError)
    models = doc.get("models")
    if not isinstance(models, dict):
        raise CatalogueError(f"{show_name(path)}: no [models.<name>] tables")
    missing = [m for m in MODELS if m not in models]
    if missing:
        raise CatalogueError(f"{show_name(path)}: missing [models.{missing[0]}]")
    profiles = {m: _profile(path, m, models[m]) for m in MODELS}
    return profiles, doc


def load_profiles(path: str | Path | None = None) -> dict[str, Profile]:
    """The six models' profiles (cached per file).

    Parameters
    ----------
    path
        A TOML file shaped like ``gpusched/data/sharing.toml``; None loads that file.

    Raises
    ------
    CatalogueError
        Missing file, bad TOML, a missing model or a malformed field (named).
    """
    return dict(_load(Path(path) if path is not None else _DEFAULT)[0])


def reference_gpu_mem_gb() -> float:
    """GPU memory of the duration reference (``[reference].gpu_mem_gb``), GB."""
    value = _load(_DEFAULT)[1].get("reference", {}).get("gpu_mem_gb")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise CatalogueError(f"{_DEFAULT}: [reference] gpu_mem_gb: expected a number > 0")
    return float(value)


def solo_sub_batch(p: Profile, batch: int, limit_gb: float) -> int | None:
    """The largest sub-batch of ``batch`` that fits ``limit_gb`` alone (None if none does).

    A job whose requested per-GPU batch does not fit its GPU trains with gradient
    accumulation even alone (Sec. IV-A 4: "workers can only fit one small micro-batch at
    a given time"): that is its default configuration, and its duration is taken there.
    """
    for b in sub_batches(batch):
        if mem_gb(p, b) <= limit_gb:
            return b
    return None


def reference_gpus_per_server() -> int:
    """GPUs per server of the duration reference (``[reference].gpus_per_server``)."""
    ref = _load(_DEFAULT)[1].get("reference", {})
    value = ref.get("gpus_per_server")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CatalogueError(f"{_DEFAULT}: [reference] gpus_per_server: expected an integer >= 1")
    return value


def _xi_value(where: str, a: str, b: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 1:
        raise XiTableError(
            f"{where}: [xi.{a}] {b}: expected a finite number >= 1 (the slowdown of "
            f"{a} beside {b}), got {v!r}"
        )
    return float(v)


def _xi_rows(where: str, table: Any) -> np.ndarray:
    if not isinstance(table, dict):
        raise XiTableError(f"{where}: [xi]: expected a table of tables, [xi.<model>]")
    xi = np.empty((len(MODELS), len(MODELS)))
    for key, row in table.items():
        if key not in MODELS:
            raise XiTableError(
                f"{where}: [xi]: unknown model {key!r}{did_you_mean(key, MODELS)}; "
                f"expected {', '.join(MODELS)}"
            )
        if not isinstance(row, dict):
            raise XiTableError(f"{where}: [xi.{key}]: expected a table of partner = ratio")
        for other in row:
            if other not in MODELS:
                raise XiTableError(
                    f"{where}: [xi.{key}]: unknown model {other!r}"
                    f"{did_you_mean(other, MODELS)}; expected {', '.join(MODELS)}"
                )
    for i, a in enumerate(MODELS):
        row = table.get(a)
        if row is None:
            raise XiTableError(f"{where}: [xi]: missing [xi.{a}] (the slowdowns of {a})")
        for j, b in enumerate(MODELS):
            if b not in row:
                raise XiTableError(
                    f"{where}: [xi.{a}]: missing entry {b!r} (the slowdown of {a} beside {b})"
                )
            xi[i, j] = _xi_value(where, a, b, row[b])
    return xi


def load_xi_table(path: str | Path) -> np.ndarray:
    """A user's interference ratios, ``(6, 6)`` in :data:`MODELS` order.

    The file holds only an ``[xi]`` table shaped like the one of ``sharing.toml``:
    ``[xi.<model>]`` with ``<partner> = ratio`` for all 36 pairs (``xi[a][b]`` is the
    slowdown of ``a`` while sharing a GPU with ``b``, eq. 5-6).

    Raises
    ------
    XiTableError
        One line naming the file, the entry and what was expected: missing file, a
        folder, FIFO or device (refused before it is opened: reading one would block or
        never end), a file over :data:`MAX_XI_TABLE_BYTES`, text that is not UTF-8, bad
        TOML, other top-level keys, an unknown model (with a did-you-mean hint), a missing
        pair, or a value that is not a finite number >= 1.
    """
    from gpusched.io.files import check_small_file, read_small_text

    p = Path(path)
    where = show_name(p)
    what = "table of interference ratios"
    try:
        st = p.stat()
    except FileNotFoundError:
        raise XiTableError(f"{where}: file not found") from None
    except (OSError, ValueError) as exc:
        raise XiTableError(f"{where}: cannot read {what}: {exc}") from None
    check_small_file(
        p,
        st,
        what=what,
        expected="an xi table (a TOML file)",
        max_bytes=MAX_XI_TABLE_BYTES,
        error=XiTableError,
    )
    text = read_small_text(p, what=what, max_bytes=MAX_XI_TABLE_BYTES, error=XiTableError)
    try:
        doc = parse_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise XiTableError(f"{where}: not valid TOML: {exc}") from None
    other = [k for k in doc if k != "xi"]
    if other:
        raise XiTableError(f"{where}: unexpected top-level key {other[0]!r}; expected only [xi]")
    if "xi" not in doc:
        raise XiTableError(f"{where}: no [xi] table")
    return _xi_rows(where, doc["xi"])


def default_xi() -> np.ndarray:
    """The shipped interference ratios (``[xi]`` of ``sharing.toml``), ``(6, 6)``."""
    doc = _load(_DEFAULT)[1]
    if "xi" not in doc:
        raise CatalogueError(f"{_DEFAULT}: no [xi] table")
    return _xi_rows(str(_DEFAULT), doc["xi"])


def gavel_xi() -> np.ndarray:
    """The derived ratios with the pairs Gavel measured where its models are the paper's
    (cifar10 and imagenet beside each other), ``(6, 6)`` in :data:`MODELS` order.

    ``gpusched/data/sharing_xi_gavel.toml``, whose header gives the source (Gavel, OSDI
    2020, cited by the SJF-BSBF paper in Sec. IV-A 3), the mapping of models and the raw
    throughputs each ratio is computed from.
    """
    doc = _read_toml(_GAVEL, CatalogueError)
    if "xi" not in doc:
        raise CatalogueError(f"{show_name(_GAVEL)}: no [xi] table")
    return _xi_rows(show_name(_GAVEL), doc["xi"])


# --------------------------------------------------------------------------- jobs


def _parse_batch(text: str) -> int | None:
    """A ``batch_size`` field: its integer, None when empty; ValueError when malformed."""
    if text == "":
        return None
    if not _POSITIVE_INT.fullmatch(text) or not 1 <= int(text) <= MAX_BATCH:
        raise ValueError(text)
    return int(text)


def _batch_error(value: str) -> str:
    from gpusched.errors import show_value

    return (
        f"column 'batch_size': expected a positive integer (per-GPU batch, at most "
        f"{MAX_BATCH:,}) or empty for the model's default, got {show_value(value)}"
    )


class SharingPerf:
    """The engine's rate model for jobs of the six models on a cluster.

    Parameters
    ----------
    jobs
        A :class:`gpusched.core.jobs.JobTable`: ``model``, ``n_gpus`` and ``extra["batch_size"]``
        (per-GPU batch :math:`B_k`; absent or empty: the model's default).
    cluster
        A :class:`gpusched.io.cluster.ClusterSpec`: ``gpu_server()`` and each group's
        ``gpu_mem_gb`` (None: memory is not checked on those GPUs).
    xi
        ``(6, 6)`` interference ratios; None uses :func:`default_xi`.

    Notes
    -----
    Ideal placement is the fewest servers of this cluster (its largest server), so a job
    runs at rate 1 there at its full batch. A config is a sub-batch (an entry of
    :meth:`sub_batches`) or None (the full batch).

    Raises
    ------
    TraceError
        A ``batch_size`` that is not a positive integer (naming the trace and the job).
    """

    #: notes for the run's header and manifest (e.g. jobs without a batch_size)
    notes: tuple[str, ...] = ()

    def __init__(self, jobs: Any, cluster: Any, xi: np.ndarray | None = None) -> None:
        self._profiles = load_profiles()
        n = len(jobs)
        model = np.asarray(jobs.model, dtype=object) if len(jobs.model) == n else None
        self.kind = np.full(n, PLAIN, dtype=np.int32)
        if model is not None:
            for k, name in enumerate(MODELS):
                self.kind[model == name] = k
        self.n_gpus = np.asarray(jobs.n_gpus, dtype=np.int64)
        self.batch = self._batches(jobs)
        self.gpu_server = np.asarray(cluster.gpu_server(), dtype=np.int64)
        mems = [np.nan if g.gpu_mem_gb is None else float(g.gpu_mem_gb) for g in cluster.groups]
        self.gpu_mem_gb = np.asarray(mems, dtype=np.float64)[cluster.server_group()][
            self.gpu_server
        ]
        self.gpus_per_server = int(np.max(cluster.server_gpus()))
        self.solo = self._solo_batches(jobs)
        xi6 = default_xi() if xi is None else np.asarray(xi, dtype=np.float64)
        # a job of no sharing model beside any job: the engine's default (time-slicing)
        self.xi = np.full((PLAIN + 1, PLAIN + 1), XI_DEFAULT)
        self.xi[:PLAIN, :PLAIN] = xi6
        self._cache: dict[tuple[int, int, int, int, int], float] = {}
        self._subs: dict[tuple[int, int], list[int]] = {}
        mems_seen = set(self.gpu_mem_gb.tolist())
        #: the one GPU memory of the cluster, GB, when all GPUs have it (inf: none known)
        self._uniform_gb: float | None = None
        if np.isnan(self.gpu_mem_gb).all():
            self._uniform_gb = math.inf
        elif len(mems_seen) == 1:
            self._uniform_gb = float(self.gpu_mem_gb[0])

    def _batches(self, jobs: Any) -> np.ndarray:
        out = np.ones(len(jobs), dtype=np.int64)
        col = jobs.extra.get("batch_size") if isinstance(jobs.extra, dict) else None
        errors: list[str] = []
        missing = 0  # rows of a sharing model without a batch: they take the default
        parsed: dict[str, int | None] = {}  # a trace has few distinct batch fields
        defaults = [self._profiles[m].batch_size for m in MODELS]
        rows = np.flatnonzero(self.kind < PLAIN)
        texts = [""] * rows.size if col is None else np.asarray(col, dtype=object)[rows].tolist()
        for j, k, field in zip(rows.tolist(), self.kind[rows].tolist(), texts, strict=True):
            default = defaults[k]
            text = str(field)
            if text in parsed:
                got = parsed[text]
            else:
                try:
                    got = parsed[text] = _parse_batch(text)
                except ValueError:
                    errors.append(
                        f"{show_name(jobs.source)}: job {show_name(jobs.job_id[j])}: "
                        f"{_batch_error(text)}"
                    )
                    continue
            out[j] = default if got is None else got
            missing += got is None
        if errors:
            raise TraceError(errors)
        if missing:  # said, not silent: the batch changes speed and memory (eq. 3-7)
            where = "has no batch_size column" if col is None else "leaves batch_size empty"
            self.notes = (
                f"{show_name(jobs.source)} {where} for {missing:,} job(s) of the six sharing "
                "models: each runs at its model's default per-GPU batch (the catalogue's; "
                "gpusched workload sjf-bsbf writes one per job)",
            )
        return out

    def _solo_batches(self, jobs: Any) -> np.ndarray:
        """Each job's default sub-batch: the largest that fits the cluster's GPUs alone."""
        limit = self.limit_gb(None)
        out = self.batch.copy()
        known: dict[tuple[int, int], int | None] = {}  # (kind, batch): few distinct
        rows = np.flatnonzero(self.kind != PLAIN)
        kinds, batches = self.kind[rows].tolist(), self.batch[rows].tolist()
        for j, k, batch in zip(rows.tolist(), kinds, batches, strict=True):
            key = (k, batch)
            if key in known:
                got = known[key]
            else:
                got = known[key] = solo_sub_batch(self._profiles[MODELS[key[0]]], key[1], limit)
            if got is None:
                raise TraceError(
                    f"{show_name(jobs.source)}: job {show_name(jobs.job_id[j])}: "
                    f"{MODELS[self.kind[j]]} does not fit {limit:g} GB of GPU memory even "
                    "at sub-batch 1"
                )
            out[j] = got
        return out

    # -- solo times ----------------------------------------------------------------------

    def _t(self, job: int, sub: int, n: int, n_servers: int) -> float:
        key = (int(self.kind[job]), int(self.batch[job]), sub, n, n_servers)
        got = self._cache.get(key)
        if got is None:
            p = self._profiles[MODELS[key[0]]]
            got = t_iter(p, key[1], sub, n, n_servers)
            self._cache[key] = got
        return got

    def _sub(self, job: int, config: Any) -> int:
        return int(self.solo[job]) if config is None else int(config)

    def t_iter_s(self, job: int, config: Any = None, n_servers: int | None = None) -> float:
        """Solo iteration time of ``job`` on its GPU count, s (NaN for a plain job).

        ``n_servers`` None: the ideal placement (fewest servers of this cluster).
        """
        if self.kind[job] == PLAIN:
            return math.nan
        n = int(self.n_gpus[job])
        ns = ideal_servers(n, self.gpus_per_server) if n_servers is None else int(n_servers)
        return self._t(job, self._sub(job, config), n, ns)

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        """Solo progress rate on ``gpus`` with sub-batch ``config`` (None: full batch).

        ``t_iter(full batch, ideal placement) / t_iter(config, this placement)``: 1 at the
        ideal placement and full batch, below 1 when spread or accumulating; 1 for a plain job.
        """
        if self.kind[job] == PLAIN:
            return 1.0
        g = np.asarray(gpus)
        n = int(g.shape[0])
        ns = len(set(self.gpu_server[g].tolist()))  # servers it spans (a gang: a small set)
        ideal = self._t(job, int(self.solo[job]), n, ideal_servers(n, self.gpus_per_server))
        return ideal / self._t(job, self._sub(job, config), n, ns)

    # -- memory --------------------------------------------------------------------------

    def sub_batches(self, job: int) -> list[int]:
        """Alg. 2's sub-batches of ``job``, descending from the largest that fits alone
        (``[]`` for a plain job)."""
        if self.kind[job] == PLAIN:
            return []
        key = (int(self.batch[job]), int(self.solo[job]))
        got = self._subs.get(key)
        if got is None:
            got = [b for b in sub_batches(key[0]) if b <= key[1]]
            self._subs[key] = got
        return list(got)

    def mem_gb(self, job: int, config: Any = None) -> float:
        """GPU memory of one of ``job``'s workers at ``config``, GB (0 for a plain job)."""
        if self.kind[job] == PLAIN:
            return 0.0
        return mem_gb(self._profiles[MODELS[self.kind[job]]], self._sub(job, config))

    def limit_gb(self, gpus: np.ndarray | None = None) -> float:
        """The smallest known GPU memory of ``gpus`` (None: of the cluster), GB (inf: none)."""
        if gpus is not None and self._uniform_gb is not None and len(gpus):
            return self._uniform_gb  # every GPU has the same memory (or none known)
        mem = self.gpu_mem_gb if gpus is None else self.gpu_mem_gb[np.asarray(gpus, np.int64)]
        known = mem[~np.isnan(mem)]
        return float(known.min()) if known.size else math.inf

    def _partners_gb(self, partners: list[tuple[int, Any]]) -> float:
        return sum(self.mem_gb(int(j), c) for j, c in partners)

    def largest_fitting(
        self, job: int, partners: list[tuple[int, Any]], gpus: np.ndarray | None = None
    ) -> int | None:
        """The largest sub-batch whose memory fits beside ``partners`` (at their configs).

        Against the smallest GPU memory of ``gpus`` (None: of the whole cluster); without
        any known GPU memory the full batch. None when no sub-batch fits, or for a plain job
        (which has none: start it with config None).
        """
        room = self.limit_gb(gpus) - self._partners_gb(partners)
        for b in self.sub_batches(job):
            if self.mem_gb(job, b) <= room:
                return b
        return None

    def check_start(
        self, job: int, gpus: np.ndarray, config: Any, partners: list[tuple[int, Any]]
    ) -> str | None:
        """None if ``job`` may start on ``gpus`` with ``config`` beside ``partners``, else why.

        ``config`` must be None or one of :meth:`sub_batches` (None only, for a plain job);
        the job's memory at its sub-batch plus each partner's at its own config must fit
        the smallest known GPU memory of ``gpus`` (unchecked where the cluster gives none).
        """
        if config is not None:
            subs = self.sub_batches(job)
            if not subs:
                return f"job {job} is not one of the sharing models: its config must be None"
            if isinstance(config, bool) or not isinstance(config, int | np.integer):
                return f"config {config!r}: expected a sub-batch, one of {subs}"
            if int(config) not in subs:
                return f"config {int(config)}: expected a sub-batch, one of {subs}"
        need = self.mem_gb(job, config) + self._partners_gb(partners)
        limit = self.limit_gb(gpus)
        if need > limit:
            return (
                f"needs {need:.2f} GB of GPU memory (job {job} at sub-batch "
                f"{self._sub(job, config)} plus {len(partners)} partner(s)) but the GPUs "
                f"have {limit:g} GB"
            )
        return None

    def interference(self) -> tuple[np.ndarray, np.ndarray]:
        """``(kind, xi)``: int32 kind per job (6 = plain) and the ``(7, 7)`` ratios.

        ``xi[kind[a], kind[b]]`` is the slowdown of job ``a`` beside job ``b`` (eq. 5-6);
        the plain row and column are :data:`gpusched.core.state.XI_DEFAULT` (time-slicing).
        """
        return self.kind, self.xi


def _reference_batch(
    profiles: dict[str, Profile], model: str, text: str, mem: float
) -> tuple[Profile, int, int] | str:
    """A row's model profile, per-GPU batch and default sub-batch on the duration
    reference's GPUs (``mem`` GB), or what is wrong with its ``model`` or ``batch_size``."""
    if model not in profiles:
        return (
            f"column 'model': {model!r} is not a sharing model "
            f"(expected one of {', '.join(MODELS)})"
        )
    p = profiles[model]
    try:
        got = _parse_batch(text)
    except ValueError:
        return _batch_error(text)
    b = p.batch_size if got is None else got
    solo = solo_sub_batch(p, b, mem)
    if solo is None:
        return (
            f"column 'batch_size': {model} does not fit {mem:g} GB of GPU "
            "memory even at sub-batch 1"
        )
    return p, b, solo


class SharingJobModel:
    """The sharing model as a job model (:mod:`gpusched.core.jobmodel`): rows of the six models."""

    def owns(self, trace: Any) -> np.ndarray:
        """Rows whose ``model`` is exactly one of :data:`MODELS`, bool per row."""
        return np.isin(np.asarray(trace.model, dtype=object), np.array(MODELS, dtype=object))

    def durations(
        self, trace: Any, work: np.ndarray, need: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """Fill ``work[need]`` = iterations x eq. 7 at full batch and ideal placement, s.

        The reference is the paper's testbed: ``[reference].gpus_per_server`` (4) GPUs per
        server, so a job takes the fewest such servers. Errors name the trace line.

        Raises
        ------
        TraceError
            A model that is not one of the six, a ``batch_size`` that is not a positive
            integer, or a duration outside the trace bounds.
        """
        from gpusched.core.jobmodel import duration_problem
        from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

        profiles = load_profiles()
        gps = reference_gpus_per_server()
        mem = reference_gpu_mem_gb()
        name = show_name(trace.source)
        col = trace.extra.get("batch_size")
        errors: list[tuple[int, str]] = []  # (row, what), at most one per row
        rows = np.flatnonzero(need)
        models = np.asarray(trace.model, dtype=object)[rows].tolist()
        texts = [""] * rows.size if col is None else np.asarray(col, dtype=object)[rows].tolist()
        gpus = np.asarray(trace.num_gpus)[rows].tolist()
        # a trace has few distinct (model, batch) and (model, batch, GPUs): each is worked
        # out once
        known: dict[tuple[str, str], tuple[Profile, int, int] | str] = {}
        t_of: dict[tuple[str, str, int], float] = {}
        t_row = np.zeros(rows.size)  # each row's iteration time, s
        ok = np.zeros(rows.size, dtype=bool)  # False: the row's error is in errors
        for r, (model_field, field, n_field) in enumerate(zip(models, texts, gpus, strict=True)):
            key = (str(model_field), str(field))
            got = known.get(key)
            if got is None:
                got = known[key] = _reference_batch(profiles, key[0], key[1], mem)
            if isinstance(got, str):
                errors.append((r, got))
                continue
            p, b, solo = got
            n = int(n_field)
            t = t_of.get((*key, n))
            if t is None:
                t = t_of[(*key, n)] = t_iter(p, b, solo, n, ideal_servers(n, gps))
            t_row[r] = t
            ok[r] = True
        good = np.flatnonzero(ok)
        iterations = np.asarray(trace.iterations, dtype=np.float64)[rows]
        derived = iterations[good] * t_row[good]
        work[rows[good]] = derived
        for r, w in zip(good.tolist(), derived.tolist(), strict=True):
            if not MIN_DURATION_S <= w <= MAX_TIME_S:  # duration_problem's bounds, checked fast
                problem = duration_problem(iterations[r], str(models[r]), int(gpus[r]), w)
                if problem:
                    errors.append((r, problem))
        if errors:
            errors.sort(key=lambda e: e[0])
            raise TraceError([f"{name}:{int(trace.line[rows[r]])}: {what}" for r, what in errors])
        return work, [
            f"{int(need.sum())} job durations derived as iterations x the SJF-BSBF iteration "
            f"time (eq. 7) at full batch (or the largest sub-batch that fits {mem:g} GB) on "
            f"{gps}-GPU servers"
        ]

    def perf(self, jobs: Any, cluster: Any) -> SharingPerf | None:
        """A :class:`SharingPerf` when some job is of the six models, else None."""
        model = np.asarray(getattr(jobs, "model", ()), dtype=object)
        if model.shape != (len(jobs),) or not np.isin(model, MODELS).any():
            return None
        return SharingPerf(jobs, cluster)


JOB_MODEL = SharingJobModel()
