"""The end-of-run screen: the same numbers as the headless summary.json.

Laid out to fit the terminal: one table (name, summary.json value, readable value) when
the screen is tall enough, else two tables side by side (jobs and JCT; the run and the
scheduler), without the readable column if even that is too wide; the box scrolls if
it still does not fit. A run stopped before the end says so first: its stop time and
the jobs left. A run of jobs placed by roles adds its admission counts, per-resource
utilisation and its job model's keys (e.g. ``total_utility``), named like the others.
A run of jobs made of chunks adds its chunk and cloud keys (``n_tasks``, ``n_cloud_jobs``,
``cloud_worker_s``, ``ps_held_s``, ``total_transfer_s``); its JCT statistics are over
jobs and ``gpu_utilization`` is the edge workers'.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.events import Resize
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widgets import Static

from gpusched.results.units import fmt_s, fmt_t

_LABELS = {
    "n_jobs": "jobs",
    "n_finished": "finished",
    "n_unfinished": "unfinished",
    "stopped_at_s": "stopped at",
    "avg_jct_s": "JCT avg",
    "p50_jct_s": "JCT P50",
    "p95_jct_s": "JCT P95",
    "p99_jct_s": "JCT P99",
    "avg_wait_s": "wait avg",
    "p50_wait_s": "wait P50",
    "p95_wait_s": "wait P95",
    "avg_slowdown_s": "slowdown avg",
    "total_jct_s": "total JCT",
    "makespan_s": "makespan",
    "gpu_utilization": "GPU utilisation",
    "n_preemptions": "preemptions",
    "n_futile_preemptions": "futile preemptions",
    "futile_preemption_s": "futile preemption time",
    "p50_futile_s": "futile time P50",
    "p95_futile_s": "futile time P95",
    "futile_gpu_s": "futile GPU-s",
    "shared_gpu_s": "shared GPU-s",
    "total_wait_s": "total waiting",
    "total_load_s": "total loading",
    "total_train_s": "total training",
    "total_save_s": "total saving",
    "total_slowdown_s": "total slowdown",
    "n_decisions": "decision points",
    "sched_delay_ms_avg": "scheduling delay avg (ms)",
    "sched_delay_ms_p95": "scheduling delay P95 (ms)",
    "wall_s": "engine wall time (s)",
    "n_admitted": "admitted",
    "n_rejected": "rejected",
    "utilization_cpus": "vCPU utilisation",
    "utilization_mem_gb": "memory utilisation",
    "utilization_storage_gb": "storage utilisation",
    "total_utility": "total utility",
    "median_training_slots": "median training (slots)",
    "n_tasks": "chunks",
    "n_cloud_jobs": "cloud-only jobs",
    "n_cloud_chunks": "chunks in the cloud",
    "cloud_worker_s": "cloud worker-s",
    "ps_held_s": "PS-s held",
    "total_transfer_s": "total data shipping",
    "total_comm_s": "total communication",
}
#: Labels that differ in a run of jobs made of chunks (its utilisation is the edge's).
_TASK_LABELS = {"gpu_utilization": "edge utilisation"}
#: Keys of the left table in the two-table layout (the rest go right).
_JOB_KEYS = frozenset(
    {
        "n_jobs",
        "n_finished",
        "n_unfinished",
        "avg_jct_s",
        "p50_jct_s",
        "p95_jct_s",
        "p99_jct_s",
        "avg_wait_s",
        "p50_wait_s",
        "p95_wait_s",
        "avg_slowdown_s",
        "total_jct_s",
        "total_wait_s",
        "total_slowdown_s",
        "n_admitted",
        "n_rejected",
        "total_utility",
        "median_training_slots",
        "n_tasks",
        "n_cloud_jobs",
    }
)
#: Rows of the box besides the title and the table: border, hint and its padding.
_BOX_ROWS = 4
#: Columns of the box besides its content: border and padding.
_BOX_COLS = 6
#: The narrowest content of the box (the title wraps at this width).
_MIN_WIDTH = 60


def _value(key: str, v: Any) -> tuple[str, str]:
    if v is None:
        return "-", ""
    if isinstance(v, dict):  # a policy's nested key, e.g. ``prediction``
        return _nested(v)
    if key == "gpu_utilization" or key.startswith("utilization_"):
        return _number(v), f"{100 * v:.1f}%"
    if key.endswith("_s") and isinstance(v, int | float):
        unit = _RESOURCE_SECONDS.get(key)
        if unit is not None:  # resource-time, not a duration: in resource-hours
            return _number(v), f"{v / 3600:,.3g} {unit}-h"
        return _number(v), "" if key == "wall_s" else fmt_s(v)  # wall_s: its label says (s)
    if isinstance(v, float):
        return _number(v), ""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}", ""
    return str(v), ""


#: summary keys in resource-seconds (not durations), with their resource
_RESOURCE_SECONDS = {
    "futile_gpu_s": "GPU",
    "shared_gpu_s": "GPU",
    "cloud_worker_s": "wkr",
    "ps_held_s": "PS",
}


def _number(v: float) -> str:
    """A summary value in the summary.json column: 6 significant digits, grouped, never in
    exponent notation below 1e15 (``4,267,670``, ``0.0353459``); its unit is in the
    readable column beside it (``49d09h``, ``1,185.5 GPU-h``, ``72.0%``)."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        return str(v)
    if abs(v) >= 1e5 and abs(v) < 1e15:
        return f"{v:,.0f}"
    return f"{v:,.6g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.3g}"


def _nested(v: dict[str, Any]) -> tuple[str, str]:
    """A nested summary value in one cell: the predictor's accuracy, else its keys."""
    used = v.get(str(v.get("predictor")))
    if isinstance(used, dict) and used.get("within_10pct") is not None:
        mae = used.get("mae_iterations")
        return (
            f"{v['predictor']}",
            f"{100 * used['within_10pct']:.1f}% within 10%, MAE {mae:,.0f} it",
        )
    return "{" + ", ".join(map(str, v)) + "}", ""


def _table(summary: dict[str, Any], keys: list[str], *, nice: bool) -> Table:
    table = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    table.add_column("metric", style="cyan", no_wrap=True)
    table.add_column("summary.json", justify="right", no_wrap=True)
    if nice:
        table.add_column("", style="dim", no_wrap=True)
    labels = {**_LABELS, **_TASK_LABELS} if "n_tasks" in summary else _LABELS
    for key in keys:
        raw, readable = _value(key, summary[key])
        cells = [labels.get(key, key), raw] + ([readable] if nice else [])
        table.add_row(*cells)
    return table


def stop_line(summary: dict[str, Any]) -> Text | None:
    """``stopped at t=... s: N of M jobs unfinished`` for a run cut short, else None."""
    at = summary.get("stopped_at_s")
    if at is None:
        return None
    t = Text()
    t.append("Stopped early", style="bold yellow")
    t.append(f" at t={fmt_t(at)} ({fmt_s(at)}): ")
    t.append(f"{summary.get('n_unfinished', '?')} of {summary.get('n_jobs', '?')}", style="bold")
    t.append(" jobs unfinished (as with --until)")
    return t


def summary_layout(
    summary: dict[str, Any], size: Size, measure: Any, title_rows: int
) -> RenderableType:
    """The tables of ``summary`` laid out for a screen of ``size``.

    Parameters
    ----------
    summary
        The summary dictionary.
    size
        The screen's size (cells).
    measure
        ``measure(renderable) -> int``: the width a renderable wants.
    title_rows
        Rows the title (and stop line) take above the tables.
    """
    keys = list(summary)
    rows = size.height - _BOX_ROWS - title_rows
    width = size.width - _BOX_COLS
    one = _table(summary, keys, nice=True)
    if len(keys) + 1 <= rows and measure(one) <= width:
        return one
    left = [k for k in keys if k in _JOB_KEYS]
    right = [k for k in keys if k not in _JOB_KEYS]
    best: RenderableType = one
    for nice in (True, False):
        grid = Table.grid(padding=(0, 3))
        grid.add_row(_table(summary, left, nice=nice), _table(summary, right, nice=nice))
        best = grid
        if measure(grid) <= width:
            break
    return best


class SummaryScreen(ModalScreen[None]):
    """Every key of the summary (summary.json's keys and values, plus a readable form)."""

    BINDINGS = [
        Binding("escape", "dismiss", "back to the cluster"),
        Binding("q", "app.quit", "quit"),
    ]

    def __init__(self, summary: dict[str, Any], title: str = "") -> None:
        super().__init__()
        self.summary = summary
        self.title_text = title

    def compose(self) -> ComposeResult:
        stopped = stop_line(self.summary)
        head = "Run stopped" if stopped is not None else "Run finished"
        with VerticalScroll(id="summary-box"):
            yield Static(f"{head} · {self.title_text}", id="summary-title")
            if stopped is not None:
                yield Static(stopped, id="summary-stop")
            yield Static(id="summary-table")
            yield Static("q quit · escape back to the cluster view", classes="hint")

    def on_mount(self) -> None:
        self._fit(self.app.size)

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size)

    def _fit(self, size: Size) -> None:
        console = self.app.console

        def measure(renderable: RenderableType) -> int:
            return Measurement.get(console, console.options, renderable).maximum

        # the box is at least _MIN_WIDTH wide inside: count the title's rows at that width
        width = max(min(size.width - _BOX_COLS, _MIN_WIDTH), 20)
        stopped = stop_line(self.summary)
        title_rows = math.ceil(len(f"Run finished · {self.title_text}") / width)
        if stopped is not None:
            title_rows += math.ceil(len(stopped.plain) / width)
        layout = summary_layout(self.summary, size, measure, title_rows)
        box = self.query_one("#summary-box")
        box.styles.width = min(max(measure(layout), _MIN_WIDTH) + _BOX_COLS, size.width)
        self.query_one("#summary-table", Static).update(layout)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
