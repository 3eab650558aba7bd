"""The live TUI on runs of jobs made of chunks (typed workers on edge servers and a cloud).

The bundled ec-30 trace on the testbed under a-online (8 edge servers of one ``gpu`` and
two ``cpu`` workers, and, so that the cloud is busy from the start, the simulator's
unbounded cloud: ``--cloud unbounded``; the bundled testbed's cloud is one machine, shown
in the last test). The app is started paused and
stepped with ``n`` (see tests/test_tui.py); what the screen shows (busy workers per
server and type, chunks waiting on each worker, the cloud's chunks and jobs, the jobs'
chunk counts) is compared at every step with the engine's state, recounted here from
the engine's task book, and at the end the summary with the headless run's.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from gpusched.core.state import FINISHED, LOADING, QUEUED, RUNNING, SAVING
from gpusched.experiments.run import build_engine, replay
from gpusched.io.trace import write_trace
from gpusched.tui.app import GpuschedApp
from gpusched.tui.screens import SummaryScreen
from gpusched.tui.session import Driver
from gpusched.tui.widgets import ClusterView, QueueView, WorkerView
from gpusched.workloads.edge_cloud import edge_cloud_cluster, edge_cloud_sim_workload
from tests.test_tui import line_with, run_async, screen_text, strip_timing

SIZE = (120, 40)
_DIR = Path(tempfile.mkdtemp(prefix="tui-tasks-"))
CLUSTER = str(_DIR / "testbed-unbounded.toml")
Path(CLUSTER).write_text(edge_cloud_cluster(8, 1, "testbed", cloud="unbounded"), encoding="utf-8")


def make_engine(trace: str = "ec-30", cluster: str = CLUSTER):
    engine, _ = build_engine(trace, "a-online", cluster=cluster, mode="python")
    return engine


def make_app(trace: str = "ec-30", cluster: str = CLUSTER) -> GpuschedApp:
    return GpuschedApp(make_engine(trace, cluster), trace_name=trace, paused=True, speed=1)


class Truth:
    """The engine's state recounted from its task book (independently of the TUI)."""

    def __init__(self, engine) -> None:
        book = engine.book
        st = engine.state
        lay = book.layout
        self.lay = lay
        self.status = st.job_status.copy()
        self.bound = book.bound.copy()
        self.holder = st.gpu_job[:, 0].copy()
        self.parent = book.parent
        cloud_w = lay.server_cloud[lay.worker_server]
        self.cloud_w = cloud_w
        holding = np.isin(self.status, (RUNNING, LOADING, SAVING))
        in_cloud = (self.bound >= 0) & cloud_w[np.maximum(self.bound, 0)]
        self.cloud_chunks = int((holding & in_cloud).sum())
        self.cloud_jobs = int(np.unique(self.parent[holding & in_cloud]).size)
        self.waiting = self.status == QUEUED
        self.n_parents = book.n_parents
        self.first = book.first

    def queued_on(self, w: int) -> int:
        """Chunks placed on worker ``w`` and waiting."""
        return int((self.waiting & (self.bound == w)).sum())

    def workers(self, server: int, kind: int) -> list[int]:
        lay = self.lay
        return np.flatnonzero((lay.worker_server == server) & (lay.worker_type == kind)).tolist()

    def job_counts(self, p: int) -> tuple[int, int, int, int, int]:
        """(chunks, done, on workers, waiting, placed and waiting) of job ``p``."""
        lo, hi = int(self.first[p]), int(self.first[p + 1])
        s, b = self.status[lo:hi], self.bound[lo:hi]
        run = int(np.isin(s, (RUNNING, LOADING, SAVING)).sum())
        wait = s == QUEUED
        return (
            hi - lo,
            int((s == FINISHED).sum()),
            run,
            int(wait.sum()),
            int((wait & (b >= 0)).sum()),
        )


def server_rows(lines: list[str], types: tuple[str, ...]) -> dict[int, dict[str, str]]:
    """Per server row of the worker level: the cells drawn for each worker type."""
    names = "|".join(re.escape(t) for t in sorted(types, key=len, reverse=True))
    out: dict[int, dict[str, str]] = {}
    for line in lines:
        m = re.match(r"│s(\d+) ", line)
        if not m:
            continue
        body = line.split("│")[1] + " "
        cells = re.findall(rf" ({names}) +((?:[█▒░·][ 1-9+])+)", body)
        if cells:
            out[int(m.group(1))] = dict(cells)
    return out


def check_worker_level(app: GpuschedApp, engine) -> int:
    """Every server row shows its workers by type: busy or idle, and the chunks waiting on
    each; return the busy workers seen."""
    truth = Truth(engine)
    lay = truth.lay
    rows = server_rows(screen_text(app), lay.types)
    edge_servers = np.unique(lay.worker_server[~truth.cloud_w])
    assert sorted(rows) == edge_servers.tolist()
    busy_seen = 0
    for s, cells in rows.items():
        for k, name in enumerate(lay.types):
            ws = truth.workers(s, k)
            if not ws:
                assert name not in cells
                continue
            text = cells[name]
            assert len(text) == 2 * len(ws), (s, name, text)
            for i, w in enumerate(ws):
                glyph, count = text[2 * i], text[2 * i + 1]
                assert (glyph != "·") == (truth.holder[w] >= 0), (s, name, w)
                busy_seen += glyph != "·"
                n = truth.queued_on(w)
                assert count == (" " if n == 0 else str(n) if n <= 9 else "+"), (s, w, n)
    return busy_seen


def first_int(text: str, after: str) -> int:
    return int(re.search(re.escape(after) + r"\s*(\d+)", text).group(1))


# --- the frame: copies of the chunks' placement ---------------------------------------------------


def test_frame_copies_the_chunks():
    engine = make_engine()
    drv = Driver(engine, speed=1.0)
    info = drv.task_info
    assert info is not None and info.types == ("gpu", "cpu") and info.n_edge == 24
    for _ in range(12):
        drv._step(1)
    f = drv.frame()
    tf = f.tasks
    assert tf is not None
    truth = Truth(engine)
    np.testing.assert_array_equal(tf.worker_chunk, truth.holder[info.edge])
    want = [truth.queued_on(int(w)) for w in info.edge]
    np.testing.assert_array_equal(tf.worker_queued, want)
    assert tf.cloud_holding == engine.book.cloud_busy == truth.cloud_chunks > 0
    assert tf.cloud_jobs == truth.cloud_jobs
    counts = np.array([truth.job_counts(p) for p in range(truth.n_parents)])
    np.testing.assert_array_equal(tf.job_done, counts[:, 1])
    np.testing.assert_array_equal(tf.job_holding, counts[:, 2])
    np.testing.assert_array_equal(tf.job_placed + tf.job_unplaced, counts[:, 3])
    np.testing.assert_array_equal(tf.job_placed, counts[:, 4])
    # the history is the engine's timeline of busy workers per tier, one sample per step
    tl = engine.timeline()
    assert tf.hist_edge.size == 12
    assert (tf.hist_edge[-1], tf.hist_cloud[-1]) == (tl["busy_edge"][-1], tl["busy_cloud"][-1])
    # a copy: stepping on does not change it
    before = (tf.worker_chunk.copy(), tf.job_done.copy(), tf.cloud_holding)
    for _ in range(10):
        drv._step(1)
    now = Truth(engine)
    moved = [now.job_counts(p)[1] for p in range(now.n_parents)]
    assert not np.array_equal(moved, before[1])  # the engine moved on
    np.testing.assert_array_equal(tf.worker_chunk, before[0])
    np.testing.assert_array_equal(tf.job_done, before[1])


def test_jct_of_finished_jobs_shows_as_they_finish():
    """The metrics line read "JCT avg - P95 -" for the whole run (issue 27): each frame's
    JCT is over the jobs whose every chunk has finished, as summary.json's at the end."""
    engine = make_engine()
    drv = Driver(engine, speed=1.0)
    info = drv.task_info
    assert info is not None
    seen = 0
    while not engine.finished:
        drv._step(1)
        tf = drv.frame().tasks
        assert tf is not None
        st = engine.state
        finish = np.array(
            [
                st.job_finish[info.first[p] : info.first[p + 1]].max()
                if (st.job_status[info.first[p] : info.first[p + 1]] == FINISHED).all()
                else np.nan
                for p in range(info.n_jobs)
            ]
        )
        done = ~np.isnan(finish)
        assert tf.n_jobs_done == int(done.sum())
        if done.any():
            jct = finish[done] - np.asarray(engine.jobs.submit_s)[info.first[:-1]][done]
            assert tf.avg_jct_s == pytest.approx(float(jct.mean()))
            assert tf.p95_jct_s == pytest.approx(float(np.percentile(jct, 95)))
            seen += 0 < tf.n_jobs_done < info.n_jobs
        else:
            assert tf.avg_jct_s is None
    assert seen  # some frames with part of the jobs done


def test_gpu_runs_have_no_tasks_in_their_frames():
    engine, _ = build_engine("tiny", "tiresias")
    drv = Driver(engine, speed=1.0)
    engine.step(2)
    assert drv.task_info is None and drv.frame().tasks is None


# --- on screen ------------------------------------------------------------------------------------


@run_async
async def test_step_to_the_end_shows_the_engine_state_and_the_headless_summary():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.query_one("#cluster"), WorkerView)
        assert not app.query(ClusterView)
        f = await app.settle()
        seen = {"busy": 0, "cloud": 0, "waiting": 0, "queue_rows": 0}
        for _ in range(200):
            if app.summary is not None:
                break
            await pilot.press("n")
            f = await app.settle()
            await pilot.pause()
            if app.summary is not None:
                break
            engine = app.engine  # paused: the worker leaves the engine alone
            truth = Truth(engine)
            view = app.query_one(WorkerView)
            assert view.shown_level == "worker"
            seen["busy"] += check_worker_level(app, engine)
            lines = screen_text(app)
            # the tiers: the cloud's chunks and jobs, the edge's busy workers and waiting
            cloud = line_with(lines, "│cloud  ")
            assert first_int(cloud, "cloud") == truth.cloud_chunks
            assert f" · {truth.cloud_jobs} jobs" in cloud
            edge = line_with(lines, "│edge   ")
            n_busy = int((truth.holder[~truth.cloud_w] >= 0).sum())
            assert f"edge   {n_busy}/24 " in edge
            on_edge = sum(truth.queued_on(w) for w in np.flatnonzero(~truth.cloud_w))
            assert f" · {on_edge} " in edge
            seen["cloud"] += truth.cloud_chunks
            seen["waiting"] += on_edge
            # the metrics: edge workers busy and the cloud's chunks
            metrics = line_with(lines, " cloud ")
            assert f"edge {n_busy}/24 " in metrics
            assert f"cloud {truth.cloud_chunks} " in metrics
            # the queue lists jobs with waiting chunks: chunks, done, run, wait, placed
            queue = app.query_one("#queued", QueueView)
            tf = f.tasks
            assert tf is not None
            for p in tf.queue_jobs[:5].tolist():
                # the queue's column of the screen (the running list beside it names jobs too)
                mark = f"■{app.tasks.job_id[p]} "
                queue_col = [x.split("│")[1] for x in lines if x.count("│") >= 2]
                row = next(r for r in queue_col if mark in r)
                nums = [int(x) for x in row.split("■")[1].split()[1:6]]
                assert tuple(nums) == truth.job_counts(p), (p, row)
                seen["queue_rows"] += 1
            assert f"{int(truth.waiting.sum())} chunk" in str(queue.border_title)
        assert seen["busy"] and seen["cloud"] and seen["waiting"] and seen["queue_rows"]
        summary = app.summary
        assert summary is not None and f.finished
        assert isinstance(app.screen, SummaryScreen)
        text = "\n".join(screen_text(app))
        for label in (
            "chunks",
            "cloud-only",
            "cloud worker-s",
            "PS-s held",
            "total data shipping",
            "edge utilisation",
        ):
            assert label in text, label
        await pilot.press("escape")
        await pilot.pause()
        lines = screen_text(app)
        row = line_with(lines, f"jobs {summary['n_finished']}/30 ")
        n = summary["n_tasks"]
        assert f"chunks {n}/{n} " in row
        await pilot.press("q")
    head, _ = replay("ec-30", "a-online", cluster=CLUSTER, mode="python")
    assert strip_timing(summary) == strip_timing(head)
    for key in ("n_tasks", "n_cloud_jobs", "cloud_worker_s", "ps_held_s", "total_transfer_s"):
        assert key in summary


@run_async
async def test_type_level_counts_workers_and_chunks_per_type():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        for _ in range(8):
            await pilot.press("n")
            await app.settle()
        view = app.query_one(WorkerView)
        for _ in range(3):  # auto -> worker -> packed -> type
            await pilot.press("z")
        await pilot.pause()
        assert view.shown_level == "type"
        engine = app.engine
        truth = Truth(engine)
        lay = truth.lay
        lines = screen_text(app)
        waiting_any = 0
        for k, name in enumerate(lay.types):
            ws = np.flatnonzero((lay.worker_type == k) & ~truth.cloud_w)
            busy = int((truth.holder[ws] >= 0).sum())
            queued = sum(truth.queued_on(int(w)) for w in ws)
            unplaced = int((truth.waiting & (truth.bound < 0) & (engine.book.task_type == k)).sum())
            row = line_with(lines, f"│{name} ")
            assert row.split("│")[1].rstrip().endswith(f" {busy}/{ws.size} q{queued} w{unplaced}")
            waiting_any += queued
        assert waiting_any > 0  # the check has teeth
        await pilot.press("q")


# --- 100 edge servers of 10 worker types: the view aggregates to fit ------------------------------


@pytest.fixture(scope="module")
def sim_trace(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("ec") / "ec-sim-20.csv"
    write_trace(edge_cloud_sim_workload(1, jobs=20), path)
    return str(path)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 50)])
@run_async
async def test_worker_view_fits_100_servers(sim_trace, size):
    app = make_app(sim_trace, cluster="edge-cloud-sim")
    async with app.run_test(size=size) as pilot:
        await app.settle()
        for _ in range(3):
            await pilot.press("n")
        await app.settle()
        await pilot.pause()
        view = app.query_one(WorkerView)
        assert view.n_servers == 100 and view.n_types == 10
        body = view.size.height - view.head_rows
        assert view.shown_level in ("packed", "type")
        assert len(view._lines) <= max(body, 1) or view.shown_level == "type"
        items = [item for line in view._lines for item, _x in line]
        n = view.n_types if view.shown_level == "type" else 100
        assert sorted(items) == list(range(n))
        assert view.region.bottom <= app.query_one("#lists").region.y
        seen = set()
        for _ in range(4):  # z cycles auto -> worker -> packed -> type -> auto
            await pilot.press("z")
            await pilot.pause()
            seen.add(view.shown_level)
        assert seen == {"worker", "packed", "type"}
        # the tier rows stay at the top whatever the level, and tell the truth
        truth = Truth(app.engine)
        cloud = view.render_line(0).text
        assert cloud.startswith("cloud  ") and first_int(cloud, "cloud") == truth.cloud_chunks
        assert view.render_line(1).text.startswith("edge   ")
        await pilot.press("q")


@run_async
async def test_the_bundled_testbed_with_its_one_machine_cloud():
    """The cloud's workers are bounded there: the tiers still add up at every step."""
    app = make_app(cluster="edge-cloud-testbed")
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        seen = 0
        for _ in range(120):
            await pilot.press("n")
            await app.settle()
            await pilot.pause()
            if app.summary is not None:
                break
            truth = Truth(app.engine)
            lines = screen_text(app)
            assert first_int(line_with(lines, "│cloud  "), "cloud") == truth.cloud_chunks
            seen += truth.cloud_chunks
        assert seen  # its 3 workers took chunks
