"""Errors raised for user mistakes (bad input) and for broken invariants.

Every user-facing error is a :class:`GpuschedError`; the CLI prints its
message on one line and exits non-zero, never a traceback.
"""

from __future__ import annotations

import os


class GpuschedError(Exception):
    """Base class of every error the CLI reports as a one-line message."""


class TraceError(GpuschedError):
    """A trace file is malformed: the message names file, line, column and expectation.

    Parameters
    ----------
    errors
        One message per bad row or field, each already prefixed ``file:line:``.
    """

    def __init__(self, errors: list[str] | str) -> None:
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        head = self.errors[0] if self.errors else "invalid trace"
        more = len(self.errors) - 1
        super().__init__(head if more == 0 else f"{head} (and {more} more bad fields)")


class ClusterError(GpuschedError):
    """A cluster spec is unknown or malformed."""


class CatalogueError(GpuschedError):
    """A model catalogue is malformed, or a job names a model it does not hold."""


class PolicyError(GpuschedError):
    """A policy is unknown, got bad parameters, or answered with an invalid action.

    The message names the policy, the job and the simulated time when they apply.
    """


class ParamError(PolicyError):
    """A ``-p key=value`` parameter is unknown or of the wrong type."""


class InvariantError(GpuschedError):
    """The engine found a broken invariant (a bug in gpusched, not in the input)."""


def show_path(path: str | os.PathLike[str] | bytes | None) -> str:
    """A file name as one line of an error message.

    Names are shown as given, unless they hold a character that would break the line
    or hide itself (a newline, a tab, another control character), or are empty: then
    they are quoted with Python's escapes (``'runs\\nA'``), so every error stays on
    one line and says exactly which file it means.
    """
    if isinstance(path, bytes):
        return repr(path)
    text = os.fspath(path) if path is not None else ""
    if text and text.isprintable():
        return text
    return repr(text)
