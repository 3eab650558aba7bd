"""Job lists: the queue (in the policy's order) or the running jobs, one row per job.

A Line-API :class:`~textual.scroll_view.ScrollView`: the header row stays put and
:meth:`render_line` formats only the visible rows from the frame's arrays, so a queue of
thousands of jobs costs no more per frame than a screenful (a DataTable rebuilt each
frame manages ~4 frames/s at 1,000 rows on this machine).

Columns fit the width: in a narrow list the job ids are shortened (down to 5 characters)
and the running list's progress bar shrinks or goes (the percentage stays) before any
other column is cut.

Jobs the policy rejected are listed after the queued jobs (newest first, ``rej`` in the
first column). In a run of jobs placed by roles the GPU column gives each queued job's
worker limit (``maxW``, eq. 4 of the PD-ORS paper) and each running job's workers and
PSs, and the machines column the machines it uses.
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

from gpusched.state import LOADING, REJECTED, RUNNING, SAVING, STATUS_NAMES
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
#: The running list of a run of jobs placed by roles has a PS column too.
_PS_W = 4
C_REJECTED = "#cc0000"


class QueueView(CachedStyles, ScrollView, can_focus=True):
    """Queued (and rejected) jobs (``kind="queued"``) or running jobs (``kind="running"``).

    Parameters
    ----------
    kind
        ``"queued"`` or ``"running"``.
    jobs, cluster
        The run's job table and cluster spec.
    roles
        The run places jobs by roles: show workers, PSs and machines instead of GPUs.
    max_workers
        With ``roles``: each job's worker limit, shown for queued jobs (else their GPUs).
    """

    DEFAULT_CSS = """
    QueueView { background: $surface; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False, repaint=False)

    def __init__(
        self,
        kind: str,
        jobs: Any,
        cluster: Any,
        *,
        roles: bool = False,
        max_workers: np.ndarray | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kind not in ("queued", "running"):
            raise ValueError(f"unknown job list kind {kind!r}")
        self.kind = kind
        self.roles = roles
        self.job_id = np.asarray(jobs.job_id)
        self.job_n_gpus = np.asarray(jobs.n_gpus)
        #: the number in the queue's size column: GPUs, or the worker limit of role jobs
        self.job_size = (
            np.asarray(max_workers) if roles and max_workers is not None else self.job_n_gpus
        )
        self.size_name = "maxW" if roles and max_workers is not None else "GPUs"
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
        return int(f.queue.size + f.rejected.size if self.kind == "queued" else f.running.size)

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
        room = width - _RUN_FIXED - (_PS_W if self.roles else 0)
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
                rej = f" · {frame.n_rejected} rejected" if frame.n_rejected else ""
                self.border_title = f"Queue · {frame.n_queued} jobs{extra}{rej}"
            elif frame.roles is not None:
                w, p = int(frame.roles.run_workers.sum()), int(frame.roles.run_ps.sum())
                self.border_title = f"Running · {frame.running.size} jobs · {w} workers · {p} PSs"
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
            return f"{'#':>4}  {'job':<{self.id_w}} {self.size_name:>4} {'waited':>7}{key}"
        prog = f"{'progress':<{self.bar_w + 5}}" if self.bar_w else "done"
        if self.roles:
            return f" {'job':<{self.id_w}} {'wkrs':>4} {'PSs':>3} {'machines':<9} {prog} state"
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
            if f.roles is not None:  # the machines holding the job's workers and PSs
                a = f.roles.alloc_job
                lo, hi = np.searchsorted(a, j, "left"), np.searchsorted(a, j, "right")
                s = _places(f.roles.alloc_machine[lo:hi], "m")
            else:
                s = _places(np.unique(self.gpu_server[self._gpus_of(j, f)]), "s")
            self._servers[j] = s
        return s

    def _row(self, i: int, f: Frame) -> list[Segment]:
        w = self.id_w
        if self.kind == "queued":
            if i >= f.queue.size:
                return self._rejected_row(int(f.rejected[i - f.queue.size]))
            j = int(f.queue[i])
            segs = [
                Segment(f"{i + 1:>4} ", self._style("dim")),
                Segment("■", self._style(job_color(j))),
                Segment(
                    f"{str(self.job_id[j])[:w]:<{w}} {int(self.job_size[j]):>4} "
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
        shared = f.roles is None and self._is_shared(j, f)
        state = STATUS_NAMES[status] + ("+shared" if shared else "")
        if f.roles is not None:
            size = f"{int(f.roles.run_workers[i]):>4} {int(f.roles.run_ps[i]):>3}"
        else:
            size = f"{int(self.job_n_gpus[j]):>4}"
        segs = [
            Segment("■", self._style(job_color(j))),
            Segment(
                f"{str(self.job_id[j])[:w]:<{w}} {size} {self._servers_of(j, f):<9} ",
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

    def _rejected_row(self, j: int) -> list[Segment]:
        """A rejected job: ``rej``, its id and size, no waiting time (it left the queue)."""
        w = self.id_w
        return [
            Segment(f"{'rej':>4} ", self._style(C_REJECTED)),
            Segment("■", self._style(job_color(j))),
            Segment(
                f"{str(self.job_id[j])[:w]:<{w}} {int(self.job_size[j]):>4} {'-':>7}",
                self._style("dim"),
            ),
            Segment(f" {STATUS_NAMES[REJECTED]}", self._style(C_REJECTED)),
        ]

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


def _places(where: np.ndarray, prefix: str) -> str:
    """Servers or machines (sorted) in short: ``s3``, ``s3,s7``, ``s3+4`` (five servers)."""
    if where.size == 0:
        return "-"
    if where.size == 1:
        return f"{prefix}{where[0]}"
    if where.size == 2:
        return f"{prefix}{where[0]},{prefix}{where[1]}"
    return f"{prefix}{where[0]}+{where.size - 1}"
