"""bench/peers.py: the conversions of a gpusched trace to the research simulators' formats
(hand-checked on three jobs), and the table of pairs."""

from __future__ import annotations

import csv
import json
import os
import sys

from bench import peers

JOBS = [
    {"id": "a", "submit": 0.0, "gpus": 1, "duration": 10.4},
    {"id": "b", "submit": 2.6, "gpus": 16, "duration": 100.0},
    {"id": "c", "submit": 7.0, "gpus": 3, "duration": 0.2},
]


def test_read_jobs_sorts_by_submission(tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("job_id,submit_time,num_gpus,duration\nx,5,2,7.5\ny,1.5,1,3\n")
    assert [j["id"] for j in peers.read_jobs(t)] == ["y", "x"]
    assert peers.read_jobs(t)[1] == {"id": "x", "submit": 5.0, "gpus": 2, "duration": 7.5}


def test_tiresias_format(tmp_path):
    args = peers.to_tiresias(JOBS, servers=4, gpus=8, out=tmp_path)
    assert args[1] == "--scheme=yarn"
    rows = list(csv.reader(open(tmp_path / "trace.csv")))
    assert rows[0] == [
        "job_id",
        "num_gpu",
        "submit_time",
        "iterations",
        "model_name",
        "duration",
        "interval",
    ]
    # whole seconds, at least 1 s of work; interval to the next submission
    assert rows[1:] == [
        ["0", "1", "0", "10", "resnet50", "10", "3"],
        ["1", "16", "3", "100", "resnet50", "100", "4"],
        ["2", "3", "7", "1", "resnet50", "1", "0"],
    ]
    spec = list(csv.reader(open(tmp_path / "cluster.csv")))
    assert spec[1] == ["1", "4", "8", "512", "256"]


def test_lucid_format(tmp_path):
    checkout = tmp_path / "Lucid"
    (checkout / "simulation" / "data").mkdir(parents=True)
    (checkout / "simulation" / "data" / "colocate_info.csv").write_text("x\n")
    work = peers.to_lucid(JOBS, servers=4, checkout=checkout, out=tmp_path / "l")
    rows = list(csv.DictReader(open(tmp_path / "l" / "trace" / "cluster_full_log_0.csv")))
    got = [(r["job_id"], r["gpu_num"], r["submit_time"], r["duration"], r["vc"]) for r in rows]
    assert got == [
        ("0", "1", "0", "10", "vc0"),
        ("1", "16", "3", "100", "vc0"),
        ("2", "3", "7", "1", "vc0"),
    ]
    assert (tmp_path / "l" / "trace" / "vc_config.csv").read_text() == ",num\nvc0,4\n"
    assert (work / "estimator" / "lgb" / f"{peers.LUCID_EXPERIMENT}_lgb.csv").is_file()
    assert (work / "data" / "colocate_info.csv").read_text() == "x\n"


def test_gavel_format(tmp_path):
    checkout = tmp_path / "gavel"
    (checkout / "scheduler").mkdir(parents=True)
    rates = {str((peers.GAVEL_JOB, g)): {"null": 2.0 * g} for g in peers.GAVEL_GANGS}
    (checkout / "scheduler" / "simulation_throughputs.json").write_text(json.dumps({"v100": rates}))
    trace, capped = peers.to_gavel(JOBS, checkout, tmp_path / "g")
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    # steps = duration x steps/s of the gang alone on V100s; 16 GPUs become 8, 3 become 4
    assert [(f[0], f[5], f[6], f[9]) for f in lines] == [
        (peers.GAVEL_JOB, "21", "1", "0.0"),
        (peers.GAVEL_JOB, "1600", "8", "2.6"),
        (peers.GAVEL_JOB, "2", "4", "7.0"),
    ]
    assert capped == 1 and all(len(f) == 10 for f in lines)


def test_the_table_pairs_each_peer_run_with_the_gpusched_run_after_it(capsys):
    R = peers.Run
    runs = [
        R("lucid", "lucid", "10k", "fifo", 0, 20.0, 10.0, 100, 1.0, True),
        R("gpusched", "lucid", "10k", "fifo", 0, 1.0, 0.5, 120, 1.0, True),
        R("lucid", "lucid", "10k", "fifo", 1, 30.0, 12.0, 100, 1.0, True),
        R("gpusched", "lucid", "10k", "fifo", 1, 2.0, 0.4, 120, 1.0, True),
        R("tiresias", "tiresias", "10k", "fifo", 0, 9.0, 9.0, 80, 2.0, True),
        R("gpusched", "tiresias", "10k", "fifo", 0, 3.0, 1.0, 120, 2.0, True),
    ]
    peers.print_table(runs)
    out = capsys.readouterr().out.splitlines()
    lucid = next(line for line in out if "| lucid |" in line)
    assert "| 17.5x | 25.0x |" in lucid  # medians of 20 and 15, of 20 and 30
    tiresias = next(line for line in out if "| tiresias |" in line)
    assert "| 3.0x | 9.0x |" in tiresias


def test_measure_samples_the_private_memory_a_process_writes(tmp_path):
    """60 MB written by the process (anonymous pages) show in its private peak; a process
    that writes nothing has a far smaller one."""
    grow = "b = bytearray(60 * 2**20); import time; time.sleep(0.3)"
    rest = "import time; time.sleep(0.3)"
    got = {}
    for name, code in (("grow", grow), ("rest", rest)):
        wall, cpu, rss, ok, note, private = peers.measure(
            [sys.executable, "-c", code], tmp_path, dict(os.environ), 30.0, tmp_path
        )
        assert ok and note == ""
        assert private <= rss
        got[name] = private
    assert got["grow"] >= 60 and got["rest"] < 30, got


def test_the_table_gives_the_private_peaks_beside_max_rss(capsys):
    R = peers.Run
    runs = [
        R("lucid", "lucid", "10k", "fifo", 0, 20.0, 10.0, 110, 1.0, True, "", 70),
        R("gpusched", "lucid", "10k", "fifo", 0, 1.0, 0.5, 128, 1.0, True, "", 57),
    ]
    peers.print_table(runs)
    row = next(line for line in capsys.readouterr().out.splitlines() if "| lucid |" in line)
    assert "| 110 / 128 | 70 / 57 |" in row
