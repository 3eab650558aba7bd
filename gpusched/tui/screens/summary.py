"""The end-of-run screen: the same numbers as the headless summary.json."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpusched.tui.session import fmt_s

_LABELS = {
    "n_jobs": "jobs",
    "n_finished": "finished",
    "n_unfinished": "unfinished",
    "avg_jct_s": "JCT avg",
    "p50_jct_s": "JCT P50",
    "p95_jct_s": "JCT P95",
    "p99_jct_s": "JCT P99",
    "avg_wait_s": "wait avg",
    "p50_wait_s": "wait P50",
    "p95_wait_s": "wait P95",
    "total_jct_s": "total JCT",
    "makespan_s": "makespan",
    "gpu_utilization": "GPU utilisation",
    "n_preemptions": "preemptions",
    "n_futile_preemptions": "futile preemptions",
    "futile_preemption_s": "futile preemption time",
    "n_decisions": "decision points",
    "sched_delay_ms_avg": "scheduling delay avg (ms)",
    "sched_delay_ms_p95": "scheduling delay P95 (ms)",
    "wall_s": "engine wall time (s)",
}


def _value(key: str, v: Any) -> tuple[str, str]:
    if v is None:
        return "-", ""
    if key.endswith("_s") and key != "wall_s":
        return f"{v:.6g}", fmt_s(v)
    if key == "gpu_utilization":
        return f"{v:.6g}", f"{100 * v:.1f}%"
    if isinstance(v, float):
        return f"{v:.6g}", ""
    return str(v), ""


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
        table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        table.add_column("metric", style="cyan", no_wrap=True)
        table.add_column("summary.json", justify="right", no_wrap=True)
        table.add_column("", style="dim", no_wrap=True)
        for key, v in self.summary.items():
            raw, nice = _value(key, v)
            table.add_row(_LABELS.get(key, key), raw, nice)
        with VerticalScroll(id="summary-box"):
            yield Static(f"Run finished · {self.title_text}", id="summary-title")
            yield Static(table, id="summary-table")
            yield Static("q quit · escape back to the cluster view", classes="hint")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
