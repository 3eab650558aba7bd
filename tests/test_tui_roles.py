"""The live TUI on runs of jobs placed by roles (parameter-server jobs on the ledger).

A pd-ors workload of 12 jobs on pd-ors-30 (all four resources) under a test policy that
places jobs as fifo-ps does and rejects every third job. The app is started paused and
stepped with ``n`` (see tests/test_tui.py); what the screen shows (per-resource
occupancy, workers and PSs, admitted / rejected / finished / unfinished) is compared with
the engine's ledger and job statuses, and at the end with the headless run.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.core.state import FINISHED, REJECTED
from gpusched.experiments.run import build_engine, replay
from gpusched.io.trace import write_trace
from gpusched.tui.app import GpuschedApp
from gpusched.tui.screens import SummaryScreen
from gpusched.tui.session import Driver
from gpusched.tui.widgets import ClusterView, QueueView, ResourceView
from gpusched.workloads.pd_ors import pd_ors_workload
from tests.test_tui import line_with, run_async, screen_text, strip_timing

SIZE = (120, 40)

POLICY = '''
"""A test policy: fifo-ps's placement, but every third job (by index) is rejected."""

import numpy as np

from gpusched.algorithms.ps_place import ps_for, round_robin
from gpusched.jobmodels.ps import params_of
from gpusched.core.policy import Allocate, Decision, Reject


class RejectThird:
    name = "reject-third"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        self._cursor = 0

    def prepare(self, jobs, cluster) -> None:
        p = params_of(jobs)
        self.n_workers = np.minimum(30, p.batch)
        self.gamma = p.gamma

    def decide(self, view, now):
        led = view.ledger
        free = led.free
        acts = []
        for j in view.queued.tolist():
            if j % 3 == 2:
                acts.append(Reject(j))
                continue
            n_w = int(self.n_workers[j])
            n_s = ps_for(n_w, self.gamma[j])
            got = round_robin(free, led.worker[j], led.ps[j], n_w, n_s, self._cursor)
            if got is None:
                continue
            w, s, self._cursor = got
            free = free - np.outer(w, led.worker[j]) - np.outer(s, led.ps[j])
            acts.append(Allocate(j, w, s))
        return Decision(actions=acts)
'''


@pytest.fixture(scope="module")
def ps_run(tmp_path_factory) -> tuple[str, str]:
    """A 12-job pd-ors trace (horizon 20 slots) and the rejecting policy, as files."""
    d = tmp_path_factory.mktemp("roles")
    trace = d / "ps12.csv"
    write_trace(pd_ors_workload(1, 12, horizon=20), trace)
    policy = d / "reject_third.py"
    policy.write_text(POLICY)
    return str(trace), str(policy)


def make_engine(ps_run, cluster: str = "pd-ors-30"):
    trace, policy = ps_run
    engine, _ = build_engine(trace, policy, cluster=cluster, mode="python")
    return engine


def make_app(ps_run, cluster: str = "pd-ors-30") -> GpuschedApp:
    return GpuschedApp(make_engine(ps_run, cluster), trace_name="ps12.csv", paused=True, speed=1)


def ledger_counts(engine) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The engine's allocation: job -> (workers per machine, PSs per machine)."""
    return {j: (w.copy(), s.copy()) for j, (w, s) in engine.ledger.alloc.items()}


def admission(engine) -> tuple[int, int, int, int]:
    """(admitted, rejected, finished, unfinished) from the engine's job statuses."""
    st = engine.state
    rejected = int((st.job_status == REJECTED).sum())
    finished = int((st.job_status == FINISHED).sum())
    admitted = int((~np.isnan(st.job_first_start)).sum())
    return admitted, rejected, finished, len(engine.jobs) - finished - rejected


def pct(x: float) -> str:
    return f"{100 * x:3.0f}%"


def head_shares(view: ResourceView) -> dict[str, str]:
    """The percentage each cluster-wide bar shows, by resource name (the fixed top rows)."""
    text = " ".join(view.render_line(y).text for y in range(view.head_rows))
    out = {}
    for name in view.res_short if view._head_short else view.res_names:
        out[name] = text.split(f"{name} ", 1)[1].split("%")[0].split()[-1] + "%"
    return out


def check_head(view: ResourceView, engine) -> None:
    """The cluster-wide bars show the share of each resource the ledger holds."""
    used = engine.ledger.used.sum(axis=0)
    cap = engine.ledger.capacity.sum(axis=0)
    want = [pct(u / c).strip() for u, c in zip(used, cap, strict=True)]
    assert list(head_shares(view).values()) == want


# --- the frame: copies of the ledger ------------------------------------------------------------


def test_frame_copies_the_ledger(ps_run):
    engine = make_engine(ps_run)
    drv = Driver(engine, speed=1.0)
    for _ in range(6):
        drv._step(1)  # one decision, one history sample
    f = drv.frame()
    roles = f.roles
    assert roles is not None
    assert f.running.size >= 2 and f.n_rejected >= 1  # the check below has teeth
    led = ledger_counts(engine)
    np.testing.assert_array_equal(roles.used, engine.ledger.used)
    assert roles.used is not engine.ledger.used
    # the allocation, rebuilt from the frame's (job, machine) pairs, is the ledger's
    h = engine.ledger.n_machines
    rebuilt: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for j, m, w, s in zip(
        roles.alloc_job, roles.alloc_machine, roles.alloc_workers, roles.alloc_ps, strict=True
    ):
        got = rebuilt.setdefault(int(j), (np.zeros(h, np.int64), np.zeros(h, np.int64)))
        got[0][m], got[1][m] = w, s
    assert rebuilt.keys() == led.keys()
    for j, (w, s) in led.items():
        np.testing.assert_array_equal(rebuilt[j][0], w)
        np.testing.assert_array_equal(rebuilt[j][1], s)
    # per running job: totals and machines used
    for i, j in enumerate(f.running.tolist()):
        w, s = led[j]
        assert roles.run_workers[i] == w.sum() and roles.run_ps[i] == s.sum()
        assert roles.run_machines[i] == np.count_nonzero((w > 0) | (s > 0))
    admitted, rejected, _finished, unfinished = admission(engine)
    assert (roles.n_admitted, f.n_rejected, f.n_unfinished) == (admitted, rejected, unfinished)
    want = np.flatnonzero(engine.state.job_status == REJECTED)[::-1]
    np.testing.assert_array_equal(f.rejected, want)
    # the frame is a copy: stepping the engine on does not change it
    used, alloc = roles.used.copy(), roles.alloc_workers.copy()
    for _ in range(2):
        drv._step(1)
    assert not np.array_equal(engine.ledger.used, used)
    np.testing.assert_array_equal(roles.used, used)
    np.testing.assert_array_equal(roles.alloc_workers, alloc)
    # history: one cluster-wide sample per decision, the used fraction per resource
    f2 = drv.frame()
    cap = engine.ledger.capacity.sum(axis=0)
    assert f2.roles is not None and f2.roles.hist_used.shape == (8, 4)
    np.testing.assert_array_equal(f2.roles.hist_used[:6], roles.hist_used)
    np.testing.assert_allclose(f2.roles.hist_used[-1], engine.ledger.used.sum(axis=0) / cap)


def test_gpu_runs_have_no_ledger_in_their_frames():
    engine, _ = build_engine("tiny", "tiresias")
    drv = Driver(engine, speed=1.0)
    engine.step(2)
    f = drv.frame()
    assert f.roles is None and f.n_rejected == 0 and f.rejected.size == 0


# --- on screen ------------------------------------------------------------------------------------


async def step_until(app, pilot, done, limit: int = 60):
    """Press ``n`` until ``done(frame)`` holds; return the frame."""
    f = await app.settle()
    for _ in range(limit):
        if done(f):
            await pilot.pause()
            return f
        await pilot.press("n")
        f = await app.settle()
    raise AssertionError("the condition never held")


@run_async
async def test_screen_shows_the_ledger_and_admission(ps_run):
    app = make_app(ps_run)
    async with app.run_test(size=SIZE) as pilot:
        f = await step_until(app, pilot, lambda f: f.running.size >= 3 and f.n_rejected >= 2)
        engine = app.engine  # the worker is paused: the engine is idle
        assert isinstance(app.query_one("#cluster"), ResourceView)
        assert not app.query(ClusterView)
        lines = screen_text(app)
        # cluster-wide bars: the used share of each resource, as the ledger holds it
        view = app.query_one(ResourceView)
        names = list(head_shares(view))
        assert names in (["GPUs", "vCPUs", "memory", "storage"], ["GPU", "CPU", "mem", "sto"])
        check_head(view, engine)
        assert any(line.startswith(f"│{names[0]} ") for line in lines)  # on screen, at the top
        # the metrics: admission counts and workers / PSs, from the engine's statuses
        admitted, rejected, _finished, unfinished = admission(engine)
        assert rejected >= 2
        text = line_with(lines, "admitted")
        assert f"admitted {admitted}  rejected {rejected}  unfinished {unfinished}" in text
        led = ledger_counts(engine)
        n_w = sum(int(w.sum()) for w, _s in led.values())
        n_s = sum(int(s.sum()) for _w, s in led.values())
        assert f"workers {n_w}  PSs {n_s}" in line_with(lines, "workers")
        # the lists: rejected jobs after the queue, running jobs with workers and PSs
        queue = app.query_one("#queued", QueueView)
        assert f"{rejected} rejected" in str(queue.border_title)
        for j in np.flatnonzero(engine.state.job_status == REJECTED).tolist():
            assert "rejected" in line_with(lines, f"rej ■{app.jobs.job_id[j]} ")
        for j in f.running.tolist():
            w, s = led[j]
            cells = line_with(lines, f"■{app.jobs.job_id[j]} ").split("│")[3].split()
            assert cells[1:3] == [str(int(w.sum())), str(int(s.sum()))], cells
        # one machine per row ("z": auto -> machine): each resource's share, per machine
        await pilot.press("z")
        await pilot.pause()
        assert view.shown_level == "machine"
        lines = screen_text(app)
        frac = engine.ledger.used / engine.ledger.capacity
        shown = 0
        for h in range(engine.ledger.n_machines):
            rows = [x for x in lines if x.startswith(f"│m{h} ")]
            if not rows:
                continue
            shown += 1
            got = [c for c in rows[0].split("│")[1].split() if c.endswith("%")]
            assert got == [pct(x).strip() for x in frac[h]], (h, rows[0])
        assert shown >= 3
        # the selected machine's line lists the jobs on it with their workers and PSs
        busy = [h for h in range(engine.ledger.n_machines) if frac[h].any()]
        for _ in range(busy[0]):
            await pilot.press("right")
        await pilot.pause()
        info = str(app.query_one("#server-info").render())
        h = busy[0]
        assert info.startswith(f"machine m{h} ")
        for j, (w, s) in led.items():
            if w[h] or s[h]:
                assert f"{app.jobs.job_id[j]} {w[h]}w+{s[h]}ps" in info


@run_async
async def test_step_to_the_end_matches_headless(ps_run):
    app = make_app(ps_run)
    async with app.run_test(size=SIZE) as pilot:
        events: dict[int, tuple] = {}  # one entry per Events (a frame may repeat the last)
        f = await app.settle()
        for _ in range(60):
            if app.summary is not None:
                break
            await pilot.press("n")
            f = await app.settle()
            await pilot.pause()
            ev = f.events
            if ev is not None and ev.rejected.size and app.summary is None:
                events.setdefault(id(ev), (ev, screen_text(app)))
        summary = app.summary
        assert summary is not None and f.finished
        # each rejection was named in the event feed of its step
        assert sum(ev.rejected.size for ev, _ in events.values()) == summary["n_rejected"] > 0
        for ev, lines in events.values():
            feed = line_with(lines, " t=")  # the event feed, above the footer
            assert "rejected " in feed
            assert all(str(app.jobs.job_id[j]) in feed for j in ev.rejected.tolist()[:3])
        assert isinstance(app.screen, SummaryScreen)
        text = "\n".join(screen_text(app))
        for label in ("admitted", "rejected", "total utility", "vCPU utilisation"):
            assert label in text, label
        await pilot.press("escape")
        await pilot.pause()
        lines = screen_text(app)
        engine = app.engine
        admitted, rejected, finished, unfinished = admission(engine)
        want = (summary["n_admitted"], summary["n_rejected"], summary["n_unfinished"])
        assert want == (admitted, rejected, unfinished)
        assert summary["n_finished"] == finished
        row = line_with(lines, "admitted")
        assert f"admitted {admitted}  rejected {rejected}  unfinished {unfinished}" in row
        assert f"jobs {finished}/12 done" in line_with(lines, "decisions")
        check_head(app.query_one(ResourceView), engine)
        await pilot.press("q")
    trace, policy = ps_run
    head, _ = replay(trace, policy, cluster="pd-ors-30", mode="python")
    assert strip_timing(summary) == strip_timing(head)


# --- 100 machines: the view aggregates to fit, and every level can be chosen ------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 50)])
@run_async
async def test_resource_view_fits_100_machines(ps_run, size):
    app = make_app(ps_run, cluster="pd-ors-100")
    async with app.run_test(size=size) as pilot:
        await step_until(app, pilot, lambda f: f.running.size >= 2)
        view = app.query_one(ResourceView)
        body = view.size.height - view.head_rows
        assert view.shown_level in ("packed", "compact", "group")
        assert len(view._lines) <= max(body, 1) or view.shown_level == "group"
        # the machines drawn are every machine, once (group: every group)
        items = [item for line in view._lines for item, _x in line]
        n = view.n_groups if view.shown_level == "group" else 100
        assert sorted(items) == list(range(n))
        assert view.region.bottom <= app.query_one("#lists").region.y
        seen = set()
        for _ in range(5):  # z cycles auto -> machine -> packed -> compact -> group -> auto
            await pilot.press("z")
            await pilot.pause()
            seen.add(view.shown_level)
        assert seen == {"machine", "packed", "compact", "group"}
        # the cluster-wide bars stay at the top whatever the level, and tell the truth
        check_head(view, app.engine)
        head = view.render_line(0).text
        assert head.startswith("GPU")
        assert any(head[:30] in line for line in screen_text(app))
