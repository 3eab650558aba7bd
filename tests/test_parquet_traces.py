"""Parquet traces (``.parquet``): read with the same rules as CSV traces, schema checked
with one-line errors, value errors naming the row; ``trace convert`` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpusched.errors import TraceError
from gpusched.io.resources import bundled_dir
from gpusched.io.trace import read_trace, write_trace
from tests.helpers import invoke

NUMBERS = ("submit_time", "num_gpus", "duration", "iterations", "load_s", "save_s")


@pytest.mark.parametrize("name", ["tiny", "philly-2000", "ps-20", "ec-30", "synth-500"])
def test_bundled_traces_round_trip_through_parquet(tmp_path, name):
    src = read_trace(bundled_dir("traces") / f"{name}.csv")
    write_trace(src, tmp_path / "t.parquet")
    back = read_trace(tmp_path / "t.parquet")
    assert back.job_id.tolist() == src.job_id.tolist()
    for col in NUMBERS:
        assert np.array_equal(getattr(back, col), getattr(src, col), equal_nan=True), col
    assert back.model.tolist() == src.model.tolist()
    assert list(back.extra) == list(src.extra)
    for k in src.extra:
        assert back.extra[k].tolist() == src.extra[k].tolist(), k
    assert back.line.tolist() == list(range(1, len(src) + 1))  # rows, not lines


def test_replay_of_a_parquet_trace_matches_its_csv(tmp_path):
    r = invoke("trace", "convert", "philly-2000", tmp_path / "p.parquet")
    assert r.exit_code == 0 and "wrote 2000 jobs" in r.output, r.output
    summaries = []
    for trace in ("philly-2000", tmp_path / "p.parquet"):
        r = invoke("replay", trace, "-P", "srtf", "--json")
        assert r.exit_code == 0, r.output
        s = json.loads(r.output)
        s.pop("wall_s"), s.pop("sched_delay_ms_avg"), s.pop("sched_delay_ms_p95")
        summaries.append(s)
    assert summaries[0] == summaries[1]
    r = invoke("trace", "stats", tmp_path / "p.parquet", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["jobs"] == 2000


def test_convert_back_to_csv_gives_the_canonical_bytes(tmp_path):
    src = bundled_dir("traces") / "ps-20.csv"
    write_trace(read_trace(src), tmp_path / "canon.csv")
    assert invoke("trace", "convert", src, tmp_path / "t.parquet").exit_code == 0
    assert invoke("trace", "convert", tmp_path / "t.parquet", tmp_path / "back.csv").exit_code == 0
    assert (tmp_path / "back.csv").read_bytes() == (tmp_path / "canon.csv").read_bytes()


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run in ``tmp_path``, so that messages name files as given (``t.parquet``)."""
    monkeypatch.chdir(tmp_path)
    return Path()


def _write(path, **cols):
    pq.write_table(pa.table(cols), path)
    return path


def test_a_wrong_column_type_names_the_file_column_and_expected_type(here):
    p = _write(
        here / "t.parquet",
        job_id=["a"],
        submit_time=["0"],
        num_gpus=[1.0],
        duration=[10.0],
    )
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert str(e.value).splitlines() == [
        "t.parquet: column 'submit_time': expected numbers (integers or floats), got string",
        "t.parquet: column 'num_gpus': expected integers, got double",
    ]
    r = invoke("trace", "stats", p)
    assert r.exit_code == 2 and r.output.startswith("error: t.parquet: column 'submit_time'")


def test_bad_values_name_the_row_and_column(here):
    p = _write(
        here / "t.parquet",
        job_id=["a", "b", "b"],
        submit_time=[0.0, -1.0, 2.0],
        num_gpus=[1, 2, 2**31],
        duration=[10.0, 5.0, float("inf")],
    )
    with pytest.raises(TraceError) as e:
        read_trace(p)
    lines = str(e.value).splitlines()
    assert lines[0].startswith("t.parquet: row 2: column 'submit_time': expected a number")
    assert lines[0].endswith("got '-1.0'")
    assert "t.parquet: row 3: column 'job_id': duplicate id 'b' (first on row 2)" in lines
    assert any(x.startswith("t.parquet: row 3: column 'num_gpus'") for x in lines)
    assert any(x.startswith("t.parquet: row 3: column 'duration'") and "'inf'" in x for x in lines)


def test_missing_columns_and_nulls_follow_the_csv_rules(here):
    p = _write(here / "t.parquet", job_id=["a"], submit_time=[0.0], num_gpus=[1])
    with pytest.raises(TraceError, match="t.parquet: missing required column 'duration'"):
        read_trace(p)
    p = _write(
        here / "u.parquet",
        job_id=[1, 2],
        submit_time=[0, 3],
        num_gpus=[1, 2],
        duration=[10.0, None],
        iterations=pa.array([None, 50.0]),
        model=pa.array([None, "resnet50"]),
    )
    t = read_trace(p)  # integer ids become text; null is "not given", as an empty field
    assert t.job_id.tolist() == ["1", "2"] and np.isnan(t.duration[1])
    assert t.model.tolist() == ["", "resnet50"] and t.iterations[1] == 50.0


def test_a_nan_that_is_not_null_is_refused_as_in_a_csv(here):
    """A NaN (not null) load_s was read as "not given": ``--load-s 7`` then set it, and
    ``trace convert`` dropped the column; a CSV's ``nan`` is refused."""
    p = _write(
        here / "t.parquet",
        job_id=["a", "b"],
        submit_time=[0.0, 1.0],
        num_gpus=[1, 1],
        duration=[10.0, 5.0],
        load_s=pa.array([None, float("nan")], pa.float64()),
    )
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert str(e.value) == (
        "t.parquet: row 2: column 'load_s': expected 0 or a number of seconds in "
        "[0.001, 1e+10], or empty, got 'nan'"
    )
    (here / "t.csv").write_text(
        "job_id,submit_time,num_gpus,duration,load_s\na,0,1,10,\nb,1,1,5,nan\n"
    )
    with pytest.raises(TraceError, match="t.csv:3: column 'load_s': .* got 'nan'"):
        read_trace(here / "t.csv")
    r = invoke("trace", "convert", p, here / "back.csv")
    assert r.exit_code == 2 and "row 2: column 'load_s'" in r.output
    assert not (here / "back.csv").exists()


def test_a_column_with_an_empty_name_is_refused_as_in_a_csv(here):
    """trace convert wrote it to a CSV that replay then refused."""
    table = pa.table(
        [pa.array(["a"]), pa.array([0.0]), pa.array([1]), pa.array([10.0]), pa.array(["x"])],
        names=["job_id", "submit_time", "num_gpus", "duration", ""],
    )
    pq.write_table(table, here / "t.parquet")
    r = invoke("trace", "convert", here / "t.parquet", here / "t.csv")
    assert r.exit_code == 2 and r.output == "error: t.parquet: column 5 has an empty name\n"
    assert not (here / "t.csv").exists()


def test_a_file_that_is_not_parquet_is_a_one_line_error(here):
    p = here / "t.parquet"
    p.write_bytes(b"job_id,submit_time\n")
    r = invoke("replay", p)
    assert r.exit_code == 2
    assert r.output.strip().startswith("error: t.parquet: not a readable Parquet file (")
    assert len(r.output.strip().splitlines()) == 1


def test_convert_refuses_an_unknown_suffix(tmp_path):
    r = invoke("trace", "convert", "tiny", tmp_path / "t.txt")
    assert r.exit_code == 2 and "expected a name ending in .csv, .csv.gz or .parquet" in r.output
    assert not (tmp_path / "t.txt").exists()
