"""The metrics panel: clock, progress, JCT so far, utilisation / queue sparklines, and the
policy's status line (wrapped: the panel grows to show all of it)."""

from __future__ import annotations

import math
import textwrap
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


#: Rows of the panel above the policy's status line.
BASE_ROWS = 6
#: At most this many rows of status line (a longer one ends in an ellipsis).
MAX_STATUS_ROWS = 4


class MetricsPanel(Widget):
    """Numbers of the run so far, drawn from the latest frame.

    Parameters
    ----------
    n_gpus
        GPUs of the cluster.
    has_status
        The policy has a ``status_line``: keep a row for it from the start.
    """

    DEFAULT_CSS = """
    MetricsPanel { height: 8; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False)

    def __init__(self, n_gpus: int, *, has_status: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_gpus = n_gpus
        #: rows kept for the status line: they only grow, so the layout does not jump
        self.status_rows = 1 if has_status else 0

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def watch_frame(self, frame: Frame | None) -> None:
        self._fit()

    def _status_lines(self) -> list[str]:
        f = self.frame
        status = f.extra.get("status") if f is not None else None
        if not status:
            return []
        width = max(self.size.width, 10)
        lines = textwrap.wrap(str(status), width) or [""]
        if len(lines) > MAX_STATUS_ROWS:
            lines = lines[:MAX_STATUS_ROWS]
            lines[-1] = lines[-1][: width - 1] + "…"
        return lines

    def _fit(self) -> None:
        """Make the panel tall enough for its rows and every line of the status."""
        self.status_rows = max(self.status_rows, len(self._status_lines()))
        height = BASE_ROWS + self.status_rows + self.styles.gutter.height
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height

    def render(self) -> Text:
        f = self.frame
        t = Text(no_wrap=True, overflow="ellipsis")
        if f is None:
            t.append("starting…", style="dim")
            return t
        if f.finished:
            mode = ("■ stopped", "bold yellow") if f.stopped else ("■ done", "bold")
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
        done, dec = f"{f.n_finished}/{f.n_jobs}", f"{f.n_decisions}"
        short = len(f"jobs {done} done  {dec} decisions") > self.size.width
        t.append("jobs ", style="dim")
        t.append(done, style="bold")
        t.append("  " if short else " done  ", style="dim")
        t.append(dec, style="bold")
        t.append(" dec.\n" if short else " decisions\n", style="dim")
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
        for line in self._status_lines():
            t.append("\n")
            t.append(line, style="italic")
        return t
