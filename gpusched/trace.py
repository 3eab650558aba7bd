"""The canonical job trace: the :class:`Trace` data class, a validating reader and a writer.

A trace is a CSV file (optionally gzip-compressed, ``.csv.gz``) with a header row and one
row per job. Columns:

========== ======== =====================================================================
column     required meaning
========== ======== =====================================================================
job_id     yes      unique, non-empty job identifier (text)
submit_time yes     submission time, seconds, finite and >= 0
num_gpus   yes      GPUs requested, integer >= 1
duration   (a)      exclusive run time at ideal placement, seconds, finite and > 0
iterations (b)      training iterations to run, finite and > 0
model      (b)      DNN model name (non-empty)
...        no       anything else (``user``, ``group``, ``batch_size``, ``gpu_type``, ...)
========== ======== =====================================================================

Each row must give either (a) ``duration`` or (b) both ``iterations`` and ``model``; an
empty field means "not given". Rows keep their file order (the engine sorts stably by
submit time). Every bad field is reported as ``file:line: column 'c': expected ..., got
'v'`` (line 1 is the header) and all of them are raised together as one
:class:`~gpusched.errors.TraceError`; no row is ever dropped silently.

Reading converts whole columns with NumPy and only scans row by row to locate the lines of
a column whose vectorised conversion failed, so a million-row trace reads in about 2 s.
Writing is exact: ``read_trace(p)`` after ``write_trace(t, p)`` gives arrays equal to
those of ``t`` (floats are written with the shortest repr that round-trips).
"""

from __future__ import annotations

import csv
import gc
import gzip
import hashlib
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import methodcaller
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import TraceError

__all__ = [
    "CANONICAL_COLUMNS",
    "KNOWN_OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "Trace",
    "read_trace",
    "trace_sha256",
    "write_trace",
]

REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "submit_time", "num_gpus")
"""Columns every trace must have."""

CANONICAL_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "num_gpus",
    "duration",
    "iterations",
    "model",
)
"""Columns held in dedicated :class:`Trace` fields (everything else goes to ``extra``)."""

KNOWN_OPTIONAL_COLUMNS: tuple[str, ...] = ("user", "group", "batch_size", "gpu_type")
"""Optional ``extra`` columns the writer puts first, in this order."""


def _obj(values: Any) -> np.ndarray:
    """Return a 1-D object array of ``str`` built from ``values``."""
    arr = np.asarray(values)
    if arr.dtype == object:
        return arr
    out = np.empty(arr.shape[0] if arr.ndim else 0, dtype=object)
    out[:] = [str(v) for v in arr.tolist()]
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A job trace held as struct-of-arrays, one element per job, in file order.

    Parameters
    ----------
    job_id
        Unique job ids (object array of ``str``).
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

    Notes
    -----
    The constructor coerces the arrays to the dtypes above and checks that they all have
    the same length; it does not check values (:func:`read_trace` does). Equality
    (``==``) compares every column (NaN equals NaN) but ignores ``source``.
    """

    job_id: np.ndarray
    submit_time: np.ndarray
    num_gpus: np.ndarray
    duration: np.ndarray
    iterations: np.ndarray
    model: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "job_id", _obj(self.job_id))
        set_(self, "submit_time", np.asarray(self.submit_time, dtype=np.float64))
        set_(self, "num_gpus", np.asarray(self.num_gpus, dtype=np.int32))
        set_(self, "duration", np.asarray(self.duration, dtype=np.float64))
        set_(self, "iterations", np.asarray(self.iterations, dtype=np.float64))
        set_(self, "model", _obj(self.model))
        set_(self, "extra", {str(k): _obj(v) for k, v in self.extra.items()})
        n = self.job_id.shape[0]
        for name in CANONICAL_COLUMNS[1:]:
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
            and np.array_equal(self.submit_time, other.submit_time, equal_nan=True)
            and np.array_equal(self.num_gpus, other.num_gpus)
            and np.array_equal(self.duration, other.duration, equal_nan=True)
            and np.array_equal(self.iterations, other.iterations, equal_nan=True)
            and np.array_equal(self.model, other.model)
        )
        return bool(same) and all(np.array_equal(self.extra[k], other.extra[k]) for k in self.extra)

    __hash__ = None  # type: ignore[assignment]

    def columns(self) -> list[str]:
        """Return the column order used by :func:`write_trace`.

        ``job_id, submit_time, num_gpus``, then ``duration``, ``iterations`` and ``model``
        when any row gives them, then the known optional columns (``user``, ``group``,
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
            A new trace holding copies of the selected rows, in the given order.
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
        )


# --------------------------------------------------------------------------- reading


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8-sig")


def read_csv_columns(
    path: str | Path, name: str | None = None
) -> tuple[list[str], list[Sequence[str]], np.ndarray, list[str]]:
    """Read a CSV (or ``.csv.gz``) file into columns of text, with the line of each row.

    Blank lines are skipped (they hold no row). Rows whose number of fields differs from
    the header's are reported and left out of the returned columns. Importers use this
    too, so that their messages carry the same ``file:line:`` prefixes.

    Parameters
    ----------
    path
        File to read.
    name
        File name used in messages; defaults to ``str(path)``.

    Returns
    -------
    header : list of str
        Column names, stripped of surrounding white space.
    columns : list of sequence of str
        One sequence per header column, one field per good row.
    lines : numpy.ndarray
        1-based physical line number (header = 1) where each good row starts (int64).
    errors : list of str
        ``file:line:`` messages for an empty file and for rows with a wrong field count.

    Raises
    ------
    TraceError
        If the file cannot be read or decoded.
    """
    path = Path(path)
    fname = str(path) if name is None else name
    try:
        text = _read_text(path)
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError([f"{fname}:1: cannot read file: {exc}"]) from exc
    gc_was_on = gc.isenabled()
    gc.disable()  # millions of small strings: the cyclic GC would triple the parse time
    try:
        fast = _split_simple(text)
        if fast is not None:
            return fast[0], fast[1], fast[2], []
        return _split_csv(text, fname)
    finally:
        if gc_was_on:
            gc.enable()


def _split_simple(text: str) -> tuple[list[str], list[Sequence[str]], np.ndarray] | None:
    """Split a CSV without quotes, CRs or blank lines; None if the text is not that simple."""
    if '"' in text or "\r" in text or not text.strip():
        return None
    body = text[:-1] if text.endswith("\n") else text
    head, _, body = body.partition("\n")
    header = [h.strip() for h in head.split(",")]
    ncol = len(header)
    if not body:
        return header, [[] for _ in header], np.zeros(0, np.int64)
    lines = body.split("\n")
    if set(map(methodcaller("count", ","), lines)) != {ncol - 1}:
        return None  # ragged or blank lines: let the csv path report them
    flat = body.replace("\n", ",").split(",")
    cols: list[Sequence[str]] = [flat[j::ncol] for j in range(ncol)]
    return header, cols, np.arange(2, len(lines) + 2, dtype=np.int64)


def _split_csv(
    text: str, fname: str
) -> tuple[list[str], list[Sequence[str]], np.ndarray, list[str]]:
    """General path: the csv module, tracking the physical line where each record starts."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not "".join(header).strip():
            header = next(reader, None)  # leading blank lines
        if header is None:
            return [], [], np.zeros(0, np.int64), [f"{fname}:1: empty file (no header row)"]
        header = [h.strip() for h in header]
        ncol = len(header)
        errors: list[str] = []
        rows: list[list[str]] = []
        line_list: list[int] = []
        prev = reader.line_num
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != ncol:
                errors.append(
                    f"{fname}:{start}: expected {ncol} fields (as in the header), got {len(row)}"
                )
                continue
            rows.append(row)
            line_list.append(start)
    except csv.Error as exc:
        return [], [], np.zeros(0, np.int64), [f"{fname}:{reader.line_num}: bad CSV: {exc}"]
    columns: list[Sequence[str]] = list(zip(*rows, strict=True)) if rows else [() for _ in header]
    return header, columns, np.asarray(line_list, dtype=np.int64), errors


def _bad_rows(
    col: Sequence[str], convert: Callable[[str], Any], ok: Callable[[Any], bool]
) -> Iterator[tuple[int, str]]:
    """Yield ``(row_index, value)`` for each field that ``convert`` rejects or ``ok`` fails."""
    for i, v in enumerate(col):
        try:
            x = convert(v)
        except (ValueError, OverflowError):
            yield i, v
            continue
        if not ok(x):
            yield i, v


def _float_column(
    col: Sequence[str],
    *,
    optional: bool,
    positive: bool,
    what: str,
    report: Callable[[int, str, str], None],
) -> np.ndarray:
    """Convert a column of text to float64, reporting bad fields; NaN marks empty/bad."""
    n = len(col)
    arr: np.ndarray | None
    try:
        arr = np.array(col, dtype=np.float64) if n else np.zeros(0)
    except ValueError:
        arr = None
    if arr is not None:
        good = np.isfinite(arr) & ((arr > 0) if positive else (arr >= 0))
        if good.all():
            return arr
    # Locate the bad fields row by row.
    out = np.full(n, np.nan)
    for i, v in enumerate(col):
        s = v.strip()
        if s == "" and optional:
            continue
        try:
            x = float(s)
        except ValueError:
            report(i, what, v)
            continue
        if not np.isfinite(x) or (x <= 0 if positive else x < 0):
            report(i, what, v)
            continue
        out[i] = x
    return out


def read_trace(path: str | Path) -> Trace:
    """Read and validate a canonical trace CSV (``.csv`` or ``.csv.gz``).

    Parameters
    ----------
    path
        The trace file.

    Returns
    -------
    Trace
        The jobs in file order; ``source`` is ``str(path)``.

    Raises
    ------
    TraceError
        With one ``file:line:`` message per problem: empty file, missing required column,
        duplicate or empty column name, wrong number of fields, bad ``submit_time``
        (not a finite number >= 0), bad ``num_gpus`` (not an integer >= 1), bad
        ``duration``/``iterations`` (not a finite number > 0), empty or duplicate
        ``job_id``, and rows that give neither ``duration`` nor ``iterations`` + ``model``.
    """
    fname = str(path)
    header, cols, lines, errors = read_csv_columns(path, fname)
    if not header:
        raise TraceError(errors)
    index: dict[str, int] = {}
    for j, h in enumerate(header):
        if h == "":
            errors.append(f"{fname}:1: column {j + 1} has an empty name")
        elif h in index:
            errors.append(f"{fname}:1: duplicate column '{h}'")
        else:
            index[h] = j
    for req in REQUIRED_COLUMNS:
        if req not in index:
            errors.append(f"{fname}:1: missing required column '{req}'")
    has_dur = "duration" in index
    has_work = "iterations" in index and "model" in index
    if not has_dur and not has_work:
        errors.append(
            f"{fname}:1: missing required column 'duration' (or both 'iterations' and 'model')"
        )
    if any(e.startswith(f"{fname}:1:") for e in errors):
        raise TraceError(errors)

    n = len(lines)
    bad: list[tuple[int, str]] = []  # (line, message) so the output is in line order

    def reporter(colname: str) -> Callable[[int, str, str], None]:
        def report(i: int, what: str, value: str) -> None:
            ln = int(lines[i])
            bad.append((ln, f"{fname}:{ln}: column '{colname}': expected {what}, got '{value}'"))

        return report

    empty: tuple[str, ...] = ("",) * n

    def col(name: str) -> Sequence[str]:
        return cols[index[name]] if name in index else empty

    # job_id: non-empty and unique.
    ids = col("job_id")
    job_id = np.array(ids, dtype=object) if n else np.empty(0, dtype=object)
    id_set = set(ids)
    if len(id_set) != n or "" in id_set:
        first: dict[str, int] = {}
        for i, v in enumerate(ids):
            ln = int(lines[i])
            if v == "":
                bad.append((ln, f"{fname}:{ln}: column 'job_id': expected a non-empty id, got ''"))
            elif v in first:
                bad.append(
                    (
                        ln,
                        f"{fname}:{ln}: column 'job_id': duplicate id '{v}' "
                        f"(first on line {first[v]})",
                    )
                )
            else:
                first[v] = ln

    submit = _float_column(
        col("submit_time"),
        optional=False,
        positive=False,
        what="a finite number of seconds >= 0",
        report=reporter("submit_time"),
    )

    gcol = col("num_gpus")
    try:
        gpus = np.array(gcol, dtype=np.int64) if n else np.zeros(0, np.int64)
        ok = bool(((gpus >= 1) & (gpus <= np.iinfo(np.int32).max)).all())
    except (ValueError, OverflowError):
        ok = False
    if not ok:
        gpus = np.zeros(n, dtype=np.int64)
        rep = reporter("num_gpus")
        for i, v in _bad_rows(gcol, int, lambda x: 1 <= x <= np.iinfo(np.int32).max):
            rep(i, "a positive integer", v)
        for i, v in enumerate(gcol):
            try:
                gpus[i] = max(0, min(int(v), 0x7FFFFFFF))
            except ValueError:
                pass
    num_gpus = gpus.astype(np.int32)

    duration = (
        _float_column(
            col("duration"),
            optional=True,
            positive=True,
            what="a finite number of seconds > 0 or empty",
            report=reporter("duration"),
        )
        if has_dur
        else np.full(n, np.nan)
    )
    iterations = (
        _float_column(
            col("iterations"),
            optional=True,
            positive=True,
            what="a finite number > 0 or empty",
            report=reporter("iterations"),
        )
        if "iterations" in index
        else np.full(n, np.nan)
    )
    model = np.empty(n, dtype=object)
    model[:] = col("model")

    # Each row needs a duration, or iterations and a model. Raw fields decide "given", so a
    # malformed duration is reported once (above), not again here.
    dur_raw = col("duration")
    it_raw = col("iterations")
    missing = np.isnan(duration) & (np.isnan(iterations) | (model == ""))
    for i in np.flatnonzero(missing).tolist():
        if dur_raw[i].strip() != "" or (it_raw[i].strip() != "" and model[i] != ""):
            continue  # a malformed value, already reported
        ln = int(lines[i])
        bad.append(
            (
                ln,
                f"{fname}:{ln}: column 'duration': expected a duration, or both 'iterations' "
                f"and 'model', got duration='{dur_raw[i]}', iterations='{it_raw[i]}', "
                f"model='{model[i]}'",
            )
        )

    if errors or bad:
        bad.sort(key=lambda t: t[0])
        raise TraceError(errors + [m for _, m in bad])

    extra = {}
    for h in header:
        if h not in CANONICAL_COLUMNS:
            arr = np.empty(n, dtype=object)
            arr[:] = cols[index[h]]
            extra[h] = arr
    return Trace(
        job_id=job_id,
        submit_time=submit,
        num_gpus=num_gpus,
        duration=duration,
        iterations=iterations,
        model=model,
        extra=extra,
        source=fname,
    )


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

    return [one(x) for x in arr.tolist()]


def _formatted(trace: Trace, name: str) -> Iterable[str]:
    if name in ("submit_time", "duration", "iterations"):
        return _fmt_floats(getattr(trace, name))
    if name == "num_gpus":
        return map(str, trace.num_gpus.tolist())
    return trace.column(name).tolist()  # type: ignore[no-any-return]


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as a canonical CSV; gzip-compressed if ``path`` ends in ``.gz``.

    Floats are written so that they read back bit for bit (integral values as integers,
    others with ``repr``); NaN is written as an empty field. Columns follow
    :meth:`Trace.columns`. Gzip output has a zero timestamp, so equal traces give equal
    bytes (and equal :func:`trace_sha256`).

    Parameters
    ----------
    trace
        The trace to write.
    path
        Destination file (``.csv`` or ``.csv.gz``); parent folders must exist.
    """
    path = Path(path)
    names = trace.columns()
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
    path.write_bytes(data)


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
