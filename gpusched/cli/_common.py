"""Shared CLI plumbing: one-line errors, the summary table and a progress line."""

from __future__ import annotations

import errno
import functools
import math
import os
import re
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer._click import exceptions as click_exceptions  # the Click that typer vendors

from gpusched.errors import (
    GpuschedError,
    empty_name,
    is_blank,
    show_name,
    show_text,
    show_value,
    too_many_digits,
)

F = TypeVar("F", bound=Callable[..., Any])

#: the summary keys printed on the terminal, with their labels
SHOWN = (
    ("n_finished", "finished"),
    ("avg_jct_s", "avg JCT s"),
    ("p50_jct_s", "p50 JCT s"),
    ("p95_jct_s", "p95 JCT s"),
    ("avg_wait_s", "avg wait s"),
    ("makespan_s", "makespan s"),
    ("gpu_utilization", "GPU util"),
    ("n_preemptions", "preempt"),
    ("wall_s", "wall s"),
)


#: set by ``gpusched --debug``: print the traceback behind a user error (e.g. a policy's own)
DEBUG = False


class _HelpFlagFalse:
    """``--help`` reads False, not None, when it is not given.

    Typer coerces every option's value through pydantic unless it is a bool flag that is
    already a bool; its own ``--help`` has no default, so each command imported pydantic
    (about 0.15 s) only to find it not given.
    """

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.default = False
        return option


_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NOT_PLAIN = object()


def _plain_value(param: Any, value: Any) -> Any:
    """``value`` of ``param`` as typer would coerce it, when that is plain (else _NOT_PLAIN).

    Plain: a missing value; a ``str`` (or a list of them); an ``int`` or ``float`` written
    as a plain decimal
    (what Python's ``int``/``float`` and pydantic read alike, to the same number); a
    ``Path`` from a non-empty string; a value that is already of the option's type (its
    default). Options with a parser, bounds or path checks are never plain.
    """
    desc = param.type_descriptor
    info = desc.parameter_info
    if param.multiple or param.nargs == -1:
        if value is None:
            return ()
        if desc.annotation == list[str] and all(type(v) is str for v in value):
            return list(value)
        return _NOT_PLAIN
    if value is None:
        return None
    if info.parser is not None or info.min is not None or info.max is not None:
        return _NOT_PLAIN
    kind = _value_type(param)
    if kind is str and type(value) is str:
        return value
    if kind is int and type(value) is str and _INT.match(value):
        long = too_many_digits(value)
        if long is not None:  # int() refuses 4,301 digits with a traceback of its own
            raise click_exceptions.BadParameter(long, param=param)
        return int(value)
    if kind is float and type(value) is str and _FLOAT.match(value):
        return float(value)
    if kind is Path and type(value) is str and value and not _path_checks(info):
        return Path(value)
    if kind in (int, float, str, Path) and type(value) is kind:
        return value
    return _NOT_PLAIN


def _path_checks(info: Any) -> bool:
    return bool(
        getattr(info, "exists", False)
        or getattr(info, "resolve_path", False)
        or getattr(info, "allow_dash", False)
        or getattr(info, "path_type", None) is not None
        or not getattr(info, "file_okay", True)
        or not getattr(info, "dir_okay", True)
        or getattr(info, "writable", False)
        or getattr(info, "readable", True) is not True
    )


def _refuse_empty_path(param: Any, value: Any) -> None:
    """Refuse an empty (or blank) value of a path parameter: ``Path("")`` is ``.``, the
    current folder, so ``plot "$RUN"`` with RUN unset plotted the runs found here, and
    ``-o ''`` was refused as ``--output .: is a folder``."""
    kind = param.type_descriptor.annotation
    if kind not in (Path, Path | None, list[Path], list[Path] | None):
        return
    values = value if isinstance(value, (list, tuple)) else [value]
    blank = next((v for v in values if is_blank(v)), None)
    if blank is not None:
        raise click_exceptions.BadParameter(empty_name(blank, "a path"), param=param)


def _value_type(param: Any) -> Any:
    """The type a parameter's value has: its annotation, ``X`` for ``X | None``."""
    kind = param.type_descriptor.annotation
    args = [a for a in getattr(kind, "__args__", ()) if a is not type(None)]
    if isinstance(kind, types.UnionType) and len(args) == 1:
        kind = args[0]
    return kind


def _refuse_loose_number(param: Any, value: Any) -> None:
    """Refuse what pydantic would take for a number but a policy parameter or a trace
    would not: ``1_000`` (Python's digit separator; ``--load 1_0`` ran at load 10) and, for
    a whole number, ``1.0`` (``--seed 1.0`` ran seed 1), so that one number reads alike
    everywhere."""
    if type(value) is not str:
        return
    kind = _value_type(param)
    text = value.strip()
    if kind in (int, float) and "_" in text:
        raise click_exceptions.BadParameter(
            f"expected a number without '_', got {show_value(value)}", param=param
        )
    if kind is int and _FLOAT.match(text) and not _INT.match(text):
        raise click_exceptions.BadParameter(
            f"expected a whole number, got {show_value(value)}", param=param
        )


class _PlainCoercion:
    """Typer's coercion of a parameter's value, without pydantic for plain values.

    Typer (0.29) coerces every value through a pydantic ``TypeAdapter`` built for the
    parameter; importing pydantic and building the adapters took about 0.1 s of a small
    run's 0.4 s. Plain values (see :func:`_plain_value`) are converted here, to what the
    adapter would give; any other value goes to typer's own coercion, error messages
    included.
    """

    def __init__(self, param: Any) -> None:
        self.param = param
        self.typer_own: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        _refuse_empty_path(param, value)
        plain = _plain_value(param, value)
        if plain is not _NOT_PLAIN:
            return plain
        _refuse_loose_number(param, value)
        if self.typer_own is None:
            from typer._coercion import build_runtime_param

            self.typer_own = build_runtime_param(param.type_descriptor)
        try:
            return self.typer_own.coerce(value, param=param, ctx=ctx)
        except click_exceptions.BadParameter as exc:
            if isinstance(value, str):  # pydantic's message does not show the value
                exc.message = f"{exc.message}, got {show_value(value)}"
            raise


class _PlainParams:
    """Parameters coerced by :class:`_PlainCoercion` (when typer coerces with pydantic),
    and an option that takes one value refused when given twice (Click keeps the last
    one and drops the others without a word: ``replay -P tiresias -P fifo`` ran fifo)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for param in self.params:  # type: ignore[attr-defined]
            if getattr(param, "_runtime_param", False) is None and hasattr(
                param, "type_descriptor"
            ):
                param._runtime_param = _PlainCoercion(param)
        if not ctx.resilient_parsing:
            _refuse_repeats(self.make_parser(ctx).parse_args(args=list(args))[2], ctx)  # type: ignore[attr-defined]
        return super().parse_args(ctx, args)  # type: ignore[misc, no-any-return]


def _refuse_repeats(order: list[Any], ctx: Any) -> None:
    """Refuse an option that takes one value given more than once (``order`` holds one
    entry per occurrence, as Click's parser returns it)."""
    seen: dict[str, int] = {}
    for param in order:
        single = getattr(param, "param_type_name", "") == "option" and not (
            param.multiple or getattr(param, "is_flag", False) or getattr(param, "count", False)
        )
        if single:
            seen[param.name] = seen.get(param.name, 0) + 1
            if seen[param.name] == 2:
                hint = (
                    "; 'gpusched compare' runs several policies" if param.name == "policy" else ""
                )
                raise click_exceptions.UsageError(
                    f"{'/'.join(param.opts)} is given more than once: give it once{hint}", ctx
                )


class _UsageError(click_exceptions.UsageError):
    """A usage mistake (an unknown option, a value of the wrong type, a missing argument)
    shown as one line, ``error: <what> (see 'gpusched CMD -h')``, exit code 2, like every
    other user mistake; Click's own form takes four lines (usage, hint, blank, error)."""

    def show(self, file: Any = None) -> None:
        hint = f" (see '{self.ctx.command_path} -h')" if self.ctx is not None else ""
        typer.echo(f"error: {show_text(self.format_message())}{hint}", err=True)


class _OneLineUsage:
    """Raise Click's usage errors as :class:`_UsageError` (not the help that a command
    given no arguments shows)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)  # type: ignore[misc]
        except click_exceptions.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except click_exceptions.UsageError as exc:
            raise _one_line(exc) from None


def _one_line(exc: click_exceptions.UsageError) -> click_exceptions.UsageError:
    if isinstance(exc, _UsageError | click_exceptions.NoArgsIsHelpError):
        return exc
    return _UsageError(exc.format_message(), exc.ctx)


class Command(_OneLineUsage, _PlainParams, _HelpFlagFalse, typer.core.TyperCommand):
    """A Typer command whose ``--help`` costs nothing when not given, whose plain option
    values skip pydantic, and whose usage errors take one line (``cls=Command``)."""


class Group(_OneLineUsage, _HelpFlagFalse, typer.core.TyperGroup):
    """A Typer group whose ``--help`` costs nothing when not given and whose usage errors
    take one line (``cls=Group``)."""


def os_error_message(exc: OSError) -> str:
    """One line for an operating-system error on a file the user named."""
    what = {
        errno.ENOENT: "file not found",
        errno.EISDIR: "is a folder, expected a file",
        errno.ENOTDIR: "a part of the path is not a folder",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENAMETOOLONG: "file name too long",
        errno.ENOSPC: "no space left on the device",
        errno.EROFS: "read-only file system",
        errno.EEXIST: "already exists",
    }.get(exc.errno or -1, exc.strerror or type(exc).__name__)
    name = exc.filename if exc.filename is not None else None
    return f"{what}: {show_name(name)}" if name is not None else what


def user_errors(fn: F) -> F:
    """Turn a user-caused failure into ``error: message`` on stderr and exit code 2.

    Handled: every :class:`GpuschedError` (bad input, a policy's failure) and every
    operating-system error (files the user named: missing, unreadable, a folder where a
    file is expected, names too long, a full disk). With ``--debug`` the traceback
    behind the error (for example, the one raised inside a user's policy) is printed too.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GpuschedError as exc:
            _debug_trace(exc)
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except BrokenPipeError:
            # the reader went away (``gpusched policies | head -3``): stop quietly, as
            # Python's docs recommend, without a second error when stdout is flushed
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(1) from None
        except OSError as exc:
            _debug_trace(exc)
            typer.echo(f"error: {os_error_message(exc)}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def check_written_trace(trace: Any, what: str) -> None:
    """Refuse to write a trace that gpusched could not read back (e.g. a load so small that
    arrivals run past the largest time a trace may hold), in one line."""
    from gpusched.errors import GpuschedError, TraceError
    from gpusched.io.trace import validate_trace

    try:
        validate_trace(trace)
    except TraceError as exc:
        import re

        first = re.sub(r"^.*?:\d+: ", "", exc.errors[0], count=1)
        more = f" (and {len(exc.errors) - 1:,} more)" if len(exc.errors) > 1 else ""
        raise GpuschedError(
            f"{what} with these options makes a trace gpusched cannot read: {first}{more}"
        ) from None


def _debug_trace(exc: BaseException) -> None:
    if not DEBUG:
        return
    cause = exc.__cause__ or exc
    typer.echo("".join(traceback.format_exception(cause)).rstrip(), err=True)


@contextmanager
def compile_notice(delay_s: float = 1.0) -> Iterator[None]:
    """Say on stderr that kernels are compiling when loading them takes more than ``delay_s``.

    The first run after an install (an empty Numba cache) compiles the simulation
    kernels for tens of seconds; without a word it looks like a hang.
    """
    timer = threading.Timer(
        delay_s,
        lambda: print(
            "compiling simulation kernels, first run only (several seconds)...",
            file=sys.stderr,
            flush=True,
        ),
    )
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def suggest_warm_up(result: Any) -> None:
    """After a run that went on the interpreted kernels because Numba's cache lacked the
    compiled ones, say what became of their compile in the background."""
    state = result.extra.get("background_compile")
    if state == "running":
        typer.echo(
            "note: the simulation kernels are compiling in the background (once per install); "
            "later runs will load them",
            err=True,
        )
    elif state is False:
        typer.echo(
            "note: compiling the simulation kernels failed, so runs stay on their interpreted "
            "copy; 'gpusched warm-up' compiles them in the foreground and shows the error",
            err=True,
        )


def require_out(
    out: str | None,
    *,
    events: bool = False,
    force: bool = False,
    fmt: str = "csv",
    plot: bool = False,
) -> None:
    """Refuse an option that acts only on ``--out`` when ``--out`` is not given (it would
    be dropped silently)."""
    if out is not None:
        return
    for flag, given, what in (
        ("--events", events, "writes events.csv into the run folder"),
        ("--force", force, "replaces the results in --out"),
        (f"--format {fmt}", fmt != "csv", "is the format of the run tables written to --out"),
        ("--plot", plot, "draws from the run folders"),
    ):
        if given:
            raise GpuschedError(f"{flag} {what}: give --out DIR")


def require_terminal(flag: str) -> None:
    """Refuse ``flag`` (e.g. ``--tui``) when standard output is not a terminal."""
    if not sys.stdout.isatty():
        raise GpuschedError(f"{flag} needs a terminal: standard output is not one")


def print_run_header(
    result: Any, summary: dict[str, Any], *, engine: bool = True, policy_notes: bool = True
) -> None:
    """The line above a results table: trace, cluster, jobs, slot (and engine), then notes.

    Notes include the trace's own (e.g. "0 jobs"), the policy's (``"<policy>: ..."``,
    left out without ``policy_notes``) and an early stop (``--until``, or quitting the
    TUI), with how many jobs were left unfinished.
    """
    from gpusched.io.resources import bundled_dir

    cluster = result.cluster
    mode = f", engine {result.mode}" if engine else ""
    source = Path(result.jobs.source)
    if source.parent == bundled_dir("traces"):
        trace = f"{source.name.split('.')[0]} (bundled)"
    else:
        trace = show_name(result.jobs.source)
    size = f"{cluster.n_gpus} GPUs"
    tasks = result.extra.get("tasks")
    if tasks is not None:
        size = f"{tasks['n_edge_workers']} edge workers"
        if any(g.unbounded for g in cluster.groups):
            size += " + an unbounded cloud"
        size += f"; {summary['n_tasks']:,} chunks"
    typer.echo(
        f"{trace} on {cluster.name} ({size}), "
        f"{summary['n_jobs']} jobs, slot {result.slot_s:g} s{mode}"
    )
    from gpusched.results.metrics import policy_notes as policy_said

    for note in [*result.jobs.notes, *(policy_said(result) if policy_notes else ())]:
        typer.echo(f"note: {show_text(note)}")
    if result.stopped_at is not None:
        typer.echo(
            f"note: stopped early at t={result.stopped_at:,.6g} s: "
            f"{summary['n_unfinished']} of {summary['n_jobs']} jobs unfinished "
            "(JCT and waiting cover finished jobs only)"
        )


def fmt(value: Any, key: str = "") -> str:
    """A compact human rendering of a summary value (``wall_s`` always with 2 decimals);
    integers grouped like floats (``908,238``)."""
    return column_format([value], key)(value)


def column_format(values: list[Any], key: str = "") -> Callable[[Any], str]:
    """One format for a table column, so that its numbers read alike: integers grouped
    (``908,238``); floats with the decimals their largest magnitude calls for (none from
    1e5, one from 1, else four significant digits), ``wall_s`` with two; None as ``-``."""
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    floats = [v for v in nums if isinstance(v, float) and math.isfinite(v)]
    top = max((abs(v) for v in floats), default=0.0)

    def one(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        if isinstance(value, int):
            return f"{value:,}"
        if not math.isfinite(value):
            return str(value)
        if key == "wall_s":
            return f"{value:.2f}"
        if top >= 1e5:
            return f"{value:,.0f}"
        if top >= 1:
            return f"{value:,.1f}"
        return f"{value:.4g}"

    return one


#: the columns of runs of jobs placed by roles (parameter-server jobs on the ledger)
SHOWN_ROLES = (
    ("n_finished", "finished"),
    ("n_unfinished", "unfinished"),
    ("n_rejected", "rejected"),
    ("total_utility", "utility"),
    ("median_training_slots", "median train"),
    ("avg_jct_s", "avg JCT s"),
    ("avg_wait_s", "avg wait s"),
    ("gpu_utilization", "GPU util"),
    ("utilization_cpus", "CPU util"),
    ("utilization_mem_gb", "mem util"),
    ("wall_s", "wall s"),
)


#: the columns of runs of jobs made of data chunks (edge-cloud)
SHOWN_TASKS = (
    ("n_finished", "finished"),
    ("avg_jct_s", "avg JCT s"),
    ("p95_jct_s", "p95 JCT s"),
    ("total_jct_s", "total JCT s"),
    ("jct_rate", "JCT rate"),
    ("avg_wait_s", "avg wait s"),
    ("makespan_s", "makespan s"),
    ("gpu_utilization", "edge util"),
    ("n_cloud_jobs", "cloud jobs"),
    ("n_preemptions", "preempt"),
    ("total_comm_s", "comm s"),
    ("wall_s", "wall s"),
)


def print_table(rows: list[dict[str, Any]], first: str) -> None:
    """Print ``rows`` (policy x metrics) as an aligned table."""
    roles = any("n_admitted" in r for r in rows)
    tasks = any("n_tasks" in r for r in rows)
    shown = list(SHOWN_ROLES if roles else SHOWN_TASKS if tasks else SHOWN)
    if tasks and not any("jct_rate" in r for r in rows):
        shown.remove(("jct_rate", "JCT rate"))
    if not roles and any(r.get("n_unfinished") for r in rows):
        shown.insert(1, ("n_unfinished", "unfinished"))
    if not roles and any(r.get("avg_slowdown_s") for r in rows):
        # time lost to running slower than at ideal placement (spread, shared), beside waiting
        shown.insert(
            shown.index(("avg_wait_s", "avg wait s")) + 1, ("avg_slowdown_s", "avg slow s")
        )
    head = [first] + [label for _, label in shown]
    formats = {k: column_format([r.get(k) for r in rows], k) for k, _ in shown}
    # labels come from the user (policy specs, a policy file's name): never raw control
    # characters on the terminal (errors.show_text)
    body = [
        [show_text(r[first])] + [show_text(formats[k](r.get(k))) for k, _ in shown] for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    line = "  ".join(
        h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths, strict=True))
    )
    typer.echo(line)
    typer.echo("-" * len(line))
    for b in body:
        typer.echo(
            "  ".join(
                x.rjust(w) if i else x.ljust(w)
                for i, (x, w) in enumerate(zip(b, widths, strict=True))
            )
        )


class Progress:
    """A one-line progress bar on stderr, shown only on a TTY and after ~1 s."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()
        self.shown = False

    def __call__(self, now: float, done: int, total: int) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < 1.0:
            return
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        self.show(f"[{bar:<30}] {done:,}/{total:,} jobs  t={now:,.0f} s")

    def show(self, text: str) -> None:
        """Draw ``LABEL TEXT  ELAPSED s`` over the line drawn last."""
        sys.stderr.write(f"\r{self.label} {text}  {time.perf_counter() - self.t0:.1f} s   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.shown = False


#: ``--format`` of the commands that write run folders (replay, compare, sweep)
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="Format of the run tables written to --out: csv (jobs.csv, timeline.csv, ...) "
        "or parquet (jobs.parquet, ...); summary.json and manifest.json either way",
    ),
]
