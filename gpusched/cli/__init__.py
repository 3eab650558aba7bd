"""The ``gpusched`` command line (Typer). Heavy imports happen inside commands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

# The commands do no multi-threaded linear algebra, and OpenBLAS starting one thread per
# core as NumPy is imported cost 30-40 ms of CPU (a third of NumPy's import on the 2-core
# development machine). A value set by the user is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import typer  # noqa: E402

from gpusched import __version__
from gpusched.cli import _common, diff, explain, listing, replay, sweep, trace
from gpusched.cli._common import user_errors

app = typer.Typer(
    name="gpusched",
    help="Replay deep-learning training-job traces on a simulated GPU cluster under a scheduling policy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs 0.3-1 s per command
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=_common.Group,
)
app.command("replay", cls=_common.Command)(replay.replay_cmd)
app.command("compare", cls=_common.Command)(replay.compare_cmd)
app.add_typer(trace.app, name="trace")
app.command("policies", cls=_common.Command)(listing.policies_cmd)
app.command("clusters", cls=_common.Command)(listing.clusters_cmd)
app.command("sweep", cls=_common.Command)(sweep.sweep_cmd)
app.command("plot", cls=_common.Command)(sweep.plot_cmd)
app.command("explain", cls=_common.Command)(explain.explain_cmd)
app.command("diff", cls=_common.Command)(diff.diff_cmd)


@app.command("warm-up", cls=_common.Command)
@user_errors
def warm_up_cmd() -> None:
    """Compile the simulation kernels into Numba's cache now (seconds, once per install).

    The install compiles them already; this is for when its cache cannot be used
    (NUMBA_CACHE_DIR set, a read-only install, a wheel built elsewhere). It also says
    whether the kernels compiled ahead of time at install are used (they need no Numba
    at run time). Without it nothing waits: a small run goes on interpreted kernels, and
    a long run on an empty cache compiles them in the background while it goes on, then
    uses them. The cache lives beside the installed package, or in NUMBA_CACHE_DIR when
    that is set.
    """
    import time

    from gpusched.core.warmup import PATHS, kernel_count, warm_up

    t0 = time.perf_counter()
    bar = _common.Progress("compiling simulation kernels", enabled=None)
    total = kernel_count()
    done: list[str] = []

    def compiling(name: str) -> None:
        done.append(name)
        k = min(len(done), total)
        if bar.enabled:
            bar.show(f"[{'#' * (30 * k // total):<30}] {k}/{total} {name:<22}")

    try:
        for path in PATHS:
            warm_up(path, compiling)
    finally:
        bar.close()
    what = f"compiled {len(done)} of {total}" if done else "loaded from the cache"
    typer.echo(f"simulation kernels ready: {what} ({time.perf_counter() - t0:.1f} s)")
    from gpusched.core.aot import status

    typer.echo(f"kernels compiled ahead of time at install: {status()}")


@app.command("workload", cls=_common.Command)
@user_errors
def workload_cmd(
    name: Annotated[
        str, typer.Argument(help="Workload preset (run with an unknown name to list them)")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Trace to write")],
    seed: Annotated[
        int,
        typer.Option("--seed", help="Random seed (>= 0); pollux: the artifact's workload, 1-8"),
    ] = 1,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-n",
            help="Number of jobs, where the preset takes one; default synth-default 500, a-srpt"
            " 20,000 (or all of --source), lazer-* the full size, sjf-bsbf 240, pd-ors 50,"
            " edge-cloud-sim 300, edge-cloud-testbed 30; fixed for sjf-bsbf-testbed (30) and"
            " pollux (the set's size: 160 at --load 1). At least 1; at most 10,000,000 for synth-default, 3,000,000 for"
            " a-srpt, 5,000,000 for sjf-bsbf, 2,000,000 for pd-ors (memory: up to 2 KB per"
            " job), the full size for lazer-*, 4,000 for edge-cloud-*, 30 for sjf-bsbf-testbed",
        ),
    ] = None,
    single_gpu_fraction: Annotated[
        float | None,
        typer.Option(
            "--single-gpu-fraction",
            help="a-srpt: share of single-GPU jobs, 0 to 1 (default: the source's GPU counts)",
        ),
    ] = None,
    load: Annotated[
        float | None,
        typer.Option(
            "--load",
            help="a-srpt, lazer-earth|saturn|uranus (full size), sjf-bsbf, pollux. a-srpt, lazer:"
            " scale the arrival rate to this offered load on the --cluster. a-srpt: default 3 on --load-basis body"
            " (contended: the paper's baselines wait); 0 keeps the source's own arrival"
            " times. lazer-*: default Table 1's rate (the paper's); the 10-minute bins of"
            " --arrivals helios are kept. sjf-bsbf: 240 x L jobs over the same 8 hours (default"
            " 1). pollux: the set, 1 (default), 0.5, 1.5, 2 or 0 (realistic); --seed 1-8 picks"
            " the workload",
        ),
    ] = None,
    load_basis: Annotated[
        str | None,
        typer.Option(
            "--load-basis",
            help="a-srpt: the jobs --load counts: 'body' (default; all but the top 1 % by"
            " GPU-seconds, so a few giant jobs cannot set the arrival rate) or 'all'",
        ),
    ] = None,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            help="a-srpt: 'recurring' (default; recurring-job groups calibrated to Weng et al.,"
            " NSDI'22: sizes, one user and durations around the group's median) or"
            " 'synthesised' (groups within user and GPU count that carry no duration"
            " information, the workload before issue 32)",
        ),
    ] = None,
    group_spread: Annotated[
        float | None,
        typer.Option(
            "--group-spread",
            help="a-srpt recurring: sd of log-duration inside a loose group (default 0.33)",
        ),
    ] = None,
    tight_groups: Annotated[
        float | None,
        typer.Option(
            "--tight-groups",
            help="a-srpt recurring: share of tight groups, 0 to 1 (default 0.42)",
        ),
    ] = None,
    tight_spread: Annotated[
        float | None,
        typer.Option(
            "--tight-spread",
            help="a-srpt recurring: sd of log-duration inside a tight group (default 0.05)",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            "-c",
            help="a-srpt: the cluster (bundled name or TOML path) whose GPUs --load refers to"
            " and whose allreduce_reading/batch_reading the iterations are derived under;"
            " default a-srpt-250x8 (2,000 GPUs). lazer-*: the cluster whose largest job caps"
            " GPU counts; default lazer-sim-512, or lazer-testbed with --jobs below the full size."
            " sjf-bsbf: the cluster whose largest job caps GPU counts (and, beyond the bundled"
            " jobs, sets the jobs per day); default sjf-bsbf-16x4",
        ),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            help="a-srpt, lazer-philly: a Philly trace to sample from, a file (.csv, .csv.gz,"
            " .parquet; a-srpt also the Pollux philly_jobs summary) or a bundled trace's name"
            " (default: the bundled philly-2000)",
        ),
    ] = None,
    horizon: Annotated[
        int | None,
        typer.Option(
            "--horizon",
            help="pd-ors: the horizon T in slots of 1 s; jobs arrive in slots 0..T-1 (default 20)",
        ),
    ] = None,
    arrivals: Annotated[
        str | None,
        typer.Option(
            "--arrivals",
            help="pd-ors: 'alternating' (default; even slots weigh 2/3, odd 1/3) or 'philly'"
            " (the bundled Philly sample's arrival times scaled onto the horizon)."
            " lazer-earth|saturn|uranus: 'helios' (default; Helios Venus's 10-minute"
            " submission counts at Table 1's rate) or 'poisson'",
        ),
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option(
            "--sizes",
            help="lazer-earth|saturn|uranus: 'copula' (default; GPU counts paired with"
            " durations so the GPU-time per job is the Helios summary's) or 'independent'",
        ),
    ] = None,
    overheads: Annotated[
        str | None,
        typer.Option(
            "--overheads",
            help="lazer-*: load and save time per job: 'paper' (default; 113 s and 8 s, the"
            " paper's Sec. 3.2) or 'checkpoint' (the model catalogue's checkpoint times)",
        ),
    ] = None,
    links: Annotated[
        str | None,
        typer.Option(
            "--links",
            help="pd-ors: worker-PS link rates, 'c5n' (default; the paper's C5n network, 100"
            " Gbit/s, over a slot of 145 s from Goyal et al.'s time per sample) or 'legacy'"
            " (gpusched's former rates: 10 Gbit/s, a slot read as one hour)",
        ),
    ] = None,
    cluster_out: Annotated[
        Path | None,
        typer.Option(
            "--cluster-out",
            help="edge-cloud-testbed, edge-cloud-sim: also write the matching cluster (TOML),"
            " drawn from the same --seed",
        ),
    ] = None,
    servers: Annotated[
        int | None,
        typer.Option(
            "--servers",
            help="edge-cloud-sim: edge servers of the cluster --cluster-out writes (default 100)",
        ),
    ] = None,
    cloud: Annotated[
        str | None,
        typer.Option(
            "--cloud",
            help="edge-cloud-testbed: the cloud --cluster-out writes, 'machine' (default: the"
            " ninth machine, Sec. V-A) or 'unbounded' (the simulator's)",
        ),
    ] = None,
    ship: Annotated[
        str | None,
        typer.Option(
            "--ship",
            help="edge-cloud-*: how a job's chunks travel to a server in the cluster"
            " --cluster-out writes, 'parallel' (default, Alg. 3) or 'serial' (one after another)",
        ),
    ] = None,
    arrival_scale: Annotated[
        float | None,
        typer.Option(
            "--arrival-scale",
            help="edge-cloud-*: stretch every arrival slot by this factor (default 1; the load"
            " ablation of docs/a-online.md)",
        ),
    ] = None,
    restart_s: Annotated[
        float | None,
        typer.Option(
            "--restart-s",
            help="sjf-bsbf, sjf-bsbf-testbed: seconds every start costs, written as load_s"
            " (default 30, the Pollux simulator's; 0: no load_s/save_s columns)",
        ),
    ] = None,
    gpu_counts: Annotated[
        str | None,
        typer.Option(
            "--gpu-counts",
            help="sjf-bsbf: 'pollux' (default; Pollux's starting configurations) or 'philly'"
            " (the Philly jobs' own GPU counts, Pollux's workloads-realistic; an ablation)",
        ),
    ] = None,
) -> None:
    """Build a paper's evaluation workload reproducibly.

    Presets: synth-default, a-srpt, lazer-earth, lazer-saturn, lazer-uranus, lazer-philly, sjf-bsbf, sjf-bsbf-testbed, pollux, pd-ors, edge-cloud-testbed, edge-cloud-sim.
    """
    from gpusched.errors import GpuschedError, show_name
    from gpusched.io.trace import write_trace
    from gpusched.workloads import NOTED, build_workload, workload_cluster

    for flag, value in (("--servers", servers), ("--cloud", cloud), ("--ship", ship)):
        if value is not None and cluster_out is None:
            raise GpuschedError(
                f"{flag} shapes the cluster that --cluster-out writes; give --cluster-out"
            )
    if cluster_out is not None and cluster_out.resolve() == output.resolve():
        raise GpuschedError(
            f"--cluster-out {show_name(cluster_out)} is the trace --output names: the cluster "
            "would replace the trace; give it another name (e.g. a .toml)"
        )
    # the cluster's options are checked before a workload is drawn
    cluster_text = (
        None if cluster_out is None else workload_cluster(name, seed, servers, cloud, ship)
    )
    # a missing folder is made, and a bad one reported, before a full-size workload is drawn
    from gpusched.io.files import check_out_file, check_trace_out, make_parent, refuse_special_file

    if source is not None:
        refuse_special_file(source, "--source", "a Philly trace file (.csv, .csv.gz or .parquet)")
    check_trace_out(output, "--output")
    make_parent(output)
    if cluster_out is not None:
        check_out_file(cluster_out, "--cluster-out", "a cluster file (.toml)")
        make_parent(cluster_out)
    trace = build_workload(
        name,
        seed,
        jobs,
        single_gpu_fraction=single_gpu_fraction,
        load=load,
        load_basis=load_basis,
        groups=groups,
        group_spread=group_spread,
        tight_share=tight_groups,
        tight_spread=tight_spread,
        path=source,
        cluster=cluster,
        horizon=horizon,
        arrivals=arrivals,
        links=links,
        restart_s=restart_s,
        gpu_counts=gpu_counts,
        sizes=sizes,
        overheads=overheads,
        arrival_scale=arrival_scale,
    )
    _common.check_written_trace(trace, f"workload {name}")
    write_trace(trace, output)
    note = f": {trace.source}" if name in NOTED else ""
    typer.echo(f"wrote {len(trace)} jobs to {output}{note}")
    if name == "a-srpt":
        _say_offered_load(trace, cluster or "a-srpt-250x8")
    if name == "pd-ors":
        import numpy as np

        from gpusched.workloads.pd_ors import finishable

        alone, _ = finishable(trace, np.zeros((1, 4)))
        typer.echo(
            f"note: {alone} of {len(trace)} jobs can finish by the horizon at all (alone, F"
            " workers on one machine: eq. 13's fastest schedule); no policy finishes more"
        )
    if cluster_out is not None and cluster_text is not None:
        try:
            cluster_out.write_text(cluster_text, encoding="utf-8")
        except OSError as exc:  # a write that fails is not a "file not found"
            why = exc.strerror or type(exc).__name__
            raise GpuschedError(
                f"--cluster-out {show_name(cluster_out)}: cannot write ({why[:1].lower()}{why[1:]})"
            ) from None
        typer.echo(f"wrote cluster to {cluster_out}")


def _say_offered_load(trace: Any, cluster: str) -> None:
    """Print a workload's loads and recurrence on ``cluster``; warn when scheduling cannot matter.

    Three loads (issue 32): the offered load over the arrival window, the same without the
    top 1 % of jobs by GPU-seconds (a few jobs of 10^5 s can carry half of the work, and
    run on after the last arrival), and the demand that falls inside the window,
    :func:`gpusched.workloads.synth.demand_load`. Below a demand of 1 an unbounded
    start-on-arrival schedule would not fill the cluster during the window, so few jobs
    wait, whatever the offered load (issue 14: Philly's own arrival times offer about 0.14
    of 2,000 GPUs; issue 32: at offered load 4 on 6,000 jobs the demand was 0.57 and the
    baselines waited about 30 s on average).
    """
    import numpy as np

    from gpusched.io.cluster import load_cluster
    from gpusched.workloads.recurring import recurrence_stats
    from gpusched.workloads.synth import demand_load, offered_load

    spec = load_cluster(cluster)
    submit = np.asarray(trace.submit_time, dtype=np.float64)
    if submit.size and submit.max() == submit.min():
        who = "the one job arrives" if submit.size == 1 else f"all {submit.size:,} jobs arrive"
        typer.echo(f"{who} at t={submit[0]:g} s: no arrival window, so no offered load")
        return
    load = offered_load(trace, spec.n_gpus)
    body = offered_load(trace, spec.n_gpus, exclude_top=0.01)
    demand = demand_load(trace, spec.n_gpus)
    typer.echo(
        f"offered load {load:.2f} on {spec.name} ({spec.n_gpus:,} GPUs), {body:.2f} without the"
        f" top 1 % of jobs; demand inside the arrival window {demand:.2f}"
    )
    if "group" in trace.extra:
        st = recurrence_stats(trace.extra["group"], trace.duration)
        spread = st["median_spread"]
        spread_text = f"{spread:.2f}" if spread == spread else "- (no group of >= 5 submissions)"
        typer.echo(
            f"groups: {st['share_ge5']:.1%} of jobs in groups of >= 5 submissions,"
            f" {st['singleton_share']:.1%} one-off; median sd of log-duration inside a group"
            f" {spread_text}"
        )
    if not demand >= 1:
        typer.echo(
            f"warning: the jobs' demand inside the arrival window is {demand:.2f} of"
            f" {spec.name}'s GPU-time: even starting every job on arrival would not fill it"
            " before the last arrival, so few jobs wait and policies can hardly differ; give"
            " more --jobs (default 20,000), a higher --load (default 3) or a smaller"
            " --cluster",
            err=True,
        )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpusched {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit"
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="On an error, also print the traceback behind it (e.g. raised inside your policy)",
        ),
    ] = False,
) -> None:
    """gpusched: replay GPU-cluster traces under FIFO, SJF, SRTF, Tiresias and more."""
    _common.DEBUG = debug
