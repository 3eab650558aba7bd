"""The worker view: edge servers' typed workers and the cloud, for jobs made of chunks.

Shown instead of the GPU cluster view when the run's jobs are made of tasks (data chunks
on typed workers, :mod:`gpusched.core.tasks`). The first rows stay put: the cloud tier (chunks
on its workers, how many of them still ship their data, the jobs they belong to, chunks
placed there and waiting, jobs wholly in the cloud) and the edge tier (busy workers,
chunks waiting on a worker, chunks not placed yet). Below them, at the most detailed
level that fits in :attr:`WorkerView.max_rows` (``z`` cycles through the levels by hand):

* ``worker``: one edge server per row, its workers grouped by type (the type's name, then
  a cell per worker: a glyph for the chunk's state in its job's colour, and the number
  of chunks placed on that worker and waiting, blank for none);
* ``packed``: the servers packed into rows, the same cells without the type names (a
  space between types), or one glyph per worker when two don't fit;
* ``type``: one row per worker type over the edge servers, a bar of its busy workers,
  ``busy/workers``, the chunks waiting on those workers (``q``) and the waiting chunks
  of that type not placed yet (``w``).

Like the cluster view it is a Line-API :class:`~textual.scroll_view.ScrollView` that
draws only the visible rows, from the frame's copies (:class:`~gpusched.tui.session.TaskFrame`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.geometry import Size
from textual.strip import Strip

from gpusched.core.state import LOADING, RUNNING, SAVING
from gpusched.tui.messages import ServerSelected
from gpusched.tui.session import Frame, TaskFrame, TaskInfo
from gpusched.tui.widgets.cluster_view import (
    C_IDLE,
    C_RUN,
    GLYPH,
    IDLE_GLYPH,
    ItemGrid,
    job_color,
)

LEVELS = ("auto", "worker", "packed", "type")
#: Colour of the count of chunks waiting on a worker.
C_QUEUED = "#729fcf"
#: Colour of the cloud tier's row.
C_CLOUD = "#06989a"
#: Rows of the tiers' summary above the servers.
HEAD_ROWS = 2
#: Chunks named in the selected server's line.
NAMED = 4


def _fit(head: str, parts: list[tuple[str, str]], width: int) -> str:
    """``head`` and the (long, short) ``parts`` joined by `` · ``: the long forms if they
    fit in ``width`` (0: any), else the short ones, dropping the last parts until they do."""
    for k in (0, 1):
        text = head + " · ".join(p[k] for p in parts)
        if not width or len(text) <= width:
            return text
    n = len(parts)
    while n > 1 and len(head + " · ".join(p[1] for p in parts[:n])) > width:
        n -= 1
    return head + " · ".join(p[1] for p in parts[:n])


def _natural(name: str) -> tuple[Any, ...]:
    """A sort key that puts ``t2`` before ``t10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def queued_mark(n: int) -> str:
    """The count of chunks waiting on a worker in one cell: blank, ``1``-``9`` or ``+``."""
    return " " if n <= 0 else (str(n) if n <= 9 else "+")


class WorkerView(ItemGrid):
    """Edge servers' workers by type and the cloud tier, with a server (or type) cursor.

    Parameters
    ----------
    info
        The run's static facts (:func:`gpusched.tui.session.task_info`).
    """

    LEVELS = LEVELS

    DEFAULT_CSS = """
    WorkerView { background: $surface; }
    WorkerView:focus { background-tint: $foreground 4%; }
    """

    def __init__(self, info: TaskInfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.info = info
        self.types = info.types
        self.n_types = len(info.types)
        self.type_w = max((len(t) for t in info.types), default=1)
        #: the edge servers drawn (those with workers), ascending
        self.servers = np.unique(info.edge_server).astype(np.int64)
        self.n_servers = int(self.servers.size)
        self.label_w = len(f"s{int(self.servers.max()) if self.n_servers else 0}") + 1
        #: per server drawn: (type, edge workers of that type on it) in type order
        order = np.lexsort((np.arange(info.n_edge), info.edge_type, info.edge_server))
        self.blocks: list[list[tuple[int, np.ndarray]]] = []
        for s in self.servers.tolist():
            ws = order[info.edge_server[order] == s]
            kinds = info.edge_type[ws]
            self.blocks.append([(int(k), ws[kinds == k]) for k in np.unique(kinds).tolist()])
        #: the worker types in the order the type level lists them (t2 before t10)
        self.type_order = sorted(range(self.n_types), key=lambda k: _natural(info.types[k]))
        self.type_workers = np.bincount(info.edge_type, minlength=self.n_types).astype(np.int64)
        self.shown_level = "worker"
        self.head_rows = HEAD_ROWS
        self._lines: list[list[tuple[int, int]]] = []  # per row: (item, x) items
        self._cw = 2
        self._pos: dict[int, tuple[int, int]] = {}  # item -> (row, index in row)
        self._tf: TaskFrame | None = None
        self._init_styles()

    # --- layout ----------------------------------------------------------------------------

    def _row_width(self, i: int, cw: int, *, names: bool) -> int:
        """Cells of server ``i``'s block (without the row label)."""
        blocks = self.blocks[i]
        cells = sum(int(ws.size) for _k, ws in blocks) * cw
        return cells + len(blocks) * ((self.type_w + 2) if names else 1)

    def _pack(self, width: int, cw: int) -> list[list[tuple[int, int]]]:
        """Servers packed into rows of ``width``: per row, (server index, x) of each block."""
        lines: list[list[tuple[int, int]]] = []
        cur: list[tuple[int, int]] = []
        x = self.label_w
        for i in range(self.n_servers):
            w = 1 + self._row_width(i, cw, names=False)
            if cur and x + w > width:
                lines.append(cur)
                cur, x = [], self.label_w
            cur.append((i, x))
            x += w
        if cur:
            lines.append(cur)
        return lines

    def _relayout(self) -> None:
        width = max(self.size.width, 10)
        height = max(self.max_rows if self.max_rows > 0 else self.size.height, 1)
        body = max(height - self.head_rows, 1)
        want = self.level
        chosen: tuple[str, list[list[tuple[int, int]]], int] | None = None
        if want in ("auto", "worker"):
            widest = max(
                (self._row_width(i, 2, names=True) for i in range(self.n_servers)), default=0
            )
            fits = self.label_w + widest <= width
            if (self.n_servers <= body and fits) or want == "worker":
                chosen = ("worker", [[(i, 0)] for i in range(self.n_servers)], 2)
        if chosen is None and want in ("auto", "packed"):
            for cw in (2, 1):
                lines = self._pack(width, cw)
                if len(lines) <= body or (want == "packed" and cw == 1):
                    chosen = ("packed", lines, cw)
                    break
        if chosen is None:
            chosen = ("type", [[(k, 0)] for k in self.type_order], 1)
        self.shown_level, self._lines, self._cw = chosen
        self._pos = {}
        for r, line in enumerate(self._lines):
            for i, (item, _x) in enumerate(line):
                self._pos[item] = (r, i)
        self.virtual_size = Size(width, len(self._lines) + self.head_rows)
        if self.max_rows > 0:
            rows = min(len(self._lines) + self.head_rows, max(self.max_rows, self.head_rows + 1))
            tall = rows + self.styles.gutter.height
            if self.styles.height is None or self.styles.height.value != tall:
                self.styles.height = tall
        n_items = self._item_count()
        if n_items:
            self.cursor = min(self.cursor, n_items - 1)
        self._reset_styles()
        self.refresh()

    # --- data -----------------------------------------------------------------------------

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None or frame.tasks is None:
            return
        self._tf = frame.tasks
        self.refresh()

    def type_counts(self, tf: TaskFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per worker type over the edge: busy workers, and chunks waiting on its workers."""
        k = self.info.edge_type
        busy = np.bincount(k, weights=tf.worker_chunk >= 0, minlength=self.n_types)
        queued = np.bincount(k, weights=tf.worker_queued, minlength=self.n_types)
        return busy.astype(np.int64), queued.astype(np.int64)

    # --- styles ---------------------------------------------------------------------------

    def _style(self, key: Any) -> Style:
        st = self._styles.get(key)
        if st is None:
            base = self.base_style
            kind = key[0]
            if kind == "job":
                st = base + Style(color=job_color(key[1]))
            elif kind == "fg":
                st = base + Style(color=key[1], bold=len(key) > 2)
            elif kind == "cursor":
                st = base + Style(color="#ffffff", bold=True, reverse=True)
            elif kind == "plain":
                st = base
            else:
                st = base + Style(dim=True)
            self._styles[key] = st
        return st

    # --- drawing --------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width <= 0:
            return Strip.blank(width, self.base_style)
        if y < self.head_rows:
            segs = self._head_segments(y, width)
        else:
            row = y - self.head_rows + self.scroll_offset.y
            if row >= len(self._lines):
                return Strip.blank(width, self.base_style)
            line = self._lines[row]
            if self.shown_level == "type":
                segs = self._type_segments(line[0][0], width)
            else:
                segs = self._server_segments(line)
        return Strip(segs).adjust_cell_length(width, self.base_style)

    def tier_lines(self, width: int = 0) -> tuple[str, str]:
        """The cloud's and the edge's summary rows as text, fitted to ``width`` (0: any):
        the long forms, else the short ones, then the last parts dropped."""
        tf = self._tf
        n_edge = self.info.n_edge
        if tf is None:
            return "cloud  -", f"edge   0/{n_edge} workers busy"
        busy = tf.busy_edge
        waiting = int(tf.worker_queued.sum())
        unplaced = int(tf.type_unplaced.sum())
        pct = 100.0 * busy / max(n_edge, 1)
        cloud = [
            (
                f"{tf.cloud_holding} chunks on workers ({tf.cloud_loading} shipping data)",
                f"{tf.cloud_holding} on wkrs ({tf.cloud_loading} ship)",
            ),
            (f"{tf.cloud_jobs} jobs", f"{tf.cloud_jobs} jobs"),
            (f"{tf.cloud_queued} chunks waiting", f"{tf.cloud_queued} wait"),
            (f"{tf.cloud_only} jobs wholly in the cloud", f"{tf.cloud_only} cloud-only"),
        ]
        edge = [
            (f"{busy}/{n_edge} workers busy ({pct:.0f}%)", f"{busy}/{n_edge} busy"),
            (f"{waiting} chunks waiting on them", f"{waiting} wait"),
            (f"{unplaced} not placed", f"{unplaced} unplaced"),
        ]
        return _fit("cloud  ", cloud, width), _fit("edge   ", edge, width)

    def _head_segments(self, y: int, width: int) -> list[Segment]:
        text = self.tier_lines(width)[y]
        name, rest = text[:7], text[7:]
        colour = C_CLOUD if y == 0 else C_RUN
        return [
            Segment(name, self._style(("fg", colour, "b"))),
            Segment(rest, self._style(("plain",))),
        ]

    def _cells(self, ws: np.ndarray, cw: int, emit: Any) -> None:
        """The cells of edge workers ``ws`` (glyph, then the waiting count if ``cw`` is 2)."""
        tf = self._tf
        parent = self.info.parent
        for w in ws.tolist():
            if tf is None or tf.worker_chunk[w] < 0:
                emit(IDLE_GLYPH, ("fg", C_IDLE))
            else:
                j = int(parent[tf.worker_chunk[w]])
                emit(GLYPH.get(int(tf.worker_status[w]), "█"), ("job", j))
            if cw > 1:
                n = 0 if tf is None else int(tf.worker_queued[w])
                emit(queued_mark(n), ("fg", C_QUEUED, "b"))

    def _server_segments(self, line: list[tuple[int, int]]) -> list[Segment]:
        out: list[Segment] = []
        run_text: list[str] = []
        run_key: Any = None

        def emit(text: str, key: Any) -> None:
            nonlocal run_key
            if key != run_key and run_text:
                out.append(Segment("".join(run_text), self._style(run_key)))
                run_text.clear()
            run_key = key
            run_text.append(text)

        sel = self.cursor
        first = line[0][0]
        rows = self.shown_level == "worker"
        label_key = ("cursor",) if rows and first == sel else ("dim",)
        emit(f"s{int(self.servers[first])}".ljust(self.label_w), label_key)
        for i, _x in line:
            if not rows:
                emit("▸" if i == sel else " ", ("fg", "#ffffff", "b") if i == sel else ("dim",))
            for k, (kind, ws) in enumerate(self.blocks[i]):
                if rows:
                    emit(f" {self.types[kind]:<{self.type_w}} ", ("dim",))
                elif k:
                    emit(" ", ("dim",))
                self._cells(ws, self._cw, emit)
        if run_text:
            out.append(Segment("".join(run_text), self._style(run_key)))
        return out

    def _type_segments(self, k: int, width: int) -> list[Segment]:
        tf = self._tf
        total = int(self.type_workers[k])
        sel = k == self.cursor
        out = [
            Segment(
                self.types[k][: self.type_w].ljust(self.type_w + 1),
                self._style(("cursor",) if sel else ("dim",)),
            )
        ]
        counts = {RUNNING: 0, LOADING: 0, SAVING: 0}
        busy = queued = unplaced = 0
        if tf is not None:
            mine = self.info.edge_type == k
            st = tf.worker_status[mine]
            for code in counts:
                counts[code] = int((st == code).sum())
            busy = int((tf.worker_chunk[mine] >= 0).sum())
            queued = int(tf.worker_queued[mine].sum())
            unplaced = int(tf.type_unplaced[k])
        tail = f" {busy}/{total} q{queued} w{unplaced}"
        bar_w = max(width - self.type_w - 1 - len(tail), 4)
        out.extend(self._phase_bar(counts, total, bar_w))
        out.append(Segment(tail, self._style(("plain",))))
        return out

    # --- legend and selection ---------------------------------------------------------------

    def _legend(self, *, short: bool) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        gap = " " if short else "  "
        if self.shown_level == "type":
            t.append("█", style=C_RUN)
            t.append(" busy" + gap)
            t.append("busy/workers per type, " if not short else "busy/wkrs ", style="dim")
            t.append("q", style=f"bold {C_QUEUED}")
            t.append(" waiting on them " if not short else " on them ", style="dim")
            t.append("w", style="bold")
            t.append(" not placed" if not short else " unplaced", style="dim")
            return t
        names = ("run", "ship", "save") if short else ("running", "shipping data", "saving")
        for glyph, name in zip(("█", "▒", "░"), names, strict=True):
            t.append(glyph, style=C_RUN)
            t.append(f" {name}{gap}")
        t.append(IDLE_GLYPH, style=C_IDLE)
        t.append(f" idle{gap}")
        if self._cw > 1:
            t.append("2", style=f"bold {C_QUEUED}")
            t.append(" waiting" if short else " chunks waiting on it", style="dim")
            t.append(gap)
        t.append("colour=job" if short else "colour = job", style="dim")
        return t

    def selected_server(self) -> int | None:
        """Edge server under the cursor (None at type level)."""
        if self.shown_level == "type" or not self.n_servers:
            return None
        return int(self.servers[min(self.cursor, self.n_servers - 1)])

    def describe(self, frame: Frame | None, job_id: np.ndarray, job_n_gpus: Any = None) -> Text:
        """The selected server's workers by type and the chunks on them (or a type's totals).

        ``job_id`` names the engine's rows: the chunks. Two lines, each cut to the width.
        """
        t = Text(no_wrap=True, overflow="ellipsis")
        tf = None if frame is None else frame.tasks
        info = self.info
        if self.shown_level == "type":
            k = min(self.cursor, max(self.n_types - 1, 0))
            if not self.n_types:
                return t
            mine = info.edge_type == k
            t.append(f"worker type {self.types[k]}: ", style="bold")
            t.append(
                f"{int(mine.sum())} workers on {np.unique(info.edge_server[mine]).size} servers"
            )
            if tf is not None:
                n_busy, n_queued = self.type_counts(tf)
                t.append(
                    f", {n_busy[k]} busy, {n_queued[k]} chunks waiting on them, "
                    f"{int(tf.type_unplaced[k])} not placed"
                )
            return t
        s = self.selected_server()
        if s is None:
            return t
        i = int(np.searchsorted(self.servers, s))
        t.append(f"server s{s}", style="bold")
        ps = "" if tf is None else f"{tf.ps_used[s]:g}/"
        t.append(f" · delay {info.server_delay[s]:g} s · PS {ps}{info.ps_slots[s]:g} · ")
        # per worker type: busy/workers, and the chunks placed on them, waiting
        t.append("busy", style="dim")
        held: list[int] = []
        for kind, ws in self.blocks[i]:
            busy = 0 if tf is None else int((tf.worker_chunk[ws] >= 0).sum())
            waiting = 0 if tf is None else int(tf.worker_queued[ws].sum())
            t.append(f"  {self.types[kind]} ", style="dim")
            t.append(f"{busy}/{ws.size}")
            if waiting:
                t.append(f" +{waiting} waiting", style=C_QUEUED)
            if tf is not None:
                held += [int(c) for c in tf.worker_chunk[ws].tolist() if c >= 0]
        t.append("\n")
        if not held:
            t.append("no chunk on it", style="dim")
            return t
        t.append(f"{len(held)} chunk{'s' if len(held) > 1 else ''}: ", style="dim")
        for n, c in enumerate(held[:NAMED]):
            if n:
                t.append(" ")
            t.append("■", style=job_color(int(info.parent[c])))
            t.append(f"{job_id[c]}", style="bold")
        if len(held) > NAMED:
            t.append(f" +{len(held) - NAMED} more", style="dim")
        return t

    def _item_count(self) -> int:
        return self.n_types if self.shown_level == "type" else self.n_servers

    def watch_cursor(self, cursor: int) -> None:
        self.refresh()
        pos = self._pos.get(cursor)
        if pos is not None:
            top = self.scroll_offset.y
            body = max(self.size.height - self.head_rows, 1)
            if pos[0] < top:
                self.scroll_to(y=pos[0], animate=False)
            elif pos[0] >= top + body:
                self.scroll_to(y=pos[0] - body + 1, animate=False)
        item = cursor if self.shown_level == "type" else self.selected_server() or 0
        self.post_message(ServerSelected(item, self.shown_level))

    def action_move(self, delta: int) -> None:
        if self.shown_level != "type":
            super().action_move(delta)
        elif self.n_types:  # in the order the rows list the types
            at = self.type_order.index(min(self.cursor, self.n_types - 1))
            self.cursor = self.type_order[(at + delta) % self.n_types]

    def action_move_line(self, delta: int) -> None:
        if not self._item_count():
            return
        r, i = self._pos.get(self.cursor, (0, 0))
        line = self._lines[min(max(r + delta, 0), len(self._lines) - 1)]
        self.cursor = line[min(i, len(line) - 1)][0]

    def on_click(self, event: Click) -> None:
        row = event.y - self.head_rows + self.scroll_offset.y
        if event.y < self.head_rows or not 0 <= row < len(self._lines):
            return
        line = self._lines[row]
        hit = line[0][0]
        for item, x in line:
            if event.x >= x:
                hit = item
        self.cursor = hit
