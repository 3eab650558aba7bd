"""The event feed: one line saying what the last decision (or the last few) did.

Started, preempted, finished and rejected jobs are named for one decision; over several
they are counted. A job placed by roles is named with the workers and PSs it started on.
In a run of jobs made of chunks the engine's rows are chunks: the feed says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gpusched.results.units import fmt_t
from gpusched.tui.session import Events, Frame
from gpusched.tui.widgets.cluster_view import job_color

#: Jobs named per kind before "+N more".
NAMED = 3


def _jobs(
    t: Text,
    jobs: np.ndarray,
    job_id: np.ndarray,
    n_gpus: np.ndarray | None,
    frame: Frame | None = None,
) -> None:
    """Append up to :data:`NAMED` jobs of ``jobs`` (with their GPUs if > 1, or their workers
    and PSs in ``frame`` for jobs placed by roles), then ``+N``."""
    roles = None if frame is None else frame.roles
    for k, j in enumerate(jobs[:NAMED].tolist()):
        if k:
            t.append(", ")
        t.append(str(job_id[j]), style=f"bold {job_color(j)}")
        if n_gpus is None or frame is None:
            continue
        if roles is not None:
            i = int(np.searchsorted(frame.running, j))
            if i < frame.running.size and frame.running[i] == j:
                t.append(f" ({int(roles.run_workers[i])}w+{int(roles.run_ps[i])}ps)")
        elif int(n_gpus[j]) > 1:
            t.append(f" ({int(n_gpus[j])} GPUs)")
    if jobs.size > NAMED:
        t.append(f" +{jobs.size - NAMED} more", style="dim")


def _named(
    t: Text, ev: Events, job_id: np.ndarray, n_gpus: np.ndarray, frame: Frame, unit: str = "job"
) -> None:
    """Append the jobs one decision started, preempted, finished and rejected, then the
    arrivals."""
    parts = [
        ("started", ev.started, n_gpus),
        ("preempted", ev.preempted, None),
        ("finished", ev.finished, None),
        ("rejected", ev.rejected, None),
    ]
    first = True
    for word, jobs, gpus in parts:
        if not jobs.size:
            continue
        if not first:
            t.append("; ")
        first = False
        t.append(f"{word} ", style="dim")
        if jobs.size > NAMED:
            t.append(f"{jobs.size}{'' if unit == 'job' else ' ' + unit + 's'}: ")
        elif unit != "job":
            t.append(f"{unit}{'s' if jobs.size > 1 else ''} ", style="dim")
        _jobs(t, jobs, job_id, gpus, frame)
    if first:
        t.append(f"no {unit} started, preempted or finished", style="dim")
    if ev.n_arrived:
        noun = "" if unit == "job" else f" {unit}s"
        t.append(f"; {ev.n_arrived}{noun} arrived", style="dim")


def feed_line(
    frame: Frame | None, job_id: np.ndarray, n_gpus: np.ndarray, *, chunks: bool = False
) -> Text:
    """The feed for ``frame``: when, then started / preempted / finished jobs and arrivals.

    The jobs of a single decision are named (up to :data:`NAMED` of each kind); over
    several decisions (playing) they are counted, with the jobs on GPUs before and after.

    Parameters
    ----------
    frame
        The frame shown (its :attr:`~gpusched.tui.session.Frame.events`).
    job_id, n_gpus
        The trace's job ids and GPU counts, by job index (the engine's rows).
    chunks
        The engine's rows are the chunks of jobs made of tasks: name them chunks, on
        workers.
    """
    unit = "chunk" if chunks else "job"
    t = Text(no_wrap=True, overflow="ellipsis")
    ev = None if frame is None else frame.events
    if frame is None or ev is None:
        t.append("no decision yet: n steps one decision point, space plays", style="dim")
        return t
    if ev.n_decisions <= 1:  # 0: the run-down after the last decision
        t.append(f"t={fmt_t(ev.t_to)}", style="bold")
    else:
        since = fmt_t(ev.t_from) if math.isfinite(ev.t_from) else "start"
        t.append(f"t={since} → {fmt_t(ev.t_to)}", style="bold")
        t.append(f" ({ev.n_decisions} decisions)", style="dim")
    t.append("  ")
    if ev.n_decisions <= 1:
        _named(t, ev, job_id, n_gpus, frame, unit)
    else:
        if chunks:
            t.append("chunks: ", style="dim")
        t.append(f"{ev.n_arrived} arrived, {ev.n_finished} finished, ")
        if ev.n_rejected:
            t.append(f"{ev.n_rejected} rejected, ")
        t.append(f"{ev.n_preempted} preempted; ")
        before, after = ev.n_holding
        where = "running" if frame.roles is not None else "on GPUs"
        if chunks:
            where = "on workers"
        t.append(f"{before} → {after} {unit}s {where}", style="dim")
    if frame.finished:
        t.append("  · stopped" if frame.stopped else "  · run ended", style="dim")
    elif math.isfinite(frame.next_event):
        t.append(f"  · next t={fmt_t(frame.next_event)}", style="dim")
    return t


class EventFeed(Widget):
    """One line under the lists: the events of the last frame that advanced the engine."""

    DEFAULT_CSS = """
    EventFeed { height: 1; padding: 0 1; }
    """

    frame: reactive[Frame | None] = reactive(None, layout=False)

    def __init__(self, jobs: Any, *, chunks: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunks = chunks
        self.job_id = np.asarray(jobs.job_id)
        self.job_n_gpus = np.asarray(jobs.n_gpus)

    def render(self) -> Text:
        return feed_line(self.frame, self.job_id, self.job_n_gpus, chunks=self.chunks)
