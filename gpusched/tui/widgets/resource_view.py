"""The resource view: the machines' occupancy per resource, for jobs placed by roles.

Shown instead of the GPU cluster view when the run has a resource ledger
(:mod:`gpusched.core.ledger`): parameter-server jobs hold counts of workers and PSs per
machine, never GPU indices. The first rows stay put: cluster-wide bars, one per resource
(GPUs, vCPUs, memory, storage), as many to a row as fit. Below them, per machine, the
used fraction of each resource, at the most detailed level that fits in
:attr:`ResourceView.max_rows` (``z`` cycles through the levels by hand):

* ``machine``: one machine per row, a bar and a percentage per resource;
* ``packed``: one cell per machine of one glyph per resource (``▁`` to ``█``, in the
  resource's colour), the machines packed into rows;
* ``compact``: one glyph per machine, the used fraction of its fullest resource, in that
  resource's colour;
* ``group``: one row per rack (or server group of the cluster file), bars of its totals.

Like the cluster view it is a Line-API :class:`~textual.scroll_view.ScrollView` that
draws only the visible rows, from the frame's copies (:class:`~gpusched.tui.session.RoleFrame`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.geometry import Size
from textual.strip import Strip

from gpusched.core.ledger import RESOURCES
from gpusched.tui.messages import ServerSelected
from gpusched.tui.session import Frame
from gpusched.tui.widgets.cluster_view import (
    BARS,
    IDLE_GLYPH,
    ItemGrid,
    job_color,
    server_groups,
)

#: How each resource of :data:`gpusched.core.ledger.RESOURCES` is named, and its unit.
RES_NAMES = {"gpus": "GPUs", "cpus": "vCPUs", "mem_gb": "memory", "storage_gb": "storage"}
RES_UNITS = {"gpus": "", "cpus": "", "mem_gb": " GB", "storage_gb": " GB"}
#: Short names (the machine line under the view, the metrics' sparklines).
RES_SHORT = {"gpus": "GPU", "cpus": "CPU", "mem_gb": "mem", "storage_gb": "sto"}
#: Colour of each resource, in the order of RESOURCES.
RES_COLORS = ("#4e9a06", "#3465a4", "#c4a000", "#ad7fa8")
LEVELS = ("auto", "machine", "packed", "compact", "group")
#: Narrowest cluster-wide bar: a bar of 6 and the percentage, after the name (8 or 4 wide).
_HEAD_BAR = 6 + 5
_HEAD_GAP = 2


def fractions(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """``used / capacity`` in [0, 1], 0 where the capacity is 0."""
    cap = np.asarray(capacity, dtype=np.float64)
    out = np.divide(used, cap, out=np.zeros(np.shape(used)), where=cap > 0)
    return np.asarray(np.clip(out, 0.0, 1.0))


def bar_text(frac: float, width: int) -> str:
    """A bar of ``width`` cells filled to ``frac`` (half cells as ``▌``, the rest ``·``)."""
    if width <= 0:
        return ""
    full = int(frac * width)
    bar = "█" * full + ("▌" if frac * width - full >= 0.5 else "")
    return bar[:width].ljust(width, IDLE_GLYPH)


def level_glyph(frac: float) -> str:
    """One glyph for a used fraction: ``·`` when nothing is held, else ``▁`` to ``█``."""
    return BARS[min(int(math.ceil(frac * 8)), 8)] if frac > 0 else IDLE_GLYPH


def amount(x: float) -> str:
    """A resource amount: whole numbers grouped (``3,600``), else one decimal."""
    x = float(x) + 0.0
    return f"{x:,.0f}" if x == round(x) or abs(x) >= 1000 else f"{x:,.1f}"


class ResourceView(ItemGrid):
    """Per-machine and cluster-wide occupancy of each resource, with a machine cursor.

    Parameters
    ----------
    cluster
        The cluster spec (its server groups and racks name the ``group`` level).
    capacity
        ``(H, R)`` capacity per machine and resource, in the order of
        :data:`gpusched.core.ledger.RESOURCES` (:func:`gpusched.core.ledger.capacities`).
    """

    LEVELS = LEVELS

    DEFAULT_CSS = """
    ResourceView { background: $surface; }
    ResourceView:focus { background-tint: $foreground 4%; }
    """

    def __init__(self, cluster: Any, capacity: np.ndarray, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.n_machines, self.n_res = (int(x) for x in self.capacity.shape)
        self.res_names = [RES_NAMES.get(r, r) for r in RESOURCES[: self.n_res]]
        self.res_units = [RES_UNITS.get(r, "") for r in RESOURCES[: self.n_res]]
        self.res_short = [RES_SHORT.get(r, r) for r in RESOURCES[: self.n_res]]
        self.server_grp, self.group_names = server_groups(cluster)
        self.n_groups = len(self.group_names)
        self.group_cap = np.zeros((self.n_groups, self.n_res))
        np.add.at(self.group_cap, self.server_grp, self.capacity)
        self.label_w = len(f"m{max(self.n_machines - 1, 0)}") + 1
        self.shown_level = "machine"
        self.head_rows = 1
        self._per_head = self.n_res
        self._head_short = False
        self._lines: list[list[tuple[int, int]]] = []  # per row: (item, x) items
        self._bar_w = 1
        self._pct = True
        self._pos: dict[int, tuple[int, int]] = {}  # item -> (row, index in row)
        self._frac = np.zeros_like(self.capacity)  # used fraction per machine and resource
        self._used = np.zeros_like(self.capacity)
        self._init_styles()

    # --- layout ----------------------------------------------------------------------------

    def _pack(self, width: int, cell: int) -> list[list[tuple[int, int]]]:
        """Machines packed into rows of ``width``: per row, (machine, x) of each cell."""
        per = max((width - self.label_w) // cell, 1)
        return [
            [
                (h, self.label_w + k * cell)
                for k, h in enumerate(range(a, min(a + per, self.n_machines)))
            ]
            for a in range(0, self.n_machines, per)
        ]

    def _machine_bar(self, width: int, label_w: int) -> tuple[int, bool]:
        """Bar width per resource of a one-machine row, and whether percentages fit."""
        room = (width - label_w) // max(self.n_res, 1)
        if room - 6 >= 3:
            return room - 6, True  # "bar 100% "
        return room - 1, False

    def _relayout(self) -> None:
        width = max(self.size.width, 10)
        # cluster-wide bars: as many to a row as fit, with the short names if need be
        fits = [
            (per, short)
            for per in (4, 2, 1)
            for short in (False, True)
            if per <= max(self.n_res, 1)
            and per * ((4 if short else 8) + _HEAD_BAR + _HEAD_GAP) <= width + _HEAD_GAP
        ]
        self._per_head, self._head_short = fits[0] if fits else (1, True)
        self.head_rows = -(-self.n_res // self._per_head)
        height = max(self.max_rows if self.max_rows > 0 else self.size.height, 1)
        body = max(height - self.head_rows, 1)
        want = self.level
        chosen: tuple[str, list[list[tuple[int, int]]]] | None = None
        bar, pct = self._machine_bar(width, self.label_w)
        if want in ("auto", "machine") and (bar >= 2 or want == "machine"):
            if self.n_machines <= body or want == "machine":
                chosen = ("machine", [[(h, 0)] for h in range(self.n_machines)])
        if chosen is None and want in ("auto", "packed"):
            lines = self._pack(width, self.n_res + 1)
            if len(lines) <= body or want == "packed":
                chosen = ("packed", lines)
        if chosen is None and want in ("auto", "compact"):
            lines = self._pack(width, 1)
            if len(lines) <= body or want == "compact":
                chosen = ("compact", lines)
        if chosen is None:
            chosen = ("group", [[(g, 0)] for g in range(self.n_groups)])
            bar, pct = self._machine_bar(width, self._group_label_w())
        self.shown_level, self._lines = chosen
        self._bar_w, self._pct = max(bar, 1), pct
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

    def _group_label_w(self) -> int:
        return min(max((len(n) for n in self.group_names), default=4) + 1, 24)

    # --- data -----------------------------------------------------------------------------

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None or frame.roles is None:
            return
        self._used = frame.roles.used
        self._frac = fractions(self._used, self.capacity)
        self.refresh()

    # --- styles ---------------------------------------------------------------------------

    def _style(self, key: Any) -> Style:
        st = self._styles.get(key)
        if st is None:
            base = self.base_style
            kind = key[0]
            if kind == "res":
                st = base + Style(color=RES_COLORS[key[1] % len(RES_COLORS)])
            elif kind == "cursor":
                st = base + Style(color="#ffffff", bold=True, reverse=True)
            elif kind == "mark":
                st = base + Style(color="#ffffff", bold=True)
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
            segs = self._row_segments(self._lines[row])
        return Strip(segs).adjust_cell_length(width, self.base_style)

    def _head_segments(self, y: int, width: int) -> list[Segment]:
        """Row ``y`` of the cluster-wide bars."""
        per = self._per_head
        cell = (width - _HEAD_GAP * (per - 1)) // per
        used = self._used.sum(axis=0)
        total = self.capacity.sum(axis=0)
        frac = fractions(used, total)
        out: list[Segment] = []
        for k, r in enumerate(range(y * per, min((y + 1) * per, self.n_res))):
            if k:
                out.append(Segment(" " * _HEAD_GAP, self.base_style))
            name = self.res_short[r].ljust(4) if self._head_short else self.res_names[r].ljust(8)
            tail = f" {100 * frac[r]:3.0f}%"
            absolute = f" {amount(used[r])}/{amount(total[r])}{self.res_units[r]}"
            if cell - len(name) - len(tail) - len(absolute) >= 8:
                tail = absolute + tail
            bar_w = max(cell - len(name) - len(tail), 1)
            out.append(Segment(name, self._style(("res", r))))
            out.append(Segment(bar_text(float(frac[r]), bar_w), self._style(("res", r))))
            out.append(Segment(tail, self._style(("plain",))))
        return out

    def _bars(self, frac: np.ndarray) -> list[Segment]:
        """A bar (and percentage, if it fits) per resource of one machine or group."""
        out: list[Segment] = []
        for r in range(self.n_res):
            f = float(frac[r])
            out.append(Segment(bar_text(f, self._bar_w), self._style(("res", r))))
            out.append(Segment(f" {100 * f:3.0f}% " if self._pct else " ", self._style(("dim",))))
        return out

    def _row_segments(self, line: list[tuple[int, int]]) -> list[Segment]:
        level = self.shown_level
        sel = self.cursor
        key: tuple[Any, ...]
        if level == "group":
            g = line[0][0]
            lw = self._group_label_w()
            frac = fractions(self._used[self.server_grp == g].sum(axis=0), self.group_cap[g])
            key = ("cursor",) if g == sel else ("dim",)
            return [
                Segment(self.group_names[g][: lw - 1].ljust(lw), self._style(key)),
                *self._bars(frac),
            ]
        first = line[0][0]
        if level == "machine":
            key = ("cursor",) if first == sel else ("dim",)
            label = Segment(f"m{first}".ljust(self.label_w), self._style(key))
            return [label, *self._bars(self._frac[first])]
        out = [Segment(f"m{first}".ljust(self.label_w), self._style(("dim",)))]
        for h, _x in line:
            fr = self._frac[h]
            if level == "packed":
                out.append(
                    Segment(
                        "▸" if h == sel else " ", self._style(("mark",) if h == sel else ("dim",))
                    )
                )
                for r in range(self.n_res):
                    out.append(Segment(level_glyph(float(fr[r])), self._style(("res", r))))
            else:  # compact: the fullest resource
                r = int(np.argmax(fr)) if self.n_res else 0
                key = ("cursor",) if h == sel else ("res", r)
                out.append(
                    Segment(level_glyph(float(fr[r]) if self.n_res else 0.0), self._style(key))
                )
        return out

    # --- legend and selection ---------------------------------------------------------------

    def _legend(self, *, short: bool) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        gap = " " if short else "  "
        for r, name in enumerate(self.res_short if short else self.res_names):
            t.append("■", style=RES_COLORS[r % len(RES_COLORS)])
            t.append(f" {name}{gap}")
        what = {
            "machine": ("used per machine", "per machine"),
            "packed": ("▁▄█ used, a glyph per resource", "▁▄█ per resource"),
            "compact": ("▁▄█ fullest resource per machine", "▁▄█ fullest"),
            "group": ("used per group", "per group"),
        }[self.shown_level]
        t.append(what[1] if short else what[0], style="dim")
        return t

    def selected_server(self) -> int | None:
        """Machine under the cursor (None at group level)."""
        if self.shown_level == "group" or not self.n_machines:
            return None
        return min(self.cursor, self.n_machines - 1)

    def _amounts(self, t: Text, used: np.ndarray, cap: np.ndarray) -> None:
        """``  GPU 29/36  CPU 100/100  mem 273.4/306  sto 127.8/135`` (units as the legend's)."""
        for r in range(self.n_res):
            t.append(f"  {self.res_short[r]} ", style=RES_COLORS[r % len(RES_COLORS)])
            t.append(f"{amount(used[r])}/{amount(cap[r])}")

    def describe(self, frame: Frame | None, job_id: np.ndarray, job_n_gpus: Any = None) -> Text:
        """The selected machine's resources held and the jobs on it (or a group's totals)."""
        t = Text(no_wrap=False)
        if self.shown_level == "group":
            g = min(self.cursor, max(self.n_groups - 1, 0))
            mask = self.server_grp == g
            t.append(f"{self.group_names[g]}: ", style="bold")
            t.append(f"{int(mask.sum())} machines")
            self._amounts(t, self._used[mask].sum(axis=0), self.group_cap[g])
            return t
        h = self.selected_server()
        if h is None:
            return t
        t.append(f"machine m{h}", style="bold")
        self._amounts(t, self._used[h], self.capacity[h])
        roles = None if frame is None else frame.roles
        if roles is None:
            return t
        here = np.flatnonzero(roles.alloc_machine == h)
        t.append("\n")
        if not here.size:
            t.append("no job", style="dim")
            return t
        t.append(f"{here.size} job{'s' if here.size > 1 else ''}: ", style="dim")
        for k, i in enumerate(here.tolist()):
            j = int(roles.alloc_job[i])
            if k:
                t.append("  ")
            t.append("■ ", style=job_color(j))
            t.append(f"{job_id[j]}", style="bold")
            t.append(f" {int(roles.alloc_workers[i])}w+{int(roles.alloc_ps[i])}ps")
        return t

    def _item_count(self) -> int:
        return self.n_groups if self.shown_level == "group" else self.n_machines

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
        self.post_message(ServerSelected(cursor, self.shown_level))

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
