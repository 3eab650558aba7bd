"""tables.write_csv_text writes, column by column with pyarrow (or, for small tables, row by
row), the bytes csv.writer would write row by row (floats as repr, NaN empty), and every float
parses back to the same float64."""

from __future__ import annotations

import csv
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched import tables
from gpusched.tables import write_csv_text as write_csv


@pytest.fixture(autouse=True, params=["columns", "rows"])
def path(request, monkeypatch):
    """Every test on both writers: pyarrow column by column (big tables) and csv.writer row
    by row (tables of up to tables.SMALL_ROWS rows)."""
    monkeypatch.setattr(tables, "SMALL_ROWS", -1 if request.param == "columns" else 10**9)
    return request.param


def reference(path, columns):
    """The row-by-row writer write_csv_text replaced (floats exact, NaN empty, csv quoting)."""

    def fmt(x):
        return "" if np.isnan(x) else repr(float(x))

    names = list(columns)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for row in zip(*(columns[k].tolist() for k in names), strict=True):
            w.writerow([fmt(x) if isinstance(x, float) else x for x in row])


def test_hostile_fields_are_quoted_as_csv_writer_does(tmp_path):
    cols = {
        "job_id": np.array(["a", "b,c", 'd"e', "f\ng", " h", "", "x\ry", "1e5"], dtype=object),
        "f": np.array([0.1, np.nan, -0.0, 1e300, 3.0, 2.5e-7, np.inf, 7.0]),
        "i": np.arange(8, dtype=np.int32),
        "b": np.array([True, False] * 4),
        "o": np.array([None, 1.5, float("nan"), "z", 3, np.float64(2.0), 'q"', ""], dtype=object),
        "u": np.array(list("abcdefgh")),
    }
    write_csv(tmp_path / "new.csv", cols)
    reference(tmp_path / "old.csv", cols)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=6), st.floats(allow_nan=True), st.integers(-(2**40), 2**40)),
        max_size=30,
    )
)
def test_random_tables_match_csv_writer(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("csv")
    cols = {
        "s": np.array([r[0] for r in rows], dtype=object),
        "f": np.array([r[1] for r in rows], dtype=np.float64),
        "i": np.array([r[2] for r in rows], dtype=np.int64),
    }
    write_csv(d / "new.csv", cols)
    reference(d / "old.csv", cols)
    assert (d / "new.csv").read_bytes() == (d / "old.csv").read_bytes()


#: floats whose shortest spelling is awkward: pyarrow's cast and repr disagree on most
AWKWARD = [
    0.1, 1e-300, 1 / 3, float(2**53 + 1), -0.0, 0.0, 5e-324, 1.7976931348623157e308,
    1e-4, 9.999999999999999e-05, 1e-5, 1.5e-6, 1e-7, 2.5e-9, 1e-10, 123.0, -7.0,
    9999999999.0, 1e10, 12345678901.5, 1e15 + 0.5, 9.999999999999998e15, 1e16,
    1.2345678901234568e17, 1e22, 3060.8559999999998, -np.inf, np.inf, np.nan,
]  # fmt: skip


def test_awkward_floats_round_trip_and_spell_as_repr(tmp_path):
    with np.errstate(over="ignore"):  # float32 holds 1e300 as inf
        f32 = np.array(AWKWARD, dtype=np.float32)
    cols = {
        "f": np.array(AWKWARD),
        "f32": f32,
        "i": np.array([2**63 - 1, -(2**63)] + list(range(len(AWKWARD) - 2)), dtype=np.int64),
        "u": np.full(len(AWKWARD), 2**64 - 1, dtype=np.uint64),
        "b": np.arange(len(AWKWARD)) % 2 == 0,
    }
    write_csv(tmp_path / "new.csv", cols)
    reference(tmp_path / "old.csv", cols)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    rows = list(csv.DictReader((tmp_path / "new.csv").open(newline="")))
    back = [float(r["f"]) if r["f"] else np.nan for r in rows]
    bits = [struct.pack("<d", x) for x in back]
    assert bits == [struct.pack("<d", x) for x in AWKWARD]  # -0.0 and NaN included
    assert [int(r["i"]) for r in rows[:2]] == [2**63 - 1, -(2**63)]
    assert {r["u"] for r in rows} == {str(2**64 - 1)}


@pytest.mark.parametrize("values", [["", "a", ""], [np.nan, 1.0, np.nan], [None, "x", None]])
def test_a_single_column_quotes_empty_cells_as_csv_writer_does(tmp_path, values):
    dtype = np.float64 if isinstance(values[1], float) else object
    cols = {"only": np.array(values, dtype=dtype)}
    write_csv(tmp_path / "new.csv", cols)
    reference(tmp_path / "old.csv", cols)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()


def test_empty_tables_write_the_header(tmp_path):
    cols = {"a": np.zeros(0), "b": np.zeros(0, dtype=object)}
    write_csv(tmp_path / "new.csv", cols)
    assert (tmp_path / "new.csv").read_bytes() == b"a,b\r\n"


def test_long_tables_are_written_in_chunks_without_a_seam(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "_CHUNK_ROWS", 7)
    rng = np.random.default_rng(5)
    cols = {
        "job_id": np.array([f"j{i}" if i % 9 else f"j,{i}" for i in range(50)], dtype=object),
        "x": np.where(rng.random(50) < 0.2, np.nan, rng.random(50) * 1e6),
    }
    write_csv(tmp_path / "new.csv", cols)
    reference(tmp_path / "old.csv", cols)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()


def test_the_join_path_writes_the_same_bytes_as_the_csv_writer_path(tmp_path, monkeypatch):
    """Tables are written by pyarrow's CSV writer when no cell needs quotes, else (or on a
    pyarrow without ``WriteOptions(eol=)``) by joining cells: both give csv.writer's bytes."""
    rng = np.random.default_rng(11)
    cols = {
        "job_id": np.array([f"j{i}" for i in range(40)], dtype=object),
        "x": np.where(rng.random(40) < 0.2, np.nan, rng.random(40) * 1e4),
        "t": np.round(rng.random(40) * 1e6),
        "n": rng.integers(0, 9, 40),
    }
    reference(tmp_path / "old.csv", cols)
    write_csv(tmp_path / "fast.csv", cols)

    def old_pyarrow(cells):
        raise TypeError("WriteOptions() got an unexpected keyword argument 'eol'")

    monkeypatch.setattr(tables, "_arrow_lines", old_pyarrow)
    write_csv(tmp_path / "joined.csv", cols)
    want = (tmp_path / "old.csv").read_bytes()
    assert (tmp_path / "fast.csv").read_bytes() == want
    assert (tmp_path / "joined.csv").read_bytes() == want
