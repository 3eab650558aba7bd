"""Run folders are transactions (docs/cli.md, on --out DIR; issue 27, part 1): a results folder appears whole
or not at all, is never mixed with an earlier run's, never written through a symbolic
link, never named outside ``--out``, and its manifest records every table."""

from __future__ import annotations

import csv
import errno
import hashlib
import json
import os
from pathlib import Path

import pytest

from gpusched.io.runfolder import FolderLock, FolderTransaction, safe_name
from tests.helpers import invoke, one_line_error


def leftovers(parent: Path) -> list[str]:
    """Hidden staging folders, old copies and locks left beside the targets."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# --- one replay --------------------------------------------------------------------------


def test_replay_refuses_a_results_folder_and_force_replaces_it_whole(tmp_path):
    run = tmp_path / "R"
    assert invoke("replay", "tiny", "-P", "srtf", "-o", run, "--events").exit_code == 0
    assert (run / "events.csv").is_file()
    one_line_error(
        invoke("replay", "tiny", "-P", "fifo", "-o", run), "--out", "already holds results"
    )
    assert json.loads((run / "manifest.json").read_text())["policy"] == "srtf"  # untouched
    r = invoke("replay", "tiny", "-P", "fifo", "-o", run, "--force", "--format", "parquet")
    assert r.exit_code == 0, r.output
    # the old srtf events.csv and jobs.csv are gone: nothing of the first run is left
    assert sorted(p.name for p in run.iterdir()) == [
        "jobs.parquet",
        "manifest.json",
        "summary.json",
        "timeline.parquet",
    ]
    assert invoke("explain", run, "--worst", "2").exit_code == 0
    assert leftovers(tmp_path) == []


def test_force_needs_out():
    one_line_error(invoke("replay", "tiny", "--force"), "--force replaces the results in --out")


def test_manifest_records_every_table_with_rows_and_hash(tmp_path):
    run = tmp_path / "R"
    assert invoke("replay", "tiny", "-P", "srtf", "-o", run, "--events").exit_code == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert set(manifest["tables"]) == {"jobs.csv", "timeline.csv", "events.csv"}
    for name, record in manifest["tables"].items():
        with (run / name).open(newline="") as fh:
            assert record["rows"] == sum(1 for _ in csv.reader(fh)) - 1
        assert record["sha256"] == hashlib.sha256((run / name).read_bytes()).hexdigest()
    assert len(manifest["trace_sha256"]) == 64
    # the same run leaves the same manifest (tables included)
    again = tmp_path / "R2"
    assert invoke("replay", "tiny", "-P", "srtf", "-o", again, "--events").exit_code == 0
    other = json.loads((again / "manifest.json").read_text())
    assert other["tables"] == manifest["tables"]


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_out_that_is_a_symlink_is_refused(tmp_path, command):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "R"
    link.symlink_to(elsewhere)
    one_line_error(invoke(command, "tiny", "-P", "fifo", "-o", link), "is a symbolic link")
    assert list(elsewhere.iterdir()) == []


def test_a_symlink_inside_the_folder_is_never_written_through(tmp_path):
    run = tmp_path / "R"
    assert invoke("replay", "tiny", "-P", "fifo", "-o", run).exit_code == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / "jobs.csv").unlink()
    (run / "jobs.csv").symlink_to(victim)
    for force in ((), ("--force",)):
        one_line_error(
            invoke("replay", "tiny", "-P", "fifo", "-o", run, *force),
            "jobs.csv (a symbolic link), which is not one of a run's result files",
        )
    assert victim.read_text() == "precious\n"


def test_files_are_created_exclusively_in_the_staging_folder(tmp_path):
    """A link planted in the staging folder while a run writes is refused, not followed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    with pytest.raises(FileExistsError), FolderTransaction(tmp_path / "R") as tx:
        (tx.staging / "jobs.csv").symlink_to(victim)
        from gpusched.io.tables import write_table

        write_table(tx.staging / "jobs.csv", {"a": __import__("numpy").arange(3)}, exclusive=True)
    assert victim.read_text() == "precious\n" and not (tmp_path / "R").exists()


def test_a_folder_of_other_files_is_never_replaced(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("keep me")
    for force in ((), ("--force",)):
        one_line_error(
            invoke("replay", "tiny", "-o", mine, *force),
            "holds notes.md, which is not one of a run's result",
        )
    assert (mine / "notes.md").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("replay", "tiny", "-o", empty).exit_code == 0  # an empty folder is fine
    assert (empty / "manifest.json").is_file()


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path):
    run = tmp_path / "R"
    with FolderLock(tmp_path / ".R.lock", run):
        line = one_line_error(
            invoke("replay", "tiny", "-o", run), f"{run} is in use by another gpusched run"
        )
        assert f"pid {os.getpid()}" in line
        one_line_error(invoke("compare", "tiny", "-P", "fifo", "-o", run), "in use by another")
    assert not run.exists()
    assert invoke("replay", "tiny", "-o", run).exit_code == 0
    assert leftovers(tmp_path) == []


def test_a_lock_and_staging_left_by_a_dead_writer_are_taken_over(tmp_path):
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    (tmp_path / ".R.lock").write_text(
        json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "token": "x"})
    )
    (tmp_path / ".R.staging-0123456789ab").mkdir()
    (tmp_path / ".R.staging-0123456789ab" / "jobs.csv").write_text("half")
    assert invoke("replay", "tiny", "-o", tmp_path / "R").exit_code == 0
    assert leftovers(tmp_path) == []


def test_a_full_disk_leaves_no_partial_folder(tmp_path, monkeypatch):
    """ENOSPC while the tables are written: one line, exit 2, and neither the target nor
    a half-written table anywhere (issue 27: a 1 MiB partial jobs.csv read as complete)."""
    import gpusched.io.tables as tables

    real = tables.write_csv_rows

    def fill_up(path, names, arrays, **kw):
        if path.name == "timeline.csv":
            path.write_bytes(b"time_s,busy")  # part of it, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, names, arrays, **kw)

    monkeypatch.setattr(tables, "write_csv_rows", fill_up)
    for args in (["replay", "tiny", "-o", tmp_path / "R"],
                 ["compare", "tiny", "-P", "fifo", "-P", "srtf", "-o", tmp_path / "C"]):  # fmt: skip
        one_line_error(invoke(*args), "no space left on the device", "timeline.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # an earlier complete run in the target survives a failed --force
    monkeypatch.setattr(tables, "write_csv_rows", real)
    assert invoke("replay", "tiny", "-P", "srtf", "-o", tmp_path / "R").exit_code == 0
    before = (tmp_path / "R" / "jobs.csv").read_bytes()
    monkeypatch.setattr(tables, "write_csv_rows", fill_up)
    one_line_error(invoke("replay", "tiny", "-o", tmp_path / "R", "--force"), "no space left")
    assert (tmp_path / "R" / "jobs.csv").read_bytes() == before
    assert leftovers(tmp_path) == []


def test_a_failing_run_leaves_nothing(tmp_path):
    one_line_error(invoke("replay", "tiny", "-P", "nope", "-o", tmp_path / "R"), "nope")
    assert list(tmp_path.iterdir()) == []


# --- names derived from policies ---------------------------------------------------------


def test_safe_names_stay_inside_their_folder():
    for label in ("..", ".", "", ".hidden", "a/../../b", "x" * 500, "a\x00b", "..:k=v"):
        name = safe_name(label)
        assert name not in ("", ".", "..") and not name.startswith(".")
        assert "/" not in name and "\x00" not in name and len(name) <= 120
    assert safe_name("x" * 500) != safe_name("x" * 499 + "y")
    assert safe_name("fifo:backfill=true") == "fifo_backfill=true"


def test_a_policy_named_dotdot_cannot_escape_out(tmp_path):
    """A policy file whose ``name`` is ``..``: compare --seeds wrote out/seed-1, outside -o."""
    path = tmp_path / "dots.py"
    path.write_text(
        "from gpusched.core.policy import Decision\n\n\n"
        "class Dots:\n"
        '    name = ".."\n'
        "    knows_duration = False\n"
        "    work_conserving = True\n"
        "    needs_predictor = False\n\n"
        "    def decide(self, view, now):\n"
        "        return Decision(order=view.queued)\n"
    )
    out = tmp_path / "out" / "inner"
    r = invoke("compare", "tiny", "-P", path, "-P", "fifo", "--seeds", "1-2", "-o", out)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["inner"]
    assert (out / "_.." / "seed-1" / "manifest.json").is_file()
    r = invoke("compare", "tiny", "-P", path, "-o", tmp_path / "c")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["00-_..", "comparison.csv"]


# --- compare --seeds and sweeps use the same transaction ---------------------------------


def test_compare_seeds_folder_is_one_transaction(tmp_path):
    out = tmp_path / "S"
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf", "--seeds", "1-2", "-o", out)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        "compare-runs.csv",
        "comparison.csv",
        "fifo",
        "srtf",
    ]
    assert "comparison in " + str(out) + "/comparison.csv" in r.output
    one_line_error(
        invoke("compare", "tiny", "-P", "fifo", "--seeds", "1-2", "-o", out), "already holds"
    )
    r = invoke("compare", "tiny", "-P", "sjf", "--seeds", "3", "-o", out, "--force")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["compare-runs.csv", "comparison.csv", "sjf"]
    assert leftovers(tmp_path) == []


def test_an_old_compare_csv_counts_as_a_comparison(tmp_path):
    """Folders written before comparison.csv replaced compare.csv are still recognised
    as results (refused without --force, replaced with it)."""
    out = tmp_path / "S"
    (out / "fifo" / "seed-1").mkdir(parents=True)
    (out / "compare.csv").write_text("policy,metric\n")
    (out / "fifo" / "seed-1" / "jobs.csv").write_text("job_id\n")
    one_line_error(invoke("compare", "tiny", "-P", "fifo", "-o", out), "already holds results")
    assert invoke("compare", "tiny", "-P", "fifo", "-o", out, "--force").exit_code == 0
    assert not (out / "compare.csv").exists()


def test_sweep_cells_record_their_tables(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["tiny"]\npolicies = ["fifo"]\n')
    r = invoke("sweep", spec, "-o", tmp_path / "sw", "--workers", "1")
    assert r.exit_code == 0, r.output
    (cell,) = (tmp_path / "sw" / "cells").iterdir()
    manifest = json.loads((cell / "manifest.json").read_text())
    assert set(manifest["tables"]) == {"jobs.csv", "timeline.csv"}
    r = invoke("explain", cell, "--worst", "1")
    assert r.exit_code == 0, r.output


def test_out_never_replaces_the_current_folder(tmp_path, monkeypatch):
    """A results folder is replaced whole: never the folder a shell stands in."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for out in (".", "..", "sub/.."):
        one_line_error(invoke("replay", "tiny", "-o", out), "is the current folder (or holds it)")
    assert list(here.iterdir()) == []
    assert invoke("replay", "tiny", "-o", "sub/run").exit_code == 0


# --- hostile files where gpusched reads its own JSON back ----------------------------------


def test_read_regular_file_never_waits_on_a_pipe_nor_reads_a_device(tmp_path):
    from gpusched.io.files import NotAFile, parse_json, read_regular_file

    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(NotAFile, match="not a regular file"):
        read_regular_file(fifo)  # (a blocking open would wait here for a writer)
    with pytest.raises(NotAFile, match="not a regular file"):
        read_regular_file("/dev/zero")
    with pytest.raises(NotAFile, match="is a folder"):
        read_regular_file(tmp_path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(NotAFile, match="larger than 100 bytes"):
        read_regular_file(big, 100)
    assert read_regular_file(big, 100, head=True) == b"x" * 100
    assert read_regular_file(big, 101) == b"x" * 101
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "none")
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="a whole number too long to read"):
        parse_json("9" * 5000)
    with pytest.raises(json.JSONDecodeError):
        parse_json("{")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"seed": ' + "9" * 5000 + "}", "a whole number too long to read"),
    ],
    ids=["nested", "digits"],
)
def test_a_manifest_no_json_reader_takes_is_one_line(tmp_path, text, reason):
    run = tmp_path / "R"
    assert invoke("replay", "tiny", "-o", run).exit_code == 0
    (run / "manifest.json").write_text(text)
    for args in (["explain", run], ["plot", run], ["diff", run, run]):
        one_line_error(invoke(*args), "manifest.json", reason)
    one_line_error(invoke("explain", run), f"not a JSON manifest ({reason})")


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_manifest_that_is_not_a_file_is_named_as_such(tmp_path, kind):
    run = tmp_path / "R"
    assert invoke("replay", "tiny", "-o", run).exit_code == 0
    (run / "manifest.json").unlink()
    if kind == "folder":
        (run / "manifest.json").mkdir()
    else:
        os.mkfifo(run / "manifest.json")
    needle = "is a folder" if kind == "folder" else "not a regular file"
    one_line_error(invoke("explain", run), "manifest.json", needle, "expected the run's JSON")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_lock_that_is_a_pipe_or_a_device_is_refused_not_waited_on(tmp_path, kind):
    lock = tmp_path / ".R.lock"
    if kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to("/dev/zero")
    one_line_error(invoke("replay", "tiny", "-o", tmp_path / "R"), "R is locked", ".R.lock")


@pytest.mark.parametrize("kind", ["fifo", "device", "deep"])
def test_a_sweep_cell_record_that_is_hostile_is_run_again(tmp_path, kind):
    from gpusched.experiments.sweep import load_spec, plan

    spec_file = tmp_path / "s.toml"
    spec_file.write_text('traces = ["tiny"]\npolicies = ["fifo"]\n')
    out = tmp_path / "out"
    assert invoke("sweep", spec_file, "-o", out, "-j", "1").exit_code == 0
    (cell,) = (out / "cells").iterdir()
    record = cell / "cell.json"
    record.unlink()
    if kind == "fifo":
        os.mkfifo(record)
    elif kind == "device":
        record.symlink_to("/dev/zero")
    else:
        record.write_text("[" * 100_000 + "]" * 100_000)
    ((_, status),) = plan(load_spec(spec_file), out)
    assert status.state == "todo" and "cell.json" in status.reason


def test_read_regular_file_reads_a_block_at_a_time(tmp_path):
    """os.read allocates what it is asked for: asking for the whole 1 GiB cap at once
    failed with a MemoryError under a 600 MB address-space limit, for a 1 KB manifest."""
    import subprocess
    import sys

    small = tmp_path / "m.json"
    small.write_text('{"a": 1}')
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))\n"
        "from gpusched.io.files import read_regular_file\n"
        f"sys.stdout.write(read_regular_file({str(small)!r}).decode())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == '{"a": 1}', out.stderr
