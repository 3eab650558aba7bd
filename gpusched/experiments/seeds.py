"""``compare --seeds``: every policy over several seeds, with means and 95 % intervals.

Each policy runs once per seed ``s`` with ``seed=s`` (its random numbers). When the
trace names a ``{seed}`` field (``runs/ec-{seed}.csv``), seed ``s`` also replays its own
trace (workload seeds). Every policy runs on the same seeds, so policies are compared
*paired by seed*: for each metric, the interval of the per-seed differences against the
first policy (:func:`gpusched.results.stats.paired_interval`). A difference whose interval holds
0 is *within noise*.

With an output folder, run ``(policy, seed)`` writes the usual run files to
``OUT/<policy>/seed-<s>/`` (the policy's label made safe as a folder name,
:func:`gpusched.io.runfolder.safe_name`); ``OUT/comparison.csv`` holds per policy and metric
the mean, the interval and the paired difference (earlier versions named it
``compare.csv``, still recognised as a comparison's), and ``OUT/compare-runs.csv`` one row per run. The
folder is one transaction (:class:`gpusched.io.runfolder.FolderTransaction`): it appears,
whole, when every run is done.

More than :data:`DASK_ABOVE` runs go to a Dask LocalCluster (the sweep machinery,
:func:`gpusched.experiments.sweep.dask_client`); fewer run one after the other in this process. The
results do not depend on which: each run is a plain :func:`gpusched.experiments.run.replay`.
"""

from __future__ import annotations

import contextlib
import csv
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusched.errors import MAX_SEED, GpuschedError, too_many_digits
from gpusched.results.stats import Interval, paired_interval, t_interval

__all__ = [
    "COMPARE_CSV",
    "RUNS_CSV",
    "MetricStats",
    "SeedComparison",
    "SeedRun",
    "compare_seeds",
    "metric_stats",
    "parse_seeds",
    "plan_runs",
    "run_folder_name",
    "runs_in_process",
    "seed_traces",
]

#: the field of a trace name that each seed replaces
SEED_FIELD = "{seed}"
#: most seeds in one comparison
MAX_SEEDS = 10_000
#: more runs than this go to Dask (unless one worker is asked for)
DASK_ABOVE = 4
#: per policy and metric: mean, interval, paired difference (the name ``compare`` writes)
COMPARE_CSV = "comparison.csv"
#: the name earlier versions gave it
OLD_COMPARE_CSV = "compare.csv"
#: one row per run: its policy, seed, trace and summary
RUNS_CSV = "compare-runs.csv"

_PIECE = re.compile(r"(\d+)(?:-(\d+))?")


def parse_seeds(text: str) -> tuple[int, ...]:
    """Seeds from ``1-5``, ``1,3,7`` or a mix (``1-3,10,20-22``), in the order given.

    Raises
    ------
    GpuschedError
        An empty or malformed piece, a range whose end is below its start, a seed above
        :data:`MAX_SEED`, a seed listed twice, or more than :data:`MAX_SEEDS` seeds.
    """
    seeds: list[int] = []
    pieces = text.split(",")
    for piece in pieces:
        m = _PIECE.fullmatch(piece.strip())
        if m is None:
            raise GpuschedError(
                f"--seeds: expected seeds >= 0 as a range or a list (1-5, 1,3,7 or "
                f"1-3,10), got {piece.strip()!r} in {text!r}"
            )
        long = next(filter(None, (too_many_digits(g) for g in m.groups() if g)), None)
        if long is not None:
            raise GpuschedError(f"--seeds: expected seeds up to {MAX_SEED}, {long}")
        first = int(m.group(1))
        last = first if m.group(2) is None else int(m.group(2))
        if last < first:
            raise GpuschedError(f"--seeds: the range {piece.strip()} ends below its start")
        if last > MAX_SEED:
            raise GpuschedError(f"--seeds: seeds go up to {MAX_SEED}, got {last}")
        if len(seeds) + last - first + 1 > MAX_SEEDS:
            raise GpuschedError(f"--seeds: at most {MAX_SEEDS:,} seeds, got more in {text!r}")
        for seed in range(first, last + 1):
            if seed in seeds:
                raise GpuschedError(f"--seeds: seed {seed} is listed twice in {text!r}")
            seeds.append(seed)
    return tuple(seeds)


def seed_traces(trace: str | None, seeds: Sequence[int]) -> dict[int, str | None]:
    """The trace each seed replays: ``trace`` with ``{seed}`` filled in, or ``trace`` itself.

    Every trace is looked up (a file, or a bundled name) before anything runs.

    Raises
    ------
    GpuschedError
        A seed's trace that does not exist (named with the seed).
    """
    from gpusched.io.resources import resolve_trace

    if trace is None or SEED_FIELD not in trace:
        resolve_trace(trace)
        return dict.fromkeys(seeds, trace)
    out: dict[int, str | None] = {}
    for seed in seeds:
        name = trace.replace(SEED_FIELD, str(seed))
        try:
            resolve_trace(name)
        except GpuschedError as exc:
            raise GpuschedError(f"seed {seed}: {exc}") from None
        out[seed] = name
    return out


def run_folder_name(label: str) -> str:
    """A policy's folder under ``--out``: its label made safe as a folder name (unsafe
    characters as ``_``; never ``.``, ``..`` or hidden; :func:`gpusched.io.runfolder.safe_name`)."""
    from gpusched.io.runfolder import safe_name

    return safe_name(label)


@dataclass(frozen=True, slots=True)
class SeedRun:
    """One replay of a comparison: a policy on a seed (and that seed's trace).

    Attributes
    ----------
    index
        Position in the plan (policy-major, then seed).
    policy
        The policy spec as given to ``-P``.
    label
        How results name the policy.
    seed
        The policy's seed, and the workload's when the trace has ``{seed}``.
    trace
        The trace to replay (None: the bundled default).
    out
        The run's folder, or None when nothing is written.
    """

    index: int
    policy: str
    label: str
    seed: int
    trace: str | None
    out: str | None


def plan_runs(
    policies: Sequence[str],
    labels: Sequence[str],
    traces: dict[int, str | None],
    out: str | Path | None,
) -> list[SeedRun]:
    """Every (policy, seed) run in a fixed order: policy by policy, seeds in order.

    Raises
    ------
    GpuschedError
        Two policies that would share a folder (the same label, or labels that differ
        only in characters a folder name cannot hold).
    """
    folders: dict[str, str] = {}
    for label in labels:
        name = run_folder_name(label)
        if name in folders:
            raise GpuschedError(
                f"policies '{folders[name]}' and '{label}' would share the run folder "
                f"'{name}': give each policy once"
            )
        folders[name] = label
    runs: list[SeedRun] = []
    for policy, label in zip(policies, labels, strict=True):
        for seed, trace in traces.items():
            folder = None
            if out is not None:
                folder = str(Path(out) / run_folder_name(label) / f"seed-{seed}")
            runs.append(SeedRun(len(runs), policy, label, seed, trace, folder))
    return runs


def run_one(run: SeedRun, options: dict[str, Any], folder: Path | None = None) -> dict[str, Any]:
    """Replay ``run`` (a Dask task) into ``folder`` (its place in the comparison's staging
    folder), if given; return its summary.

    ``options`` are :func:`gpusched.experiments.run.replay`'s keyword arguments other than the
    trace, policy, seed and output folder.
    """
    from gpusched.experiments.run import run_into
    from gpusched.experiments.sweep import _REPLAY_LOCK

    with _REPLAY_LOCK:  # thread workers: one replay per process at a time (see sweep)
        summary, _ = run_into(run.trace, run.policy, folder, seed=run.seed, **options)
    return summary


def runs_in_process(n_runs: int, workers: int | None) -> bool:
    """Whether ``n_runs`` runs go one after the other here rather than to Dask."""
    return workers == 1 or (workers is None and n_runs <= DASK_ABOVE)


def _run_all(
    runs: list[SeedRun],
    folders: tuple[Path, Path] | None,
    options: dict[str, Any],
    *,
    workers: int | None,
    processes: bool,
    on_run: Callable[[SeedRun, int, int], None] | None,
    job_progress: Callable[[float, int, int], None] | None,
) -> list[dict[str, Any]]:
    """Summaries of ``runs`` in plan order, sequentially or on Dask (module docstring)."""

    def where(run: SeedRun) -> Path | None:
        if folders is None or run.out is None:
            return None
        return folders[1] / Path(run.out).relative_to(folders[0])

    if runs_in_process(len(runs), workers):
        summaries = []
        for i, run in enumerate(runs):
            if on_run is not None:
                on_run(run, i, len(runs))
            summaries.append(run_one(run, {**options, "progress": job_progress}, where(run)))
        return summaries
    from dask.distributed import as_completed

    from gpusched.experiments.sweep import compile_once, dask_client

    notice = options.pop("notice", None)  # (said here, not by each worker)
    with notice() if notice is not None else contextlib.nullcontext():
        compile_once(len(runs))
    done: dict[int, dict[str, Any]] = {}
    with dask_client(len(runs), n_workers=workers, processes=processes) as client:
        futures = {
            client.submit(
                run_one, run, options, where(run), key=f"gpusched-seeds-{run.index}", pure=False
            ): run
            for run in runs
        }
        for fut in as_completed(list(futures)):
            run = futures[fut]
            done[run.index] = fut.result()
            if on_run is not None:
                on_run(run, len(done), len(runs))
    return [done[run.index] for run in runs]


@dataclass(frozen=True, slots=True)
class MetricStats:
    """One metric of one policy over the seeds.

    Attributes
    ----------
    policy
        The policy's label.
    metric
        The summary key (e.g. ``avg_jct_s``).
    interval
        Mean and interval over the seeds where the run reported the metric.
    diff
        The paired difference against the first policy (this one minus it) over the
        seeds where both reported the metric; None for the first policy itself or
        when no seed has both.
    """

    policy: str
    metric: str
    interval: Interval
    diff: Interval | None


def _number(value: Any) -> float | None:
    """A summary value as a float, or None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def metric_stats(
    labels: Sequence[str], seeds: Sequence[int], summaries: dict[tuple[str, int], dict[str, Any]]
) -> list[MetricStats]:
    """Mean, interval and paired difference per policy and numeric metric.

    Parameters
    ----------
    labels
        Policies in ``-P`` order; the first is the baseline of the paired differences.
    seeds
        The seeds, in order.
    summaries
        ``{(label, seed): summary}`` for every run.

    Returns
    -------
    list of MetricStats
        Policy by policy, metrics in the order of the summaries' keys; a metric that
        a policy reported on no seed (e.g. ``avg_jct_s`` when no job finished) is left out.
    """
    metrics: list[str] = []
    for summary in summaries.values():
        for key, value in summary.items():
            if key not in metrics and _number(value) is not None:
                metrics.append(key)
    base = labels[0]
    out: list[MetricStats] = []
    for label in labels:
        for metric in metrics:
            values = {s: _number(summaries[label, s].get(metric)) for s in seeds}
            mine = [v for v in values.values() if v is not None]
            if not mine:
                continue
            diff = None
            if label != base:
                pairs = [
                    (b, v)
                    for s, v in values.items()
                    if v is not None and (b := _number(summaries[base, s].get(metric))) is not None
                ]
                if pairs:
                    diff = paired_interval([b for b, _ in pairs], [v for _, v in pairs])
            out.append(MetricStats(label, metric, t_interval(mine), diff))
    return out


@dataclass(frozen=True, slots=True)
class SeedComparison:
    """What :func:`compare_seeds` did.

    Attributes
    ----------
    labels
        Policies in ``-P`` order (the first is the paired baseline).
    seeds
        The seeds.
    runs
        Every run, in plan order.
    summaries
        ``{(label, seed): summary}``.
    stats
        :func:`metric_stats` of the summaries.
    workload_seeds
        The trace had a ``{seed}`` field: each seed replayed its own trace.
    """

    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    runs: tuple[SeedRun, ...]
    summaries: dict[tuple[str, int], dict[str, Any]]
    stats: tuple[MetricStats, ...]
    workload_seeds: bool

    def stat(self, label: str, metric: str) -> MetricStats | None:
        """The statistics of ``metric`` for policy ``label`` (None when not reported)."""
        return next((m for m in self.stats if m.policy == label and m.metric == metric), None)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return value


def write_compare_csv(path: Path, result: SeedComparison) -> None:
    """``comparison.csv``: one row per policy and metric (see the module docstring)."""
    base = result.labels[0]
    columns = [
        "policy",
        "metric",
        "n",
        "mean",
        "std",
        "half_width",
        "low",
        "high",
        "baseline",
        "diff_n",
        "diff_mean",
        "diff_half_width",
        "diff_low",
        "diff_high",
        "within_noise",
    ]
    from gpusched.io.runfolder import create_exclusive

    with create_exclusive(path, text=True) as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for m in result.stats:
            i, d = m.interval, m.diff
            row = [m.policy, m.metric, i.n, i.mean, i.std, i.half_width, i.low, i.high]
            if d is None:
                row += [base if m.policy != base else "", None, None, None, None, None, None]
            else:
                row += [base, d.n, d.mean, d.half_width, d.low, d.high, d.within_noise]
            w.writerow([_csv_value(v) for v in row])


def write_runs_csv(path: Path, result: SeedComparison) -> None:
    """``compare-runs.csv``: one row per run (policy, seed, trace, folder, summary)."""
    from gpusched.io.runfolder import create_exclusive

    keys: list[str] = []
    for summary in result.summaries.values():
        keys += [k for k in summary if k not in keys]
    with create_exclusive(path, text=True) as fh:
        w = csv.writer(fh)
        w.writerow(["policy", "seed", "trace", "folder", *keys])
        for run in result.runs:
            summary = result.summaries[run.label, run.seed]
            folder = "" if run.out is None else f"{run_folder_name(run.label)}/seed-{run.seed}"
            w.writerow(
                [run.label, run.seed, _csv_value(run.trace), folder]
                + [_csv_value(summary.get(k)) for k in keys]
            )


def compare_seeds(
    trace: str | None,
    policies: list[str],
    seeds: Sequence[int],
    *,
    out: str | Path | None = None,
    force: bool = False,
    workers: int | None = None,
    processes: bool = True,
    on_run: Callable[[SeedRun, int, int], None] | None = None,
    job_progress: Callable[[float, int, int], None] | None = None,
    **kwargs: Any,
) -> SeedComparison:
    """Replay ``trace`` under each policy on each seed; gather means and intervals.

    Parameters
    ----------
    trace
        A trace path or bundled name; a ``{seed}`` field makes one trace per seed.
    policies
        Policy specs, ``-P`` order; the first is the baseline of paired differences.
    seeds
        Seeds (:func:`parse_seeds`); each run's policy seed, and workload seed with ``{seed}``.
    out
        Folder for the run folders, comparison.csv and compare-runs.csv, written as one
        transaction; one that already holds results is refused unless ``force``, which
        replaces it whole.
    workers
        Dask workers (default one per core, when more than :data:`DASK_ABOVE` runs);
        1 runs everything in this process.
    processes
        Dask workers as processes (default) or threads.
    on_run
        Called as ``on_run(run, k, n)``: before run ``k`` of ``n`` starts (in this
        process), or after the ``k``-th run finished (on Dask).
    job_progress
        Passed to each replay run in this process (simulated time, jobs done, jobs).
    **kwargs
        ``cluster``, ``slot_s``, ``until_s``, ``drop_oversized``, ``load_s``,
        ``save_s``, ``params``, ``mode``, ``fmt``: as for :func:`gpusched.experiments.run.replay`.

    Raises
    ------
    GpuschedError
        No seed, no policy, a bad policy, trace (of any seed), cluster, option or
        ``out``; ``workers`` below 1 or above 4 per core
        (:func:`gpusched.experiments.sweep.check_workers`). Every input is checked
        before the first run.
    """
    from gpusched.experiments.run import check_run_options, policy_labels
    from gpusched.experiments.sweep import check_workers
    from gpusched.io.cluster import load_cluster
    from gpusched.io.runfolder import FolderTransaction

    if not seeds:
        raise GpuschedError("--seeds: give at least one seed")
    if not policies:
        raise GpuschedError("give at least one --policy (e.g. --policy fifo --policy srtf)")
    check_workers(workers)
    check_run_options(
        slot_s=kwargs.get("slot_s", 1.0),
        seed=0,
        until_s=kwargs.get("until_s"),
        mode=kwargs.get("mode", "auto"),
    )
    labels = policy_labels(policies, kwargs.get("params"))
    traces = seed_traces(trace, seeds)
    load_cluster(kwargs.get("cluster", "default"))
    runs = plan_runs(policies, labels, traces, out)
    how: dict[str, Any] = {
        "kwargs": kwargs,
        "workers": workers,
        "processes": processes,
        "on_run": on_run,
        "job_progress": job_progress,
    }
    if out is None:
        return _compare(trace, labels, seeds, runs, None, **how)
    tx = FolderTransaction(out, force=force)
    tx.check()
    with tx:
        return _compare(trace, labels, seeds, runs, (Path(out), tx.staging), **how)


def _compare(
    trace: str | None,
    labels: list[str],
    seeds: Sequence[int],
    runs: list[SeedRun],
    folders: tuple[Path, Path] | None,
    *,
    kwargs: dict[str, Any],
    workers: int | None,
    processes: bool,
    on_run: Callable[[SeedRun, int, int], None] | None,
    job_progress: Callable[[float, int, int], None] | None,
) -> SeedComparison:
    """:func:`compare_seeds`'s runs and statistics; with ``folders`` (the output folder and
    its transaction's staging folder) each run's files go to its place in the staging one."""
    from gpusched.experiments.run import _jct_rates

    summaries_list = _run_all(
        runs,
        folders,
        kwargs,
        workers=workers,
        processes=processes,
        on_run=on_run,
        job_progress=job_progress,
    )
    summaries: dict[tuple[str, int], dict[str, Any]] = {}
    for seed in seeds:  # the JCT rate (edge-cloud runs) is against srtf on the same seed
        rows = [
            {"policy": run.label, **s}
            for run, s in zip(runs, summaries_list, strict=True)
            if run.seed == seed
        ]
        _jct_rates(rows)
        for row in rows:
            label = row.pop("policy")
            summaries[label, seed] = row
    result = SeedComparison(
        labels=tuple(labels),
        seeds=tuple(seeds),
        runs=tuple(runs),
        summaries=summaries,
        stats=tuple(metric_stats(labels, seeds, summaries)),
        workload_seeds=trace is not None and SEED_FIELD in trace,
    )
    if folders is not None:
        write_compare_csv(folders[1] / COMPARE_CSV, result)
        write_runs_csv(folders[1] / RUNS_CSV, result)
    return result
