"""The canonical job trace: the :class:`Trace` data class, a validating reader and a writer.

A trace is a CSV file (optionally gzip-compressed, ``.csv.gz``) in UTF-8 with a header row
and one row per job, or a Parquet file (``.parquet``) with the same columns
(:class:`ParquetTable`: its schema is checked, then its values by the same rules, and
problems name rows instead of lines). Columns:

=========== ======== ====================================================================
column      required meaning
=========== ======== ====================================================================
job_id      yes      unique, non-empty job identifier (text)
submit_time yes      submission time, seconds, in [0, ``MAX_TIME_S``]
num_gpus    yes      GPUs requested, an integer in [1, ``MAX_GPUS``]; 0 for a job that
                     declares per-role demands instead (see below)
duration    (a)      exclusive run time at ideal placement, seconds, in
                     [``MIN_DURATION_S``, ``MAX_TIME_S``]
iterations  (b)      training iterations to run, a number in (0, ``MAX_ITERATIONS``]
model       (b)      DNN model name (non-empty)
load_s      no       seconds the job spends loading (e.g. restoring a checkpoint) after
                     each start before it trains: 0 or in [``MIN_DURATION_S``, ``MAX_TIME_S``]
save_s      no       seconds the job spends pausing and saving after each preemption:
                     0 or in [``MIN_DURATION_S``, ``MAX_TIME_S``]
...         no       anything else (``user``, ``group``, ``batch_size``, ``gpu_type``, ...);
                     a name close to a column above that the trace lacks (``laod_s``)
                     is kept too, and a run says so in a note
=========== ======== ====================================================================

Each row must give either (a) ``duration`` or (b) both ``iterations`` and ``model``, unless
its ``num_gpus`` is 0: such a job is placed through the resource ledger by roles (workers
and parameter servers, docs/architecture.md, "Multi-resource machines") and a job model that owns it
(:mod:`gpusched.jobmodels.ps`) derives its work from its own columns (a file whose every
row has ``num_gpus`` 0 needs no ``duration``, ``iterations`` or ``model`` column). The same
holds for a job made of data chunks, a row that gives ``chunks`` (:data:`TASK_COLUMN`;
:mod:`gpusched.jobmodels.chunks` derives its work, docs/architecture.md, "Jobs made
of tasks"). An
empty field means "not given" (for ``load_s``/``save_s`` too: the engine then uses the
catalogue's or the run's default). Rows keep their file order (the engine sorts stably by
submit time).

**Numbers** are plain decimals as :func:`write_trace` writes them: digits with an optional
decimal point and exponent (``12``, ``2.5``, ``.5``, ``1e-3``, ``6.02E+5``). Not accepted,
because each would be a silent guess: a sign (``+5``; negative values are out of range
anyway), spaces around the number, digit separators (``1_000``), ``inf``/``nan``,
hexadecimal, and non-ASCII digits. **Integers** (``num_gpus``) are ASCII digits only:
``5.0`` and ``5e0`` are rejected rather than rounded, and a value beyond the range is an
error, never wrapped around.

**Bounds** keep every value one the engine simulates exactly. ``MAX_TIME_S`` = 1e10 s
(317 years; the longest public traces span under 1e8 s) bounds submit times and durations,
so that ``submit + duration`` stays below 2e10 s, where float64 resolves 2**-18 s
(3.8 us). ``MIN_DURATION_S`` = 1 ms (a GPU training job is never shorter) is then still
more than 250 resolution steps long at any time, so no duration, load or save rounds to
nothing and every slot boundary moves time forward. ``MAX_ITERATIONS`` = 2**53 is the
largest count float64 holds exactly; the duration derived from iterations is checked
against the same bounds when the job table is built (:mod:`gpusched.core.jobs`).

**Limits.** A file is read whole into memory, so one that holds more than
``MAX_TRACE_BYTES`` (1 GiB, about 20 million jobs; gzip input is counted after
decompression, and is decompressed in a stream that stops at the limit, so a small
"gzip bomb" fails fast) is rejected.

**Errors.** Every bad field is reported as ``file:line: column 'c': expected ..., got 'v'``
where ``line`` is the physical line of the file (line 1 = the header, blank lines and
newlines inside quoted fields counted), and all of them are raised together as one
:class:`~gpusched.errors.TraceError`; no row is ever dropped silently. Unreadable files
(missing, a directory, not gzip, corrupt or truncated gzip, not UTF-8) are a
``TraceError`` naming the file too. File names and values are escaped in messages
(:func:`~gpusched.errors.show_name`, :func:`~gpusched.errors.show_value`).

Reading checks and converts whole columns at C speed (a character scan, then NumPy) and only
scans row by row to locate the lines of a column that failed, so a million-row trace reads
in about 2.5 s of CPU time.
Writing is exact: ``read_trace(p)`` after ``write_trace(t, p)`` gives arrays equal to
those of ``t`` (floats are written with the shortest repr that round-trips).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import difflib
import gc
import gzip
import hashlib
import io
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import methodcaller
from pathlib import Path
from typing import Any, Protocol, overload

import numpy as np

from gpusched.errors import GpuschedError, TraceError, show_name, show_value

__all__ = [
    "CANONICAL_COLUMNS",
    "DURATION_WHAT",
    "ITERATIONS_WHAT",
    "KNOWN_OPTIONAL_COLUMNS",
    "MAX_GPUS",
    "MAX_ITERATIONS",
    "MAX_TIME_S",
    "MAX_TRACE_BYTES",
    "MIN_DURATION_S",
    "REQUIRED_COLUMNS",
    "SUBMIT_WHAT",
    "CsvTable",
    "Trace",
    "duration_ok",
    "iterations_ok",
    "read_trace",
    "trace_sha256",
    "submit_ok",
    "validate_trace",
    "write_trace",
]

MAX_TIME_S: float = 1e10
"""Largest submit time, duration, load or save time a trace may give, s (see the module doc)."""

MIN_DURATION_S: float = 1e-3
"""Smallest duration (and non-zero load or save time) a trace may give, s."""

MAX_ITERATIONS: float = 2.0**53
"""Largest ``iterations`` value: the largest count float64 holds exactly."""

MAX_GPUS: int = 2**31 - 1
"""Largest ``num_gpus`` (the int32 range the engine stores it in)."""

MAX_TRACE_BYTES: int = 1 << 30
"""Largest file read, in bytes of CSV text (after decompression for ``.gz``)."""

REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "submit_time", "num_gpus")
"""Columns every trace must have."""

CANONICAL_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "num_gpus",
    "duration",
    "iterations",
    "model",
    "load_s",
    "save_s",
)
"""Columns held in dedicated :class:`Trace` fields (everything else goes to ``extra``)."""

KNOWN_OPTIONAL_COLUMNS: tuple[str, ...] = ("user", "group", "batch_size", "gpu_type")
"""Optional ``extra`` columns the writer puts first, in this order."""

_FLOAT_COLUMNS = ("submit_time", "duration", "iterations", "load_s", "save_s")

# What each numeric column accepts, as words (for messages) and as a vectorised test.
# The importers check source columns against the same bounds, so that a value the engine
# cannot simulate exactly is reported against the source file's line and column.
SUBMIT_WHAT = f"a number of seconds in [0, {MAX_TIME_S:g}]"
"""What a submit time (or any point in time) may be, as words for a message."""

DURATION_WHAT = f"a number of seconds in [{MIN_DURATION_S:g}, {MAX_TIME_S:g}]"
"""What a duration may be, as words for a message."""

ITERATIONS_WHAT = f"a number in (0, {MAX_ITERATIONS:.0f}]"
"""What an iteration (or step) count may be, as words for a message."""

_OVERHEAD_WHAT = f"0 or a number of seconds in [{MIN_DURATION_S:g}, {MAX_TIME_S:g}]"
_GPUS_WHAT = f"an integer in [0, {MAX_GPUS}] (0: a job placed by roles)"
#: A row that gives this column is a job made of data chunks: its job model derives its work.
TASK_COLUMN = "chunks"


def submit_ok(a: np.ndarray) -> np.ndarray:
    """Which values of ``a`` are valid submit times (:data:`SUBMIT_WHAT`)."""
    ok: np.ndarray = (a >= 0) & (a <= MAX_TIME_S)
    return ok


def duration_ok(a: np.ndarray) -> np.ndarray:
    """Which values of ``a`` are valid durations (:data:`DURATION_WHAT`)."""
    ok: np.ndarray = (a >= MIN_DURATION_S) & (a <= MAX_TIME_S)
    return ok


def iterations_ok(a: np.ndarray) -> np.ndarray:
    """Which values of ``a`` are valid iteration counts (:data:`ITERATIONS_WHAT`)."""
    ok: np.ndarray = (a > 0) & (a <= MAX_ITERATIONS)
    return ok


def _overhead_ok(a: np.ndarray) -> np.ndarray:
    ok: np.ndarray = (a == 0) | duration_ok(a)
    return ok


def _ids(values: Any) -> np.ndarray:
    """Return a 1-D array of job ids (NumPy's variable-width ``StringDType``) built from
    ``values``. An id of up to 15 bytes is held inside the array's 16 bytes per element; an
    object array of ``str`` took 72 bytes per id (1M jobs: 16 MB against 72 MB, kept for the
    whole run). Its elements are ``str``."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "OTU":
        arr = np.asarray([str(v) for v in arr.tolist()], dtype=object)
    return arr.astype(np.dtypes.StringDType(), copy=False)


def _obj(values: Any) -> np.ndarray:
    """Return a 1-D object array of ``str`` built from ``values``."""
    arr = np.asarray(values)
    if arr.dtype == object:
        return arr
    out = np.empty(arr.shape[0] if arr.ndim else 0, dtype=object)
    out[:] = [str(v) for v in arr.tolist()]
    return out


def _gpu_counts(values: Any) -> np.ndarray:
    """``values`` as int32, refusing what a cast would change (fractions, wrap-around)."""
    arr = np.asarray(values)
    if arr.size and arr.dtype.kind == "f" and not np.array_equal(arr, np.floor(arr)):
        raise ValueError("Trace.num_gpus holds a non-integral value")
    if arr.size and arr.dtype.kind in "fiu":
        lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        if not (lo <= arr.min() and arr.max() <= hi):
            raise ValueError("Trace.num_gpus holds a value outside the int32 range")
    return np.asarray(arr, dtype=np.int32)


def _not_given() -> np.ndarray:
    return np.empty(0)


def _no_lines() -> np.ndarray:
    return np.empty(0, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A job trace held as struct-of-arrays, one element per job, in file order.

    Parameters
    ----------
    job_id
        Unique job ids (``str``; a NumPy ``StringDType`` array, 16 bytes per short id).
    submit_time
        Submission times, seconds (float64, >= 0).
    num_gpus
        GPUs requested per job (int32, >= 1).
    duration
        Exclusive run time at ideal placement, seconds (float64); NaN where the row gave
        ``iterations`` and ``model`` instead.
    iterations
        Iterations to run (float64); NaN where not given.
    model
        Model names (object array of ``str``); ``''`` where not given.
    extra
        Every other column, as given in the file (object arrays of ``str``), keyed by
        column name. Numeric conversion is the consumer's job.
    source
        The path the trace was read from, or a description of how it was made.
    load_s, save_s
        Seconds spent loading after each start and saving after each preemption
        (float64); NaN where not given. The default (an empty array) means not given for
        any job.
    line
        Physical line of each row in the file it was read from (int64, header = 1), used
        in messages. The default (an empty array) is ``i + 2`` for row ``i``: the line
        :func:`write_trace` gives it when no field holds a newline.

    Notes
    -----
    The constructor coerces the arrays to the dtypes above and checks that they all have
    the same length, and refuses ``num_gpus`` values that int32 cannot hold exactly; it
    does not check value ranges (:func:`read_trace` and :func:`validate_trace` do).
    Equality (``==``) compares every column (NaN equals NaN) but ignores ``source`` and
    ``line``.
    """

    job_id: np.ndarray
    submit_time: np.ndarray
    num_gpus: np.ndarray
    duration: np.ndarray
    iterations: np.ndarray
    model: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = ""
    load_s: np.ndarray = field(default_factory=_not_given)
    save_s: np.ndarray = field(default_factory=_not_given)
    line: np.ndarray = field(default_factory=_no_lines)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "job_id", _ids(self.job_id))
        n = self.job_id.shape[0]
        set_(self, "submit_time", np.asarray(self.submit_time, dtype=np.float64))
        set_(self, "num_gpus", _gpu_counts(self.num_gpus))
        set_(self, "duration", np.asarray(self.duration, dtype=np.float64))
        set_(self, "iterations", np.asarray(self.iterations, dtype=np.float64))
        set_(self, "model", _obj(self.model))
        for name in ("load_s", "save_s"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            set_(self, name, np.full(n, np.nan) if arr.shape == (0,) else arr)
        line = np.asarray(self.line, dtype=np.int64)
        set_(self, "line", np.arange(2, n + 2, dtype=np.int64) if line.shape == (0,) else line)
        set_(self, "extra", {str(k): _obj(v) for k, v in self.extra.items()})
        for name in (*CANONICAL_COLUMNS[1:], "line"):
            arr = getattr(self, name)
            if arr.ndim != 1 or arr.shape[0] != n:
                raise ValueError(f"Trace.{name} has shape {arr.shape}, expected ({n},)")
        for name, arr in self.extra.items():
            if name in CANONICAL_COLUMNS:
                raise ValueError(f"extra column {name!r} clashes with a canonical column")
            if arr.shape != (n,):
                raise ValueError(f"Trace.extra[{name!r}] has shape {arr.shape}, expected ({n},)")

    def __len__(self) -> int:
        return int(self.job_id.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        if len(self) != len(other) or set(self.extra) != set(other.extra):
            return False
        same = (
            np.array_equal(self.job_id, other.job_id)
            and np.array_equal(self.num_gpus, other.num_gpus)
            and np.array_equal(self.model, other.model)
            and all(
                np.array_equal(getattr(self, c), getattr(other, c), equal_nan=True)
                for c in _FLOAT_COLUMNS
            )
        )
        return bool(same) and all(np.array_equal(self.extra[k], other.extra[k]) for k in self.extra)

    __hash__ = None  # type: ignore[assignment]

    def columns(self) -> list[str]:
        """Return the column order used by :func:`write_trace`.

        ``job_id, submit_time, num_gpus``, then ``duration``, ``iterations``, ``model``,
        ``load_s`` and ``save_s`` when any row gives them (``duration`` always for an
        empty trace), then the known optional columns (``user``, ``group``,
        ``batch_size``, ``gpu_type``) that are present, then the other ``extra`` columns
        in their stored order.

        Returns
        -------
        list of str
            Column names.
        """
        cols = list(REQUIRED_COLUMNS)
        if not np.isnan(self.duration).all() or len(self) == 0:
            cols.append("duration")
        if not np.isnan(self.iterations).all():
            cols.append("iterations")
        if len(self) and (self.model != "").any():
            cols.append("model")
        cols += [c for c in ("load_s", "save_s") if not np.isnan(getattr(self, c)).all()]
        cols += [c for c in KNOWN_OPTIONAL_COLUMNS if c in self.extra]
        cols += [c for c in self.extra if c not in KNOWN_OPTIONAL_COLUMNS]
        return cols

    def column(self, name: str) -> np.ndarray:
        """Return the array of column ``name`` (canonical or extra).

        Parameters
        ----------
        name
            Column name.

        Returns
        -------
        numpy.ndarray
            The stored array (not a copy).
        """
        if name in CANONICAL_COLUMNS:
            return getattr(self, name)  # type: ignore[no-any-return]
        return self.extra[name]

    def take(self, index: Any, source: str | None = None) -> Trace:
        """Return the jobs selected by ``index`` (integer indices, a slice or a boolean mask).

        Parameters
        ----------
        index
            Anything NumPy accepts to index a 1-D array.
        source
            Description of the new trace; defaults to this trace's ``source``.

        Returns
        -------
        Trace
            A new trace holding copies of the selected rows (and their line numbers), in
            the given order.
        """
        return Trace(
            job_id=self.job_id[index],
            submit_time=self.submit_time[index],
            num_gpus=self.num_gpus[index],
            duration=self.duration[index],
            iterations=self.iterations[index],
            model=self.model[index],
            extra={k: v[index] for k, v in self.extra.items()},
            source=self.source if source is None else source,
            load_s=self.load_s[index],
            save_s=self.save_s[index],
            line=self.line[index],
        )


# --------------------------------------------------------------------------- reading files

_CHUNK = 1 << 24  # bytes read at a time, so the size limit is checked while reading


def _size(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n:,} bytes"


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


def _read_capped(fh: _Readable, fname: str, what: str) -> bytes:
    """Read ``fh`` to its end, stopping with an error once it exceeds ``MAX_TRACE_BYTES``."""
    limit = MAX_TRACE_BYTES
    chunks: list[bytes] = []
    total = 0
    while chunk := fh.read(_CHUNK):
        total += len(chunk)
        if total > limit:
            raise TraceError(
                f"{fname}: {what} more than {_size(limit)} of CSV text, the most gpusched "
                "reads (gpusched.io.trace.MAX_TRACE_BYTES); split the trace"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _why(exc: BaseException, gz: bool) -> str:
    """A short reason for an error raised while opening, reading or decompressing a file."""
    if isinstance(exc, IsADirectoryError):
        return "it is a directory, not a trace file"
    if isinstance(exc, gzip.BadGzipFile):
        return f"not valid gzip data ({exc})"
    if isinstance(exc, EOFError):
        return "the gzip data is truncated (it ends before the end-of-stream marker)"
    if isinstance(exc, zlib.error):
        return f"corrupt gzip data ({exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # not str(exc), which repeats the (unescaped) file name
    return f"{type(exc).__name__}: {exc}" + (" (reading gzip data)" if gz else "")


def _read_bytes(path: Path, fname: str) -> bytes:
    """The file's bytes, gunzipped (streaming) if the name ends in ``.gz``."""
    gz = path.name.endswith(".gz")
    try:
        with open(path, "rb") as raw:
            if not gz:
                return _read_capped(raw, fname, "the file holds")
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                return _read_capped(fh, fname, "the gzip data expands to")
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"{fname}: cannot read: {_why(exc, gz)}") from None


def _bom_len(data: bytes) -> int:
    """Bytes of a leading UTF-8 byte-order mark (0 or 3)."""
    return len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0


def _decode(data: bytes, fname: str) -> str:
    """UTF-8 text of ``data`` (a leading byte-order mark dropped); errors name line and byte."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return str(memoryview(data)[bom:], "utf-8")
    except UnicodeDecodeError as exc:
        pos = bom + exc.start
        head = data[:pos]
        line = head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1
        col = pos - max(head.rfind(b"\n"), head.rfind(b"\r")) - (bom if line == 1 else 0)
        if data.startswith(b"\x1f\x8b"):
            fix = "the file is gzip-compressed: give it a name ending in .gz"
        elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            fix = "the file is UTF-16: save it as UTF-8"
        else:
            fix = "save the file as UTF-8"
        raise TraceError(
            f"{fname}:{line}: byte {data[pos]:#04x} (byte {col} of the line) is not valid "
            f"UTF-8; {fix}"
        ) from None


# --------------------------------------------------------------------------- splitting CSV


@dataclass(slots=True)
class _Split:
    header: list[str]
    header_line: int
    columns: list[Sequence[str]]
    lines: np.ndarray  # physical line where each row starts
    problems: list[tuple[int, str]]  # (line, message)


class _ArrowText(Sequence[str]):
    """A text column held by pyarrow (:func:`_split_arrow`); Python strings are made only
    when something asks for them, so that numeric columns parse without them."""

    __slots__ = ("_list", "array")

    def __init__(self, array: Any) -> None:
        self.array = array
        self._list: list[str] | None = None

    def _py(self) -> list[str]:
        if self._list is None:
            self._list = self.array.to_pylist()
        return self._list

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if self._list is None and isinstance(i, int):
            field_: str = self.array[i].as_py()  # one field: no Python string for every row
            return field_
        return self._py()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._py())


#: files from this size (bytes) are split by pyarrow (:func:`_split_arrow`); smaller ones
#: by :func:`_split_simple`, which spares them importing pyarrow (about 0.3 s)
ARROW_SPLIT_BYTES = 1 << 20


def _split_arrow(data: bytes, text: str) -> _Split | None:
    """:func:`_split_simple`'s files (no quotes, CRs or blank lines; two columns or more)
    of at least :data:`ARROW_SPLIT_BYTES`, split by pyarrow's CSV reader into text columns
    whose numbers pyarrow then parses (:func:`_arrow_floats`); None for any other file."""
    if len(data) < ARROW_SPLIT_BYTES or '"' in text or "\r" in text or not text.strip():
        return None
    head, _, body = text.partition("\n")
    header = [h.strip() for h in head.split(",")]
    ncol = len(header)
    if ncol < 2 or not body or "\n\n" in body or body.startswith("\n"):
        return None  # blank lines: pyarrow would read them as rows of empty fields
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = [f"c{j}" for j in range(ncol)]
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data[data.index(b"\n") + 1 :]),
            read_options=pcsv.ReadOptions(column_names=names),
            parse_options=pcsv.ParseOptions(
                quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        return None  # a ragged or blank line: the other splitters report or skip it
    n = table.num_rows
    if n != body.count("\n") + (0 if body.endswith("\n") else 1):
        return None
    cols: list[Sequence[str]] = [_ArrowText(table.column(j).combine_chunks()) for j in names]
    return _Split(header, 1, cols, np.arange(2, n + 2, dtype=np.int64), [])


def _split_simple(text: str) -> _Split | None:
    """Split a CSV without quotes, CRs or blank lines; None if the text is not that simple."""
    if '"' in text or "\r" in text or not text.strip():
        return None
    body = text[:-1] if text.endswith("\n") else text
    head, _, body = body.partition("\n")
    header = [h.strip() for h in head.split(",")]
    ncol = len(header)
    if ncol < 2:
        return None  # a blank line would look like a row: let the csv path decide
    if not body:
        return _Split(header, 1, [[] for _ in header], np.zeros(0, np.int64), [])
    lines = body.split("\n")
    if set(map(methodcaller("count", ","), lines)) != {ncol - 1}:
        return None  # ragged or blank lines: let the csv path report them
    flat = body.replace("\n", ",").split(",")
    cols: list[Sequence[str]] = [flat[j::ncol] for j in range(ncol)]
    return _Split(header, 1, cols, np.arange(2, len(lines) + 2, dtype=np.int64), [])


def _split_csv(text: str, fname: str) -> _Split:
    """General path: the csv module (strict quoting), tracking where each record starts."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    prev = 0  # physical lines consumed so far
    problems: list[tuple[int, str]] = []
    try:
        header = next(reader, None)
        while header is not None and not "".join(header).strip():
            prev = reader.line_num
            header = next(reader, None)  # leading blank lines
        if header is None:
            return _Split([], 1, [], np.zeros(0, np.int64), [(1, "empty file (no header row)")])
        header_line, prev = prev + 1, reader.line_num
        header = [h.strip() for h in header]
        ncol = len(header)
        rows: list[list[str]] = []
        line_list: list[int] = []
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != ncol:
                problems.append(
                    (start, f"expected {ncol} fields (as in the header), got {len(row)}")
                )
                continue
            rows.append(row)
            line_list.append(start)
    except csv.Error as exc:
        start = prev + 1
        return _Split(
            [], 1, [], np.zeros(0, np.int64), [(start, f"bad CSV in the row starting here: {exc}")]
        )
    columns: list[Sequence[str]] = list(zip(*rows, strict=True)) if rows else [() for _ in header]
    return _Split(header, header_line, columns, np.asarray(line_list, dtype=np.int64), problems)


# --------------------------------------------------------------------------- parsing fields

_FLOAT_RE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FLOAT_CHARS = b"0123456789.eE+-\n"  # every character a plain decimal may hold ("\n" joins)
_INT_CHARS = b"0123456789\n"


def _joined_clean(raw: Sequence[str], chars: bytes) -> bool:
    """True if the fields of ``raw`` hold only ``chars``, no newline and no leading sign.

    Works on the fields joined by newlines, with C-speed string operations only.
    """
    joined = "\n".join(raw)
    if joined.count("\n") != len(raw) - 1 or not joined.isascii():
        return False
    data = joined.encode("ascii")
    if data.translate(None, chars):
        return False  # some character outside ``chars`` is left
    if b"+" in data or b"-" in data:  # rare: only in exponents, unless a field is signed
        return not (data.startswith((b"+", b"-")) or b"\n+" in data or b"\n-" in data)
    return True


def _parse_floats(raw: Sequence[str], optional: bool) -> tuple[np.ndarray, list[int]]:
    """Floats of ``raw`` (NaN for empty fields if ``optional``) and the indices of bad fields.

    The fast path lets NumPy parse the column once a character scan has ruled out every
    spelling NumPy (like :func:`float`) accepts but the trace format does not (signs,
    spaces, ``_``, ``inf``/``nan``, non-ASCII digits); what NumPy then accepts is exactly
    ``_FLOAT_RE``. The slow path checks field by field.
    """
    n = len(raw)
    if n == 0:
        return np.zeros(0), []
    if _joined_clean(raw, _FLOAT_CHARS):
        try:
            return np.array([v or "nan" for v in raw] if optional else raw, dtype=np.float64), []
        except ValueError:
            pass
    out = np.full(n, np.nan)
    bad: list[int] = []
    for i, v in enumerate(raw):
        if optional and v == "":
            continue
        if _FLOAT_RE.fullmatch(v):
            out[i] = float(v)
        else:
            bad.append(i)
    return out, bad


#: bytes a field of digits (with a point) may hold, for :func:`_digit_fields`
_DIGIT_BYTES = np.zeros(256, dtype=bool)
_DIGIT_BYTES[ord("0") : ord("9") + 1] = True
_POINT_BYTES = _DIGIT_BYTES.copy()
_POINT_BYTES[ord(".")] = True


def _digit_fields(text: Any, *, point: bool, empty: bool, max_len: int) -> bool:
    """Whether every field of the pyarrow string array ``text`` is ASCII digits, at most
    ``max_len`` of them, with (if ``point``) at most one ``.`` but not only one, and is
    non-empty unless ``empty``: with ``point``, :data:`_FLOAT_RE` without an exponent.

    Checked on the array's bytes and offsets with numpy, several times faster than
    matching each field with a regular expression; False for anything else (an exponent,
    a sign, nulls), which the caller then matches field by field.
    """
    import pyarrow as pa

    if not pa.types.is_string(text.type) or text.null_count:
        return False
    n = len(text)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset : text.offset + n + 1]
    data = text.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    raw = raw[offsets[0] : offsets[-1]]
    if not (_POINT_BYTES if point else _DIGIT_BYTES)[raw].all():
        return False
    lengths = np.diff(offsets)
    if lengths.max(initial=0) > max_len or (not empty and lengths.min(initial=1) == 0):
        return False
    if point:
        field = np.searchsorted(offsets, np.flatnonzero(raw == ord(".")) + offsets[0], "right") - 1
        if (np.diff(field) == 0).any() or (lengths[field] == 1).any():
            return False  # two points in a field, or a field that is only a point
    return True


def _arrow_floats(raw: _ArrowText, optional: bool) -> tuple[np.ndarray, list[int]] | None:
    """:func:`_parse_floats` done by pyarrow when every field is a plain decimal (or empty,
    if ``optional``); None otherwise (the caller then checks field by field)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = raw.array
    empty = pc.equal(text, "") if optional else None
    if not _digit_fields(text, point=True, empty=optional, max_len=1 << 31):
        good = pc.match_substring_regex(text, f"^(?:{_FLOAT_RE.pattern})$")  # exponents
        if empty is not None:
            good = pc.or_(good, empty)
        if not pc.all(good).as_py():
            return None
    if empty is not None:
        text = pc.if_else(empty, pa.scalar(None, pa.string()), text)
    values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)  # null -> NaN
    return np.array(values, dtype=np.float64), []  # writable: bad values become NaN


def _arrow_ints(raw: _ArrowText, lo: int, hi: int) -> tuple[np.ndarray, list[int]] | None:
    """:func:`_parse_ints` done by pyarrow when every field is 1 to 18 ASCII digits (an
    int64 for sure); None otherwise (the caller then checks field by field)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if (
        not _digit_fields(raw.array, point=False, empty=False, max_len=18)
        and not pc.all(pc.match_substring_regex(raw.array, "^[0-9]{1,18}$")).as_py()
    ):
        return None
    arr = np.array(pc.cast(raw.array, pa.int64()).to_numpy(), dtype=np.int64)  # writable
    bad = np.flatnonzero((arr < lo) | (arr > hi)).tolist()
    arr[bad] = lo
    return arr, bad


def _parse_ints(raw: Sequence[str], lo: int, hi: int) -> tuple[np.ndarray, list[int]]:
    """Integers of ``raw`` (ASCII digits, in [lo, hi]) and the indices of bad fields (set to lo)."""
    n = len(raw)
    if n == 0:
        return np.zeros(0, np.int64), []
    arr: np.ndarray | None = None
    if _joined_clean(raw, _INT_CHARS):
        try:
            arr = np.array(raw, dtype=np.int64)
        except (ValueError, OverflowError):
            arr = None
    if arr is not None:
        bad = np.flatnonzero((arr < lo) | (arr > hi)).tolist()
    else:
        arr = np.full(n, lo, dtype=np.int64)
        bad = []
        for i, v in enumerate(raw):
            # isascii + isdigit = [0-9]+; more than 19 significant digits exceeds int64
            if not (v.isascii() and v.isdigit()) or len(v.lstrip("0")) > 19:
                bad.append(i)
                continue
            x = int(v)
            if lo <= x <= hi:
                arr[i] = x
            else:
                bad.append(i)
    arr[bad] = lo
    return arr, bad


def _hint(value: str, integer: bool) -> str:
    """A short reason why ``value`` is not a number in the trace format, or ''."""
    if value != value.strip():
        return " (no spaces around numbers)"
    if "_" in value:
        return " (no '_' digit separators)"
    if value.startswith("+"):
        return " (no '+' sign)"
    if integer and _FLOAT_RE.fullmatch(value) and not value.isdigit():
        return " (a whole number, without a decimal point or exponent)"
    return ""


# --------------------------------------------------------------------------- CsvTable


def _close_name(name: str, candidates: list[str]) -> str | None:
    """The header name most likely meant for ``name`` (spelling, or a shared ``_`` word)."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return close[0]
    words = set(name.lower().split("_"))
    for c in candidates:
        if c.lower() in words or name.lower() in c.lower().split("_"):
            return c
    return None


def _name_list(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(show_value(n, 30) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


_DELIMITERS = {"\t": "tab", ";": "semicolon", "|": "pipe"}


class CsvTable:
    """A CSV (or ``.csv.gz``) file split into text columns, with validating converters.

    :func:`read_trace` and every importer read through this class, so they share one
    set of rules: how files are opened and decoded, how rows map to physical lines, how
    numbers are spelled and bounded, and how problems are reported (``file:line:``, all
    collected, raised as one :class:`~gpusched.errors.TraceError` by
    :meth:`raise_if_bad`).

    Parameters
    ----------
    path
        File to read.
    name
        File name used in messages; defaults to ``path`` (escaped if not printable).

    Attributes
    ----------
    name : str
        The file name as shown in messages.
    header : list of str
        Column names, stripped of surrounding white space.
    header_line : int
        Physical line of the header (1 unless blank lines precede it).
    cols : dict of str to sequence of str
        The fields of each (uniquely and non-empty) named column, one per good row.
    lines : numpy.ndarray
        Physical line (int64) where each good row starts. Blank lines hold no row; rows
        with a wrong number of fields are reported and left out.
    n : int
        Number of good rows.

    Raises
    ------
    TraceError
        If the file cannot be read or decoded, or is empty.
    """

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        path = Path(path)
        self.name = show_name(path if name is None else name)
        data = _read_bytes(path, self.name)
        text = _decode(data, self.name)
        with _gc_paused():  # millions of small strings: the GC would triple the parse time
            split = (
                _split_arrow(data[_bom_len(data) :], text)
                or _split_simple(text)
                or _split_csv(text, self.name)
            )
        del text, data
        self._problems: list[tuple[int, str]] = []
        for line, msg in split.problems:
            self.report(line, msg)
        if not split.header:
            self.raise_if_bad()
        self.header = split.header
        self.header_line = split.header_line
        self.lines = split.lines
        self.n = len(split.lines)
        self.cols: dict[str, Sequence[str]] = {}
        for j, h in enumerate(split.header):
            if h == "":
                self.report(self.header_line, f"column {j + 1} has an empty name")
            elif h in self.cols:
                self.report(self.header_line, f"duplicate column {show_value(h)}")
            else:
                self.cols[h] = split.columns[j]

    #: what :attr:`lines` counts, in messages
    line_word = "line"

    def __len__(self) -> int:
        return self.n

    # -- reporting

    def report(self, line: int, message: str) -> None:
        """Record ``file:line: message``."""
        self._problems.append((int(line), f"{self.name}:{int(line)}: {message}"))

    def bad(self, i: int, col: str, what: str, value: str, *, integer: bool = False) -> None:
        """Record that row ``i``'s field in ``col`` is not ``what``."""
        self.report(
            int(self.lines[i]),
            f"column {show_value(col)}: expected {what}, got {show_value(value)}"
            f"{_hint(value, integer)}",
        )

    def raise_if_bad(self) -> None:
        """Raise every recorded problem, in line order, as one TraceError."""
        if self._problems:
            self._problems.sort(key=lambda p: p[0])
            raise TraceError([m for _, m in self._problems])

    # -- the header

    def require(self, required: Sequence[str], one_of: Sequence[Sequence[str]] = ()) -> None:
        """Check the header has ``required`` and, if given, all of at least one ``one_of`` group.

        On failure raises at once with one message: the missing names, the columns found,
        the names expected, the closest names the header has, and, for a one-column header
        holding tabs or semicolons, that the file is not comma-separated. Header problems
        found on reading (duplicate or empty names) are raised here too.
        """

        def group(g: Sequence[str]) -> str:
            return " and ".join(f"'{c}'" for c in g)

        def alternatives(first: str) -> str:
            rest = " or ".join(group(g) for g in one_of[1:])
            return f"{first} (or {rest})" if rest else first

        missing = [c for c in required if c not in self.cols]
        names = [f"'{c}'" for c in missing]
        if one_of and not any(all(c in self.cols for c in g) for g in one_of):
            absent = [c for c in one_of[0] if c not in self.cols]
            missing += absent
            names.append(alternatives(group(absent)))
        if missing:
            msg = f"missing required column{'s' if len(missing) > 1 else ''} {', '.join(names)}"
            n_head = len(self.header)
            msg += f"; the header has {n_head} column{'s' if n_head != 1 else ''}: "
            msg += _name_list(self.header)
            expected = [f"'{c}'" for c in required]
            if one_of:
                expected.append(alternatives(group(one_of[0])))
            msg += f"; expected {', '.join(expected)}"
            unused = [h for h in self.header if h and h not in required]
            guesses = []
            for c in missing:
                guess = _close_name(c, unused)
                if guess is not None:
                    guesses.append(f"{show_value(guess)} as '{c}'")
                    unused.remove(guess)
            if guesses:  # the header's name is the one to change: rename it
                msg += f"; rename {', '.join(guesses)}?"
            if n_head == 1:
                for delim, word in _DELIMITERS.items():
                    if delim in self.header[0]:
                        msg += f"; {word}-separated? gpusched reads comma-separated CSV"
                        break
            self.report(self.header_line, msg)
        if any(line == self.header_line for line, _ in self._problems):
            self._problems = [p for p in self._problems if p[0] == self.header_line]
            self.raise_if_bad()

    # -- columns

    def text(self, col: str) -> np.ndarray:
        """Column ``col`` as an object array of ``str`` (all ``''`` if the file lacks it)."""
        raw = self.cols.get(col)
        if isinstance(raw, _ArrowText):
            return np.asarray(raw.array.to_numpy(zero_copy_only=False), dtype=object)
        arr = np.empty(self.n, dtype=object)
        arr[:] = ("",) * self.n if raw is None else raw
        return arr

    def floats(
        self,
        col: str,
        what: str,
        ok: Callable[[np.ndarray], np.ndarray],
        *,
        optional: bool = False,
    ) -> np.ndarray:
        """Column ``col`` as float64; bad fields are reported and become NaN.

        Parameters
        ----------
        col
            Column name (all NaN if the file lacks it and ``optional``).
        what
            What a good value is, for messages (", or empty" is added if ``optional``).
        ok
            Vectorised test of the parsed values (must be False for NaN and inf).
        optional
            Empty fields are allowed and become NaN.
        """
        if col not in self.cols and optional:
            return np.full(self.n, np.nan)
        raw = self.cols[col]
        fast = _arrow_floats(raw, optional) if isinstance(raw, _ArrowText) else None
        arr, bad = fast if fast is not None else _parse_floats(raw, optional)
        with np.errstate(invalid="ignore"):
            wrong = ~ok(arr)
        if optional:
            wrong &= ~np.isnan(arr)
        wrong[bad] = True
        if wrong.any():
            what_ = f"{what}, or empty" if optional else what
            for i in np.flatnonzero(wrong).tolist():
                self.bad(i, col, what_, raw[i])
            arr[wrong] = np.nan
        return arr

    def integers(self, col: str, what: str, lo: int, hi: int) -> np.ndarray:
        """Column ``col`` as int64 in [lo, hi]; bad fields are reported and become ``lo``."""
        raw = self.cols[col]
        fast = _arrow_ints(raw, lo, hi) if isinstance(raw, _ArrowText) else None
        arr, bad = fast if fast is not None else _parse_ints(raw, lo, hi)
        for i in bad:
            self.bad(i, col, what, raw[i], integer=True)
        return arr

    def unique_ids(self, ids: np.ndarray, col: str, keep: np.ndarray | None = None) -> None:
        """Report empty ids and ids repeated among the rows ``keep`` (default: all)."""
        raw = self.cols.get(col)
        if keep is None and isinstance(raw, _ArrowText) and _increasing(raw.array):
            return  # ids in increasing order (a synthetic trace's): unique, and none empty
        vals = ids.tolist() if keep is None else ids[keep].tolist()
        if len(set(vals)) == len(vals) and "" not in vals:
            return
        rows = np.arange(self.n) if keep is None else np.flatnonzero(keep)
        first: dict[str, int] = {}
        for i, v in zip(rows.tolist(), vals, strict=True):
            ln = int(self.lines[i])
            if v == "":
                self.bad(i, col, "a non-empty id", v)
            elif v in first:
                self.report(
                    ln,
                    f"column '{col}': duplicate id {show_value(v)} "
                    f"(first on {self.line_word} {first[v]})",
                )
            else:
                first[v] = ln


def _increasing(text: Any) -> bool:
    """Whether the pyarrow string array ``text`` has no nulls, no empty strings and each
    string sorts after the one before (by bytes), so that no two are equal: a vectorised
    test, many times faster than a set of a million Python strings."""
    import pyarrow.compute as pc

    if text.null_count or pc.any(pc.equal(text, "")).as_py():
        return False
    return len(text) < 2 or bool(pc.all(pc.less(text[:-1], text[1:])).as_py())


#: Parquet column types a trace accepts, by column: (test of the pyarrow type, expected)
_PARQUET_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "job_id": (lambda t: _is_text(t) or _is_int(t), "text or integers"),
    "num_gpus": (lambda t: _is_int(t), "integers"),
    "model": (lambda t: _is_text(t), "text"),
    **{
        c: (lambda t: _is_int(t) or _is_float(t), "numbers (integers or floats)")
        for c in ("submit_time", "duration", "iterations", "load_s", "save_s")
    },
}


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t))


def _is_int(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_null(t))


def _is_float(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_floating(t))


class ParquetTable(CsvTable):
    """A Parquet trace (``.parquet``) read as the text columns of its CSV twin.

    The schema is checked first (``job_id`` text or integers, ``num_gpus`` integers,
    the times and ``iterations`` numbers, ``model`` text; one message per column naming
    the type found and the type expected); then every column is spelled as
    :func:`write_trace` would write it (floats exactly, null as empty) and checked by the
    same converters as a CSV trace. Problems name the row (``file: row N:``, N = row
    index + 1) instead of the line.
    """

    line_word = "row"

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        import pyarrow.parquet as pq

        from gpusched.io.tables import parquet_columns

        path = Path(path)
        self.name = show_name(path if name is None else name)
        self._problems = []
        try:
            schema = pq.read_schema(path)
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise TraceError(f"{self.name}: not a readable Parquet file ({reason})") from None
        for field_ in schema:
            test, expected = _PARQUET_TYPES.get(field_.name, (lambda t: True, ""))
            if not test(field_.type):
                self.report(
                    0, f"column {show_value(field_.name)}: expected {expected}, got {field_.type}"
                )
        self.raise_if_bad()
        header, cols = parquet_columns(path, nan="nan")  # a NaN is refused as in a CSV
        self.header = header
        self.header_line = 0
        self.n = len(cols[0]) if cols else 0
        self.lines = np.arange(1, self.n + 1, dtype=np.int64)  # row numbers
        self.cols = {}
        for j, (h, c) in enumerate(zip(header, cols, strict=True)):
            if h == "":  # as in a CSV: trace convert would write a header replay refuses
                self.report(0, f"column {j + 1} has an empty name")
            elif h in self.cols:
                self.report(0, f"duplicate column {show_value(h)}")
            self.cols[h] = c

    def report(self, line: int, message: str) -> None:
        """Record ``file: row N: message`` (``file: message`` for the schema, N = 0)."""
        where = f"{self.name}: row {int(line)}: " if line else f"{self.name}: "
        self._problems.append((int(line), where + message))


def open_table(path: str | Path, name: str | None = None) -> CsvTable:
    """The trace file ``path`` as a :class:`CsvTable` (a :class:`ParquetTable` for
    ``.parquet``)."""
    if Path(path).suffix == ".parquet":
        return ParquetTable(path, name)
    return CsvTable(path, name)


# --------------------------------------------------------------------------- read_trace


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: parsing makes millions of small objects and no cycles."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def read_trace(path: str | Path) -> Trace:
    """Read and validate a canonical trace: CSV (``.csv`` or ``.csv.gz``) or Parquet
    (``.parquet``, the same columns; :class:`ParquetTable`).

    Parameters
    ----------
    path
        The trace file.

    Returns
    -------
    Trace
        The jobs in file order; ``source`` is ``str(path)``; ``line`` holds each row's
        physical line. A header-only file gives an empty trace.

    Raises
    ------
    TraceError
        With one ``file:line:`` message per problem: unreadable file (missing, a
        directory, bad gzip, not UTF-8, larger than ``MAX_TRACE_BYTES``), empty file,
        missing required column (the message lists the columns found and the closest
        names), duplicate or empty column name, wrong number of fields, a number that is
        not spelled as the module doc says or is out of its bounds (``submit_time``,
        ``num_gpus``, ``duration``, ``iterations``, ``load_s``, ``save_s``), empty or
        duplicate ``job_id``, and rows that give neither ``duration`` nor
        ``iterations`` + ``model``.
    """
    with _gc_paused():
        return _read_trace(path)


def _read_trace(path: str | Path) -> Trace:
    t = open_table(path)
    # when every job is placed by roles (num_gpus 0) no row needs a duration, iterations or
    # model, and write_trace leaves those columns out
    chunks = t.cols.get(TASK_COLUMN, ("",) * t.n)
    gpus = t.cols.get("num_gpus", ("",) * t.n)
    by_model = (
        t.n > 0
        and (gpus[0] == "0" or chunks[0].strip() != "")  # most traces: no, from row 1 alone
        and all(v == "0" or c.strip() != "" for v, c in zip(gpus, chunks, strict=True))
    )
    t.require(REQUIRED_COLUMNS, () if by_model else (("duration",), ("iterations", "model")))
    job_id = t.text("job_id")
    t.unique_ids(job_id, "job_id")
    submit = t.floats("submit_time", SUBMIT_WHAT, submit_ok)
    num_gpus = t.integers("num_gpus", _GPUS_WHAT, 0, MAX_GPUS)
    duration = t.floats("duration", DURATION_WHAT, duration_ok, optional=True)
    iterations = t.floats("iterations", ITERATIONS_WHAT, iterations_ok, optional=True)
    model = t.text("model")
    load_s = t.floats("load_s", _OVERHEAD_WHAT, _overhead_ok, optional=True)
    save_s = t.floats("save_s", _OVERHEAD_WHAT, _overhead_ok, optional=True)

    # Each row needs a duration, or iterations and a model. Raw fields decide "given", so a
    # malformed duration is reported once (above), not again here.
    if TASK_COLUMN in t.cols:
        tasks = np.asarray([c.strip() != "" for c in chunks], dtype=bool)
    else:  # no row is made of chunks (most traces: skip a loop over every row)
        tasks = np.zeros(t.n, dtype=bool)
    missing = np.isnan(duration) & (np.isnan(iterations) | (model == "")) & (num_gpus > 0) & ~tasks
    dur_raw = t.cols.get("duration", ("",) * t.n)
    it_raw = t.cols.get("iterations", ("",) * t.n)
    for i in np.flatnonzero(missing).tolist():
        if dur_raw[i] != "" or (it_raw[i] != "" and model[i] != ""):
            continue  # a malformed value, already reported
        t.report(
            int(t.lines[i]),
            "column 'duration': expected a duration, or both 'iterations' and 'model', got "
            f"duration={show_value(dur_raw[i])}, iterations={show_value(it_raw[i])}, "
            f"model={show_value(model[i])}",
        )
    t.raise_if_bad()
    extra = {h: t.text(h) for h in t.cols if h not in CANONICAL_COLUMNS}
    return Trace(
        job_id=job_id,
        submit_time=submit,
        num_gpus=num_gpus,
        duration=duration,
        iterations=iterations,
        model=model,
        extra=extra,
        source=str(path),
        load_s=load_s,
        save_s=save_s,
        line=t.lines,
    )


def validate_trace(trace: Trace) -> None:
    """Check the value bounds of a trace built in code (:func:`read_trace` checks them on input).

    Parameters
    ----------
    trace
        Any trace.

    Raises
    ------
    TraceError
        Naming ``source:line`` (see :attr:`Trace.line`), the column and the bound, for
        every value outside the bounds the module doc gives, and for rows with neither a
        duration nor iterations and a model.
    """
    name = show_name(trace.source or "<trace>")
    problems: list[tuple[int, str]] = []
    checks: list[tuple[str, Callable[[np.ndarray], np.ndarray], str, bool]] = [
        ("submit_time", submit_ok, SUBMIT_WHAT, False),
        ("duration", duration_ok, DURATION_WHAT, True),
        ("iterations", iterations_ok, ITERATIONS_WHAT, True),
        ("load_s", _overhead_ok, _OVERHEAD_WHAT, True),
        ("save_s", _overhead_ok, _OVERHEAD_WHAT, True),
    ]
    for col, ok, what, optional in checks:
        arr = getattr(trace, col)
        with np.errstate(invalid="ignore"):
            wrong = ~ok(arr)
        if optional:
            wrong &= ~np.isnan(arr)
        for i in np.flatnonzero(wrong).tolist():
            ln = int(trace.line[i])
            problems.append(
                (ln, f"{name}:{ln}: column '{col}': expected {what}, got {float(arr[i])!r}")
            )
    for i in np.flatnonzero(trace.num_gpus < 0).tolist():
        ln = int(trace.line[i])
        problems.append(
            (ln, f"{name}:{ln}: column 'num_gpus': expected {_GPUS_WHAT}, got {trace.num_gpus[i]}")
        )
    chunks = trace.extra.get(TASK_COLUMN)
    tasks = (
        np.zeros(len(trace), dtype=bool)
        if chunks is None
        else np.asarray([str(c).strip() != "" for c in chunks], dtype=bool)
    )
    no_work = (
        np.isnan(trace.duration)
        & (np.isnan(trace.iterations) | (trace.model == ""))
        & (trace.num_gpus > 0)
        & ~tasks
    )
    for i in np.flatnonzero(no_work).tolist():
        ln = int(trace.line[i])
        problems.append(
            (
                ln,
                f"{name}:{ln}: job {show_value(str(trace.job_id[i]))} gives neither a duration "
                "nor both iterations and a model",
            )
        )
    if problems:
        problems.sort(key=lambda p: p[0])
        raise TraceError([m for _, m in problems])


# --------------------------------------------------------------------------- writing


def _fmt_floats(arr: np.ndarray) -> list[str]:
    """Format floats exactly: integral values as integers, others by ``repr``, NaN as ''."""
    finite = np.isfinite(arr)
    if finite.all() and (np.abs(arr) < 1e15).all() and (arr == np.floor(arr)).all():
        return list(map(str, arr.astype(np.int64).tolist()))

    def one(x: float) -> str:
        if x != x:
            return ""
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return repr(x)

    # a long column of few distinct values (e.g. per-model load times, as its first 1,024
    # suggest): format each distinct value once
    head = arr[:1024]
    if len(arr) > len(head) and 4 * len(np.unique(head)) <= len(head):
        values, inverse = np.unique(arr, return_inverse=True)
        texts = np.array([one(x) for x in values.tolist()], dtype=object)
        return texts[inverse.ravel()].tolist()  # type: ignore[no-any-return]
    return [one(x) for x in arr.tolist()]


def _formatted(trace: Trace, name: str) -> Iterable[str]:
    if name in _FLOAT_COLUMNS:
        return _fmt_floats(getattr(trace, name))
    if name == "num_gpus":
        return map(str, trace.num_gpus.tolist())
    return trace.column(name).tolist()  # type: ignore[no-any-return]


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as a canonical CSV; gzip-compressed if ``path`` ends in ``.gz``, as
    Parquet if it ends in ``.parquet`` (floats as float64 with null for NaN, ``num_gpus``
    as int64, text as text).

    Floats are written so that they read back bit for bit (integral values as integers,
    others with ``repr``); NaN is written as an empty field. Columns follow
    :meth:`Trace.columns`. Gzip output has a zero timestamp, so equal traces give equal
    bytes (and equal :func:`trace_sha256`).

    Parameters
    ----------
    trace
        The trace to write.
    path
        Destination file (``.csv``, ``.csv.gz`` or ``.parquet``); missing folders above it
        are made.

    Raises
    ------
    GpuschedError
        If the file cannot be written (the message names it and the reason).
    """
    from gpusched.io.files import make_parent

    path = Path(path)
    names = trace.columns()
    make_parent(path)
    if path.suffix == ".parquet":
        _write_parquet_trace(trace, names, path)
        return
    buf = io.StringIO()
    # Python 3.11's csv writer does not quote a lone "\r" when the line terminator is
    # "\n", and the reader would take it as a line end: quote everything in that rare case.
    text_cols = [trace.job_id, trace.model, *trace.extra.values()]
    has_cr = any("\r" in v for arr in text_cols for v in arr.tolist())
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL)
    w.writerow(names)
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        if len(trace):
            w.writerows(zip(*(_formatted(trace, c) for c in names), strict=True))
        data = buf.getvalue().encode("utf-8")
    finally:
        if gc_was_on:
            gc.enable()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise GpuschedError(f"cannot write {show_name(path)}: {_why(exc, False)}") from None


def _write_parquet_trace(trace: Trace, names: list[str], path: Path) -> None:
    """:func:`write_trace` to a Parquet file."""
    from gpusched.io.tables import write_parquet

    cols = {c: trace.extra[c] if c in trace.extra else getattr(trace, c) for c in names}
    cols["num_gpus"] = np.asarray(trace.num_gpus, dtype=np.int64)
    try:
        write_parquet(path, cols)
    except OSError as exc:
        raise GpuschedError(f"cannot write {show_name(path)}: {_why(exc, False)}") from None


def trace_sha256(path: str | Path) -> str:
    """Return the SHA-256 hex digest of a file's bytes (as stored, not decompressed).

    Parameters
    ----------
    path
        Any file.

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
