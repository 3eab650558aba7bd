"""The event log (replay --events): it rebuilds jobs.csv, costs nothing when off, carries
the policies' reasons, and ``gpusched explain`` tells a hand-checked story from it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from typer.testing import CliRunner

import gpusched.core.events as events_mod
from gpusched.cli import app
from gpusched.core.engine import Engine
from gpusched.core.events import format_gpus, parse_gpus
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, Note, Preempt, Reject, Start
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.errors import PolicyError
from gpusched.io.cluster import ClusterSpec
from gpusched.results.explain import job_story, read_run, stints, worst
from gpusched.results.metrics import write_results
from tests.helpers import GANG_POLICIES, invoke, make_trace, seal
from tests.test_properties import phases, workloads

runner = CliRunner()


def _engine(policy, servers, gpus, rows, slot, mode, ph=None, events=True):
    cluster = ClusterSpec.homogeneous(servers, gpus)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = policy if not isinstance(policy, str) else make_policy(load_policy_class(policy), {}, 0)
    load, save = (None, None) if ph is None else ph
    return Engine(
        jobs, cluster, pol, slot_s=slot, mode=mode, load_s=load, save_s=save, events=events
    )


def _check_rebuilds(res):
    """Starts, preemptions (futile ones too), finishes and GPU-holding time per job, from
    the log alone, equal the state's."""
    ev = res.extra["events"]
    st = res.state
    ids = list(res.jobs.job_id)
    table = {k: [str(x) for x in v] for k, v in ev.items()}
    table["time_s"] = [repr(float(x)) for x in ev["time_s"]]
    assert np.all(np.diff(ev["time_s"]) >= 0), "rows are in time order"
    end = float(ev["time_s"][-1]) if len(ev["time_s"]) else 0.0
    held = dict.fromkeys(ids, 0.0)
    first = {}
    for s in stints(table, end):
        held[s.job] += s.end - s.start
        first.setdefault(s.job, s.start)
    for i, j in enumerate(ids):
        mine = ev["job_id"] == j
        kinds = ev["event"][mine]
        starts = ev["time_s"][mine][kinds == "start"]
        assert starts.size == 0 or starts[0] == st.job_first_start[i]
        assert first.get(j, np.nan) == st.job_first_start[i] or np.isnan(st.job_first_start[i])
        assert (kinds == "preempt").sum() == st.job_n_preempt[i]
        futile = [d.split(";")[0] == "futile" for d in ev["detail"][mine]]
        assert sum(futile) == st.job_n_futile[i]
        fin = ev["time_s"][mine][kinds == "finish"]
        if np.isnan(st.job_finish[i]):
            assert fin.size == 0
        else:
            assert fin.tolist() == [st.job_finish[i]]
            spent = st.job_load_spent_s[i] + st.job_executed[i] + st.job_save_spent_s[i]
            assert held[j] == pytest.approx(spent, rel=1e-9, abs=1e-6)
        assert (kinds == "arrive").sum() == 1


@pytest.mark.parametrize("mode", ["auto", "python"])
@pytest.mark.parametrize("policy", GANG_POLICIES)
@settings(max_examples=15, deadline=None)
@given(w=workloads(), ph=phases())
def test_the_log_rebuilds_starts_preemptions_and_finishes(policy, mode, w, ph):
    servers, gpus, rows, slot = w
    n = len(rows)
    res = _engine(policy, servers, gpus, rows, slot, mode, (ph[0][:n], ph[1][:n])).run()
    _check_rebuilds(res)


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "tiresias"])
@settings(max_examples=20, deadline=None)
@given(w=workloads(), ph=phases())
def test_fused_and_python_paths_log_the_same_events(policy, w, ph):
    servers, gpus, rows, slot = w
    n = len(rows)
    a = _engine(policy, servers, gpus, rows, slot, "fused", (ph[0][:n], ph[1][:n])).run()
    b = _engine(policy, servers, gpus, rows, slot, "python", (ph[0][:n], ph[1][:n])).run()
    for k in a.extra["events"]:
        assert a.extra["events"][k].tolist() == b.extra["events"][k].tolist(), k


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_keeping_the_log_changes_nothing_else(mode):
    rng = np.random.default_rng(3)
    rows = [(float(t), int(g), float(d)) for t, g, d in zip(
        np.cumsum(rng.uniform(0, 20, 300)), rng.choice([1, 2, 4, 8], 300),
        rng.uniform(1, 500, 300), strict=True)]  # fmt: skip
    ph = (np.full(300, 5.0), np.full(300, 3.0))
    a = _engine("srtf", 2, 8, rows, 1.0, mode, ph, events=True).run()
    b = _engine("srtf", 2, 8, rows, 1.0, mode, ph, events=False).run()
    assert "events" not in b.extra
    assert a.state.job_n_preempt.sum() > 0
    for f in ("job_first_start", "job_finish", "job_n_preempt", "job_load_spent_s"):
        assert getattr(a.state, f).tobytes() == getattr(b.state, f).tobytes()
    assert a.timeline["busy_gpus"].tobytes() == b.timeline["busy_gpus"].tobytes()
    assert b.state.ev_t.size == 0


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_small_buffers_are_flushed_without_losing_a_row(monkeypatch, mode):
    """With the buffers just large enough for one decision point, the engine must flush
    often (the fused loop returns to it) and the table must still rebuild every job."""
    real = events_mod.new_log

    def tiny(slots, n_jobs, roles):
        log, _ = real(slots, n_jobs, roles)
        return log, log.room  # room for exactly one decision point

    monkeypatch.setattr("gpusched.core.engine.new_log", tiny)
    rng = np.random.default_rng(5)
    rows = [(float(t), int(g), float(d)) for t, g, d in zip(
        np.cumsum(rng.uniform(0, 5, 400)), rng.choice([1, 2, 4], 400),
        rng.uniform(1, 200, 400), strict=True)]  # fmt: skip
    engine = _engine("srtf", 1, 4, rows, 1.0, mode, (np.full(400, 2.0), np.full(400, 1.0)))
    assert engine.state.ev_t.size < 100
    res = engine.run()
    assert len(engine.events._chunks) > 10
    assert res.state.sim_i[15] == 0  # I_EV_LOST
    _check_rebuilds(res)


class Reasons:
    """Starts j0, then at t=10 preempts it for j1 with reasons; rejects j2; notes j3."""

    name = "reasons"

    def decide(self, view, now):
        acts = []
        q = set(view.queued.tolist())
        if 0 in q and now < 10:
            acts.append(Start(0, reason="first come"))
        if now >= 10 and 1 in q:
            if view.job_status[0] == 3:
                acts.append(Preempt(0, reason="j1 is shorter"))
            acts.append(Start(1, reason="shortest"))
        if 2 in q:
            acts.append(Reject(2, reason="too big to bother"))
        if 3 in q and now < 15:
            acts.append(Note(3, "waits for j1"))
        if now >= 15 and view.free_gpus >= 4:
            if q & {0, 3}:
                acts.append(Start(3) if 3 in q else Start(0))
        return Decision(actions=acts)


def _reasons_run(tmp_path, events=True):
    """The Reasons policy's run, written to ``tmp_path / "run"``: (result, that folder).
    (Not tmp_path itself: a run folder directly in pytest's temporary root would be a run
    inside its parent folder, which other tests expect to hold none.)"""
    rows = [(0.0, 4, 100.0), (10.0, 4, 5.0), (10.0, 4, 1.0), (12.0, 4, 3.0)]
    engine = _engine(Reasons(), 1, 4, rows, 1.0, "python", events=events)
    res = engine.run()
    write_results(res, tmp_path / "run")
    return res, tmp_path / "run"


def test_policy_reasons_reach_the_log_and_explain(tmp_path):
    res, tmp_path = _reasons_run(tmp_path)
    ev = res.extra["events"]
    got = list(zip(ev["time_s"].tolist(), ev["event"].tolist(), ev["job_id"].tolist(),
                   ev["gpus"].tolist(), ev["detail"].tolist(), strict=True))  # fmt: skip
    # hand-checked: j1 starts at 10 and runs 5 s; j2 is rejected; j3 waits with a note until
    # j1 ends at 15 (a decision point); then j3 (3 s, to 18) and j0 (90 s left, to 108)
    assert got[:8] == [
        (0.0, "arrive", "j0", "", ""),
        (0.0, "start", "j0", "0-3", "first come"),
        (10.0, "arrive", "j1", "", ""),
        (10.0, "arrive", "j2", "", ""),
        (10.0, "preempt", "j0", "", "released; j1 is shorter"),
        (10.0, "start", "j1", "0-3", "shortest"),
        (10.0, "reject", "j2", "", "too big to bother"),
        (12.0, "arrive", "j3", "", ""),
    ]
    assert (12.0, "note", "j3", "", "waits for j1") in got
    assert (15.0, "finish", "j1", "", "") in got
    assert got[-4:] == [
        (15.0, "start", "j3", "0-3", ""),
        (18.0, "finish", "j3", "", ""),
        (18.0, "start", "j0", "0-3", ""),
        (108.0, "finish", "j0", "", ""),
    ]
    run = read_run(tmp_path)
    text = "\n".join(job_story(run, "j0"))
    assert "started on GPUs 0-3 after waiting 0s" in text
    assert "why: first come" in text
    assert "preempted after training 10s" in text
    assert "why: j1 is shorter" in text
    assert "its GPUs went to j1 at 10 s" in text
    assert "JCT " in text and "wait " in text
    assert "reject: " not in "\n".join(job_story(run, "j1"))
    assert "no JCT: rejected" in "\n".join(job_story(run, "j2"))


def test_a_reason_must_be_text(tmp_path):
    class Bad:
        name = "bad"

        def decide(self, view, now):
            return Decision(actions=[Start(int(view.queued[0]), reason=5)])

    with pytest.raises(PolicyError, match=r"Start.reason must be a str, got 5"):
        _engine(Bad(), 1, 4, [(0.0, 1, 5.0)], 1.0, "python").run()


def test_explain_cli_story_worst_and_errors(tmp_path):
    _, tmp_path = _reasons_run(tmp_path)
    r = runner.invoke(app, ["explain", str(tmp_path), "j0"])
    assert r.exit_code == 0, r.output
    assert "preempted after training 10s" in r.output
    r = runner.invoke(app, ["explain", str(tmp_path), "--worst", "2"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("  ")]
    assert len(lines) == 2 and lines[0].split()[0] == "j0"  # waited 8 s after its preemption
    assert "lost most to waiting (" in lines[0] and "of its JCT); preempted 1x" in lines[0]
    r = runner.invoke(app, ["explain", str(tmp_path), "j9"])
    assert r.exit_code == 2 and "no job 'j9'" in r.output
    r = runner.invoke(app, ["explain", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a folder" in r.output
    r = runner.invoke(app, ["explain", str(tmp_path), "--worst", "0"])
    assert r.exit_code == 2 and "--worst must be" in r.output


def test_explain_without_a_log_says_how_to_get_one(tmp_path):
    _, tmp_path = _reasons_run(tmp_path, events=False)
    text = "\n".join(job_story(read_run(tmp_path), "j0"))
    assert "run replay with --events" in text
    assert worst(read_run(tmp_path), 1)[0].startswith("j0")


def test_replay_events_needs_out_and_writes_the_file(tmp_path):
    r = runner.invoke(app, ["replay", "tiny", "--events"])
    assert r.exit_code == 2 and "give --out DIR" in r.output
    r = runner.invoke(app, ["replay", "tiny", "--events", "-o", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    head = (tmp_path / "r" / "events.csv").read_text().splitlines()[0]
    assert head == "time_s,event,job_id,gpus,detail"


@pytest.mark.parametrize(
    "gpus, text", [([3], "3"), ([0, 1, 2, 3, 8], "0-3 8"), ([9, 4, 5], "4-5 9"), ([], "")]
)
def test_gpu_ranges_round_trip(gpus, text):
    assert format_gpus(gpus) == text
    assert parse_gpus(text) == sorted(gpus)


def test_gantt_text_draws_the_hand_schedule(tmp_path):
    from gpusched.results.gantt import gantt_text

    _, tmp_path = _reasons_run(tmp_path)
    text = gantt_text(read_run(tmp_path), width=120)
    rows = [x for x in text.splitlines() if x.lstrip().startswith("GPU")]
    assert len(rows) == 4
    bar = rows[0].split("|")[1]
    # 0-10 s: j0 (A), 10-15 s: j1 (B), 15-18 s: j3 (C), 18-108 s: j0 again, idle never
    n = len(bar)
    assert bar[0] == "A" and bar[int(12 / 108 * n)] == "B" and bar[int(16.5 / 108 * n)] == "C"
    assert bar[-1] == "A" and " " not in bar
    assert "A=j0" in text and "B=j1" in text and "C=j3" in text


def test_gantt_aggregates_large_clusters_and_marks_sharing(tmp_path):
    from gpusched.results.explain import Run
    from gpusched.results.gantt import busy_grid, gantt, gantt_text, shared

    def run_of(servers, gpus, rows, cap=1):
        man = {"policy": "p", "cluster": {"servers": [{"count": servers, "gpus": gpus}]}}
        ev = {k: [] for k in ("time_s", "event", "job_id", "gpus", "detail")}
        for t, e, j, g in rows:
            for k, v in zip(ev, (str(t), e, j, g, ""), strict=True):
                ev[k].append(v)
        return Run(tmp_path, {}, ev, man)

    # 60 servers x 8 GPUs: rows are pairs of servers; a job on server 0's 8 GPUs for the
    # first half of the run fills half of row 0
    big = run_of(60, 8, [(0, "start", "a", "0-7"), (50, "finish", "a", ""),
                         (50, "start", "b", "8-15"), (100, "finish", "b", "")])  # fmt: skip
    text = gantt_text(big, width=60)
    assert "servers 0-1 |" in text and "GPU" not in text.split("\n", 1)[1]
    g = gantt(big)
    grid = busy_grid(g, g.gpu_server // 2, np.full(30, 16.0), np.array([0.0, 50.0, 100.0]))
    assert grid[0].tolist() == [0.5, 0.5] and grid[1:].sum() == 0
    # two jobs on GPU 1 from 5 to 8 s
    two = run_of(1, 2, [(0, "start", "a", "0-1"), (5, "start", "b", "1"),
                        (8, "finish", "b", ""), (10, "finish", "a", "")])  # fmt: skip
    assert shared(gantt(two)) == [(1, 5.0, 8.0)]
    assert "#" in gantt_text(two, width=40).splitlines()[2]


def test_gantt_png_and_cli_errors(tmp_path):
    _, tmp_path = _reasons_run(tmp_path)
    png = tmp_path / "g.png"
    r = runner.invoke(app, ["plot", str(tmp_path), "--gantt", "--save", str(png)])
    assert r.exit_code == 0, r.output
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 800 <= width <= 2000 and 200 <= height <= 1500
    r = runner.invoke(app, ["plot", str(tmp_path), str(tmp_path), "--gantt"])
    assert r.exit_code == 2 and "--gantt draws one run folder" in r.output
    (tmp_path / "events.csv").unlink()  # the manifest records it: the folder is incomplete
    r = runner.invoke(app, ["plot", str(tmp_path), "--gantt"])
    assert r.exit_code == 2 and "events.csv: missing" in r.output and "incomplete" in r.output
    seal(tmp_path)  # a run without the event log
    r = runner.invoke(app, ["plot", str(tmp_path), "--gantt"])
    assert r.exit_code == 2 and "needs the event log" in r.output


def test_share_rows_add_up_to_each_jobs_shared_time(tmp_path):
    """On a GPU-sharing cluster, the union of each job's share..unshare stretches is its
    shared_s in jobs.csv (no load times here, so sharing is training with a partner)."""
    import csv

    w, out = tmp_path / "w.csv", tmp_path / "r"
    assert (
        runner.invoke(
            app, ["workload", "sjf-bsbf-testbed", "--seed", "1", "--restart-s", "0", "-o", str(w)]
        ).exit_code
        == 0
    )
    r = runner.invoke(
        app, ["replay", str(w), "-P", "sjf-bsbf", "-c", "testbed-4x4", "-o", str(out), "--events"]
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader((out / "events.csv").open()))
    shared = {x["job_id"]: float(x["shared_s"]) for x in csv.DictReader((out / "jobs.csv").open())}
    assert sum(v > 0 for v in shared.values()) >= 5
    opened, spans = {}, {j: [] for j in shared}
    for x in rows:
        key = (x["job_id"], x["detail"], x["gpus"])
        if x["event"] == "share":
            opened[key] = float(x["time_s"])
        elif x["event"] == "unshare":
            spans[x["job_id"]].append((opened.pop(key), float(x["time_s"])))
    assert not opened
    for j, s in spans.items():
        total, cur = 0.0, None
        for a, b in sorted(s):
            if cur is None or a > cur[1]:
                total += 0.0 if cur is None else cur[1] - cur[0]
                cur = [a, b]
            else:
                cur[1] = max(cur[1], b)
        total += 0.0 if cur is None else cur[1] - cur[0]
        assert total == pytest.approx(shared[j], rel=1e-9, abs=1e-6), j
    story = "\n".join(job_story(read_run(out), next(j for j, v in shared.items() if v > 0)))
    assert "shares GPU" in story and "stops sharing GPU" in story


def test_gantt_of_a_role_run_says_why_there_is_none(tmp_path):
    out = tmp_path / "r"
    r = runner.invoke(
        app, ["replay", "ps-20", "-c", "pd-ors-30", "-P", "fifo-ps", "-o", str(out), "--events"]
    )
    assert r.exit_code == 0, r.output
    assert ",allocate," in (out / "events.csv").read_text()
    r = runner.invoke(app, ["plot", str(out), "--gantt"])
    assert r.exit_code == 2 and "hold no GPU indices" in r.output


@pytest.mark.parametrize(
    "name, text, needle",
    [
        ("events.csv", "time_s,event,job_id,gpus,detail\nsoon,start,j0,0,\n",
         "events.csv:2: column 'time_s': expected a number of seconds, got 'soon'"),
        ("events.csv", b"time_s,event\xff\n", "not a text (UTF-8) CSV file"),
        ("events.csv", "time_s,event\n1,start\n", ":1: missing column(s) job_id, gpus, detail"),
        ("manifest.json", "{not json", "manifest.json:1: not a JSON manifest"),
        ("jobs.csv", "job_id,submit,jct,wait_s\nj0,0,x,1\n",
         "jobs.csv:2: column 'jct': expected a number of seconds >= 0, or empty, got 'x'"),
        ("events.csv", "time_s,event,job_id,gpus,detail\n0,start,j0,abc,\n",
         "events.csv:2: column 'gpus': expected GPU indices 0 to 3 as ranges (e.g. '0-3 8'), "
         "got 'abc'"),
        ("events.csv", "time_s,event,job_id,gpus,detail\n0,start,j0,0-2000000000,\n",
         "events.csv:2: column 'gpus': expected GPU indices 0 to 3"),
        ("events.csv", "time_s,event,job_id,gpus,detail\n0,start,j0,3-1,\n",
         "events.csv:2: column 'gpus': expected GPU indices"),
        ("events.csv", "time_s,event,job_id,gpus,detail\n0,begin,j0,0,\n",
         "events.csv:2: column 'event': expected one of arrive, start,"),
        ("events.csv", "time_s,event,job_id,gpus,detail\n5,start,j0,0,\n1,finish,j0,,\n",
         "events.csv:3: column 'time_s': expected a time >= the row before's (5.0), got '1'"),
        ("jobs.csv", "job_id,submit,jct,wait_s,duration\nj0,0,1,1,abc\n",
         "jobs.csv:2: column 'duration': expected a number of seconds, or empty, got 'abc'"),
        ("jobs.csv", "job_id,submit,jct,wait_s,gpus\nj0,0,1,1,2.5\n",
         "jobs.csv:2: column 'gpus': expected a whole number >= 0, got '2.5'"),
        ("jobs.csv", "job_id,submit,jct,wait_s\nj0,0,1,1\nj0,1,1,1\n",
         "jobs.csv:3: column 'job_id': expected each job once, got 'j0'"),
    ],
)  # fmt: skip
def test_explain_refuses_damaged_run_files_in_one_line(tmp_path, name, text, needle):
    """Every field explain and plot --gantt parse is checked (here in a folder whose
    manifest records the damaged tables, so that the checks of the fields are what is hit)."""
    _, folder = _reasons_run(tmp_path)
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if name != "manifest.json":
        seal(folder)
    for args in (["explain", str(folder), "j0"], ["plot", str(folder), "--gantt"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert needle in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("name", ["jobs.csv", "events.csv"])
def test_a_table_cut_at_a_line_end_is_refused_by_every_reader(tmp_path, name):
    """A table cut short at a line boundary parses as valid CSV: the manifest's record of
    it (rows and SHA-256) is what tells it is incomplete (issue 27: explain printed a job
    without its preemptions, plot --gantt a shorter run, diff a partial comparison)."""
    _, folder = _reasons_run(tmp_path)
    path = folder / name
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))
    commands = [["explain", str(folder), "j0"], ["explain", str(folder), "--worst", "3"]]
    commands.append(["plot", str(folder), "--gantt"])
    if name == "jobs.csv":  # the tables plot and diff read
        commands += [["diff", str(folder), str(folder)], ["plot", str(folder)]]
    for args in commands:
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert f"{name}: differs from the table manifest.json records" in r.output, r.output
        assert "cut short, or changed after the run" in r.output


def test_a_table_written_by_another_run_is_refused(tmp_path):
    """Tables of two runs mixed in one folder (what writing in place used to leave):
    the manifest of one does not vouch for the other's table."""
    _, folder = _reasons_run(tmp_path)
    other = tmp_path / "other"
    write_results(
        _engine("fifo", 1, 4, [(0.0, 4, 100.0), (10.0, 4, 5.0)], 1.0, "python").run(), other
    )
    (folder / "events.csv").write_bytes((other / "events.csv").read_bytes())
    r = runner.invoke(app, ["explain", str(folder), "j0"])
    assert r.exit_code == 2 and "events.csv: differs from the table" in r.output


def test_explain_reads_the_config_rows_an_elastic_run_writes(tmp_path):
    """The engine logs ``config`` rows (Pollux's batch sizes); explain refused its own log."""
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,iterations,model,batch_size,goodput\n"
        "cifar10-0,107,6,2436.6726341735875,cifar10,342,1\n"
        "ncf-2,135,1,1516.984375,ncf,32768,1\n"
    )
    out = tmp_path / "r"
    args = ["replay", str(trace), "-c", "pollux-16x4", "-P", "pollux", "--events", "-o"]
    r = runner.invoke(app, [*args, str(out)])
    assert r.exit_code == 0, r.output
    assert ",config,cifar10-0," in (out / "events.csv").read_text()
    r = runner.invoke(app, ["explain", str(out), "cifar10-0"])
    assert r.exit_code == 0, r.output
    assert "configured: batch " in r.output
    r = runner.invoke(app, ["explain", str(out), "--worst", "2"])
    assert r.exit_code == 0, r.output


def test_a_run_cut_by_until_holds_its_gpus_to_the_stop_in_gantt_and_explain(tmp_path):
    """Jobs still running at --until ended at the last event in the Gantt chart (0 to
    1m40s of a run stopped at 150 s) and explain."""
    from gpusched.results.gantt import gantt

    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration\n" + "".join(f"j{i},0,4,100\n" for i in range(16))
    )
    out = tmp_path / "r"
    r = invoke("replay", trace, "-P", "srtf", "--until", "150", "-o", out, "--events")
    assert r.exit_code == 0, r.output
    run = read_run(out)
    g = gantt(run)
    assert g.end_s == 150.0
    late = [b for b, j in zip(g.t1, g.job, strict=True) if g.jobs[j] == "j8"]
    assert late and max(late) == 150.0
    story = "\n".join(job_story(run, "j8"))
    assert "still running when the run ended" in story


def test_explain_says_a_job_would_arrive_after_a_cut_run_ended(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,100,1,10\n")
    out = tmp_path / "r"
    assert invoke("replay", trace, "--until", "50", "-o", out).exit_code == 0
    story = "\n".join(job_story(read_run(out), "b"))
    assert "100 s  would arrive, after the run ended at 50 s" in story, story
