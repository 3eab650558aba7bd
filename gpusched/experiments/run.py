"""Plain functions behind the CLI: resolve inputs, run one replay, compare several.

The CLI commands are thin wrappers over these (weasel's ``project_pull_cli`` ->
``project_pull``), so tests and sweeps call them directly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusched.core.memory import give_back_memory
from gpusched.errors import GpuschedError, check_seed, did_you_mean
from gpusched.io.resources import resolve_trace

if TYPE_CHECKING:
    import numpy as np

#: the bundled default trace: 2,000 real Philly jobs, on which the policies differ clearly
DEFAULT_CLUSTER = "default"
ENGINE_MODES = ("auto", "fused", "python")
#: finest slot, s: below it slot boundaries of a long trace are not exactly representable
MIN_SLOT_S = 1e-6
#: the table of a comparison (``compare --out``; also ``compare --seeds --out``)
COMPARISON_CSV = "comparison.csv"
#: the formats of a run folder's tables (``--format``)
TABLE_FORMATS = ("csv", "parquet")


def check_format(fmt: str) -> str:
    """``fmt`` if it is a table format (``--format``), else a one-line GpuschedError."""
    if fmt not in TABLE_FORMATS:
        raise GpuschedError(
            f"--format must be one of {', '.join(TABLE_FORMATS)}, got '{fmt}'"
            f"{did_you_mean(fmt, TABLE_FORMATS)}"
        )
    return fmt


def check_run_options(
    *, slot_s: float, seed: int, until_s: float | None, mode: str = "auto"
) -> None:
    """Reject run options no simulation can honour, before any work is done.

    Raises
    ------
    GpuschedError
        A slot that is not a number of seconds in [MIN_SLOT_S, MAX_TIME_S] (the largest
        time a trace may hold: a longer slot overflows the slot arithmetic), a negative
        seed, an ``until`` that is negative or not a number, an unknown engine mode.
    """
    from gpusched.io.trace import MAX_TIME_S

    if not (MIN_SLOT_S <= slot_s <= MAX_TIME_S):
        raise GpuschedError(
            f"--slot must be a number of seconds in [{MIN_SLOT_S:g}, {MAX_TIME_S:g}], got {slot_s}"
        )
    check_seed(seed)
    if until_s is not None and not (until_s >= 0):
        raise GpuschedError(f"--until must be a time >= 0 s (or inf), got {until_s}")
    if mode not in ENGINE_MODES:
        raise GpuschedError(
            f"--engine must be one of {', '.join(ENGINE_MODES)}, got '{mode}'"
            f"{did_you_mean(mode, ENGINE_MODES)}"
        )


def check_phase_options(load_s: float, save_s: float) -> None:
    """Refuse ``--load-s``/``--save-s`` values a trace's ``load_s``/``save_s`` column would
    refuse: 0, or a number of seconds in [MIN_DURATION_S, MAX_TIME_S] (a larger one
    overflows the run's clock).

    Raises
    ------
    GpuschedError
        Naming the option, the values accepted and the value given.
    """
    from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

    for flag, value in (("--load-s", load_s), ("--save-s", save_s)):
        if not (value == 0 or MIN_DURATION_S <= value <= MAX_TIME_S):
            raise GpuschedError(
                f"{flag} must be 0 or a number of seconds in [{MIN_DURATION_S:g}, "
                f"{MAX_TIME_S:g}], got {value}"
            )


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """``NAME[:key=value,...]`` as given to ``--policy``.

    ``text`` is the spec as written inline, normalised (:meth:`normal`; results name a run
    by :meth:`label`, which adds the ``-p`` pairs): the whitespace around the
    name, the keys and the values dropped, so that ``-P " fifo"`` and
    ``-P "tiresias : thresholds=100"`` label their runs ``fifo`` and
    ``tiresias:thresholds=100``.
    """

    text: str
    name: str
    params: tuple[str, ...]

    @staticmethod
    def _split(text: str) -> tuple[str, list[str]]:
        """The stripped name and inline ``key=value`` pairs (key and value stripped)."""
        name, _, rest = text.partition(":")
        pieces: list[str] = []
        for piece in rest.split(",") if rest else []:
            if "=" not in piece and pieces:
                pieces[-1] += "," + piece.strip()  # a comma inside a value: thresholds=3250,7200
            elif piece.strip():
                pieces.append(piece)
        return name.strip(), [PolicySpec._pair(piece) for piece in pieces]

    @staticmethod
    def _pair(piece: str) -> str:
        """``key=value`` with the whitespace around the key and the value dropped."""
        key, sep, value = piece.partition("=")
        return f"{key.strip()}{sep}{value.strip()}"

    @staticmethod
    def _joined(name: str, pairs: list[str]) -> str:
        return name + (":" + ",".join(pairs) if pairs else "")

    @classmethod
    def normal(cls, text: str) -> str:
        """``text`` as results name it: ``NAME`` or ``NAME:key=value,...`` with the
        whitespace around the name, each key and each value dropped (and a ``:`` with no
        pair after it), the form :attr:`text` holds."""
        return cls._joined(*cls._split(text))

    @classmethod
    def parse(cls, text: str, extra: list[str] | None = None) -> PolicySpec:
        """Split ``NAME:key=value,...`` and add ``extra`` (``-p``) pairs.

        Raises
        ------
        GpuschedError
            A key given both in ``NAME:key=value`` and by ``-p`` (the label would
            name one value and the run use the other).
        """
        name, pairs = cls._split(text)
        normal = cls._joined(name, pairs)
        inline = {p.partition("=")[0] for p in pairs}
        for pair in extra or ():
            key = pair.partition("=")[0].strip()
            if key in inline:
                raise GpuschedError(
                    f"policy '{name}': parameter '{key}' is given twice "
                    f"('{normal}' and -p {pair}); give it once"
                )
        return cls(normal, name, (*pairs, *(cls._pair(p) for p in extra or ())))

    @property
    def is_file(self) -> bool:
        """The policy is a path to a ``.py`` file rather than a registered name."""
        return self.name.endswith(".py") or "/" in self.name

    def label(self, policy_name: str) -> str:
        """How results name this policy: as given with its ``-p`` pairs after the inline
        ones (``tiresias:starve=2`` for ``-P tiresias -p starve=2``), a file by its
        policy's ``name``."""
        return self._joined(policy_name if self.is_file else self.name, list(self.params))


def build_engine(
    trace: str | None,
    policy: str,
    *,
    cluster: str = DEFAULT_CLUSTER,
    params: list[str] | None = None,
    slot_s: float = 1.0,
    seed: int = 0,
    until_s: float | None = None,
    drop_oversized: bool = False,
    mode: str = "auto",
    load_s: float = 0.0,
    save_s: float = 0.0,
    notice: Callable[[], Any] | None = None,
    events: bool = False,
) -> tuple[Any, Path]:
    """Resolve the inputs and build an :class:`~gpusched.core.engine.Engine`; also return the trace path.

    Parameters are those of :func:`replay`; ``load_s`` and ``save_s`` are the run's
    default load and pause-and-save times (s) for jobs whose trace gives none (see
    :func:`phase_times`); ``events`` keeps the event log (:mod:`gpusched.core.events`;
    events.csv); ``notice`` is a context-manager
    factory wrapped around loading the simulation kernels (see
    :class:`~gpusched.core.engine.Engine`). Annotated pipeline traces (a ``config``
    column) get the placement-aware rate model of their job model (:mod:`gpusched.core.jobmodel`).
    """
    import numpy as np

    from gpusched.core.engine import MAX_EXACT_SLOTS, Engine
    from gpusched.core.jobs import prepare_jobs
    from gpusched.core.policy import parse_params
    from gpusched.core.registry import load_policy_class, make_policy
    from gpusched.core.tasks import has_workers, worker_layout
    from gpusched.io.cluster import load_cluster

    check_run_options(slot_s=slot_s, seed=seed, until_s=until_s, mode=mode)
    check_phase_options(load_s, save_s)
    spec = PolicySpec.parse(policy, params)
    cls = load_policy_class(spec.name)
    kwargs = parse_params(cls, list(spec.params))
    pol = make_policy(cls, kwargs, seed)
    spec_cluster = load_cluster(cluster)
    path = resolve_trace(trace)
    from gpusched.core import jobmodel

    rows = read_for(path, spec_cluster)
    wanted = getattr(cls, "job_model", None)  # e.g. Pollux's goodput model
    if wanted is not None:
        rows = jobmodel.adopt(rows, str(wanted))
    jobs = prepare_jobs(rows, spec_cluster, drop_oversized=drop_oversized)
    del rows  # (the job table holds what the run needs of it)
    give_back_memory()  # what reading the trace used (1M jobs: 170 MB)
    if len(jobs):
        # slot boundaries k * slot must stay exact floats over the whole run: an upper
        # bound of the horizon is the last arrival plus every job run back to back
        horizon = float(jobs.submit_s[-1]) + float(jobs.work_s.sum())
        if horizon / slot_s > MAX_EXACT_SLOTS:
            raise GpuschedError(
                f"--slot {slot_s:g} s is too fine for this trace (it may run to "
                f"{horizon:.3g} s, {horizon / slot_s:.2g} slots; at most 2^50 are exact): "
                "use a coarser slot"
            )
    options = getattr(pol, "job_model_options", None)  # the policy's options for its model
    perf = jobmodel.perf(jobs, spec_cluster, options)  # e.g. pipeline jobs (A-SRPT eq. 4-7)
    roles = jobmodel.roles(jobs, spec_cluster)  # e.g. parameter-server jobs (PD-ORS eq. 1-3)
    horizon_s = getattr(roles, "horizon_s", math.inf)  # the trace's horizon T, if any
    if until_s is None and math.isfinite(horizon_s):
        until_s = horizon_s
    load, save = phase_times(jobs, load_s, save_s)
    notes = _phase_notes(jobs, load_s, save_s) + tuple(getattr(perf, "notes", ()))
    if notes:  # printed above the results and kept in the manifest
        jobs = dataclasses.replace(jobs, notes=tuple(jobs.notes) + notes)
    tasks = jobmodel.tasks(jobs, spec_cluster)  # e.g. data chunks (edge-cloud eq. 1)
    layout = None
    if tasks is not None or has_workers(spec_cluster):
        if tasks is None:
            raise GpuschedError(
                f"{spec_cluster.where}cluster '{spec_cluster.name}' has typed workers (an edge-cloud cluster), but "
                "the trace's jobs are not made of data chunks (no 'chunks' column)"
            )
        if not has_workers(spec_cluster):
            raise GpuschedError(
                f"the trace's jobs are made of data chunks, but cluster '{spec_cluster.name}' "
                "declares no typed workers (use an edge-cloud cluster, e.g. edge-cloud-testbed)"
            )
        if (load > 0).any() or (save > 0).any():
            raise GpuschedError(
                "load and save times do not apply to jobs made of data chunks (shipping a "
                "chunk's data is its load): drop --load-s/--save-s"
            )
        layout = worker_layout(spec_cluster, len(tasks.jobs))
        jobs, spec_cluster = tasks.jobs, layout.cluster
        load, save = np.zeros(len(jobs)), np.zeros(len(jobs))
    engine = Engine(
        jobs,
        spec_cluster,
        pol,
        slot_s=slot_s,
        until_s=math.inf if until_s is None else until_s,
        mode=mode,
        params=kwargs,
        seed=seed,
        perf=perf,
        load_s=load,
        save_s=save,
        notice=notice,
        roles=roles,
        tasks=tasks,
        layout=layout,
        events=events,
    )
    return engine, path


def read_for(path: Path, cluster: Any) -> Any:
    """Read the trace at ``path``; a trace without a duration column on an edge-cloud
    cluster is told that its jobs need a ``chunks`` column (its rows give chunks instead)."""
    from gpusched.core.tasks import has_workers
    from gpusched.errors import TraceError
    from gpusched.io.trace import TASK_COLUMN, read_trace

    try:
        return read_trace(path)
    except TraceError as exc:
        first = exc.errors[0]
        if not (has_workers(cluster) and "missing required column 'duration'" in first):
            raise
        raise TraceError(
            f"{first.split('; the header has')[0]}: cluster '{cluster.name}' runs jobs made of "
            f"data chunks, whose rows give '{TASK_COLUMN}' instead, and this trace has no "
            f"'{TASK_COLUMN}' column (traces/README.md lists the columns)"
        ) from None


def _phase_notes(jobs: Any, load_s: float, save_s: float) -> tuple[str, ...]:
    """Say which wins when ``--load-s``/``--save-s`` are given and the trace (or the job
    models' catalogue) gives some jobs their own times: per job, those win."""
    import numpy as np

    n = len(jobs)
    if not n or (load_s == 0 and save_s == 0):
        return ()
    from gpusched.core import jobmodel

    models = jobmodel.overheads(jobs)
    out = []
    for k, (flag, column, value) in enumerate(
        (("--load-s", "load_s", load_s), ("--save-s", "save_s", save_s))
    ):
        if value == 0:
            continue
        given = np.asarray(getattr(jobs, column, ()), dtype=np.float64)
        in_trace = ~np.isnan(given) if given.shape == (n,) else np.zeros(n, dtype=bool)
        by_model = ~in_trace & ~np.isnan(models[k])
        own = int(in_trace.sum()) + int(by_model.sum())
        if not own:
            continue
        whose = " and ".join(
            what
            for what, m in (
                (f"the trace's {column} column", in_trace),
                ("the model catalogue", by_model),
            )
            if m.any()
        )
        rest = "none" if own == n else f"the other {n - own:,}"
        out.append(
            f"{whose} gives {own:,} of {n:,} jobs their own {column}, which wins over "
            f"{flag} {value:g}: it applies to {rest}"
        )
    return tuple(out)


def phase_times(jobs: Any, load_s: float, save_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-job load and pause-and-save times, s (docs/architecture.md, "Job lifecycle").

    Each job's value is the trace's ``load_s`` (``save_s``) column where its row gives
    one, else the job models' value for it (e.g. the catalogue's for its ``model``; see
    :func:`gpusched.core.jobmodel.overheads`), else the run's default (``--load-s``/``--save-s``,
    0 unless set).

    Parameters
    ----------
    jobs
        The job table; ``jobs.load_s``/``jobs.save_s`` hold the trace's values (NaN where
        a row gives none, or empty when the trace has no such column).
    load_s, save_s
        The run-level defaults, s.
    """
    import numpy as np

    n = len(jobs)
    out = []
    for column in ("load_s", "save_s"):
        given = np.asarray(getattr(jobs, column, ()), dtype=np.float64)
        out.append(given.copy() if given.shape == (n,) else np.full(n, np.nan))
    if n and (np.isnan(out[0]).any() or np.isnan(out[1]).any()):
        from gpusched.core import jobmodel

        from_models = jobmodel.overheads(jobs)
        for k in (0, 1):
            out[k] = np.where(np.isnan(out[k]), from_models[k], out[k])
    for k, default_s in enumerate((load_s, save_s)):
        out[k] = np.where(np.isnan(out[k]), float(default_s), out[k])
        if not out[k].any() and not np.signbit(out[k]).any():  # all +0.0: fresh zeros,
            out[k] = np.zeros(n)  # whose pages the system gives only once written (memory)
    return out[0], out[1]


def replay(
    trace: str | None,
    policy: str,
    *,
    out: str | Path | None = None,
    force: bool = False,
    progress: Callable[[float, int, int], None] | None = None,
    fmt: str = "csv",
    **kwargs: Any,
) -> tuple[dict[str, Any], Any]:
    """Replay one trace under one policy; write results to ``out`` if given.

    Parameters
    ----------
    trace
        A trace path or bundled trace name (None: the bundled default).
    policy
        ``NAME[:key=value,...]`` or a path to a policy file.
    out
        Folder for jobs.csv, timeline.csv, summary.json, manifest.json, written as a
        transaction (:class:`~gpusched.io.runfolder.FolderTransaction`): checked and
        locked before the simulation starts, renamed into place when complete.
    force
        Replace an ``out`` that holds results (else it is refused).
    progress
        Called now and then with (simulated time s, jobs finished, jobs total).
    fmt
        Format of the tables in ``out``: ``"csv"`` (jobs.csv, ...) or ``"parquet"``.
    **kwargs
        ``cluster``, ``params`` (``["key=value"]``), ``slot_s``, ``seed``,
        ``until_s``, ``drop_oversized``, ``mode``: see :func:`build_engine`.

    Returns
    -------
    (summary, result)
        The summary dictionary (as in summary.json) and the :class:`RunResult`.
    """
    from gpusched.io.runfolder import FolderTransaction

    check_format(fmt)
    if out is None:
        return run_into(trace, policy, None, progress=progress, fmt=fmt, **kwargs)
    tx = FolderTransaction(out, force=force)
    tx.check()  # a bad --out fails before the inputs are read
    with tx:
        return run_into(trace, policy, tx.staging, progress=progress, fmt=fmt, **kwargs)


def run_into(
    trace: str | None,
    policy: str,
    folder: Path | None,
    *,
    progress: Callable[[float, int, int], None] | None = None,
    fmt: str = "csv",
    **kwargs: Any,
) -> tuple[dict[str, Any], Any]:
    """:func:`replay` writing into ``folder``, a new folder inside a transaction's staging
    folder (``compare``, ``compare --seeds``, a sweep's cell), or nowhere (None)."""
    from gpusched.core.state import without_scratch
    from gpusched.results.metrics import summarize, write_results

    engine, path = build_engine(trace, policy, **kwargs)
    result = engine.run(progress=progress)
    del engine  # (the run is over: with it go its policy, kernels and working arrays)
    result.state = without_scratch(result.state)
    give_back_memory()  # the timeline's chunks, joined into one (1M jobs: 60 MB)
    if folder is None:
        return summarize(result), result
    return write_results(result, folder, str(path), fmt), result


def policy_labels(policies: list[str], params: list[str] | None) -> list[str]:
    """Check every policy spec of a comparison without running it; return their labels.

    Raises
    ------
    GpuschedError
        A spec that does not load or parse, two specs of one label (``fifo`` and
        `` fifo``: their rows could not be told apart), or two that are the same run
        (``fifo`` and ``fifo:backfill=false``, :func:`~gpusched.core.registry.policy_identity`).
    """
    checked = [_policy_label(text, params) for text in policies]
    labels = [label for label, _ in checked]
    identities = [identity for _, identity in checked]
    for i, (label, identity) in enumerate(checked):
        if label in labels[:i]:
            raise GpuschedError(
                f"--policy {labels.index(label) + 1} and {i + 1} are both labelled "
                f"'{label}' (their rows could not be told apart): give each policy once"
            )
        if identity in identities[:i]:
            first = identities.index(identity)
            raise GpuschedError(
                f"--policy {first + 1} and {i + 1} are the same run ('{labels[first]}' and "
                f"'{label}': the same policy and parameters, counting defaults): give "
                "each policy once"
            )
    return labels


def _policy_label(text: str, params: list[str] | None) -> tuple[str, str]:
    """Check a policy spec (name, file, parameters) without running it; return its label
    and its identity (:func:`~gpusched.core.registry.policy_identity`)."""
    from gpusched.core.policy import parse_params
    from gpusched.core.registry import load_policy_class, policy_identity

    spec = PolicySpec.parse(text, params)
    cls = load_policy_class(spec.name)
    kwargs = parse_params(cls, list(spec.params))
    label = spec.label(str(getattr(cls, "name", cls.__name__)))
    return label, policy_identity(cls, spec.name, kwargs)


def _jct_rates(rows: list[dict[str, Any]]) -> None:
    """Runs of jobs made of data chunks: each row's ``jct_rate``, its total JCT over the
    ``srtf`` row's (the edge-cloud paper's "JCT rate", Sec. V-A), when srtf ran."""
    base = next((r for r in rows if r["policy"] == "srtf" and "n_tasks" in r), None)
    if base is None or not base.get("total_jct_s") or base.get("n_unfinished"):
        return
    for r in rows:
        if "n_tasks" in r and not r.get("n_unfinished"):
            r["jct_rate"] = r["total_jct_s"] / base["total_jct_s"]


def compare(
    trace: str | None,
    policies: list[str],
    *,
    out: str | Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    each_result: Callable[[int, Any, dict[str, Any]], Any] | None = None,
    fmt: str = "csv",
    job_progress: Callable[[float, int, int], None] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Replay one trace under several policy specs; write comparison.csv to ``out``.

    Every policy spec is checked before the first run, and two specs of the same label
    (``fifo`` and `` fifo``) are refused. Each row is
    ``{"policy": label, **summary}`` (the spec as given; a policy file by its ``name``;
    nested summary keys flattened, :func:`gpusched.results.metrics.flat_summary`);
    each run's own outputs go to ``out/<index>-<label>/``. An ``out`` that already holds
    results is refused unless ``force``, which replaces it whole.
    ``each_result(i, result, summary)`` is called after run ``i`` (the CLI prints the
    trace and cluster line from the first, and each run's policy notes under the table).
    Runs of jobs made of data chunks get a
    ``jct_rate`` when ``srtf`` is among the policies (:func:`_jct_rates`). ``fmt`` is
    the format of the runs' tables (see :func:`replay`). ``job_progress`` is each run's
    ``progress`` (simulated time, jobs finished, jobs): a long comparison shows how far
    it got, not minutes of silence. ``out`` is written as one
    transaction (:class:`~gpusched.io.runfolder.FolderTransaction`): it appears, whole,
    when every run is done.
    """
    from gpusched.io.runfolder import FolderTransaction

    check_format(fmt)
    labels = policy_labels(policies, kwargs.get("params"))
    if job_progress is not None:
        kwargs = {**kwargs, "progress": job_progress}
    if out is None:
        return _compare_runs(trace, policies, labels, None, progress, each_result, fmt, kwargs)
    tx = FolderTransaction(out, force=force)
    tx.check()
    with tx:
        return _compare_runs(
            trace, policies, labels, tx.staging, progress, each_result, fmt, kwargs
        )


def _compare_runs(
    trace: str | None,
    policies: list[str],
    labels: list[str],
    folder: Path | None,
    progress: Callable[[str], None] | None,
    each_result: Callable[[int, Any, dict[str, Any]], Any] | None,
    fmt: str,
    kwargs: dict[str, Any],
) -> list[dict[str, Any]]:
    """:func:`compare`'s runs, written into the staging ``folder`` if given."""
    import csv

    from gpusched.io.runfolder import create_exclusive, safe_name
    from gpusched.results.metrics import flat_summary

    rows: list[dict[str, Any]] = []
    for i, (text, label) in enumerate(zip(policies, labels, strict=True)):
        if progress:
            progress(label)
        sub = None if folder is None else folder / f"{i:02d}-{safe_name(label)}"
        summary, result = run_into(trace, text, sub, fmt=fmt, **kwargs)
        if each_result is not None:
            each_result(i, result, summary)
        rows.append({"policy": label, **flat_summary(summary)})
    _jct_rates(rows)
    if folder is not None and rows:
        with create_exclusive(folder / COMPARISON_CSV, text=True) as fh:
            names = list(dict.fromkeys(k for r in rows for k in r))  # policies' own keys too
            w = csv.DictWriter(fh, fieldnames=names)
            w.writeheader()
            w.writerows(rows)
    return rows
