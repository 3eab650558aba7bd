"""``gpusched sweep`` and ``gpusched plot``: thin wrappers over gpusched.experiments.sweep and gpusched.results.plot."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from gpusched.cli._common import FormatOpt, print_table, user_errors

#: largest sweep whose rows are printed as a table (bigger ones: see results.csv)
MAX_TABLE_ROWS = 40


class SweepProgress:
    """``sweep [#####     ] 5/8 cells  1 failed  12.3 s`` on stderr (TTY only); failures
    are always printed, one line each, with the cell's parameters and the error."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()
        self.n_failed = 0
        self.shown = False

    def _bar(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        failed = f"  {self.n_failed} failed" if self.n_failed else ""
        wall = time.perf_counter() - self.t0
        sys.stderr.write(f"\rsweep [{bar:<30}] {done}/{total} cells{failed}  {wall:.1f} s")
        sys.stderr.flush()
        self.shown = True

    def __call__(self, done: int, total: int, cell: Any, outcome: dict[str, Any]) -> None:
        if outcome["status"] != "ok":
            self.n_failed += 1
            if self.shown:
                sys.stderr.write("\r\x1b[K")
            sys.stderr.write(f"failed: {cell.describe()}: {outcome['error']}\n")
        self._bar(done, total)

    def note(self, message: str) -> None:
        """Print ``note: message`` on stderr, above the bar."""
        if self.shown:
            sys.stderr.write("\r\x1b[K")
        sys.stderr.write(f"note: {message}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.shown = False


@user_errors
def sweep_cmd(
    spec: Annotated[
        str,  # not Path: Path("") is ".", and an empty name must be refused as one
        typer.Argument(
            help="Sweep spec (TOML): traces, clusters, policies, seeds and params.<policy> tables"
        ),
    ],
    out: Annotated[
        str | None,
        typer.Option(
            "--out", "-o", help="Output folder (overrides the spec's 'out'; default sweep-out)"
        ),
    ] = None,
    fmt: FormatOpt = "csv",
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="Dask scheduler address tcp://HOST:PORT (default: a LocalCluster here)",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-j",
            help="LocalCluster worker processes (default: one per core; at most 4 per core)",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Check the spec and inputs, list the cells and which are finished"
        ),
    ] = False,
    plot: Annotated[
        bool,
        typer.Option(
            "--plot", help="Draw the results: avg JCT per policy, faceted by trace and cluster"
        ),
    ] = False,
) -> None:
    """Run a grid of traces x clusters x policies x parameters x seeds on Dask (resumable)."""
    import dataclasses

    from gpusched.errors import GpuschedError
    from gpusched.experiments.run import check_format
    from gpusched.experiments.sweep import (
        check_scheduler,
        check_workers,
        load_spec,
        output_dir,
        run_sweep,
    )

    if dry_run and plot:  # it was dropped without a word
        raise GpuschedError("--plot draws a sweep's results, and --dry-run runs nothing: give one")
    sweep_spec = dataclasses.replace(load_spec(spec), table_format=check_format(fmt))
    out_dir = output_dir(sweep_spec, out)
    if dry_run:  # the options a run would refuse, a dry run refuses too
        if scheduler is None:
            check_workers(workers)
        else:
            check_scheduler(scheduler)
        _dry_run(sweep_spec, out_dir)
        return
    bar = SweepProgress()
    try:
        result = run_sweep(
            sweep_spec,
            out=out_dir,
            scheduler=scheduler,
            n_workers=workers,
            progress=bar,
            note=bar.note,
        )
    finally:
        bar.close()
    ok = [r for r in result.rows if r["status"] == "ok"]
    if ok and len(result.rows) <= MAX_TABLE_ROWS:
        print_table([{**r, "cell": _short(r)} for r in ok], "cell")
    stale = f" ({result.n_stale} of them again: inputs changed)" if result.n_stale else ""
    typer.echo(
        f"{result.n_cells} cells: {result.n_ran} ran{stale}, {result.n_skipped} already "
        f"finished, {len(result.failed)} failed ({result.wall_s:.1f} s)"
    )
    for cell, error in result.failed:
        typer.echo(f"failed: {cell.describe()}: {error}", err=True)
    typer.echo(
        f"results in {result.results_csv} and {result.results_parquet.name}; "
        f"each cell's outputs in {result.out}/cells/"
    )
    if plot and ok:
        from gpusched.results.plot import plot_sweep

        plot_sweep(result.results_csv)
    if result.failed:
        raise typer.Exit(1)


def _dry_run(sweep_spec: Any, out_dir: Path) -> None:
    """List every cell as done, todo, stale or failed (with why), by the test runs use,
    after reading each distinct trace once (a malformed one: one line, exit 2)."""
    from gpusched.experiments.sweep import plan, read_lock

    cells = plan(sweep_spec, out_dir, read_traces=True)
    for cell, status in cells:
        why = f"  ({status.reason})" if status.reason and status.reason != "not run yet" else ""
        typer.echo(f"{status.state:<6} {cell.describe()}{why}")
    n_done = sum(status.finished for _, status in cells)
    n_stale = sum(status.state == "stale" for _, status in cells)
    stale = f" ({n_stale} because inputs changed)" if n_stale else ""
    typer.echo(
        f"{len(cells)} cells, {n_done} finished, {len(cells) - n_done} to run{stale}, in {out_dir}/"
    )
    holder = read_lock(out_dir)
    if holder is not None:
        typer.echo(
            f"note: a sweep holds {out_dir}/ (pid {holder['pid']} on {holder['host']}, "
            f"since {holder.get('started', '?')})",
            err=True,
        )


def _short(row: dict[str, Any]) -> str:
    """A compact label for one results row."""
    parts = [row["policy"]]
    if row["params"]:
        parts.append(row["params"])
    parts += [str(row["cluster"]), Path(str(row["trace"])).name, f"s{row['seed']}"]
    return " ".join(parts)


@user_errors
def plot_cmd(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders (replay/compare --out, sweep cells), or a sweep folder or results.csv"
        ),
    ],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            "-m",
            help="Sweep: the summary metric on the y axis (avg_jct_s, p95_jct_s, ...)",
            show_default="avg_jct_s",
        ),
    ] = None,
    x: Annotated[
        str | None,
        typer.Option(
            "--x",
            help="Sweep: policy (a bar per policy and parameters), a parameter, cluster, "
            "trace or seed on the x axis",
            show_default="policy if several ran, else a parameter",
        ),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            "--save",
            "-s",
            help="Write FILE.png or FILE.svg instead (needs matplotlib: gpusched[plot])",
        ),
    ] = None,
    gantt: Annotated[
        bool,
        typer.Option(
            "--gantt",
            help="One run: GPUs x time coloured by job, loading and saving shaded (needs "
            "its events.csv: replay --out DIR --events); servers shaded by busy fraction "
            "on large clusters",
        ),
    ] = False,
) -> None:
    """Plot runs (JCT CDF, queue length, utilisation over time, or a Gantt chart) or a
    sweep (a metric per policy, or against a parameter)."""
    from gpusched.errors import GpuschedError
    from gpusched.results.plot import is_sweep, plot_runs, plot_sweep

    if gantt:
        from gpusched.results.explain import read_run
        from gpusched.results.gantt import gantt_text, save_gantt
        from gpusched.results.plot import check_save

        if len(runs) != 1 or metric is not None or x is not None:
            raise GpuschedError("--gantt draws one run folder (without --metric or --x)")
        run = read_run(runs[0])
        if save is None:
            import shutil

            typer.echo(gantt_text(run, width=shutil.get_terminal_size((100, 24)).columns), nl=False)
        else:
            typer.echo(f"wrote {save_gantt(run, check_save(save))}")
        return

    sweeps = [p for p in runs if is_sweep(p)]
    if sweeps:
        if len(runs) != 1:
            raise GpuschedError(
                "plot one sweep at a time (a sweep folder or its results.csv), without run folders"
            )
        metric = "avg_jct_s" if metric is None else metric  # an empty one is refused there
        written = plot_sweep(sweeps[0], metric=metric, x=x, save=save)
    else:
        if metric is not None or x is not None:
            option = "--metric" if metric is not None else "--x"
            raise GpuschedError(
                f"{option} applies to a sweep (a sweep folder or its results.csv); "
                f"{runs[0]} is not one (runs are plotted as JCT CDF, queue length and "
                "utilisation)"
            )
        written = plot_runs(runs, save=save)
    if save is not None:
        typer.echo(f"wrote {written}")
