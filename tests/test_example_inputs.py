"""The example scripts (examples/*/): a missing, empty or malformed input ends in one
``error:`` line.

Each script the families' run.sh drive (or that docs tell a reader to run on run.sh's
output) must end on a missing or empty input folder or file, on a malformed value inside
a file it reads (a word in a numeric column, a missing column or field, a row cut short,
a truncated JSON file), and on a bad option in ``error: <path>: <what was expected>`` (or
``error: argument --x: ...``) on stderr with exit status 2, as ``gpusched`` itself does,
never in a traceback or (worse) in empty tables and exit status 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"

#: scripts that read run.sh's output folder: (script, what the message says was expected)
FOLDER_SCRIPTS = [
    "a-online/aggregate.py",
    "a-online/preemptions.py",
    "pd-ors/aggregate.py",
    "pollux/aggregate.py",
    "sjf-bsbf/aggregate.py",
    "a-srpt/unseen-rule.py",
]
#: scripts that read a results .csv file
FILE_SCRIPTS = [
    "a-srpt/aggregate.py",
    "a-srpt/choose-tau.py",
    "lazer/aggregate.py",
]


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _one_line(proc: subprocess.CompletedProcess[str], path: Path, expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    assert expected in lines[0], lines[0]


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_missing_folder(script: str, tmp_path: Path) -> None:
    missing = tmp_path / "out"
    _one_line(_run(script, str(missing), cwd=tmp_path), missing, "no such folder; expected")


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_empty_folder(script: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    _one_line(_run(script, str(tmp_path / "out"), cwd=tmp_path), tmp_path / "out", "holds no ")


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_file_for_folder(script: str, tmp_path: Path) -> None:
    f = tmp_path / "out.csv"
    f.write_text("a\n")
    _one_line(_run(script, str(f), cwd=tmp_path), f, "not a folder; expected")


@pytest.mark.parametrize("script", FILE_SCRIPTS)
def test_missing_file(script: str, tmp_path: Path) -> None:
    missing = tmp_path / "results.csv"
    _one_line(_run(script, str(missing), cwd=tmp_path), missing, "no such file; expected")


@pytest.mark.parametrize("script", FILE_SCRIPTS)
@pytest.mark.parametrize("text", ["", "trace,cluster,policy,params,status\n"])
def test_empty_file(script: str, text: str, tmp_path: Path) -> None:
    f = tmp_path / "results.csv"
    f.write_text(text)
    expected = "holds no result rows" if text else "empty file; expected"
    _one_line(_run(script, str(f), cwd=tmp_path), f, expected)


def test_run_folder_missing_its_summary(tmp_path: Path) -> None:
    """A run folder lacking a file the script reads: the file is named, not a traceback."""
    run = tmp_path / "out" / "exp-s1" / "fifo"
    run.mkdir(parents=True)
    (run / "jobs.csv").write_text("job_id,jct\n")
    proc = _run("pollux/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _one_line(proc, run / "summary.json", "no such file")


@pytest.mark.parametrize(
    "script", ["lazer/futile_victims.py", "a-srpt/prediction-errors.py", "lazer/fig8e.py"]
)
def test_missing_trace(script: str, tmp_path: Path) -> None:
    """Scripts reading a trace through gpusched give gpusched's one-line error."""
    proc = _run(script, str(tmp_path / "t.csv"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert str(tmp_path / "t.csv") in proc.stderr


def test_no_argument_is_a_usage_line(tmp_path: Path) -> None:
    proc = _run("pd-ors/aggregate.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "usage: python examples/pd-ors/aggregate.py OUT\n"


def test_competitive_missing_policy_file(tmp_path: Path) -> None:
    """pd-ors/competitive.py reads no input folder, but a --policy file it cannot find was
    a PolicyError traceback."""
    missing = tmp_path / "mine.py"
    proc = _run(
        "pd-ors/competitive.py", "--policy", str(missing), "--seeds", "1", "--jobs", "2",
        "--horizon", "3", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: policy file not found: {missing}\n"


# -- malformed values inside the files a script reads: one line naming file, line, column --

JOBS_HEADER = "job_id,submit,first_start,finish,jct,wait_s,gpus,duration,preemptions,load_s"
JOB = "j{i},0.0,0.0,10.0,10.0,0.0,1,10.0,0,0.0"
SUMMARY = {
    "n_finished": 2, "avg_jct_s": 10.0, "p99_jct_s": 10.0, "makespan_s": 10.0,
    "gpu_utilization": 0.5, "avg_wait_s": 0.0, "shared_gpu_s": 0.0, "n_preemptions": 0,
    "total_utility": 1.0, "n_unfinished": 0, "n_rejected": 0,
}  # fmt: skip
MANIFEST = {
    "policy": "fifo", "params": {}, "trace": "t.csv",
    "cluster": {"servers": [{"count": 1, "gpus": 8, "cpus": 8, "mem_gb": 64, "storage_gb": 100}]},
}  # fmt: skip


#: a PD-ORS trace of two jobs (gpusched workload pd-ors --jobs 2), for pd-ors/aggregate.py
PD_ORS_TRACE = """\
job_id,submit_time,num_gpus,epochs,samples,global_batch,ps_ratio,sample_time,grad_mb,bw_internal,bw_external,worker_gpus,worker_cpus,worker_mem_gb,worker_storage_gb,ps_gpus,ps_cpus,ps_mem_gb,ps_storage_gb,utility_priority,utility_decay,utility_target,horizon
pd-ors-1,10,0,121,382481,165,1,1.25e-05,253,18165257,1816526,1,9,18.1,8.9,0,3,15.6,7,26.97,5.45,4.93,20
pd-ors-2,18,0,127,476223,190,2,7.78e-05,329.5,18165257,1816526,1,5,11.9,6.5,0,9,6,6,75.29,5.082,7.79,20
"""


def _run_folder(run: Path, jobs: str | bytes | None = None, **summary: object) -> Path:
    """A run folder of two finished jobs (jobs.csv, summary.json, manifest.json), with
    ``jobs`` as jobs.csv's text instead and ``summary``'s fields changed."""
    import json

    run.mkdir(parents=True)
    if jobs is None:
        jobs = "\n".join([JOBS_HEADER, JOB.format(i=1), JOB.format(i=2)]) + "\n"
    if isinstance(jobs, bytes):
        (run / "jobs.csv").write_bytes(jobs)
    else:
        (run / "jobs.csv").write_text(jobs)
    (run / "summary.json").write_text(json.dumps({**SUMMARY, **summary}))
    (run / "manifest.json").write_text(json.dumps(MANIFEST))
    (run.parent.parent / "wl").mkdir(exist_ok=True)
    (run.parent.parent / "wl" / "t.csv").write_text(PD_ORS_TRACE)
    return run


def _bad_value(proc: subprocess.CompletedProcess[str], path: Path, *expected: str) -> None:
    """One ``error: <path>: ...`` line holding every one of ``expected``, exit 2."""
    _one_line(proc, path, expected[0])
    for text in expected[1:]:
        assert text in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (f"{JOBS_HEADER}\n" + JOB.format(i=1).replace(",0,0.0", ",many,0.0") + "\n",
         ["line 2, column preemptions: expected a whole number, got 'many'"]),
        (f"{JOBS_HEADER}\n" + JOB.format(i=1) + "\nj2,0.0,0.0\n",
         ["line 3: 3 fields, the header has 10"]),
        (JOBS_HEADER.replace(",preemptions", "") + "\nj1,0,0,10,10,0,1,10,0\n",
         ["line 2: no column 'preemptions'"]),
        (f"{JOBS_HEADER},jct\n" + JOB.format(i=1) + ",1\n", ["column 'jct' named twice"]),
        (b"\x1f\x8b\x08\x00\xff\xfe binary", ["not UTF-8 text"]),
        (f"{JOBS_HEADER}\n" + JOB.format(i=1).replace(",10.0,10.0,", ",10.0,nan,") + "\n",
         ["line 2, column jct: expected a finite number, got 'nan'"]),
    ],
    ids=["word-in-int-column", "truncated-row", "missing-column", "duplicate-column",
         "binary", "nan"],
)  # fmt: skip
def test_pollux_bad_jobs_csv(jobs: str | bytes, expected: list[str], tmp_path: Path) -> None:
    run = _run_folder(tmp_path / "out" / "load1-w1" / "pollux", jobs)
    proc = _run("pollux/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, run / "jobs.csv", *expected)


#: where each aggregate script that reads summaries finds one run folder under OUT
SUMMARY_LAYOUTS = {
    "pollux/aggregate.py": "load1-w1/pollux",
    "sjf-bsbf/aggregate.py": "e__defaults-s1/fifo",
    "pd-ors/aggregate.py": "e-s1/fifo",
}


@pytest.mark.parametrize(("script", "layout"), list(SUMMARY_LAYOUTS.items()))
def test_bad_summary_value(script: str, layout: str, tmp_path: Path) -> None:
    """A summary.json field holding text, not a number: named, not a TypeError traceback."""
    key = "total_utility" if script.startswith("pd-ors") else "gpu_utilization"
    run = _run_folder(tmp_path / "out" / layout, **{key: "high"})
    proc = _run(script, str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, run / "summary.json", f'field {key}: expected a finite number, got "high"')


@pytest.mark.parametrize("script", ["pollux/aggregate.py", "sjf-bsbf/aggregate.py"])
def test_truncated_summary(script: str, tmp_path: Path) -> None:
    run = _run_folder(tmp_path / "out" / SUMMARY_LAYOUTS[script])
    (run / "summary.json").write_text('{"n_finished": 2, "avg_jct_s": 1')
    proc = _run(script, str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, run / "summary.json", "line 1, column ", "not JSON")


@pytest.mark.parametrize(("script", "layout"), list(SUMMARY_LAYOUTS.items()))
def test_manifest_params_not_an_object(script: str, layout: str, tmp_path: Path) -> None:
    """manifest.json's params a list: an AttributeError traceback ('list' has no items)."""
    import json

    run = _run_folder(tmp_path / "out" / layout)
    (run / "manifest.json").write_text(json.dumps({**MANIFEST, "params": ["starve", 2]}))
    proc = _run(script, str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, run / "manifest.json", 'field params: expected an object, got ["starve", 2]')


def test_sjf_bsbf_fractional_gpus(tmp_path: Path) -> None:
    jobs = f"{JOBS_HEADER}\n" + JOB.format(i=1).replace(",0.0,1,10.0,", ",0.0,1.5,10.0,") + "\n"
    run = _run_folder(tmp_path / "out" / "e__defaults-s1" / "fifo", jobs)
    proc = _run("sjf-bsbf/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, run / "jobs.csv", "line 2, column gpus: expected a whole number, got '1.5'")


def test_pd_ors_bad_manifest_cluster(tmp_path: Path) -> None:
    import json

    run = _run_folder(tmp_path / "out" / "e-s1" / "fifo")
    bad = {
        **MANIFEST,
        "cluster": {"servers": [{**MANIFEST["cluster"]["servers"][0], "cpus": None}]},
    }  # type: ignore[index]
    (run / "manifest.json").write_text(json.dumps(bad))
    proc = _run("pd-ors/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(
        proc,
        run / "manifest.json",
        "field cluster.servers[0].cpus: expected a finite number, got null",
    )


def test_a_online_bad_comparison(tmp_path: Path) -> None:
    """A word in a numeric column of comparison.csv (it was skipped silently, then a
    KeyError traceback)."""
    comp = tmp_path / "out" / "fig7-jobs300-s1" / "comparison.csv"
    comp.parent.mkdir(parents=True)
    cols = "policy,total_jct_s,avg_wait_s,gpu_utilization,makespan_s,total_comm_s,total_transfer_s"
    comp.write_text(f"{cols}\nsrtf,100,1,0.5,50,3,4\na-online,lots,1,0.5,50,3,4\n")
    proc = _run("a-online/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(proc, comp, "line 3, column total_jct_s: expected a finite number, got 'lots'")


def test_a_online_preempted_chunk_not_in_tasks(tmp_path: Path) -> None:
    run = tmp_path / "out" / "fig9-base-s1" / "srtf"
    run.mkdir(parents=True)
    (run / "tasks.csv").write_text("job_id,job\nc1,j1\n")
    (run / "events.csv").write_text("time_s,event,job_id,gpus\n0,start,c1,0\n5,preempt,c9,0\n")
    (run / "summary.json").write_text(
        '{"n_preemptions": 1, "gpu_utilization": 0.5, "avg_wait_s": 0}'
    )
    proc = _run("a-online/preemptions.py", str(tmp_path / "out"), cwd=tmp_path)
    _bad_value(
        proc,
        run / "events.csv",
        "line 3, column job_id: expected a chunk of the run's tasks.csv, got 'c9'",
    )


RESULTS = "trace,cluster,policy,params,status,n_unfinished,total_jct_s"


@pytest.mark.parametrize(
    ("script", "row", "expected"),
    [
        ("a-srpt/aggregate.py", "wl/x-s1.csv,c.toml,spjf,,ok,some,10",
         "line 2, column n_unfinished: expected a whole number, got 'some'"),
        ("a-srpt/choose-tau.py", "wl/x-s1.csv,c.toml,a-srpt,tau=2,ok,0,n/a",
         "line 2, column total_jct_s: expected a finite number, got 'n/a'"),
        ("a-srpt/choose-tau.py", "wl/x-s1.csv,c.toml,a-srpt,tau=.,ok,0,1",
         "line 2, column params: expected tau=NUMBER"),
        ("lazer/aggregate.py", "wl/earth-s1.csv,c.toml,srtf,,ok,0,1",
         "line 2, column p50_jct_s: expected a finite number, got 'x'"),
        ("lazer/aggregate.py", "earth.csv,c.toml,srtf,,ok,0,1",
         "line 2, column trace: expected a workload's path"),
    ],
    ids=["a-srpt-aggregate", "choose-tau", "choose-tau-params", "lazer", "lazer-trace"],
)  # fmt: skip
def test_results_csv_bad_value(script: str, row: str, expected: str, tmp_path: Path) -> None:
    f = tmp_path / "results.csv"
    header, line = RESULTS, row
    if script.startswith("lazer"):
        header, line = f"{RESULTS},p50_jct_s,p95_jct_s", f"{row},x,1"
    f.write_text(f"{header}\n{line}\n")
    _bad_value(_run(script, str(f), cwd=tmp_path), f, expected)


def test_asrpt_trace_all_relays_the_one_line_error(tmp_path: Path) -> None:
    """asrpt-trace-all.py runs asrpt-trace.py per workload: a malformed workload ended in
    a CalledProcessError traceback (the child's one-line error hidden in it)."""
    wl = tmp_path / "wl"
    wl.mkdir()
    bad = "job_id,submit_time,num_gpus,duration\nj1,0,1,nan\n"
    families = ["jobs500", "jobs1000", "jobs2000", "jobs4000", "load0.128", "load0.256"]
    families += ["load1.024", "nic-single0"]
    families += [
        f"single{x}{s}" for x in ("0.8", "0.6", "0.4", "0.2", "0.0") for s in ("", "-load1")
    ]
    for family in families:
        for seed in (1, 2, 3):
            (wl / f"{family}-s{seed}.csv").write_text(bad)
    proc = _run("a-srpt/asrpt-trace-all.py", str(wl), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {wl / 'jobs500-s1.csv'}:2: column 'duration'")
    assert proc.stderr.count("\n") == 1 and "got 'nan'" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("a-online/competitive.py", ["--seeds", "x"], "argument --seeds: expected whole numbers >= 0 as a range or a list"),
        ("a-online/competitive.py", ["--seeds", "5-1"], "argument --seeds: the range 5-1 ends below its start"),
        ("a-online/competitive.py", ["--jobs", "0"], "argument --jobs: expected whole numbers >= 1, got '0'"),
        ("a-online/competitive.py", ["--servers", ""], "argument --servers: expected whole numbers >= 1"),
        ("a-online/competitive.py", ["--eps", "nan"], "argument --eps: expected a finite number >= 0, got 'nan'"),
        ("a-online/competitive.py", ["--eps=-1"], "argument --eps: expected a finite number >= 0, got '-1'"),
        ("a-online/competitive.py", ["--time-limit", "nan"], "argument --time-limit: expected a finite number > 0"),
        ("pd-ors/competitive.py", ["--seeds", "1,1"], "argument --seeds: a number is listed twice in '1,1'"),
        ("pd-ors/competitive.py", ["--scale", "nan"], "argument --scale: expected a finite number >= 1, got 'nan'"),
        ("pd-ors/competitive.py", ["--machines", "0"], "argument --machines: expected a whole number >= 1"),
        ("pd-ors/competitive.py", ["--time-limit=-1"], "argument --time-limit: expected a finite number > 0"),
    ],
)  # fmt: skip
def test_competitive_options(script: str, args: list[str], expected: str, tmp_path: Path) -> None:
    """The competitive-ratio scripts' options: NaN, negative, empty or a word was a
    ValueError, ZeroDivisionError or ClusterError traceback (or a negative int64 in a trace)."""
    proc = _run(script, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {expected}"), proc.stderr
    assert proc.stderr.endswith(" (see competitive.py -h)\n") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        # --jobs -1 kept no job (np.arange(-1)) and printed empty tables, exit 0
        ("lazer/futile_victims.py", ["t.csv", "--jobs=-1"], "error: argument --jobs: expected a whole number >= 1, got '-1'"),
        ("lazer/futile_victims.py", ["t.csv", "--jobs", "0"], "error: argument --jobs: expected a whole number >= 1, got '0'"),
        # an IsADirectoryError traceback after all the work
        ("lazer/fig8e.py", ["t.csv", "--out", "."], "error: --out .: is a folder; expected a CSV file"),
        ("lazer/fig8e.py", ["t.csv", "--budget", "x"], "error: argument --budget: invalid int value: 'x'"),
        # a count of cases of 0 or less printed an empty table; 5 alone was taken for "not big"
        ("a-srpt/table2-heavy-edge.py", ["big", "0"], "error: argument cases: expected a whole number >= 1"),
        ("a-srpt/table2-heavy-edge.py", ["5"], "error: argument big: invalid choice: '5'"),
        ("a-srpt/table2-heavy-edge.py", ["--seeds=-1"], "error: argument --seeds: expected a whole number >= 0"),
    ],
)  # fmt: skip
def test_script_options(script: str, args: list[str], expected: str, tmp_path: Path) -> None:
    proc = _run(script, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(expected) and proc.stderr.count("\n") == 1, proc.stderr


def test_a_srpt_aggregate_without_seen_jobs(tmp_path: Path) -> None:
    """A sweep whose a-srpt runs evaluated no job of a seen group (a small workload: every
    group unseen) left the '(seen)' columns empty: a StatisticsError traceback (mean of no
    data); they show '-' now."""
    from tests.helpers import invoke

    cluster = EXAMPLES / "a-srpt" / "a-srpt-32x8.toml"
    trace = tmp_path / "x-s1.csv"
    r = invoke("workload", "a-srpt", "-n", "60", "-c", cluster, "-o", trace)
    assert r.exit_code == 0, r.output
    (tmp_path / "spec.toml").write_text(
        f'traces = ["{trace}"]\nclusters = ["{cluster}"]\npolicies = ["spjf", "a-srpt"]\n'
    )
    r = invoke("sweep", tmp_path / "spec.toml", "-o", tmp_path / "sw", "-j", "1")
    assert r.exit_code == 0, r.output
    proc = _run("a-srpt/aggregate.py", str(tmp_path / "sw" / "results.csv"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # | setting | policy | unseen share | predictor | within 10 % | within 10 % (seen) | ...
    rows = [ln.split(" | ") for ln in proc.stdout.splitlines() if " | forest | " in ln]
    assert rows and all(cells[5] == "-" for cells in rows), proc.stdout


def test_pollux_sjf_rows_without_large_jobs(tmp_path: Path) -> None:
    """A SJF-BSBF workload with no large job (> 4 GPUs): a StatisticsError traceback (the
    mean of no job); the cells of that part show nan now, as sjf-bsbf/aggregate.py's."""
    _run_folder(tmp_path / "out" / "sjf-n240-s1" / "pollux")
    (tmp_path / "out" / "wl" / "sjf-n240-s1.csv").write_text(
        "job_id,submit_time,num_gpus,duration\nj1,0,1,10\nj2,0,1,10\n"
    )
    proc = _run("pollux/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("| 240 | pollux | 1 |"))
    assert row.split(" | ")[4:6] == ["nan", f"{10 / 3600:.2f}"], row


@pytest.mark.parametrize("case", ["bad-summary", "one-seed"])
def test_pd_ors_run_sh_opt(case: str, tmp_path: Path) -> None:
    """run.sh's opt() (Lemma 8's bound from the other seeds' runs): a summary.json whose
    total_utility is not a number was a TypeError traceback, a single seed a
    ZeroDivisionError one; one error line now (and run.sh stops, set -e)."""
    import re

    text = (EXAMPLES / "pd-ors" / "run.sh").read_text()
    opt = re.search(r"^opt\(\) \{.*?^\}$", text, re.S | re.M)
    assert opt is not None
    out = tmp_path / "out"
    for seed, utility in [(1, 5), (2, "x" if case == "bad-summary" else None)]:
        if utility is None:
            continue
        run = out / f"fig7-s{seed}" / "pd-ors"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(f'{{"total_utility": {json.dumps(utility)}}}')
    script = tmp_path / "t.sh"
    script.write_text(
        f"set -euo pipefail\nHERE={EXAMPLES / 'pd-ors'}\nOUT={out}\n{opt.group(0)}\n"
        'o=$(opt fig7 "$1"); echo "opt=$o"\n'
    )
    bin_dir = Path(sys.executable).parent  # run.sh's `python` is the one running the tests
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    proc = subprocess.run(
        ["bash", str(script), "1"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    if case == "bad-summary":
        where = out / "fig7-s2" / "pd-ors" / "summary.json"
        assert proc.stderr.startswith(f"error: {where}: field total_utility: expected a finite")
    else:
        assert proc.stderr.startswith(f"error: {out}: no run of fig7 on a seed other than 1")
    good = subprocess.run(
        ["bash", str(script), "2"], capture_output=True, text=True, env=env, timeout=60
    )
    assert good.stdout == "opt=5\n", good.stderr


def test_asrpt_trace_reads_the_trace_as_gpusched_does(tmp_path: Path) -> None:
    """asrpt-trace.py replays TRACE through gpusched (a bundled name, .csv.gz), then opened
    it again as plain CSV for its last table: a FileNotFoundError ('tiny') or
    UnicodeDecodeError (.csv.gz) traceback after the whole replay."""
    import gzip

    cluster = str(EXAMPLES / "a-srpt" / "a-srpt-32x8.toml")
    tiny = (EXAMPLES.parent / "traces" / "tiny.csv").read_bytes()
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(tiny))
    for trace in ("tiny", "t.csv.gz"):
        proc = _run("a-srpt/asrpt-trace.py", trace, cluster, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "longest wait: job " in proc.stdout
