"""The live replay app: cluster view, queue and running lists, metrics, controls.

The simulation runs in a thread worker (:meth:`GpuschedApp.simulate`) that owns the
engine through a :class:`~gpusched.tui.session.Driver`; the UI thread only sends it
commands and receives :class:`~gpusched.tui.session.Frame` copies as
:class:`~gpusched.tui.messages.FrameReady` messages, which replace each other when they
arrive faster than they are drawn.

Layout: the cluster view (left) and the metrics (right) share the top and take only the
rows they draw (the cluster view at most about half the screen, then it aggregates or
scrolls); the queue and running lists share the rest; the event feed sits above the
footer. In a run of jobs placed by roles (the engine has a resource ledger) the cluster
view is a :class:`~gpusched.tui.widgets.ResourceView` (occupancy per machine and resource),
and the metrics and lists count workers, PSs and rejected jobs instead of GPUs. In a run
of jobs made of chunks on typed workers (the engine has a task book) it is a
:class:`~gpusched.tui.widgets.WorkerView` (edge servers' workers by type, and the cloud),
and the metrics and lists count jobs and their chunks, edge workers and the cloud.

Quitting mid-run (``q``) stops the run where it is, as ``--until`` would, and shows the
summary of the part run (its stop time and the jobs left); ``q`` again quits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.reactive import var
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from gpusched.errors import show_text
from gpusched.tui.messages import FrameReady, ServerSelected, SimFailed, SimFinished
from gpusched.tui.screens import HelpScreen, SummaryScreen
from gpusched.tui.session import (
    MAX_SPEED,
    SPEEDS,
    Driver,
    Frame,
    default_speed,
    run_summary,
    shown_ids,
)
from gpusched.tui.widgets import (
    ClusterView,
    EventFeed,
    Legend,
    MetricsPanel,
    QueueView,
    ResourceView,
    WorkerView,
)

#: Rows outside the panels: header, event feed, footer.
CHROME_ROWS = 3
#: Rows of the left column besides the cluster view: legend, the view's border, server info.
LEFT_EXTRA_ROWS = 6


class GpuschedApp(App[dict[str, Any] | None]):
    """Replay one engine live.

    Parameters
    ----------
    engine
        A fresh :class:`~gpusched.core.engine.Engine` (the app's worker thread owns it).
    trace_name
        Shown in the title bar.
    speed
        Simulated seconds per wall second (``math.inf`` = max speed); default: the
        trace's arrivals in about two minutes.
    paused
        Start paused (tests step with ``n``).
    """

    CSS_PATH = "gpusched.tcss"
    TITLE = "gpusched"

    BINDINGS = [
        Binding("space", "toggle_pause", "pause"),
        Binding("n", "step", "step"),
        Binding("plus,equals_sign", "faster", "faster", key_display="+"),
        Binding("minus", "slower", "slower", key_display="-"),
        Binding("m", "max_speed", "max"),
        Binding("z", "zoom", "zoom"),
        Binding("s", "summary", "summary", show=False),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "quit", "quit"),
    ]

    frame: var[Frame | None] = var(None)

    def __init__(
        self,
        engine: Any,
        *,
        trace_name: str = "",
        speed: float | None = None,
        paused: bool = False,
        frame_s: float = 1 / 30,
    ) -> None:
        super().__init__()
        self.engine = engine
        ids = shown_ids(engine.jobs.job_id)  # never a raw control character on screen
        self.jobs = (
            engine.jobs
            if ids is engine.jobs.job_id
            else dataclasses.replace(engine.jobs, job_id=ids)
        )
        self.cluster = engine.cluster
        #: jobs are placed by roles on the engine's resource ledger (read before the worker
        #: runs, like the jobs' worker limits: the lists show them)
        self.roles = engine.ledger is not None
        self._max_workers = np.array(engine.roles.max_workers) if self.roles else None
        self.speed = default_speed(engine) if speed is None else float(speed)
        self._slow_speed = self.speed if math.isfinite(self.speed) else 60.0
        self.driver = Driver(engine, speed=self.speed, paused=paused, frame_s=frame_s)
        #: the static facts of a run of jobs made of chunks (None otherwise)
        self.tasks = self.driver.task_info
        self.summary: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.frames_applied = 0
        self.stopping = False  # q was pressed mid-run: the worker is stopping the engine
        self._info = ""
        self._issued = 0
        trace_name = show_text(trace_name)
        self.trace_name = trace_name
        self.sub_title = (
            f"{trace_name} · {engine.name} ({engine.mode}) · {self.cluster.name} "
            f"({self.cluster.n_gpus} GPUs, {self.cluster.n_servers} servers) · "
            f"{len(self.jobs)} jobs"
        )
        if self.tasks is not None:
            info = self.tasks
            edge = int(np.unique(info.edge_server).size)
            cloud = " + cloud" if info.server_cloud.any() else ""
            self.sub_title = (
                f"{trace_name} · {engine.name} ({engine.mode}) · {self.cluster.name} "
                f"({edge} edge servers, {info.n_edge} workers of {len(info.types)} types"
                f"{cloud}) · {info.n_jobs} jobs, {len(self.jobs)} chunks"
            )

    def compose(self) -> ComposeResult:
        has_status = callable(getattr(self.engine.policy, "status_line", None))
        roles = self.roles
        yield Header()
        with Horizontal(id="top"):
            with Vertical(id="left"):
                view: ClusterView | ResourceView | WorkerView
                if self.tasks is not None:
                    view = WorkerView(self.tasks, id="cluster")
                elif roles:
                    from gpusched.core.ledger import capacities

                    view = ResourceView(self.cluster, capacities(self.cluster), id="cluster")
                else:
                    view = ClusterView(self.cluster, id="cluster")
                yield Legend(view, id="legend")
                yield view.data_bind(GpuschedApp.frame)
                yield Static(id="server-info")
            yield MetricsPanel(
                self.cluster.n_gpus,
                has_status=has_status,
                roles=roles,
                tasks=self.tasks,
                id="metrics",
            ).data_bind(GpuschedApp.frame)
        with Horizontal(id="lists"):
            for kind in ("queued", "running"):
                yield QueueView(
                    kind,
                    self.jobs,
                    self.cluster,
                    roles=roles,
                    max_workers=self._max_workers,
                    tasks=self.tasks,
                    id=kind,
                ).data_bind(GpuschedApp.frame)
        yield EventFeed(self.jobs, chunks=self.tasks is not None, id="feed").data_bind(
            GpuschedApp.frame
        )
        # the palette (ctrl+p) stays, unlisted: at 80 columns its entry pushed help and quit
        # off the footer
        yield Footer(show_command_palette=False)

    def cluster_view(self) -> ClusterView | ResourceView | WorkerView:
        """The cluster view: GPUs, the resources of a run of jobs placed by roles, or the
        workers of a run of jobs made of chunks."""
        view = self.query_one("#cluster")
        assert isinstance(view, ClusterView | ResourceView | WorkerView)
        return view

    def on_resize(self, event: Resize) -> None:
        self._fit_cluster(event.size.height)
        self.call_after_refresh(self._update_side)  # the level shown may have changed

    def _fit_cluster(self, height: int) -> None:
        """Let the cluster view have about half the screen, or the metrics' height if more."""
        try:
            view = self.cluster_view()
            metrics = self.query_one(MetricsPanel)
        except Exception:
            return
        half = (height - CHROME_ROWS) // 2 - LEFT_EXTRA_ROWS
        beside = int(metrics.styles.height.value) - LEFT_EXTRA_ROWS if metrics.styles.height else 0
        view.max_rows = max(half, beside, 3)

    def on_mount(self) -> None:
        cluster = self.cluster_view()
        what = "Workers" if self.tasks is not None else "Resources" if self.roles else "Cluster"
        cluster.border_title = f"{what} · {self.cluster.name}"
        self.query_one(MetricsPanel).border_title = "Metrics"
        cluster.focus()
        self._fit_cluster(self.size.height)
        self.simulate()

    # --- the worker -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False)
    def simulate(self) -> None:
        """Run the driver's loop until the run ends or the worker is cancelled."""
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        def finish(frame: Frame) -> None:
            self.post_message(SimFinished(frame, run_summary(self.engine.result())))

        try:
            self.driver.loop(cancelled, lambda f: self.post_message(FrameReady(f)), finish)
        except Exception as exc:
            self.post_message(SimFailed(exc))

    # --- messages -------------------------------------------------------------------------

    def on_frame_ready(self, message: FrameReady) -> None:
        self.frame = message.frame
        self.frames_applied += 1

    def on_sim_finished(self, message: SimFinished) -> None:
        self.frame = message.frame
        self.frames_applied += 1
        self.summary = message.summary
        self.push_screen(SummaryScreen(message.summary, self.sub_title))

    def on_sim_failed(self, message: SimFailed) -> None:
        self.error = message.error
        self.exit(None)

    def watch_frame(self, frame: Frame | None) -> None:
        self.call_later(self._update_side)  # after the bound widgets took the frame

    @on(ServerSelected)
    def _on_server_selected(self, message: ServerSelected) -> None:
        self._update_side()

    def _update_side(self) -> None:
        try:
            cluster = self.cluster_view()
        except Exception:
            return
        self._fit_cluster(self.size.height)  # the metrics may have grown a status row
        # fixed-height widgets, updated only on change: no layout pass per frame
        legend = self.query_one(Legend)
        if legend.level != cluster.shown_level:
            legend.refresh()
        sizes = self.jobs.n_gpus
        if self.frame is not None and self.frame.job_gpus is not None:
            sizes = self.frame.job_gpus  # elastic gangs: the GPUs each job holds now
        info = cluster.describe(self.frame, self.jobs.job_id, sizes)
        if info.markup != self._info:
            self._info = info.markup
            self.query_one("#server-info", Static).update(info, layout=False)

    # --- controls -------------------------------------------------------------------------

    def _send(self, cmd: str, arg: Any = None) -> None:
        self._issued += 1
        self.driver.send(cmd, arg)

    def action_toggle_pause(self) -> None:
        self._send("pause")

    def action_step(self) -> None:
        self._send("step", 1)

    def _set_speed(self, speed: float) -> None:
        self.speed = speed
        if math.isfinite(speed):
            self._slow_speed = speed
        self._send("speed", speed)

    def action_faster(self) -> None:
        if math.isinf(self.speed):
            return
        faster = [s for s in SPEEDS if s > self.speed]
        self._set_speed(float(faster[0]) if faster else MAX_SPEED)

    def action_slower(self) -> None:
        if math.isinf(self.speed):
            self._set_speed(float(SPEEDS[-1]))
            return
        slower = [s for s in SPEEDS if s < self.speed]
        self._set_speed(float(slower[-1]) if slower else float(SPEEDS[0]))

    def action_max_speed(self) -> None:
        self._set_speed(self._slow_speed if math.isinf(self.speed) else MAX_SPEED)

    def action_zoom(self) -> None:
        self.cluster_view().action_zoom()
        self.call_after_refresh(self._update_side)  # the legend of the new level

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_summary(self) -> None:
        if self.summary is not None and not isinstance(self.screen, SummaryScreen):
            self.push_screen(SummaryScreen(self.summary, self.sub_title))

    async def action_quit(self) -> None:
        """Quit; mid-run, first stop the run there and show its summary."""
        running = self.driver.started and not self.driver.done.is_set()
        if self.summary is None and self.error is None and running and not self.stopping:
            self.stopping = True
            self._send("stop")  # the worker ends the run; SimFinished shows the summary
            return
        self.exit(self.summary)

    # --- for tests ------------------------------------------------------------------------

    async def settle(self, timeout: float = 180.0) -> Frame:
        """Wait until the worker has applied every command sent so far and its frame is shown."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            f = self.frame
            if f is not None and (f.seq >= self._issued or self.summary is not None):
                return f
            if self.error is not None:
                raise self.error
            if loop.time() > end:
                raise TimeoutError("the simulation worker did not catch up")
            await asyncio.sleep(0.005)


def trace_label(path: Path | str | None) -> str:
    """A short name for the title bar."""
    return Path(path).name if path else ""
