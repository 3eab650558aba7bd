"""``compare --seeds``: run folders, comparison.csv, paired differences, {seed} traces, errors."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from gpusched.errors import GpuschedError
from gpusched.experiments.seeds import compare_seeds, parse_seeds
from gpusched.results.stats import t_interval
from tests.helpers import invoke

POLICIES = ["fifo", "srtf"]


def seed_trace(folder: Path, seed: int) -> Path:
    """A small contended trace that differs by seed (every job needs the whole cluster)."""
    rows = [("a", 0, 100 + 10 * seed), ("b", 1, 10 * seed), ("c", 2, 30 + seed * seed)]
    path = folder / f"w-{seed}.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,duration\n" + "".join(f"{j},{t},32,{d}\n" for j, t, d in rows)
    )
    return path


@pytest.fixture
def traces(tmp_path: Path) -> str:
    for seed in (1, 2, 3):
        seed_trace(tmp_path, seed)
    return str(tmp_path / "w-{seed}.csv")


def summary(out: Path, policy: str, seed: int) -> dict:
    return json.loads((out / policy / f"seed-{seed}" / "summary.json").read_text())


def test_folders_compare_csv_and_paired_differences(tmp_path, traces):
    out = tmp_path / "c"
    res = compare_seeds(traces, POLICIES, (1, 2, 3), out=out, workers=1)
    for p in POLICIES:
        for s in (1, 2, 3):
            for name in ("jobs.csv", "timeline.csv", "summary.json", "manifest.json"):
                assert (out / p / f"seed-{s}" / name).is_file()
            manifest = json.loads((out / p / f"seed-{s}" / "manifest.json").read_text())
            assert manifest["seed"] == s and manifest["trace"].endswith(f"w-{s}.csv")
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    by = {(r["policy"], r["metric"]): r for r in rows}
    assert {r["policy"] for r in rows} == set(POLICIES)
    for metric in ("avg_jct_s", "total_jct_s", "makespan_s"):
        fifo = [summary(out, "fifo", s)[metric] for s in (1, 2, 3)]
        srtf = [summary(out, "srtf", s)[metric] for s in (1, 2, 3)]
        row = by["srtf", metric]
        diffs = [b - a for a, b in zip(fifo, srtf, strict=True)]
        assert float(row["diff_mean"]) == pytest.approx(sum(diffs) / 3)
        assert row["diff_n"] == "3" and row["baseline"] == "fifo"
        assert float(row["mean"]) == pytest.approx(sum(srtf) / 3)
        ref = t_interval(diffs)
        assert float(row["diff_half_width"]) == pytest.approx(ref.half_width)
        assert row["within_noise"] == ("true" if ref.low <= 0 <= ref.high else "false")
        assert by["fifo", metric]["diff_mean"] == ""  # the baseline has no difference
    # SRTF runs the short job b first on every seed: a clear gain on average JCT
    assert float(by["srtf", "avg_jct_s"]["diff_high"]) < 0
    assert by["srtf", "avg_jct_s"]["within_noise"] == "false"
    runs = list(csv.DictReader((out / "compare-runs.csv").open()))
    assert [(r["policy"], r["seed"]) for r in runs] == [
        (p, str(s)) for p in POLICIES for s in (1, 2, 3)
    ]
    assert runs[4]["folder"] == "srtf/seed-2"
    assert float(runs[4]["avg_jct_s"]) == summary(out, "srtf", 2)["avg_jct_s"]
    assert res.stat("srtf", "avg_jct_s").diff.n == 3


def test_policy_seeds_on_one_trace_are_all_the_same_run(tmp_path):
    trace = seed_trace(tmp_path, 2)
    res = compare_seeds(str(trace), ["fifo"], (4, 5), workers=1)
    assert [res.summaries["fifo", s]["avg_jct_s"] for s in (4, 5)] == [
        res.summaries["fifo", 4]["avg_jct_s"]
    ] * 2
    stat = res.stat("fifo", "avg_jct_s")
    assert stat.interval.half_width == 0.0 and stat.diff is None
    assert not res.workload_seeds


def test_dask_gives_the_same_results_as_one_process(tmp_path, traces):
    here = compare_seeds(traces, POLICIES, (1, 2, 3), workers=1)
    dask = compare_seeds(traces, POLICIES, (1, 2, 3), workers=2, processes=False)
    for key, s in here.summaries.items():
        other = dict(dask.summaries[key])
        assert {k: v for k, v in other.items() if k != "wall_s"} == {
            k: v for k, v in s.items() if k != "wall_s"
        }


def test_cli_table_marks_and_files(tmp_path, traces):
    out = tmp_path / "c"
    r = invoke(
        "compare",
        traces,
        "-P",
        "fifo",
        "-P",
        "srtf",
        "-P",
        "fifo:backfill=true",
        "--seeds",
        "1-3",
        "--workers",
        "1",
        "-o",
        out,
    )
    assert r.exit_code == 0, r.output
    assert "3 workload and policy seeds (1-3), 9 runs" in r.output
    assert "±" in r.output and "nan" not in r.output
    assert "paired by seed against fifo" in r.output
    # backfilling FIFO changes nothing here: every job needs the whole cluster
    line = next(x for x in r.output.splitlines() if x.startswith("fifo:backfill=true"))
    cells = re.split(r"\s{2,}", line.strip())  # policy, finished, avg JCT s, ...
    assert cells[2].endswith(" =") and "=: the same as fifo on every seed" in r.output
    srtf = re.split(r"\s{2,}", next(x for x in r.output.splitlines() if x.startswith("srtf")))
    mean, _, half = srtf[2].partition(" ± ")
    assert half[-1].isdigit()  # a clear gain: no mark
    fifo_jct = [
        summary(out, "fifo:backfill=true".replace(":", "_"), s)["avg_jct_s"] for s in (1, 2, 3)
    ]
    assert float(cells[2].partition(" ± ")[0]) == pytest.approx(sum(fifo_jct) / 3, abs=0.05)
    assert (out / "fifo_backfill=true" / "seed-3" / "jobs.csv").is_file()
    # a second comparison into the same folder is refused, then replaced with --force
    again = ("compare", traces, "-P", "fifo", "--seeds", "1,2", "--workers", "1", "-o", out)
    r = invoke(*again)
    assert r.exit_code == 2 and "already holds results" in r.output
    r = invoke(*again, "--force")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["compare-runs.csv", "comparison.csv", "fifo"]
    assert sorted(p.name for p in (out / "fifo").iterdir()) == ["seed-1", "seed-2"]


def test_cli_one_seed_says_there_is_no_interval(tmp_path, traces):
    r = invoke("compare", traces, "-P", "fifo", "-P", "srtf", "--seeds", "2")
    assert r.exit_code == 0, r.output
    assert "one seed: no confidence intervals" in r.output
    assert "±" not in r.output and "nan" not in r.output


def test_single_run_compare_refuses_seed_folders(tmp_path, traces):
    out = tmp_path / "c"
    assert invoke("compare", traces, "-P", "fifo", "--seeds", "1", "-o", out).exit_code == 0
    r = invoke("compare", tmp_path / "w-1.csv", "-P", "fifo", "-o", out)
    assert r.exit_code == 2 and "already holds results" in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "1-4"], "seed 4: trace not found:"),
        (["--seeds", "1-2", "--seed", "3"], "drop --seed"),
        (["--seeds", "3-1"], "ends below its start"),
        (["--seeds", "1,x"], "got 'x'"),
        (["--seeds", "1,2,1"], "seed 1 is listed twice"),
        (["--seeds", "1-2", "--workers", "0"], "--workers must be at least 1"),
        # thousands of processes of 100-150 MB each would exhaust the machine's memory
        (["--seeds", "1-2", "--workers", "100000"], "at most"),
        (["--seeds", "1-2", "-o", "{out}", "--plot"], "plot a seed's runs"),
        (["--workers", "2"], "give --seeds"),
        ([], "names {seed}: give --seeds"),
        (["--seeds", "1-2", "-P", "fifo"], "give each policy once"),
    ],
)
def test_cli_errors(tmp_path, traces, args, message):
    args = [a.replace("{out}", str(tmp_path / "o")) for a in args]
    r = invoke("compare", traces, "-P", "fifo", *args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("error: ")


def test_missing_seed_trace_is_named(tmp_path, traces):
    with pytest.raises(GpuschedError, match=r"seed 9: trace not found: .*w-9\.csv"):
        compare_seeds(traces, ["fifo"], (1, 9), workers=1)


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("1-5", (1, 2, 3, 4, 5)), ("1,3,7", (1, 3, 7)), ("0-2, 10 ,20-21", (0, 1, 2, 10, 20, 21))],
)
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "1,", "-1", "1-", "a-b", "1-2-3", str(2**32)])
def test_parse_seeds_refuses(text):
    with pytest.raises(GpuschedError, match="--seeds"):
        parse_seeds(text)
