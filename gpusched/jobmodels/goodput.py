"""Pollux's job model: goodput = system throughput x statistical efficiency, and the agent
that picks each job's batch size.

A. Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI 2021, Sec. 3 (eq. 5-11) and 4.1, as its artifact's simulator runs it
(petuum/adaptdl, branch osdi21-artifact, commit c793c70, ``simulator/``: sim =
``simulator.py``, app = ``applications.py``, gp = ``goodput.py``; read, not copied).

* **Throughput** (eq. 8-11): one iteration of an atomic batch ``m`` per GPU with ``s``
  gradient-accumulation steps on ``K`` GPUs over ``N`` nodes takes
  ``T = s T_grad(m) + (T_grad(m)^g + T_sync(K, N)^g)^(1/g)``: the sharing model's eq. 7,
  evaluated by the same code (:func:`gpusched.jobmodels.sharing.t_iter`) with the same
  parameters (``sharing.toml``; ``throughput="refit"``: ``pollux_refit.toml``).
  ``throughput="table"``: the artifact's measured profile tables, interpolated as its
  simulator does (:mod:`gpusched.jobmodels.goodput_tables`, app L204-227), at the job's
  placement (GPUs per node in allocation order, sim L241-248); agents then estimate with
  the refit. A trace's ``throughput`` column sets it when the policy does not.
* **Statistical efficiency** (eq. 5-6): at global batch ``M = K m (s+1)`` a step makes
  ``gain = (var + sqr) / (var / (M/M0) + sqr)`` iterations' progress at the initial batch
  ``M0``, with the gradient's squared norm ``sqr`` and variance ``var`` measured by the
  artifact per application, validated batch size and epoch (``pollux_gradstats.csv.gz``),
  each interpolated linearly in ``M`` (app L186-202).
* **Goodput** = gain / T, in iterations at ``M0`` per second (sim L125-131). A job is done
  when its progress reaches its epochs' worth (app L132-150): ``max_epochs`` epochs of the
  application (``pollux.toml``) for the Pollux workload, ``iterations x K x b / M0`` for a
  trace row that gives ``iterations`` at a per-GPU batch ``b`` on ``K`` GPUs.
* **The agent** (gp L91-145, sim L64-83): a job started with ``config="adaptive"`` (Pollux)
  takes, on every allocation and whenever what it knows changes, the batch of the 50
  geometric candidates in ``[max(M0, min_local K), max_batch]`` that maximises its
  *estimated* goodput; any other job (``config`` None: the trace's batch, "TunedJobs",
  and ncf also under Pollux, sim L191-192) keeps its global batch ``B``:
  ``m = ceil(ceil(B/K) / (s+1))`` with the fewest steps ``s`` that fit the largest atomic
  batch (at least one on one GPU, gp L121-125). Its estimate: the throughput parameters it
  has *observed* (paper Sec. 4.1, prior-driven exploration, gp L173-204: the constant of the
  computation is half the time seen while one atomic batch was seen, the sync terms of
  links not yet used are 0, their growth terms 0 while no more than 2 GPUs were used, and
  inter-node ones at least 1.1 x intra-node ones while no inter-node run was seen); with
  ``explore="oracle"``, the true ones (the paper's offline-seeded variant, Sec. 5.3.2). The
  efficiency it extrapolates from the statistics measured at its current batch (eq. 6).
  It re-tunes at every epoch boundary and, after a change of what it knows or of its
  batch, once a scheduling interval later (the simulator re-tunes after each 60 s step).

Engine units: a job's work is its progress times ``t_ref``, one iteration at ``M0`` on one
GPU (``sharing.toml``), s; its rate is goodput x ``t_ref``. Each (re)start costs the
application's restart time, 30 s, as a load phase (sim L163): rows of this model have load
time 30 s and save time 0. Jobs are elastic (``gang_range``): a start may give any GPU
count up to the application's limit; the agent's rate changes with the epoch
(``progress_rate``, see :mod:`gpusched.core.sharing`).

Where the artifact differs, on purpose (docs/pollux.md, with ablations):
by default the simulated truth is this model, not the artifact's interpolated profile
tables (``throughput="table"``; the fit's mean error is 8-17 %); an agent's estimate follows the rules
above, not an online L-BFGS-B fit of noisy tables; a re-tune applies from the decision
point at which it falls (the artifact rounds an epoch's end to whole seconds).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import CatalogueError, ParamError, TraceError, did_you_mean, show_name
from gpusched.io.files import parse_toml
from gpusched.jobmodels.goodput_tables import ProfileTable, load_tables, read_bundled_csv
from gpusched.jobmodels.sharing import (
    MODELS,
    THROUGHPUT_FIELDS,
    Profile,
    load_profiles,
    t_iter,
)

__all__ = [
    "ADAPTIVE",
    "APPS",
    "EXPLORE",
    "JOB_MODEL",
    "THROUGHPUT",
    "Agent",
    "App",
    "GoodputJobModel",
    "GoodputPerf",
    "Reference",
    "best_configs",
    "candidates",
    "fixed_config",
    "gain",
    "iteration_time",
    "load_apps",
    "reference",
]

#: The six applications (the ``model`` column), as in the sharing model.
APPS: tuple[str, ...] = MODELS
#: ``Start.config`` of a job whose agent picks its batch (Pollux).
ADAPTIVE = "adaptive"
#: What an agent knows of the throughput parameters (see the module docstring).
EXPLORE = ("prior", "oracle")
#: The simulated throughput: the sharing model's parameters, our refit of them to all
#: profile rows, or the artifact's profile tables interpolated (agents then estimate with
#: the refit; :mod:`gpusched.jobmodels.goodput_tables`).
THROUGHPUT = ("sharing", "refit", "table")

_DATA = Path(__file__).resolve().parent.parent / "data"
_THETA = THROUGHPUT_FIELDS
_EPS = 1e-8  # gp L110: tolerance of the floor/ceil of the batch splits
_N_CANDIDATES = 50  # gp L108: np.geomspace's default


@dataclass(frozen=True, slots=True)
class Reference:
    """The simulator's settings (``[reference]`` of ``pollux.toml``)."""

    nodes: int
    gpus_per_node: int
    interval_s: float
    restart_s: float
    fairness_p: float
    max_gpus: int


@dataclass(frozen=True, slots=True)
class App:
    """One application: limits (``pollux.toml``), gradient statistics, epochs' progress.

    Attributes
    ----------
    name, kind
        Name and index in :data:`APPS`.
    profile
        Throughput parameters (eq. 8-11), a sharing :class:`~gpusched.jobmodels.sharing.Profile`.
    init_batch, max_batch, min_local, max_local
        M0, the largest validated batch, the smallest and largest per-GPU atomic batch.
    max_epochs
        Epochs a job trains.
    pollux_batch, pollux_max_gpus
        A fixed batch also under Pollux (0: adaptive) and the most GPUs Pollux and Optimus
        give a job (0: no limit of the application's own).
    batches
        Validated batch sizes, ascending (float64).
    sqr, var, iters
        ``(len(batches), epochs)``: gradient squared norm and variance during each epoch,
        and iterations after each epoch, at each validated batch.
    bounds
        Progress (iterations at M0) at the start of epochs ``0..max_epochs``:
        ``bounds[max_epochs]`` is the whole job (app L132-136).
    t_ref
        One iteration at M0 on one GPU under ``sharing.toml``, s: the engine's work unit.
    table
        With ``throughput="table"``: the artifact's measured profile, the simulated truth
        (``profile`` is then the refit, what agents and the oracle's estimate start from).
    """

    name: str
    kind: int
    profile: Profile
    init_batch: int
    max_batch: int
    min_local: int
    max_local: int
    max_epochs: int
    pollux_batch: int
    pollux_max_gpus: int
    batches: np.ndarray
    sqr: np.ndarray
    var: np.ndarray
    iters: np.ndarray
    bounds: np.ndarray
    t_ref: float
    table: ProfileTable | None = None  #: the measured profile (``throughput="table"``)

    @property
    def progress(self) -> float:
        """A whole job's progress, iterations at M0."""
        return float(self.bounds[self.max_epochs])

    def theta(self) -> np.ndarray:
        """The 7 throughput parameters, in the order of :data:`_THETA`."""
        return np.array([getattr(self.profile, k) for k in _THETA])

    def stats(self, batch: Any, epoch: int) -> tuple[Any, Any]:
        """True ``(sqr, var)`` at global batch(es) ``batch`` during ``epoch`` (app L186-202)."""
        e = min(max(int(epoch), 0), self.sqr.shape[1] - 1)
        return (
            np.interp(batch, self.batches, self.sqr[:, e]),
            np.interp(batch, self.batches, self.var[:, e]),
        )


# --------------------------------------------------------------------------- equations


def gain(m0: float, batch: Any, sqr: Any, var: Any) -> Any:
    """eq. 5-6: progress of one step at global ``batch``, in iterations at ``m0`` (gp L81-89;
    where both statistics are 0 the gain is 1, as gp L87)."""
    scale = np.asarray(batch, dtype=np.float64) / m0
    denom = var / scale + sqr
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)


_PROFILES: dict[tuple[str, tuple[float, ...]], Profile] = {}


def _profile(theta: np.ndarray, base: Profile) -> Profile:
    """``base`` with the throughput parameters ``theta`` (cached: agents' estimates recur)."""
    key = (base.name, tuple(float(x) for x in theta))
    got = _PROFILES.get(key)
    if got is None:
        if len(_PROFILES) > 100_000:
            _PROFILES.clear()
        fields: dict[str, Any] = dict(zip(_THETA, key[1], strict=True))
        got = _PROFILES[key] = dataclasses.replace(base, **fields)
    return got


def iteration_time(p: Profile, m: Any, s: Any, k: Any, n: Any) -> Any:
    """eq. 11: one iteration of atomic batch ``m`` with ``s`` accumulation steps on ``k``
    GPUs over ``n`` nodes, s: the sharing model's eq. 7 (same code, see the module doc)."""
    m = np.asarray(m, dtype=np.int64)
    return t_iter(p, m * (np.asarray(s, dtype=np.int64) + 1), m, k, n)


def fixed_config(app: App, batch: int, k: int, one_gpu_steps: bool = False) -> tuple[int, int]:
    """``(m, s)`` of a job that keeps global ``batch`` on ``k`` GPUs (sim L76-83).

    ``s`` is the fewest accumulation steps whose atomic batch fits ``max_local``; on one GPU
    at least one when the batch exceeds M0 (sim L79-80), or always with ``one_gpu_steps``
    (Optimus' rule, artifact ``optimus.py`` L71-72); the atomic batch is capped so the
    global batch does not exceed ``max_batch`` (sim L82-83).
    """
    local = math.ceil(batch / k - _EPS)
    s = math.ceil(local / app.max_local - _EPS) - 1
    if k == 1 and (one_gpu_steps or batch > app.init_batch):
        s = max(1, s)
    m = math.ceil(local / (s + 1) - _EPS)
    return min(m, int(app.max_batch / (k * (s + 1)))), s


_CANDIDATES: dict[tuple[str, int], tuple[np.ndarray, ...]] = {}
_TIMES: dict[tuple[str, tuple[float, ...], int, int], np.ndarray] = {}


def _candidate_table(app: App, top: int) -> tuple[np.ndarray, ...]:
    """``(m, s, valid, batch)`` of :func:`candidates` for 1..``top`` GPUs (cached)."""
    got = _CANDIDATES.get((app.name, top))
    if got is None:
        k = np.arange(1, top + 1).reshape(-1, 1)
        m, s, valid = _candidates(app, k)
        got = _CANDIDATES[(app.name, top)] = (m, s, valid, k * m * (s + 1))
    return got


def candidates(app: App, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The agent's 50 geometric global batches per GPU count (gp L104-134).

    Returns ``(m, s, valid)``, each ``(len(k), 50)``: the atomic batch and accumulation
    steps of each candidate and whether ``m`` is within the application's limits (an
    invalid candidate has goodput 0). ``k`` whose smallest candidate exceeds ``max_batch``
    have none valid. (Computed once per application for 1 to 64 GPUs, or more if asked.)
    """
    k = np.asarray(k, dtype=np.int64).ravel()
    table = _candidate_table(app, max(64, int(k.max(initial=1))))
    return table[0][k - 1], table[1][k - 1], table[2][k - 1]


def _candidates(app: App, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=np.int64).reshape(-1, 1)
    lo = np.maximum(app.init_batch, app.min_local * k).astype(np.float64)
    ok = lo <= app.max_batch
    lo = np.where(ok, lo, app.max_batch)
    batch = np.geomspace(lo[:, 0], float(app.max_batch), _N_CANDIDATES, axis=1)
    local = batch / k
    s = np.ceil(local / app.max_local - _EPS) - 1
    s = np.where((k == 1) & (local > app.init_batch + _EPS), np.maximum(s, 1), s)
    m = np.ceil(local / (s + 1) - _EPS)
    valid = (app.min_local <= m) & (m <= app.max_local) & ok
    return m.astype(np.int64), s.astype(np.int64), valid


def _times(app: App, theta: np.ndarray, multi: int, top: int) -> np.ndarray:
    """Iteration time of every candidate on 1..``top`` GPUs on one node (``multi`` 0) or
    several (1), with throughput ``theta``: ``(top, 50)`` s (cached per ``theta``)."""
    key = (app.name, tuple(float(x) for x in theta), multi, top)
    got = _TIMES.get(key)
    if got is None:
        if len(_TIMES) > 20_000:
            _TIMES.clear()
        m, s, valid, _ = _candidate_table(app, top)
        k = np.arange(1, top + 1).reshape(-1, 1)
        got = iteration_time(_profile(theta, app.profile), np.where(valid, m, 1), s, k, 1 + multi)
        _TIMES[key] = got
    return got


def best_configs(
    app: App, theta: np.ndarray, sqr: float, var: float, k: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The agent's choice on ``k`` GPUs over ``n`` nodes (arrays): ``(goodput, m, s)``.

    Estimated goodput (gain / T, iterations at M0 per s) with throughput ``theta`` and the
    efficiency extrapolated from ``(sqr, var)`` (gp L91-145); the first best candidate on
    ties; goodput 0 where no candidate is valid. (The model depends on the nodes only
    through ``n > 1``.)
    """
    k = np.asarray(k, dtype=np.int64).ravel()
    n = np.asarray(n, dtype=np.int64).ravel()
    top = max(64, int(k.max(initial=1)))
    m_all, s_all, valid_all, batch_all = _candidate_table(app, top)
    i = k - 1
    m, s, valid, batch = m_all[i], s_all[i], valid_all[i], batch_all[i]
    if (n > 1).all():
        t = _times(app, theta, 1, top)[i]
    elif (n <= 1).all():
        t = _times(app, theta, 0, top)[i]
    else:
        t = np.where((n > 1)[:, None], _times(app, theta, 1, top)[i], _times(app, theta, 0, top)[i])
    good = np.where(valid, gain(app.init_batch, batch, sqr, var) / t, 0.0)
    j = np.argmax(good, axis=1)
    rows = np.arange(k.size)
    return good[rows, j], m[rows, j], s[rows, j]


# --------------------------------------------------------------------------- files


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return parse_toml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{show_name(path)}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{show_name(path)}: not valid TOML: {exc}") from None


def _number(where: str, key: str, v: Any, lo: float, integer: bool = True) -> Any:
    ok = not isinstance(v, bool) and isinstance(v, int if integer else int | float)
    if not ok or not math.isfinite(v) or v < lo:
        kind = "an integer" if integer else "a number"
        raise CatalogueError(f"{where}: {key}: expected {kind} >= {lo:g}, got {v!r}")
    return v


def reference(path: Path | None = None) -> Reference:
    """The ``[reference]`` settings of ``pollux.toml``."""
    path = path or _DATA / "pollux.toml"
    ref = _read_toml(path).get("reference")
    where = f"{show_name(path)}: [reference]"
    if not isinstance(ref, dict):
        raise CatalogueError(f"{where}: missing")
    p = ref.get("fairness_p")
    if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p):
        raise CatalogueError(f"{where}: fairness_p: expected a finite number, got {p!r}")
    return Reference(
        nodes=_number(where, "nodes", ref.get("nodes"), 1),
        gpus_per_node=_number(where, "gpus_per_node", ref.get("gpus_per_node"), 1),
        interval_s=float(_number(where, "interval_s", ref.get("interval_s"), 1e-6, False)),
        restart_s=float(_number(where, "restart_s", ref.get("restart_s"), 0, False)),
        fairness_p=float(p),
        max_gpus=_number(where, "max_gpus", ref.get("max_gpus"), 1),
    )


def _gradstats(path: Path) -> dict[str, dict[int, list[tuple[float, float, float, float]]]]:
    """app -> batch -> rows (progress, iteration, sqr, var) by epoch."""
    out: dict[str, dict[int, list[tuple[float, float, float, float]]]] = {}
    want = ("app", "batch_size", "epoch", "progress", "iteration", "grad_sqr", "grad_var")
    reader = read_bundled_csv(path, want)
    for i, row in enumerate(reader):
        try:
            batch, epoch = int(row["batch_size"]), int(row["epoch"])
            vals = tuple(float(row[c]) for c in want[3:])
        except (TypeError, ValueError):
            raise CatalogueError(f"{show_name(path)}: data row {i + 1}: not numbers") from None
        if not all(math.isfinite(v) and v >= 0 for v in vals):
            raise CatalogueError(f"{show_name(path)}: data row {i + 1}: expected numbers >= 0")
        rows = out.setdefault(row["app"], {}).setdefault(batch, [])
        if epoch != len(rows):
            raise CatalogueError(f"{show_name(path)}: data row {i + 1}: epochs out of order")
        rows.append(vals)  # type: ignore[arg-type]
    return out


def _app(
    name: str, tbl: Any, where: str, stats: dict[int, list[Any]], prof: Profile, base: Profile
) -> App:
    if not isinstance(tbl, dict):
        raise CatalogueError(f"{where}: expected a table")
    keys = ("init_batch", "max_batch", "min_local_batch", "max_local_batch", "max_epochs")
    extra = sorted(set(tbl) - {*keys, "pollux_batch", "pollux_max_gpus"})
    if extra:
        raise CatalogueError(f"{where}: unknown key {extra[0]!r}")
    v = {k: _number(where, k, tbl.get(k), 1) for k in keys}
    fixed = _number(where, "pollux_batch", tbl.get("pollux_batch", 0), 0)
    cap = _number(where, "pollux_max_gpus", tbl.get("pollux_max_gpus", 0), 0)
    batches = sorted(stats)
    if not batches or v["init_batch"] != batches[0] or v["max_batch"] != batches[-1]:
        raise CatalogueError(
            f"{where}: init_batch and max_batch must be the smallest and largest validated "
            f"batch of pollux_gradstats.csv.gz ({batches[:1]} and {batches[-1:]})"
        )
    if not v["min_local_batch"] <= v["max_local_batch"] or v["min_local_batch"] > v["max_batch"]:
        raise CatalogueError(f"{where}: expected min_local_batch <= max_local_batch, max_batch")
    n_ep = min(len(stats[b]) for b in batches)
    if v["max_epochs"] > n_ep:
        raise CatalogueError(f"{where}: max_epochs {v['max_epochs']} > the {n_ep} measured")
    arr = np.asarray([list(stats[b][:n_ep]) for b in batches], dtype=np.float64)
    progress = arr[:, :, 0].min(axis=0)  # app L136: min over the batch sizes
    bounds = np.concatenate([[0.0], progress[: v["max_epochs"]]])
    m0 = int(v["init_batch"])
    t_ref = float(iteration_time(base, m0, 0, 1, 1))
    return App(
        name=name,
        kind=APPS.index(name),
        profile=prof,
        init_batch=m0,
        max_batch=int(v["max_batch"]),
        min_local=int(v["min_local_batch"]),
        max_local=int(v["max_local_batch"]),
        max_epochs=int(v["max_epochs"]),
        pollux_batch=int(fixed),
        pollux_max_gpus=int(cap),
        batches=np.asarray(batches, dtype=np.float64),
        sqr=arr[:, :, 2],
        var=arr[:, :, 3],
        iters=arr[:, :, 1],
        bounds=bounds,
        t_ref=t_ref,
    )


@functools.cache
def load_apps(throughput: str = "sharing") -> tuple[App, ...]:
    """The six applications in :data:`APPS` order (cached).

    ``throughput``: ``"sharing"`` (the sharing model's parameters, the default),
    ``"refit"`` (``pollux_refit.toml``) or ``"table"`` (the refit, and the measured profile
    as the truth, :attr:`App.table`). Work units always use ``sharing.toml``.

    Raises
    ------
    CatalogueError
        A missing or malformed data file (named, with the key).
    """
    if throughput not in THROUGHPUT:
        raise CatalogueError(f"throughput {throughput!r}: expected one of {', '.join(THROUGHPUT)}")
    path = _DATA / "pollux.toml"
    doc = _read_toml(path)
    apps = doc.get("apps")
    if not isinstance(apps, dict):
        raise CatalogueError(f"{show_name(path)}: no [apps.<name>] tables")
    stats = _gradstats(_DATA / "pollux_gradstats.csv.gz")
    base = load_profiles()
    profiles = base if throughput == "sharing" else _refit_profiles(base)
    tables = load_tables() if throughput == "table" else {}
    out = []
    for name in APPS:
        if name not in apps or name not in stats:
            raise CatalogueError(f"{show_name(path)}: missing [apps.{name}] or its statistics")
        where = f"{show_name(path)}: [apps.{name}]"
        app = _app(name, apps[name], where, stats[name], profiles[name], base[name])
        if tables:
            if name not in tables:
                raise CatalogueError(f"pollux_profiles.csv.gz: no rows of {name}")
            app = dataclasses.replace(app, table=tables[name])
        out.append(app)
    return tuple(out)


def _refit_profiles(base: dict[str, Profile]) -> dict[str, Profile]:
    path = _DATA / "pollux_refit.toml"
    models = _read_toml(path).get("models")
    if not isinstance(models, dict):
        raise CatalogueError(f"{show_name(path)}: no [models.<name>] tables")
    out = {}
    for name in APPS:
        tbl = models.get(name)
        where = f"{show_name(path)}: [models.{name}]"
        if not isinstance(tbl, dict) or sorted(tbl) != sorted(_THETA):
            raise CatalogueError(f"{where}: expected exactly {', '.join(_THETA)}")
        theta = [float(_number(where, k, tbl[k], 0, False)) for k in _THETA]
        if theta[-1] < 1:
            raise CatalogueError(f"{where}: delta: expected a number >= 1, got {theta[-1]!r}")
        out[name] = _profile(np.asarray(theta), base[name])
    return out


# --------------------------------------------------------------------------- the agent


@dataclass
class Agent:
    """What one job's agent knows and runs (the policy reads it through ``view.perf``).

    ``theta`` is its estimate of the throughput parameters; ``sqr`` and ``var`` the
    gradient statistics it measured last (NaN before it ran); ``version`` changes whenever
    either does (a policy may cache what it derives from them).
    """

    app: App
    batch: int  #: the trace's global batch (the fixed batch of config None)
    adaptive: bool = False
    ms: set[int] = field(default_factory=set)  #: atomic batches observed
    tg_first: float = math.nan  #: computation time of the first atomic batch observed, s
    multi_node: bool = False  #: ran on more than one node
    single_multi: bool = False  #: ran on several GPUs of one node
    over_two: bool = False  #: ran on more than 2 GPUs
    max_k: int = 0  #: most GPUs it ran on
    sqr: float = math.nan
    var: float = math.nan
    epoch: int = 0
    k: int = 0
    n: int = 0
    placement: tuple[int, ...] = ()  #: GPUs per node, in the order of its GPUs
    m: int = 0
    s: int = 0
    starts: int = 0
    theta: np.ndarray = field(default_factory=lambda: np.zeros(7))
    version: int = 0

    @property
    def profiled(self) -> bool:
        """It has run (its agent has throughput parameters; sim L57)."""
        return bool(self.ms)

    @property
    def global_batch(self) -> int:
        """Current global batch ``k m (s+1)`` (0 while it never ran)."""
        return self.k * self.m * (self.s + 1)


class GoodputPerf:
    """The engine's performance model for goodput jobs (see the module docstring).

    Parameters
    ----------
    jobs, cluster
        The job table and cluster.
    kinds, batches
        Per job: the application index in :data:`APPS` (-1: not a goodput job, rate 1) and
        the trace's global batch.
    work
        Per job, the work (s at rate 1) the job table holds.
    explore, throughput
        See :data:`EXPLORE` and :data:`THROUGHPUT`.
    """

    def __init__(
        self,
        jobs: Any,
        cluster: Any,
        kinds: np.ndarray,
        batches: np.ndarray,
        *,
        explore: str = "prior",
        throughput: str = "sharing",
    ) -> None:
        if explore not in EXPLORE:
            raise CatalogueError(f"explore {explore!r}: expected one of {', '.join(EXPLORE)}")
        self.apps = load_apps(throughput)
        self.ref = reference()
        self.explore = explore
        self.kinds = np.asarray(kinds, dtype=np.int64)
        self.work = np.asarray(jobs.work_s, dtype=np.float64)
        self.gpu_server = np.asarray(cluster.gpu_server(), dtype=np.int64)
        self.max_gang = int(cluster.n_gpus if cluster.allow_spread else max(cluster.server_gpus()))
        self.agents: list[Agent | None] = [
            Agent(self.apps[k], int(b)) if k >= 0 else None
            for k, b in zip(self.kinds.tolist(), np.asarray(batches).tolist(), strict=True)
        ]
        for a in self.agents:
            if a is not None:
                a.theta = a.app.theta()
        n_gpus = np.asarray(jobs.n_gpus, dtype=np.int64)
        self._hi = n_gpus.copy()
        for j, a in enumerate(self.agents):
            if a is not None:
                self._hi[j] = max(n_gpus[j], min(self.max_gang, self.app_max_gpus(a.app)))

    # -- the engine's hooks ---------------------------------------------------------------

    def app_max_gpus(self, app: App) -> int:
        """Most GPUs a job of ``app`` may hold: its own limit, else ``max_batch //
        min_local`` and the simulator's 64 (sim L328-333)."""
        if app.pollux_max_gpus:
            return app.pollux_max_gpus
        return min(self.ref.max_gpus, app.max_batch // app.min_local)

    def gang_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Elastic gangs: 1 to the application's most GPUs (others: their fixed size)."""
        lo = np.where(self.kinds >= 0, 1, self._hi)
        return lo, self._hi

    def check_start(
        self, job: int, gpus: np.ndarray, config: Any, partners: list[Any]
    ) -> str | None:
        """A goodput job starts with config None (its trace's batch) or ``"adaptive"``
        (its agent's), alone on its GPUs, on no more GPUs than its batch can split into."""
        a = self.agents[job]
        if a is None:
            return (
                None if config is None else f"job {job} is not a goodput job: config must be None"
            )
        if config is not None and config != ADAPTIVE:
            return f"config {config!r}: expected None (the trace's batch) or {ADAPTIVE!r}"
        if partners:
            return "goodput jobs do not share GPUs"
        k = len(gpus) if len(gpus) else 1
        app = a.app
        most = self._batch(a, config) or app.max_batch
        if k > most // app.min_local:
            return (
                f"{k} GPUs: a batch of {most} of {app.name} splits over at most "
                f"{most // app.min_local} GPUs of at least {app.min_local} samples"
            )
        return None

    @staticmethod
    def _batch(a: Agent, config: Any) -> int:
        """The fixed global batch of a job started with ``config`` (0: its agent's)."""
        if config == ADAPTIVE:
            return a.app.pollux_batch
        return a.batch

    def progress_rate(
        self, job: int, gpus: np.ndarray, config: Any, remaining_s: float, started: bool
    ) -> tuple[float, float]:
        """Rate of ``job`` on ``gpus`` now, and the work left at its next re-tune.

        At a start the agent takes the new allocation (a new batch for an adaptive job);
        afterwards at each epoch boundary and a scheduling interval after what it knows
        or runs changed. Returns ``(goodput x t_ref, remaining s at the next change)``.
        """
        a = self.agents[job]
        if a is None:
            return 1.0, -math.inf
        app = a.app
        scale = self.work[job] / (app.progress * app.t_ref)  # this job's epochs' share
        bounds = app.bounds * app.t_ref * scale  # s of work at each epoch's start
        done = self.work[job] - remaining_s
        a.epoch = min(int(np.searchsorted(bounds, done + 1e-6, "right")) - 1, app.max_epochs - 1)
        before = (a.version, a.global_batch)
        if started:
            a.starts += 1
            a.adaptive = config == ADAPTIVE and not app.pollux_batch
            a.k = len(gpus)
            servers = self.gpu_server[np.asarray(gpus, dtype=np.int64)].tolist()
            a.n = len(set(servers))
            a.placement = _runs(servers)
        self._choose(a, config)
        self._observe(a)
        good = self._true_goodput(a)
        rate = good * app.t_ref
        level = self.work[job] - bounds[a.epoch + 1] if a.epoch + 1 < app.max_epochs else -math.inf
        if (a.version, a.global_batch) != before or started:
            # it re-tunes after its next scheduling interval's step (sim L156)
            wait = self.ref.interval_s - (self.ref.restart_s if started else 0.0)
            level = max(level, remaining_s - rate * wait)
        return rate, level if level < remaining_s else -math.inf

    def describe(self, job: int) -> str | None:
        """The job's batch and allocation, e.g. ``batch 1024 = 8 GPUs x 128 x 1 step, 2 nodes``."""
        a = self.agents[job]
        if a is None or not a.k:
            return None
        steps = f"{a.s + 1} steps" if a.s else "1 step"
        nodes = f", {a.n} nodes" if a.n > 1 else ""
        how = "agent" if a.adaptive else "fixed"
        return f"batch {a.global_batch} = {a.k} GPUs x {a.m} x {steps}{nodes} ({how})"

    # -- the agent ------------------------------------------------------------------------

    def _choose(self, a: Agent, config: Any) -> None:
        """Pick ``(m, s)`` for the current allocation (sim L64-83)."""
        app = a.app
        if not a.adaptive:
            a.m, a.s = fixed_config(app, self._batch(a, config), a.k)
            return
        if not a.profiled:  # no throughput parameters yet: the smallest batch (sim L69-70)
            a.m, a.s = fixed_config(app, max(app.init_batch, app.min_local * a.k), a.k)
            return
        _, m, s = best_configs(app, a.theta, a.sqr, a.var, np.array([a.k]), np.array([a.n]))
        m0, s0 = int(m[0]), int(s[0])
        a.m, a.s = min(m0, int(app.max_batch / (a.k * (s0 + 1)))), s0  # sim L82-83

    def _observe(self, a: Agent) -> None:
        """The agent measures its current configuration: statistics and throughput."""
        app = a.app
        sqr, var = app.stats(a.global_batch, a.epoch)
        changed = (float(sqr), float(var)) != (a.sqr, a.var)
        a.sqr, a.var = float(sqr), float(var)
        if a.m not in a.ms:
            if not a.ms:
                if app.table is not None:  # what it measures: step - sync where it runs
                    a.tg_first = app.table.iteration(a.placement, a.m, 0)[1]
                else:
                    a.tg_first = float(iteration_time(app.profile, a.m, 0, 1, 1))
            a.ms.add(a.m)
            changed = True
        for flag, value in (
            ("multi_node", a.n > 1),
            ("single_multi", a.n == 1 and a.k > 1),
            ("over_two", a.k > 2),
        ):
            if value and not getattr(a, flag):
                setattr(a, flag, True)
                changed = True
        a.max_k = max(a.max_k, a.k)
        if changed:
            a.theta = self._estimate(a)
            a.version += 1

    def _estimate(self, a: Agent) -> np.ndarray:
        """Its throughput parameters as fitted from what it observed (gp L173-204)."""
        th = a.app.theta()
        if self.explore == "oracle":
            return th
        if len(a.ms) == 1:  # alpha_c pinned at half the time seen (gp L173-180)
            (m,) = a.ms
            th[0], th[1] = a.tg_first / 2, a.tg_first / (2 * m)
        if not a.single_multi:
            th[2] = th[3] = 0.0
        if not a.multi_node:
            th[4] = th[5] = 0.0
        if not a.over_two:
            th[3] = th[5] = 0.0
        if not a.multi_node:  # inter-node at least 1.1 x intra-node (gp L199-204)
            th[4], th[5] = max(th[4], 1.1 * th[2]), max(th[5], 1.1 * th[3])
        return th

    def _true_goodput(self, a: Agent) -> float:
        app = a.app
        if app.table is not None:
            t = app.table.iteration(a.placement, a.m, a.s)[0]
        else:
            t = float(iteration_time(app.profile, a.m, a.s, a.k, a.n))
        sqr, var = app.stats(a.global_batch, a.epoch)
        return float(gain(app.init_batch, a.global_batch, sqr, var)) / t

    # -- what policies read ---------------------------------------------------------------

    def agent(self, job: int) -> Agent | None:
        """Job ``job``'s agent (None: not a goodput job). Read-only by contract."""
        return self.agents[job]

    def step_time(self, job: int, k: int, n: int) -> float:
        """Optimus' oracle: true time of one iteration of ``job``'s trace batch on ``k``
        GPUs over ``n`` nodes, s (artifact ``optimus.py`` L65-79)."""
        a = self.agents[job]
        if a is None:
            return math.nan
        batch = a.app.pollux_batch or a.batch
        m, s = fixed_config(a.app, batch, k, one_gpu_steps=True)
        if a.app.table is not None:  # packed 4 per node (opt L65-68), from the table
            per = self.ref.gpus_per_node
            placement = (per,) * (k // per) + ((k % per,) if k % per else ())
            return a.app.table.iteration(placement, m, s)[0]
        return float(iteration_time(a.app.profile, m, s, k, n))

    def remaining_iterations(self, job: int, epoch: int) -> float:
        """Optimus' oracle: iterations from the end of ``epoch`` to the end of the job at its
        trace batch (artifact ``optimus.py`` L13-19, app L152-163; 1 in its last epoch)."""
        a = self.agents[job]
        if a is None:
            return math.nan
        app = a.app
        last = app.max_epochs - 1
        if epoch >= last:
            return 1.0
        batch = a.app.pollux_batch or a.batch
        it = [float(np.interp(batch, app.batches, app.iters[:, e])) for e in (last, epoch)]
        scale = float(self.work[job]) / (app.progress * app.t_ref)
        return (it[0] - it[1]) * scale


# --------------------------------------------------------------------------- rows


class GoodputJobModel:
    """Goodput jobs as a job model (:mod:`gpusched.core.jobmodel`): rows whose ``goodput``
    column is 1. A policy that declares ``job_model = "goodput"`` (Pollux) has every row of
    the six applications adopted (:meth:`adopt`), so it runs, e.g., the sharing workloads."""

    name = "goodput"

    def owns(self, trace: Any) -> np.ndarray:
        """Rows with ``goodput`` = 1, bool per row."""
        return _marked(trace)

    def adopt(self, trace: Any) -> Any:
        """``trace`` with ``goodput`` = 1 on every row naming one of the six applications
        (``model``) with ``iterations`` and no ``duration``.

        Raises
        ------
        TraceError
            Some row is not such a row: the policies that adopt this model (Pollux,
            Optimus) schedule goodput jobs only. The first such row's line is named, before
            the run rather than at its first decision.
        """
        model = np.asarray(trace.model, dtype=object)
        mine = np.isin(model, np.array(APPS, dtype=object))
        timed = ~np.isnan(np.asarray(trace.duration, dtype=np.float64))
        mine &= ~timed
        mine |= _marked(trace)
        if not mine.all():
            j = int(np.flatnonzero(~mine)[0])
            lines = np.asarray(getattr(trace, "line", ()), dtype=np.int64)
            where = f":{int(lines[j])}" if j < lines.size else ""
            what = f"model {str(model[j])!r}" if str(model[j]) else "no model"
            raise TraceError(
                f"{show_name(trace.source)}{where}: not a goodput job ({what}"
                f"{', with a duration' if timed[j] else ''}); this policy schedules goodput jobs "
                f"only, {int((~mine).sum()):,} of {mine.size:,} rows are not: rows of the six "
                f"Pollux applications (model {', '.join(APPS)}) with iterations and "
                "batch_size and no duration, as gpusched workload pollux or sjf-bsbf writes"
            )
        col = np.where(mine, "1", "").astype(object)
        return dataclasses.replace(trace, extra={**trace.extra, "goodput": col})

    def durations(
        self, trace: Any, work: np.ndarray, need: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """``work[need]`` = the job's progress (iterations at M0) x ``t_ref``, s.

        Progress = ``iterations x num_gpus x batch_size / M0`` (the trace's per-GPU batch).

        Raises
        ------
        TraceError
            An unknown application, a batch that is not a positive integer, a global batch
            outside the application's validated range, or one that does not split into
            atomic batches within its limits on the row's GPUs; each naming the line.
        """
        from gpusched.core.jobmodel import duration_problem
        from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

        apps = {a.name: a for a in load_apps()}
        name = show_name(trace.source)
        col = trace.extra.get("batch_size")
        rows = np.flatnonzero(need)
        models = np.asarray(trace.model, dtype=object)[rows].tolist()
        texts = [""] * rows.size if col is None else np.asarray(col, dtype=object)[rows].tolist()
        gpus = np.asarray(trace.num_gpus)[rows].tolist()
        its = np.asarray(trace.iterations, dtype=np.float64)[rows].tolist()
        errors: list[str] = []
        tcol = trace.extra.get("throughput")
        tvals = [""] * rows.size if tcol is None else np.asarray(tcol, dtype=object)[rows].tolist()
        for r, model, text, k, it, tv in zip(
            rows.tolist(), models, texts, gpus, its, tvals, strict=True
        ):
            problem = _row_problem(apps, str(model), str(text), int(k), str(tv) == "table")
            if problem is None:
                app = apps[str(model)]
                w = it * int(text) * int(k) / app.init_batch * app.t_ref
                if MIN_DURATION_S <= w <= MAX_TIME_S:
                    work[r] = w
                else:
                    problem = duration_problem(it, str(model), int(k), w)
            if problem:
                errors.append(f"{name}:{int(trace.line[r])}: {problem}")
        if tcol is not None:
            vals = tvals
            for r, v in zip(rows.tolist(), vals, strict=True):
                if str(v) not in ("", *THROUGHPUT):
                    errors.append(
                        f"{name}:{int(trace.line[r])}: column 'throughput': expected one of "
                        f"{', '.join(THROUGHPUT)} (or empty), got {str(v)!r}"
                    )
            if not errors and len({str(v) for v in vals} - {""}) > 1:
                errors.append(
                    f"{name}: column 'throughput': the goodput rows name "
                    f"{', '.join(sorted({str(v) for v in vals} - {''}))}; one run simulates one"
                )
        if errors:
            raise TraceError(errors)
        return work, [
            f"{rows.size} goodput job durations (Pollux's job model): progress x one "
            "iteration at the initial batch on one GPU"
        ]

    def overheads(self, jobs: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """Load time 30 s (the restart of every allocation, sim L163), save time 0."""
        mask = _marked(jobs)
        if not mask.any():
            return None
        load = np.where(mask, reference().restart_s, np.nan)
        return load, np.where(mask, 0.0, np.nan)

    def perf(self, jobs: Any, cluster: Any, **options: Any) -> GoodputPerf | None:
        """A :class:`GoodputPerf` when some job is a goodput job (``options``: ``explore``,
        ``throughput``), else None.

        Without a ``throughput`` option, the trace's ``throughput`` column (one value for
        all goodput rows, checked by :meth:`durations`) chooses it, else ``sharing``; a
        policy's option that contradicts the column is an error.
        """
        mask = _marked(jobs)
        if not mask.any():
            return None
        given = _trace_throughput(jobs, mask)
        if given:
            asked = options.get("throughput", given)
            if asked != given:
                raise ParamError(
                    f"throughput {asked!r} contradicts the trace's 'throughput' column "
                    f"({given!r}): drop one"
                )
            options = {**options, "throughput": given}
        model = np.asarray(jobs.model, dtype=object)
        kinds = np.full(len(jobs), -1, dtype=np.int64)
        batches = np.zeros(len(jobs), dtype=np.int64)
        col = jobs.extra["batch_size"]
        for j in np.flatnonzero(mask).tolist():
            kinds[j] = APPS.index(str(model[j]))
            batches[j] = int(col[j]) * int(jobs.n_gpus[j])
        return GoodputPerf(jobs, cluster, kinds, batches, **options)


def _runs(servers: list[int]) -> tuple[int, ...]:
    """GPUs per node as the artifact's simulator forms a placement from its allocation list:
    one entry per run of equal nodes (simulator.py L241-248)."""
    out: list[int] = []
    for i, x in enumerate(servers):
        if i and x == servers[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return tuple(out)


def _trace_throughput(rows: Any, mask: np.ndarray) -> str:
    """The ``throughput`` column's value on the rows ``mask`` ("" if absent or empty)."""
    extra = getattr(rows, "extra", None)
    col = extra.get("throughput") if isinstance(extra, dict) else None
    if col is None:
        return ""
    values = set(np.asarray(col, dtype=object)[mask].tolist()) - {"", None}
    return str(next(iter(values))) if len(values) == 1 else ""


def _marked(rows: Any) -> np.ndarray:
    """Rows (of a trace or job table) whose ``goodput`` column is 1."""
    extra = getattr(rows, "extra", None)
    col = extra.get("goodput") if isinstance(extra, dict) else None
    if col is None:
        return np.zeros(len(rows), dtype=bool)
    mine: np.ndarray = np.asarray(col, dtype=object) == "1"
    return mine


def _row_problem(
    apps: dict[str, App], model: str, text: str, k: int, table: bool = False
) -> str | None:
    """What is wrong with a goodput row's application, batch and GPUs (None: nothing).

    A row may ask for more GPUs than Pollux and Optimus give its application (ncf: 1, sim
    L332-333) only when the run's truth is the artifact's measured profile (``table``),
    which has ncf on up to 64 GPUs, as the artifact's simulator runs its realistic
    workloads (Tiresias keeps the trace's GPUs, sim L357-366).
    """
    if model not in apps:
        return (
            f"column 'model': {model!r} is not a Pollux application"
            f"{did_you_mean(model, APPS)} (expected one of {', '.join(APPS)})"
        )
    app = apps[model]
    if not text.isascii() or not text.isdigit() or int(text) < 1 or len(text) > 9:
        return f"column 'batch_size': expected a whole number of samples per GPU >= 1, got {text!r}"
    batch = int(text) * k
    # the largest per-GPU batch: ceil(max_batch / k), capped to max_batch in all (sim L77-83)
    if not app.init_batch <= batch or int(text) > -(-app.max_batch // k):
        return (
            f"column 'batch_size': {text} x {k} GPUs = a global batch of {batch}; {model} is "
            f"validated for {app.init_batch} to {app.max_batch} ({-(-app.max_batch // k)} per "
            "GPU at most)"
        )
    m, _ = fixed_config(app, batch, k)
    capped = app.pollux_max_gpus and k > app.pollux_max_gpus and not table
    if not app.min_local <= m <= app.max_local or capped:
        return (
            f"column 'batch_size': a global batch of {batch} on {k} GPUs gives steps of {m} "
            f"samples per GPU; {model} takes {app.min_local} to {app.max_local}"
            + (
                f" on at most {app.pollux_max_gpus} GPU(s) (more under the measured profile: "
                "a 'throughput' column of 'table', as gpusched workload pollux --load 0 writes)"
                if app.pollux_max_gpus
                else ""
            )
        )
    return None


JOB_MODEL = GoodputJobModel()
