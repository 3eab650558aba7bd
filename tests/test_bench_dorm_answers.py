"""bench/dorm_answers.py: run.sh's Dorm runs, the record of every MILP's answer, and the
comparison of two records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpusched.algorithms.dorm_milp as dm
from bench import dorm_answers

RUN_SH = Path(__file__).resolve().parent.parent / "examples" / "pd-ors" / "run.sh"


def test_settings_are_run_sh_dorm_runs():
    runs = list(dorm_answers.settings([1, 2]))
    assert len(runs) == 18  # 3 Fig. 7 + 3 Fig. 6 + 3 Fig. 9 runs per seed
    names = [name for name, _, _ in runs]
    assert names[:3] == ["fig7-jobs20-s1", "fig7-jobs60-s1", "fig7-jobs100-s1"]
    assert names[-1] == "fig9-x18max-s2"
    by_name = {name: (wl, cluster) for name, wl, cluster in runs}
    assert by_name["fig9-philly-s2"] == (
        {"seed": 2, "jobs": 100, "horizon": 80, "arrivals": "philly"},
        "pd-ors-30",
    )
    # the same cluster choice as run.sh: the example folder's file where there is one
    assert by_name["fig6-machines10-s1"][1].endswith("examples/pd-ors/clusters/pd-ors-10.toml")
    assert by_name["fig6-machines30-s1"][1] == "pd-ors-30"
    assert Path(by_name["fig9-x18max-s1"][1]).is_file()
    text = RUN_SH.read_text()
    assert 'JOBS=${JOBS:-"20 60 100"}' in text and 'MACHINES=${MACHINES:-"10 30 100"}' in text
    assert [n for n, _, _ in dorm_answers.settings([3], only="fig6")] == [
        "fig6-machines10-s3",
        "fig6-machines30-s3",
        "fig6-machines100-s3",
    ]


@pytest.fixture(scope="module")
def small_record():
    rows = []
    dorm_answers.record([1], only="fig7-jobs20", out=rows.append)
    return rows


def test_record_has_every_milp_and_restores_the_solver(small_record):
    milps = [r for r in small_record if "milp" in r]
    (end,) = [r for r in small_record if "total_utility" in r]
    assert end["milps"] == len(milps) > 0
    assert [r["milp"] for r in milps] == list(range(len(milps)))
    assert all(r["status"] == "kOptimal" and r["nodes"] >= 0 for r in milps)
    assert any(r["nodes"] > 1 for r in milps)  # HiGHS's node count, read from the solver
    assert all(r["answer"] == dorm_answers._digest(r["workers"]) for r in milps)
    assert dm.solve_counts.__name__ == "solve_counts"  # put back


def test_compare_finds_the_first_answer_that_differs(small_record):
    assert dorm_answers.compare(small_record, small_record) == [
        f"fig7-jobs20-s1: the same {small_record[-1]['milps']} answers"
    ]
    moved = [dict(r) for r in small_record]
    moved[2]["answer"] = "another"
    assert dorm_answers.compare(moved, small_record) == [
        "fig7-jobs20-s1: MILP 2 is the first to differ (kOptimal against kOptimal)"
    ]
    assert dorm_answers.compare(small_record, []) == ["fig7-jobs20-s1: not in the other record"]


def test_main_writes_a_record_and_compares(tmp_path, small_record, capsys):
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in small_record))
    new = tmp_path / "new.jsonl"
    assert (
        dorm_answers.main(
            ["-o", str(new), "--seeds", "1", "--only", "fig7-jobs20", "--against", str(old)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "fig7-jobs20-s1: the same" in out  # the same answers on the same code
    assert len(new.read_text().splitlines()) == len(small_record)


@pytest.mark.parametrize("bad", ["x", "1-", "a,b"])
def test_bad_seeds_are_one_line(bad):
    with pytest.raises(SystemExit, match="expected a range like 1-6"):
        dorm_answers.main(["-o", "unused.jsonl", "--seeds", bad])


def test_an_unreadable_record_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(SystemExit, match="cannot read the record"):
        dorm_answers.main(["-o", str(tmp_path / "o.jsonl"), "--against", str(bad)])
