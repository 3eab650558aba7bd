"""One-line errors for the example scripts' inputs (the folders and files run.sh makes).

A missing or empty input ends in ``error: <path>: <what was expected>`` on stderr and
exit status 2, as the ``gpusched`` command ends on bad input, never in a traceback.

The scripts run as ``python examples/<family>/<script>.py``, so they import this module
after putting ``examples/`` on ``sys.path``::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _inputs import args, guard, need_file, need_folder, need_some
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn, TypeVar

from gpusched.errors import GpuschedError, show_name

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

    return run
