"""``gpusched explain``: a job's life, or the jobs that lost the most, from a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpusched.cli._common import user_errors


@user_errors
def explain_cmd(
    run: Annotated[
        Path, typer.Argument(help="A run folder (replay --out DIR, best with --events)")
    ],
    job: Annotated[
        str | None,
        typer.Argument(help="A job id (jobs.csv's job_id): its life in sentences"),
    ] = None,
    worst: Annotated[
        int | None,
        typer.Option(
            "--worst",
            "-w",
            help="The N jobs that lost the most time (waiting + slowdown), one line each",
            show_default="10 when no JOB is given",
        ),
    ] = None,
) -> None:
    """Explain a run: why a job waited, where it ran, who preempted it and what it cost.

    With JOB: its arrival, every start (on which GPUs, after how long a wait), load,
    preemption (with the policy's reason and the jobs that took its GPUs), save and
    finish, then its JCT split into wait + load + train + save. Without JOB: the jobs that
    lost the most. The history needs events.csv (replay --out DIR --events).
    """
    from gpusched.errors import GpuschedError, show_name
    from gpusched.results.explain import job_story, read_run
    from gpusched.results.explain import worst as worst_jobs

    if worst is not None and worst < 1:
        raise GpuschedError(f"--worst must be a number of jobs >= 1, got {worst}")
    data = read_run(run)
    if job is not None:
        for line in job_story(data, job):
            typer.echo(line)
        if worst is None:
            return
        typer.echo("")
    n = 10 if worst is None else worst
    lines = worst_jobs(data, n)
    # as many as there are: --worst 30 of a run of 10 finished jobs lists 10
    what = f"the {len(lines)} jobs" if len(lines) != 1 else "the job"
    some = f" ({n} asked; only {len(lines)} have a JCT)" if len(lines) < n else ""
    typer.echo(f"{what} that lost the most time (waiting + slowdown) in {show_name(run)}{some}:")
    for line in lines:
        typer.echo("  " + line)
