"""The cluster view: one cell per GPU grouped by server, or aggregated when cells don't fit.

Three levels of detail, chosen automatically from the size of the widget, or, when the
app sets :attr:`ClusterView.max_rows`, the most detailed level that fits in that many
rows, and then the widget takes only the rows it draws (``z`` cycles through the levels
by hand):

* ``gpu``: one cell per GPU, coloured by job, with a glyph per state (running, loading,
  saving, shared, idle); one server per row when the servers fit, else packed;
* ``server``: one cell per server, a bar glyph for its busy fraction, coloured by its
  busiest state;
* ``group``: one row per rack (or server group), a stacked bar of running / loading /
  saving / idle GPUs.

It is a Line-API :class:`~textual.scroll_view.ScrollView`: :meth:`render_line` draws only
the visible rows, straight from the frame's NumPy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.reactive import reactive, var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gpusched.core.state import LOADING, RUNNING, SAVING, STATUS_NAMES
from gpusched.tui.messages import ServerSelected
from gpusched.tui.session import Frame
from gpusched.tui.widgets.styled import CachedStyles

#: Job colours (a job's colour is PALETTE[(7 * job) % len(PALETTE)]).
PALETTE = (
    "#4e9a06",
    "#3465a4",
    "#c4a000",
    "#75507b",
    "#06989a",
    "#cc0000",
    "#8ae234",
    "#729fcf",
    "#fce94f",
    "#ad7fa8",
    "#34e2e2",
    "#ef2929",
)
GLYPH = {RUNNING: "█", LOADING: "▒", SAVING: "░"}
SHARED_GLYPH = "▚"
IDLE_GLYPH = "·"
BARS = "·▁▂▃▄▅▆▇█"
C_RUN, C_LOAD, C_SAVE, C_SHARED, C_IDLE = "#4e9a06", "#c4a000", "#ad7fa8", "#06989a", "#555753"
LEVELS = ("auto", "gpu", "server", "group")


def job_color(j: int) -> str:
    """The colour a job is drawn in."""
    return PALETTE[(7 * j) % len(PALETTE)]


def server_groups(cluster: Any) -> tuple[np.ndarray, list[str]]:
    """Each server's group (its rack, else its server group of the TOML) and the names."""
    racks = [str(x) for x in cluster.server_rack()]
    if any(racks):
        names = list(dict.fromkeys(r or "(no rack)" for r in racks))
        grp = np.array([names.index(r or "(no rack)") for r in racks])
        return grp, [f"rack {n}" for n in names]
    grp = np.asarray(cluster.server_group(), dtype=np.int64)
    return grp, [f"{g.gpu_type} {g.count}x{g.gpus}" for g in cluster.groups]


class ItemGrid(CachedStyles, ScrollView, can_focus=True):
    """What the cluster's two views share: items (servers, machines or groups) drawn in
    rows at one of several zoom ``LEVELS``, a cursor moved by the arrow keys, and the
    frame they draw. Subclasses give ``_relayout()`` and ``_item_count()``."""

    LEVELS: tuple[str, ...] = ("auto",)

    BINDINGS = [
        Binding("left", "move(-1)", "prev", show=False),
        Binding("right", "move(1)", "next", show=False),
        Binding("up", "move_line(-1)", "up", show=False),
        Binding("down", "move_line(1)", "down", show=False),
    ]

    frame: reactive[Frame | None] = reactive(None, layout=False, repaint=False)
    level: var[str] = var("auto")
    cursor: var[int] = var(0)
    #: rows the view may take (0: fill the height it is given); it takes only what it draws
    max_rows: var[int] = var(0)

    def _relayout(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def _item_count(self) -> int:  # pragma: no cover
        raise NotImplementedError

    def on_resize(self, event: Resize) -> None:
        self._relayout()

    def watch_level(self) -> None:
        self._relayout()

    def watch_max_rows(self) -> None:
        self._relayout()

    def action_move(self, delta: int) -> None:
        n = self._item_count()
        if n:
            self.cursor = (self.cursor + delta) % n

    def action_zoom(self) -> None:
        self.level = self.LEVELS[(self.LEVELS.index(self.level) + 1) % len(self.LEVELS)]

    def _legend(self, *, short: bool) -> Text:  # pragma: no cover
        raise NotImplementedError

    def _style(self, key: Any) -> Style:  # pragma: no cover
        raise NotImplementedError

    def _phase_bar(self, counts: dict[int, int], total: int, width: int) -> list[Segment]:
        """A bar ``width`` cells wide: running, loading and saving shares of ``total`` (from
        ``counts`` by status), the rest idle."""
        out = []
        used = 0
        for code, col in ((RUNNING, C_RUN), (LOADING, C_LOAD), (SAVING, C_SAVE)):
            k = min(int(round(counts[code] / max(total, 1) * width)), width - used)
            if k:
                out.append(Segment(GLYPH[code] * k, self._style(("fg", col))))
                used += k
        out.append(Segment(IDLE_GLYPH * (width - used), self._style(("fg", C_IDLE))))
        return out

    def legend(self, width: int = 0) -> Text:
        """One line explaining what the level shown draws (the short form if the full one
        is wider than ``width``)."""
        full = self._legend(short=False)
        if width <= 0 or full.cell_len <= width:
            return full
        return self._legend(short=True)


class ClusterView(ItemGrid):
    """GPUs of the cluster, coloured by job and state, with a server cursor."""

    LEVELS = LEVELS

    DEFAULT_CSS = """
    ClusterView { background: $surface; }
    ClusterView:focus { background-tint: $foreground 4%; }
    """

    def __init__(self, cluster: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self.server_start = np.asarray(cluster.server_start(), dtype=np.int64)
        self.server_gpus = np.asarray(cluster.server_gpus(), dtype=np.int64)
        self.gpu_server = np.asarray(cluster.gpu_server(), dtype=np.int64)
        self.gpu_type = [str(x) for x in cluster.server_gpu_type()]
        self.n_servers = int(cluster.n_servers)
        #: servers with GPUs: the ones drawn and selectable
        self.servers = np.flatnonzero(self.server_gpus > 0)
        self.server_grp, self.group_names = server_groups(cluster)
        self.n_groups = len(self.group_names)
        self.group_gpus = np.bincount(
            self.server_grp, weights=self.server_gpus, minlength=self.n_groups
        ).astype(np.int64)
        self.label_w = len(f"s{self.n_servers - 1}") + 1
        self.shown_level = "gpu"
        self._lines: list[list[tuple[int, int]]] = []  # per row: (item, x) items
        self._cw = 1
        self._rows_mode = False
        self._pos: dict[int, tuple[int, int]] = {}  # item -> (row, index in row)
        self._init_styles()
        self._strips: dict[int, tuple[Any, Strip]] = {}
        self._cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._agg: dict[str, np.ndarray] = {}

    # --- layout ----------------------------------------------------------------------------

    def _pack(
        self, width: int, cw: int, gap: int, *, one_cell: bool = False
    ) -> list[list[tuple[int, int]]]:
        """Servers packed into rows of ``width``: per row, (server, x) of each block."""
        lines: list[list[tuple[int, int]]] = []
        cur: list[tuple[int, int]] = []
        x = self.label_w
        for s in self.servers.tolist():
            w = gap + (1 if one_cell else int(self.server_gpus[s]) * cw)
            if cur and x + w > width:
                lines.append(cur)
                cur, x = [], self.label_w
            cur.append((s, x))
            x += w
        if cur:
            lines.append(cur)
        return lines

    def _relayout(self) -> None:
        width = max(self.size.width, 10)
        height = max(self.max_rows if self.max_rows > 0 else self.size.height, 1)
        n = int(self.servers.size)
        want = self.level
        chosen: tuple[str, list[list[tuple[int, int]]], int, bool] | None = None
        if want in ("auto", "gpu"):
            max_gpus = int(self.server_gpus.max()) if n else 1
            if n <= height or want == "gpu":
                # one server per row, cells as wide as fit (up to 4 columns)
                label = self.label_w + 6
                cw = max(1, min(4, (width - label - 1) // max(max_gpus, 1)))
                if n <= height and (width - label - 1) >= max_gpus:
                    rows = [[(int(s), label)] for s in self.servers]
                    chosen = ("gpu", rows, cw, True)
            if chosen is None:
                for cw in (3, 2, 1):
                    lines = self._pack(width, cw, 1)
                    if len(lines) <= height or (want == "gpu" and cw == 1):
                        chosen = ("gpu", lines, cw, False)
                        break
        if chosen is None and want in ("auto", "server"):
            lines = self._pack(width, 1, 0, one_cell=True)
            if len(lines) <= height or want == "server":
                chosen = ("server", lines, 1, False)
        if chosen is None:
            chosen = ("group", [[(g, 0)] for g in range(self.n_groups)], 1, False)
        self.shown_level, self._lines, self._cw, self._rows_mode = chosen
        self._pos = {}
        for r, line in enumerate(self._lines):
            for i, (item, _x) in enumerate(line):
                self._pos[item] = (r, i)
        self.virtual_size = Size(width, len(self._lines))
        if self.max_rows > 0:
            tall = min(max(len(self._lines), 1), self.max_rows) + self.styles.gutter.height
            if self.styles.height is None or self.styles.height.value != tall:
                self.styles.height = tall
        n_items = self.n_groups if self.shown_level == "group" else n
        if n_items:
            self.cursor = min(self.cursor, n_items - 1)
        self._reset_styles()
        self.refresh()

    # --- data -----------------------------------------------------------------------------

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None:
            return
        gj, gs = frame.gpu_job, frame.gpu_status
        if gj.shape[1] > 1:  # occupied slots first, in a stable order
            o = np.argsort(gj < 0, axis=1, kind="stable")
            gj = np.take_along_axis(gj, o, 1)
            gs = np.take_along_axis(gs, o, 1)
        n_on = (gj >= 0).sum(axis=1)
        j0 = gj[:, 0]
        j1 = gj[:, 1] if gj.shape[1] > 1 else np.full_like(j0, -1)
        self._cells = (j0, np.where(n_on >= 2, j1, -1), gs[:, 0])
        ns = self.n_servers
        w = self.gpu_server
        busy = n_on > 0
        self._agg = {
            "busy": np.bincount(w, weights=busy, minlength=ns),
            "load": np.bincount(w, weights=(gs == LOADING).any(1), minlength=ns),
            "save": np.bincount(w, weights=(gs == SAVING).any(1), minlength=ns),
            "shared": np.bincount(w, weights=n_on >= 2, minlength=ns),
        }
        self.refresh()

    # --- styles -----------------------------------------------------------------------------

    def _reset_styles(self) -> None:
        super()._reset_styles()
        self._strips.clear()

    def _style(self, key: Any) -> Style:
        st = self._styles.get(key)
        if st is None:
            base = self.base_style
            kind = key[0]
            if kind == "job":
                st = base + Style(color=job_color(key[1]))
            elif kind == "shared":
                st = base + Style(color=job_color(key[1]), bgcolor=job_color(key[2]))
            elif kind == "fg":
                st = base + Style(color=key[1], bold=len(key) > 2)
            elif kind == "cursor":
                st = base + Style(color="#ffffff", bold=True, reverse=True)
            else:
                st = base + Style(dim=True)
            self._styles[key] = st
        return st

    def _server_cell(self, s: int) -> tuple[str, Any]:
        agg = self._agg
        if not agg:
            return IDLE_GLYPH, ("fg", C_IDLE)
        frac = agg["busy"][s] / max(self.server_gpus[s], 1)
        ch = BARS[int(np.ceil(frac * 8))] if frac > 0 else IDLE_GLYPH
        if agg["save"][s]:
            col = C_SAVE
        elif agg["load"][s]:
            col = C_LOAD
        elif agg["shared"][s]:
            col = C_SHARED
        elif frac > 0:
            col = C_RUN
        else:
            col = C_IDLE
        return ch, ("fg", col)

    # --- drawing ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        row = y + self.scroll_offset.y
        if row >= len(self._lines) or width <= 0:
            return Strip.blank(width, self.base_style)
        line = self._lines[row]
        if self.shown_level == "group":
            segs = self._group_segments(line[0][0], width)
            return Strip(segs).adjust_cell_length(width, self.base_style)
        # most rows don't change from one frame to the next: reuse their strips
        key = self._row_key(line)
        hit = self._strips.get(row)
        if hit is not None and hit[0] == key:
            return hit[1]
        strip = Strip(self._server_segments(line, row)).adjust_cell_length(width, self.base_style)
        self._strips[row] = (key, strip)
        return strip

    def _row_key(self, line: list[tuple[int, int]]) -> tuple[Any, ...]:
        a = int(self.server_start[line[0][0]])
        b = int(self.server_start[line[-1][0] + 1])
        sel = self.selected_server()
        here = sel if sel is not None and line[0][0] <= sel <= line[-1][0] else -1
        if self._cells is None:
            return (here, self.shown_level, self._cw, self.size.width)
        j0, j1, s0 = self._cells
        return (
            here,
            self.shown_level,
            self._cw,
            self.size.width,
            j0[a:b].tobytes(),
            j1[a:b].tobytes(),
            s0[a:b].tobytes(),
        )

    def _server_segments(self, line: list[tuple[int, int]], row: int) -> list[Segment]:
        out: list[Segment] = []
        first = line[0][0]
        if self._rows_mode:
            label = f"s{first}".ljust(self.label_w) + self.gpu_type[first][:5].ljust(6)
        else:
            label = f"s{first}".ljust(self.label_w)
        sel = (
            int(self.servers[self.cursor])
            if self.shown_level != "group" and self.servers.size
            else -1
        )
        lab_style = (
            self._style(("cursor",)) if self._rows_mode and first == sel else self._style(("dim",))
        )
        out.append(Segment(label, lab_style))
        cells = self._cells
        run_text: list[str] = []
        run_key: Any = None

        def emit(text: str, key: Any) -> None:
            nonlocal run_key
            if key != run_key and run_text:
                out.append(Segment("".join(run_text), self._style(run_key)))
                run_text.clear()
            run_key = key
            run_text.append(text)

        cw = self._cw
        body = cw - 1 if cw > 2 else cw  # wide cells keep a gap between GPUs
        pad = " " * (cw - body)
        for s, _x in line:
            if self.shown_level == "server":
                ch, key = self._server_cell(s)
                if s == sel:
                    key = ("cursor",)
                emit(ch, key)
                continue
            if not self._rows_mode:
                emit("▸" if s == sel else " ", ("fg", "#ffffff", "b") if s == sel else ("dim",))
            a, b = int(self.server_start[s]), int(self.server_start[s + 1])
            if cells is None:
                emit(IDLE_GLYPH * cw * (b - a), ("fg", C_IDLE))
                continue
            j0, j1, s0 = cells
            for g in range(a, b):
                j = int(j0[g])
                if j < 0:
                    emit(IDLE_GLYPH * body, ("fg", C_IDLE))
                elif j1[g] >= 0:
                    emit(SHARED_GLYPH * body, ("shared", j, int(j1[g])))
                else:
                    emit(GLYPH.get(int(s0[g]), "█") * body, ("job", j))
                if pad:
                    emit(pad, ("dim",))
        if run_text:
            out.append(Segment("".join(run_text), self._style(run_key)))
        return out

    def _group_segments(self, g: int, width: int) -> list[Segment]:
        name_w = min(max(len(n) for n in self.group_names) + 1, 24)
        total = int(self.group_gpus[g])
        agg = self._agg
        if agg:
            mask = self.server_grp == g
            busy = int(agg["busy"][mask].sum())
        else:
            busy = 0
        # per-GPU state counts of the group (from the cells)
        counts = {RUNNING: 0, LOADING: 0, SAVING: 0}
        if self._cells is not None:
            gmask = self.server_grp[self.gpu_server] == g
            j0, _j1, s0 = self._cells
            st = s0[gmask & (j0 >= 0)]
            for code in counts:
                counts[code] = int((st == code).sum())
            counts[RUNNING] = busy - counts[LOADING] - counts[SAVING]
        tail = f" {busy}/{total}"
        bar_w = max(width - name_w - len(tail) - 2, 4)
        sel = g == self.cursor
        out = [
            Segment(
                self.group_names[g][: name_w - 1].ljust(name_w),
                self._style(("cursor",) if sel else ("dim",)),
            )
        ]
        out.extend(self._phase_bar(counts, total, bar_w))
        out.append(Segment(tail, self._style(("dim",))))
        return out

    # --- legend and selection -----------------------------------------------------------------

    def _legend(self, *, short: bool) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        gap = " " if short else "  "
        if self.shown_level == "gpu":
            names = ("run", "load", "save") if short else ("running", "loading", "saving")
            for glyph, name in zip(("█", "▒", "░"), names, strict=True):
                t.append(glyph, style=C_RUN)
                t.append(f" {name}{gap}")
            t.append(SHARED_GLYPH, style=f"{C_RUN} on {C_SHARED}")
            t.append(f" shared{gap}")
            t.append(IDLE_GLYPH, style=C_IDLE)
            t.append(" idle" + (" colour=job" if short else "   colour = job"))
        elif self.shown_level == "server":
            t.append("▁▄█", style=C_RUN)
            t.append(" busy share" if short else " busy fraction per server")
            t.append(gap)
            names = ("load", "save", "shared") if short else ("loading", "saving", "shared")
            for col, name in zip((C_LOAD, C_SAVE, C_SHARED), names, strict=True):
                t.append("■", style=col)
                t.append(f" {name}{gap}")
        else:
            for code, col in ((RUNNING, C_RUN), (LOADING, C_LOAD), (SAVING, C_SAVE)):
                t.append(GLYPH[code], style=col)
                t.append(f" {STATUS_NAMES[code]}{gap}")
            t.append(IDLE_GLYPH, style=C_IDLE)
            t.append(" idle" + ("" if short else "   per group"))
        return t

    def selected_server(self) -> int | None:
        """Server under the cursor (None at group level)."""
        if self.shown_level == "group" or not self.servers.size:
            return None
        return int(self.servers[min(self.cursor, self.servers.size - 1)])

    def describe(self, frame: Frame | None, job_id: np.ndarray, job_n_gpus: np.ndarray) -> Text:
        """The jobs on the selected server in ``frame`` (or a group's totals)."""
        t = Text(no_wrap=False)
        if self.shown_level == "group":
            g = self.cursor
            t.append(f"{self.group_names[g]}: ", style="bold")
            servers = int((self.server_grp == g).sum())
            busy = int(self._agg["busy"][self.server_grp == g].sum()) if self._agg else 0
            t.append(f"{servers} servers, {busy}/{int(self.group_gpus[g])} GPUs busy")
            return t
        s = self.selected_server()
        if s is None:
            return t
        a, b = int(self.server_start[s]), int(self.server_start[s + 1])
        t.append(f"server s{s} ", style="bold")
        t.append(f"({self.gpu_type[s]} x{b - a})  ")
        if frame is None:
            return t
        gj = frame.gpu_job[a:b]
        gs = frame.gpu_status[a:b]
        jobs, first = np.unique(gj[gj >= 0], return_index=True)
        if not jobs.size:
            t.append("idle", style="dim")
            return t
        flat_s = gs[gj >= 0]
        for k, (j, i) in enumerate(zip(jobs.tolist(), first.tolist(), strict=True)):
            here = int((gj == j).sum())
            if k:
                t.append("  ")
            t.append("■ ", style=job_color(j))
            t.append(f"{job_id[j]}", style="bold")
            t.append(f" {STATUS_NAMES[int(flat_s[i])]} {here}/{int(job_n_gpus[j])} GPUs")
        return t

    def _item_count(self) -> int:
        return self.n_groups if self.shown_level == "group" else int(self.servers.size)

    def watch_cursor(self, cursor: int) -> None:
        self.refresh()
        item = (
            cursor
            if self.shown_level == "group"
            else (int(self.servers[cursor]) if self.servers.size else 0)
        )
        pos = self._pos.get(item)
        if pos is not None:
            self.scroll_to_region(Region(0, pos[0], 1, 1), animate=False)
        self.post_message(ServerSelected(item, self.shown_level))

    def action_move_line(self, delta: int) -> None:
        n = self._item_count()
        if not n:
            return
        item = self.cursor if self.shown_level == "group" else int(self.servers[self.cursor])
        r, i = self._pos.get(item, (0, 0))
        r2 = min(max(r + delta, 0), len(self._lines) - 1)
        line = self._lines[r2]
        target = line[min(i, len(line) - 1)][0]
        if self.shown_level == "group":
            self.cursor = target
        else:
            self.cursor = int(np.searchsorted(self.servers, target))

    def on_click(self, event: Click) -> None:
        row = event.y + self.scroll_offset.y
        if not 0 <= row < len(self._lines):
            return
        line = self._lines[row]
        hit = line[0][0]
        for item, x in line:
            if event.x >= x:
                hit = item
        if self.shown_level == "group":
            self.cursor = hit
        else:
            self.cursor = int(np.searchsorted(self.servers, hit))
