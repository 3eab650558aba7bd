"""The command line: outputs, one-line errors with non-zero exit for every bad input, wiring."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from tests.helpers import invoke, one_line_error

runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


GOOD = "job_id,submit_time,num_gpus,duration\na,0,1,10\nb,5,2,20\nc,6,4,5\n"


def test_replay_default_writes_all_outputs(tmp_path):
    out = tmp_path / "run"
    r = invoke("replay", "--policy", "srtf", "--out", out)
    assert r.exit_code == 0, r.output
    assert "philly-2000" in r.output and "srtf" in r.output
    for name in ("jobs.csv", "timeline.csv", "summary.json", "manifest.json"):
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "n_jobs",
        "n_finished",
        "avg_jct_s",
        "p50_jct_s",
        "p95_jct_s",
        "p99_jct_s",
        "avg_wait_s",
        "p50_wait_s",
        "p95_wait_s",
        "total_jct_s",
        "makespan_s",
        "gpu_utilization",
        "n_preemptions",
        "wall_s",
    ):
        assert key in summary
    assert summary["n_jobs"] == summary["n_finished"] == 2000
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["trace_sha256"]) == 64 and manifest["policy"] == "srtf"
    assert manifest["cluster"]["cluster"]["name"] == "default"
    with (out / "jobs.csv").open() as fh:
        header = next(csv.reader(fh))
    assert header[:8] == [
        "job_id",
        "submit",
        "first_start",
        "finish",
        "jct",
        "wait_s",
        "gpus",
        "duration",
    ]


def test_replay_is_deterministic(tmp_path):
    for d in ("a", "b"):
        assert (
            invoke("replay", "tiny", "-P", "tiresias", "--seed", "7", "-o", tmp_path / d).exit_code
            == 0
        )
    assert (tmp_path / "a/jobs.csv").read_bytes() == (tmp_path / "b/jobs.csv").read_bytes()


def test_replay_passes_arguments_through(monkeypatch):
    seen = {}

    def fake_replay(trace, policy, **kw):
        seen.update(trace=trace, policy=policy, **kw)
        raise SystemExit(0)

    monkeypatch.setattr("gpusched.experiments.run.replay", fake_replay)
    invoke(
        "replay",
        "t.csv",
        "-P",
        "srtf",
        "-c",
        "testbed-4x4",
        "--slot",
        "60",
        "--seed",
        "3",
        "-p",
        "a=1",
        "--until",
        "100",
        "--drop-oversized",
        "--engine",
        "python",
    )
    assert (
        seen["trace"] == "t.csv" and seen["policy"] == "srtf" and seen["cluster"] == "testbed-4x4"
    )
    assert seen["slot_s"] == 60 and seen["seed"] == 3 and seen["params"] == ["a=1"]
    assert seen["until_s"] == 100 and seen["drop_oversized"] and seen["mode"] == "python"


def test_compare_writes_one_table(tmp_path):
    out = tmp_path / "cmp"
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "fifo:backfill=true", "-P", "srtf", "-o", out)
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [row["policy"] for row in rows] == ["fifo", "fifo:backfill=true", "srtf"]
    assert "avg_jct_s" in rows[0]
    assert "fifo:backfill=true" in r.output


def test_a_policys_notes_are_printed_under_its_label():
    # one node is too few for some of Dorm's MILPs on ps-20: the run says so in a note
    on_ps20 = ("ps-20", "-c", "pd-ors-30")
    r = invoke("replay", *on_ps20, "-P", "dorm", "-p", "node_limit=1")
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if line.startswith("note: dorm: ")]
    assert len(said) == 1 and "MILPs stopped at node_limit (1) before HiGHS" in said[0]
    r = invoke("replay", *on_ps20, "-P", "dorm")
    assert r.exit_code == 0 and "note: dorm: " not in r.output, r.output
    # compare: every run's notes under the table, each by its row's label
    runs = ["dorm:node_limit=1,max_adjust=3", "fifo-ps", "dorm:node_limit=1", "dorm"]
    r = invoke("compare", *on_ps20, *(arg for run in runs for arg in ("-P", run)))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    table = next(i for i, line in enumerate(lines) if line.startswith("policy "))
    notes = [line for line in lines if line.startswith("note: dorm")]
    assert [n.split(": ")[1] for n in notes] == [runs[0], runs[2]]
    assert all(lines.index(n) > table for n in notes)
    assert all("MILPs stopped at node_limit (1) before HiGHS" in n for n in notes)


def test_user_policy_file(tmp_path):
    src = Path(__file__).parent.parent / "policies" / "fifo.py"
    mine = write(tmp_path / "mine.py", src.read_text().replace('name = "fifo"', 'name = "mine"'))
    r = invoke("replay", "tiny", "-P", mine)
    assert r.exit_code == 0, r.output


def test_policies_and_clusters_lists():
    r = invoke("policies")
    assert r.exit_code == 0 and "tiresias" in r.output and "LAS" in r.output
    r = invoke("clusters")
    assert r.exit_code == 0 and "pai-2020" in r.output and "6742 GPUs" in r.output


def test_trace_synth_stats_and_import(tmp_path):
    out = tmp_path / "s.csv"
    assert invoke("trace", "synth", "--jobs", "300", "--seed", "1", "-o", out).exit_code == 0
    r = invoke("trace", "stats", out, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["jobs"] == 300
    fixture = Path(__file__).parent / "fixtures" / "philly_pollux.csv"
    r = invoke("trace", "import", "philly-pollux", fixture, "-o", tmp_path / "p.csv")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.csv").read_text().startswith("job_id,submit_time,num_gpus,duration")


def test_workload_preset(tmp_path):
    r = invoke("workload", "synth-default", "--seed", "2", "--jobs", "50", "-o", tmp_path / "w.csv")
    assert r.exit_code == 0 and "50 jobs" in r.output
    r = invoke("workload", "nope", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "unknown workload 'nope'" in r.output


def test_help_explains_commands():
    r = invoke("--help")
    assert r.exit_code == 0
    for cmd in ("replay", "compare", "trace", "workload", "policies", "clusters"):
        assert cmd in r.output
    r = invoke("replay", "--help")
    assert "--slot" in r.output and "--drop-oversized" in r.output


# --- every bad input: a one-line error naming what is wrong, exit code 2, no traceback ---


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            "job_id,submit_time,num_gpus,duration\na,0,1,10\nb,-5,1,10\n",
            ["bad.csv:3", "submit_time"],
        ),
        ("job_id,submit_time,num_gpus,duration\na,,1,10\n", ["bad.csv:2", "submit_time"]),
        ("job_id,submit_time,num_gpus,duration\na,0,x,10\n", ["bad.csv:2", "num_gpus"]),
        ("job_id,submit_time,num_gpus,duration\na,0,1,-3\n", ["bad.csv:2", "duration"]),
        ("job_id,submit_time,duration\na,0,10\n", ["bad.csv:1", "num_gpus"]),
        ("job_id,submit_time,num_gpus,duration\na,0,1\n", ["bad.csv:2"]),
        (
            "job_id,submit_time,num_gpus,iterations,model\na,0,1,100,NoSuchNet\n",
            ["bad.csv:2", "NoSuchNet"],
        ),
        (
            "job_id,submit_time,num_gpus,duration\na,0,64,10\n",
            ["bad.csv:2", "drop-oversized", "1 job(s)"],
        ),
        # an annotated trace's config ended in the job model's ValueError traceback
        (
            "job_id,submit_time,num_gpus,duration,model,config\na,0,1,10,Inception-V3,1\n"
            "b,0,2,10,Inception-V3,x\n",
            ["bad.csv:3", "column 'config'", "'2+2+2'", "'x'"],
        ),
        (
            "job_id,submit_time,num_gpus,duration,model,config\na,0,2,10,Inception-V3,3\n",
            ["bad.csv:2", "column 'config'", "uses 3 GPUs, the job asks for 2"],
        ),
    ],
    ids=[
        "negative-time",
        "missing-time",
        "bad-gpus",
        "negative-duration",
        "missing-column",
        "short-row",
        "unknown-model",
        "oversized",
        "config-not-replicas",
        "config-other-gpus",
    ],
)
def test_bad_trace(tmp_path, text, needles):
    r = invoke("replay", write(tmp_path / "bad.csv", text))
    assert r.exit_code == 2
    assert "Traceback" not in r.output
    line = r.output.strip()
    assert line.startswith("error: ") and len(line.splitlines()) == 1
    for needle in needles:
        assert needle in line


def test_oversized_can_be_dropped(tmp_path):
    trace = write(tmp_path / "t.csv", GOOD + "d,7,64,10\n")
    r = invoke("replay", trace, "--drop-oversized", "--json")
    assert r.exit_code == 0
    assert json.loads(r.output)["n_jobs"] == 3


def test_gz_trace(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(GOOD.encode()))
    assert invoke("replay", path).exit_code == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["replay", "tiny", "-P", "nosuch"], "unknown policy 'nosuch'"),
        (["replay", "tiny", "-c", "nosuch"], "nosuch"),
        (["replay", "tiny", "-c", "missing/dir/c.toml"], "c.toml"),
        (["replay", "no/such/trace.csv"], "trace not found"),
        (["replay", "tiny", "-P", "fifo", "-p", "backfill=maybe"], "expects true or false"),
        (["replay", "tiny", "-P", "fifo", "-p", "nokey=1"], "has no parameter 'nokey'"),
        (["replay", "tiny", "-P", "fifo", "-p", "novalue"], "key=value"),
        (["replay", "tiny", "-P", "tiresias:thresholds=9,3"], "increasing"),
        (["replay", "tiny", "--slot", "0"], "--slot"),
        (["replay", "tiny", "-P", "no/such/policy.py"], "policy file not found"),
        (["compare", "tiny"], "at least one --policy"),
        (["trace", "import", "nosuch", "x.csv", "-o", "y.csv"], "x.csv"),
        (["trace", "stats", "nope.csv"], "trace not found"),
    ],
)
def test_bad_arguments(args, needle):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_bad_cluster_file(tmp_path):
    bad = write(tmp_path / "c.toml", "[cluster]\nname = 'x'\nservers = -1\ngpus_per_server = 8\n")
    r = invoke("replay", "tiny", "-c", bad)
    assert r.exit_code == 2 and "c.toml" in r.output and "servers" in r.output


def test_bad_import_source(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "philly_pollux_bad.csv"
    r = invoke("trace", "import", "philly-pollux", fixture, "-o", tmp_path / "o.csv")
    assert r.exit_code == 2 and "philly_pollux_bad.csv:" in r.output


def test_broken_user_policy_is_a_clean_error(tmp_path):
    bad = write(tmp_path / "bad.py", "import nosuchmodule\n")
    r = invoke("replay", "tiny", "-P", bad)
    assert r.exit_code == 2 and "failed to import" in r.output
    assert "ModuleNotFoundError: No module named 'nosuchmodule'" in r.output
    leaves = write(tmp_path / "leaves.py", "import sys\nsys.exit(0)\n")
    r = invoke("replay", "tiny", "-P", leaves)
    one_line_error(r, "leaves.py: policy module failed to import: it called sys.exit(0)")
    two = write(
        tmp_path / "two.py",
        "class A:\n    name='a'\n    def decide(s,v,n): pass\n"
        "class B:\n    name='b'\n    def decide(s,v,n): pass\n",
    )
    r = invoke("replay", "tiny", "-P", two)
    assert r.exit_code == 2 and "exactly one public class" in r.output


def test_policy_error_is_reported_with_policy_job_and_time(tmp_path):
    bad = write(
        tmp_path / "greedy.py",
        (
            "from gpusched.core.policy import Decision, Start\n"
            "class Greedy:\n"
            "    name = 'greedy'\n    knows_duration = False\n    needs_predictor = False\n    work_conserving = False\n"
            "    def __init__(self, *, rng=None): pass\n"
            "    def decide(self, view, now):\n"
            "        return Decision(actions=[Start(int(j)) for j in view.queued])\n"
        ),
    )
    r = invoke(
        "replay",
        write(tmp_path / "t.csv", "job_id,submit_time,num_gpus,duration\na,0,16,10\nb,0,16,10\n"),
        "-P",
        bad,
        "-c",
        "testbed-4x4",
    )
    assert r.exit_code == 2
    assert "policy 'greedy' at t=0 s: job 'b'" in r.output


def test_a_srpt_workload_annotate_and_replay(tmp_path):
    w = tmp_path / "w.csv"
    r = invoke(
        "workload", "a-srpt", "--jobs", "40", "--seed", "3", "--single-gpu-fraction", "0.5", "-o", w
    )
    assert r.exit_code == 0, r.output
    header = w.read_text().splitlines()[0].split(",")
    assert {"model", "config", "iterations", "group"} <= set(header)
    r = invoke("replay", w, "-P", "a-srpt", "-c", "a-srpt-250x8", "--json", "-o", tmp_path / "run")
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["perf_model"] == "PipelinePerf" and manifest["engine_mode"] == "python"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_finished"] == 40 and summary["sched_delay_ms_avg"] is not None
    out = tmp_path / "a.csv"
    r = invoke("trace", "annotate", "tiny", "--seed", "1", "-o", out)
    assert r.exit_code == 0, r.output
    notes = json.loads(Path(f"{out}.manifest.json").read_text())["notes"]
    assert any("synthes" in n for n in notes)
    r = invoke("workload", "synth-default", "--load", "2", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "does not take load" in r.output


def test_a_srpt_workload_load_on_a_given_cluster(tmp_path):
    from gpusched.io.trace import read_trace
    from gpusched.workloads.synth import offered_load

    loads = {}
    for cluster, n_gpus in (("testbed-4x4", 16), (None, 2000)):
        w = tmp_path / f"{cluster}.csv"
        extra = ["-c", cluster] if cluster else []
        r = invoke("workload", "a-srpt", "--jobs", "60", "--load", "0.5", *extra, "-o", w)
        assert r.exit_code == 0, r.output
        loads[cluster] = offered_load(read_trace(w), n_gpus, exclude_top=0.01)  # the body basis
    assert loads["testbed-4x4"] == pytest.approx(0.5, rel=1e-6)
    assert loads[None] == pytest.approx(0.5, rel=1e-6)  # default: a-srpt-250x8's 2,000 GPUs
    r = invoke("workload", "a-srpt", "-c", "nope", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "unknown cluster 'nope'" in r.output
    r = invoke("workload", "synth-default", "-c", "default", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "does not take cluster" in r.output


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_srpt_workload_of_jobs_that_arrive_at_one_time(tmp_path, jobs):
    from gpusched.io.trace import read_trace

    w = tmp_path / "w.csv"
    r = invoke("workload", "a-srpt", "--jobs", jobs, "--seed", "7", "-o", w)
    assert r.exit_code == 0, r.output
    trace = read_trace(w)
    assert len(trace) == int(jobs) and len(set(trace.submit_time.tolist())) == 1
    assert "at t=0 s: no arrival window, so no offered load" in r.output
    assert "nan" not in r.output and "warning" not in r.output
    r = invoke("replay", w, "-P", "a-srpt", "-c", "a-srpt-250x8", "-o", tmp_path / "run")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("EfficientNet-B0", "has load and save times only in the model catalogue"),
        ("NoSuchNet", "is not in the model catalogue"),
    ],
)
@pytest.mark.parametrize("policy", ["a-srpt", "spjf", "wcs-subtime"])
def test_pipeline_policies_name_a_model_they_cannot_place(tmp_path, model, why, policy):
    # a Lazer trace's models have checkpoint times only: a-srpt told the user to give the
    # jobs a 'duration', which they had
    text = f"job_id,submit_time,num_gpus,duration,model\na,0,1,10,\nb,0,1,10,{model}\n"
    r = invoke("replay", write(tmp_path / "w.csv", text), "-P", policy)
    line = one_line_error(r, "w.csv:3", "column 'model'", f"'{model}' {why}")
    assert "jobs placed as pipelines (A-SRPT and its baselines) need a model with one (" in line
    assert "Inception-V3" in line and "duration" not in line


def test_a_srpt_workload_from_a_source_without_jobs(tmp_path):
    """It said 'needs >= 1 job, got 10 (source has 0)'."""
    src = write(tmp_path / "ho.csv", "job_id,submit_time,num_gpus,duration\n")
    r = invoke("workload", "a-srpt", "-n", "10", "--source", src, "-o", tmp_path / "w.csv")
    one_line_error(r, "--source", "ho.csv: holds no jobs; the a-srpt workload samples from")


def test_compare_plot(tmp_path):
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf", "-o", tmp_path / "c", "--plot")
    assert r.exit_code == 0, r.output
    assert "busy GPUs" in r.output
    r = invoke("compare", "tiny", "-P", "fifo", "--plot")
    assert r.exit_code == 2 and "--out" in r.output


def test_entry_point_policy(monkeypatch):
    from importlib.metadata import EntryPoint

    import gpusched.core.registry as registry
    from gpusched.core import plugins

    ep = EntryPoint(
        name="third-party", value="tests.ep_policy:ThirdPartyFIFO", group=registry.GROUP
    )
    monkeypatch.setattr(
        plugins, "entry_points", lambda group: [ep] if group == registry.GROUP else []
    )
    assert "third-party" in registry.available_policies()
    r = invoke("replay", "tiny", "-P", "third-party", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n_finished"] == 6
    assert "third-party" in invoke("policies").output


def test_help_policies_and_clusters_load_neither_numpy_nor_rich():
    """The quick commands stay quick (issue 15): no numerical stack, no rich help rendering,
    no pydantic (typer's coercion of a ``--help`` that was not given, about 0.15 s)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from gpusched.cli import app\n"
        "for args in (['--help'], ['replay', '--help'], ['policies'], ['clusters']):\n"
        "    try:\n"
        "        app(args)\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (args, e.code)\n"
        "heavy = sorted(\n"
        "    m for m in ('numpy', 'numba', 'rich', 'textual', 'pydantic') if m in sys.modules\n"
        ")\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "HEAVY []"


def test_workload_a_srpt_states_its_offered_load_and_warns_when_idle(tmp_path):
    """Issues 14 and 32: an idle setting must be visible when the workload is made."""
    from typer.testing import CliRunner

    from gpusched.cli import app

    out = tmp_path / "w.csv"
    r = CliRunner().invoke(
        app, ["workload", "a-srpt", "--jobs", "300", "--seed", "1", "--load", "0", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "on a-srpt-250x8 (2,000 GPUs)" in r.output and "without the top 1 % of jobs" in r.output
    assert "warning: the jobs' demand inside the arrival window is 0." in r.output
    assert "--load" in r.output
    # by default the workload is contended (issue 32): 20,000 jobs, body load 3, D > 1
    r = runner.invoke(app, ["workload", "a-srpt", "--seed", "1", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote 20000 jobs" in r.output
    assert "on a-srpt-250x8 (2,000 GPUs), 3.00 without the top 1 % of jobs" in r.output
    assert "warning" not in r.output and "groups: 6" in r.output
    r = runner.invoke(app, ["workload", "a-srpt", "--load", "-1", "-o", str(out)])
    assert r.exit_code == 2 and "--load must be > 0" in r.output
    r = runner.invoke(
        app,
        ["workload", "a-srpt", "--jobs", "300", "--seed", "1", "--load", "2", "-c", "default"]
        + ["--load-basis", "all", "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "offered load 2.00 on default" in r.output and "warning" not in r.output


def test_python_m_gpusched_runs_the_command_line():
    import subprocess
    import sys

    from gpusched import __version__

    out = subprocess.run(
        [sys.executable, "-m", "gpusched", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"gpusched {__version__}"
    usage = subprocess.run(
        [sys.executable, "-m", "gpusched", "replay", "--help"], capture_output=True, text=True
    )
    assert usage.returncode == 0 and usage.stdout.startswith("Usage: gpusched replay")


def test_every_command_reads_an_absent_help_flag_without_pydantic():
    """Every command and group is built with cli._common's classes (see test above)."""
    import typer

    from gpusched.cli import _common

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    root = typer.main.get_command(app)
    seen = list(walk(root, ["gpusched"]))
    assert len(seen) > 10
    for path, cmd in seen:
        assert isinstance(cmd, (_common.Command, _common.Group)), " ".join(path)


def test_plain_option_values_are_coerced_as_typer_would_without_pydantic():
    """cli._common's plain coercion gives typer's (pydantic's) value, type and all, for
    every value it takes; any other value (and every error) is left to typer."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from typer._click.exceptions import BadParameter
    from typer._coercion import build_runtime_param

    from gpusched.cli import _common
    from gpusched.errors import MAX_INT_DIGITS

    root = typer_command()
    replay_cmd = root.commands["replay"]
    params = {p.name: p for p in replay_cmd.params}
    cases = {"slot": float, "seed": int, "cluster": str, "out": Path}

    decimals = st.one_of(
        st.integers(-(10**30), 10**30).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.from_regex(r"[+-]?[0-9]{0,4}\.?[0-9]{0,4}([eE][+-]?[0-9]{1,3})?", fullmatch=True),
        st.text(max_size=6),
    )

    @settings(max_examples=300, deadline=None)
    @given(value=decimals)
    def check(value):
        for name in cases:
            param = params[name]
            try:
                plain = _common._plain_value(param, value)
            except BadParameter:  # ours: too many digits for any limit (int() stops at 4,301)
                assert name == "seed" and len(value.strip().lstrip("+-")) > MAX_INT_DIGITS
                continue
            if plain is _common._NOT_PLAIN:
                continue
            own = build_runtime_param(param.type_descriptor).coerce(value, param, None)
            assert type(plain) is type(own) and plain == own, (name, value)

    check()
    own = build_runtime_param(params["param"].type_descriptor)
    for raw in [None, (), ("a=1", "b=2")]:
        want = own.coerce(raw, params["param"], None)
        got = _common._plain_value(params["param"], raw)
        assert type(got) is type(want) and got == want
    assert _common._plain_value(params["slot"], "nan") is _common._NOT_PLAIN
    assert _common._plain_value(params["seed"], "1_000") is _common._NOT_PLAIN


def typer_command():
    import typer

    return typer.main.get_command(app)


def test_a_replay_with_plain_options_imports_no_pydantic(tmp_path):
    """Typer would build a pydantic adapter for each option (about 0.1 s of a small run)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from gpusched.cli import app\n"
        "try:\n"
        "    app(['replay', 'tiny', '-c', 'default', '-P', 'tiresias', '--slot', '2', '--seed',"
        " '3', '-o', 'out', '--load-s', '1.5', '-p', 'starve=2'])\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "False"
    assert (tmp_path / "out" / "jobs.csv").is_file()
