"""What gpusched does with user mistakes and hostile input at the command line.

Every case must end in one line ``error: ...`` on stderr and exit code 2, never a
traceback, and never after a whole simulation has run for nothing. See the section
"What gpusched promises on bad input" in docs/architecture.md.
"""

from __future__ import annotations

import csv
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from gpusched.cli._common import compile_notice, suggest_warm_up
from gpusched.core.view import _ro
from tests.helpers import invoke, one_line_error

GOOD = "job_id,submit_time,num_gpus,duration\na,0,1,10\nb,5,2,20\nc,6,4,5\n"


def policy_file(tmp_path: Path, body: str, name: str = "mine") -> Path:
    """A user policy file whose decide() (and more) is ``body`` (indented 4 spaces)."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import numpy as np\n"
        "from gpusched.core.policy import Decision, Start, Preempt\n\n"
        "class Mine:\n"
        f"    name = '{name}'\n"
        "    knows_duration = False\n"
        "    work_conserving = False\n"
        "    needs_predictor = False\n\n" + body
    )
    return path


# --- outputs are checked before the simulation ---------------------------------------


def test_out_is_a_file(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("x")
    one_line_error(invoke("replay", "tiny", "-o", target), "f.txt", "is a file")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["replay", "tiny", "-o"], "--out"),
        (["compare", "tiny", "-P", "fifo", "-o"], "--out"),
        (["compare", "tiny", "-P", "fifo", "--seeds", "1-2", "-o"], "--out"),
        (["workload", "synth-default", "-n", "5", "-o"], "--output"),
        (
            ["workload", "edge-cloud-sim", "-n", "5", "-o", "w.csv", "--cluster-out"],
            "--cluster-out",
        ),
    ],
)
def test_out_under_a_file(tmp_path, monkeypatch, args, option):
    """An output under a file said only 'already exists: f.txt'."""
    monkeypatch.chdir(tmp_path)
    Path("f.txt").write_text("x")
    one_line_error(
        invoke(*args, "f.txt/sub/x"), f"{option} f.txt/sub/x is under f.txt, which is a file"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["replay", "tiny", "-o", ""], ["--out: an empty name ''; expected a folder"]),
        (["compare", "tiny", "-P", "fifo", "-o", " "], ["--out: an empty name ' '"]),
        (["replay", ""], ["trace: an empty name ''; expected a trace file"]),
        (["replay", "tiny", "-c", ""], ["cluster: an empty name ''; expected a .toml path"]),
        (["explain", ""], ["an empty name ''; expected a path"]),
        (["diff", "", "b"], ["RUN_A: an empty name ''; expected a run folder"]),
        (["diff", "a", "b", "-o", ""], ["--out: an empty name ''; expected a CSV file"]),
        (["sweep", ""], ["sweep spec: an empty name ''; expected a TOML file"]),
    ],
)
def test_an_empty_name_is_refused_alike_everywhere(args, needles):
    """Path("") is ".", the current folder: every command refuses a blank name, alike."""
    one_line_error(invoke(*args), *needles)


def test_output_name_is_a_folder(tmp_path):
    (tmp_path / "run" / "jobs.csv").mkdir(parents=True)
    one_line_error(
        invoke("replay", "tiny", "-o", tmp_path / "run"),
        "jobs.csv (a folder)",
        "not one of a run's result files",
    )


def test_out_name_too_long(tmp_path):
    one_line_error(invoke("replay", "tiny", "-o", tmp_path / ("x" * 300)), "file name too long")


def test_out_checked_before_the_run(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr("gpusched.core.engine.Engine.run", lambda self, **kw: ran.append(1))
    target = tmp_path / "f.txt"
    target.write_text("x")
    one_line_error(invoke("replay", "tiny", "-o", target), "is a file")
    assert ran == []


def test_file_name_with_newline_stays_on_one_line(tmp_path):
    one_line_error(invoke("replay", str(tmp_path / "a\nb.csv")), "trace not found", "\\n")


# --- options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--seed", "-1"], ["--seed", ">= 0"]),
        (["--engine", "gpu"], ["--engine", "auto, fused, python", "'gpu'"]),
        (["--engine", "pyhton"], ["did you mean 'python'"]),
        (["--until", "-5"], ["--until", ">= 0"]),
        (["--until", "nan"], ["--until"]),
        (["--slot", "1e-300"], ["--slot"]),
        (["--slot", "nan"], ["--slot"]),
        (["--slot", "inf"], ["--slot"]),
        # a slot or a load/save time past the largest time a trace may hold overflowed
        # the clock: a RuntimeWarning, then "job(s) never finished" or "work not conserved"
        (["--slot", "1e308"], ["--slot", "1e+10", "1e+308"]),
        (["-P", "srtf", "--load-s", "1e308"], ["--load-s", "1e+10"]),
        (["-P", "srtf", "--save-s", "1e300"], ["--save-s", "1e+10"]),
        (["-P", "tiresia"], ["did you mean 'tiresias'"]),
        (["-P", "fifo", "-p", "backfil=true"], ["did you mean 'backfill'"]),
        (["-P", "tiresias", "-p", "starve=nan"], ["starve", "NaN is not one"]),
        (["-P", "tiresias", "-p", "starve=1_0"], ["starve", "'1_0'"]),
        (["-P", "tiresias", "-p", "starve=1", "-p", "starve=2"], ["given twice"]),
        (["-P", "tiresias:starve=1", "-p", "starve=2"], ["given twice"]),
    ],
)
def test_bad_options(args, needles):
    one_line_error(invoke("replay", "tiny", *args), *needles)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["replay", "tiny", "--format", "parquet"], ["--format parquet", "give --out DIR"]),
        (["compare", "tiny", "-P", "fifo", "--format", "parquet"], ["--format parquet", "--out"]),
        (["compare", "tiny", "-P", "fifo", "--force"], ["--force", "give --out DIR"]),
        (
            ["compare", "tiny", "-P", "fifo", "--seeds", "1-2", "--format", "parquet"],
            ["--format parquet", "--out"],
        ),
    ],
)
def test_options_for_out_need_out(args, needles):
    """--format and (for compare) --force without --out were dropped silently, exit 0;
    replay's --events and --force, and compare's --plot, were refused."""
    one_line_error(invoke(*args), *needles)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["replay", "tiny", "--seed", "abc"], ["'--seed'", "got 'abc'", "'gpusched replay -h'"]),
        (["replay", "tiny", "--slot", "1,5"], ["'--slot'", "got '1,5'"]),
        (["replay", "tiny", "--sed", "1"], ["No such option: --sed", "--seed"]),
        (["replay", "tiny", "extra", "args"], ["unexpected extra argument"]),
        (["policies", "extra"], ["unexpected extra argument", "'gpusched policies -h'"]),
        (["nosuch"], ["No such command 'nosuch'", "'gpusched -h'"]),
        (["trace", "nosuch"], ["No such command 'nosuch'", "'gpusched trace -h'"]),
        (["trace", "import"], ["Missing argument"]),
        (["diff", "a"], ["Missing argument 'RUN_B'"]),
        (["workload", "synth-default"], ["Missing option '--output'"]),
        (["workload", "synth-default", "-o", "w.csv", "-n", "1e3"], ["'--jobs'", "got '1e3'"]),
        (["replay", "tiny", "--slot"], ["'--slot' requires an argument"]),
    ],
)
def test_usage_mistakes_take_one_line(args, needles):
    """Click's usage errors took four lines (usage, hint, blank line, 'Error: ...'), and a
    value of the wrong type was not shown."""
    one_line_error(invoke(*args), *needles)


def test_no_arguments_still_show_the_help():
    r = invoke("trace")
    assert r.exit_code == 2 and "Commands:" in r.output and "error" not in r.output


def test_slot_too_fine_for_the_trace(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,1e10,1,10\n")
    one_line_error(invoke("replay", trace, "--slot", "1e-6"), "too fine")


def test_short_help_flag():
    r = invoke("replay", "-h")
    assert r.exit_code == 0 and "--policy" in r.output
    assert invoke("-h").exit_code == 0
    assert invoke("trace", "import", "-h").exit_code == 0


def test_tui_needs_a_terminal():
    one_line_error(invoke("replay", "tiny", "--tui"), "--tui needs a terminal")


# --- user policy code ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "hook"),
    [
        (
            "    def __init__(self):\n        raise RuntimeError('boom')\n"
            "    def decide(self, view, now):\n        return Decision()\n",
            "__init__",
        ),
        (
            "    def prepare(self, jobs, cluster):\n        raise KeyError('k')\n"
            "    def decide(self, view, now):\n        return Decision()\n",
            "prepare",
        ),
        ("    def decide(self, view, now):\n        return 1 / 0\n", "decide"),
        (
            "    def decide(self, view, now):\n        return Decision(order=view.queued)\n"
            "    def wake(self, view, now):\n        raise ValueError('w')\n",
            "wake",
        ),
        ("    def decide(self, view, now):\n        raise SystemExit(0)\n", "decide"),
    ],
)
def test_policy_exception_names_policy_and_hook(tmp_path, body, hook):
    r = invoke("replay", "tiny", "-P", policy_file(tmp_path, body))
    line = one_line_error(r, "policy 'mine'", f"in {hook}()")
    if hook in ("decide", "wake"):
        assert "at t=" in line


def test_debug_shows_the_policy_traceback(tmp_path):
    body = "    def decide(self, view, now):\n        return 1 / 0\n"
    r = invoke("--debug", "replay", "tiny", "-P", policy_file(tmp_path, body))
    assert r.exit_code == 2
    assert "ZeroDivisionError" in r.output and "Traceback" in r.output
    assert r.output.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize(
    ("decision", "needle"),
    [
        ("Decision(wake_at='soon')", "wake_at 'soon'"),
        ("Decision(wake_at=float('nan'))", "NaN"),
        ("Decision(actions=None)", "Decision.actions"),
        ("Decision(actions=[Start(int(view.queued[0]), 'x')] if view.queued.size else [])", "GPU"),
        ("Decision(order=[[1, 2], [3]])", "order"),
        ("Decision(order=view.queued, blocking='yes')", "Decision.blocking"),
        ("Decision(actions=['start'])", "unknown action"),
        ("'not a decision'", "must return a Decision"),
    ],
)
def test_decision_fields_of_the_wrong_type(tmp_path, decision, needle):
    body = f"    def decide(self, view, now):\n        return {decision}\n"
    one_line_error(invoke("replay", "tiny", "-P", policy_file(tmp_path, body)), needle)


def test_policy_that_only_wakes_is_stopped(tmp_path):
    body = "    def decide(self, view, now):\n        return Decision(wake_at=now + 1)\n"
    one_line_error(invoke("replay", "tiny", "-P", policy_file(tmp_path, body)), "made no progress")


@pytest.mark.parametrize("step", ["10", "now * 100 + 1"])
def test_policy_that_waits_past_the_exact_clock_is_stopped(tmp_path, step):
    """A policy waking ever later (batchsche -p ratio=1e6) took the run past 2^50 slots,
    where slot boundaries are no longer exact: 'simulated time is not strictly
    increasing', or a run that seemed fine."""
    body = (
        "    def decide(self, view, now):\n"
        "        if now < 1e16:\n"
        f"            return Decision(wake_at={step} if now == 0 else now * 100 + 1)\n"
        "        return Decision(order=view.queued)\n"
    )
    one_line_error(
        invoke("replay", "tiny", "-P", policy_file(tmp_path, body)),
        "policy 'mine'",
        "clock holds exactly",
    )


def test_batchsche_with_a_huge_ratio_is_stopped_in_one_line():
    r = invoke("replay", "ec-30", "-c", "edge-cloud-testbed", "-P", "batchsche", "-p", "ratio=1e6")
    one_line_error(r, "policy 'batchsche'", "clock holds exactly", "check its parameters")


def test_view_memory_cannot_be_made_writeable():
    state = np.arange(4)
    view = _ro(state)
    with pytest.raises(ValueError):
        view.flags.writeable = True
    state[0] = 9
    assert view[0] == 9  # a live view, not a copy


def test_policy_rewriting_the_view_fails(tmp_path):
    body = (
        "    def decide(self, view, now):\n"
        "        view.job_n_gpus.flags.writeable = True\n"
        "        view.job_n_gpus[:] = 1\n"
        "        return Decision(order=view.queued)\n"
    )
    one_line_error(invoke("replay", "tiny", "-P", policy_file(tmp_path, body)), "in decide()")


def test_custom_policy_labelled_by_its_name(tmp_path):
    body = "    def decide(self, view, now):\n        return Decision(order=view.queued)\n"
    path = policy_file(tmp_path, body, name="greedy")
    r = invoke("replay", "tiny", "-P", path)
    assert r.exit_code == 0, r.output
    table_row = r.output.splitlines()[-1]
    assert table_row.startswith("greedy ") and str(path) not in r.output
    out = tmp_path / "cmp"
    assert invoke("compare", "tiny", "-P", path, "-P", "fifo", "-o", out).exit_code == 0
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [row["policy"] for row in rows] == ["greedy", "fifo"]


# --- compare ----------------------------------------------------------------------------


def test_compare_refuses_old_results_unless_forced(tmp_path):
    out = tmp_path / "cmp"
    assert invoke("compare", "tiny", "-P", "fifo", "-P", "sjf", "-o", out).exit_code == 0
    one_line_error(invoke("compare", "tiny", "-P", "srtf", "-o", out), "already holds results")
    r = invoke("compare", "tiny", "-P", "srtf", "-o", out, "--force")
    assert r.exit_code == 0, r.output
    runs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert runs == ["00-srtf"]  # replaced whole
    (out / "notes.txt").write_text("mine")
    for force in ((), ("--force",)):  # a file not ours: never deleted, so the folder is refused
        one_line_error(
            invoke("compare", "tiny", "-P", "fifo", "-o", out, *force),
            "holds notes.txt, which is not one of a run's result files",
        )
    assert (out / "notes.txt").read_text() == "mine"


def test_compare_checks_every_policy_before_running(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr("gpusched.experiments.run.run_into", lambda *a, **k: ran.append(1))
    one_line_error(invoke("compare", "tiny", "-P", "fifo", "-P", "srft"), "did you mean 'srtf'")
    assert ran == []


def test_compare_prints_the_run_header():
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].startswith("tiny (bundled) on default (32 GPUs), 6 jobs")


def test_early_stop_is_shown(tmp_path):
    r = invoke("replay", "philly-2000", "-P", "fifo", "--until", "50000")
    assert r.exit_code == 0, r.output
    assert "note: stopped early at t=50,000 s" in r.output
    head = next(line for line in r.output.splitlines() if line.startswith("policy"))
    assert "unfinished" in head


def test_wall_seconds_have_one_format():
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf", "-P", "tiresias")
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.split()[0] in ("fifo", "srtf")]
    for row in rows:
        wall = row.split()[-1]
        assert len(wall.split(".")[1]) == 2, row


def test_default_demo_shows_policies_differ():
    """The README's first commands run the bundled default: policies must differ there."""
    jct = {}
    for policy in ("fifo", "srtf"):
        r = invoke("replay", "-P", policy, "--json")
        assert r.exit_code == 0, r.output
        summary = json.loads(r.output)
        jct[policy] = summary["avg_jct_s"]
        assert summary["gpu_utilization"] > 0.5  # a loaded cluster, not an idle one
    assert jct["fifo"] > 3 * jct["srtf"]


# --- the first-run note -------------------------------------------------------------------


def test_compile_notice_only_when_slow(capsys):
    with compile_notice(delay_s=0.05):
        pass
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
    with compile_notice(delay_s=0.01):
        time.sleep(0.2)
    assert "compiling simulation kernels" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("state", "note"),
    [
        ("running", "compiling in the background"),
        (False, "compiling the simulation kernels failed"),
    ],
)
def test_a_run_on_a_cold_cache_says_what_became_of_its_compile(capsys, state, note):
    class Result:
        extra = {"uncompiled": True, "background_compile": state}

    suggest_warm_up(Result())
    captured = capsys.readouterr()
    assert captured.out == "" and note in captured.err


@pytest.mark.parametrize("state", [None, True])
def test_a_run_on_compiled_kernels_says_nothing_of_them(capsys, state):
    class Result:
        extra = {"uncompiled": False, "background_compile": state}

    suggest_warm_up(Result())
    assert capsys.readouterr() == ("", "")


def test_warm_up_loads_every_kernel_path(monkeypatch):
    from gpusched.core import warmup

    monkeypatch.setattr(warmup, "_warm", set())
    res = CliRunner().invoke(app, ["warm-up"])
    assert res.exit_code == 0, res.output
    assert "simulation kernels ready" in res.output
    assert warmup._warm == {"fused", "lazer", "python"} == set(warmup.PATHS)


def test_a_misspelt_column_is_noted_not_silently_unused(tmp_path):
    # 'laod_s' is kept as an extra column: without a word, the jobs' load times would
    # silently be the run's default; names near no column the engine reads stay quiet
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration,laod_s,user,durations\na,0,1,5,3,u,4\n")
    out = invoke("replay", trace, "-P", "fifo").output
    assert (
        f"note: {trace}: column 'laod_s' is not one the engine reads (it is kept as an "
        "extra column); did you mean 'load_s'?" in out
    )
    assert out.count("note:") == 1  # not 'user', nor 'durations' (duration is given)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # Click kept the last value and dropped the others without a word
        (["replay", "-P", "tiresias", "-P", "fifo"], "--policy/-P is given more than once"),
        (
            ["replay", "-c", "default", "--cluster", "default"],
            "--cluster/-c is given more than once",
        ),
        (
            ["workload", "synth-default", "--seed", "1", "--seed", "2", "-o", "{tmp}/w.csv"],
            "--seed",
        ),
    ],
)
def test_an_option_of_one_value_given_twice_is_refused(tmp_path, args, needle):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = one_line_error(invoke(*args), needle, "is given more than once")
    assert not (tmp_path / "w.csv").exists()
    assert "compare" in line if "-P" in args else "compare" not in line


def test_repeatable_options_and_flags_may_repeat(tmp_path):
    r = invoke("replay", "-P", "srtf-periodic", "-p", "interval=60", "-p", "interval=30")
    assert r.exit_code == 2 and "more than once" not in r.output  # -p's own check speaks
    r = invoke("replay", "-P", "fifo", "-o", tmp_path / "r", "--force", "--force")
    assert r.exit_code == 0, r.output


BIG = "9" * 5000  # past Python's limit on int() (4,300 digits): a ValueError traceback


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "synth", "--jobs", BIG, "-o", "t.csv"],
        ["trace", "synth", "--seed", BIG, "-o", "t.csv"],
        ["workload", "pd-ors", "--jobs", BIG, "-o", "t.csv"],
        ["replay", "tiny", "--seed", BIG],
        ["compare", "tiny", "-P", "fifo", "--seeds", f"1-{BIG}"],
        ["replay", "tiny", "-P", f"fifo-ps:workers={BIG}"],
        ["replay", "tiny", "-P", "fifo-ps", "-p", f"workers={BIG}"],
    ],
    ids=["synth-jobs", "synth-seed", "workload-jobs", "seed", "seeds", "param", "p"],
)
def test_a_whole_number_of_thousands_of_digits_is_one_line(args):
    one_line_error(invoke(*args), "a whole number of at most 30 digits", "(5,000 digits)")


@pytest.mark.parametrize("kind", ["cluster", "sweep"])
def test_a_toml_number_of_thousands_of_digits_is_one_line(tmp_path, kind):
    if kind == "cluster":
        path = tmp_path / "big.toml"
        path.write_text(f'[cluster]\nname = "x"\nservers = {BIG}\ngpus_per_server = 4\n')
        args = ["replay", "tiny", "-c", path]
    else:
        path = tmp_path / "s.toml"
        path.write_text(f'traces = ["tiny"]\npolicies = ["fifo"]\nseeds = [{BIG}]\n')
        args = ["sweep", path, "--dry-run", "-o", tmp_path / "out"]
    one_line_error(invoke(*args), "invalid TOML: a whole number too long to read")


@pytest.mark.parametrize(
    "policies",
    [
        ["fifo", "fifo:backfill=false"],  # a parameter given its default
        ["tiresias:starve=2", "tiresias:starve=2.0"],  # 2 and 2.0 of a float
        ["fifo:backfill=true", "fifo:backfill=yes"],  # two spellings of true
    ],
)
@pytest.mark.parametrize("seeds", [[], ["--seeds", "1-2"]], ids=["compare", "seeds"])
def test_compare_refuses_the_same_run_twice(policies, seeds):
    args = ["compare", "tiny", *(a for p in policies for a in ("-P", p)), *seeds]
    one_line_error(
        invoke(*args),
        f"--policy 1 and 2 are the same run ('{policies[0]}' and '{policies[1]}'",
    )


def test_a_bundled_cluster_named_with_toml_gets_a_hint():
    one_line_error(
        invoke("replay", "tiny", "-c", "default.toml"),
        "default.toml: cluster file not found (the bundled cluster is named without .toml: "
        "-c default)",
    )


def test_trace_synth_with_a_tiny_load_prints_one_line_and_no_warning():
    # numpy's overflow RuntimeWarning printed two lines before the error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one_line_error(
            invoke("trace", "synth", "--load", "1e-300", "-o", "t.csv"),
            "makes a trace gpusched cannot read",
        )


def test_replay_labels_its_run_with_the_p_parameters():
    r = invoke("replay", "tiny", "-P", "tiresias", "-p", " starve = 2")
    assert r.exit_code == 0, r.output
    assert r.output.strip().splitlines()[-1].startswith("tiresias:starve=2 ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["replay", "tiny", "--seed", "1.0"], "expected a whole number, got '1.0'"),
        (["replay", "tiny", "--seed", "1e3"], "expected a whole number, got '1e3'"),
        (["replay", "tiny", "--slot", "1_0"], "expected a number without '_', got '1_0'"),
        (["trace", "synth", "--load", "1_0", "-o", "t.csv"], "without '_'"),
    ],
)
def test_a_number_reads_alike_in_flags_and_policy_parameters(args, needle):
    # pydantic took --seed 1.0 as seed 1 and --load 1_0 as 10; -p seed=1.0 and a trace's
    # 1_0 were refused
    one_line_error(invoke(*args), needle)


@pytest.mark.parametrize("column", ["load_s", "model"])
def test_an_imported_column_named_like_a_canonical_one_is_one_line(tmp_path, column):
    # the Trace refused it with a ValueError traceback
    src = tmp_path / "t.csv"
    src.write_text(f"job_id,num_gpu,submit_time,duration,{column}\n1,1,0,100,5\n")
    one_line_error(
        invoke("trace", "import", "tiresias", src, "-o", tmp_path / "o.csv"),
        f"t.csv:1: column '{column}': the tiresias importer keeps columns",
        f"rename it in the source (e.g. src_{column})",
    )


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "synth", "-n", "3", "-o"],
        ["trace", "annotate", "tiny", "-o"],
        ["workload", "pd-ors", "-o"],
    ],
    ids=["synth", "annotate", "workload"],
)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_trace_writer_refuses_a_pipe_or_a_device(tmp_path, args, kind):
    # a pipe hung the write for ever; /dev/null took the trace (annotate wrote a manifest
    # into /dev beside it)
    target = tmp_path / "p.csv"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    one_line_error(invoke(*args, target), "not a regular file (a pipe or a device)")


def test_workload_a_srpt_source_reports_the_canonical_traces_own_error(tmp_path):
    # any error of the canonical reader sent the file to the Pollux-summary importer,
    # which then asked for its columns (submit_offset_s, duration_s, vc)
    src = tmp_path / "c.csv"
    src.write_text("job_id,submit_time,num_gpus,duration\na,0,1,100\nb,5,1,nan\n")
    one_line_error(
        invoke("workload", "a-srpt", "--source", src, "-n", "2", "-o", tmp_path / "o.csv"),
        "c.csv:3: column 'duration'",
        "got 'nan'",
    )


def test_annotate_keeps_load_and_save_and_says_what_it_replaced(tmp_path):
    src = tmp_path / "f.csv"
    src.write_text(
        "job_id,submit_time,num_gpus,duration,model,iterations,load_s,save_s\n"
        "a,0,1,100,VGG19,50,5,6\n"
    )
    r = invoke("trace", "annotate", src, "-o", tmp_path / "a.csv")
    assert r.exit_code == 0, r.output
    assert "note: the trace's own model, iterations replaced by the assignment" in r.output
    (row,) = csv.DictReader((tmp_path / "a.csv").open())
    assert (row["load_s"], row["save_s"]) == ("5", "6")  # dropped before


def test_an_import_that_keeps_no_job_writes_nothing(tmp_path):
    src = tmp_path / "z.csv"
    src.write_text("job_id,num_gpu,submit_time,duration\n1,0,0,100\n")
    out = tmp_path / "o.csv"
    one_line_error(
        invoke("trace", "import", "tiresias", src, "-o", out),
        "z.csv: tiresias import kept no job of 1 row(s) (excluded: 1 num_gpu = 0)",
    )
    assert not out.exists()


@pytest.mark.parametrize("name", ["x.PARQUET", "x.txt", "x"])
def test_a_trace_writer_refuses_a_name_whose_suffix_chooses_no_format(tmp_path, name):
    # x.PARQUET and x.txt were written as CSV without a word (one asking for Parquet got
    # CSV); the suffix chooses the format, as convert already required
    one_line_error(
        invoke("trace", "synth", "-n", "3", "-o", tmp_path / name),
        "expected a name ending in .csv, .csv.gz or .parquet",
    )


def test_trace_stats_says_its_load_leaves_out_jobs_without_a_duration():
    r = invoke("trace", "stats", "ps-20", "-c", "default")
    assert r.exit_code == 0, r.output
    assert (
        "offered_load  0  (over the 0 jobs with a duration; 20 without one (iterations, "
        "chunks or roles) are not counted)"
    ) in r.output


def test_annotate_names_the_line_of_a_gpu_count_no_model_runs(tmp_path):
    src = tmp_path / "b.csv"
    src.write_text("job_id,submit_time,num_gpus,duration\na,0,1,100\nb,5,4096,100\n")
    one_line_error(
        invoke("trace", "annotate", src, "-o", tmp_path / "a.csv"),
        "b.csv:3: column 'num_gpus': no catalogue model can run 4096 GPUs (job 'b', group",
    )


def test_workload_a_srpt_refuses_a_source_without_durations_naming_its_line(tmp_path):
    # it failed after sampling, with the whole sampling summary as its message
    one_line_error(
        invoke("workload", "a-srpt", "--source", "ps-20", "-n", "10", "-o", tmp_path / "o.csv"),
        "ps-20.csv:2: column 'duration': a-srpt samples its jobs' durations, and job "
        "'pd-ors-01' has none",
    )
