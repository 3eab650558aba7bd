"""metrics.write_csv writes, column by column, the bytes csv.writer would write row by row."""

from __future__ import annotations

import csv

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.metrics import write_csv


def reference(path, columns):
    """The row-by-row writer write_csv replaced (floats exact, NaN empty, csv quoting)."""

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
