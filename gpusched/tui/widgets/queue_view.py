"""Job lists: the queue (in the policy's order) or the running jobs, one row per job.

A Line-API :class:`~textual.scroll_view.ScrollView`: the header row stays put and
:meth:`render_line` formats only the visible rows from the frame's arrays, so a queue of
thousands of jobs costs no more per frame than a screenful (a DataTable rebuilt each
frame manages ~4 frames/s at 1,000 rows on this machine).

Columns fit the width: in a narrow list the job ids are shortened (down to 5 characters)
and the running list's progress bar shrinks or goes (the percentage stays) before any
other column is cut.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gpusched.state import LOADING, RUNNING, SAVING, STATUS_NAMES
from gpusched.tui.session import Frame, fmt_s
from gpusched.tui.widgets.cluster_view import C_LOAD, C_RUN, C_SAVE, C_SHARED, job_color
from gpusched.tui.widgets.styled import CachedStyles

_STATE_COLOR = {RUNNING: C_RUN, LOADING: C_LOAD, SAVING: C_SAVE}
#: Shortest job-id column before other columns give way.
MIN_ID_W = 5
#: Widest progress bar, and the narrowest one worth drawing.
BAR_W, MIN_BAR_W = 10, 4
#: Columns other than the id and the bar: "#" (queue), GPUs, waited, key; and for the
#: running list: colour mark, GPUs, servers, percentage, state ("running").
_QUEUE_FIXED = 4 + 1 + 1 + 1 + 4 + 1 + 7
_KEY_W = 8
_RUN_FIXED = 1 + 1 + 4 + 1 + 9 + 1 + 5 + 7


class QueueView(CachedStyles, ScrollView, can_focus=True):
    """Queued jobs (``kind="queued"``) or jobs holding GPUs (``kind="running"``)."""

    DEFAULT_CSS = """
    QueueView { background: $surface; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False, repaint=False)

    def __init__(self, kind: str, jobs: Any, cluster: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kind not in ("queued", "running"):
            raise ValueError(f"unknown job list kind {kind!r}")
        self.kind = kind
        self.job_id = np.asarray(jobs.job_id)
        self.job_n_gpus = np.asarray(jobs.n_gpus)
        longest = max((len(str(x)) for x in self.job_id[:100000]), default=3)
        #: the widest id column wanted; :meth:`_widths` fits it to the view
        self.id_w_max = min(max(longest, 3), 14)
        self.id_w = self.id_w_max
        self.bar_w = BAR_W
        self.gpu_server = np.asarray(cluster.gpu_server())
        self._servers: dict[int, str] = {}
        self._index: tuple[Frame, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._init_styles()

    @property
    def n_rows(self) -> int:
        """Rows in the list (without the header)."""
        f = self.frame
        if f is None:
            return 0
        return int(f.queue.size if self.kind == "queued" else f.running.size)

    def on_resize(self) -> None:
        self.watch_frame(self.frame)

    def _widths(self) -> None:
        """Fit the id column (and the running list's bar) to the width of the view."""
        width = self.size.width
        if self.kind == "queued":
            key = _KEY_W if self.frame is not None and self.frame.key_name else 0
            room = width - _QUEUE_FIXED - key
            self.id_w = min(self.id_w_max, max(room, MIN_ID_W))
            return
        room = width - _RUN_FIXED
        self.id_w = min(self.id_w_max, max(room - MIN_BAR_W - 1, MIN_ID_W))
        bar = room - self.id_w - 1
        self.bar_w = min(bar, BAR_W) if bar >= MIN_BAR_W else 0

    def watch_frame(self, frame: Frame | None) -> None:
        self._servers.clear()
        self._widths()
        # the virtual height grows in steps of 64 rows: a new size means a layout pass,
        # which would otherwise cost one per frame while the queue changes
        rows = self.n_rows + 1
        if rows > self.size.height:
            rows = -(-rows // 64) * 64
        size = Size(self.size.width, rows)
        if size != self.virtual_size:
            self.virtual_size = size
        if frame is not None:
            if self.kind == "queued":
                more = frame.n_queued - frame.queue.size
                extra = f" (+{more} not shown)" if more > 0 else ""
                self.border_title = f"Queue · {frame.n_queued} jobs{extra}"
            else:
                self.border_title = f"Running · {frame.running.size} jobs · {frame.busy_gpus} GPUs"
        self.refresh()

    def _style(self, key: Any) -> Style:
        st = self._styles.get(key)
        if st is None:
            base = self.base_style
            if key == "head":
                st = base + Style(bold=True, underline=True)
            elif key == "dim":
                st = base + Style(dim=True)
            elif key == "plain":
                st = base
            else:
                st = base + Style(color=key)
            self._styles[key] = st
        return st

    # --- rows ---------------------------------------------------------------------------

    def _header(self) -> str:
        f = self.frame
        if self.kind == "queued":
            key = f" {f.key_name:>7}" if f is not None and f.key_name else ""
            return f"{'#':>4}  {'job':<{self.id_w}} {'GPUs':>4} {'waited':>7}{key}"
        prog = f"{'progress':<{self.bar_w + 5}}" if self.bar_w else "done"
        return f" {'job':<{self.id_w}} {'GPUs':>4} {'servers':<9} {prog} state"

    def _gpus_of(self, j: int, f: Frame) -> np.ndarray:
        """GPUs job ``j`` holds in frame ``f`` (via a per-frame sorted index)."""
        if self._index is None or self._index[0] is not f:
            flat = f.gpu_job.ravel()
            gpu = np.repeat(np.arange(f.gpu_job.shape[0]), f.gpu_job.shape[1])
            order = np.argsort(flat, kind="stable")
            n_on = (f.gpu_job >= 0).sum(axis=1)
            self._index = (f, flat[order], gpu[order], n_on)
        _, jobs, gpus, _n_on = self._index
        lo, hi = np.searchsorted(jobs, j, "left"), np.searchsorted(jobs, j, "right")
        return gpus[lo:hi]

    def _is_shared(self, j: int, f: Frame) -> bool:
        gpus = self._gpus_of(j, f)
        assert self._index is not None
        return bool((self._index[3][gpus] > 1).any())

    def _servers_of(self, j: int, f: Frame) -> str:
        s = self._servers.get(j)
        if s is None:
            srv = np.unique(self.gpu_server[self._gpus_of(j, f)])
            if srv.size == 0:
                s = "-"
            elif srv.size == 1:
                s = f"s{srv[0]}"
            elif srv.size == 2:
                s = f"s{srv[0]},s{srv[1]}"
            else:
                s = f"s{srv[0]}+{srv.size - 1}"
            self._servers[j] = s
        return s

    def _row(self, i: int, f: Frame) -> list[Segment]:
        w = self.id_w
        if self.kind == "queued":
            j = int(f.queue[i])
            segs = [
                Segment(f"{i + 1:>4} ", self._style("dim")),
                Segment("■", self._style(job_color(j))),
                Segment(
                    f"{str(self.job_id[j])[:w]:<{w}} {int(self.job_n_gpus[j]):>4} "
                    f"{fmt_s(float(f.queue_waited[i])):>7}",
                    self._style("plain"),
                ),
            ]
            if f.queue_key is not None:
                k = float(f.queue_key[i])
                text = f"{k:>8.0f}" if f.key_name == "level" else f" {fmt_s(k):>7}"
                segs.append(Segment(text, self._style("dim")))
            return segs
        j = int(f.running[i])
        status = int(f.run_status[i])
        p = float(f.run_progress[i])
        shared = self._is_shared(j, f)
        state = STATUS_NAMES[status] + ("+shared" if shared else "")
        segs = [
            Segment("■", self._style(job_color(j))),
            Segment(
                f"{str(self.job_id[j])[:w]:<{w}} {int(self.job_n_gpus[j]):>4} "
                f"{self._servers_of(j, f):<9} ",
                self._style("plain"),
            ),
        ]
        if self.bar_w:
            bw = self.bar_w
            full = int(p * bw)
            bar = "█" * full + ("▌" if p * bw - full >= 0.5 else "")
            segs.append(
                Segment(bar[:bw].ljust(bw, "·"), self._style(_STATE_COLOR.get(status, C_RUN)))
            )
            segs.append(Segment(f" {p * 100:3.0f}% ", self._style("plain")))
        else:
            segs.append(Segment(f"{p * 100:3.0f}% ", self._style("plain")))
        segs.append(
            Segment(state, self._style(C_SHARED if shared else _STATE_COLOR.get(status, C_RUN)))
        )
        return segs

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return Strip([Segment(self._header(), self._style("head"))]).adjust_cell_length(
                width, self.base_style
            )
        i = y - 1 + self.scroll_offset.y
        f = self.frame
        if f is None or i >= self.n_rows:
            return Strip.blank(width, self.base_style)
        return Strip(self._row(i, f)).adjust_cell_length(width, self.base_style)
