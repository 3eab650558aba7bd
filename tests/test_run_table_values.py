"""What the readers of a run's jobs table (explain, diff, plot) refuse alike, in a table
its manifest vouches for (a hand-edited folder, re-sealed): a negative JCT or wait, a
column named twice, and in Parquet a NaN that is not null (gpusched writes null; "nan"
in a CSV was refused, a Parquet NaN read as an unfinished job)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import invoke, one_line_error, seal

READERS = ("explain", "diff", "plot")


def reader_args(command: str, run: Path, other: Path) -> list[object]:
    return [command, run, other] if command == "diff" else [command, run]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for fmt in ("csv", "parquet"):
        out[fmt] = base / fmt
        assert invoke("replay", "tiny", "-o", out[fmt], "--format", fmt).exit_code == 0
    return out


def edited_csv(runs: dict[str, Path], tmp_path: Path, edit) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for f in runs["csv"].iterdir():
        (run / f.name).write_bytes(f.read_bytes())
    rows = list(csv.reader((run / "jobs.csv").open()))
    edit(rows)
    with (run / "jobs.csv").open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    return seal(run)


@pytest.mark.parametrize(
    ("command", "column"),
    [
        ("explain", "jct"),
        ("explain", "wait_s"),
        ("diff", "jct"),
        ("diff", "wait_s"),
        ("plot", "jct"),
    ],
)  # (plot reads no wait)
def test_a_negative_jct_or_wait_is_refused(runs, tmp_path, command, column):
    def negative(rows):
        rows[2][rows[0].index(column)] = "-40"

    run = edited_csv(runs, tmp_path, negative)
    one_line_error(
        invoke(*reader_args(command, run, runs["csv"])),
        f"jobs.csv:3: column '{column}': expected a number of seconds >= 0, or empty, got '-40'",
    )


@pytest.mark.parametrize("command", READERS)
def test_a_column_named_twice_is_refused(runs, tmp_path, command):
    def twice(rows):
        rows[0][rows[0].index("duration")] = "jct"

    run = edited_csv(runs, tmp_path, twice)
    one_line_error(
        invoke(*reader_args(command, run, runs["csv"])),
        "jobs.csv:1: column 'jct': expected each column once, got it twice",
    )


@pytest.mark.parametrize("command", READERS)
def test_a_parquet_nan_that_is_not_null_is_refused(runs, tmp_path, command):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = tmp_path / "run"
    run.mkdir()
    for f in runs["parquet"].iterdir():
        (run / f.name).write_bytes(f.read_bytes())
    table = pq.read_table(run / "jobs.parquet")
    i = table.column_names.index("jct")
    jct = table.column(i).to_numpy(zero_copy_only=False).copy()
    jct[1] = np.nan
    pq.write_table(table.set_column(i, "jct", pa.array(jct)), run / "jobs.parquet")
    seal(run)
    one_line_error(
        invoke(*reader_args(command, run, runs["csv"])),
        "jobs.parquet:3: column 'jct': expected a number of seconds >= 0, or empty, got 'nan'",
    )


def test_explain_reads_an_early_stopped_chunk_runs_own_tasks(tmp_path):
    """A task never placed is written with worker -1; explain refused the run's own
    tasks.csv ("expected a whole number >= 0, got '-1'")."""
    run = tmp_path / "X"
    r = invoke(
        "replay",
        "ec-30",
        "-c",
        "edge-cloud-testbed",
        "-P",
        "srtf",
        "--until",
        "200",
        "-o",
        run,
        "--events",
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader((run / "tasks.csv").open()))
    waiting = next(x for x in rows if x["worker"] == "-1")
    r = invoke("explain", run, waiting["job"])
    assert r.exit_code == 0, r.output
    assert f"{waiting['job_id']}: no worker yet, ran never" in r.output
