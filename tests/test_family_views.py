"""What each family shows, tried as a new user would (issue 27, part 5): one utilisation
figure per resource, sharing in Gantt charts, the TUI at 80x24, notes instead of silence,
units and number formats, progress, and did-you-mean."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from gpusched.experiments.run import compare
from tests.helpers import invoke, one_line_error

# --- PD-ORS: one utilisation figure per resource --------------------------------------------


@pytest.fixture(scope="module")
def ps_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ps") / "run"
    r = invoke("replay", "ps-20", "-c", "pd-ors-30", "-P", "pd-ors", "-o", out, "--events")
    assert r.exit_code == 0, r.output
    return out


def test_role_runs_have_one_gpu_utilisation_everywhere(ps_run):
    """summary.json said 0.0 (GPU indices: none), compare 0.2115 (the ledger's), the TUI
    both: now gpu_utilization is the GPU-time held on the ledger, in every place."""
    summary = json.loads((ps_run / "summary.json").read_text())
    assert "utilization_gpus" not in summary
    util = summary["gpu_utilization"]
    assert util > 0
    # from the timeline: GPUs held on the ledger, integrated over the makespan
    with (ps_run / "timeline.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    t = np.array([float(r["time_s"]) for r in rows])
    held = np.array([float(r["held_gpus"]) for r in rows])
    manifest = json.loads((ps_run / "manifest.json").read_text())
    n_gpus = sum(g["count"] * g["gpus"] for g in manifest["cluster"]["servers"])
    integral = float((held[:-1] * np.diff(t)).sum())
    # the timeline samples the ledger at decision points (a job releases its share at its
    # exact completion, inside a slot): the same figure up to that sampling
    assert util == pytest.approx(integral / (n_gpus * summary["makespan_s"]), rel=0.05)
    for other in ("utilization_cpus", "utilization_mem_gb"):
        assert other in summary
    rows = compare("ps-20", ["pd-ors"], cluster="pd-ors-30")
    assert rows[0]["gpu_utilization"] == pytest.approx(util)
    r = invoke("compare", "ps-20", "-c", "pd-ors-30", "-P", "pd-ors")
    head, _, body = r.output.splitlines()[-3:]
    names, values = re.split(r"\s{2,}", head.strip()), re.split(r"\s{2,}", body.strip())
    cells = dict(zip(names, values, strict=True))
    assert float(cells["GPU util"]) == pytest.approx(util, rel=1e-3)


def test_the_utilisation_plot_of_a_role_run_is_not_flat_zero(ps_run):
    from gpusched.results.plot import _load_run

    run = _load_run(ps_run)
    assert run.kind == "roles" and run.busy.max() > 0


def test_the_tui_end_screen_names_one_gpu_figure():
    from gpusched.tui.screens.summary import _LABELS, _value

    assert "utilization_gpus" not in _LABELS
    raw, readable = _value("total_jct_s", 4267670.123)
    assert raw == "4,267,670" and "e+" not in raw and readable == "49d09h"
    assert _value("futile_gpu_s", 7200.0) == ("7,200", "2 GPU-h")
    assert _value("n_decisions", 908238) == ("908,238", "")


# --- edge-cloud: what the queue plot counts -------------------------------------------------


def test_edge_cloud_plots_say_chunks_and_edge_workers(tmp_path):
    out = tmp_path / "ec"
    assert (
        invoke("replay", "ec-30", "-c", "edge-cloud-testbed", "-P", "a-online", "-o", out).exit_code
        == 0
    )
    r = invoke("plot", out)
    assert r.exit_code == 0, r.output
    assert "queued chunks" in r.output and "queued jobs" not in r.output
    assert "busy edge workers / edge workers" in r.output
    from gpusched.results.plot import _load_run

    run = _load_run(out)
    summary = json.loads((out / "summary.json").read_text())
    assert run.n_gpus == 24  # the edge's workers, not the cloud's
    assert run.busy.max() <= 24 and summary["gpu_utilization"] > 0


# --- Gantt charts of sharing runs -----------------------------------------------------------


@pytest.fixture(scope="module")
def sharing_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("share")
    w = root / "w.csv"
    assert invoke("workload", "sjf-bsbf", "--jobs", "120", "--seed", "1", "-o", w).exit_code == 0
    out = root / "run"
    r = invoke("replay", w, "-c", "sjf-bsbf-16x4", "-P", "sjf-bsbf", "-o", out, "--events")
    assert r.exit_code == 0, r.output
    assert ",share," in (out / "events.csv").read_text()
    return out


def test_two_jobs_on_one_gpu_are_drawn_apart(sharing_run):
    from gpusched.results.explain import read_run
    from gpusched.results.gantt import _lanes, gantt, shared

    g = gantt(read_run(sharing_run))
    stretches = shared(g)
    assert stretches
    lane, lanes = _lanes(g)
    y0 = g.rows - 0.4 + lane * 0.8 / lanes
    y1 = y0 + 0.8 / lanes
    for gpu, a, b in stretches[:50]:  # the segments holding that GPU then: apart on the row
        on = np.flatnonzero((g.rows == gpu) & (g.t0 < b) & (g.t1 > a))
        jobs = {int(g.job[i]) for i in on}
        assert len(jobs) >= 2
        for i in on:
            for k in on:
                if g.job[i] != g.job[k]:
                    assert y1[i] <= y0[k] or y1[k] <= y0[i]
    alone = ~np.isin(np.arange(g.rows.size), [i for gpu, a, b in stretches for i in
                     np.flatnonzero((g.rows == gpu) & (g.t0 < b) & (g.t1 > a))])  # fmt: skip
    assert (lanes[alone] == 1).any()  # a job alone on its GPU keeps the whole row


def test_sharing_is_in_the_legend_and_in_the_terminal_view_of_64_gpus(sharing_run, tmp_path):
    from gpusched.results.explain import read_run
    from gpusched.results.gantt import SHARED_MARK, gantt_figure

    run = read_run(sharing_run)
    fig = gantt_figure(run)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("shared" in x for x in labels)
    r = invoke("plot", sharing_run, "--gantt")
    assert r.exit_code == 0, r.output
    rows = [x for x in r.output.splitlines() if x.lstrip().startswith("server ")]
    assert len(rows) == 16  # 64 GPUs: one row per server
    assert any(SHARED_MARK in x.split("|")[1] for x in rows)
    assert f"'{SHARED_MARK}' a GPU of the row holds two jobs (shared)" in r.output


# --- the TUI at 80x24 --------------------------------------------------------------------------


def test_tui_at_80x24_keeps_ids_help_and_quit(tmp_path):
    import asyncio

    from gpusched.tui.app import GpuschedApp
    from gpusched.tui.widgets import QueueView
    from tests.test_tui import make_engine, screen_text

    w = tmp_path / "w.csv"
    assert invoke("workload", "sjf-bsbf", "--jobs", "120", "--seed", "1", "-o", w).exit_code == 0

    async def go(trace: str, policy: str, cluster: str, steps: int) -> None:
        engine = make_engine(trace, policy, cluster)
        app = GpuschedApp(engine, trace_name=trace, paused=True, speed=10.0)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.settle()
            for _ in range(steps):
                await pilot.press("n")
            f = await app.settle()
            await pilot.pause()
            lines = screen_text(app)
            footer = lines[-1]
            assert "? help" in footer and "q quit" in footer, footer
            view = app.query_one("#running", QueueView)
            ids = (
                [str(app.tasks.job_id[j]) for j in f.tasks.running_jobs]
                if f.tasks is not None
                else [str(app.jobs.job_id[j]) for j in f.running]
            )
            assert ids
            shown = [
                x.split("│")[-2].split("■")[1].split()[0]
                for x in lines
                if x.count("■") and "│■" in x
            ]
            assert shown, "\n".join(lines)
            for text in shown:  # whole, or cut from the left keeping the id's end
                assert any(text == i or (text[0] == "…" and i.endswith(text[1:])) for i in ids)
                assert len(text.lstrip("…")) >= 6, text
            assert view.id_w >= 7

    asyncio.run(go(str(w), "sjf-bsbf", "sjf-bsbf-16x4", 30))
    asyncio.run(go("ec-30", "a-online", "edge-cloud-testbed", 8))


def test_fit_id_keeps_the_distinctive_end():
    from gpusched.tui.widgets.queue_view import fit_id

    assert fit_id("bert-5", 8) == "bert-5  "
    assert fit_id("ec-testbed-07", 8) == "…tbed-07"
    assert len(fit_id("x" * 40, 10)) == 10


# --- notes instead of silence, clear messages ---------------------------------------------


def test_load_and_save_options_say_when_the_trace_wins(tmp_path):
    w = tmp_path / "e.csv"
    assert invoke("workload", "lazer-earth", "--jobs", "30", "--seed", "1", "-o", w).exit_code == 0
    r = invoke("replay", w, "-c", "lazer-testbed", "-P", "srtf", "--load-s", "30", "--save-s", "5")
    assert r.exit_code == 0, r.output
    assert (
        "note: the trace's load_s column gives 30 of 30 jobs their own load_s, which wins over "
        "--load-s 30: it applies to none"
    ) in r.output
    assert "which wins over --save-s 5" in r.output
    # the same with no option given: nothing to say
    r = invoke("replay", w, "-c", "lazer-testbed", "-P", "srtf")
    assert "wins over" not in r.output
    # a trace without the columns: the option applies to every job, without a note
    r = invoke("replay", "tiny", "-P", "srtf", "--load-s", "30")
    assert r.exit_code == 0 and "wins over" not in r.output


def test_a_sharing_trace_without_batch_size_says_so(tmp_path):
    w = tmp_path / "w.csv"
    assert invoke("workload", "sjf-bsbf", "--jobs", "20", "-o", w).exit_code == 0
    rows = list(csv.DictReader(w.open()))
    cut = tmp_path / "nobatch.csv"
    with cut.open("w", newline="") as fh:
        names = [c for c in rows[0] if c != "batch_size"]
        out = csv.DictWriter(fh, fieldnames=names, extrasaction="ignore")
        out.writeheader()
        out.writerows(rows)
    r = invoke("replay", cut, "-c", "sjf-bsbf-16x4", "-P", "sjf-bsbf", "-o", tmp_path / "r")
    assert r.exit_code == 0, r.output
    assert "has no batch_size column for 20 job(s)" in r.output
    assert "default per-GPU batch" in r.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert any("batch_size" in n for n in manifest["notes"])
    r = invoke("replay", w, "-c", "sjf-bsbf-16x4", "-P", "sjf-bsbf")
    assert "batch_size" not in r.output


def test_an_edge_cloud_trace_without_chunks_is_told_so(tmp_path):
    from gpusched.io.resources import resolve_trace

    rows = list(csv.DictReader(resolve_trace("ec-30").open()))
    cut = tmp_path / "nochunks.csv"
    with cut.open("w", newline="") as fh:
        out = csv.DictWriter(
            fh, fieldnames=[c for c in rows[0] if c != "chunks"], extrasaction="ignore"
        )
        out.writeheader()
        out.writerows(rows)
    one_line_error(
        invoke("replay", cut, "-c", "edge-cloud-testbed", "-P", "a-online"),
        "runs jobs made of data chunks",
        "no 'chunks' column",
    )


# --- explain: units of slot-based families, rejections ----------------------------------


def test_explain_tells_slot_based_runs_in_slots_and_why_a_job_was_rejected(ps_run):
    r = invoke("explain", ps_run, "--worst", "3")
    assert r.exit_code == 0, r.output
    assert " slots" in r.output and "m" not in r.output.split("JCT")[1].split("wait")[0]
    rejected = next(
        x["job_id"]
        for x in csv.DictReader((ps_run / "jobs.csv").open())
        if x["status"] == "rejected"
    )
    r = invoke("explain", ps_run, rejected)
    assert r.exit_code == 0, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("  no JCT: rejected by the policy at slot ")
    assert "when the run ended" not in r.output
    assert ": " in last.split(" at slot ")[1]  # the policy's reason
    assert "slot " in r.output.splitlines()[1]  # "slot 3  arrived"


def test_explain_worst_counts_the_jobs_it_lists(tmp_path):
    out = tmp_path / "r"
    assert invoke("replay", "tiny", "-P", "fifo", "-o", out).exit_code == 0
    r = invoke("explain", out, "--worst", "30")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("the 6 jobs that lost the most time")
    assert "(30 asked; only 6 have a JCT)" in r.output
    assert len(r.output.strip().splitlines()) == 7


# --- number formats, progress ---------------------------------------------------------------


def test_table_columns_read_alike(capsys):
    from gpusched.cli._common import print_table

    print_table(
        [
            {"policy": "a", "n_finished": 908238, "avg_jct_s": 21798.31, "makespan_s": 1.5},
            {"policy": "b", "n_finished": 12, "avg_jct_s": 279566.4, "makespan_s": 2.25},
        ],
        "policy",
    )
    out = capsys.readouterr().out.splitlines()
    a, b = out[2].split(), out[3].split()
    assert a[1] == "908,238" and b[1] == "12"
    assert a[2] == "21,798" and b[2] == "279,566"  # one format for the column
    assert a[6] == "1.5" and b[6] == "2.2"


def test_compare_reports_progress_of_each_run():
    seen: list[tuple[float, int, int]] = []
    compare("tiny", ["fifo", "srtf"], job_progress=lambda *a: seen.append(a))
    assert seen and seen[-1][1] == seen[-1][2] == 6


def test_compare_shows_a_progress_bar_on_a_terminal(monkeypatch):
    import gpusched.cli.replay as cli_replay
    from gpusched.cli._common import Progress

    calls: list[str] = []

    class Shown(Progress):
        def __init__(self, label: str, enabled: bool | None = None) -> None:
            super().__init__(label, enabled=True)
            self.t0 -= 10  # past the one-second delay

        def show(self, text: str) -> None:
            calls.append(text)

    monkeypatch.setattr(cli_replay, "Progress", Shown)
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf")
    assert r.exit_code == 0, r.output
    assert any("6/6 jobs" in c for c in calls)


# --- did you mean -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["replay", "tiny", "-c", "philly64x8"], "(did you mean 'philly-64x8'?)"),
        (["workload", "a-srtp", "-o", "x.csv"], "(did you mean 'a-srpt'?)"),
        (["replay", "tiny", "-P", "SJF"], "(did you mean 'sjf'?)"),
        (["workload", "pd-ors", "--arrivals", "Philly", "-o", "x.csv"], "(did you mean 'philly'?)"),
        (
            ["trace", "import", "philly-polux", "tiny", "-o", "x.csv"],
            "did you mean 'philly-pollux'",
        ),
    ],
)
def test_did_you_mean(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    if args[0] == "trace":
        (tmp_path / "tiny").write_text("x\n")
    one_line_error(invoke(*args), needle)


def test_a_trace_column_guess_reads_the_right_way(tmp_path):
    """It said "did you mean 'submit' for 'submit_time'?": the header's name is the one to
    rename."""
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit,gpus,duration\nj0,0,1,5\n")
    line = one_line_error(invoke("replay", path))
    assert "rename 'submit' as 'submit_time', 'gpus' as 'num_gpus'?" in line
    assert "did you mean 'submit'" not in line


def test_docs_say_when_a_block_runs_from_the_repository_root():
    root = Path(__file__).resolve().parents[1]
    for name in ("README.md", "docs/cli.md", "docs/sweeps.md", "docs/benchmarks.md"):
        text = (root / name).read_text()
        for block in re.findall(r"```(?:bash|console)\n(.*?)```", text, flags=re.S):
            if re.search(r"(?<![\w/])(examples|bench)/", block):
                before = text[: text.index(block)]
                assert "repository root" in before, (name, block[:60])
