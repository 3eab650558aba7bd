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

from gpusched.io import tables
from gpusched.io.tables import write_csv_text as write_csv


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
        # job ids as a trace holds them (NumPy's StringDType): short ids inline, long ones not
        "t": np.array(["a,b", 'c"', "d\ne", "", "é" * 20, "x" * 15, "y" * 16, "z"], dtype="T"),
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
        "t": np.array([r[0] for r in rows], dtype="T"),
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


def spelled(x):
    """tables' float cells of ``x`` beside what repr spells (None for NaN)."""
    got = tables._float_cells(np.asarray(x, dtype=np.float64)).to_pylist()
    return got, [None if v != v else repr(v) for v in np.asarray(x, dtype=np.float64).tolist()]


#: whole thousandths (times in milliseconds): from 0 to below 1e12 the fixed-point path,
#: above it numbers whose repr may be shorter than their thousandths (9e13 + 0.562 is
#: 90000000000000.56)
thousandths = st.one_of(st.integers(0, 10**15 - 1), st.integers(10**15, 10**19)).map(
    lambda k: k / 1000
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(thousandths, min_size=1, max_size=40),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=10),
    st.integers(-3, 3),
)
def test_whole_thousandths_and_their_neighbours_spell_as_repr(millis, others, step):
    """A column of mostly whole thousandths is spelled from its thousandths; any float
    that merely rounds near one (a neighbour, a sum like 0.1 + 0.2) or any other float
    mixed in is spelled as repr spells it."""
    x = np.array(millis + others)
    got, want = spelled(x)
    assert got == want
    with np.errstate(over="ignore", invalid="ignore"):  # infinities
        near = x + step * np.spacing(np.abs(np.nan_to_num(x)))
    got, want = spelled(near)
    assert got == want


@pytest.mark.parametrize("seed", range(3))
def test_many_random_floats_spell_as_repr(seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    k = rng.integers(0, 10 ** rng.integers(1, 16, n), dtype=np.int64)
    cases = [
        k / 1000,  # the fixed-point path
        rng.integers(10**15, 10**18, n) / 1000,  # repr may be shorter than the thousandths
        rng.integers(10**15, 10**16, n) / 1000,  # 9010786744723.071 is 9010786744723.07
        np.nextafter(k / 1000, np.inf),  # one bit above: repr has many more digits
        np.round(rng.random(n) * 1e6, 3) + np.round(rng.random(n) * 1e3, 3),  # 0.1 + 0.2
        rng.random(n) * 10.0 ** rng.integers(-8, 20, n) * rng.choice([-1, 1], n),
        rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64),  # any bit pattern
        np.r_[k[: n // 2] / 1000, rng.standard_normal(n // 2)],  # half and half
    ]
    for x in cases:
        got, want = spelled(x)
        assert got == want


EDGES = [
    0.0, -0.0, 0.001, 0.0005, 1e-4, 0.1 + 0.2, 0.3, 1e12 - 0.001, 999999999999.999,
    1e12, 1e12 + 0.5, 99999999999.999, 2.0**53, 1e16, 1e17, 5e-324, -0.001, np.inf,
    -np.inf, np.nan, 123.456, 0.713000000000001,
]  # fmt: skip


@pytest.mark.parametrize("pad", [0, 1, 100])
def test_edge_floats_spell_as_repr_amid_thousandths(pad):
    """Edges alone and amid a majority of whole thousandths (the fixed-point path)."""
    x = np.r_[EDGES, np.arange(pad * len(EDGES)) * 0.25]
    got, want = spelled(x)
    assert got == want


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]),
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=600),
    st.integers(0, 2**64 - 1),
)
def test_integer_cells_spell_as_str(dtype, raw, base):
    """Integer columns, of a few distinct numbers (spelled from a table) or many (cast)."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    values = np.array([info.min + (base + r % 300) % span for r in raw], dtype=dtype)
    assert tables._int_cells(values).to_pylist() == [str(v) for v in values.tolist()]
    wide = np.array([info.min + r % span for r in raw], dtype=dtype)
    assert tables._int_cells(wide).to_pylist() == [str(v) for v in wide.tolist()]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(2**52), 2**52), min_size=1, max_size=600), st.integers(0, 5))
def test_whole_float_columns_spell_as_repr(ints, n_nan):
    """Columns of whole numbers (and NaN), of a few distinct numbers or many."""
    x = np.array(ints, dtype=np.float64)
    x[:n_nan] = np.nan
    got, want = spelled(x)
    assert got == want
    got, want = spelled(x % 7)
    assert got == want
