"""Tests of the canonical trace reader and writer (gpusched.trace)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.errors import TraceError
from gpusched.trace import Trace, read_trace, trace_sha256, write_trace

GOOD = "job_id,submit_time,num_gpus,duration,user\na,0,1,30,alice\nb,2.5,4,60.25,bob\n"


def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _errors(path: Path) -> list[str]:
    with pytest.raises(TraceError) as info:
        read_trace(path)
    return info.value.errors


def test_read_good(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, GOOD))
    assert len(t) == 2
    assert t.job_id.tolist() == ["a", "b"]
    assert t.submit_time.dtype == np.float64 and t.submit_time.tolist() == [0.0, 2.5]
    assert t.num_gpus.dtype == np.int32 and t.num_gpus.tolist() == [1, 4]
    assert t.duration.tolist() == [30.0, 60.25]
    assert np.isnan(t.iterations).all() and t.model.tolist() == ["", ""]
    assert t.extra["user"].tolist() == ["alice", "bob"]
    assert t.columns() == ["job_id", "submit_time", "num_gpus", "duration", "user"]


def test_keeps_file_order(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, "job_id,submit_time,num_gpus,duration\nb,9,1,1\na,1,1,1\n"))
    assert t.job_id.tolist() == ["b", "a"]


def test_iterations_and_model_instead_of_duration(tmp_path: Path) -> None:
    text = "job_id,submit_time,num_gpus,duration,iterations,model\na,0,1,,100,resnet\nb,1,2,5,,\n"
    t = read_trace(_write(tmp_path, text))
    assert np.isnan(t.duration[0]) and t.iterations[0] == 100 and t.model[0] == "resnet"
    assert t.duration[1] == 5 and np.isnan(t.iterations[1]) and t.model[1] == ""


def test_gz_and_bundled(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(GOOD.encode()))
    assert read_trace(p) == read_trace(_write(tmp_path, GOOD))
    here = Path(__file__).resolve().parent.parent / "traces"
    for name, n in [("tiny.csv", 6), ("synth-500.csv", 500), ("philly-2000.csv", 2000)]:
        assert len(read_trace(here / name)) == n


def test_write_gz_deterministic(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, GOOD))
    write_trace(t, tmp_path / "a.csv.gz")
    write_trace(t, tmp_path / "b.csv.gz")
    assert trace_sha256(tmp_path / "a.csv.gz") == trace_sha256(tmp_path / "b.csv.gz")
    assert read_trace(tmp_path / "a.csv.gz") == t


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ("job_id,submit_time,num_gpus,duration\na,0,2.5,10\n", 2, "num_gpus"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,0,0,10\n", 3, "num_gpus"),
        ("job_id,submit_time,num_gpus,duration\na,0,-1,10\n", 2, "num_gpus"),
        ("job_id,submit_time,num_gpus,duration\na,-1,1,10\n", 2, "submit_time"),
        ("job_id,submit_time,num_gpus,duration\na,nan,1,10\n", 2, "submit_time"),
        ("job_id,submit_time,num_gpus,duration\na,inf,1,10\n", 2, "submit_time"),
        ("job_id,submit_time,num_gpus,duration\na,x,1,10\n", 2, "submit_time"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,0\n", 2, "duration"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,inf\n", 2, "duration"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,\n", 2, "duration"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,1\na,0,1,1\n", 3, "job_id"),
        ("job_id,submit_time,num_gpus,duration\n,0,1,1\n", 2, "job_id"),
        ("job_id,submit_time,num_gpus,iterations,model\na,0,1,5,\n", 2, "duration"),
        ("job_id,submit_time,num_gpus,iterations,model\na,0,1,-5,m\n", 2, "iterations"),
    ],
)
def test_bad_field(tmp_path: Path, text: str, line: int, col: str) -> None:
    p = _write(tmp_path, text, "bad.csv")
    errs = _errors(p)
    assert len(errs) == 1
    assert errs[0].startswith(f"{p}:{line}: column '{col}'")
    assert "bad.csv" in str(TraceError(errs))


def test_duplicate_names_both_lines(tmp_path: Path) -> None:
    p = _write(tmp_path, "job_id,submit_time,num_gpus,duration\na,0,1,1\nb,0,1,1\na,0,1,1\n")
    (msg,) = _errors(p)
    assert f"{p}:4:" in msg and "line 2" in msg and "'a'" in msg


def test_missing_column(tmp_path: Path) -> None:
    p = _write(tmp_path, "job_id,submit_time,duration\na,0,1\n")
    assert _errors(p) == [f"{p}:1: missing required column 'num_gpus'"]
    p = _write(tmp_path, "job_id,submit_time,num_gpus\na,0,1\n")
    assert "missing required column 'duration'" in _errors(p)[0]


def test_empty_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "")
    (msg,) = _errors(p)
    assert msg.startswith(f"{p}:1:") and "empty" in msg


def test_wrong_field_count_and_collects_all(tmp_path: Path) -> None:
    text = "job_id,submit_time,num_gpus,duration\na,0,1,1\nb,0,1\nc,0,1,1,9\nd,-3,0,1\n"
    p = _write(tmp_path, text)
    errs = _errors(p)
    assert [e.split(": ")[0] for e in errs] == [f"{p}:3", f"{p}:4", f"{p}:5", f"{p}:5"]
    assert "fields" in errs[0]
    with pytest.raises(TraceError, match=r"and 3 more"):
        read_trace(p)


def test_line_numbers_with_multiline_field_and_blank_lines(tmp_path: Path) -> None:
    text = 'job_id,submit_time,num_gpus,duration,note\na,0,1,1,"two\nlines"\n\nb,0,x,1,ok\n'
    p = _write(tmp_path, text)
    (msg,) = _errors(p)
    assert msg.startswith(f"{p}:5: column 'num_gpus'")


def test_header_only_is_empty_trace(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, "job_id,submit_time,num_gpus,duration\n"))
    assert len(t) == 0
    write_trace(t, tmp_path / "o.csv")
    assert read_trace(tmp_path / "o.csv") == t


def test_equality_ignores_source_and_take(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, GOOD))
    assert t.take([1, 0]).job_id.tolist() == ["b", "a"]
    assert t.take(slice(None), source="other") == t
    assert t != t.take([1, 0])


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(_text.filter(bool), min_size=n, max_size=n, unique=True))
    times = st.floats(0, 1e12, allow_nan=False, allow_infinity=False)
    pos = st.floats(1e-9, 1e12, allow_nan=False, allow_infinity=False)
    submit = draw(st.lists(times, min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(1, 2**31 - 1), min_size=n, max_size=n))
    dur, iters, model = [], [], []
    for _ in range(n):
        kind = draw(st.sampled_from(["d", "im", "both"]))
        dur.append(draw(pos) if kind != "im" else np.nan)
        iters.append(draw(pos) if kind != "d" else np.nan)
        model.append(draw(_text.filter(bool)) if kind != "d" else "")
    names = draw(
        st.lists(
            st.sampled_from(["user", "group", "zeta", "a b", "gpu_type"]), unique=True, max_size=3
        )
    )
    extra = {
        c: np.array(draw(st.lists(_text, min_size=n, max_size=n)), dtype=object) for c in names
    }
    return Trace(
        np.array(ids, dtype=object),
        submit,
        gpus,
        dur,
        iters,
        np.array(model, dtype=object),
        extra,
        "hypothesis",
    )


@settings(max_examples=60, deadline=None)
@given(t=traces(), gz=st.booleans())
def test_round_trip(tmp_path_factory: pytest.TempPathFactory, t: Trace, gz: bool) -> None:
    p = tmp_path_factory.mktemp("rt") / ("t.csv.gz" if gz else "t.csv")
    write_trace(t, p)
    r = read_trace(p)
    assert r == t
    for name in ("submit_time", "duration", "iterations"):
        a, b = getattr(r, name), getattr(t, name)
        assert a.tobytes() == b.tobytes() or np.array_equal(a, b, equal_nan=True)
