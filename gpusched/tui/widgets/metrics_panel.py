"""The metrics panel: clock, progress, JCT so far, and utilisation / queue sparklines."""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gpusched.tui.session import Frame, fmt_s, fmt_speed, resample

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], top: float) -> str:
    """``values`` as bar glyphs scaled to ``top`` (a blank for an empty bin)."""
    if top <= 0:
        top = 1.0
    out = []
    for v in values:
        k = int(round(v / top * (len(SPARK) - 1)))
        out.append(SPARK[min(max(k, 0), len(SPARK) - 1)])
    return "".join(out)


class MetricsPanel(Widget):
    """Numbers of the run so far, drawn from the latest frame."""

    DEFAULT_CSS = """
    MetricsPanel { height: 8; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False)

    def __init__(self, n_gpus: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_gpus = n_gpus

    def render(self) -> Text:
        f = self.frame
        t = Text(no_wrap=True, overflow="ellipsis")
        if f is None:
            t.append("starting…", style="dim")
            return t
        if f.finished:
            mode = ("■ done", "bold")
        elif f.paused:
            mode = ("❚❚ paused", "bold yellow")
        else:
            mode = (f"▶ {fmt_speed(f.speed)}", "bold green")
        t.append("t ", style="dim")
        t.append(fmt_s(f.clock), style="bold")
        t.append("  ")
        t.append(*mode)
        nxt = f.next_event
        if f.paused and math.isfinite(nxt):
            t.append(f"  next {fmt_s(nxt)}", style="dim")
        t.append("\n")
        t.append("jobs ", style="dim")
        t.append(f"{f.n_finished}/{f.n_jobs}", style="bold")
        t.append(" done  ", style="dim")
        t.append(f"{f.n_decisions}", style="bold")
        t.append(" decisions\n", style="dim")
        t.append("JCT avg ", style="dim")
        t.append(fmt_s(f.avg_jct_s), style="bold")
        t.append("  P95 ", style="dim")
        t.append(fmt_s(f.p95_jct_s), style="bold")
        t.append("\n")
        pct = 100.0 * f.busy_gpus / max(self.n_gpus, 1)
        t.append("GPUs ", style="dim")
        t.append(f"{f.busy_gpus}/{self.n_gpus} ({pct:.0f}%)", style="bold")
        t.append("  queue ", style="dim")
        t.append(f"{f.n_queued}", style="bold")
        t.append("\n")
        width = max(self.size.width - 6, 1)
        util = resample(f.hist_t, f.hist_busy, width)
        que = resample(f.hist_t, f.hist_queue, width)
        t.append("util  ", style="dim")
        t.append(sparkline(util, float(self.n_gpus)), style="#4e9a06")
        t.append("\n")
        t.append("queue ", style="dim")
        top = max(que) if que else 1.0
        t.append(sparkline(que, top), style="#c4a000")
        status = f.extra.get("status")
        if status:
            t.append("\n")
            t.append(status, style="italic")
        return t
