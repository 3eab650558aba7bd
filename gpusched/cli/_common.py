"""Shared CLI plumbing: one-line errors, the summary table and a progress line."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from gpusched.errors import GpuschedError

F = TypeVar("F", bound=Callable[..., Any])

#: the summary keys printed on the terminal, with their labels
SHOWN = (
    ("n_finished", "finished"),
    ("avg_jct_s", "avg JCT s"),
    ("p50_jct_s", "p50 JCT s"),
    ("p95_jct_s", "p95 JCT s"),
    ("avg_wait_s", "avg wait s"),
    ("makespan_s", "makespan s"),
    ("gpu_utilization", "GPU util"),
    ("n_preemptions", "preempt"),
    ("wall_s", "wall s"),
)


def user_errors(fn: F) -> F:
    """Turn a :class:`GpuschedError` into ``error: message`` on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GpuschedError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except FileNotFoundError as exc:
            typer.echo(f"error: file not found: {exc.filename}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def fmt(value: Any) -> str:
    """A compact human rendering of a summary value."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 1e5:
            return f"{value:,.0f}"
        return f"{value:.4g}" if abs(value) < 1 else f"{value:,.1f}"
    return str(value)


def print_table(rows: list[dict[str, Any]], first: str) -> None:
    """Print ``rows`` (policy x metrics) as an aligned table."""
    head = [first] + [label for _, label in SHOWN]
    body = [[str(r[first])] + [fmt(r.get(k)) for k, _ in SHOWN] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    line = "  ".join(
        h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths, strict=True))
    )
    typer.echo(line)
    typer.echo("-" * len(line))
    for b in body:
        typer.echo(
            "  ".join(
                x.rjust(w) if i else x.ljust(w)
                for i, (x, w) in enumerate(zip(b, widths, strict=True))
            )
        )


class Progress:
    """A one-line progress bar on stderr, shown only on a TTY and after ~1 s."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()
        self.shown = False

    def __call__(self, now: float, done: int, total: int) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < 1.0:
            return
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        sys.stderr.write(
            f"\r{self.label} [{bar:<30}] {done:,}/{total:,} jobs  t={now:,.0f} s  "
            f"{time.perf_counter() - self.t0:.1f} s"
        )
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
