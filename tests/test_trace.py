"""Tests of the canonical trace reader and writer (gpusched.io.trace)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.errors import GpuschedError, TraceError
from gpusched.io.trace import (
    MAX_ITERATIONS,
    MAX_TIME_S,
    MIN_DURATION_S,
    Trace,
    read_trace,
    trace_sha256,
    write_trace,
)

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


def test_job_ids_are_held_compactly_and_read_as_str(tmp_path: Path) -> None:
    # NumPy's StringDType, not an object array: 16 bytes per short id instead of 72 (the
    # ids live through the whole run; 1M jobs: 56 MB less), and every element is a str
    ids = ["a", "é" * 20, "x" * 16, "7"]
    text = "job_id,submit_time,num_gpus,duration\n" + "".join(f"{j},0,1,1\n" for j in ids)
    n = len(ids)
    cases = [
        (read_trace(_write(tmp_path, text)), ids),
        (
            Trace(np.array(ids, dtype=object), [0] * n, [1] * n, [1] * n, [np.nan] * n, [""] * n),
            ids,
        ),
        (Trace(np.array([1, 2]), [0, 0], [1, 1], [1, 1], [np.nan] * 2, ["", ""]), ["1", "2"]),
    ]
    for t, expected in cases:
        assert t.job_id.dtype == np.dtypes.StringDType()
        assert t.job_id.tolist() == expected and all(type(j) is str for j in t.job_id)
    assert np.dtype("T").itemsize == 16


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


def test_write_long_column_of_few_values(tmp_path: Path) -> None:
    # a column of few distinct values is formatted value by value once (e.g. per-model
    # load times of a million jobs); the text must be the one each value gets on its own
    n = 3000
    cycle = np.array([3.913, np.nan, 0.1 + 0.2, 7.0, 1e-3])
    load = cycle[np.arange(n) % len(cycle)]
    t = Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=np.arange(n) / 4,
        num_gpus=np.ones(n, dtype=int),
        duration=np.full(n, 10.0),
        iterations=np.full(n, np.nan),
        model=[""] * n,
        load_s=load,
    )
    p = tmp_path / "t.csv"
    write_trace(t, p)
    rows = [line.split(",") for line in p.read_text().splitlines()[1:]]
    texts = ["3.913", "", "0.30000000000000004", "7", "0.001"]
    assert [r[4] for r in rows] == [texts[i % len(texts)] for i in range(n)]
    assert read_trace(p) == t


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ("job_id,submit_time,num_gpus,duration\na,0,2.5,10\n", 2, "num_gpus"),
        ("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,0,1.5,10\n", 3, "num_gpus"),
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
    (msg,) = _errors(p)
    assert msg.startswith(f"{p}:1: missing required column 'num_gpus'; the header has 3 columns")
    p = _write(tmp_path, "job_id,submit_time,num_gpus\na,0,1\n")
    (msg,) = _errors(p)
    assert "missing required column 'duration' (or 'iterations' and 'model')" in msg


def test_jobs_placed_by_roles_need_no_duration_column(tmp_path: Path) -> None:
    t = Trace(
        job_id=["a", "b"],
        submit_time=[0.0, 2.0],
        num_gpus=[0, 0],
        duration=[np.nan, np.nan],
        iterations=[np.nan, np.nan],
        model=["", ""],
        extra={"epochs": ["3", "4"]},
    )
    p = tmp_path / "ps.csv"
    write_trace(t, p)
    assert p.read_text().splitlines()[0] == "job_id,submit_time,num_gpus,epochs"
    assert read_trace(p) == t
    # one gang job among them still needs the column
    p = _write(tmp_path, "job_id,submit_time,num_gpus,epochs\na,0,0,3\nb,0,1,4\n")
    (msg,) = _errors(p)
    assert "missing required column 'duration' (or 'iterations' and 'model')" in msg


def test_empty_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "")
    (msg,) = _errors(p)
    assert msg.startswith(f"{p}:1:") and "empty" in msg


def test_wrong_field_count_and_collects_all(tmp_path: Path) -> None:
    text = "job_id,submit_time,num_gpus,duration\na,0,1,1\nb,0,1\nc,0,1,1,9\nd,-3,x,1\n"
    p = _write(tmp_path, text)
    errs = _errors(p)
    assert [e.split(": ")[0] for e in errs] == [f"{p}:3", f"{p}:4", f"{p}:5", f"{p}:5"]
    assert "fields" in errs[0]
    with pytest.raises(TraceError) as info:
        read_trace(p)
    assert str(info.value).splitlines() == errs  # all four shown, one per line


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
    times = st.floats(0, MAX_TIME_S, allow_nan=False)
    pos = st.floats(MIN_DURATION_S, MAX_TIME_S, allow_nan=False)
    iters = st.floats(0, MAX_ITERATIONS, exclude_min=True, allow_nan=False)
    overhead = st.one_of(st.just(np.nan), st.just(0.0), pos)
    submit = draw(st.lists(times, min_size=n, max_size=n))
    load = draw(st.lists(overhead, min_size=n, max_size=n))
    save = draw(st.lists(overhead, min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(1, 2**31 - 1), min_size=n, max_size=n))
    dur, work, model = [], [], []
    for _ in range(n):
        kind = draw(st.sampled_from(["d", "im", "both"]))
        dur.append(draw(pos) if kind != "im" else np.nan)
        work.append(draw(iters) if kind != "d" else np.nan)
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
        work,
        np.array(model, dtype=object),
        extra,
        "hypothesis",
        load_s=load,
        save_s=save,
    )


@settings(max_examples=60, deadline=None)
@given(t=traces(), gz=st.booleans())
def test_round_trip(tmp_path_factory: pytest.TempPathFactory, t: Trace, gz: bool) -> None:
    p = tmp_path_factory.mktemp("rt") / ("t.csv.gz" if gz else "t.csv")
    write_trace(t, p)
    r = read_trace(p)
    assert r == t
    for name in ("submit_time", "duration", "iterations", "load_s", "save_s"):
        a, b = getattr(r, name), getattr(t, name)
        assert a.tobytes() == b.tobytes() or np.array_equal(a, b, equal_nan=True)


# --------------------------------------------------------------------------- hostile input
# Each class of attack is handled by one mechanism in gpusched.io.trace; the tests below give
# several examples of each class (issue 10), plus the issue 9 and 17 additions.


def _one_error(path: Path) -> str:
    """The single message read_trace raises for ``path`` (also checks str() is one line)."""
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert len(info.value.errors) == 1, info.value.errors
    assert str(info.value) == info.value.errors[0] and "\n" not in str(info.value)
    return info.value.errors[0]


H = "job_id,submit_time,num_gpus,duration\n"


# -- 1. OS / stdlib failures while reading become TraceError naming the file


def _gz_header_then_garbage() -> bytes:
    return gzip.compress(b"x")[:10] + b"this is not deflate data at all"


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("a.csv.gz", _gz_header_then_garbage(), "corrupt gzip data"),
        ("b.csv.gz", (H + "a,0,1,1\n").encode(), "not valid gzip data"),
        ("c.csv.gz", gzip.compress((H + "a,0,1,1\n" * 50).encode())[:-12], "truncated"),
        ("d.csv.gz", gzip.compress((H + "a,0,1,1\n").encode()) + b"JUNK", "not valid gzip"),
        ("e.csv.gz", b"", ":1: empty file (no header row)"),
    ],
    ids=["garbage-after-header", "plain-text-named-gz", "truncated", "trailing-junk", "empty"],
)
def test_bad_gzip(tmp_path: Path, name: str, data: bytes, needle: str) -> None:
    p = tmp_path / name
    p.write_bytes(data)
    msg = _one_error(p)
    assert msg.startswith(f"{p}:") and needle in msg


def test_directories_and_missing_files(tmp_path: Path) -> None:
    for name in ("dir.csv", "dir.csv.gz"):
        (tmp_path / name).mkdir()
        assert (
            _one_error(tmp_path / name)
            == f"{tmp_path / name}: cannot read: it is a directory, not a trace file"
        )
    missing = tmp_path / "missing.csv"
    assert _one_error(missing) == f"{missing}: cannot read: No such file or directory"


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # chmod 000 does not stop root, so make open() fail as it does for other users
    p = _write(tmp_path, GOOD)

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr("gpusched.io.trace.open", denied, raising=False)
    assert _one_error(p) == f"{p}: cannot read: Permission denied"


def test_unwritable_destination(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, GOOD))
    with pytest.raises(GpuschedError, match="cannot write .*: it is a directory"):
        write_trace(t, tmp_path)


# -- 2. values the engine cannot simulate exactly are rejected at the input


@pytest.mark.parametrize(
    ("row", "col"),
    [
        ("a,1e300,1,10", "submit_time"),
        ("a,1.0000001e10,1,10", "submit_time"),
        ("a,1e400,1,10", "submit_time"),  # overflows to inf
        ("a,0,1,1e300", "duration"),
        ("a,0,1,1e-300", "duration"),
        ("a,0,1,0.0009", "duration"),
        ("a,0,1,2e10", "duration"),
        ("a,0,1,0", "duration"),
    ],
)
def test_out_of_bounds(tmp_path: Path, row: str, col: str) -> None:
    p = _write(tmp_path, H + row + "\n")
    msg = _one_error(p)
    assert msg.startswith(f"{p}:2: column '{col}': expected a number of seconds in [")
    assert f"got '{row.split(',')[1 if col == 'submit_time' else 3]}'" in msg


def test_bounds_are_inclusive(tmp_path: Path) -> None:
    text = H + f"a,{MAX_TIME_S!r},1,{MIN_DURATION_S!r}\nb,0,2147483647,{MAX_TIME_S!r}\n"
    t = read_trace(_write(tmp_path, text))
    assert t.submit_time.tolist() == [MAX_TIME_S, 0]
    assert t.duration.tolist() == [MIN_DURATION_S, MAX_TIME_S]
    assert t.num_gpus.tolist() == [1, 2**31 - 1]


def test_iterations_bound_and_derived_duration(tmp_path: Path) -> None:
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec

    head = "job_id,submit_time,num_gpus,iterations,model\n"
    p = _write(tmp_path, head + "a,0,1,1e17,VGG19\n")
    assert "column 'iterations': expected a number in (0, 9007199254740992]" in _one_error(p)
    cluster = ClusterSpec.homogeneous(1, 8)
    # read fine, but iterations x the catalogue's iteration time leaves the duration bounds
    for iters, line in (("1e15", 3), ("1e-9", 4)):
        text = head + "\n" * (line - 2) + f"a,0,1,{iters},VGG19\n"
        t = read_trace(_write(tmp_path, text, f"i{line}.csv"))
        with pytest.raises(TraceError) as info:
            prepare_jobs(t, cluster)
        (msg,) = info.value.errors
        assert msg.startswith(f"{tmp_path / f'i{line}.csv'}:{line}: column 'iterations': ")
        assert "expected a duration in [0.001, 1e+10] s" in msg
        assert f" {float(iters)!r} iterations of 'VGG19' on 1 GPU(s) take " in msg


def test_validate_trace_guards_traces_built_in_code() -> None:
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec
    from gpusched.io.trace import validate_trace

    t = Trace(["a", "b", "c"], [0, 1e300, 2], [1, 1, 1], [1, 1, 1e-9], [np.nan] * 3, [""] * 3)
    with pytest.raises(TraceError) as info:
        validate_trace(t)
    assert info.value.errors == [
        "<trace>:3: column 'submit_time': expected a number of seconds in [0, 1e+10], got 1e+300",
        "<trace>:4: column 'duration': expected a number of seconds in [0.001, 1e+10], got 1e-09",
    ]
    with pytest.raises(TraceError):
        prepare_jobs(t, ClusterSpec.homogeneous(1, 1))
    validate_trace(t.take([0]))


def test_extreme_bounds_replay_exactly(tmp_path: Path) -> None:
    """A job at MAX_TIME_S lasting MIN_DURATION_S, and one of MAX_TIME_S from 0, both finish."""
    from gpusched.experiments.run import replay

    text = H + f"late,{MAX_TIME_S!r},1,{MIN_DURATION_S!r}\nlong,0,1,{MAX_TIME_S!r}\n"
    for policy in ("fifo", "srtf"):
        summary, result = replay(str(_write(tmp_path, text)), policy)
        st_ = result.state
        assert summary["n_finished"] == 2
        assert st_.job_finish[0] == MAX_TIME_S  # "long", first in submission order
        assert abs(st_.job_finish[1] - st_.job_submit[1] - MIN_DURATION_S) < 1e-5


# -- 3. numbers are spelled one way: nothing is silently coerced or wrapped around


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("4294967297", ""),  # 2**32 + 1: would wrap to 1 in int32
        ("2147483648", ""),
        ("18446744073709551617", ""),  # beyond int64
        ("9" * 5000, ""),  # beyond int() digit limits
        ("1_0", "no '_' digit separators"),
        ("+5", "no '+' sign"),
        (" 5", "no spaces around numbers"),
        ("5 ", "no spaces around numbers"),
        ("5.0", "a whole number"),
        ("5e0", "a whole number"),
        ("\u0663", ""),  # ARABIC-INDIC DIGIT THREE, which int() accepts
        ("\uff15", ""),  # FULLWIDTH DIGIT FIVE
        ("0x10", ""),
        ("", ""),
        ("-1", ""),
    ],
)
def test_bad_integers(tmp_path: Path, value: str, hint: str) -> None:
    p = _write(tmp_path, H + f"a,0,{value},1\n")
    msg = _one_error(p)
    assert msg.startswith(
        f"{p}:2: column 'num_gpus': expected an integer in [0, 2147483647] (0: a job placed by roles), got "
    )
    assert hint in msg
    assert len(msg) < 300  # a 5000-digit value is cut


@pytest.mark.parametrize(
    "value",
    [
        "1_000",
        "inf",
        "Infinity",
        "nan",
        "+5",
        " 5",
        "5 ",
        "\u0663",
        "0x10",
        "1e",
        ".",
        "--1",
        "1e5e5",
        "\t5",
    ],
)
def test_bad_floats(tmp_path: Path, value: str) -> None:
    p = _write(tmp_path, H + f"a,{value},1,1\n")
    assert _one_error(p).startswith(f"{p}:2: column 'submit_time': expected a number of seconds")


def test_number_spellings_accepted(tmp_path: Path) -> None:
    text = H + "a,5.,007,.5\nb,1e3,1,1E-3\nc,6.02E+5,2,2.50\n"
    t = read_trace(_write(tmp_path, text))
    assert t.submit_time.tolist() == [5.0, 1000.0, 602000.0]
    assert t.num_gpus.tolist() == [7, 1, 2]
    assert t.duration.tolist() == [0.5, 0.001, 2.5]


_ALPHABET = "0123456789.eE+-_ \t\n" + "infa" + "\u0663\uff15x"
_AFFIX = st.sampled_from(["", "", "+", "-", " ", "_", "0", "e", ".", "\n", "\u0663", "inf"])


def _near(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Valid numbers, the same with a prefix and/or suffix, and random strings."""
    affixed = st.builds(lambda a, v, b: a + v + b, _AFFIX, valid, _AFFIX)
    return st.one_of(valid, affixed, st.text(alphabet=_ALPHABET, max_size=7))


_FLOATS = _near(
    st.from_regex(
        r"(?:[0-9]{1,4}(?:\.[0-9]{0,3})?|\.[0-9]{1,3})(?:[eE][+-]?[0-9]{1,3})?", fullmatch=True
    )
)
_INTS = _near(st.from_regex(r"[0-9]{1,14}", fullmatch=True))


@settings(max_examples=400, deadline=None)
@given(s=_FLOATS, optional=st.booleans())
def test_float_fast_path_is_the_grammar(s: str, optional: bool) -> None:
    """The vectorised parse accepts exactly the documented spelling, alone or in a column."""
    from gpusched.io.trace import _FLOAT_RE, _parse_floats

    valid = bool(_FLOAT_RE.fullmatch(s)) or (optional and s == "")
    for col in ([s], [s, "1"], ["2.5", s]):
        arr, bad = _parse_floats(col, optional)
        k = col.index(s)
        assert (k not in bad) == valid
        if valid and s:
            assert arr[k] == float(s)
        assert all(i == k for i in bad)


@settings(max_examples=300, deadline=None)
@given(s=_INTS)
def test_int_fast_path_is_the_grammar(s: str) -> None:
    from gpusched.io.trace import _parse_ints

    valid = s.isascii() and s.isdigit() and int(s) <= 2**40
    for col in ([s], [s, "1"]):
        arr, bad = _parse_ints(col, 0, 2**40)
        assert (0 not in bad) == valid
        if valid:
            assert arr[0] == int(s)


def test_trace_constructor_refuses_silent_casts() -> None:
    with pytest.raises(ValueError, match="int32"):
        Trace(["a"], [0], [2**32 + 1], [1], [np.nan], [""])
    with pytest.raises(ValueError, match="non-integral"):
        Trace(["a"], [0], [2.5], [1], [np.nan], [""])
    assert Trace(["a"], [0], [4.0], [1], [np.nan], [""]).num_gpus.tolist() == [4]


# -- 4. every message gives the physical line, and escapes file names and values


def test_line_after_non_utf8_byte(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"\xef\xbb\xbf" + (H + "a,0,1,1\n\nb\xff,0,1,1\n").encode("latin-1"))
    assert _one_error(p) == (
        f"{p}:4: byte 0xff (byte 2 of the line) is not valid UTF-8; save the file as UTF-8"
    )
    p.write_bytes(b"\xef\xbb\xbfjob\xe9_id,x\n")  # on the header line, after a BOM
    assert _one_error(p).startswith(f"{p}:1: byte 0xe9 (byte 4 of the line)")
    p.write_bytes(gzip.compress(GOOD.encode()))  # gzip data in a file named .csv
    assert _one_error(p).endswith("; the file is gzip-compressed: give it a name ending in .gz")
    p.write_bytes(GOOD.encode("utf-16"))
    assert _one_error(p).endswith("not valid UTF-8; the file is UTF-16: save it as UTF-8")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("\n\n" + H + "a,0,x,1\n", 4),  # blank lines before the header
        (H + "\n\n\na,0,x,1\n", 5),
        (H.replace("\n", "\r\n") + "a,0,1,1\r\n\r\nb,0,x,1\r\n", 4),
        ("job_id,submit_time,num_gpus,duration,note\n" + 'a,0,1,1,"x\n\ny"\nb,0,x,1,z\n', 5),
        (H + 'a,0,1,1\n"b\nb",0,x,1\n', 3),  # the line where the record starts
        (H + 'a,0,1,1\nb,0,1,"1\nc,0,1,1\n', 3),  # an unterminated quote
    ],
    ids=["leading-blank", "blank", "crlf", "multiline-field", "record-start", "open-quote"],
)
def test_physical_line_numbers(tmp_path: Path, text: str, line: int) -> None:
    p = _write(tmp_path, text)
    assert _one_error(p).startswith(f"{p}:{line}: ")


def test_header_error_names_its_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "\n\njob_id,submit_time,duration\na,0,1\n")
    assert _one_error(p).startswith(f"{p}:3: missing required column 'num_gpus'")


def test_prepare_jobs_lines(tmp_path: Path) -> None:
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec

    text = (
        "job_id,submit_time,num_gpus,iterations,model,duration,note\n"
        "\n"
        'big,0,64,,,10,"two\nlines"\n'
        "\n"
        "ok,1,1,,,10,x\n"
        "bad,2,1,10,NoSuchNet,,y\n"
    )
    p = _write(tmp_path, text)
    t = read_trace(p)
    assert t.line.tolist() == [3, 6, 7]
    cluster = ClusterSpec.homogeneous(4, 8)
    with pytest.raises(TraceError) as info:
        prepare_jobs(t, cluster)
    assert str(info.value).startswith(f"{p}:3: column 'num_gpus': 1 job(s) need more GPUs")
    with pytest.raises(TraceError) as info:
        prepare_jobs(t, cluster, drop_oversized=True)
    assert str(info.value).startswith(f"{p}:7: column 'model': ")
    assert t.take([2, 1]).line.tolist() == [7, 6]


def test_hostile_file_name_and_values_stay_on_one_line(tmp_path: Path) -> None:
    name = "bad\nname\x1b[31m.csv"
    p = _write(tmp_path, H + 'a,0,"1\n2",1\n' + "b,0," + "7" * 500 + ",1\n", name)
    with pytest.raises(TraceError) as info:
        read_trace(p)
    text = str(info.value)
    lines = text.splitlines()
    assert len(lines) == 2 and "\x1b" not in text
    shown = repr(str(p))
    assert lines[0] == (
        f"{shown}:2: column 'num_gpus': expected an integer in [0, 2147483647] (0: a job placed by roles), got '1\\n2'"
    )
    assert lines[1].startswith(f"{shown}:4: ") and "(500 characters)" in lines[1]


def test_show_helpers_and_trace_error_escaping() -> None:
    from gpusched.errors import show_name, show_value

    assert show_name("plain name.csv") == "plain name.csv"
    assert show_name("a\nb") == "'a\\nb'" and show_name("\u2028") == "'\\u2028'"
    assert show_value("x") == "'x'" and show_value(" 5") == "' 5'"
    assert show_value("a\tb") == "'a\\tb'"
    assert show_value("y" * 100, 10) == "'yyyyyyyyyy...' (100 characters)"
    err = TraceError(["f:1: a\nb", "f:2: \x1b[2J"])
    assert err.errors == ["f:1: a\\nb", "f:2: \\x1b[2J"]
    assert str(err).splitlines() == err.errors
    # format characters too: a right-to-left override would reorder the rest of the line
    err = TraceError("f:3: name\u202eevil, \u2029 and caf\u00e9")
    assert err.errors == ["f:3: name\\u202eevil, \\u2029 and caf\u00e9"]
    assert show_name("a\u202eb.csv") == "'a\\u202eb.csv'"


# -- 5. huge inputs and gzip bombs fail fast, before they are read whole


def test_gzip_bomb_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusched.io.trace as trace_mod

    limit, chunk = 1 << 20, 1 << 16
    monkeypatch.setattr(trace_mod, "MAX_TRACE_BYTES", limit)
    monkeypatch.setattr(trace_mod, "_CHUNK", chunk)
    p = tmp_path / "bomb.csv.gz"
    p.write_bytes(gzip.compress((H + "a,0,1,1\n" * 2_000_000).encode(), compresslevel=9))
    assert p.stat().st_size < limit  # small on disk, 16 MB inside
    produced: list[int] = []

    class Counting(gzip.GzipFile):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            produced.append(len(data))
            return data

    monkeypatch.setattr(gzip, "GzipFile", Counting)
    msg = _one_error(p)
    assert msg.startswith(f"{p}: the gzip data expands to more than 1,048,576 bytes of CSV text")
    assert "MAX_TRACE_BYTES" in msg
    assert sum(produced) <= limit + chunk  # decompression stopped at the limit


def test_huge_plain_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusched.io.trace as trace_mod

    p = _write(tmp_path, H + "".join(f"j{i:03d},0,1,1\n" for i in range(1000)))
    monkeypatch.setattr(trace_mod, "MAX_TRACE_BYTES", p.stat().st_size)
    assert len(read_trace(p)) == 1000  # exactly at the limit: fine
    monkeypatch.setattr(trace_mod, "MAX_TRACE_BYTES", p.stat().st_size - 1)
    assert _one_error(p).startswith(f"{p}: the file holds more than")
    assert trace_mod.MAX_TRACE_BYTES < 2**30  # (the real limit is 1 GiB)


# -- 6. header-only traces, wrong headers, and several problems at once (issue 9)


def test_header_only_trace_gets_a_note(tmp_path: Path) -> None:
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec

    p = _write(tmp_path, H)
    jobs = prepare_jobs(read_trace(p), ClusterSpec.homogeneous(1, 8))
    assert len(jobs) == 0 and jobs.notes == (f"0 jobs in {p}",)


def test_wrong_header_suggests_names(tmp_path: Path) -> None:
    p = _write(tmp_path, "id,submit,gpus,duration\na,0,1,1\n")
    msg = _one_error(p)
    assert msg.startswith(f"{p}:1: missing required columns 'job_id', 'submit_time', 'num_gpus';")
    assert "the header has 4 columns: 'id', 'submit', 'gpus', 'duration'" in msg
    assert (
        "expected 'job_id', 'submit_time', 'num_gpus', 'duration' (or 'iterations' and 'model')"
        in msg
    )
    assert msg.endswith("rename 'id' as 'job_id', 'submit' as 'submit_time', 'gpus' as 'num_gpus'?")
    p = _write(tmp_path, "job_id,submit_tme,num_gpus,duraton\na,0,1,1\n")
    assert "rename 'submit_tme' as 'submit_time', 'duraton' as 'duration'?" in _one_error(p)


@pytest.mark.parametrize(("sep", "word"), [("\t", "tab"), (";", "semicolon")])
def test_other_separators(tmp_path: Path, sep: str, word: str) -> None:
    p = _write(tmp_path, H.replace(",", sep) + sep.join("a011") + "\n")
    msg = _one_error(p)
    assert "the header has 1 column: " in msg
    assert msg.endswith(f"; {word}-separated? gpusched reads comma-separated CSV")


def test_many_problems_are_listed(tmp_path: Path) -> None:
    p = _write(tmp_path, H + "".join(f"j{i},{i},x,1\n" for i in range(9)))
    with pytest.raises(TraceError) as info:
        read_trace(p)
    errs = info.value.errors
    assert len(errs) == 9
    lines = str(info.value).splitlines()
    assert lines == errs[:6] + ["(and 3 more problems)"]
    assert [ln.split(": ")[0] for ln in lines[:6]] == [f"{p}:{k}" for k in range(2, 8)]


# -- 8. load_s and save_s columns (issue 17)


def test_load_save_columns(tmp_path: Path) -> None:
    text = "job_id,submit_time,num_gpus,duration,save_s,load_s,user\na,5,1,10,,2.5,u\nb,1,1,10,0,,v\nc,3,1,10,1e-3,0,w\n"
    t = read_trace(_write(tmp_path, text))
    assert np.array_equal(t.load_s, [2.5, np.nan, 0], equal_nan=True)
    assert np.array_equal(t.save_s, [np.nan, 0, 0.001], equal_nan=True)
    assert "load_s" not in t.extra and "save_s" not in t.extra
    assert t.columns() == [
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "load_s",
        "save_s",
        "user",
    ]
    write_trace(t, tmp_path / "o.csv")
    assert read_trace(tmp_path / "o.csv") == t
    assert (tmp_path / "o.csv").read_text().splitlines()[1] == "a,5,1,10,2.5,,u"
    assert t != Trace(
        t.job_id, t.submit_time, t.num_gpus, t.duration, t.iterations, t.model, t.extra
    )

    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec

    jobs = prepare_jobs(t, ClusterSpec.homogeneous(1, 8))
    assert jobs.job_id.tolist() == ["b", "c", "a"]  # submission order
    assert np.array_equal(jobs.load_s, [np.nan, 0, 2.5], equal_nan=True)
    assert np.array_equal(jobs.save_s, [0, 0.001, np.nan], equal_nan=True)


def test_load_save_absent_means_not_given(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, GOOD))
    assert np.isnan(t.load_s).all() and np.isnan(t.save_s).all() and t.load_s.shape == (2,)
    assert "load_s" not in t.columns()


@pytest.mark.parametrize("value", ["-1", "1e-300", "0.0005", "1e11", "inf", "nan", " 1", "x"])
@pytest.mark.parametrize("col", ["load_s", "save_s"])
def test_bad_load_save(tmp_path: Path, col: str, value: str) -> None:
    p = _write(tmp_path, f"job_id,submit_time,num_gpus,duration,{col}\na,0,1,1,{value}\n")
    msg = _one_error(p)
    assert msg.startswith(
        f"{p}:2: column '{col}': expected 0 or a number of seconds in [0.001, 1e+10], or empty"
    )


# -- the CLI shows all of this as ``error: ...`` (exit 2), or as ``note: ...``


def _replay(*args: object):
    from typer.testing import CliRunner

    from gpusched.cli import app

    return CliRunner().invoke(app, ["replay", *map(str, args)])


def test_cli_header_only_note(tmp_path: Path) -> None:
    r = _replay(_write(tmp_path, H), "-P", "fifo")
    assert r.exit_code == 0 and f"note: 0 jobs in {tmp_path / 't.csv'}\n" in r.output


def test_cli_errors(tmp_path: Path) -> None:
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(_gz_header_then_garbage())
    r = _replay(gz)
    assert r.exit_code == 2 and len(r.output.splitlines()) == 1
    assert r.output.startswith(f"error: {gz}: cannot read: corrupt gzip data (Error -3 ")
    many = _write(tmp_path, H + "a,x,1,1\nb,y,1,1\n")
    r = _replay(many)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.splitlines() == [
        f"error: {many}:2: column 'submit_time': expected a number of seconds in [0, 1e+10], got 'x'",
        f"{many}:3: column 'submit_time': expected a number of seconds in [0, 1e+10], got 'y'",
    ]
