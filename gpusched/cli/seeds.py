"""``gpusched compare --seeds``: the options' checks, the runs and the table of intervals."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import typer

from gpusched.cli._common import Progress, column_format, compile_notice, print_table
from gpusched.errors import GpuschedError, show_name

#: marks a cell whose paired difference against the first policy is within noise
NOISE_MARK = "~"
#: marks a cell equal to the first policy's on every seed
SAME_MARK = "="


class RunCounter(Progress):
    """``compare: 3/10 runs done`` on stderr (a TTY only, after ~1 s), for runs on Dask."""

    def __init__(self, enabled: bool | None = None) -> None:
        super().__init__("compare:", enabled)

    def __call__(self, run: Any, done: int, total: int) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < 1.0:
            return
        self.show(f"{done:,}/{total:,} runs done (last: {run.label} seed {run.seed})")


def compare_over_seeds(
    ctx: typer.Context,
    trace: str | None,
    policies: list[str],
    *,
    seeds: str | None,
    workers: int | None,
    plot: bool,
    out: str | None,
    **options: Any,
) -> bool:
    """Run ``compare --seeds`` and print its table; False (having done nothing) without ``--seeds``.

    Without ``--seeds``, refuses the options that need it (``--workers``, a trace
    naming ``{seed}``). With it, refuses ``--seed`` and ``--plot``.
    """
    from gpusched.experiments.seeds import SEED_FIELD, compare_seeds, parse_seeds, runs_in_process

    if seeds is None:
        if workers is not None:
            raise GpuschedError("--workers runs the seeds of --seeds in parallel: give --seeds")
        if trace is not None and SEED_FIELD in trace:
            raise GpuschedError(
                f"trace {show_name(trace)} names {SEED_FIELD}: give --seeds (e.g. --seeds 1-5) "
                "to replay one trace per seed"
            )
        return False
    source = ctx.get_parameter_source("seed")  # Typer's own click: compare by name
    if source is not None and source.name != "DEFAULT":
        raise GpuschedError(
            "--seeds gives each run its seed: drop --seed (e.g. --seeds 7 for one seed 7)"
        )
    if plot:
        raise GpuschedError(
            "--plot draws one run per policy; with --seeds plot a seed's runs instead "
            "(gpusched plot DIR/*/seed-1)"
        )
    seed_list = parse_seeds(seeds)
    bar = Progress("compare")
    counter = RunCounter()

    def on_run(run: Any, k: int, n: int) -> None:
        bar.label = f"{run.label} seed {run.seed} ({k + 1}/{n})"

    in_process = runs_in_process(len(policies) * len(seed_list), workers)
    options["notice"] = compile_notice
    try:
        result = compare_seeds(
            trace,
            policies,
            seed_list,
            out=out,
            workers=workers,
            on_run=on_run if in_process else counter,
            job_progress=bar,
            **options,
        )
    finally:
        bar.close()
        counter.close()
    _print_header(trace, result, options)
    _print_intervals(result)
    if out is not None:
        typer.echo(f"comparison in {out}/comparison.csv, runs in {out}/<policy>/seed-<s>/")
    return True


def _print_header(trace: str | None, result: Any, options: dict[str, Any]) -> None:
    from gpusched.io.resources import DEFAULT_TRACE

    seeds = result.seeds
    shown = show_name(trace or DEFAULT_TRACE)
    what = "workload and policy seeds" if result.workload_seeds else "policy seeds"
    n_jobs = sorted({s["n_jobs"] for s in result.summaries.values()})
    jobs = f"{n_jobs[0]} jobs" if len(n_jobs) == 1 else f"{n_jobs[0]}-{n_jobs[-1]} jobs"
    typer.echo(
        f"{shown} on {show_name(options.get('cluster', 'default'))}, {jobs}, "
        f"slot {options.get('slot_s', 1.0):g} s; {len(seeds)} {what} "
        f"({_seed_text(seeds)}), {len(result.runs)} runs"
    )


def _seed_text(seeds: tuple[int, ...]) -> str:
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)


def _cell(stat: Any, key: str, marks: bool, form: Callable[[Any], str] | None = None) -> str:
    """``mean ± half-width`` (just the mean with one seed), then the noise mark or room for
    it; ``form`` formats the numbers (one format per column: ``column_format``)."""
    if form is None:
        form = column_format([stat.interval.mean], key)
    mean, half = stat.interval.mean, stat.interval.half_width
    whole = mean.is_integer() and (half is None or float(half).is_integer())
    text = form(int(mean) if whole else mean)
    if half is not None:
        text += f" ± {form(int(half) if whole else half)}"
    if marks:
        text += f" {_mark(stat.diff)}"
    return text


def _mark(diff: Any) -> str:
    """``=`` the same as the first policy on every seed, ``~`` within noise, else blank."""
    if diff is None or not diff.within_noise:
        return " "
    return SAME_MARK if diff.mean == 0 and diff.std == 0 else NOISE_MARK


def _print_intervals(result: Any) -> None:
    """The policies x metrics table of intervals, then what its cells and marks mean."""
    one = len(result.seeds) == 1
    rows: list[dict[str, Any]] = []
    forms: dict[str, Any] = {}
    for m in result.stats:  # one format per metric, from every policy's mean
        forms.setdefault(m.metric, []).append(m.interval.mean)
    forms = {k: column_format(v, k) for k, v in forms.items()}
    for label in result.labels:
        row: dict[str, Any] = {"policy": label}
        for m in result.stats:
            if m.policy == label:
                row[m.metric] = _cell(m, m.metric, not one, forms[m.metric])
        rows.append(row)
    if not any(s.get("n_unfinished") for s in result.summaries.values()):
        for row in rows:
            row.pop("n_unfinished", None)
    print_table(rows, "policy")
    base = result.labels[0]
    if one:
        typer.echo(
            "note: one seed: no confidence intervals (give two or more seeds, e.g. --seeds 1-5)"
        )
        return
    typer.echo(
        f"cells: mean ± half-width of the 95 % interval over {len(result.seeds)} seeds "
        f"(Student t); differences paired by seed against {base}"
    )
    marks = {_mark(m.diff) for m in result.stats}
    if NOISE_MARK in marks:
        typer.echo(
            f"{NOISE_MARK}: within noise of {base} (the 95 % interval of the per-seed "
            "difference holds 0)"
        )
    if SAME_MARK in marks:
        typer.echo(f"{SAME_MARK}: the same as {base} on every seed")
