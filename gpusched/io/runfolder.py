"""Run folders as transactions, and the checks their readers make (docs/cli.md, on
``--out DIR``).

Writing. Every command that writes results (``replay --out``, ``compare --out``,
``compare --seeds --out``, each cell of a sweep) builds its folder in a fresh *staging*
folder beside the target and renames it into place only when every file is complete
(:class:`FolderTransaction`; :func:`swap_in` for the renames). So at every instant the
target is absent, the old results whole, or the new results whole: a run that fails, is
killed, or fills the disk leaves no partial folder behind. The staging folder is created
with ``mkdir`` (never an existing one) and every file in it is created exclusively
(:func:`create_exclusive`), so nothing is written through a symbolic link planted inside.
A target that holds results is refused unless ``force``, which replaces it whole; a
target that is a symbolic link, or that holds files other than a run's results, is refused
always. A lock (:class:`FolderLock`: a file created with ``O_CREAT | O_EXCL``, holding the
writer's pid, host and a random token) keeps two writers apart. Names derived from user
text (a policy's name) go through :func:`safe_name` first.

Reading. manifest.json lists every table of a run with its row count and SHA-256
(:func:`table_record`). Readers open a run with :func:`open_run`, which parses the
manifest, and take each table through :meth:`RunFolder.table`, which refuses a table that
is missing or differs from its record (cut short, or written by another run).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from gpusched.errors import GpuschedError, empty_name, is_blank, show_name
from gpusched.io.files import (
    NotAFile,
    check_folder_path,
    parse_json,
    read_json_or_none,
    read_regular_file,
)

__all__ = [
    "MANIFEST",
    "FolderLock",
    "FolderTransaction",
    "RunFolder",
    "create_exclusive",
    "file_sha256",
    "open_run",
    "read_lock",
    "remove_tree",
    "safe_name",
    "swap_in",
    "table_record",
]

#: the run folder's record of what produced it and of its tables (written last)
MANIFEST = "manifest.json"
#: names of files and folders gpusched writes into a results folder (anything else in a
#: target folder is the user's, and is never deleted)
_RESULT_FILES = re.compile(
    r"(jobs|timeline|tasks|events)\.(csv|parquet)|summary\.json|manifest\.json"
    r"|comparison\.csv|compare\.csv|compare-runs\.csv"
)


def is_result_file(name: str) -> bool:
    """Whether a file named ``name`` is one gpusched writes into a results folder
    (``jobs.csv``, ``summary.json``, ``manifest.json``, ``comparison.csv``, ...)."""
    return _RESULT_FILES.fullmatch(name) is not None


#: a policy's folder of seed runs (``compare --seeds``), or a run of ``compare``
_SEED_RUN = re.compile(r"seed-\d+")
#: the longest name :func:`safe_name` returns, characters (file systems allow 255 bytes)
MAX_NAME = 120
#: bytes hashed at a time
_BLOCK = 1 << 20


# --- names --------------------------------------------------------------------------------


def safe_name(label: str, limit: int = MAX_NAME) -> str:
    """A folder name made from user text (a policy's label): safe to join to any folder.

    Characters other than letters, digits and ``-_=.`` become ``_``; a name that would
    be hidden or climb out of its folder (``.``, ``..``, ``.x``) gets a leading ``_``;
    an empty one is ``_``; a long one is cut to ``limit`` characters and ends in a hash
    of the whole label, so two labels never share a name by being cut alike.

    Examples
    --------
    >>> safe_name("fifo:backfill=true")
    'fifo_backfill=true'
    >>> safe_name("..")
    '_..'
    """
    name = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-_=." else "_" for ch in label)
    if not name or name.startswith("."):
        name = "_" + name
    if len(name) > limit:
        digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = name[: limit - 13] + "-" + digest
    return name


# --- hashes and records --------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def table_record(path: Path, rows: int) -> dict[str, Any]:
    """manifest.json's record of one table: ``{"rows": rows, "sha256": hex}``."""
    return {"rows": int(rows), "sha256": file_sha256(path)}


def create_exclusive(path: Path, text: bool = False) -> IO[Any]:
    """Open a new file for writing, refusing one that exists (a file or a symbolic link:
    nothing is written through a link planted in a run folder)."""
    if text:
        return path.open("x", newline="", encoding="utf-8")
    return path.open("xb")


# --- removing and renaming -----------------------------------------------------------------


def remove_tree(path: Path) -> None:
    """Delete a file, a symbolic link (not what it points to) or a folder tree; nothing if
    it is gone."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def swap_in(folder: Path, dest: Path, trash: Path) -> None:
    """Make ``folder`` the folder ``dest`` with renames only.

    An older ``dest`` is first renamed to a fresh name in ``trash`` (a folder on the same
    file system), then ``folder`` is renamed to ``dest``, then the old one is deleted:
    at every instant ``dest`` is absent, the old folder whole or the new one whole, never
    a mix of two. If the second rename fails the old folder is put back.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    old: Path | None = trash / f".{dest.name}.old-{uuid.uuid4().hex[:12]}"
    try:
        os.rename(dest, old)  # type: ignore[arg-type]
    except FileNotFoundError:
        old = None
    try:
        os.rename(folder, dest)
    except BaseException:
        if old is not None:
            with contextlib.suppress(OSError):
                os.rename(old, dest)
        raise
    if old is not None:
        remove_tree(old)


# --- the lock --------------------------------------------------------------------------------


_HELD_LOCKS: set[str] = set()  # tokens of the locks this process holds


def _pid_running(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (POSIX; elsewhere: assume it does)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's process
        return True
    return True


@contextlib.contextmanager
def _guard(folder: Path) -> Iterator[None]:
    """Serialise lock checks on one host: ``flock`` on the folder (released if we die)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


#: the largest lock file read, bytes (gpusched's hold a pid, a host, a time and a token)
MAX_LOCK_BYTES = 1 << 16


def read_lock(path: str | Path) -> dict[str, Any] | None:
    """The holder recorded in lock file ``path`` (``pid``, ``host``, ``started``,
    ``token``), or None (missing, or not holding a pid and a host)."""
    data = read_json_or_none(path, MAX_LOCK_BYTES)
    if not isinstance(data, dict):
        return None
    pid, host = data.get("pid"), data.get("host")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or not isinstance(host, str):
        return None
    return data


class FolderLock:
    """A lock file that keeps two writers of one folder apart.

    The file is created with ``O_CREAT | O_EXCL`` and holds the pid, host, start time and
    a random token of its holder. A lock left by a process that no longer runs on this
    host is taken over, with a note; any other lock is refused with a one-line
    :class:`~gpusched.errors.GpuschedError` naming its holder.

    Parameters
    ----------
    path
        The lock file (its folder is created if missing).
    folder
        The folder it guards, for messages.
    writer
        What holds such locks, for messages (``"sweep"``, ``"gpusched run"``).
    note
        Called with a one-line note when a stale lock is taken over.
    """

    def __init__(
        self,
        path: str | Path,
        folder: str | Path,
        writer: str = "gpusched run",
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.folder = Path(folder)
        self.writer = writer
        self.note = note
        self.token = uuid.uuid4().hex

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock or raise :class:`~gpusched.errors.GpuschedError`."""
        where = self.path.parent
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GpuschedError(
                f"cannot create folder {show_name(where)}: {exc.strerror or exc}"
            ) from None
        mine = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "token": self.token,
        }
        with _guard(where):
            for _ in range(2):
                try:
                    fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    holder = read_lock(self.path)
                    if holder is None or not self._stale(holder):
                        raise GpuschedError(self._refusal(holder)) from None
                    if self.note is not None:
                        self.note(
                            f"taking over {show_name(self.path)}: the {self.writer} that held "
                            f"it (pid {holder['pid']} on {holder['host']}, since "
                            f"{holder.get('started', '?')}) is no longer running"
                        )
                    self.path.unlink(missing_ok=True)
                    continue
                except OSError as exc:
                    raise GpuschedError(
                        f"cannot create the lock file {show_name(self.path)}: {exc.strerror or exc}"
                    ) from None
                with os.fdopen(fd, "w") as fh:
                    fh.write(json.dumps(mine) + "\n")
                _HELD_LOCKS.add(self.token)
                return
        raise GpuschedError(f"cannot take the lock {show_name(self.path)}: it keeps reappearing")

    def _stale(self, holder: dict[str, Any]) -> bool:
        if holder["host"] != socket.gethostname():
            return False  # another machine: its processes cannot be checked from here
        if holder["pid"] == os.getpid():
            # this process id: a lock of ours, or of an earlier process that had our pid
            return holder.get("token") not in _HELD_LOCKS
        return not _pid_running(holder["pid"])

    def _refusal(self, holder: dict[str, Any] | None) -> str:
        if holder is None:
            return (
                f"{show_name(self.folder)} is locked: {show_name(self.path)} exists but names "
                f"no process; delete it if no {self.writer} is writing this folder"
            )
        return (
            f"{show_name(self.folder)} is in use by another {self.writer} (pid {holder['pid']} "
            f"on {holder['host']}, since {holder.get('started', '?')}); wait for it to end, "
            f"or delete {show_name(self.path)} if it is no longer running"
        )

    def release(self) -> None:
        """Remove the lock file if it is still ours."""
        _HELD_LOCKS.discard(self.token)
        holder = read_lock(self.path)
        if holder is not None and holder.get("token") == self.token:
            self.path.unlink(missing_ok=True)


# --- one results folder, written as a transaction ------------------------------------------


def _foreign_entry(folder: Path, depth: int = 0) -> Path | None:
    """The first entry of ``folder`` that is not one of the files gpusched writes into a
    results folder (None when every entry is a result file, or a folder of them, two levels
    deep)."""
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink() or (entry.is_dir() and _RESULT_FILES.fullmatch(entry.name)):
            return entry
        if entry.is_dir():
            if depth >= 2:
                return entry
            inner = _foreign_entry(entry, depth + 1)
            if inner is not None:
                return inner
        elif not _RESULT_FILES.fullmatch(entry.name):
            return entry
    return None


class FolderTransaction:
    """A results folder ``target`` written whole or not at all (module docstring).

    Use as a context manager: entering checks the target, takes the lock
    (``.<name>.lock`` beside it) and creates the staging folder :attr:`staging`; the
    caller writes every file there; leaving without an exception renames it into place
    (:meth:`commit`), with one deletes it and leaves the target as it was.

    Parameters
    ----------
    target
        The folder to write (``--out``).
    force
        Replace a target that holds results (else it is refused).
    option
        How the user named the target, for messages (``"--out"``).
    """

    def __init__(self, target: str | Path, *, force: bool = False, option: str = "--out") -> None:
        if is_blank(target):
            raise GpuschedError(f"{option}: {empty_name(target, 'a folder')}")
        self.target = Path(target)
        if self.target.name in ("", ".", ".."):  # "." or "a/..": the folder it names
            self.target = Path(os.path.abspath(self.target))
        self.force = force
        self.option = option
        self.staging = Path()
        self._lock: FolderLock | None = None

    def check(self) -> None:
        """Refuse a target that cannot be (re)placed; see the class docstring.

        Raises
        ------
        GpuschedError
            A symbolic link, a file, a folder holding files other than results, or
            one holding results without ``force``.
        """
        where = f"{self.option} {show_name(self.target)}"
        here = Path.cwd()
        full = Path(os.path.abspath(self.target))
        if full == here or full in here.parents:
            raise GpuschedError(
                f"{where} is the current folder (or holds it): a results folder is replaced "
                "whole, so give a new folder's name (e.g. --out runs/a)"
            )
        if self.target.is_symlink():
            raise GpuschedError(
                f"{where} is a symbolic link; give the folder it points to, or a new name "
                "(a results folder is replaced whole, never written through a link)"
            )
        if not self.target.exists():
            check_folder_path(self.target, self.option)
            return
        if not self.target.is_dir():
            raise GpuschedError(f"{where} is a file, expected a folder")
        foreign = _foreign_entry(self.target)
        if foreign is not None:
            kind = (
                " (a symbolic link)"
                if foreign.is_symlink()
                else " (a folder)"
                if foreign.is_dir()
                else ""
            )
            raise GpuschedError(
                f"{where} holds {show_name(foreign.relative_to(self.target))}{kind}, which is "
                "not one of a run's result files; a results folder is replaced whole, so "
                "results go to a new or empty folder (choose another one, or move that away)"
            )
        if any(self.target.iterdir()) and not self.force:
            raise GpuschedError(
                f"{where} already holds results: choose another folder, or pass --force to "
                "replace them"
            )

    def __enter__(self) -> FolderTransaction:
        self.check()
        parent = self.target.parent
        parent.mkdir(parents=True, exist_ok=True)
        name = self.target.name or "out"
        self._lock = FolderLock(parent / f".{name}.lock", self.target)
        self._lock.acquire()
        try:
            self.check()  # again under the lock: another writer may have finished meanwhile
            for left in parent.iterdir():  # what killed writers of this folder left
                if left.name.startswith((f".{name}.staging-", f".{name}.old-")):
                    remove_tree(left)
            self.staging = parent / f".{name}.staging-{uuid.uuid4().hex[:12]}"
            self.staging.mkdir(mode=0o755)
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None:
                self.commit()
        finally:
            remove_tree(self.staging)  # gone after a commit; whatever is left on failure
            if self._lock is not None:
                self._lock.release()

    def commit(self) -> None:
        """Rename the staging folder to the target (replacing an old one whole)."""
        if self.target.is_symlink():  # planted while we ran: never rename over a link
            raise GpuschedError(
                f"{self.option} {show_name(self.target)} became a symbolic link during the run"
            )
        swap_in(self.staging, self.target, self.target.parent)


# --- reading a run folder ----------------------------------------------------------------


@dataclass
class RunFolder:
    """A run folder opened for reading: its manifest, and its tables checked on demand.

    Attributes
    ----------
    folder
        The folder.
    manifest
        manifest.json as a dictionary.
    tables
        The manifest's ``tables`` (file name -> ``{"rows", "sha256"}``), or None when the
        manifest records none (a run written before gpusched recorded them).
    """

    folder: Path
    manifest: dict[str, Any]
    tables: dict[str, Any] | None

    def table(self, stem: str, *, required: bool = True) -> Path | None:
        """The file of table ``stem`` (``"jobs"``) checked against the manifest.

        The manifest names the file (``jobs.csv`` or ``jobs.parquet``); it must exist and
        have the recorded SHA-256. Without records in the manifest, the CSV is preferred.

        Raises
        ------
        GpuschedError
            A table the manifest lists that is missing or differs from its record; a
            required table that is not there.
        """
        names = [f"{stem}.csv", f"{stem}.parquet"]
        if self.tables is None:
            found = [self.folder / n for n in names if (self.folder / n).is_file()]
            if found:
                return found[0]
        else:
            listed = [n for n in names if n in self.tables]
            if listed:
                path = self.folder / listed[0]
                self._verify(path, self.tables[listed[0]])
                return path
        if required:
            raise GpuschedError(
                f"{show_name(self.folder)}: no {stem}.csv (nor {stem}.parquet) recorded in "
                f"its {MANIFEST}; give a run folder (replay --out DIR)"
            )
        return None

    def rows(self, path: Path) -> int | None:
        """The row count the manifest records for table file ``path`` (None if none)."""
        if self.tables is None or path.name not in self.tables:
            return None
        return int(self.tables[path.name]["rows"])

    def check_rows(self, path: Path, n_rows: int) -> None:
        """Refuse a table whose parsed row count differs from the manifest's record."""
        want = self.rows(path)
        if want is not None and want != n_rows:
            raise GpuschedError(
                f"{show_name(path)}: {n_rows:,} rows, but {MANIFEST} records {want:,} "
                "(cut short, or written by another run)"
            )

    def _verify(self, path: Path, record: dict[str, Any]) -> None:
        if path.is_symlink() or not path.is_file():
            raise GpuschedError(
                f"{show_name(path)}: missing (or not a plain file), but {MANIFEST} records it; "
                "the run folder is incomplete"
            )
        if file_sha256(path) != record["sha256"]:
            raise GpuschedError(
                f"{show_name(path)}: differs from the table {MANIFEST} records ({record['rows']:,} "
                "rows; its SHA-256 differs): cut short, or changed after the run"
            )


def _table_records(value: Any, where: str) -> dict[str, Any] | None:
    """The manifest's ``tables``, checked (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise GpuschedError(f"{where}: field 'tables' expected an object, got {value!r:.60}")
    for name, rec in value.items():
        ok = (
            isinstance(name, str)
            and _RESULT_FILES.fullmatch(name) is not None
            and isinstance(rec, dict)
            and isinstance(rec.get("rows"), int)
            and not isinstance(rec.get("rows"), bool)
            and rec["rows"] >= 0
            and isinstance(rec.get("sha256"), str)
            and re.fullmatch(r"[0-9a-f]{64}", rec["sha256"]) is not None
        )
        if not ok:
            raise GpuschedError(
                f"{where}: field 'tables.{name}' expected a table name with rows (an integer "
                f">= 0) and sha256 (64 hex digits), got {rec!r:.80}"
            )
    return value


def open_run(folder: str | Path, *, what: str = "a run folder (replay --out DIR)") -> RunFolder:
    """Open a run folder for reading: its manifest.json must be a JSON object.

    A manifest without table records (a folder written before gpusched recorded them) is
    read with a note on stderr that its tables are not checked.

    Raises
    ------
    GpuschedError
        Not a folder, no (or a damaged) manifest.json, malformed table records.
    """
    path = Path(folder)
    if not path.is_dir():
        raise GpuschedError(f"{show_name(path)}: not a folder (give {what})")
    man = path / MANIFEST
    where = show_name(man)
    if not man.exists():  # (one that is there but not a file: read_regular_file names it)
        runs = sorted(d for d in path.iterdir() if (d / MANIFEST).is_file())
        for table, kind in (("comparison.csv", "a comparison"), ("results.csv", "a sweep")):
            if (path / table).is_file() or (kind == "a sweep" and (path / "cells").is_dir()):
                # not a half-written run: a folder of runs (a sweep's are in cells/)
                if kind == "a sweep":
                    runs = sorted(d for d in (path / "cells").glob("*") if (d / MANIFEST).is_file())
                example = f", e.g. {show_name(runs[0])}" if runs else ""
                raise GpuschedError(
                    f"{show_name(path)} holds {kind} ({table}), not one run: give one of its "
                    f"run folders{example}"
                )
        raise GpuschedError(
            f"{show_name(path)}: no {MANIFEST} (a run folder gets it when its run is "
            f"complete; give {what})"
        )
    try:
        manifest = parse_json(read_regular_file(man))
    except UnicodeDecodeError:
        raise GpuschedError(f"{where}: not a UTF-8 text file (expected a JSON manifest)") from None
    except json.JSONDecodeError as exc:
        raise GpuschedError(
            f"{where}:{exc.lineno}: not a JSON manifest ({exc.msg}; cut short?)"
        ) from None
    except NotAFile as exc:  # a folder, a pipe or a device, or too large
        raise GpuschedError(f"{where}: {exc}; expected the run's JSON manifest") from None
    except ValueError as exc:  # JSON no reader can take (nested too deeply)
        raise GpuschedError(f"{where}: not a JSON manifest ({exc})") from None
    except OSError as exc:
        raise GpuschedError(f"{where}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(manifest, dict):
        raise GpuschedError(f"{where}: expected a JSON object (the manifest of a run)")
    tables = _table_records(manifest.get("tables"), where)
    if tables is None:
        sys.stderr.write(
            f"note: {where} records no table hashes (written by an older gpusched): its "
            "tables are read unchecked\n"
        )
    return RunFolder(path, manifest, tables)
