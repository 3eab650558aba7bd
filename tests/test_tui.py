"""The live TUI: Pilot tests that drive the simulation by explicit steps, and SVG snapshots.

The app is started paused; ``n`` steps one decision point and ``app.settle()`` waits
until the worker thread has applied every key sent so far (no wall-clock timing).
Snapshots (``snap_compare``) are taken paused after a fixed number of steps, so they
are stable; refresh them with ``pytest tests/test_tui.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
import functools
import math

import numpy as np
import pytest

from gpusched.core.state import FINISHED, LOADING, RUNNING, SAVING
from gpusched.experiments.run import build_engine, replay
from gpusched.results.metrics import job_records, summarize
from gpusched.results.units import fmt_s
from gpusched.tui.app import GpuschedApp
from gpusched.tui.screens import HelpScreen, SummaryScreen
from gpusched.tui.session import Driver, partial_result
from gpusched.tui.widgets import ClusterView, EventFeed, MetricsPanel, QueueView

SIZE = (120, 40)
TIMING_KEYS = {"wall_s", "sched_delay_ms_avg", "sched_delay_ms_p95"}


@pytest.fixture(autouse=True, scope="module")
def _compiled_kernels():
    """Compile (or load) the jitted kernels before any Pilot test waits on a worker."""
    for mode in ("auto", "python"):
        replay("tiny", "tiresias", cluster="default", mode=mode)


def make_engine(trace: str = "tiny", policy: str = "tiresias", cluster: str = "default", **kw):
    args = {
        "params": None,
        "slot_s": 1.0,
        "seed": 0,
        "until_s": None,
        "drop_oversized": False,
        "mode": "auto",
    }
    args.update(kw)
    engine, _ = build_engine(trace, policy, cluster=cluster, **args)
    return engine


def make_app(**kw) -> GpuschedApp:
    return GpuschedApp(make_engine(**kw), trace_name="tiny.csv", paused=True, speed=10.0)


async def wait_summary(app: GpuschedApp, timeout: float = 60.0) -> dict:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while app.summary is None:
        if app.error is not None:
            raise app.error
        assert loop.time() < end, "run did not finish"
        await asyncio.sleep(0.01)
    return app.summary


def same_records(a, b) -> None:
    ra, rb = job_records(a), job_records(b)
    assert ra.keys() == rb.keys()
    for k in ra:
        x, y = np.asarray(ra[k]), np.asarray(rb[k])
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=k)  # NaN == NaN here
        else:
            assert (x == y).all(), k


def strip_timing(s: dict) -> dict:
    return {k: v for k, v in s.items() if k not in TIMING_KEYS}


def screen_text(app: GpuschedApp) -> list[str]:
    """The terminal's lines as a person sees them (what an SVG screenshot shows)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()[:height]


def line_with(lines: list[str], word: str) -> str:
    hits = [line for line in lines if word in line]
    assert hits, f"{word!r} is not on screen:\n" + "\n".join(lines)
    return hits[0]


def run_async(fn):
    """Run an ``async def`` test in its own event loop (no pytest asyncio plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


# --- keys and stepping semantics ------------------------------------------------------------


@run_async
async def test_step_pause_resume_semantics():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        f0 = await app.settle()
        assert f0.paused and f0.n_decisions == 0
        first = f0.next_event
        await pilot.press("n")
        f1 = await app.settle()
        assert f1.n_decisions == 1 and f1.paused
        assert f1.clock == first == f1.engine_now
        nxt = f1.next_event
        await pilot.press("n")
        f2 = await app.settle()
        assert f2.n_decisions == 2 and f2.engine_now == nxt
        # resume, then pause again: the clock never goes back
        await pilot.press("space")
        f3 = await app.settle()
        assert not f3.paused
        await pilot.press("space")
        f4 = await app.settle()
        assert f4.paused and f4.clock >= f2.clock
        # a step while playing pauses first
        await pilot.press("space")
        await app.settle()
        await pilot.press("n")
        f5 = await app.settle()
        assert f5.paused and f5.n_decisions >= f4.n_decisions + 1


@run_async
async def test_speed_keys_and_help():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.press("plus")
        f = await app.settle()
        assert f.speed == 30.0
        await pilot.press("minus", "minus")
        f = await app.settle()
        assert f.speed == 5.0
        await pilot.press("m")
        f = await app.settle()
        assert math.isinf(f.speed)
        await pilot.press("m")
        f = await app.settle()
        assert f.speed == 5.0
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


@run_async
async def test_server_selection_shows_its_jobs():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.press("n")
        f = await app.settle()
        await pilot.pause()
        view = app.query_one(ClusterView)
        assert view.shown_level == "gpu"
        info = str(app.query_one("#server-info").render())
        assert "server s0" in info
        busy = np.unique(f.gpu_job[f.gpu_job >= 0])
        s0_jobs = np.unique(f.gpu_job[0:8][f.gpu_job[0:8] >= 0])
        assert busy.size and all(str(app.jobs.job_id[j]) in info for j in s0_jobs)
        await pilot.press("right")
        await pilot.pause()
        assert "server s1" in str(app.query_one("#server-info").render())


# --- faithful to headless -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "mode"),
    [("tiresias", "auto"), ("tiresias", "python"), ("fifo", "auto"), ("sjf", "python")],
)
@run_async
async def test_run_to_end_matches_headless(policy, mode):
    app = make_app(policy=policy, mode=mode)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.press("m", "space")  # max speed, resume
        summary = await wait_summary(app)
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        await pilot.press("q")
    assert app.return_value == summary
    head, res = replay("tiny", policy, cluster="default", mode=mode)
    assert strip_timing(summary) == strip_timing(head)
    same_records(app.engine.result(), res)


@run_async
async def test_step_by_step_matches_headless():
    app = make_app(trace="synth-500", policy="tiresias", mode="python")
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        for _ in range(40):
            await pilot.press("n")
        f = await app.settle()
        assert f.n_decisions == 40
        await pilot.press("m", "space")
        summary = await wait_summary(app)
    head, res = replay("synth-500", "tiresias", cluster="default", mode="python")
    assert strip_timing(summary) == strip_timing(head)
    same_records(app.engine.result(), res)


@run_async
async def test_a_trace_of_no_job(tmp_path):
    """A trace with a header and no row (replay runs it, saying '0 jobs'): the TUI's first
    frame indexed the job states at GPU 0's job, an IndexError traceback on an empty array."""
    trace = tmp_path / "none.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n")
    frame = Driver(make_engine(str(trace)), speed=10.0).frame()
    assert (frame.gpu_status == -1).all() and frame.gpu_status.size == 32
    app = GpuschedApp(make_engine(str(trace)), trace_name="none.csv", paused=True, speed=10.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.press("m", "space")
        summary = await wait_summary(app)
        await pilot.press("q")
    assert summary["n_jobs"] == 0


def test_partial_result_counts_unfinished():
    engine = make_engine()
    engine.step(3)
    s = summarize(partial_result(engine))
    assert s["n_jobs"] == 6 and s["n_unfinished"] > 0
    assert s["n_finished"] + s["n_unfinished"] == 6


def test_policy_status_line_reaches_the_frame():
    from gpusched.experiments.run import build_engine

    engine, _ = build_engine("tiny", "a-srpt")
    drv = Driver(engine, speed=10.0)
    engine.step(2)
    assert drv.frame().extra["status"].startswith("A-SRPT pending")
    plain = Driver(make_engine(), speed=10.0)
    plain.engine.step(1)
    assert "status" not in plain.frame().extra


def test_driver_paces_by_simulated_clock():
    engine = make_engine()
    drv = Driver(engine, speed=10.0)
    drv.clock = engine.peek()
    drv._play(0.0, 0.0, lambda: False)  # dt = 0: only the first decision point is due
    assert engine.now == 0.0 and drv.clock == 0.0
    nxt = engine.peek()
    drv._play(nxt / 10.0 * 0.5, float("inf"), lambda: False)  # half way to the next event
    assert engine.now == 0.0 and 0.0 < drv.clock < nxt


# --- scale: aggregation and Line API ------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "levels"),
    [("default", {"gpu"}), ("a-srpt-250x8", {"gpu", "server"}), ("pai-2020", {"server", "group"})],
)
@run_async
async def test_cluster_view_aggregates_big_clusters(cluster, levels):
    engine = make_engine(cluster=cluster)
    app = GpuschedApp(engine, paused=True, speed=10.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await app.settle()
        await pilot.pause()
        view = app.query_one(ClusterView)
        assert view.shown_level in levels
        assert len(view._lines) <= view.size.height or view.shown_level == "group"
        seen = set()
        for _ in range(4):  # z cycles auto -> gpu -> server -> group -> auto
            await pilot.press("z")
            await pilot.pause()
            seen.add(view.shown_level)
        assert seen == {"gpu", "server", "group"}


@run_async
async def test_queue_view_renders_only_visible_rows(tmp_path):
    trace = tmp_path / "burst.csv"
    rows = [f"b{i:04d},0,{1 + i % 2},{100 + i}" for i in range(1000)]
    trace.write_text("job_id,submit_time,num_gpus,duration\n" + "\n".join(rows) + "\n")
    engine = make_engine(trace=str(trace), cluster="testbed-4x4", policy="sjf")
    app = GpuschedApp(engine, paused=True, speed=10.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        f = await app.settle()
        await pilot.pause()
        view = app.query_one("#queued", QueueView)
        assert f.n_queued > view.size.height  # a queue longer than the view
        calls = []
        orig = view._row
        view._row = lambda i, fr: calls.append(i) or orig(i, fr)
        view.refresh()
        await pilot.pause()
        assert 0 < len(calls) <= view.size.height
        # in the policy's order: SJF, shortest first
        dur = engine.jobs.work_s[f.queue]
        assert (np.diff(dur) >= 0).all() and f.key_name == "dur"


# --- layout: everything that matters on screen, at 80x24 too --------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@run_async
async def test_policy_status_line_is_on_screen(size):
    app = GpuschedApp(make_engine(policy="a-srpt"), paused=True, speed=10.0)
    async with app.run_test(size=size) as pilot:
        for _ in range(2):
            await pilot.press("n")
        f = await app.settle()
        await pilot.pause()
        status = f.extra["status"]
        assert status.startswith("A-SRPT pending")
        line_with(screen_text(app), status)
        panel = app.query_one(MetricsPanel)
        assert panel.region.bottom <= app.query_one("#lists").region.y  # not covered


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 50)])
@run_async
async def test_cluster_takes_only_its_rows_and_lists_the_rest(size):
    app = make_app(trace="synth-500")
    async with app.run_test(size=size) as pilot:
        await pilot.press("n")
        await app.settle()
        await pilot.pause()
        view = app.query_one(ClusterView)
        # default: 4 servers of 8 GPUs, one row each, and no empty rows below them
        assert view.shown_level == "gpu" and len(view._lines) == 4
        assert view.size.height == 4
        queued, running = app.query_one("#queued"), app.query_one("#running")
        assert queued.region.height == running.region.height
        used = app.query_one("#top").region.height + queued.region.height
        assert used == size[1] - 3  # header, event feed, footer


@run_async
async def test_lists_keep_their_columns_at_80x24():
    app = make_app(trace="philly-2000")  # tiresias: the queue shows each job's level
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(40):
            await pilot.press("n")
        f = await app.settle()
        await pilot.pause()
        assert f.n_queued >= 3 and f.running.size >= 3 and f.key_name == "level"
        lines = screen_text(app)
        head = line_with(lines, "waited")
        assert "level" in head and "GPUs" in head
        assert "state" in line_with(lines, "servers")
        for i in range(3):  # the first queued jobs: id, GPUs, waited and level all shown
            j = int(f.queue[i])
            row = line_with(lines, f"{i + 1:>4} ■{app.jobs.job_id[j]} ")
            cells = row.split("│")[1].split()
            assert cells[-2:] == [fmt_s(f.queue_waited[i]), f"{f.queue_key[i]:.0f}"]
        for j in f.running[:3].tolist():
            row = line_with(lines, f"■{app.jobs.job_id[j]} ")
            assert "%" in row and "running" in row


@run_async
async def test_summary_fits_80x24():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.settle()
        await pilot.press("m", "space")
        summary = await wait_summary(app)
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        text = "\n".join(screen_text(app))
        from gpusched.tui.screens.summary import _LABELS

        for key in summary:  # every figure's name and value are on screen
            assert _LABELS[key] in text, key
        for key in ("n_jobs", "n_finished", "avg_jct_s", "makespan_s", "gpu_utilization"):
            assert f"{summary[key]:.6g}" in text, key
        assert "q quit" in text
        box = app.screen.query_one("#summary-box")
        assert box.virtual_size.height <= box.size.height  # nothing to scroll to


# --- quitting mid-run ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "python"])
@run_async
async def test_quit_mid_run_stops_like_until(mode):
    app = make_app(trace="synth-500", mode=mode)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(30):
            await pilot.press("n")
        f = await app.settle()
        await pilot.press("q")  # mid-run: stop there and show the summary
        summary = await wait_summary(app)
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        text = "\n".join(screen_text(app))
        assert "Stopped early" in text and f"{summary['n_unfinished']} of 500" in text
        await pilot.press("q")  # then quit
    assert app.return_value == summary
    assert summary["stopped_at_s"] == f.engine_now
    assert summary["n_unfinished"] == 500 - f.n_finished > 0
    head, res = replay("synth-500", "tiresias", cluster="default", mode=mode, until_s=f.engine_now)
    assert res.stopped_at == f.engine_now
    assert summary.keys() == head.keys()
    assert strip_timing(summary) == strip_timing(head)


def test_run_tui_quit_mid_run_reports_unfinished(tmp_path, monkeypatch):
    """run_tui's summary of a run quit early carries its stop time and the jobs left."""
    import json

    from gpusched.tui import run_tui

    stopped = {}

    def fake_run(self, *args, **kwargs):
        async def drive():
            async with self.run_test(size=(80, 24)) as pilot:
                await pilot.press("space")  # the app starts playing: pause it
                f = await self.settle()
                for _ in range(5):
                    await pilot.press("n")
                f = await self.settle()
                stopped["t"], stopped["done"] = f.engine_now, f.n_finished
                await pilot.press("q")
                await wait_summary(self)
                await pilot.press("q")

        asyncio.run(drive())
        return self.return_value

    monkeypatch.setattr(GpuschedApp, "run", fake_run)
    kw = {"cluster": "default", "params": None, "slot_s": 1.0, "seed": 0}
    kw |= {"until_s": None, "drop_oversized": False, "mode": "auto"}
    summary = run_tui("synth-500", "tiresias", out=tmp_path / "out", **kw)
    assert summary["stopped_at_s"] == stopped["t"]
    assert summary["n_unfinished"] == 500 - stopped["done"] > 0
    head, _ = replay("synth-500", "tiresias", cluster="default", until_s=stopped["t"])
    assert set(summary) == set(head) and head["stopped_at_s"] == stopped["t"]
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["n_unfinished"] == summary["n_unfinished"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["stopped_at_s"] == stopped["t"]


# --- the event feed --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "python"])
@run_async
async def test_event_feed_names_what_a_step_did(mode):
    app = make_app(mode=mode)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        f = await app.settle()
        await pilot.pause()
        started = f.gpu_job[f.gpu_job >= 0]
        assert f.events is not None and started.size
        assert set(f.events.started.tolist()) == set(np.unique(started).tolist())
        line = line_with(screen_text(app), "started")
        assert f"t={f.engine_now:,.0f} s" in line
        first = int(f.events.started[0])
        assert str(app.jobs.job_id[first]) in line
        assert str(app.query_one(EventFeed).render()).startswith(f"t={f.engine_now:,.0f} s")


@pytest.mark.parametrize("mode", ["auto", "python"])
def test_events_match_the_job_states(mode):
    """Step by step, the feed's events are exactly the jobs' state changes, on both paths."""
    engine = make_engine(trace="synth-500", mode=mode)
    drv = Driver(engine, speed=10.0)
    holding = (LOADING, RUNNING, SAVING)
    before = engine.state.job_status.copy()
    n_started = n_preempted = n_finished = 0
    last = None
    while not engine.finished:
        engine.step(1)
        ev = drv.frame().events
        now = engine.state.job_status
        if ev is last:  # the run ended without a decision: nothing changed
            assert engine.finished and (now == before).all()
            continue
        last = ev
        was_on, is_on = np.isin(before, holding), np.isin(now, holding)
        assert ev.n_decisions == 1 and ev.t_to == engine.now
        np.testing.assert_array_equal(ev.started, np.flatnonzero(is_on & ~was_on))
        np.testing.assert_array_equal(
            ev.finished, np.flatnonzero((now == FINISHED) & (before != FINISHED))
        )
        stop = (was_on & ~is_on & (now != FINISHED) & (before != SAVING)) | (
            (now == SAVING) & was_on & (before != SAVING)
        )
        np.testing.assert_array_equal(ev.preempted, np.flatnonzero(stop))
        assert (ev.n_finished, ev.n_preempted) == (ev.finished.size, ev.preempted.size)
        assert ev.n_holding == (int(was_on.sum()), int(is_on.sum()))
        n_started += ev.started.size
        n_preempted += ev.preempted.size
        n_finished += ev.finished.size
        before = now.copy()
    assert n_preempted == int(engine.state.job_n_preempt.sum()) > 0
    assert n_started == 500 + n_preempted and n_finished == 500


def test_event_counts_over_many_decisions_are_exact():
    """Playing, a frame spans many decisions: its counts still add up to the run's."""
    engine = make_engine(trace="synth-500", mode="auto")
    drv = Driver(engine, speed=10.0)
    totals = np.zeros(4, dtype=np.int64)
    last = None
    while not engine.finished:
        engine.step(7)
        ev = drv.frame().events
        if ev is not last:
            last = ev
            totals += (ev.n_decisions, ev.n_arrived, ev.n_finished, ev.n_preempted)
    st = engine.state
    assert totals.tolist() == [
        engine.result().extra["n_decisions"],
        500,
        500,
        int(st.job_n_preempt.sum()),
    ]


# --- snapshots ------------------------------------------------------------------------------------


async def _three_steps(pilot) -> None:
    app = pilot.app
    await app.settle()
    for _ in range(3):
        await pilot.press("n")
    await app.settle()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_snapshot_paused(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=_three_steps)


def test_snapshot_summary(snap_compare):
    async def to_end(pilot) -> None:
        app = pilot.app
        await app.settle()
        await pilot.press("m", "space")
        summary = await wait_summary(app)
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        # wall-clock time differs between runs: show the screen again without it
        app.pop_screen()
        app.push_screen(SummaryScreen({**summary, "wall_s": 0.0}, app.sub_title))
        await pilot.pause()

    app = make_app()
    assert snap_compare(app, terminal_size=(100, 34), run_before=to_end)


def test_snapshot_stopped_summary_80x24(snap_compare):
    async def stop(pilot) -> None:
        app = pilot.app
        await _three_steps(pilot)
        await pilot.press("q")
        summary = await wait_summary(app)
        await pilot.pause()
        app.pop_screen()  # as above: without the wall-clock time
        app.push_screen(SummaryScreen({**summary, "wall_s": 0.0}, app.sub_title))
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=stop)


BAD_POLICY = '''
"""A broken policy for the TUI error-path test."""

import numpy as np

from gpusched.core.policy import Decision, Start


class BadPolicy:
    name = "bad"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        pass

    def decide(self, view, now):
        return Decision(actions=[Start(10**6)])
'''


@run_async
async def test_policy_error_ends_the_app(tmp_path):
    from gpusched.errors import PolicyError

    path = tmp_path / "bad.py"
    path.write_text(BAD_POLICY)
    app = GpuschedApp(make_engine(policy=str(path)), paused=True, speed=10.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.press("n")
        for _ in range(500):
            if app.error is not None:
                break
            await asyncio.sleep(0.01)
    assert isinstance(app.error, PolicyError)
    assert "unknown job index" in str(app.error)


def test_run_tui_writes_results_like_headless(tmp_path, monkeypatch):
    """run_tui end to end, with App.run replaced by a headless Pilot session."""
    import json

    from gpusched.tui import run_tui

    def fake_run(self, *args, **kwargs):
        async def drive():
            async with self.run_test(size=SIZE) as pilot:
                await pilot.press("m")  # the app starts playing; go to max speed
                await wait_summary(self)
                await pilot.press("q")

        asyncio.run(drive())
        return self.return_value

    monkeypatch.setattr(GpuschedApp, "run", fake_run)
    out = tmp_path / "out"
    summary = run_tui(
        "tiny",
        "srtf",
        cluster="testbed-4x4",
        params=None,
        slot_s=1.0,
        seed=0,
        until_s=None,
        drop_oversized=False,
        mode="auto",
        out=out,
    )
    head, _ = replay("tiny", "srtf", cluster="testbed-4x4")
    assert strip_timing(summary) == strip_timing(head)
    written = json.loads((out / "summary.json").read_text())
    assert strip_timing(written) == strip_timing(head)
    assert (out / "jobs.csv").is_file() and (out / "manifest.json").is_file()
