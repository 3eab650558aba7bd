"""The metrics panel: clock, progress, JCT so far, utilisation / queue sparklines, and the
policy's status line (wrapped: the panel grows to show all of it).

In a run of jobs placed by roles it also counts the jobs admitted, rejected and
unfinished, gives the workers and PSs running instead of busy GPUs, and draws one
utilisation sparkline per resource (the used fraction of the whole cluster).

In a run of jobs made of chunks on typed workers (edge servers and a cloud) it counts
jobs and chunks done, gives the JCT over jobs (a job ends with its last chunk), the
busy edge workers and the chunks and jobs in the cloud, and draws the edge utilisation
and the cloud's busy workers (the timeline's ``busy_edge`` and ``busy_cloud``).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import numpy as np
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gpusched.core.ledger import RESOURCES
from gpusched.results.units import fmt_s
from gpusched.tui.session import Frame, TaskInfo, fmt_speed, resample
from gpusched.tui.widgets.resource_view import RES_COLORS, RES_SHORT

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
#: The same in a run of jobs placed by roles (admission counts, a sparkline per 2 resources).
ROLE_ROWS = 8
#: The same in a run of jobs made of chunks (chunk counts, the edge and cloud sparklines).
TASK_ROWS = 7
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
    roles
        The run places jobs by roles (the frames carry the resource ledger).
    tasks
        The run's jobs are made of chunks on typed workers: its static facts (the frames
        carry :class:`~gpusched.tui.session.TaskFrame`).
    """

    DEFAULT_CSS = """
    MetricsPanel { height: 8; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False)

    def __init__(
        self,
        n_gpus: int,
        *,
        has_status: bool = False,
        roles: bool = False,
        tasks: TaskInfo | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.n_gpus = n_gpus
        self.roles = roles
        self.tasks = tasks
        self.base_rows = ROLE_ROWS if roles else TASK_ROWS if tasks is not None else BASE_ROWS
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
        height = self.base_rows + self.status_rows + self.styles.gutter.height
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
        if f.tasks is not None and self.tasks is not None:
            self._chunks(t, f)
            return self._status(t)
        done, dec = f"{f.n_finished}/{f.n_jobs}", f"{f.n_decisions}"
        short = len(f"jobs {done} done  {dec} decisions") > self.size.width
        t.append("jobs ", style="dim")
        t.append(done, style="bold")
        t.append("  " if short else " done  ", style="dim")
        t.append(dec, style="bold")
        t.append(" dec.\n" if short else " decisions\n", style="dim")
        if self.roles:
            self._admission(t, f)
        t.append("JCT avg ", style="dim")
        t.append(fmt_s(f.avg_jct_s), style="bold")
        t.append("  P95 ", style="dim")
        t.append(fmt_s(f.p95_jct_s), style="bold")
        t.append("\n")
        if self.roles:
            self._roles(t, f)
        else:
            self._gpus(t, f)
        t.append("queue ", style="dim")
        que = resample(f.hist_t, f.hist_queue, max(self.size.width - 6, 1))
        top = max(que) if que else 1.0
        t.append(sparkline(que, top), style="#c4a000")
        return self._status(t)

    def _status(self, t: Text) -> Text:
        """Append the policy's status line (wrapped)."""
        for line in self._status_lines():
            t.append("\n")
            t.append(line, style="italic")
        return t

    def _chunks(self, t: Text, f: Frame) -> None:
        """Jobs and chunks done, JCT over jobs, the edge and the cloud, and their history."""
        tf, info = f.tasks, self.tasks
        assert tf is not None and info is not None
        items = [
            ("jobs", "jobs", f"{tf.n_jobs_done}/{info.n_jobs}"),
            ("chunks", "chunks", f"{f.n_finished}/{f.n_jobs}"),
            ("decisions", "dec.", f"{f.n_decisions}"),
        ]
        long = "  ".join(f"{name} {v} done" for name, _s, v in items[:2]) + "  0 decisions"
        short = len(long) > self.size.width
        for k, (name, abbr, value) in enumerate(items):
            t.append(("  " if k else "") + f"{abbr if short else name} ", style="dim")
            t.append(value, style="bold")
            if k < 2 and not short:
                t.append(" done", style="dim")
        t.append("\n")
        t.append("JCT avg ", style="dim")
        t.append(fmt_s(tf.avg_jct_s), style="bold")
        t.append("  P95 ", style="dim")
        t.append(fmt_s(tf.p95_jct_s), style="bold")
        t.append("  (jobs)\n", style="dim")
        n_edge = info.n_edge
        busy = tf.busy_edge
        pct = 100.0 * busy / max(n_edge, 1)
        edge_now = f"{busy}/{n_edge} ({pct:.0f}%)"
        words = (" chunks ", " jobs")
        if len(f"edge {edge_now}  cloud {tf.cloud_holding} chunks {tf.cloud_jobs} jobs") > max(
            self.size.width, 1
        ):
            words = (" ch. ", " j.")
        t.append("edge ", style="dim")
        t.append(edge_now, style="bold")
        t.append("  cloud ", style="dim")
        t.append(f"{tf.cloud_holding}", style="bold")
        t.append(words[0], style="dim")
        t.append(f"{tf.cloud_jobs}", style="bold")
        t.append(words[1] + "\n", style="dim")
        width = max(self.size.width - 6, 1)
        edge = resample(f.hist_t, tf.hist_edge, width)
        t.append("edge  ", style="dim")
        t.append(sparkline(edge, float(n_edge)), style="#4e9a06")
        t.append("\n")
        cloud = resample(f.hist_t, tf.hist_cloud, width)
        t.append("cloud ", style="dim")
        t.append(sparkline(cloud, max(cloud, default=1.0)), style="#06989a")
        t.append("\n")
        t.append("wait  ", style="dim")
        que = resample(f.hist_t, f.hist_queue, width)
        t.append(sparkline(que, max(que) if que else 1.0), style="#c4a000")

    def _counts(self, t: Text, items: list[tuple[str, str, int]]) -> None:
        """``name value`` pairs on one row, with the short names if the long don't fit."""
        long = "  ".join(f"{name} {v}" for name, _short, v in items)
        use_short = len(long) > self.size.width
        for k, (name, short, value) in enumerate(items):
            t.append(("  " if k else "") + f"{short if use_short else name} ", style="dim")
            t.append(f"{value}", style="bold red" if name == "rejected" and value else "bold")
        t.append("\n")

    def _admission(self, t: Text, f: Frame) -> None:
        """``admitted A  rejected R  unfinished U`` (summary.json's counts, so far)."""
        admitted = f.roles.n_admitted if f.roles is not None else 0
        items = [
            ("admitted", "adm.", admitted),
            ("rejected", "rej.", f.n_rejected),
            ("unfinished", "left", f.n_unfinished),
        ]
        self._counts(t, items)

    def _roles(self, t: Text, f: Frame) -> None:
        """Workers and PSs running, the queue, and a sparkline per resource (two a row)."""
        roles = f.roles
        if roles is None:
            return
        machines = int(np.unique(roles.alloc_machine).size)
        items = [
            ("workers", "wkrs", int(roles.run_workers.sum())),
            ("PSs", "PSs", int(roles.run_ps.sum())),
            ("machines", "on", machines),
            ("queue", "queue", f.n_queued),
        ]
        self._counts(t, items)
        n_res = int(roles.capacity.shape[1])
        now = roles.total_used / np.where(roles.total_capacity > 0, roles.total_capacity, 1.0)
        half = max((self.size.width - 1) // 2 - 9, 1)  # "GPU " + sparkline + " 100%"
        for a in range(0, n_res, 2):
            for r in range(a, min(a + 2, n_res)):
                if r > a:
                    t.append(" ")
                vals = resample(f.hist_t, roles.hist_used[:, r], half)
                name = RES_SHORT.get(RESOURCES[r], RESOURCES[r]) if r < len(RESOURCES) else str(r)
                t.append(f"{name:<4}", style="dim")
                t.append(sparkline(vals, 1.0).ljust(half), style=RES_COLORS[r % len(RES_COLORS)])
                t.append(f"{100 * float(now[r]):4.0f}%")
            t.append("\n")

    def _gpus(self, t: Text, f: Frame) -> None:
        """Busy GPUs, the queue and the GPU utilisation sparkline."""
        pct = 100.0 * f.busy_gpus / max(self.n_gpus, 1)
        t.append("GPUs ", style="dim")
        t.append(f"{f.busy_gpus}/{self.n_gpus} ({pct:.0f}%)", style="bold")
        t.append("  queue ", style="dim")
        t.append(f"{f.n_queued}", style="bold")
        t.append("\n")
        width = max(self.size.width - 6, 1)
        util = resample(f.hist_t, f.hist_busy, width)
        t.append("util  ", style="dim")
        t.append(sparkline(util, float(self.n_gpus)), style="#4e9a06")
        t.append("\n")
