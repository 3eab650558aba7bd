"""Large traces are split and parsed by pyarrow (``gpusched.io.trace._split_arrow``): for any
file, valid or not, the result or the error messages are those of the Python splitter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gpusched.io.trace as trace_mod
from gpusched.errors import TraceError
from gpusched.io.trace import read_trace

COLUMNS = ("submit_time", "num_gpus", "duration", "iterations", "load_s", "save_s", "line")


def outcome(path, arrow: bool, monkeypatch) -> object:
    """read_trace's trace (as plain values) or its error lines, with or without pyarrow."""
    monkeypatch.setattr(trace_mod, "ARROW_SPLIT_BYTES", 0 if arrow else 1 << 62)
    try:
        t = read_trace(path)
    except TraceError as e:
        return ("error", str(e))
    cols = {c: getattr(t, c) for c in COLUMNS}
    for c, a in cols.items():
        assert a.flags.writeable, c  # later steps write into them
    return (
        [t.job_id.tolist(), t.model.tolist(), {k: v.tolist() for k, v in t.extra.items()}],
        {c: (a.dtype.str, np.where(np.isnan(a), -1.5, a).tolist()) for c, a in cols.items()},
    )


def both_agree(tmp_path, monkeypatch, text: str | bytes) -> object:
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    fast = outcome(path, True, monkeypatch)
    slow = outcome(path, False, monkeypatch)
    assert fast == slow
    return fast


HEAD = "job_id,submit_time,num_gpus,duration,iterations,model,load_s,user\n"
CASES = [
    HEAD + "a,0,1,10,,,,u1\nb,2.5,2,.5,,,3,u2\n",
    HEAD + "a,0,1,10,,,,u1\nb,2.5,2,,100,resnet,,u2",  # no final newline
    HEAD + "a,+1,1,10,,,,u\nb,-2,1,inf,,,,u\nc, 3,1,nan,,,,u\nd,1_0,1,1e400,,,,u\n",
    HEAD + "a,0,5.0,10,,,,u\nb,0,99999999999999999999,10,,,,u\nc,0,-1,10,,,,u\nd,0,,10,,,,u\n",
    HEAD + "a,0,1,,,,,u\nb,0,1,,5,,,u\nc,0,0,,,,,u\nd,0,1,,,m,,u\n",
    HEAD + "a,0,1,10,,,,u\na,1,1,10,,,,u\n,2,1,10,,,,u\n",
    HEAD + "a,0,1,10,,,,u\n\nb,1,1,10,,,,u\n",  # a blank line
    HEAD + "a,0,1,10,,,,u\nb,1,1,10,,,u\n",  # a short row
    HEAD + "a,0,1,10,,,0.0001,u\nb,1e10,2147483648,1e10,,,0,u\n",
    HEAD + "a,0,1,10,,,,ü\nb,0x10,1,١٢,,,,u\n",  # non-ASCII digits
    "\ufeff" + HEAD + "a,0,1,10,,,,u\n",  # a byte-order mark
    " job_id , submit_time,num_gpus ,duration\na,0,1,10\n",  # spaces around names
    "job_id,submit_time,num_gpus,duration,duration\na,0,1,10,10\n",
    "job_id,submit_time,num_gpus\na,0,1\n",
    "job_id;submit_time;num_gpus;duration\na;0;1;10\n",
    "job_id,submit_time,num_gpus\na,0,0\nb,1,0\n",  # placed by roles: no duration needed
    "job_id,submit_time,num_gpus\na,0,0\nb,1,2\n",  # then one that needs one
    "job_id,submit_time,num_gpus,chunks\na,0,2,x\nb,1,0,\nc,1,2, \n",
    HEAD,
]


@pytest.mark.parametrize("text", CASES)
def test_the_pyarrow_splitter_matches_the_python_one(tmp_path, monkeypatch, text):
    both_agree(tmp_path, monkeypatch, text)


def test_a_valid_trace_is_read_by_pyarrow(tmp_path, monkeypatch):
    calls = []
    real = trace_mod._split_arrow

    def spy(data, text):
        calls.append(real(data, text) is not None)
        return real(data, text)

    monkeypatch.setattr(trace_mod, "_split_arrow", spy)
    got = both_agree(tmp_path, monkeypatch, CASES[0])
    assert calls == [True, False] and got[0][0] == ["a", "b"]  # taken, then size-gated


FIELDS = st.sampled_from(
    ["", "0", "1", "7", "00", "2.5", ".5", "5.", "1e3", "1E-3", "-1", "+2", " 3", "x", "1e999",
     "inf", "1.5e", "99999999999999999999", "0.0005", "16", "m", ".", "1.2.3", "..",
     "1..", "123456789012345678", "1234567890123456789", "0.", "00.00"]
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(FIELDS, FIELDS, FIELDS, FIELDS, FIELDS, FIELDS), max_size=8))
def test_random_fields_give_the_same_trace_or_errors(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("t")
    lines = [f"j{i},{a},{b},{c},{e},{f},{g}" for i, (a, b, c, e, f, g) in enumerate(rows)]
    text = "job_id,submit_time,num_gpus,duration,iterations,model,save_s\n" + "\n".join(lines)
    with pytest.MonkeyPatch.context() as mp:
        both_agree(d, mp, text + "\n")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="0123456789.e+- x", max_size=6), max_size=12),
    st.integers(0, 3),
    st.booleans(),
)
@example(["1234"], 0, False)
@example(["123", "", "."], 2, True)
@example(["12", "3.5"], 3, False)
@example(["1.2.3", "12."], 1, False)
def test_the_byte_check_of_plain_numbers_agrees_with_the_patterns(fields, cut, empty):
    """_digit_fields (bytes and offsets in numpy) says yes exactly when every field
    matches the trace format's patterns without an exponent, on slices too."""
    import re

    import pyarrow as pa

    cut_off = ["x", "1..", "+"]  # wrong for both: the slice must not look at them
    text = pa.array([*cut_off[:cut], *fields], type=pa.string())[cut:]
    values = text.to_pylist()
    point = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
    want_float = all(point.fullmatch(v) or (empty and v == "") for v in values)
    assert trace_mod._digit_fields(text, point=True, empty=empty, max_len=1 << 31) == want_float
    want_int = all(re.fullmatch("[0-9]{1,3}", v) for v in values)
    assert trace_mod._digit_fields(text, point=False, empty=False, max_len=3) == want_int


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab1é", max_size=3), max_size=8), st.integers(0, 2))
def test_increasing_ids_are_unique_and_others_are_checked_one_by_one(ids, cut):
    """_increasing says yes only for ids that are all unique and non-empty (it may say no
    for such ids too: then they are checked one by one)."""
    import pyarrow as pa

    text = pa.array(["zz", "", *ids], type=pa.string())[cut:]
    values = text.to_pylist()
    sorted_unique = all(
        a.encode() < b.encode() for a, b in zip(values[:-1], values[1:], strict=True)
    )
    want = sorted_unique and "" not in values
    assert trace_mod._increasing(text) == want


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_duplicate_and_empty_ids_are_reported_in_sorted_and_other_traces(
    tmp_path, monkeypatch, order
):
    ids = [f"j{i:03d}" for i in range(40)]
    if order == "shuffled":
        ids = ids[::-1]
    for bad in ([*ids, ids[5]], [*ids[:3], "", *ids[3:]], ids):
        text = HEAD + "".join(f"{j},0,1,10,,,,u\n" for j in bad)
        got = both_agree(tmp_path, monkeypatch, text)
        if bad is ids:
            assert got[0][0] == ids
        else:
            assert got[0] == "error" and "job_id" in got[1]
