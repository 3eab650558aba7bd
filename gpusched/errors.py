"""Errors raised for user mistakes (bad input) and for broken invariants.

Every user-facing error is a :class:`GpuschedError`; the CLI prints its message after
``error:`` and exits non-zero, never a traceback. The first line of a message is a complete
error on its own; a :class:`TraceError` with several problems lists a few more on the
following lines, one ``file:line:`` each.

:func:`show_name` and :func:`show_value` render a file name or a field value for a message:
unchanged when printable, else escaped and quoted, so that a name holding a newline or a
terminal escape sequence can neither split a one-line error nor drive the terminal;
:func:`show_text` does the same, unquoted, for every other human-facing output (tables,
``explain``, Gantt keys, ``diff``, the TUI).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = [
    "CatalogueError",
    "ClusterError",
    "GpuschedError",
    "InvariantError",
    "MAX_INT_DIGITS",
    "MAX_SEED",
    "ParamError",
    "PolicyError",
    "TraceError",
    "check_seed",
    "control_char",
    "did_you_mean",
    "empty_name",
    "field_error",
    "is_blank",
    "show_name",
    "show_text",
    "show_value",
    "too_many_digits",
]

#: Unicode categories of the characters a name or a one-line message may not show raw:
#: controls (NUL, newline, ESC, ...), format characters (a right-to-left override, ...),
#: surrogates and the line/paragraph separators
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def control_char(text: str) -> str:
    """The first control, format or line-separator character of ``text``, or ``""``.

    Such characters (NUL, newline, tab, a right-to-left override, ...) would break a
    one-line message or a table, or make a name look like another; names, labels and
    descriptions may not hold them. Letters of any script are fine.
    """
    for ch in text:
        if unicodedata.category(ch) in _CONTROL_CATEGORIES:
            return ch
    return ""


def _escape(text: str) -> str:
    """``text`` with every :func:`control_char` written as a Python escape (``\\n``, ``\\x1b``)."""
    if not control_char(text):
        return text
    return "".join(repr(ch)[1:-1] if control_char(ch) else ch for ch in text)


def show_text(text: object) -> str:
    """Render text for the terminal (a table cell, a line of ``explain``, a Gantt key):
    unchanged when printable, else every :func:`control_char` written as a Python escape
    (``\\n``, ``\\x1b``), unquoted, so that a job id holding a newline or a terminal
    escape sequence can neither split a line nor drive the terminal."""
    return _escape(str(text))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A hint naming the choice closest to a mistyped word, for the end of a message.

    Parameters
    ----------
    word
        What the user wrote.
    choices
        What they could have written.

    Returns
    -------
    str
        `` (did you mean 'x'?)`` when a choice is close to ``word`` (difflib ratio at
        least 0.6, letter case ignored: ``SJF`` finds ``sjf``), else an empty string.
    """
    import difflib  # only on the error path

    options = list(choices)
    folded = {c.casefold(): c for c in reversed(options)}  # the first of equal foldings
    if word.casefold() in folded:  # only the case differs: -P SJF for sjf
        return f" (did you mean '{folded[word.casefold()]}'?)"
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return f" (did you mean '{folded[close[0]]}'?)" if close else ""


def show_name(name: object) -> str:
    """Render a file name (or any source description) for a message.

    Parameters
    ----------
    name
        A path or string.

    Returns
    -------
    str
        ``str(name)``, or its :func:`repr` (quoted, with escapes) if it holds a
        :func:`control_char`, e.g. ``'a\\nb.csv'`` for a name holding a newline.
    """
    text = str(name)
    return repr(text) if control_char(text) else text


def show_value(value: str, limit: int = 60) -> str:
    """Render a field value for a message: quoted, escaped, and cut after ``limit`` characters.

    Parameters
    ----------
    value
        The field as read.
    limit
        Characters shown before the value is cut (the total length is then given).

    Returns
    -------
    str
        ``'value'`` for a printable value (so ``' 5'`` shows its space), its :func:`repr`
        otherwise (``'a\\nb'``, and ``'\\xa05'`` for a no-break space); long values end
        in ``...' (N characters)``.
    """
    cut = value if len(value) <= limit else value[:limit]
    shown = f"'{cut}'" if cut.isprintable() else repr(cut)
    if len(value) > limit:
        shown = f"{shown[:-1]}...{shown[-1]} ({len(value):,} characters)"
    return shown


class GpuschedError(Exception):
    """Base class of every error the CLI reports as an ``error: ...`` message."""


#: the most digits of a whole number gpusched reads from the user (a flag, a policy
#: parameter, a seed): far beyond every limit it checks, and far below Python's own limit
#: (4,300 digits), past which ``int()`` raises a ValueError of its own
MAX_INT_DIGITS = 30


def too_many_digits(text: str) -> str | None:
    """The refusal of a whole number written with more than :data:`MAX_INT_DIGITS` digits
    (``"a whole number of at most 30 digits, got 99999999999... (5,000 digits)"``), or
    None for one that is short enough."""
    digits = text.strip().lstrip("+-")
    if len(digits) <= MAX_INT_DIGITS:
        return None
    return (
        f"a whole number of at most {MAX_INT_DIGITS} digits, got {digits[:12]}... "
        f"({len(digits):,} digits)"
    )


#: largest seed, as ``--seeds`` and sweeps take them (0 .. 2**32 - 1: every NumPy generator
#: takes it, and a run's seed is one number in every table and manifest)
MAX_SEED = 2**32 - 1


def check_seed(seed: object, flag: str = "--seed") -> None:
    """Refuse a seed NumPy's generators would refuse with a traceback: a negative one, or
    (from Python callers) one that is not a whole number (a bool, a float); and one above
    :data:`MAX_SEED`, which ``--seeds`` and sweeps refuse too.

    Raises
    ------
    GpuschedError
        ``--seed must be a whole number >= 0, got -1`` (``flag`` names the option).
    """
    import numbers

    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise GpuschedError(f"{flag} must be a whole number >= 0, got {seed!r}")
    if int(seed) > MAX_SEED:
        raise GpuschedError(f"{flag} must be at most {MAX_SEED} (2^32 - 1), got {seed}")


def empty_name(text: object, expected: str) -> str:
    """The one message of a blank name where a file or folder is expected, after the name
    of what was given: ``an empty name ''; expected <expected>``.

    ``Path("")`` is ``.``, the current folder, so an unset shell variable (``"$RUN"``)
    would otherwise name the folder the command runs in; every command refuses it alike.
    """
    return f"an empty name {text!r}; expected {expected}"


def is_blank(text: object) -> bool:
    """Whether ``text`` is a string of nothing but white space (a Path never is: ``Path("")``
    is ``.``; the name must be checked before it becomes one)."""
    return isinstance(text, str) and not text.strip()


def field_error(path: object, line: int, column: str, expected: str, got: str) -> GpuschedError:
    """The one-line error of a bad field in a table gpusched reads (a trace, a run's tables).

    ``file:line: column 'name': expected <expected>, got '<value>'``, the file and value
    shown by :func:`show_name` and :func:`show_value`.
    """
    return GpuschedError(
        f"{show_name(path)}:{line}: column {show_value(column)}: expected {expected}, "
        f"got {show_value(got)}"
    )


class TraceError(GpuschedError):
    """A trace file is malformed: the message names file, line, column and expectation.

    Parameters
    ----------
    errors
        One message per bad row or field, each already prefixed ``file:line:``.

    Notes
    -----
    ``str(error)`` is the first message on its own line, then up to :attr:`MAX_SHOWN` - 1
    more, one per line, then ``(and N more problems)`` if some are left out. Control
    characters inside a message are escaped, so each message stays on one line.
    """

    MAX_SHOWN = 6
    """Messages shown in ``str(error)``; all of them are in :attr:`errors`."""

    def __init__(self, errors: list[str] | str) -> None:
        raw = [errors] if isinstance(errors, str) else list(errors)
        self.errors = [_escape(e) for e in raw] or ["invalid trace"]
        lines = self.errors[: self.MAX_SHOWN]
        more = len(self.errors) - len(lines)
        if more:
            lines.append(f"(and {more:,} more problem{'s' if more > 1 else ''})")
        super().__init__("\n".join(lines))


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
