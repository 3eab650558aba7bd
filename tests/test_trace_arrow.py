"""Large traces are split and parsed by pyarrow (``gpusched.trace._split_arrow``): for any
file, valid or not, the result or the error messages are those of the Python splitter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusched.trace as trace_mod
from gpusched.errors import TraceError
from gpusched.trace import read_trace

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
     "inf", "1.5e", "99999999999999999999", "0.0005", "16", "m"]
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(FIELDS, FIELDS, FIELDS, FIELDS, FIELDS, FIELDS), max_size=8))
def test_random_fields_give_the_same_trace_or_errors(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("t")
    lines = [f"j{i},{a},{b},{c},{e},{f},{g}" for i, (a, b, c, e, f, g) in enumerate(rows)]
    text = "job_id,submit_time,num_gpus,duration,iterations,model,save_s\n" + "\n".join(lines)
    with pytest.MonkeyPatch.context() as mp:
        both_agree(d, mp, text + "\n")
