"""``gpusched diff RUN_A RUN_B``: two runs of one trace, job by job."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gpusched.cli._common import user_errors
from gpusched.errors import GpuschedError, empty_name, is_blank, show_name, show_text


@user_errors
def diff_cmd(
    run_a: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A",
            help="Run A: a run folder (replay --out, compare --out) or its jobs.csv",
        ),
    ],
    run_b: Annotated[
        str, typer.Argument(metavar="RUN_B", help="Run B: the same, of the same trace")
    ],
    top: Annotated[
        int, typer.Option("--top", help="Show the N jobs that gained and the N that lost most")
    ] = 5,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the per-job differences (JCT, wait, slowdown in A and B) to this CSV",
        ),
    ] = None,
) -> None:
    """Compare two runs of the same trace job by job: who gained, who lost, by how much.

    A job gained when its JCT is shorter in B than in A, lost when longer, and is
    unchanged within a relative 1e-9. Both runs must hold the same jobs (ids and
    submission times).
    """
    from gpusched.results.diff import check_out_csv, diff_runs, read_run_jobs, write_diff_csv

    if top < 0:
        raise GpuschedError(f"--top must be an integer >= 0, got {top}")
    if out is not None and is_blank(out):
        raise GpuschedError(f"--out: {empty_name(out, 'a CSV file')}")
    for name, given in (("RUN_A", run_a), ("RUN_B", run_b)):
        if is_blank(given):
            raise GpuschedError(f"{name}: {empty_name(given, 'a run folder')}")
    if out is not None:
        check_out_csv(out)
    diff = diff_runs(read_run_jobs(run_a, "RUN_A"), read_run_jobs(run_b, "RUN_B"))
    print_diff(diff, run_a, run_b, top)
    if out is not None:
        write_diff_csv(out, diff)
        typer.echo(f"per-job differences in {show_name(out)}")


def print_diff(diff: Any, name_a: str, name_b: str, top: int) -> None:
    """The summary: counts, total and mean JCT change, the top gainers and losers."""
    import math

    import numpy as np

    from gpusched.results.diff import (
        GAINED,
        LOST,
        NEITHER,
        ONLY_A,
        ONLY_B,
        UNCHANGED,
        format_duration,
    )

    for which, name, run in (("A", name_a, diff.a), ("B", name_b, diff.b)):
        typer.echo(f"{which}: {show_name(name)}" + (f" ({run.label})" if run.label else ""))
    n = len(diff.a.job_id)
    both = diff.both
    same = (
        "of the same trace"
        if diff.a.trace_sha256 and diff.b.trace_sha256
        else "with the same ids and submission times (a trace's hash is not recorded for both)"
    )
    typer.echo(f"{n:,} jobs {same}, {int(both.sum()):,} finished in both")
    typer.echo(
        f"gained (faster in B): {diff.count(GAINED):,}   lost (slower in B): "
        f"{diff.count(LOST):,}   unchanged: {diff.count(UNCHANGED):,}"
    )
    apart = [
        (ONLY_A, "finished only in A"),
        (ONLY_B, "finished only in B"),
        (NEITHER, "unfinished in both"),
    ]
    extra = [f"{text}: {diff.count(key):,}" for key, text in apart if diff.count(key)]
    if extra:
        typer.echo("   ".join(extra) + " (left out of the totals)")
    if not both.any():
        return
    with np.errstate(over="ignore"):  # JCTs near the float's limit sum to inf: shown so
        total_a = float(diff.a.jct[both].sum())
        total_b = float(diff.b.jct[both].sum())
    change = total_b - total_a
    pct = f" ({100 * change / total_a:+.1f} %)" if total_a > 0 and math.isfinite(change) else ""
    typer.echo(
        f"total JCT: {format_duration(total_a)} in A, {format_duration(total_b)} in B, "
        f"change {format_duration(change, sign=True)}{pct}"
    )
    typer.echo(
        f"mean JCT change: {format_duration(change / int(both.sum()), sign=True)} per job; "
        f"mean wait change: "
        f"{format_duration(float((diff.b.wait_s - diff.a.wait_s)[both].mean()), sign=True)}"
    )
    for outcome, title in ((GAINED, "gained most"), (LOST, "lost most")):
        picked = diff.top(outcome, top)
        if picked:
            typer.echo(f"\ntop {len(picked)} that {title} (A -> B):")
            _job_table(diff, picked, format_duration)


def _job_table(diff: Any, picked: list[int], dur: Any) -> None:
    a, b = diff.a, diff.b
    slow = a.slowdown_s is not None and b.slowdown_s is not None
    head = ["job", "JCT", "change", "wait"] + (["slowdown"] if slow else [])
    body = []
    for i in picked:
        row = [
            show_text(a.job_id[i]),
            f"{dur(a.jct[i])} -> {dur(b.jct[i])}",
            dur(float(diff.change_s[i]), sign=True),
            f"{dur(a.wait_s[i])} -> {dur(b.wait_s[i])}",
        ]
        if slow:
            row.append(f"{dur(a.slowdown_s[i])} -> {dur(b.slowdown_s[i])}")
        body.append(row)
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    for r in [head, *body]:
        typer.echo(
            "  ".join(
                x.ljust(w) if k == 0 else x.rjust(w)
                for k, (x, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
