"""Columnar tables of a run (jobs, tasks, timeline, events) written with pyarrow.

A run folder holds each table as CSV (``jobs.csv``) or Parquet (``jobs.parquet``),
chosen by ``--format``. The CSV text is the one Python's ``csv.writer`` writes row by
row (``\\r\\n`` line ends, minimal quoting), with every float spelled as ``repr`` spells
it, so that it parses back to the identical float64, and NaN as an empty cell. It is
built column by column with pyarrow's compute functions instead: whole numbers and whole
thousandths (times in milliseconds) from their integers, other floats from the shortest
round-trip digits of pyarrow's float-to-text cast, respelled where ``repr`` differs
(``3`` is ``3.0``; magnitudes below 1e-4 and from 1e10 up come from ``repr`` itself),
integer columns of few distinct numbers from a table of them; then the columns are
joined into lines.

Parquet keeps each column's type; NaN of a float column (an unfinished job's ``jct``)
is stored as null, which pandas and polars read back as missing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError, show_name, show_value

#: the formats a run folder's tables can be written in (``--format``)
FORMATS = ("csv", "parquet")
#: rows formatted at a time, so that the text of a table never needs much memory at once
#: (1M jobs: 100k rows at a time peak 60 MB lower than 500k, at the same speed)
_CHUNK_ROWS = 100_000
#: tables of up to this many rows are written row by row with ``csv.writer``: for them,
#: importing pyarrow's compute functions costs more than the formatting saves, in time
#: and in memory (jobs.csv and timeline.csv of 10k jobs, 10k and 20k rows: 0.06 s and
#: 5 MB row by row, 0.14 s and 57 MB with pyarrow; of 30k jobs: 0.18 s and 15 MB, 0.16 s
#: and 80 MB)
SMALL_ROWS = 30_000
#: rows turned into cells at a time by :func:`write_csv_rows`
_ROWS_AT_ONCE = 2_000
#: integer columns spanning fewer than this many numbers (and a quarter of their length,
#: or _TABLE_MIN) are spelled from a table of the range's numbers (:func:`_int_cells`)
_TABLE_MAX = 1 << 16
_TABLE_MIN = 256
#: floats that are whole thousandths (times in milliseconds) are spelled as such
_SCALE = 1000


def table_name(stem: str, fmt: str) -> str:
    """The file name of table ``stem`` (``"jobs"``) in format ``fmt``: ``jobs.csv``."""
    return f"{stem}.{fmt}"


def write_table(
    path: Path, columns: Mapping[str, np.ndarray], fmt: str = "csv", *, exclusive: bool = False
) -> None:
    """Write equal-length columns to ``path`` as CSV or Parquet (see the module docstring).

    Parameters
    ----------
    path
        File to write (replaced if it exists, unless ``exclusive``).
    columns
        Column name -> 1-D array, all of one length.
    fmt
        ``"csv"`` or ``"parquet"``.
    exclusive
        Create ``path`` as a new file, refusing one that exists (a file or a symbolic
        link): how a run folder's tables are written (:mod:`gpusched.io.runfolder`).
    """
    if fmt == "parquet":
        write_parquet(path, columns, exclusive=exclusive)
    elif fmt == "csv":
        write_csv_text(path, columns, exclusive=exclusive)
    else:
        raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")


def write_parquet(
    path: Path, columns: Mapping[str, np.ndarray], *, exclusive: bool = False
) -> None:
    """Write ``columns`` to ``path`` as one Parquet table (NaN floats stored as null);
    ``exclusive``: as a new file (see :func:`write_table`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: _arrow_column(np.asarray(v)) for name, v in columns.items()})
    with path.open("xb" if exclusive else "wb") as fh:
        pq.write_table(table, fh)


def _arrow_column(values: np.ndarray) -> Any:
    """One column as a pyarrow array: floats with NaN as null, objects as text."""
    import pyarrow as pa

    if values.dtype.kind == "f":
        return pa.array(values, mask=np.isnan(values))
    if values.dtype.kind == "T":  # NumPy's StringDType (job ids): pyarrow reads objects
        values = values.astype(object)
    if values.dtype.kind == "O":
        return pa.array(values.tolist(), from_pandas=True)
    return pa.array(values)


def write_csv_text(
    path: Path, columns: Mapping[str, np.ndarray], *, exclusive: bool = False
) -> None:
    """Write ``columns`` to ``path`` as CSV text, byte for byte what ``csv.writer`` writes
    row by row with floats as ``repr`` and NaN empty (see the module docstring);
    ``exclusive``: as a new file (see :func:`write_table`)."""
    names = list(columns)
    arrays = [np.asarray(columns[k]) for k in names]
    n_rows = len(arrays[0]) if arrays else 0
    if n_rows <= SMALL_ROWS:
        write_csv_rows(path, names, arrays, exclusive=exclusive)
        return
    head = io.StringIO()
    csv.writer(head).writerow(names)
    with path.open("xb" if exclusive else "wb") as fh:
        fh.write(head.getvalue().encode())
        for start in range(0, n_rows, _CHUNK_ROWS):
            part = [a[start : start + _CHUNK_ROWS] for a in arrays]
            fh.write(_csv_lines(part))
            _release_arrow_pool()


def _release_arrow_pool() -> None:
    """Give back to the system the memory pyarrow's pool holds for reuse (it keeps what a
    chunk's text freed: 1M jobs' jobs.csv rose the peak by 100 MB without this)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def write_csv_rows(
    path: Path, names: list[str], arrays: list[np.ndarray], *, exclusive: bool = False
) -> None:
    """Write the columns ``arrays`` headed ``names`` row by row with ``csv.writer``: the
    definition of the CSV text (floats as ``repr``, NaN empty) that the column-by-column
    path reproduces (tests/test_write_csv.py holds the two to the same bytes)."""
    n_rows = len(arrays[0]) if arrays else 0
    with path.open("x" if exclusive else "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(names)
        for start in range(0, n_rows, _ROWS_AT_ONCE):  # (the cells of all rows: 8 MB at 10k)
            lists = [_row_cells(a[start : start + _ROWS_AT_ONCE]) for a in arrays]
            out.writerows(zip(*lists, strict=True))


def _row_cells(values: np.ndarray) -> list[Any]:
    """A column's values for ``csv.writer``: floats as ``repr`` and NaN empty (also in an
    object column), anything else as ``csv.writer`` spells it."""
    kind = values.dtype.kind
    if kind == "f":
        return ["" if x != x else repr(x) for x in values.astype(np.float64, copy=False).tolist()]
    if kind == "O":
        return [_cell_text(x) for x in values.tolist()]
    cells: list[Any] = values.tolist()
    return cells


def _csv_lines(arrays: list[np.ndarray]) -> memoryview:
    """The CSV lines of equal-length columns (each ending in ``\\r\\n``), as bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = [_text_cells(a) for a in arrays]
    if len(cells) > 1:
        try:
            return _arrow_lines(cells)
        except (pa.ArrowInvalid, TypeError):
            pass  # a quoted cell ("none" refuses it), or a pyarrow without WriteOptions.eol
    if len(cells) == 1:
        # csv.writer quotes a row's only field when it is empty (else the line is blank)
        only = pc.fill_null(cells[0], "")
        cells = [pc.if_else(pc.equal(only, ""), pa.scalar('""'), only)]
    lines = pc.binary_join_element_wise(*cells, ",", null_handling="replace", null_replacement="")
    lines = pc.binary_join_element_wise(lines, "\r\n", "")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return memoryview(lines.buffers()[2])[first:last]


def _arrow_lines(cells: list[Any]) -> memoryview:
    """Text cells joined into lines by pyarrow's CSV writer, which copies them as they are
    (quoting style "none"), several times faster than joining them with compute functions.

    Raises
    ------
    pyarrow.ArrowInvalid
        A cell holds a comma, quote or line end ("none" cannot write it).
    TypeError
        pyarrow is older than its ``WriteOptions(eol=...)``.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    options = pcsv.WriteOptions(
        include_header=False, quoting_style="none", eol="\r\n", batch_size=1 << 16
    )
    table = pa.Table.from_arrays(cells, names=[f"c{i}" for i in range(len(cells))])
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, write_options=options)
    return memoryview(sink.getvalue())


def _text_cells(values: np.ndarray) -> Any:
    """A column's CSV cells as a pyarrow string array (null = empty cell), quoted as
    ``csv.writer`` quotes them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.dtype.kind
    if kind == "T":  # NumPy's StringDType (job ids): pyarrow reads objects
        values, kind = values.astype(object), "O"
    if kind == "f":
        return _float_cells(values.astype(np.float64, copy=False))
    if kind in "iu":
        return _int_cells(values)
    if kind == "b":
        return pc.if_else(pa.array(values), pa.scalar("True"), pa.scalar("False"))
    if kind == "U":
        return _quoted(pa.array(values, type=pa.string()))
    try:  # text and None only (job ids): pyarrow converts them without a Python loop
        text = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        text = None
    if text is None or not (pa.types.is_string(text.type) or pa.types.is_null(text.type)):
        text = pa.array([_cell_text(x) for x in values.tolist()], type=pa.string())
    return _quoted(text.cast(pa.string()))


def _small_range(values: np.ndarray) -> tuple[int, np.ndarray] | None:
    """``(lo, values - lo)`` when the integers ``values`` span a range small enough to
    spell each of its numbers once (a column of counts, or of zeros), else None."""
    if not values.size:
        return None
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= min(_TABLE_MAX, max(_TABLE_MIN, values.size // 4)):
        return None
    if values.dtype.kind == "u":  # from lo up: no wrap-around, and below 2**16
        return lo, (values - values.dtype.type(lo)).astype(np.int64)
    return lo, values.astype(np.int64) - lo  # int8 - int8 would wrap around


def _int_cells(values: np.ndarray, suffix: str = "", null: np.ndarray | None = None) -> Any:
    """An integer column's cells in decimal, each followed by ``suffix`` (null where
    ``null``); a column of few distinct numbers (counts, GPUs) is spelled by looking each
    up in a table of the range's numbers, several times faster than pyarrow's
    integer-to-text cast."""
    import pyarrow as pa
    import pyarrow.compute as pc

    small = _small_range(values)
    if small is None:
        digits = pc.cast(pa.array(values, mask=null), pa.string())
        return pc.binary_join_element_wise(digits, suffix, "") if suffix else digits
    lo, index = small
    table = pa.array(
        [f"{v}{suffix}" for v in range(lo, lo + int(index.max()) + 1)], type=pa.string()
    )
    return table.take(index if null is None else pa.array(index, mask=null))


def _cell_text(x: Any) -> str | None:
    """One value of an object column as ``csv.writer`` writes it (floats as ``repr``)."""
    if x is None:
        return None
    if isinstance(x, float):
        return None if x != x else repr(float(x))
    return x if isinstance(x, str) else str(x)


def _quoted(text: Any) -> Any:
    """Text cells with ``,``, ``"``, CR or LF quoted (quotes doubled), as csv.writer does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _may_need_quotes(text):
        return text
    needs = pc.fill_null(pc.match_substring_regex(text, '[,"\r\n]'), False)
    if not pc.any(needs).as_py():
        return text
    doubled = pc.replace_substring(text, '"', '""')
    quoted = pc.binary_join_element_wise(pa.scalar('"'), doubled, pa.scalar('"'), "")
    return pc.if_else(needs, quoted, text)


def _may_need_quotes(text: Any) -> bool:
    """Whether a cell of the string array ``text`` may hold ``,``, ``"``, CR or LF: a scan
    of its characters' bytes, much faster than matching each cell."""
    import pyarrow as pa

    if not isinstance(text, pa.StringArray):
        return True
    data = text.buffers()[2]  # all of them, also those outside a slice
    if data is None:
        return False  # no characters at all
    raw = data.to_pybytes()
    return any(c in raw for c in (b",", b'"', b"\r", b"\n"))


def _float_cells(x: np.ndarray) -> Any:
    """Float64 cells spelled as ``repr`` spells them (NaN null).

    A column of whole numbers is spelled from its integers, one mostly of whole
    thousandths from its thousandths (:func:`_fixed_cells`), the rest by
    :func:`_shortest_cells`: pyarrow's cast gives the shortest digits that round-trip, the digits ``repr`` gives;
    it spells integral values below 1e10 without ``.0`` (added here) and uses exponents
    from 1e10 and below 1e-6, where ``repr`` uses them from 1e16 and below 1e-4, so
    magnitudes from 1e10 up (infinities too) and below 1e-4, rare in a run's tables,
    are spelled by ``repr`` itself.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    nan = np.isnan(x)
    mag = np.abs(x)
    with np.errstate(invalid="ignore"):
        whole = (mag < 1e16) & (x == np.trunc(x)) & ~((x == 0) & np.signbit(x))
    if (whole | nan).all():
        # every value a whole number (most times of a run, slots being whole seconds):
        # repr spells them as the integer and ".0", and integers format fastest
        return _int_cells(np.where(nan, 0, x).astype(np.int64), ".0", nan)
    with np.errstate(invalid="ignore", over="ignore"):
        millis = np.round(x * _SCALE)
        fixed = (millis / _SCALE == x) & (x < 1e12) & ~np.signbit(x)
    if 2 * np.count_nonzero(fixed) < len(x):
        return _shortest_cells(x)
    text = _fixed_cells(np.where(fixed, millis, 0).astype(np.int64))
    if not fixed.all():
        rest = ~fixed
        text = pc.replace_with_mask(text, pa.array(rest), _shortest_cells(x[rest]))
    return text


def _fixed_cells(millis: np.ndarray) -> Any:
    """Numbers of thousandths (int64, from 0 to below 1e15) spelled in decimal: the
    integer part, a point and the thousandths without trailing zeros (``436.5``, ``3.0``).

    For a float ``x`` with ``x == millis / 1000`` (a correctly rounded division, so the
    decimal ``millis / 1000`` reads back as ``x``) this is ``repr(x)``: that decimal has
    at most 15 significant digits, and no two decimals of at most 15 significant digits
    read back as the same float64 (float64 resolves 15 digits: C's ``DBL_DIG``), so no
    shorter decimal reads back as ``x`` either, and ``repr`` gives the shortest one, in
    positional notation from 1e-4 to below 1e16. From 1e12 up a thousandth needs 16
    digits or more, and ``repr`` may be shorter: ``9010786744723.071`` reads back as
    the float whose ``repr`` is ``9010786744723.07``.
    Times of a trace in milliseconds take this path: the integer parts are spelled by
    pyarrow's integer cast and the thousandths looked up, about twice as fast as its
    float-to-text cast.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    whole, frac = np.divmod(millis, _SCALE)
    table = pa.array(["." + (f"{f:03d}".rstrip("0") or "0") for f in range(_SCALE)])
    return pc.binary_join_element_wise(_int_cells(whole), table.take(frac), "")


def _shortest_cells(x: np.ndarray) -> Any:
    """Floats spelled by pyarrow's float-to-text cast, respelled where ``repr`` differs
    (see :func:`_float_cells`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    nan = np.isnan(x)
    mag = np.abs(x)
    text = pc.cast(pa.array(x, mask=nan), pa.string())
    with np.errstate(invalid="ignore"):
        integral = (mag < 1e10) & (x == np.trunc(x))
        odd = ((mag > 0) & (mag < 1e-4)) | (mag >= 1e10)  # infinities included
    if integral.any():
        mask = pa.array(integral)  # only these cells are respelled, not the whole column
        spelled = pc.binary_join_element_wise(text.filter(mask), ".0", "")  # -0 too
        text = pc.replace_with_mask(text, mask, spelled)
    if odd.any():
        spelled = pa.array([repr(v) for v in x[odd].tolist()], type=pa.string())
        text = pc.replace_with_mask(text, pa.array(odd), spelled)
    return text


# --- reading run tables -----------------------------------------------------------------


def find_table(folder: Path, stem: str) -> Path:
    """The file of table ``stem`` (``"jobs"``) in a run folder: ``jobs.csv``, or
    ``jobs.parquet`` when only that one exists (the CSV path when neither does)."""
    text = folder / f"{stem}.csv"
    if not text.is_file() and (folder / f"{stem}.parquet").is_file():
        return folder / f"{stem}.parquet"
    return text


def has_table(folder: Path, stem: str) -> bool:
    """Whether the run folder holds table ``stem`` in either format."""
    return any((folder / table_name(stem, fmt)).is_file() for fmt in FORMATS)


#: a run's per-job columns that are never negative (JCT = wait + load + train + save)
NON_NEGATIVE = ("jct", "wait_s")


def seconds_expected(column: str, *, empty: bool = True) -> str:
    """What the readers of a run's tables (explain, diff, plot) say a time column holds:
    ``a number of seconds`` (``>= 0`` for :data:`NON_NEGATIVE` columns), ``, or empty``
    where an unfinished job leaves it empty; one wording for every reader."""
    return (
        "a number of seconds"
        + (" >= 0" if column in NON_NEGATIVE else "")
        + (", or empty" if empty else "")
    )


def check_unique_columns(path: Path, header: list[str]) -> None:
    """Refuse a table whose header names a column twice: a reader of it by name would take
    one of the two and drop the other without a word.

    Raises
    ------
    GpuschedError
        ``path:1: column 'jct': expected each column once, got it twice``.
    """
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise GpuschedError(
                f"{show_name(path)}:1: column {show_value(name)}: expected each column once, "
                "got it twice"
            )
        seen.add(name)


def is_parquet(path: Path) -> bool:
    """Whether ``path`` names a Parquet table (by its suffix)."""
    return path.suffix == ".parquet"


def parquet_rows(path: Path, nan: str = "") -> Iterator[list[str]]:
    """A Parquet table's header, then its rows, as the text its CSV twin would hold.

    Floats are spelled as ``repr`` (null as ``""``; NaN as ``nan``, where gpusched's own
    tables hold null, or as ``""`` too), integers in decimal and text as it is, so that the
    readers of CSV run tables check and parse both alike.

    Raises
    ------
    GpuschedError
        The file is not a readable Parquet file (one line naming it).
    """
    header, cols = parquet_columns(path, nan)
    yield header
    yield from (list(row) for row in zip(*cols, strict=True))


def parquet_columns(path: Path, nan: str = "") -> tuple[list[str], list[list[str]]]:
    """A Parquet table's column names and its columns as text (see :func:`parquet_rows`);
    a float NaN that is not null (gpusched writes NaN as null) is spelled ``nan`` (by
    default ``""``, as null is).

    Raises
    ------
    GpuschedError
        The file is not a readable Parquet file (one line naming it).
    """
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GpuschedError(f"{show_name(path)}: not a readable Parquet file ({reason})") from None
    cols = [_plain_text(table.column(i), nan) for i in range(table.num_columns)]
    return list(table.column_names), cols


def _plain_text(column: Any, nan: str = "") -> list[str]:
    """A Parquet column's cells as text (see :func:`parquet_rows`); a float NaN that is not
    null as ``nan`` (null: empty)."""
    import pyarrow as pa

    if pa.types.is_boolean(column.type) or pa.types.is_floating(column.type):
        values = column.to_numpy(zero_copy_only=False)  # null floats become NaN
        if nan and pa.types.is_floating(column.type):
            real = np.isnan(values) & ~column.is_null().to_numpy(zero_copy_only=False)
            if real.any():
                text = _text_cells(values).to_pylist()
                return [
                    nan if r else ("" if x is None else x) for r, x in zip(real, text, strict=True)
                ]
    elif pa.types.is_integer(column.type) and column.null_count == 0:
        values = column.to_numpy()
    else:
        values = np.asarray(column.to_pylist(), dtype=object)
    kind = values.dtype.kind
    if kind in "fiub":
        text = _text_cells(values).to_pylist()
    else:
        text = [_cell_text(x) for x in values.tolist()]
    return ["" if x is None else x for x in text]
