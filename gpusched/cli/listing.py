"""``gpusched policies`` and ``gpusched clusters``."""

from __future__ import annotations

import typer

from gpusched.cli._common import user_errors


@user_errors
def policies_cmd() -> None:
    """List the policies --policy accepts, with one line each (imports none of them)."""
    from gpusched.registry import available_policies

    infos = available_policies()
    width = max((len(n) for n in infos), default=0)
    for name, info in infos.items():
        typer.echo(f"{name:<{width}}  {info.summary}")


@user_errors
def clusters_cmd() -> None:
    """List the bundled cluster specs (--cluster NAME)."""
    from gpusched.cluster import bundled_clusters, load_cluster

    rows = []
    for name, desc in bundled_clusters():
        spec = load_cluster(name)
        rows.append((name, f"{spec.n_servers} servers, {spec.n_gpus} GPUs", desc))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, size, desc in rows:
        typer.echo(f"{name:<{w0}}  {size:<{w1}}  {desc}")
