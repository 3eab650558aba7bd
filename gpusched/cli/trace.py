"""``gpusched trace import|synth|stats|annotate|convert``: make and inspect canonical traces."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from gpusched.cli._common import Command, Group, check_written_trace, user_errors
from gpusched.io.files import check_trace_out, refuse_special_file

#: most jobs ``trace synth`` draws (about 0.4 KB of memory each; 100 million ended in a
#: MemoryError)
MAX_SYNTH_JOBS = 10_000_000


app = typer.Typer(
    help="Import real traces, synthesize traces, and describe them.",
    no_args_is_help=True,
    cls=Group,
)


@app.command("import", cls=Command)
@user_errors
def import_cmd(
    kind: Annotated[
        str, typer.Argument(help="Source format: philly-pollux, gavel-msr-philly, tiresias, openb")
    ],
    src: Annotated[Path, typer.Argument(help="The source file (.csv or .csv.gz)")],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Canonical trace to write (.csv, .csv.gz or .parquet)"),
    ],
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="gavel-msr-philly: keep this one of Gavel's seeds (default 0)"),
    ] = None,
    all_seeds: Annotated[
        bool,
        typer.Option(
            "--all-seeds", help="gavel-msr-philly: keep every seed (job ids get a seed prefix)"
        ),
    ] = False,
    vc: Annotated[
        str | None,
        typer.Option("--vc", help="gavel-msr-philly: keep only this Philly virtual cluster"),
    ] = None,
    fractional: Annotated[
        str | None,
        typer.Option(
            "--fractional",
            help="openb: keep pods with a fractional GPU share as one GPU ('whole', the "
            "default) or 'exclude' them",
        ),
    ] = None,
) -> None:
    """Convert a public trace into the canonical CSV; say what was excluded and why."""
    from gpusched.errors import GpuschedError, show_name
    from gpusched.workloads.importers import convert_trace

    options = import_options(kind, seed=seed, all_seeds=all_seeds, vc=vc, fractional=fractional)
    check_trace_out(output, "--output")
    if not src.exists():
        raise GpuschedError(f"file not found: {show_name(src)}")
    refuse_special_file(src, "SRC", "a trace file (.csv or .csv.gz)")
    report = convert_trace(kind, src, output, **options)
    typer.echo(str(report))
    typer.echo(f"wrote {show_name(output)}")


def import_options(
    kind: str,
    *,
    seed: int | None = None,
    all_seeds: bool = False,
    vc: str | None = None,
    fractional: str | None = None,
) -> dict[str, Any]:
    """The importer keyword options of ``gpusched trace import``'s flags (checked against ``kind``).

    Raises
    ------
    GpuschedError
        A flag given for a kind it does not apply to, or ``--seed`` with ``--all-seeds``.
    """
    from gpusched.errors import GpuschedError

    given = {
        "--seed": seed is not None,
        "--all-seeds": all_seeds,
        "--vc": vc is not None,
        "--fractional": fractional is not None,
    }
    applies = {
        "--seed": "gavel-msr-philly",
        "--all-seeds": "gavel-msr-philly",
        "--vc": "gavel-msr-philly",
        "--fractional": "openb",
    }
    for flag, on in given.items():
        if on and kind != applies[flag]:
            raise GpuschedError(f"{flag} applies to '{applies[flag]}' imports only, not '{kind}'")
    if seed is not None and all_seeds:
        raise GpuschedError("give --seed or --all-seeds, not both")
    options: dict[str, Any] = {}
    if all_seeds:
        options["seed"] = None
    elif seed is not None:
        options["seed"] = seed
    if vc is not None:
        options["vc"] = vc
    if fractional is not None:
        options["fractional"] = fractional
    return options


@app.command("synth", cls=Command)
@user_errors
def synth_cmd(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Trace to write (.csv, .csv.gz or .parquet)")
    ],
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-n",
            help=f"Number of jobs, 1 to {MAX_SYNTH_JOBS:,} (memory: about 0.4 KB per job)",
        ),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (>= 0)")] = 1,
    load: Annotated[
        float,
        typer.Option(
            "--load",
            help="Offered load as a fraction of the cluster's GPU capacity (> 0, finite)",
        ),
    ] = 0.8,
    cluster: Annotated[
        str, typer.Option("--cluster", "-c", help="Cluster the load is sized for")
    ] = "default",
) -> None:
    """Generate a seeded synthetic trace: heavy-tailed durations, Philly-like GPU mix, load-matched arrivals."""
    from gpusched.errors import GpuschedError, check_seed, show_name
    from gpusched.io.cluster import load_cluster
    from gpusched.io.trace import write_trace
    from gpusched.workloads.synth import synth_trace

    if not 1 <= jobs <= MAX_SYNTH_JOBS:
        raise GpuschedError(
            f"--jobs must be 1 to {MAX_SYNTH_JOBS:,} (a limit of memory: about 0.4 KB per "
            f"job), got {jobs:,}"
        )
    check_seed(seed)
    if not (load > 0 and math.isfinite(load)):
        raise GpuschedError(f"--load must be a finite number > 0, got {load}")
    from gpusched.workloads import MAX_LOAD

    if load > MAX_LOAD:  # as workload a-srpt's --load (1e300 wrote every submit time 0)
        raise GpuschedError(
            f"--load must be at most {MAX_LOAD:g}, as workload's (arrivals are already all "
            f"but simultaneous there), got {load:g}"
        )
    check_trace_out(output, "--output")
    spec = load_cluster(cluster)
    import numpy as np

    with np.errstate(over="ignore"):  # a tiny load: arrivals past every limit, refused next
        trace = synth_trace(jobs, seed, load=load, n_gpus_cluster=spec.n_gpus)
    check_written_trace(trace, "trace synth")
    write_trace(trace, output)
    typer.echo(
        f"wrote {len(trace)} jobs to {show_name(output)} (load {load:g} on {spec.name}, "
        f"{spec.n_gpus} GPUs)"
    )


@app.command("stats", cls=Command)
@user_errors
def stats_cmd(
    trace: Annotated[
        str, typer.Argument(help="Trace (.csv, .csv.gz or .parquet) or bundled trace name")
    ],
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", "-c", help="Also report the offered load on this cluster"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Jobs, span, GPU-count mix, duration and inter-arrival percentiles of a trace."""
    from gpusched.io.cluster import load_cluster
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace
    from gpusched.workloads.synth import trace_stats

    n_gpus = load_cluster(cluster).n_gpus if cluster is not None else None
    stats = trace_stats(read_trace(resolve_trace(trace)), n_gpus)
    if as_json:
        typer.echo(json.dumps(stats, indent=2, allow_nan=False))
        return
    for key, value in stats.items():
        if isinstance(value, dict):
            inner = ", ".join(
                f"{k}: {v:,.6g}" if isinstance(v, float) else f"{k}: {v}" for k, v in value.items()
            )
            typer.echo(f"{key:>18}  {inner}")
        elif value is None and key == "offered_load":
            typer.echo(f"{key:>18}  -  (no span: no job, or all submitted at once)")
        elif value is None:
            typer.echo(f"{key:>18}  -  (not given by any job)")
        else:
            text = f"{value:,.6g}" if isinstance(value, float) else f"{value}"
            without = stats.get("jobs_by_iterations", 0)  # (every job without a duration)
            if key in ("gpu_seconds", "offered_load") and without:
                # their work depends on a job model (iterations, chunks, roles), not read here
                text += (
                    f"  (over the {stats['jobs_with_duration']:,} jobs with a duration; "
                    f"{without:,} without one (iterations, chunks or roles) are not counted)"
                )
            typer.echo(f"{key:>18}  {text}")


@app.command("annotate", cls=Command)
@user_errors
def annotate_cmd(
    trace: Annotated[str, typer.Argument(help="Trace CSV or bundled trace name (needs duration)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Annotated trace to write")],
    seed: Annotated[int, typer.Option("--seed", help="Random seed")] = 1,
) -> None:
    """Assign DNN models, parallel configurations and iterations to job groups (A-SRPT Sec. V-A).

    Writes OUTPUT and OUTPUT.manifest.json (seed, source hash, and what was synthesized,
    e.g. recurring-job groups when the trace has none).
    """
    from gpusched.errors import GpuschedError, show_name
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace, trace_sha256, write_trace
    from gpusched.workloads.annotate import annotate_trace

    check_trace_out(output, "--output")
    path = resolve_trace(trace)
    source_sha256 = trace_sha256(path)  # before the output is written: it may be the source
    annotated, notes = annotate_trace(read_trace(path), seed)
    write_trace(annotated, output)
    manifest = {
        "source": str(path),
        "source_sha256": source_sha256,
        "seed": seed,
        "notes": notes,
    }
    manifest_path = Path(f"{output}.manifest.json")
    try:
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    except OSError as exc:
        raise GpuschedError(f"cannot write {show_name(manifest_path)}: {exc.strerror}") from None
    for note in notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {len(annotated)} annotated jobs to {show_name(output)}")


@app.command("convert", cls=Command)
@user_errors
def convert_cmd(
    trace: Annotated[
        str, typer.Argument(help="Trace to read (.csv, .csv.gz or .parquet) or bundled trace name")
    ],
    output: Annotated[
        Path, typer.Argument(help="Trace to write: .csv, .csv.gz or .parquet (by its suffix)")
    ],
) -> None:
    """Convert a canonical trace between CSV and Parquet (validated as replay reads it)."""
    from gpusched.errors import show_name
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace, write_trace

    check_trace_out(output, "OUTPUT")
    data = read_trace(resolve_trace(trace))
    write_trace(data, output)
    typer.echo(f"wrote {len(data)} jobs to {show_name(output)}")
