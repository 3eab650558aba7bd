"""Job models as the core sees them: hooks found by name, never imported by the core.

A *job model* knows what the core cannot: how long a job described by its model and
iterations runs, what it costs to load and to pause-and-save, and how fast it runs where
it is placed (docs/architecture.md, "Performance models"). The core (:mod:`gpusched.core.jobs`,
:mod:`gpusched.experiments.run`) asks the job models through three optional hooks and imports none of
them, so a paper family's machinery stays in its own subpackage:

``durations(trace, work, need) -> (work, notes)``
    Exclusive run times (s) for the rows ``need`` (a boolean mask) that give no
    ``duration``; ``notes`` are lines ``replay`` prints. Raises
    :class:`~gpusched.errors.TraceError` naming the line for a row it cannot serve.
    A job model that knows only some models says which rows are its own with
    ``owns(trace) -> mask``; it is asked for those rows first, and the first job model
    without ``owns`` (the catalogue) serves the rest.
``overheads(jobs) -> (load_s, save_s) | None``
    Per-job load and pause-and-save times (s) of the job table, NaN where the model gives
    none (the run's ``--load-s``/``--save-s`` then apply).
``perf(jobs, cluster) -> perf | None``
    A placement-aware rate model for :class:`~gpusched.core.engine.Engine` (``rate(job, gpus)``),
    or None when the jobs are not this model's.
``roles(jobs, cluster) -> roles | None``
    For jobs placed by roles on multi-resource machines (``num_gpus`` 0): their demands
    per worker and per parameter server and their rate on given counts per machine
    (:mod:`gpusched.core.ledger`), or None when the table has none of this model's.
``tasks(jobs, cluster) -> tasks | None``
    For jobs made of tasks on typed workers (data chunks): the tasks, one row each, with
    their jobs and rates (:mod:`gpusched.core.tasks`), or None when the table has none.
``summary(result) -> dict | None``
    A family's own keys for summary.json (e.g. total utility): the one extension point of
    the summary, so the core's list stays fixed.
``adopt(trace) -> trace``
    With a ``name``: the rows this model can serve, marked as its own (so its ``owns``
    claims them). A policy that declares ``job_model = NAME`` has the trace adopted by the
    model of that name before the jobs are prepared, and may give that model's ``perf``
    keyword options (``job_model_options = {NAME: {...}}``); e.g. Pollux runs the six
    applications of the sharing workloads under its goodput model.

The built-in job models are the modules of :mod:`gpusched.jobmodels` that define
``JOB_MODEL``; a package adds one through the entry-point group ``gpusched.jobmodels``
(``name = "module:object"``). They are asked in that order (built-ins by module name,
then entry points by name); for ``durations`` and ``perf`` the first that answers wins,
for ``overheads`` each fills what the earlier ones left as NaN.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "adopt",
    "duration_problem",
    "durations",
    "job_models",
    "overheads",
    "perf",
    "roles",
    "summaries",
    "tasks",
]

_BUILTIN = "gpusched.jobmodels"
_GROUP = "gpusched.jobmodels"


@functools.cache
def job_models() -> tuple[Any, ...]:
    """Every job model: the built-in ones, then those of the entry-point group."""
    pkg = importlib.import_module(_BUILTIN)  # by name: the core does not import families
    found: list[Any] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        model = getattr(importlib.import_module(f"{_BUILTIN}.{info.name}"), "JOB_MODEL", None)
        if model is not None:
            found.append(model)
    from gpusched.core.plugins import entry_points

    for ep in sorted(entry_points(_GROUP), key=lambda e: e.name):
        found.append(ep.load())
    return tuple(found)


def _hooks(name: str) -> list[Callable[..., Any]]:
    return [h for m in job_models() if (h := getattr(m, name, None)) is not None]


def duration_problem(iterations: float, model: str, n_gpus: int, work: float) -> str | None:
    """Why a derived duration is out of the trace's bounds (for a ``durations`` hook's
    line-numbered error), or None when it is within them."""
    from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

    if MIN_DURATION_S <= work <= MAX_TIME_S:
        return None
    return (
        f"column 'iterations': {float(iterations)!r} iterations of '{model}' on {n_gpus} "
        f"GPU(s) take {float(work)!r} s; expected a duration in "
        f"[{MIN_DURATION_S:g}, {MAX_TIME_S:g}] s"
    )


def durations(trace: Any, work: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Fill ``work[need]`` from the first job model that derives durations.

    Raises
    ------
    TraceError
        No job model derives durations, or the one that does cannot serve a row.
    """
    from gpusched.errors import TraceError, show_name

    notes: list[str] = []
    left = need.copy()
    general = None
    for model in job_models():
        hook = getattr(model, "durations", None)
        owns = getattr(model, "owns", None)
        if hook is None:
            continue
        if owns is None:
            general = general or hook
            continue
        mine = left & owns(trace)
        if mine.any():
            work, more = hook(trace, work, mine)
            notes += more
            left &= ~mine
    if not left.any():
        return work, notes
    if general is not None:
        work, more = general(trace, work, left)
        return work, notes + more
    first = int(np.flatnonzero(left)[0])
    raise TraceError(
        f"{show_name(trace.source)}:{int(trace.line[first])}: column 'duration': missing, "
        "and no job model derives it from 'iterations' and 'model'"
    )


def overheads(jobs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-job (load_s, save_s) from the job models, NaN where none gives a value."""
    load = np.full(len(jobs), np.nan)
    save = np.full(len(jobs), np.nan)
    for hook in _hooks("overheads"):
        got = hook(jobs)
        if got is None:
            continue
        load = np.where(np.isnan(load), got[0], load)
        save = np.where(np.isnan(save), got[1], save)
    return load, save


def perf(jobs: Any, cluster: Any, options: dict[str, dict[str, Any]] | None = None) -> Any:
    """The first job model's performance model for these jobs, or None (rate 1 everywhere).

    ``options``: keyword options per job model name, for that model's ``perf`` hook.
    """
    for m in job_models():
        hook = getattr(m, "perf", None)
        if hook is None:
            continue
        given = (options or {}).get(getattr(m, "name", ""), {})
        model = hook(jobs, cluster, **given)
        if model is not None:
            return model
    return None


def adopt(trace: Any, name: str) -> Any:
    """``trace`` as the job model ``name`` adopts it (its ``adopt`` hook).

    Raises
    ------
    GpuschedError
        No job model of that name can adopt rows.
    """
    from gpusched.errors import GpuschedError

    for m in job_models():
        if getattr(m, "name", None) == name and hasattr(m, "adopt"):
            return m.adopt(trace)
    raise GpuschedError(f"no job model named {name!r} adopts a trace's rows")


def roles(jobs: Any, cluster: Any) -> Any:
    """The first job model's roles for jobs placed by roles, or None (a GPU-index run)."""
    for hook in _hooks("roles"):
        got = hook(jobs, cluster)
        if got is not None:
            return got
    return None


def tasks(jobs: Any, cluster: Any) -> Any:
    """The first job model's tasks for jobs made of tasks, or None."""
    for hook in _hooks("tasks"):
        got = hook(jobs, cluster)
        if got is not None:
            return got
    return None


def summaries(result: Any) -> dict[str, Any]:
    """Every job model's summary keys for a run (later models cannot replace earlier keys)."""
    out: dict[str, Any] = {}
    for hook in _hooks("summary"):
        for key, value in (hook(result) or {}).items():
            out.setdefault(key, value)
    return out
