"""``gpusched diff``: hand-made jobs.csv pairs, counts, top gainers and losers, errors."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import pytest

from gpusched.results.diff import diff_runs, format_duration, read_run_jobs
from tests.helpers import invoke, one_line_error, seal

HEAD = "job_id,submit,first_start,finish,jct,wait_s,gpus,duration,slowdown_s\n"


def run(folder: Path, rows: list[tuple[str, float, str, str, str]]) -> Path:
    """A run folder whose jobs.csv has (job, submit, jct, wait, slowdown) rows ('' = unfinished)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{j},{t},,,{jct},{w},1,10,{s}\n" for j, t, jct, w, s in rows]
    (folder / "jobs.csv").write_text(HEAD + "".join(lines))
    return seal(folder, trace_sha256="ab" * 32)  # runs of one trace


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a = run(
        tmp_path / "a",
        [
            ("j1", 0, "100", "0", "0"),  # gains 60 s
            ("j2", 1, "50", "10", "0"),  # loses 30 s
            ("j3", 2, "7200", "3600", "5"),  # gains 2 h
            ("j4", 3, "20", "0", "0"),  # unchanged (within 1e-9 relative)
            ("j5", 4, "30", "0", "0"),  # finishes only in A
            ("j6", 5, "", "", ""),  # finishes only in B
            ("j7", 6, "10", "0", "0"),  # loses 1 s
        ],
    )
    b = run(
        tmp_path / "b",
        [
            ("j1", 0, "40", "0", "0"),
            ("j2", 1, "80", "40", "0"),
            ("j3", 2, "0", "0", "0"),
            ("j4", 3, repr(20 * (1 + 1e-12)), "0", "0"),
            ("j5", 4, "", "", ""),
            ("j6", 5, "15", "5", "0"),
            ("j7", 6, "11", "1", "0"),
        ],
    )
    return a, b


def test_counts_changes_and_top(pair):
    d = diff_runs(read_run_jobs(pair[0]), read_run_jobs(pair[1]))
    assert [d.count(k) for k in ("gained", "lost", "unchanged")] == [2, 2, 1]
    assert d.count("finished_only_in_a") == 1 and d.count("finished_only_in_b") == 1
    assert [d.a.job_id[i] for i in d.top("gained", 5)] == ["j3", "j1"]
    assert [d.a.job_id[i] for i in d.top("lost", 1)] == ["j2"]
    assert d.change_s[0] == -60 and d.change_s[2] == -7200 and d.change_s[6] == 1
    assert math.isnan(d.change_s[4]) and math.isnan(d.change_s[5])


def test_cli_summary_and_csv(pair, tmp_path):
    out = tmp_path / "d.csv"
    r = invoke("diff", *pair, "--top", "1", "-o", out)
    assert r.exit_code == 0, r.output
    assert "7 jobs of the same trace, 5 finished in both" in r.output
    assert "gained (faster in B): 2   lost (slower in B): 2   unchanged: 1" in r.output
    assert "finished only in A: 1   finished only in B: 1" in r.output
    # over the 5 jobs finished in both: A 100+50+7200+20+10 = 7380 s, B 40+80+0+20+11 =
    # 151 s; change -7229 s (120.5 min, -97.95 %), -1445.8 s per job; wait -3570 s / 5
    assert "total JCT: 2h 03m in A, 2m 31s in B, change -2h 00m (-98.0 %)" in r.output
    assert "mean JCT change: -24m 06s per job; mean wait change: -11m 54s" in r.output
    gained = r.output.split("that gained most")[1].splitlines()
    assert gained[2].split()[0] == "j3" and "2h 00m -> 0 s" in gained[2]
    assert "top 1 that lost most" in r.output and "+30 s" in r.output
    rows = list(csv.DictReader(out.open()))
    assert [row["outcome"] for row in rows] == [
        "gained",
        "lost",
        "gained",
        "unchanged",
        "finished_only_in_a",
        "finished_only_in_b",
        "lost",
    ]
    assert float(rows[1]["jct_change_s"]) == 30.0 and rows[4]["jct_change_s"] == ""
    assert float(rows[1]["wait_change_s"]) == 30.0 and rows[0]["slowdown_b"] == "0.0"


def test_a_jobs_csv_path_works_as_well_as_its_folder(pair):
    r = invoke("diff", pair[0] / "jobs.csv", pair[1])
    assert r.exit_code == 0, r.output
    assert "gained (faster in B): 2" in r.output


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("j1", 0, "1", "0", "0")], "7 jobs in A, 1 in B"),
        (
            [(f"j{i}", i - 1, "1", "0", "0") for i in (1, 2, 3, 4, 5, 7, 6)],
            "job 6 is 'j6' in A but 'j7' in B",
        ),
        (
            [(f"j{i}", 9 if i == 4 else i - 1, "1", "0", "0") for i in range(1, 8)],
            "job 'j4' is submitted at 3 s in A but at 9 s in B",
        ),
    ],
)
def test_other_traces_are_refused(pair, tmp_path, rows, message):
    other = run(tmp_path / "other", rows)
    r = invoke("diff", pair[0], other)
    assert r.exit_code == 2, r.output
    assert "are not runs of the same trace" in r.output and message in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_bad_files(tmp_path, pair):
    (tmp_path / "empty").mkdir()
    r = invoke("diff", tmp_path / "empty", pair[1])
    assert r.exit_code == 2 and "RUN_A" in r.output and "no manifest.json" in r.output
    r = invoke("diff", pair[0], tmp_path / "missing")
    assert r.exit_code == 2 and "RUN_B" in r.output and "no such run folder" in r.output
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "jobs.csv").write_text(HEAD + "j1,0,,,abc,0,1,10,0\n")
    r = invoke("diff", seal(bad), pair[1])
    assert r.exit_code == 2
    assert (
        "jobs.csv:2: column 'jct': expected a number of seconds >= 0, or empty, got 'abc'"
        in r.output
    )
    (bad / "jobs.csv").write_text("job_id,submit\nj1,0\n")
    r = invoke("diff", seal(bad), pair[1])
    assert r.exit_code == 2 and "no 'jct', 'wait_s' column" in r.output
    (bad / "jobs.csv").write_text(HEAD + "j1,0,,,1,0,1,10,0\nj1,1,,,1,0,1,10,0\n")
    r = invoke("diff", seal(bad), pair[1])
    assert r.exit_code == 2
    assert "jobs.csv:3: column 'job_id': expected each job once (it appears twice), got 'j1'" in (
        r.output
    )
    r = invoke("diff", *pair, "--top", "-1")
    assert r.exit_code == 2 and "--top must be an integer >= 0" in r.output


def test_runs_without_slowdown_compare(tmp_path):
    head = "job_id,submit,jct,wait_s\n"
    for name, jct in (("a", 5), ("b", 4)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "jobs.csv").write_text(head + f"x,0,{jct},0\n")
        seal(tmp_path / name)
    r = invoke("diff", tmp_path / "a", tmp_path / "b")
    assert r.exit_code == 0, r.output
    table = r.output.split("that gained most")[1].splitlines()
    assert table[1].split() == ["job", "JCT", "change", "wait"]
    assert "gained (faster in B): 1" in r.output


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.5, "0.5 s"),
        (59.94, "59.9 s"),
        (59.99, "1m 00s"),
        (725, "12m 05s"),
        (3599.6, "1h 00m"),
        (10920, "3h 02m"),
        (7 * 86400 + 1800, "7d 00h 30m"),
        (-95, "-1m 35s"),
        (math.nan, "-"),
        (math.inf, "inf s"),
        (-math.inf, "-inf s"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_runs_of_different_traces_are_refused_by_their_manifests(tmp_path):
    """Every duration x10 keeps ids and submission times: only the manifests' trace hashes
    tell the runs apart (issue 27: diff reported "+922.8 %" as if of the same trace)."""
    from gpusched.io.resources import resolve_trace

    rows = list(csv.DictReader(resolve_trace("tiny").open()))
    slow = tmp_path / "slow.csv"
    with slow.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "duration": str(10 * float(r["duration"]))} for r in rows)
    assert invoke("replay", "tiny", "-P", "fifo", "-o", tmp_path / "a").exit_code == 0
    assert invoke("replay", slow, "-P", "fifo", "-o", tmp_path / "b").exit_code == 0
    r = invoke("diff", tmp_path / "a", tmp_path / "b")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "are not runs of the same trace: their manifests record different traces" in r.output
    # the same trace under another name is the same trace
    same = tmp_path / "same.csv"
    same.write_bytes(resolve_trace("tiny").read_bytes())
    assert invoke("replay", same, "-P", "srtf", "-o", tmp_path / "c").exit_code == 0
    assert invoke("diff", tmp_path / "a", tmp_path / "c").exit_code == 0
    # a jobs.csv given itself is checked against the manifest beside it
    (tmp_path / "c" / "jobs.csv").write_text(HEAD)
    r = invoke("diff", tmp_path / "a", tmp_path / "c" / "jobs.csv")
    assert r.exit_code == 2 and "differs from the table manifest.json records" in r.output
    # ... and refused when that manifest is damaged: its trace can no longer be told
    # (the jobs.csv of the slower trace was compared as if of the same one)
    man = tmp_path / "b" / "manifest.json"
    man.write_text(man.read_text()[:300])
    one_line_error(
        invoke("diff", tmp_path / "a" / "jobs.csv", tmp_path / "b" / "jobs.csv"),
        "RUN_B",
        "the manifest beside it cannot be read",
        "not a JSON manifest",
    )


def test_a_table_the_manifest_does_not_record_is_read_with_a_note(tmp_path):
    assert invoke("replay", "tiny", "-o", tmp_path / "a").exit_code == 0
    assert invoke("replay", "tiny", "-o", tmp_path / "p", "--format", "parquet").exit_code == 0
    stray = tmp_path / "p" / "jobs.csv"  # a CSV beside the Parquet run's own tables
    stray.write_bytes((tmp_path / "a" / "jobs.csv").read_bytes())
    r = invoke("diff", tmp_path / "a", stray)
    assert r.exit_code == 0, r.output
    assert "is not a table the manifest.json beside it records: read unchecked" in r.output
    # without the trace's hash on both sides, the summary does not claim the same trace
    assert "with the same ids and submission times (a trace's hash is not recorded" in r.output
    r = invoke("diff", tmp_path / "a", tmp_path / "p")
    assert r.exit_code == 0 and "jobs of the same trace" in r.output


def test_the_per_job_csv_is_written_whole_and_never_through_a_link(pair, tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    assert invoke("diff", *pair, "-o", link).exit_code == 0
    assert victim.read_text() == "precious\n" and not link.is_symlink()
    assert link.read_text().startswith("job_id,submit,outcome")
    import gpusched.results.diff as diff_mod

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(diff_mod, "_cell", full)
    before = link.read_text()
    r = invoke("diff", *pair, "-o", link)
    assert r.exit_code == 2 and "no space left" in r.output
    assert link.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (b"\x9b\x00binary", ["bad.csv", "not a text (UTF-8) CSV file"]),
        (
            (HEAD + "x" * 200_000 + ",0,,,1,0,1,10,0\n").encode(),
            ["bad.csv", "not a readable CSV file", "field larger than field limit"],
        ),
    ],
    ids=["not-utf8", "field-too-large"],
)
def test_a_jobs_csv_that_is_not_csv_text_is_one_line(pair, tmp_path, content, needles):
    """A bare jobs.csv that was not UTF-8 or not CSV ended in a UnicodeDecodeError or a
    csv.Error traceback (explain and plot said so in one line)."""
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content)
    one_line_error(invoke("diff", pair[0] / "jobs.csv", bad), *needles)


@pytest.mark.parametrize(
    ("make", "needles"),
    [
        (lambda t: (t / "out").mkdir() or t / "out", ["--out", "out: is a folder; expected"]),
        (
            lambda t: (t / "f").write_text("") or t / "f" / "d.csv",
            ["--out", "d.csv is under", "which is a file, not a folder"],
        ),
    ],
    ids=["a-folder", "under-a-file"],
)
def test_out_names_the_file_given_not_a_temporary_one(pair, tmp_path, make, needles):
    """``diff -o FOLDER`` said 'is a folder, expected a file: .FOLDER.<pid>.tmp'."""
    line = one_line_error(invoke("diff", *pair, "-o", make(tmp_path)), *needles)
    assert ".tmp" not in line


@pytest.mark.parametrize("kind", ["fifo", "link-to-a-device"])
def test_out_never_replaces_a_device_or_a_pipe(pair, tmp_path, kind):
    """``diff -o /dev/full`` replaced the device with the table (the table is renamed over
    its target), with exit 0."""
    out = tmp_path / "d.csv"
    if kind == "fifo":
        os.mkfifo(out)
    else:  # (making a device itself needs root)
        out.symlink_to("/dev/null")
    before = os.lstat(out)
    one_line_error(
        invoke("diff", *pair, "-o", out), "--out", "d.csv: not a regular file (a pipe or a device)"
    )
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


@pytest.mark.parametrize("which", [0, 1])
def test_an_empty_run_name_is_not_the_current_folder(pair, monkeypatch, which):
    """``diff ../B ""`` inside run A diffed A against B, exit 0 (``Path("")`` is ``.``)."""
    monkeypatch.chdir(pair[0])
    args = [str(pair[1]), str(pair[1])]
    args[which] = ""
    one_line_error(
        invoke("diff", *args), f"RUN_{'AB'[which]}: an empty name ''; expected a run folder"
    )


def test_out_in_a_missing_folder_makes_it(pair, tmp_path):
    """``diff -o new/d.csv`` makes ``new/``, as ``replay -o`` and ``workload -o`` do."""
    out = tmp_path / "new" / "deeper" / "d.csv"
    r = invoke("diff", *pair, "-o", out)
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("job_id,")
