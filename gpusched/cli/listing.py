"""``gpusched policies`` and ``gpusched clusters``."""

from __future__ import annotations

from typing import Any

import typer

from gpusched.cli._common import user_errors


@user_errors
def policies_cmd() -> None:
    """List the policies --policy accepts, with one line each (imports none of them)."""
    from gpusched.core.registry import available_policies
    from gpusched.errors import show_text

    infos = available_policies()
    width = max((len(n) for n in infos), default=0)
    for name, info in infos.items():  # a third party's docstring: shown escaped
        typer.echo(f"{show_text(name):<{width}}  {show_text(info.summary)}")


@user_errors
def clusters_cmd() -> None:
    """List the bundled cluster specs (--cluster NAME).

    A cluster whose A-SRPT performance-model reading differs from the default shows it after
    its description, e.g. ``[eq. 6 literal, batch per-replica]``.
    """
    from gpusched.io.cluster import bundled_cluster_specs

    rows = []
    for name, spec in bundled_cluster_specs():  # each file read once
        size = f"{spec.n_servers} servers, {spec.n_gpus} GPUs"
        rows.append((name, size, spec.description + _reading(spec)))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, size, desc in rows:
        typer.echo(f"{name:<{w0}}  {size:<{w1}}  {desc}")


def _reading(spec: Any) -> str:
    """`` [eq. 6 literal, batch per-replica]`` for a non-default reading, else ``""``."""
    from gpusched.io.cluster import ALLREDUCE_READINGS, BATCH_READINGS

    parts = []
    if spec.allreduce_reading != ALLREDUCE_READINGS[0]:
        parts.append(f"eq. 6 {spec.allreduce_reading}")
    if spec.batch_reading != BATCH_READINGS[0]:
        parts.append(f"batch {spec.batch_reading}")
    return f" [{', '.join(parts)}]" if parts else ""
