"""One-line errors for the example scripts' inputs (the folders and files run.sh makes).

A missing or empty input ends in ``error: <path>: <what was expected>`` on stderr and
exit status 2, as the ``gpusched`` command ends on bad input, never in a traceback.

The scripts run as ``python examples/<family>/<script>.py``, so they import this module
after putting ``examples/`` on ``sys.path``::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _inputs import args, guard, need_file, need_folder, need_some

The tables and JSON files a script reads come through :func:`read_csv` and
:func:`read_json`: a value that is not what the script needs (a word in a numeric column,
a missing column or field, a row cut short, a file that is not UTF-8, CSV or JSON) ends in
``error: <path>: line N, column C: expected ..., got ...``, not a traceback.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from gpusched.errors import GpuschedError, show_name, show_value

T = TypeVar("T")


def fail(path: object, expected: str) -> NoReturn:
    """Print ``error: <path>: <expected>`` on stderr and exit with status 2."""
    print(f"error: {show_name(path)}: {expected}", file=sys.stderr)
    raise SystemExit(2)


def args(n: int, usage: str) -> list[str]:
    """The script's first ``n`` command-line arguments (and any after them); with fewer,
    ``usage: <usage>`` on stderr and exit status 2 (as argparse does)."""
    if len(sys.argv) - 1 < n:
        print(f"usage: {usage}", file=sys.stderr)
        raise SystemExit(2)
    return sys.argv[1:]


def need_folder(path: str | os.PathLike[str], expected: str) -> Path:
    """``path`` as a Path if it is a folder, else a one-line error (missing, or a file).

    ``expected`` says what the folder should be (``"run.sh's output folder"``).
    """
    p = Path(path)
    if not p.exists():
        fail(p, f"no such folder; expected {expected}")
    if not p.is_dir():
        fail(p, f"not a folder; expected {expected}")
    return p


def need_file(path: str | os.PathLike[str], expected: str) -> Path:
    """``path`` as a Path if it is a non-empty file, else a one-line error (missing, a
    folder, or empty); ``expected`` says what the file should be (``"a results.csv"``)."""
    p = Path(path)
    if not p.exists():
        fail(p, f"no such file; expected {expected}")
    if p.is_dir():
        fail(p, f"is a folder; expected {expected}")
    if p.stat().st_size == 0:
        fail(p, f"empty file; expected {expected}")
    return p


def need_some(items: Iterable[T], path: object, expected: str) -> list[T]:
    """``items`` as a list if there is at least one, else ``error: <path>: holds no
    <expected>`` (an empty folder, or a table with a header and no rows)."""
    got = list(items)
    if not got:
        fail(path, f"holds no {expected}")
    return got


_REQUIRED: Any = object()  # num()'s default: an empty or absent value is an error


def _number(text: object) -> float | None:
    """``text`` as a finite float, or None if it is not one."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        return None
    try:
        x = float(text)
    except (ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


class Row(dict[str, str]):
    """One row of a table read by :func:`read_csv`: a dict of column -> text that knows
    its file and line, so that a missing column or a bad value is named in one line."""

    path: Path
    line: int

    def __missing__(self, column: str) -> NoReturn:
        fail(self.path, f"line {self.line}: no column {column!r}; the header has "
             f"{', '.join(map(repr, self)) or 'no columns'}")

    def bad(self, column: str, expected: str) -> NoReturn:
        """Fail naming this row's line, ``column``, ``expected`` and the value there."""
        got = self[column]
        shown = f"got {show_value(got)}" if got else "got an empty field"
        fail(self.path, f"line {self.line}, column {column}: expected {expected}, {shown}")

    def num(self, column: str, empty: Any = _REQUIRED) -> Any:
        """The finite number in ``column``; an empty field is ``empty`` if given, else
        an error (as is anything but a finite number)."""
        text = self[column]
        if text == "" and empty is not _REQUIRED:
            return empty
        x = _number(text)
        if x is None:
            self.bad(column, "a finite number")
        return x

    def whole(self, column: str, empty: Any = _REQUIRED) -> Any:
        """The whole number (an int) in ``column``, as :meth:`num`."""
        text = self[column]
        if text == "" and empty is not _REQUIRED:
            return empty
        x = _number(text)
        if x is None or x != int(x):
            self.bad(column, "a whole number")
        return int(x)


def read_csv(path: str | os.PathLike[str], expected: str) -> list[Row]:
    """The rows of the CSV table ``path`` (header first) as :class:`Row` objects.

    One ``error:`` line, exit 2, for a file that is missing, empty, a folder, unreadable,
    not UTF-8 text or not CSV, a header that names a column twice, or a row with more or
    fewer fields than the header (a file cut short). ``expected`` says what the file
    should be (``"a run's jobs.csv"``).
    """
    p = need_file(path, expected)
    rows: list[Row] = []
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header:
                fail(p, f"no header line; expected {expected}")
            seen = {c for c in header if header.count(c) > 1}
            if seen:
                fail(p, f"line 1: column {sorted(seen)[0]!r} named twice; expected {expected}")
            for fields in reader:
                if not fields:
                    continue  # a blank line
                if len(fields) != len(header):
                    fail(p, f"line {reader.line_num}: {len(fields)} fields, the header has "
                         f"{len(header)} (a row cut short or a stray comma); expected {expected}")
                row = Row(zip(header, fields, strict=True))
                row.path, row.line = p, reader.line_num
                rows.append(row)
    except csv.Error as exc:
        fail(p, f"not CSV ({exc}); expected {expected}")
    except (UnicodeDecodeError, OSError) as exc:
        _unreadable(p, exc, expected)
    return rows


def _unreadable(p: Path, exc: UnicodeDecodeError | OSError, expected: str) -> NoReturn:
    """The one error line of a file that is not UTF-8 text or cannot be read."""
    if isinstance(exc, UnicodeDecodeError):
        fail(p, f"not UTF-8 text; expected {expected}")
    fail(p, f"cannot read it ({exc.strerror}); expected {expected}")


class Doc(dict[str, Any]):
    """A JSON object read by :func:`read_json` that knows its file and where in it it is
    (``cluster.servers[0].``), so that a missing field or a bad value is named in one line."""

    path: Path
    where: str
    expected: str

    def __getitem__(self, key: str) -> Any:
        if key not in self:
            fail(self.path, f"no field {self.where}{key}; expected {self.expected}")
        return _doc(super().__getitem__(key), self.path, f"{self.where}{key}", self.expected)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[key] if key in self else default

    def num(self, key: str, missing: Any = _REQUIRED) -> Any:
        """The finite number in field ``key``; an absent or null field is ``missing`` if
        given, else an error (as is anything but a finite number)."""
        value = super().get(key)
        if value is None and missing is not _REQUIRED:
            return missing
        x = _number(value) if isinstance(value, (int, float)) else None
        if x is None:
            got = "no such field" if key not in self else f"got {json.dumps(value)[:60]}"
            fail(self.path, f"field {self.where}{key}: expected a finite number, {got}")
        return x

    def obj(self, key: str) -> dict[str, Any]:
        """The JSON object in field ``key`` ({} if absent or null; anything else is an
        error)."""
        value = self.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            fail(self.path, f"field {self.where}{key}: expected an object, got {json.dumps(value)[:60]}")
        return value  # type: ignore[no-any-return]

    def text(self, key: str) -> str:
        """The non-empty string in field ``key`` (anything else is an error)."""
        value = self[key]
        if not isinstance(value, str) or not value:
            fail(self.path, f"field {self.where}{key}: expected a non-empty string, "
                 f"got {json.dumps(value)[:60]}")
        return value


def _doc(value: Any, path: Path, where: str, expected: str) -> Any:
    if isinstance(value, dict):
        d = Doc(value)
        d.path, d.where, d.expected = path, f"{where}." if where else "", expected
        return d
    if isinstance(value, list):
        return [_doc(v, path, f"{where}[{i}]", expected) for i, v in enumerate(value)]
    return value


def read_json(path: str | os.PathLike[str], expected: str) -> Doc:
    """The JSON object in ``path`` as a :class:`Doc`; one ``error:`` line, exit 2, for a
    file that is missing, empty, a folder, unreadable, not UTF-8 or not JSON (naming the
    line and column), or whose top level is not an object."""
    p = need_file(path, expected)
    try:
        value = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        fail(p, f"line {exc.lineno}, column {exc.colno}: not JSON ({exc.msg}); expected {expected}")
    except (UnicodeDecodeError, OSError) as exc:
        _unreadable(p, exc, expected)
    if not isinstance(value, dict):
        fail(p, f"not a JSON object; expected {expected}")
    return _doc(value, p, "", expected)  # type: ignore[no-any-return]


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with its mistakes in one line, ``error: <what> (see <prog> -h)``,
    exit 2 (argparse prints its usage line first), as ``gpusched`` shows them."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} -h)", file=sys.stderr)
        raise SystemExit(2)


def number(lo: float, hi: float = math.inf, *, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number from ``lo`` (excluded with ``lo_open``) to
    ``hi``; anything else (NaN, inf, a word) is argparse's one-line error."""
    low = f"> {lo:g}" if lo_open else f">= {lo:g}"
    want = f"a finite number {low}" + (f" and <= {hi:g}" if hi < math.inf else "")

    def parse(text: str) -> float:
        x = _number(text)
        if x is None or x < lo or (lo_open and x == lo) or x > hi:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return x

    parse.__name__ = "number"
    return parse


def numbers(lo: float, hi: float = math.inf, *, lo_open: bool = False) -> Callable[[str], list[float]]:
    """An argparse ``type``: a comma-separated list of :func:`number`, none empty."""
    one = number(lo, hi, lo_open=lo_open)

    def parse(text: str) -> list[float]:
        return [one(x) for x in text.split(",")]

    parse.__name__ = "numbers"
    return parse


def whole(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``lo`` (to ``hi``)."""
    want = f"a whole number >= {lo}" + (f" and <= {hi}" if hi is not None else "")

    def parse(text: str) -> int:
        t = text.strip()
        n = int(t) if t.lstrip("-").isdigit() else None
        if n is None or n < lo or (hi is not None and n > hi):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return n

    parse.__name__ = "whole"
    return parse


def spans(lo: int = 0, hi: int | None = None) -> Callable[[str], list[int]]:
    """An argparse ``type``: whole numbers from ``lo`` (to ``hi``) as ``1-5``, ``1,3,7`` or
    ``1-3,10``, each once, at least one; anything else is argparse's one-line error."""
    want = f"whole numbers >= {lo}" + (f" and <= {hi}" if hi is not None else "")

    def parse(text: str) -> list[int]:
        out: list[int] = []
        for part in text.split(","):
            a, dash, b = part.strip().partition("-")
            if not (a.isdigit() and (not dash or b.isdigit())):
                raise argparse.ArgumentTypeError(
                    f"expected {want} as a range or a list (1-5, 1,3,7 or 1-3,10), got {text!r}"
                )
            first, last = int(a), int(b) if dash else int(a)
            if first < lo or (hi is not None and last > hi):
                raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
            if last < first:
                raise argparse.ArgumentTypeError(f"the range {part.strip()} ends below its start")
            out += range(first, last + 1)
        if len(set(out)) != len(out):
            raise argparse.ArgumentTypeError(f"a number is listed twice in {text!r}")
        return out

    parse.__name__ = "spans"
    return parse


def guard(main: Callable[..., T]) -> Callable[..., T]:
    """Wrap a script's ``main`` so that a file missing inside its input (a run folder
    without its ``summary.json``) or a gpusched input error ends in one line, exit 2."""

    @functools.wraps(main)
    def run(*args: object, **kwargs: object) -> T:
        try:
            return main(*args, **kwargs)
        except GpuschedError as exc:
            print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
            raise SystemExit(2) from None
        except FileNotFoundError as exc:
            fail(exc.filename or "(unknown file)", "no such file")
        except IsADirectoryError as exc:
            fail(exc.filename or "(unknown file)", "is a folder; expected a file")
        except NotADirectoryError as exc:
            fail(exc.filename or "(unknown file)", "not a folder")
        except PermissionError as exc:
            fail(exc.filename or "(unknown file)", "permission denied")

    return run
