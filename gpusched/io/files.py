"""Small files read with one-line errors: the TOML files the user names (cluster specs,
sweep specs) and the JSON files gpusched reads back (a run's manifest and summary, a
sweep cell's record, a lock).

A folder, a pipe or a device, a file too large, unreadable or not UTF-8, JSON nested
thousands deep or holding a 5,000-digit number must each end in one line naming the file
(raised as the caller's error class), or in the caller's "not usable" answer, never in a
traceback, a hang or in reading gigabytes.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from gpusched.errors import GpuschedError, show_name

#: the UTF-8 byte-order mark
BOM = b"\xef\xbb\xbf"


def check_small_file(
    path: Path,
    st: os.stat_result,
    *,
    what: str,
    expected: str,
    max_bytes: int,
    error: type[GpuschedError],
) -> None:
    """Refuse a ``path`` (stat ``st``) that is a folder, not a regular file, or too large.

    Parameters
    ----------
    path, st
        The file and its ``os.stat`` result.
    what
        What the file is, for messages (``"cluster file"``).
    expected
        What was expected instead of a folder or device (``"a cluster .toml file"``).
    max_bytes
        Largest size accepted, bytes.
    error
        The error class to raise.
    """
    where = show_name(path)
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{where}: is a folder; expected {expected}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{where}: not a regular file; expected {expected}")
    if st.st_size > max_bytes:
        raise error(f"{where}: {st.st_size:,} bytes; a {what} may be at most {max_bytes:,} bytes")


#: the largest JSON file gpusched reads back, bytes: far above any it writes (a manifest
#: lists its cluster's server groups, about 3x the size of a cluster file of up to 16 MiB;
#: a policy's summary tables are its own), and a bound on what a stray file can cost
MAX_JSON_BYTES = 1 << 30


def read_json_or_none(path: str | Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON in ``path``, or None (missing, unreadable, not a regular file, larger than
    ``max_bytes``, not JSON): never waits on a pipe nor reads a device. For files whose
    reader treats any of these as "not there" (a lock, a sweep cell's record)."""
    try:
        return parse_json(read_regular_file(path, max_bytes))
    except (OSError, ValueError):
        return None


class NotAFile(ValueError):
    """What :func:`read_regular_file` found instead of a regular file of a usable size."""


def read_regular_file(
    path: str | Path, max_bytes: int = MAX_JSON_BYTES, *, head: bool = False
) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` (with ``head``: its
    first ``max_bytes``, whatever its size).

    Opened without blocking and checked on the open file (no window between a check and
    the read): a pipe is refused before anything waits on a writer, a device (a link to
    ``/dev/zero``) before it is read.

    Raises
    ------
    OSError
        It cannot be opened or read (missing, no permission).
    NotAFile
        A folder, a pipe, a device or a socket (``"is a folder"``, ``"not a regular
        file"``), or larger than ``max_bytes``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotAFile("is a folder")
        if not stat.S_ISREG(st.st_mode):
            raise NotAFile("not a regular file (a pipe or a device)")
        chunks, size = [], 0
        while size <= max_bytes:
            # a block at a time: os.read allocates what it is asked for up front
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if size > max_bytes:
        if head:
            return data[:max_bytes]
        raise NotAFile(f"larger than {max_bytes:,} bytes")
    return data


def _loads(
    loads: Any, text: Any, own: type[ValueError], error: type[ValueError], nested: str
) -> Any:
    """``loads(text)``: its ``own`` errors pass through; the two ways it fails on hostile
    text besides are raised as ``error``: nesting thousands deep (a RecursionError, said as
    ``nested``) and a whole number beyond Python's limit on digits (a plain ValueError,
    whose advice to call ``sys.set_int_max_str_digits`` is not the reader's)."""
    try:
        return loads(text)
    except own:
        raise
    except RecursionError:
        raise error(nested) from None
    except ValueError as exc:
        if str(exc).startswith("Exceeds the limit"):
            raise error("a whole number too long to read") from None
        raise


def parse_json(raw: bytes | str) -> Any:
    """``json.loads(raw)``, with every way it can fail on hostile text as a ValueError
    (:func:`_loads`: "nested too deeply", "a whole number too long to read");
    ``json.JSONDecodeError`` (a ValueError) passes through unchanged, with its line."""
    return _loads(json.loads, raw, json.JSONDecodeError, ValueError, "nested too deeply")


def parse_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, with every way it can fail on hostile text as a
    ``tomllib.TOMLDecodeError`` (:func:`_loads`)."""
    import tomllib

    bad = tomllib.TOMLDecodeError
    out: dict[str, Any] = _loads(
        tomllib.loads, text, bad, bad, "arrays or tables nested too deeply"
    )
    return out


def refuse_special_file(path: str | Path, what: str, expected: str) -> None:
    """Refuse an input ``path`` that exists and is neither a folder nor a regular file: a
    pipe would block the read until something writes to it, a device could be read forever.
    A missing file and a folder are left to the reader's own messages.

    Raises
    ------
    GpuschedError
        ``<what> <path>: not a regular file (a pipe or a device); expected <expected>``.
    """
    try:
        mode = Path(path).stat().st_mode
    except (OSError, ValueError):
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise GpuschedError(
            f"{what} {show_name(path)}: not a regular file (a pipe or a device); expected "
            f"{expected}"
        )


def read_small_text(path: Path, *, what: str, max_bytes: int, error: type[GpuschedError]) -> str:
    """The UTF-8 text of ``path`` (without a leading byte-order mark), reading at most
    ``max_bytes`` (the file may have grown since it was checked); one-line ``error`` if it
    cannot be read or is not UTF-8."""
    where = show_name(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{where}: cannot read {what}: {exc.strerror or type(exc).__name__}") from None
    if len(raw) > max_bytes:
        raise error(f"{where}: a {what} may be at most {max_bytes:,} bytes")
    # a byte-order mark (Windows editors save one) is not text: dropped, as the trace
    # reader drops it (TOML parsers refuse it as an "invalid statement" at line 1, column 1)
    skip = len(BOM) if raw.startswith(BOM) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + skip
        raise error(
            f"{where}: not UTF-8 text (byte 0x{raw[at]:02x} at offset {at}); expected a TOML file"
        ) from None


def check_folder_path(path: Path, what: str) -> None:
    """Refuse an output ``path`` (a file or folder, its missing folders to be made) that
    lies under a file.

    ``mkdir -p`` of ``notes.csv/run`` fails with "File exists: notes.csv", which says
    neither what is wrong nor what was expected.

    Raises
    ------
    GpuschedError
        ``<what> <path> is under <file>, which is a file, not a folder``.
    """
    for parent in path.parents:
        try:
            st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue  # missing (made later), or under a file: look further up
        except (OSError, ValueError):
            return  # unreadable: the write reports it
        if not stat.S_ISDIR(st.st_mode):
            raise GpuschedError(
                f"{what} {show_name(path)} is under {show_name(parent)}, which is a file, "
                "not a folder"
            )
        return


def check_out_file(path: str | Path, option: str, expected: str) -> Path:
    """An output file's ``path``, checked before any work: not a folder, not under a
    file, and not a file of a run's or comparison's results. A missing folder is fine: :func:`make_parent` makes it when the file is written,
    as ``replay --out`` and ``workload --output`` make theirs.

    Parameters
    ----------
    path
        The file to write.
    option
        The option that names it, for messages (``"--output"``, ``"--save"``).
    expected
        What the file should be (``"a CSV file"``).

    Raises
    ------
    GpuschedError
        ``<option> <path>: is a folder; expected <expected>``, a pipe or a device
        (:func:`refuse_special_file`), (:func:`check_folder_path`)
        ``<option> <path> is under <file>, which is a file, not a folder``, or an existing
        result file (``jobs.csv``, ``manifest.json``, ``comparison.csv``, ...) of a results
        folder gpusched wrote (one that holds a :data:`RESULTS_MARKERS` file).
    """
    p = Path(path)
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError):  # a name the OS refuses: the write reports it
        is_dir = False
    if is_dir:
        raise GpuschedError(f"{option} {show_name(p)}: is a folder; expected {expected}")
    # a pipe would block the write until something reads it, /dev/null take the trace
    # (and a manifest written beside it land in /dev)
    refuse_special_file(p, option, expected)
    check_folder_path(p, option)
    marker = _results_marker(p)
    if marker is not None:
        raise GpuschedError(
            f"{option} {show_name(p)} would replace a file of the results in "
            f"{show_name(p.parent)} (a folder gpusched wrote: it holds {marker}); "
            f"write {expected} elsewhere"
        )
    return p


#: what a trace written by gpusched is, by its name's suffix (``io.trace.write_trace``)
TRACE_SUFFIXES = (".csv", ".csv.gz", ".parquet")


def check_trace_out(path: str | Path, option: str) -> Path:
    """A trace to write: named ``.csv``, ``.csv.gz`` or ``.parquet`` (its format is read
    from the suffix: ``x.PARQUET`` or ``x.txt`` were written as CSV, which the readers
    then took for something else), and an output file :func:`check_out_file` accepts.

    Raises
    ------
    GpuschedError
        Another suffix, or what :func:`check_out_file` refuses.
    """
    p = check_out_file(path, option, "a trace file (.csv, .csv.gz or .parquet)")
    if not p.name.endswith(TRACE_SUFFIXES):
        raise GpuschedError(
            f"{option} {show_name(p)}: expected a name ending in .csv, .csv.gz or .parquet "
            "(the suffix chooses the format)"
        )
    return p


#: files that mark a results folder gpusched wrote: a run's manifest, a comparison's table
RESULTS_MARKERS = ("manifest.json", "comparison.csv")


def _results_marker(path: Path) -> str | None:
    """The marker file (:data:`RESULTS_MARKERS`) of the folder holding ``path`` when
    ``path`` is an existing result file there (``jobs.csv``, ``summary.json``, ...:
    writing it would change a run's results, which readers then refuse, or lose a
    comparison's table), else None. A plot saved there before may be replaced."""
    from gpusched.io.runfolder import is_result_file

    try:
        if not is_result_file(path.name) or not path.is_file():
            return None
        return next((m for m in RESULTS_MARKERS if (path.parent / m).is_file()), None)
    except (OSError, ValueError):
        return None


def make_parent(path: str | Path) -> None:
    """Make the missing folders above the file ``path`` (as ``mkdir -p``).

    Raises
    ------
    GpuschedError
        ``cannot write <path>: cannot make its folder <folder> (<reason>)``.
    """
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise GpuschedError(
            f"cannot write {show_name(p)}: cannot make its folder {show_name(p.parent)} ({why})"
        ) from None
