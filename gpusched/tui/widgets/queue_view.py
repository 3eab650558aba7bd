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

In a run of jobs made of chunks on typed workers both lists count *jobs* of chunks: the
queue lists the jobs with a waiting chunk (in the policy's order of their first waiting
chunk), the running list the jobs with a chunk on a worker; each row gives the job's
chunks, how many are done, on workers (``run``) and waiting (``wait``, of which
``placed`` on a worker already), and in the running list where its chunks run (edge
servers, ``cloud``) and the job's progress (work done / work).
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

from gpusched.core.state import LOADING, REJECTED, RUNNING, SAVING, STATUS_NAMES
from gpusched.results.units import fmt_s
from gpusched.tui.session import Frame, TaskFrame, TaskInfo
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
#: Columns of a list of jobs made of chunks besides the id (and the running list's bar):
#: "#" (queue) or colour mark, chunks, done, run, wait, placed; and where, percentage.
_CHUNK_FIXED = 7 + 21
_PLACED_W = 7
_WHERE_W = 12
#: the id width kept before the placed or where column of jobs of chunks is shown
_ID_BEFORE_EXTRA = 10
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
    tasks
        The run's jobs are made of chunks: its static facts; the lists then show jobs of
        chunks from the frames' :class:`~gpusched.tui.session.TaskFrame`.
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
        tasks: TaskInfo | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tasks = tasks
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
        #: the jobs named in the lists: the trace's jobs (of chunks, when jobs have tasks)
        self.list_id = self.job_id if tasks is None else np.asarray(tasks.job_id)
        self.n_chunks = None if tasks is None else np.diff(tasks.first)
        longest = max((len(str(x)) for x in self.list_id[:100000]), default=3)
        #: the widest id column wanted; :meth:`_widths` fits it to the view
        self.id_w_max = min(max(longest, 3), 14)
        self.id_w = self.id_w_max
        self.bar_w = BAR_W
        #: jobs of chunks: the placed (queue) or where (running) column is shown
        self.extra = True
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
        if f.tasks is not None and self.tasks is not None:
            tf = f.tasks
            return int(tf.queue_jobs.size if self.kind == "queued" else tf.running_jobs.size)
        return int(f.queue.size + f.rejected.size if self.kind == "queued" else f.running.size)

    def on_resize(self) -> None:
        self.watch_frame(self.frame)

    def _widths(self) -> None:
        """Fit the id column (and the running list's bar) to the width of the view: the
        ids first, whole if they fit; the progress bar only in the room left (at 80
        columns every running id read ``bert-`` or ``ec-te``); an id still too long is
        cut from the left, keeping its distinctive end (:func:`fit_id`). A vertical
        scrollbar, drawn over the last columns, takes its width from the room."""
        width = self.size.width
        if self.n_rows + 1 > self.size.height:  # the list scrolls: a scrollbar is drawn
            width -= self.styles.scrollbar_size_vertical
        if self.tasks is not None:
            room = width - _CHUNK_FIXED
            extra = _PLACED_W if self.kind == "queued" else _WHERE_W + 1
            # the placed (queue) or where (running) column only if the ids keep room
            self.extra = room - extra >= min(self.id_w_max, _ID_BEFORE_EXTRA)
            room -= extra if self.extra else 0
            self.id_w = min(self.id_w_max, max(room, MIN_ID_W))
            if self.kind == "running":
                bar = room - self.id_w - 1
                self.bar_w = min(bar, BAR_W) if bar >= MIN_BAR_W else 0
            return
        if self.kind == "queued":
            key = _KEY_W if self.frame is not None and self.frame.key_name else 0
            room = width - _QUEUE_FIXED - key
            self.id_w = min(self.id_w_max, max(room, MIN_ID_W))
            return
        room = width - _RUN_FIXED - (_PS_W if self.roles else 0)
        self.id_w = min(self.id_w_max, max(room, MIN_ID_W))
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
        if frame is not None and frame.tasks is not None and self.tasks is not None:
            self.border_title = self._chunk_title(frame, frame.tasks)
        elif frame is not None:
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

    def _chunk_title(self, f: Frame, tf: TaskFrame) -> str:
        """The list's title in a run of jobs made of chunks: jobs and their chunks."""
        if self.kind == "queued":
            placed = int(tf.worker_queued.sum()) + tf.cloud_queued
            return (
                f"Queue · {_n(tf.queue_jobs.size, 'job')} · {_n(f.n_queued, 'chunk')} "
                f"waiting ({placed} placed)"
            )
        return (
            f"Running · {_n(tf.running_jobs.size, 'job')} · {_n(tf.busy_edge, 'chunk')} on "
            f"edge workers · {tf.cloud_holding} in the cloud"
        )

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
        if self.tasks is not None:
            counts = f"{'chunks':>6}{'done':>5}{'run':>5}{'wait':>5}"
            if self.kind == "queued":
                placed = f"{'placed':>7}" if self.extra else ""
                return f"{'#':>4}  {'job':<{self.id_w}} {counts}{placed}"
            prog = f"{'progress':<{self.bar_w + 5}}" if self.bar_w else "done"
            where = f" {'where':<{_WHERE_W - 1}}" if self.extra else ""
            return f" {'job':<{self.id_w}} {counts}{where} {prog}"
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

    def _where(self, j: int, tf: TaskFrame) -> str:
        """Where job ``j``'s chunks hold workers: edge servers, then ``cloud``."""
        s = self._servers.get(j)
        if s is None:
            info = self.tasks
            assert info is not None
            chunk = tf.worker_chunk
            busy = chunk >= 0
            mine = busy.copy()
            mine[busy] = info.parent[chunk[busy]] == j
            servers = np.unique(info.edge_server[mine])
            s = _places(servers, "s") if servers.size else ""
            if tf.job_cloud[j]:
                s = f"{s},cloud" if s else "cloud"
            self._servers[j] = s or "-"
            s = self._servers[j]
        return s

    def _chunk_row(self, i: int, f: Frame, tf: TaskFrame) -> list[Segment]:
        """A job of chunks: its chunks done, on workers and waiting (and where it runs)."""
        w = self.id_w
        assert self.n_chunks is not None
        if self.kind == "queued":
            j = int(tf.queue_jobs[i])
            head = [Segment(f"{i + 1:>4} ", self._style("dim"))]
        else:
            j = int(tf.running_jobs[i])
            head = []
        wait = int(tf.job_placed[j] + tf.job_unplaced[j])
        counts = (
            f"{int(self.n_chunks[j]):>6}{int(tf.job_done[j]):>5}{int(tf.job_holding[j]):>5}"
            f"{wait:>5}"
        )
        if self.kind == "queued" and self.extra:
            counts += f"{int(tf.job_placed[j]):>7}"
        segs = [
            *head,
            Segment("■", self._style(job_color(j))),
            Segment(f"{fit_id(self.list_id[j], w)} {counts}", self._style("plain")),
        ]
        if self.kind == "queued":
            return segs
        if self.extra:
            where = self._where(j, tf)[: _WHERE_W - 1]
            segs.append(Segment(f" {where:<{_WHERE_W - 1}} ", self._style("dim")))
        else:
            segs.append(Segment(" ", self._style("dim")))
        p = float(tf.job_progress[j])
        if self.bar_w:
            bw = self.bar_w
            full = int(p * bw)
            bar = "█" * full + ("▌" if p * bw - full >= 0.5 else "")
            segs.append(Segment(bar[:bw].ljust(bw, "·"), self._style(C_RUN)))
            segs.append(Segment(f" {p * 100:3.0f}%", self._style("plain")))
        else:
            segs.append(Segment(f"{p * 100:3.0f}%", self._style("plain")))
        return segs

    def _row(self, i: int, f: Frame) -> list[Segment]:
        if f.tasks is not None and self.tasks is not None:
            return self._chunk_row(i, f, f.tasks)
        w = self.id_w
        if self.kind == "queued":
            if i >= f.queue.size:
                return self._rejected_row(int(f.rejected[i - f.queue.size]))
            j = int(f.queue[i])
            segs = [
                Segment(f"{i + 1:>4} ", self._style("dim")),
                Segment("■", self._style(job_color(j))),
                Segment(
                    f"{fit_id(self.job_id[j], w)} {int(self.job_size[j]):>4} "
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
        if shared and self.size.width < _RUN_FIXED + self.id_w + len(state) - 7:
            state = "shared"  # the state column is narrow: what matters is the partner
        if f.roles is not None:
            size = f"{int(f.roles.run_workers[i]):>4} {int(f.roles.run_ps[i]):>3}"
        else:
            size = f"{int(self.job_n_gpus[j]):>4}"
        segs = [
            Segment("■", self._style(job_color(j))),
            Segment(
                f"{fit_id(self.job_id[j], w)} {size} {self._servers_of(j, f):<9} ",
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
                f"{fit_id(self.job_id[j], w)} {int(self.job_size[j]):>4} {'-':>7}",
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


def fit_id(job_id: object, width: int) -> str:
    """``job_id`` in a column ``width`` wide: padded, or cut from the left with ``…``
    (``…testbed-07``): generated ids share their beginning and differ at the end."""
    text = str(job_id)
    if len(text) <= width:
        return text.ljust(width)
    return "…" + text[len(text) - width + 1 :] if width > 1 else text[:width]


def _n(n: int, noun: str) -> str:
    """``1 job``, ``2 jobs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _places(where: np.ndarray, prefix: str) -> str:
    """Servers or machines (sorted) in short: ``s3``, ``s3,s7``, ``s3+4`` (five servers)."""
    if where.size == 0:
        return "-"
    if where.size == 1:
        return f"{prefix}{where[0]}"
    if where.size == 2:
        return f"{prefix}{where[0]},{prefix}{where[1]}"
    return f"{prefix}{where[0]}+{where.size - 1}"
