"""``--format parquet``: run folders with jobs.parquet, timeline.parquet (events, tasks) that
hold the same values as their CSV twins, and every reader of run folders reads both."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpusched.io.tables import parquet_rows, write_table
from tests.helpers import invoke, one_line_error, seal


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> tuple[Path, Path]:
    """The same replay (srtf on tiny, with its event log) written as CSV and as Parquet."""
    d = tmp_path_factory.mktemp("twins")
    for fmt in ("csv", "parquet"):
        r = invoke("replay", "tiny", "-P", "srtf", "--events", "-o", d / fmt, "--format", fmt)
        assert r.exit_code == 0, r.output
    return d / "csv", d / "parquet"


def _csv_columns(path: Path) -> dict[str, list[str]]:
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


@pytest.mark.parametrize("stem", ["jobs", "timeline", "events"])
def test_parquet_tables_hold_the_csv_values(twins, stem):
    text, table = twins
    assert not (table / f"{stem}.csv").exists() and not (text / f"{stem}.parquet").exists()
    want = _csv_columns(text / f"{stem}.csv")
    got = pq.read_table(table / f"{stem}.parquet")
    assert got.column_names == list(want)
    for name, cells in want.items():
        col = got.column(name)
        if col.type in ("double", "float"):
            values = col.to_numpy(zero_copy_only=False)
            expect = np.array([float(c) if c else np.nan for c in cells])
            assert np.array_equal(values, expect, equal_nan=True), name
        else:
            assert [("" if v is None else str(v)) for v in col.to_pylist()] == cells, name


def test_summary_and_manifest_do_not_depend_on_the_format(twins):
    text, table = twins
    for name in ("summary.json", "manifest.json"):
        a = json.loads((text / name).read_text())
        b = json.loads((table / name).read_text())
        a.pop("wall_s", None), b.pop("wall_s", None)
        ta, tb = a.pop("tables", {}), b.pop("tables", {})  # each format's files and hashes
        assert a == b
        assert {k.split(".")[0]: v["rows"] for k, v in ta.items()} == {
            k.split(".")[0]: v["rows"] for k, v in tb.items()
        }


def test_parquet_rows_read_as_the_csv_twin(twins):
    text, table = twins
    for stem in ("jobs", "timeline", "events"):
        with (text / f"{stem}.csv").open(newline="") as fh:
            assert list(parquet_rows(table / f"{stem}.parquet")) == list(csv.reader(fh))


def _same_output(args_csv: list[object], args_pq: list[object], text: Path, table: Path) -> str:
    a, b = invoke(*args_csv), invoke(*args_pq)
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert b.output.replace(str(table), "RUN").replace(table.name, "RUN") == a.output.replace(
        str(text), "RUN"
    ).replace(text.name, "RUN")
    return b.output


def test_explain_diff_plot_and_gantt_read_parquet_runs_as_csv_ones(twins):
    text, table = twins
    out = _same_output(["explain", text, "t1"], ["explain", table, "t1"], text, table)
    assert "t1" in out
    _same_output(["explain", text, "--worst", "3"], ["explain", table, "--worst", "3"], text, table)
    _same_output(["plot", text, "--gantt"], ["plot", table, "--gantt"], text, table)
    _same_output(["plot", text], ["plot", table], text, table)
    r = invoke("diff", text, table)
    assert r.exit_code == 0 and "unchanged: 6" in r.output, r.output
    r = invoke("diff", table / "jobs.parquet", text / "jobs.csv")
    assert r.exit_code == 0 and "unchanged: 6" in r.output, r.output


def test_compare_writes_parquet_runs_and_plots_them(tmp_path):
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "srtf", "-o", tmp_path, "--format", "parquet")
    assert r.exit_code == 0, r.output
    runs = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert [sorted(x.name for x in p.iterdir()) for p in runs] == [
        ["jobs.parquet", "manifest.json", "summary.json", "timeline.parquet"]
    ] * 2
    r = invoke("plot", tmp_path)
    assert r.exit_code == 0 and "srtf" in r.output, r.output


def test_compare_over_seeds_in_parquet_aggregates_the_same(tmp_path):
    for fmt in ("csv", "parquet"):
        args = ["compare", "tiny", "-P", "fifo", "-P", "sjf", "--seeds", "1-2", "--workers", "1"]
        r = invoke(*args, "-o", tmp_path / fmt, "--format", fmt)
        assert r.exit_code == 0, r.output
        assert (tmp_path / fmt / "fifo" / "seed-2" / f"jobs.{fmt}").is_file()

    def table(fmt: str) -> list[str]:  # wall-clock rows aside
        lines = (tmp_path / fmt / "comparison.csv").read_text().splitlines()
        return [x for x in lines if ",wall_s," not in x and ",sched_delay" not in x]

    assert len(table("csv")) > 10 and table("parquet") == table("csv")


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_an_unknown_format_is_a_one_line_error(tmp_path, command):
    r = invoke(command, "tiny", "-P", "fifo", "-o", tmp_path / "x", "--format", "parket")
    one_line_error(r, "--format must be one of csv, parquet, got 'parket'", "parquet")
    assert not (tmp_path / "x").exists()


def test_a_damaged_parquet_table_is_a_one_line_error(twins, tmp_path):
    _, table = twins
    bad = shutil.copytree(table, tmp_path / "bad")
    (bad / "jobs.parquet").write_bytes(b"PAR1 not really")
    for args in (["explain", bad, "t1"], ["diff", bad, table], ["plot", bad]):
        one_line_error(invoke(*args), "jobs.parquet", "differs from the table manifest.json")
    seal(bad)  # the manifest vouches for it: reading it is what fails
    for args in (["explain", bad, "t1"], ["diff", bad, table], ["plot", bad]):
        one_line_error(invoke(*args), "jobs.parquet", "not a readable Parquet file")


def test_a_parquet_table_with_a_bad_value_names_line_and_column(twins, tmp_path):
    _, table = twins
    bad = shutil.copytree(table, tmp_path / "bad")
    jobs = {k: np.asarray(v) for k, v in pq.read_table(table / "jobs.parquet").to_pydict().items()}
    jobs["jct"] = np.array(["soon"] + [str(x) for x in jobs["jct"][1:]], dtype=object)
    write_table(bad / "jobs.parquet", jobs, "parquet")
    seal(bad)
    one_line_error(
        invoke("plot", bad),
        "jobs.parquet:2: column 'jct': expected a number of seconds >= 0, or empty, got 'soon'",
    )
    line = one_line_error(invoke("diff", bad, table), "jobs.parquet:2: column 'jct'")
    assert "soon" in line


def test_nan_is_null_in_parquet_and_empty_in_csv(tmp_path):
    cols = {"x": np.array([1.5, math.nan, -0.0]), "n": np.array([1, 2, 3])}
    write_table(tmp_path / "t.parquet", cols, "parquet")
    write_table(tmp_path / "t.csv", cols, "csv")
    t = pq.read_table(tmp_path / "t.parquet")
    assert t.column("x").null_count == 1 and t.column("n").type == "int64"
    assert (tmp_path / "t.csv").read_text().splitlines() == ["x,n", "1.5,1", ",2", "-0.0,3"]
    with pytest.raises(ValueError, match="unknown table format"):
        write_table(tmp_path / "t.xml", cols, "xml")


def test_tasks_and_status_columns_round_trip_as_text(tmp_path):
    """Jobs made of chunks (tasks.*, a text ``tier``) and jobs placed by roles (``status``)."""
    runs = [
        ("ec-30", "edge-cloud-testbed", "a-online", ("jobs", "tasks"), "tier"),
        ("ps-20", "pd-ors-30", "pd-ors", ("jobs",), "status"),
    ]
    for trace, cluster, policy, stems, text_column in runs:
        for fmt in ("csv", "parquet"):
            out = tmp_path / trace / fmt
            r = invoke("replay", trace, "-c", cluster, "-P", policy, "-o", out, "--format", fmt)
            assert r.exit_code == 0, r.output
        headers: set[str] = set()
        for stem in stems:
            with (tmp_path / trace / "csv" / f"{stem}.csv").open(newline="") as fh:
                want = list(csv.reader(fh))
            got = list(parquet_rows(tmp_path / trace / "parquet" / f"{stem}.parquet"))
            assert len(want) > 2 and got == want, (trace, stem)
            headers.update(got[0])
        assert text_column in headers
