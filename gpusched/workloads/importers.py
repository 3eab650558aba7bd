"""Importers that turn public GPU-cluster traces into the canonical :class:`~gpusched.io.trace.Trace`.

Each importer reads one source format (``.csv`` or ``.csv.gz``), validates it with
``file:line: column 'c': expected ..., got 'v'`` messages (all collected, then raised as one
:class:`~gpusched.errors.TraceError`), maps the source columns to the canonical ones and
rebases submit times so that the earliest kept job is submitted at 0 s. Rows are kept in
file order.

Rows that are well formed but cannot be replayed as a GPU job (a CPU-only pod, a pod that
never ran, a job asking for 0 GPUs) are *excluded*, never dropped silently: every importer
returns an :class:`ImportReport` alongside the trace that counts the excluded rows per
reason and notes rows that were kept but changed. :func:`import_trace_with_report` returns
both; :func:`import_trace` returns only the trace and issues an
:class:`ImportExclusionWarning` whose text is the report when any row was excluded.

Kinds (keys of :data:`IMPORTERS`): ``philly-pollux``, ``gavel-msr-philly``, ``tiresias``,
``openb``. The column mapping of each is documented on its ``read_*`` function.
"""

from __future__ import annotations

import functools
import re
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError, TraceError, did_you_mean, show_name, show_value
from gpusched.io.files import parse_toml
from gpusched.io.trace import (
    CANONICAL_COLUMNS,
    DURATION_WHAT,
    ITERATIONS_WHAT,
    MAX_GPUS,
    MAX_TIME_S,
    MIN_DURATION_S,
    SUBMIT_WHAT,
    CsvTable,
    Trace,
    duration_ok,
    iterations_ok,
    submit_ok,
    validate_trace,
    write_trace,
)

__all__ = [
    "IMPORTERS",
    "IMPORTERS_WITH_REPORT",
    "ImportExclusionWarning",
    "ImportReport",
    "convert_trace",
    "gavel_v100_throughputs",
    "import_trace",
    "import_trace_with_report",
    "read_gavel_msr_philly",
    "read_openb",
    "read_philly_pollux",
    "read_tiresias",
]


class ImportExclusionWarning(UserWarning):
    """Issued by :func:`import_trace` when an importer excluded rows; the text is the report."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an importer did with the rows of its source file.

    Parameters
    ----------
    kind
        Importer name, e.g. ``"openb"``.
    source
        The file that was read.
    n_rows
        Data rows read from the file (header and blank lines not counted).
    n_jobs
        Jobs in the resulting trace; always ``n_rows - n_excluded``.
    excluded
        Rows left out, as ``{reason: count}`` (only reasons with a non-zero count).
    notes
        Rows kept but changed or caveats on their values, one sentence each.

    Notes
    -----
    ``str(report)`` gives one line per fact, e.g. ``excluded 1088 rows: CPU-only pod
    (num_gpu = 0)``, ready to print.
    """

    kind: str
    source: str
    n_rows: int
    n_jobs: int
    excluded: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def n_excluded(self) -> int:
        """Total rows excluded, over all reasons."""
        return sum(self.excluded.values())

    def __str__(self) -> str:
        out = [f"{self.kind}: read {self.n_rows} rows from {self.source}, kept {self.n_jobs} jobs"]
        out += [f"excluded {n} rows: {why}" for why, n in self.excluded.items()]
        out += [f"note: {s}" for s in self.notes]
        return "\n".join(out)


# --------------------------------------------------------------------------- helpers

_BIG = 2**53  # bound of integer columns that only label rows (seed, line, gpu_milli)


def _gpus(src: CsvTable, col: str, lo: int) -> np.ndarray:
    """A GPU-count column: an integer in [lo, MAX_GPUS] (0 allowed where rows are excluded)."""
    return src.integers(col, f"an integer in [{lo}, {MAX_GPUS}]", lo, MAX_GPUS)


def _rebase(t: np.ndarray) -> np.ndarray:
    """Shift times so that the earliest is 0 (empty arrays unchanged)."""
    return t - t.min() if t.size else t


def _finish(
    kind: str,
    src: CsvTable,
    keep: np.ndarray,
    reasons: list[tuple[str, np.ndarray]],
    columns: dict[str, Any],
    extra: dict[str, np.ndarray],
    notes: list[str],
) -> tuple[Trace, ImportReport]:
    """Build the trace of the kept rows and the report (``reasons``: first match wins).

    The trace is checked with :func:`~gpusched.io.trace.validate_trace` (a backstop: the
    importers already check their source columns), so an importer never returns a trace
    that :func:`~gpusched.io.trace.read_trace` would reject once written.
    """
    excluded: dict[str, int] = {}
    left = np.ones(src.n, dtype=bool)
    for why, mask in reasons:
        hit = mask & left
        if hit.any():
            excluded[why] = int(hit.sum())
        left &= ~mask
    assert np.array_equal(left, keep)
    clash = next((k for k in extra if k in CANONICAL_COLUMNS), None)
    if clash is not None:  # (a Trace refuses it: a ValueError traceback)
        raise TraceError(
            f"{show_name(src.name)}:1: column {show_value(clash)}: the {kind} importer keeps "
            f"columns it does not map as they are, but {clash!r} is one of gpusched's own "
            "(the trace format's); rename it in the source (e.g. src_" + clash + ") or drop it"
        )
    idx = np.flatnonzero(keep)
    submit = _rebase(np.asarray(columns["submit_time"], dtype=np.float64)[idx])
    n_keep = idx.size
    trace = Trace(
        job_id=columns["job_id"][idx],
        submit_time=submit,
        num_gpus=np.asarray(columns["num_gpus"])[idx],
        duration=columns.get("duration", np.full(src.n, np.nan))[idx],
        iterations=columns.get("iterations", np.full(src.n, np.nan))[idx],
        model=columns.get("model", np.full(src.n, "", dtype=object))[idx],
        extra={k: v[idx] for k, v in extra.items()},
        source=f"{kind}:{src.name}",
        line=src.lines[idx],
    )
    validate_trace(trace)
    report = ImportReport(kind, src.name, src.n, n_keep, excluded, tuple(notes))
    return trace, report


# --------------------------------------------------------------------------- importers


def read_philly_pollux(path: str | Path) -> tuple[Trace, ImportReport]:
    """Import the Philly per-job summary shipped with the Pollux artifact.

    Source: ``petuum/adaptdl`` (branch ``osdi21-artifact``) ``simulator/traces/philly.csv``,
    as stored in ``philly_jobs.csv.gz`` with columns ``job_id, submit_time,
    submit_offset_s, duration_s, num_gpus, gpu_time_s, vc``.

    Mapping:

    - ``job_id`` -> ``job_id`` (the job's row index in the source file, kept as text);
    - ``submit_offset_s`` (s since the first submission) -> ``submit_time``, rebased so the
      earliest kept job is at 0 s;
    - ``duration_s`` (s, sum of the job's attempt lengths) -> ``duration``;
    - ``num_gpus`` -> ``num_gpus``;
    - ``vc`` (Philly virtual cluster) -> ``user`` (the file has no user column);
    - ``submit_time`` (wall-clock ``YYYY-MM-DD HH:MM:SS``) -> extra ``submit_datetime``;
    - ``gpu_time_s`` is skipped: it is ``duration_s * num_gpus`` on every row.

    Nothing is excluded; a duration or GPU count that is not positive is an error.

    Parameters
    ----------
    path
        The ``philly_jobs.csv[.gz]`` file.

    Returns
    -------
    trace : Trace
        One job per row, in file order.
    report : ImportReport
        Row counts.

    Raises
    ------
    TraceError
        On a missing column or a malformed field (file, line and column named).
    """
    req = ("job_id", "submit_time", "submit_offset_s", "duration_s", "num_gpus", "vc")
    src = CsvTable(path)
    src.require(req)
    ids = src.text("job_id")
    src.unique_ids(ids, "job_id")
    submit = src.floats("submit_offset_s", SUBMIT_WHAT, submit_ok)
    duration = src.floats("duration_s", DURATION_WHAT, duration_ok)
    gpus = _gpus(src, "num_gpus", 1)
    src.raise_if_bad()
    keep = np.ones(src.n, dtype=bool)
    cols = {"job_id": ids, "submit_time": submit, "num_gpus": gpus, "duration": duration}
    extra = {"user": src.text("vc"), "submit_datetime": src.text("submit_time")}
    return _finish("philly-pollux", src, keep, [], cols, extra, [])


_JOB_TYPE = re.compile(r"(.+?) \(batch size (\d+)\)")

_GAVEL_THROUGHPUTS = Path(__file__).resolve().parent.parent / "data" / "gavel_throughputs.toml"


@functools.cache
def _gavel_throughputs(path: Path) -> dict[str, float]:
    """Read and check the ``[steps_per_s]`` table of a Gavel throughput file (cached)."""
    try:
        doc = parse_toml(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GpuschedError(f"{path}: cannot read Gavel's throughputs: {exc}") from None
    table = doc.get("steps_per_s")
    if doc.get("schema") != 1 or doc.get("worker_type") != "v100" or not isinstance(table, dict):
        raise GpuschedError(
            f"{path}: expected schema = 1, worker_type = 'v100' and a [steps_per_s] table"
        )
    out: dict[str, float] = {}
    for job_type, rate in table.items():
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < np.inf:
            raise GpuschedError(
                f"{path}: steps_per_s.{job_type!r}: expected a positive number, got {rate!r}"
            )
        out[job_type] = float(rate)
    return out


def gavel_v100_throughputs() -> dict[str, float]:
    """Gavel's measured throughput of each of its job types on one V100, steps/s.

    The ``"null"`` (running alone) entries of ``scheduler/oracle_throughputs.json`` in
    ``stanford-futuredata/gavel`` (commit ``19b15c0``, MIT), bundled as
    ``gpusched/data/gavel_throughputs.toml``, whose header gives the source and license.

    Returns
    -------
    dict[str, float]
        Job type (e.g. ``"ResNet-50 (batch size 64)"``, ``"A3C"``) -> steps per second,
        26 entries; a fresh copy on each call.

    Raises
    ------
    GpuschedError
        If the bundled file is unreadable or malformed (a broken installation).
    """
    return dict(_gavel_throughputs(_GAVEL_THROUGHPUTS))


def read_gavel_msr_philly(
    path: str | Path, *, seed: int | None = 0, vc: str | None = None
) -> tuple[Trace, ImportReport]:
    """Import Gavel's per-VC Philly-derived traces (``stanford-futuredata/gavel``, ``traces/msr``).

    The file ``gavel_msr_traces.csv.gz`` concatenates 15 VC traces for each of 5 seeds,
    with columns ``seed, vc, line, job_type, needs_data_dir, total_steps, arrival_time_s,
    scale_factor``. Jobs are given by work (``total_steps``), which is turned into time
    exactly as Gavel's simulator times a job on its reference worker type, the V100.

    Mapping:

    - ``vc`` and ``line`` -> ``job_id`` = ``"{vc}-{line}"`` (``"{seed}-{vc}-{line}"`` when
      all seeds are kept);
    - ``arrival_time_s`` (s from the VC trace's start) -> ``submit_time``, rebased to 0.
      Every VC trace starts its own clock at 0, so the merged trace overlays the VCs on one
      clock (as Gavel does when it replays several VCs together);
    - ``scale_factor`` -> ``num_gpus``;
    - ``total_steps`` -> ``iterations``, and ``duration = total_steps / r`` s, where ``r`` is
      Gavel's measured throughput of the row's ``job_type`` on one V100, in steps/s
      (:func:`gavel_v100_throughputs`: the ``"null"`` entries of Gavel's
      ``oracle_throughputs.json``). The simulator that ran these traces gives a job that
      single-GPU rate whatever its ``scale_factor`` (the file has no per-scale-factor
      entries, and a round's steps count once per job, not once per GPU), so a job needs
      ``total_steps / r`` seconds alone on V100s; ``scale_factor`` only sets how many GPUs
      it holds meanwhile;
    - ``job_type`` ``"ResNet-50 (batch size 64)"`` -> ``model`` ``"ResNet-50"`` and
      ``batch_size`` ``"64"`` (``CycleGAN`` and ``A3C`` have no batch size: ``''``); the
      original text is kept in extra ``job_type``. These are information: the duration
      comes from the table above, not from the model catalogue, which holds none of
      Gavel's models (so the policies that plan pipelines from the catalogue, such as
      ``a-srpt``, reject these rows' ``model`` names);
    - ``vc`` -> ``user``; ``needs_data_dir`` and ``seed`` kept in extra.

    The conversion undoes how the traces were made: the five seeds of one ``(vc, line)``
    give different job types but, divided by these throughputs, the same duration to
    within the rounding of the integer ``total_steps`` (0.24 % at most over the 76,320
    rows): each row's work is one Philly job's run time times its job type's V100
    throughput.

    Rows of other seeds (and of other VCs when ``vc`` is given) are excluded and counted
    (``gpusched trace import gavel-msr-philly SRC -o OUT --seed N | --all-seeds --vc VC``),
    and so are rows whose ``job_type`` has no throughput in the table (Gavel's simulator
    has no rate for them either). A duration outside the canonical bounds is an error.

    Parameters
    ----------
    path
        The ``gavel_msr_traces.csv[.gz]`` file.
    seed
        Which of Gavel's seeds (0-4) to keep; ``None`` keeps all.
    vc
        Keep only this Philly VC id (e.g. ``"6214e9"``); ``None`` keeps all.

    Returns
    -------
    trace : Trace
    report : ImportReport

    Raises
    ------
    TraceError
        On a missing column, a malformed field, or a derived duration out of bounds.
    """
    req = ("seed", "vc", "line", "job_type", "total_steps", "arrival_time_s", "scale_factor")
    src = CsvTable(path)
    src.require(req)
    seeds = src.integers("seed", f"an integer in [0, {_BIG}]", 0, _BIG)
    lines = src.integers("line", f"an integer in [0, {_BIG}]", 0, _BIG)
    vcs = src.text("vc")
    steps = src.floats("total_steps", ITERATIONS_WHAT, iterations_ok)
    submit = src.floats("arrival_time_s", SUBMIT_WHAT, submit_ok)
    gpus = _gpus(src, "scale_factor", 1)
    job_type = src.text("job_type")
    model = np.empty(src.n, dtype=object)
    batch = np.empty(src.n, dtype=object)
    for i, jt in enumerate(job_type.tolist()):
        m = _JOB_TYPE.fullmatch(jt)
        model[i], batch[i] = (m.group(1), m.group(2)) if m else (jt.strip(), "")
        if not model[i]:
            src.bad(i, "job_type", "a model name", jt)
    rates = gavel_v100_throughputs()
    rate = np.array([rates.get(jt, np.nan) for jt in job_type.tolist()], dtype=np.float64)
    duration = steps / rate  # NaN where the job type has no rate (those rows are excluded)
    other_seed = np.zeros(src.n, bool) if seed is None else seeds != seed
    other_vc = np.zeros(src.n, bool) if vc is None else vcs != vc
    no_rate = np.isnan(rate)
    keep = ~other_seed & ~other_vc & ~no_rate
    seed_txt = src.text("seed")
    if seed is None:
        ids = np.array(
            [f"{s}-{v}-{ln}" for s, v, ln in zip(seeds, vcs, lines, strict=True)], dtype=object
        )
    else:
        ids = np.array([f"{v}-{ln}" for v, ln in zip(vcs, lines, strict=True)], dtype=object)
    if src.n == 0:
        ids = np.empty(0, dtype=object)
    # Duplicates only matter among kept rows.
    kept_ids = ids[keep]
    if len(set(kept_ids.tolist())) != kept_ids.size:
        seen: dict[str, int] = {}
        for i in np.flatnonzero(keep).tolist():
            if ids[i] in seen:
                src.bad(
                    i,
                    "line",
                    f"a unique (vc, line) pair, first on line {seen[ids[i]]}",
                    str(lines[i]),
                )
            else:
                seen[ids[i]] = int(src.lines[i])
    with np.errstate(invalid="ignore"):
        out_of_bounds = keep & ~duration_ok(duration)
    for i in np.flatnonzero(out_of_bounds).tolist():
        src.report(
            int(src.lines[i]),
            f"column 'total_steps': {float(steps[i])!r} steps of {show_value(job_type[i])} "
            f"at Gavel's {float(rate[i])!r} steps/s on a V100 take {float(duration[i])!r} s; "
            f"expected a duration in [{MIN_DURATION_S:g}, {MAX_TIME_S:g}] s",
        )
    src.raise_if_bad()
    # a filter that matches no row is a typo, not an empty workload
    for flag, value, present in (("--seed", seed, seeds), ("--vc", vc, vcs)):
        if value is not None and len(present) and not (present == value).any():
            known = sorted({str(v) for v in present.tolist()})
            hint = did_you_mean(str(value), known)
            raise GpuschedError(
                f"{src.name}: {flag} {value!r} matches no row{hint}; the file has "
                f"{flag[2:]} {', '.join(known)}"
            )
    reasons = [
        (f"seed != {seed} (keep every seed with --all-seeds, or seed=None in Python)", other_seed),
        (f"vc != {vc!r}", other_vc),
        ("job_type has no V100 throughput in Gavel's table (nothing to time it with)", no_rate),
    ]
    cols = {
        "job_id": ids,
        "submit_time": submit,
        "num_gpus": gpus,
        "duration": duration,
        "iterations": steps,
        "model": model,
    }
    extra = {"user": vcs, "batch_size": batch, "job_type": job_type, "seed": seed_txt}
    if "needs_data_dir" in src.cols:
        extra["needs_data_dir"] = src.text("needs_data_dir")
    notes = [
        "duration = total_steps / Gavel's measured V100 throughput of the job_type "
        "(steps/s, oracle_throughputs.json), the time Gavel's simulator gives the job alone "
        "on V100s whatever its scale_factor; model and batch_size are for information"
    ]
    return _finish("gavel-msr-philly", src, keep, reasons, cols, extra, notes)


def read_tiresias(path: str | Path) -> tuple[Trace, ImportReport]:
    """Import a trace in the Tiresias simulator's job format (``SymbioticLab/Tiresias``).

    Columns ``job_id, num_gpu, submit_time, iterations, model_name, duration, interval``
    (``60_job.csv``); other columns, e.g. those of the Chronus traces that extend this
    format, are kept in ``extra`` as given.

    Mapping:

    - ``job_id`` -> ``job_id``;
    - ``submit_time`` (s) -> ``submit_time``, rebased to 0;
    - ``num_gpu`` -> ``num_gpus``;
    - ``duration`` (s) -> ``duration``; ``iterations`` -> ``iterations``;
      ``model_name`` -> ``model`` (each optional if the row gives the other pair);
    - ``interval`` (s until the next submission) is skipped: it is derived from the
      submit times and would go stale after rebasing or cutting.

    Rows with ``num_gpu`` = 0 are excluded (a 0-GPU job does not occupy the GPU cluster).

    Parameters
    ----------
    path
        A Tiresias job CSV.

    Returns
    -------
    trace : Trace
    report : ImportReport

    Raises
    ------
    TraceError
        On a missing column, a malformed field, or a row with neither ``duration`` nor
        ``iterations`` + ``model_name``.
    """
    src = CsvTable(path)
    src.require(("job_id", "num_gpu", "submit_time"), (("duration",), ("iterations", "model_name")))
    ids = src.text("job_id")
    src.unique_ids(ids, "job_id")
    submit = src.floats("submit_time", SUBMIT_WHAT, submit_ok)
    gpus = _gpus(src, "num_gpu", 0)
    duration = src.floats("duration", DURATION_WHAT, duration_ok, optional=True)
    iters = src.floats("iterations", ITERATIONS_WHAT, iterations_ok, optional=True)
    model = src.text("model_name")
    raw_d = src.text("duration")
    raw_i = src.text("iterations")
    for i in np.flatnonzero(np.isnan(duration) & (np.isnan(iters) | (model == ""))).tolist():
        if raw_d[i] or (raw_i[i] and model[i]):
            continue  # malformed value, already reported
        src.bad(i, "duration", "a duration, or both iterations and model_name", raw_d[i])
    src.raise_if_bad()
    zero = gpus == 0
    skip = {"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"}
    extra = {h: src.text(h) for h in src.cols if h not in skip}
    cols = {
        "job_id": ids,
        "submit_time": submit,
        "num_gpus": gpus,
        "duration": duration,
        "iterations": iters,
        "model": model,
    }
    return _finish("tiresias", src, ~zero, [("num_gpu = 0", zero)], cols, extra, [])


def read_openb(path: str | Path, *, fractional: str = "whole") -> tuple[Trace, ImportReport]:
    """Import an Alibaba ``openb`` pod list (``alibaba/clusterdata`` cluster-trace-gpu-v2023).

    Columns ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
    creation_time, deletion_time, scheduled_time`` (times in s from the trace start).

    Mapping:

    - ``name`` -> ``job_id``;
    - ``creation_time`` (s) -> ``submit_time``, rebased so the earliest kept pod is at 0;
    - ``deletion_time - scheduled_time`` (s the pod held its node) -> ``duration``. Pods
      still ``Running`` at the trace end have ``deletion_time`` = trace end, so their
      duration is a lower bound (counted in a note);
    - ``num_gpu`` -> ``num_gpus``;
    - ``cpu_milli``, ``memory_mib``, ``gpu_milli``, ``gpu_spec``, ``qos``, ``pod_phase``
      kept in extra as given (``gpu_spec`` is a ``|``-separated list of allowed GPU
      models, not a ``gpu_type``, so it keeps its name). The observed wait
      (``scheduled_time - creation_time``) is not kept: the simulator produces its own.

    Excluded rows (first matching reason counts): ``num_gpu`` = 0 (a CPU-only pod);
    no ``scheduled_time`` (a pod still ``Pending`` at the trace end never ran, so it has
    no run time); ``deletion_time <= scheduled_time`` (no run time). Pods asking for a
    fractional GPU (``num_gpu`` = 1 and ``gpu_milli`` < 1000, about 38 % of the real
    trace) are by default kept as one whole GPU, with the share left in extra
    ``gpu_milli`` for GPU-sharing models and counted in a note; ``fractional="exclude"``
    excludes them instead.

    Parameters
    ----------
    path
        An ``openb_pod_list_*.csv[.gz]`` file.
    fractional
        ``"whole"`` (default) or ``"exclude"``: what to do with fractional-GPU pods.

    Returns
    -------
    trace : Trace
    report : ImportReport

    Raises
    ------
    TraceError
        On a missing column or a malformed field.
    GpuschedError
        If ``fractional`` is not one of the two choices.
    """
    if fractional not in ("whole", "exclude"):
        raise GpuschedError(f"--fractional must be 'whole' or 'exclude', got {fractional!r}")
    req = (
        "name",
        "num_gpu",
        "gpu_milli",
        "pod_phase",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    )
    src = CsvTable(path)
    src.require(req)
    ids = src.text("name")
    src.unique_ids(ids, "name")
    created = src.floats("creation_time", SUBMIT_WHAT, submit_ok)
    deleted = src.floats("deletion_time", SUBMIT_WHAT, submit_ok)
    sched = src.floats("scheduled_time", SUBMIT_WHAT, submit_ok, optional=True)
    gpus = _gpus(src, "num_gpu", 0)
    milli = src.integers("gpu_milli", f"an integer in [0, {_BIG}]", 0, _BIG)
    src.raise_if_bad()
    phase = src.text("pod_phase")
    cpu_only = gpus == 0
    never_ran = np.isnan(sched)
    with np.errstate(invalid="ignore"):
        duration = deleted - sched
        no_time = ~never_ran & ~(duration > 0)
        too_short = ~cpu_only & ~no_time & (duration < MIN_DURATION_S)
    for i in np.flatnonzero(too_short).tolist():
        src.report(
            int(src.lines[i]),
            f"column 'deletion_time': deletion_time - scheduled_time = {float(duration[i])!r} s, "
            f"shorter than the shortest duration gpusched simulates ({MIN_DURATION_S:g} s)",
        )
    src.raise_if_bad()
    frac = (gpus == 1) & (milli < 1000)
    reasons = [
        ("CPU-only pod (num_gpu = 0)", cpu_only),
        ("never scheduled (no scheduled_time; Pending at trace end)", never_ran),
        ("no run time (deletion_time <= scheduled_time)", no_time),
    ]
    if fractional == "exclude":
        reasons.append(("fractional GPU share (num_gpu = 1, gpu_milli < 1000)", frac))
    keep = np.ones(src.n, dtype=bool)
    for _, m in reasons:
        keep &= ~m
    notes = []
    n_frac = int((frac & keep).sum())
    if n_frac:
        notes.append(
            f"{n_frac} pods with a fractional GPU share (gpu_milli < 1000) were kept as 1 whole "
            "GPU; the share is in column gpu_milli"
        )
    n_running = int(((phase == "Running") & keep).sum())
    if n_running:
        notes.append(
            f"{n_running} pods were still Running at the trace end: their duration is a lower "
            "bound (deletion_time is the trace end)"
        )
    extra_cols = ("cpu_milli", "memory_mib", "gpu_milli", "gpu_spec", "qos", "pod_phase")
    extra = {c: src.text(c) for c in extra_cols if c in src.cols}
    cols = {
        "job_id": ids,
        "submit_time": created,
        "num_gpus": np.maximum(gpus, 1),
        "duration": duration,
    }
    return _finish("openb", src, keep, reasons, cols, extra, notes)


# --------------------------------------------------------------------------- registry

IMPORTERS_WITH_REPORT: dict[str, Callable[..., tuple[Trace, ImportReport]]] = {
    "philly-pollux": read_philly_pollux,
    "gavel-msr-philly": read_gavel_msr_philly,
    "tiresias": read_tiresias,
    "openb": read_openb,
}
"""Importer name -> function returning ``(trace, report)``."""


def _lookup(kind: str) -> Callable[..., tuple[Trace, ImportReport]]:
    try:
        return IMPORTERS_WITH_REPORT[kind]
    except KeyError:
        known = ", ".join(sorted(IMPORTERS_WITH_REPORT))
        hint = did_you_mean(kind, IMPORTERS_WITH_REPORT)
        raise GpuschedError(f"unknown trace kind {kind!r}{hint}; known kinds: {known}") from None


def import_trace_with_report(
    kind: str, path: str | Path, **options: Any
) -> tuple[Trace, ImportReport]:
    """Import a source trace and say what was excluded.

    Parameters
    ----------
    kind
        One of the keys of :data:`IMPORTERS`.
    path
        The source file (``.csv`` or ``.csv.gz``).
    **options
        Importer options, e.g. ``seed=1`` for ``gavel-msr-philly`` or
        ``fractional="exclude"`` for ``openb``.

    Returns
    -------
    trace : Trace
        Canonical trace, submit times starting at 0 s.
    report : ImportReport
        Rows read, jobs kept, rows excluded per reason, notes.

    Raises
    ------
    GpuschedError
        If ``kind`` is unknown (the message lists the known kinds).
    TraceError
        If the source is malformed (file, line and column named).
    """
    return _lookup(kind)(Path(path), **options)


def import_trace(kind: str, path: str | Path, **options: Any) -> Trace:
    """Import a source trace; warn with the report if rows were excluded.

    Parameters
    ----------
    kind
        One of the keys of :data:`IMPORTERS`.
    path
        The source file (``.csv`` or ``.csv.gz``).
    **options
        Importer options (see :func:`import_trace_with_report`).

    Returns
    -------
    Trace
        Canonical trace, submit times starting at 0 s.

    Raises
    ------
    GpuschedError
        If ``kind`` is unknown (the message lists the known kinds).
    TraceError
        If the source is malformed (file, line and column named).

    Warns
    -----
    ImportExclusionWarning
        When any row was excluded; the warning text is ``str(report)``.
    """
    trace, report = import_trace_with_report(kind, path, **options)
    if report.n_excluded:
        warnings.warn(str(report), ImportExclusionWarning, stacklevel=2)
    return trace


def convert_trace(kind: str, src: str | Path, dst: str | Path, **options: Any) -> ImportReport:
    """Import ``src`` and write it as a canonical CSV (``dst`` may end in ``.gz``).

    Parameters
    ----------
    kind
        One of the keys of :data:`IMPORTERS`.
    src
        Source file.
    dst
        Destination canonical trace.
    **options
        Importer options.

    Returns
    -------
    ImportReport
        What was kept and excluded.

    Raises
    ------
    GpuschedError
        Besides the importer's own errors: no row of ``src`` kept (nothing is written).
    """
    trace, report = import_trace_with_report(kind, src, **options)
    if report.n_jobs == 0:  # an empty trace, written with exit 0, hid that nothing matched
        why = "; ".join(f"{n:,} {reason}" for reason, n in report.excluded.items())
        raise GpuschedError(
            f"{show_name(report.source)}: {kind} import kept no job of {report.n_rows:,} "
            f"row(s)" + (f" (excluded: {why})" if why else "") + "; nothing written"
        )
    write_trace(trace, dst)
    return report


def _trace_only(kind: str) -> Callable[[Path], Trace]:
    def run(path: Path) -> Trace:
        return import_trace(kind, path)

    run.__name__ = f"import_{kind.replace('-', '_')}"
    run.__doc__ = f"Import a ``{kind}`` file; see :func:`import_trace`."
    return run


IMPORTERS: dict[str, Callable[[Path], Trace]] = {k: _trace_only(k) for k in IMPORTERS_WITH_REPORT}
"""Importer name -> function ``(path) -> Trace`` (warns on exclusions)."""
