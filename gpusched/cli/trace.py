"""``gpusched trace import|synth|stats``: make and inspect canonical traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpusched.cli._common import user_errors

app = typer.Typer(
    help="Import real traces, synthesize traces, and describe them.", no_args_is_help=True
)


@app.command("import")
@user_errors
def import_cmd(
    kind: Annotated[
        str, typer.Argument(help="Source format: philly-pollux, gavel-msr-philly, tiresias, openb")
    ],
    src: Annotated[Path, typer.Argument(help="The source file (.csv or .csv.gz)")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Canonical trace to write (.csv or .csv.gz)")
    ],
) -> None:
    """Convert a public trace into the canonical CSV; say what was excluded and why."""
    from gpusched.importers import convert_trace

    if not src.is_file():
        raise FileNotFoundError(2, "not found", str(src))
    report = convert_trace(kind, src, output)
    typer.echo(str(report))
    typer.echo(f"wrote {output}")


@app.command("synth")
@user_errors
def synth_cmd(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Trace to write (.csv or .csv.gz)")
    ],
    jobs: Annotated[int, typer.Option("--jobs", "-n", help="Number of jobs", min=1)] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed")] = 1,
    load: Annotated[
        float,
        typer.Option("--load", help="Offered load as a fraction of the cluster's GPU capacity"),
    ] = 0.8,
    cluster: Annotated[
        str, typer.Option("--cluster", "-c", help="Cluster the load is sized for")
    ] = "default",
) -> None:
    """Generate a seeded synthetic trace: heavy-tailed durations, Philly-like GPU mix, load-matched arrivals."""
    from gpusched.cluster import load_cluster
    from gpusched.errors import GpuschedError
    from gpusched.synth import synth_trace
    from gpusched.trace import write_trace

    if not load > 0:
        raise GpuschedError(f"--load must be > 0, got {load}")
    spec = load_cluster(cluster)
    trace = synth_trace(jobs, seed, load=load, n_gpus_cluster=spec.n_gpus)
    write_trace(trace, output)
    typer.echo(
        f"wrote {len(trace)} jobs to {output} (load {load:g} on {spec.name}, {spec.n_gpus} GPUs)"
    )


@app.command("stats")
@user_errors
def stats_cmd(
    trace: Annotated[str, typer.Argument(help="Trace CSV or bundled trace name")],
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", "-c", help="Also report the offered load on this cluster"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Jobs, span, GPU-count mix, duration and inter-arrival percentiles of a trace."""
    from gpusched.cluster import load_cluster
    from gpusched.run import resolve_trace
    from gpusched.synth import trace_stats
    from gpusched.trace import read_trace

    n_gpus = load_cluster(cluster).n_gpus if cluster else None
    stats = trace_stats(read_trace(resolve_trace(trace)), n_gpus)
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
        return
    for key, value in stats.items():
        if isinstance(value, dict):
            inner = ", ".join(
                f"{k}: {v:,.6g}" if isinstance(v, float) else f"{k}: {v}" for k, v in value.items()
            )
            typer.echo(f"{key:>18}  {inner}")
        else:
            typer.echo(
                f"{key:>18}  {value:,.6g}" if isinstance(value, float) else f"{key:>18}  {value}"
            )


@app.command("annotate")
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
    from gpusched.annotate import annotate_trace
    from gpusched.run import resolve_trace
    from gpusched.trace import read_trace, trace_sha256, write_trace

    path = resolve_trace(trace)
    annotated, notes = annotate_trace(read_trace(path), seed)
    write_trace(annotated, output)
    manifest = {
        "source": str(path),
        "source_sha256": trace_sha256(path),
        "seed": seed,
        "notes": notes,
    }
    Path(f"{output}.manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for note in notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {len(annotated)} annotated jobs to {output}")
