"""``gpusched replay`` and ``gpusched compare``."""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

import typer

from gpusched.cli._common import (
    FormatOpt,
    Progress,
    compile_notice,
    print_run_header,
    print_table,
    require_out,
    require_terminal,
    suggest_warm_up,
    user_errors,
)
from gpusched.errors import show_text
from gpusched.experiments.run import DEFAULT_CLUSTER
from gpusched.io.resources import DEFAULT_TRACE

TraceArg = Annotated[
    str | None,
    typer.Argument(
        help=f"Trace (.csv, .csv.gz or .parquet) or a bundled trace name [default: {DEFAULT_TRACE}]"
    ),
]
ClusterOpt = Annotated[
    str,
    typer.Option(
        "--cluster",
        "-c",
        help="Cluster spec: a .toml path or a bundled name (see `gpusched clusters`)",
    ),
]
SlotOpt = Annotated[
    float,
    typer.Option("--slot", help="Slot length in seconds; decisions happen at slot boundaries"),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed (>= 0) for the policy's random numbers")]
UntilOpt = Annotated[
    float | None,
    typer.Option(
        "--until",
        help="Stop at this simulated time (s); jobs left are reported unfinished (default:"
        " run until every job has finished)",
    ),
]
DropOpt = Annotated[
    bool,
    typer.Option(
        "--drop-oversized", help="Skip (and count) jobs needing more GPUs than the cluster has"
    ),
]
LoadOpt = Annotated[
    float,
    typer.Option(
        "--load-s",
        help="Seconds a job loads (holding its GPUs, not training) after each start, for jobs "
        "whose trace gives no load_s",
    ),
]
SaveOpt = Annotated[
    float,
    typer.Option(
        "--save-s",
        help="Seconds a job pauses and saves (holding its GPUs) after each preemption, for jobs "
        "whose trace gives no save_s",
    ),
]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="auto (fused when the policy has it) | fused (built-in policies run inside the "
        "kernel) | python (the policy's readable decide(); same results)",
    ),
]


@user_errors
def replay_cmd(
    trace: TraceArg = None,
    policy: Annotated[
        str,
        typer.Option(
            "--policy", "-P", help="Policy name, NAME:key=value,..., or a path to a .py file"
        ),
    ] = "fifo",
    cluster: ClusterOpt = DEFAULT_CLUSTER,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Policy parameter key=value (repeatable)"),
    ] = None,
    slot: SlotOpt = 1.0,
    seed: SeedOpt = 0,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Write jobs.csv, timeline.csv, summary.json, manifest.json to this folder",
        ),
    ] = None,
    fmt: FormatOpt = "csv",
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the results already in --out, whole (by default such a folder is "
            "refused, so an old run never mixes with a new one)",
        ),
    ] = False,
    until: UntilOpt = None,
    drop_oversized: DropOpt = False,
    load_s: LoadOpt = 0.0,
    save_s: SaveOpt = 0.0,
    engine: EngineOpt = "auto",
    events: Annotated[
        bool,
        typer.Option(
            "--events",
            help="Also write events.csv to --out: every start (with its GPUs), preemption, "
            "save, completion and rejection, with the policy's reasons; read it with "
            "'gpusched explain' and 'gpusched plot --gantt'",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON")] = False,
    tui: Annotated[
        bool,
        typer.Option(
            "--tui", help="Watch it live in a terminal UI (space pause, n step, ? help, q quit)"
        ),
    ] = False,
) -> None:
    """Replay a trace on a cluster under one policy and print the summary."""
    from gpusched.core.warmup import PATHS, warm_up
    from gpusched.experiments.run import check_format, check_run_options, replay
    from gpusched.io.runfolder import FolderTransaction

    check_run_options(slot_s=slot, seed=seed, until_s=until, mode=engine)
    check_format(fmt)
    require_out(out, events=events, force=force, fmt=fmt)
    if tui:
        require_terminal("--tui")
        from gpusched.tui import run_tui

        tx = None if out is None else FolderTransaction(out, force=force)
        if tx is not None:
            tx.check()
        with compile_notice():
            for path in PATHS:
                warm_up(path)
        with tx if tx is not None else contextlib.nullcontext():
            summary = run_tui(
                trace,
                policy,
                cluster=cluster,
                params=param,
                slot_s=slot,
                seed=seed,
                until_s=until,
                drop_oversized=drop_oversized,
                load_s=load_s,
                save_s=save_s,
                mode=engine,
                out=None if tx is None else tx.staging,
                events=events,
                fmt=fmt,
            )
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
        else:
            print_table([{"policy": policy, **summary}], "policy")
        return

    bar = Progress(policy)
    try:
        summary, result = replay(
            trace,
            policy,
            cluster=cluster,
            params=param,
            slot_s=slot,
            seed=seed,
            until_s=until,
            drop_oversized=drop_oversized,
            load_s=load_s,
            save_s=save_s,
            mode=engine,
            out=out,
            force=force,
            progress=bar,
            notice=compile_notice,
            events=events,
            fmt=fmt,
        )
    finally:
        bar.close()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from gpusched.experiments.run import PolicySpec

    print_run_header(result, summary)
    label = PolicySpec.parse(policy, param).label(result.policy_name)
    print_table([{"policy": label, **summary}], "policy")
    if out is not None:
        typer.echo(f"results in {out}/")
    suggest_warm_up(result)


@user_errors
def compare_cmd(
    ctx: typer.Context,
    trace: TraceArg = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            "-P",
            help="Policy spec NAME[:key=value,...] or a path to a .py file (repeat for each"
            " policy; at least one)",
        ),
    ] = None,
    cluster: ClusterOpt = DEFAULT_CLUSTER,
    slot: SlotOpt = 1.0,
    seed: SeedOpt = 0,
    out: Annotated[
        str | None,
        typer.Option(
            "--out", "-o", help="Write comparison.csv and one folder per policy to this folder"
        ),
    ] = None,
    fmt: FormatOpt = "csv",
    until: UntilOpt = None,
    drop_oversized: DropOpt = False,
    load_s: LoadOpt = 0.0,
    save_s: SaveOpt = 0.0,
    plot: Annotated[
        bool,
        typer.Option(
            "--plot", help="Draw JCT CDFs, queue length and utilisation of the runs (needs --out)"
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the results of an earlier comparison in --out (by default such a "
            "folder is refused, so old runs never mix with new ones)",
        ),
    ] = False,
    seeds: Annotated[
        str | None,
        typer.Option(
            "--seeds",
            help="Run each policy once per seed (1-5, 1,3,7 or 1-3,10; each run's --seed) and "
            "print mean ± 95 % interval per metric, paired by seed against the first policy; "
            "a TRACE naming {seed} (runs/ec-{seed}.csv) gives each seed its own trace. With "
            "--out: DIR/<policy>/seed-<s>/ run folders, comparison.csv and compare-runs.csv",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="With --seeds: Dask workers for the runs (default one per core when there "
            "are more than 4 runs; 1 runs them one after the other in this process; at most 4"
            " per core)",
        ),
    ] = None,
) -> None:
    """Replay one trace under several policies and print one table (policies x metrics).

    With --seeds, every policy runs on every seed and each cell reads mean ± half-width
    of its 95 % interval; ~ marks a difference from the first policy within noise, = one
    that is 0 on every seed.
    """
    from gpusched.errors import GpuschedError
    from gpusched.experiments.run import check_format, check_run_options, compare

    check_format(fmt)
    if not policy:
        raise GpuschedError("give at least one --policy (e.g. --policy fifo --policy srtf)")
    require_out(out, force=force, fmt=fmt, plot=plot)
    from gpusched.cli.seeds import compare_over_seeds

    if compare_over_seeds(
        ctx,
        trace,
        policy,
        seeds=seeds,
        workers=workers,
        plot=plot,
        out=out,
        force=force,
        cluster=cluster,
        slot_s=slot,
        until_s=until,
        drop_oversized=drop_oversized,
        load_s=load_s,
        save_s=save_s,
        fmt=fmt,
    ):
        return
    check_run_options(slot_s=slot, seed=seed, until_s=until)
    bar = Progress("compare")
    first_notes: tuple[str, ...] = ()
    later_notes: list[tuple[int, str]] = []  # printed under the table: (run or -1, note)

    def header(i: int, result: Any, summary: dict[str, Any]) -> None:
        nonlocal first_notes
        if i == 0:
            bar.close()
            print_run_header(result, summary, engine=False, policy_notes=False)
            first_notes = tuple(result.jobs.notes)
        later_notes.extend((-1, n) for n in result.jobs.notes if n not in first_notes)
        # the policy's own notes (its notes() hook), under its row's label, for every run
        later_notes.extend((i, n) for n in result.extra.get("policy_notes", ()))

    try:
        rows = compare(
            trace,
            policy,
            out=out,
            force=force,
            cluster=cluster,
            slot_s=slot,
            seed=seed,
            until_s=until,
            drop_oversized=drop_oversized,
            load_s=load_s,
            save_s=save_s,
            notice=compile_notice,
            progress=lambda text: setattr(bar, "label", text),
            each_result=header,
            fmt=fmt,
            job_progress=bar,  # each run's jobs done: no minutes of silence
        )
    finally:
        bar.close()
    print_table(rows, "policy")
    for i, note in dict.fromkeys(later_notes):  # a policy's notes under its row's label
        text = note if i < 0 else f"{rows[i]['policy']}: {note}"
        typer.echo(f"note: {show_text(text)}")
    if out is not None:
        typer.echo(f"comparison in {out}/comparison.csv")
    if plot and out is not None:
        from gpusched.results.plot import plot_runs

        plot_runs([out])
