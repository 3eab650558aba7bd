"""The policy-facing API: the Policy protocol, actions, decisions and parameters.

A policy reads a read-only :class:`~gpusched.core.view.View` of the queue and the cluster
at each decision point and answers with a :class:`Decision`. It never mutates
state, owns the clock, prints or logs. The engine validates every action and stops
with a :class:`~gpusched.errors.PolicyError` naming policy, job and time.

A decision is any mix of

* ``order``: jobs in priority order; the engine gives them GPUs greedily with the
  default placement (consolidated first), optionally preempting running jobs left
  out (``preemptive``) or stopping at the first job that does not fit (``blocking``);
* explicit :class:`Start` (on given GPUs, or by default placement) and
  :class:`Preempt` actions, applied before the order; for jobs placed by roles on
  multi-resource machines (parameter-server jobs), :class:`Allocate` (start, resize or
  pause) and :class:`Reject`; for jobs made of tasks on typed workers (the edge-cloud
  family, :mod:`gpusched.core.tasks`), :class:`Start` of a task on one worker,
  :class:`Dispatch` (place a task without starting it) and :class:`HostPS`;
* ``wake_at``: call me again at this simulated time even if nothing happens
  (or, for timers that depend on the allocation just made, an optional
  ``wake(view, now)`` method the engine calls after applying the decision).

Built-in priority policies may also declare :class:`Fused`: the same priority rule
evaluated inside the Numba kernel, so a whole replay runs without crossing into
Python. ``decide`` stays the readable reference; tests check both paths agree.
"""

from __future__ import annotations

import inspect
import math
import re
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from gpusched.core.state import KEY_FIFO, KEY_LAS, KEY_SJF, KEY_SRTF
from gpusched.errors import GpuschedError, ParamError, PolicyError, did_you_mean, too_many_digits

__all__ = [
    "KEY_FIFO",
    "KEY_LAS",
    "KEY_SJF",
    "KEY_SRTF",
    "Allocate",
    "Cycles",
    "Decision",
    "Dispatch",
    "Fused",
    "HostPS",
    "Note",
    "Policy",
    "Preempt",
    "Range",
    "Reject",
    "Start",
    "call_policy",
    "check_params",
    "parse_levels",
    "parse_params",
    "policy_params",
]


@dataclass(frozen=True, slots=True)
class Start:
    """Start a queued job.

    Attributes
    ----------
    job
        Job index (as in the view).
    gpus
        GPU indices to run on (exactly the job's gang size), or None for the
        default consolidated placement. GPUs still held by jobs that are saving
        (preempted earlier, or by a :class:`Preempt` before this action) may be named
        with idle ones: the start is then *pending* (listed in ``view.pending``; the
        job stays queued) and the engine makes it at the first decision point at which
        those saves have ended, before calling the policy. Do not let anything else
        take those GPUs meanwhile (an ``order`` fill can: that is a PolicyError).
        On a cluster whose GPUs take several jobs (``gpu_capacity`` > 1) GPUs holding
        fewer jobs than that may be named: the job then shares them (its partners and
        it slow down by their interference ratios while they do).
    config
        A job configuration the performance model reads, e.g. the per-GPU sub-batch of
        a gradient-accumulating job (SJF-BSBF paper, eq. 7); None for the default. It
        stays the job's for its lifetime (later starts reuse it). The performance model
        validates it and the memory it needs beside its partners.
    reason
        Optional: why, in a few words, for the event log (``replay --events``; e.g.
        "shares with job 12: both finish sooner"). Every action that names a job takes one.

    For jobs made of tasks (``view.tasks``), ``job`` and ``gpus`` may also be two 1-D integer
    arrays of one length: task ``job[i]`` starts on worker ``gpus[i]``, as one Start each in
    that order (checked at once: the cheaper form for many tasks; no config or reason).
    """

    job: int | np.ndarray
    gpus: np.ndarray | None = None
    config: Any = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Preempt:
    """Preempt a job that holds GPUs (it saves, if it has a save time, then requeues).

    ``reason``: optional, for the event log, as :attr:`Start.reason`. For jobs made of tasks
    (``view.tasks``), ``job`` may also be a 1-D integer array: each task preempted, as one
    Preempt each in that order (checked at once; no reason).
    """

    job: int | np.ndarray
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Allocate:
    """Set a role job's workers and parameter servers per machine from now on.

    For jobs placed by roles through the resource ledger (``view.roles``; docs/architecture.md,
    "Multi-resource machines"). One action starts a queued job, resizes
    or moves a running one (its global batch stays fixed; only its speed changes, eq. 1 of
    the PD-ORS paper), or pauses it (all zeros: it returns to the queue, keeping its
    progress). The engine checks every machine's capacity of every resource, the job's
    worker limit (eq. 4) and that workers come with at least one parameter server.

    Attributes
    ----------
    job
        Job index.
    workers, ps
        Counts per machine (length ``view.n_machines``, non-negative integers).
    """

    job: int
    workers: np.ndarray
    ps: np.ndarray


@dataclass(frozen=True, slots=True)
class Reject:
    """Refuse a queued job that never ran: it ends with status *rejected* (reported as
    rejected, never as unfinished). ``reason``: optional, as :attr:`Start.reason`."""

    job: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """Say why a job is left as it is (no change to the run), for the event log.

    E.g. A-SRPT's "waits for a less-spread placement" or Lazer's "deferred 40 s". Kept
    only when the run keeps an event log (``replay --events``); otherwise ignored.
    """

    job: int
    reason: str


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Place a queued task that was never placed on a worker, without starting it.

    For jobs made of tasks (``view.tasks``; :mod:`gpusched.core.tasks`): the task is bound to
    ``worker`` for good, its data ships now, and it may be started there from ``now`` plus
    the server's transmission delay on (``view.tasks.ready``); the worker stays free for
    other tasks meanwhile. ``job`` and ``worker`` may also be two 1-D integer arrays of one
    length: every task dispatched to its worker, as one action each in that order (checked
    and applied at once: the cheaper form for many tasks).
    """

    job: int | np.ndarray
    worker: int | np.ndarray


@dataclass(frozen=True, slots=True)
class HostPS:
    """Put the parameter server of job ``job`` (a job made of tasks; an index of
    ``view.tasks``' jobs, not a task) on ``server`` from now on (eq. 2e-2g of the edge-cloud
    paper: one PS per running job, a free PS slot, in the cloud for a job wholly there)."""

    job: int
    server: int


@dataclass(slots=True)
class Decision:
    """A policy's answer at one decision point.

    Attributes
    ----------
    order
        Job indices in priority order for the engine's greedy fill, or None.
    preemptive
        Running jobs not in ``order`` (or not fitting after those before them) are
        preempted, as in the Tiresias simulator's re-pack.
    blocking
        Stop the fill at the first job that does not fit (strict FIFO).
    actions
        Explicit :class:`Start` / :class:`Preempt` / :class:`Allocate` / :class:`Reject`
        actions, applied first, in order.
    wake_at
        Simulated time (s) at which to decide again even if no event happens.
    """

    order: np.ndarray | None = None
    preemptive: bool = False
    blocking: bool = False
    actions: list[Start | Preempt | Allocate | Reject | Dispatch | HostPS | Note] = field(
        default_factory=list
    )
    wake_at: float | None = None


@dataclass(frozen=True, slots=True)
class Fused:
    """A priority rule the kernel evaluates itself (the fast path of a built-in policy).

    Attributes
    ----------
    key
        ``KEY_FIFO``, ``KEY_SJF``, ``KEY_SRTF``, ``KEY_LAS`` or ``KEY_LAZER``.
    preemptive, blocking
        As in :class:`Decision`.
    thresholds
        ``KEY_LAS`` level thresholds on attained service, GPU-s, ascending.
    period
        Re-pack only at multiples of this many seconds (the first decision point at or
        after each), as ``srtf-periodic`` does; between them a decision changes nothing
        and the kernel wakes itself for the next multiple. 0: at every decision point.
    starve
        ``KEY_LAS`` (preemptive): Tiresias' starvation rule with this knob K, exactly as
        ``policies/tiresias.py`` applies it (a queued job below level 0 that has waited
        K times its run time since its last promotion joins the back of level 0, and
        its service counts from then). 0: off.
    flags
        Switches of the rule (``FLAG_*`` of :mod:`gpusched.core.state`), e.g.
        ``FLAG_LOADING_IN_RQ`` for ``KEY_LAZER``.
    asks
        The rule stops mid-decision to ask the policy for a number: the engine calls
        ``policy.answer(view, now, job, arg)`` (a float back) and the kernel resumes the
        decision where it stopped (``KEY_LAZER``: the deferral X of an arrival whose
        preemption victims would save for up to ``arg`` s). False: the rule's default
        answer (``KEY_LAZER``: X = 0).
    """

    key: int
    preemptive: bool = False
    blocking: bool = False
    thresholds: tuple[float, ...] = ()
    period: float = 0.0
    starve: float = 0.0
    flags: int = 0
    asks: bool = False


class Cycles:
    """The decision cycles of a periodic scheduler: multiples of ``interval`` s.

    :meth:`due` says whether a cycle falls at decision time ``now``; :attr:`next` is the
    time of the next one (the ``wake_at`` a policy asks for between cycles). The first
    cycle is the first multiple at or after the first decision point; after a cycle the
    next is the multiple after ``now``. With ``restart_after``, a decision later than
    ``next + restart_after`` (the run went past a cycle without waking, e.g. while no
    job was present) restarts the count at the first multiple at or after ``now``.
    An interval too small for the clock's resolution at ``now`` (the multiple after
    ``now`` rounds to ``now``, or ``now / interval`` overflows) makes every decision
    point a cycle, as any interval below the slot does; the kernel's ``_cycle_due`` does
    the same.
    """

    def __init__(self, interval: float) -> None:
        self.interval = float(interval)
        #: time of the next cycle, s (None before the first decision)
        self.next: float | None = None

    def due(self, now: float, restart_after: float | None = None) -> bool:
        """Is a cycle due at ``now``? (Moves :attr:`next` on when it is.)"""
        if now > self.interval * 1e300:  # now / interval would overflow: every decision
            self.next = math.nextafter(now, math.inf)
            return True
        k = now / self.interval
        if self.next is None or (
            restart_after is not None and now > self.next + restart_after - 1e-9
        ):
            self.next = math.ceil(k - 1e-9) * self.interval
        if now < self.next - 1e-9:
            return False
        nxt = (math.floor(k + 1e-9) + 1.0) * self.interval
        self.next = nxt if nxt > now else math.nextafter(now, math.inf)
        return True

    def can_sleep(self, slot_s: float) -> bool:
        """Whether :meth:`sleep` keeps the cycles: ``interval`` is a whole number of slots
        (to 1e-9), so that every cycle falls on a decision point. (Otherwise a cycle runs at
        the slot boundary after it, and the one pending when an event comes depends on the
        skipped ones: interval 0.7 s on 1 s slots has a cycle at 1.4 that runs at 2.) The
        kernel's ``_decide_fused`` asks the same."""
        r = self.interval / slot_s
        return r >= 1.0 and abs(r - round(r)) <= 1e-9 * r

    def sleep(self) -> None:
        """No cycle can change anything until the next event (an arrival, a completion, a
        phase end): forget the next cycle, so that the policy asks for no wake-up. The next
        decision point finds the cycle again as the first multiple at or after it, which is
        the cycle the skipped ones would have led to where :meth:`can_sleep` (the kernel's
        ``_cycle_due`` does the same when its wake-up timer is infinite)."""
        self.next = None


@runtime_checkable
class Policy(Protocol):
    """What the engine needs of a policy.

    Hyperparameters are keyword-only ``__init__`` arguments with the paper's
    defaults and type annotations (``-p key=value`` is validated against them);
    ``rng`` is the only source of randomness.
    """

    name: ClassVar[str]
    #: reads ``view.job_duration`` / ``view.job_remaining`` (an oracle of run time)
    knows_duration: ClassVar[bool]
    #: never leaves a GPU idle while a queued job fits (checked by the property tests)
    work_conserving: ClassVar[bool]
    needs_predictor: ClassVar[bool]

    def decide(self, view: Any, now: float) -> Decision: ...

    # Optional: ``prepare(jobs, cluster) -> None``, called once before the run with the
    # job table (submission order; ``jobs.extra`` holds user/group/... columns) for
    # one-time setup such as training a predictor or reading job models.
    # Optional, for the TUI: ``priority_key(view, jobs) -> array`` (a column in the queue
    # view) and ``status_line(view, now) -> str`` (a line under the metrics).
    # Optional: ``wake(view, now) -> float | None``, called after the decision is
    # applied, for timers that depend on the allocation just made (e.g. the next
    # time a running job crosses a service threshold).
    # Optional: ``summary() -> dict``, called once when the run ends: the policy's own
    # summary.json tables, ``{name: {key: value}}`` (e.g. ``prediction``, the accuracy of
    # its job-length predictor); a value that is not a table, or a name the core's or a
    # job model's summary has, is a PolicyError (:func:`policy_summary`).
    # Optional: ``notes() -> list[str]``, called once when the run ends: what the reader
    # of the results must know (e.g. Dorm's MILPs stopped at a limit), printed under the
    # run's header as "note: <policy>: ..." and kept in manifest.json's notes.


def call_policy(
    policy_name: str, hook: str, now: float | None, fn: Any, *args: Any, **kwargs: Any
) -> Any:
    """Call a policy's ``hook`` and turn anything it raises into a :class:`PolicyError`.

    A policy is user code: an exception inside it (even ``SystemExit``) must not end
    gpusched with a traceback or, worse, a silent exit 0. The error names the policy,
    the hook and the simulated time; the policy's own traceback is the ``__cause__``
    (shown with ``gpusched --debug``). gpusched's own errors pass through unchanged.
    """
    try:
        return fn(*args, **kwargs)
    except GpuschedError:
        raise
    except (Exception, SystemExit) as exc:
        at = f" at t={now + 0.0:.6g} s" if now is not None and np.isfinite(now) else ""
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise PolicyError(
            f"policy '{policy_name}' failed in {hook}(){at}: {what} (--debug shows its traceback)"
        ) from exc


def policy_summary(policy_name: str, tables: Any) -> dict[str, dict[str, Any]]:
    """What a policy's ``summary()`` returned, checked: its own tables of summary.json,
    ``{name: {key: value, ...}}`` (A-SRPT's ``prediction``, Dorm's ``dorm``), or None.

    Each value is a table of its own so that, spread into a sweep's or ``compare``'s rows
    as ``name.key`` (:func:`gpusched.results.metrics.flat_summary`), it never takes the
    place of a fixed column (``status``, ``trace``, a parameter's column); a name
    gpusched's summary already has is refused where the summary is made
    (:func:`gpusched.results.metrics.summarize`).

    Raises
    ------
    PolicyError
        Not a dict, a name that is not a non-empty string, or a value that is not a dict.
    """
    where = f"policy '{policy_name}': summary()"
    if tables is None:
        return {}
    if not isinstance(tables, dict):
        raise PolicyError(
            f"{where} must return a dict of the policy's own tables ({{'name': {{...}}}}), "
            f"got {type(tables).__name__}"
        )
    for name, table in tables.items():
        if not isinstance(name, str) or not name.strip() or "." in name:
            raise PolicyError(
                f"{where} names a table {name!r}; expected a non-empty string without '.'"
            )
        if not isinstance(table, dict):
            raise PolicyError(
                f"{where} gives {name!r} a {type(table).__name__}; each value must be a "
                f"table of its own, e.g. {{{name!r}: {{'value': ...}}}} (it becomes the "
                f"columns {name}.value, ... of a sweep's results)"
            )
    return dict(tables)


def fused_spec(policy: Any) -> Fused | None:
    """The policy's fused fast path, if it declares one for its current parameters."""
    fn = getattr(policy, "fused", None)
    return fn() if callable(fn) else None


_SCALARS = {bool, int, float, str}


def parse_levels(policy: str, text: str, unit: str) -> tuple[float, ...]:
    """A LAS policy's ``thresholds`` parameter: comma-separated, positive, increasing, at
    least one (an empty value, e.g. an unset shell variable, would make one queue), none
    empty (``3250,,7200`` would drop a queue without a word).

    Raises
    ------
    ParamError
        Naming the policy, the parameter, its ``unit`` and the value given.
    """
    pieces = text.split(",")
    if any(x.strip() for x in pieces) and not all(x.strip() for x in pieces):
        # "3250,,7200" or "3250,": a threshold left out, not a queue fewer without a word
        raise ParamError(
            f"policy '{policy}': thresholds must be comma-separated {unit} with none left "
            f"empty, got '{text}'"
        )
    try:
        levels = tuple(float(x) for x in pieces if x.strip())
    except ValueError:
        raise ParamError(
            f"policy '{policy}': thresholds must be comma-separated {unit}, got '{text}'"
        ) from None
    if not levels:
        raise ParamError(
            f"policy '{policy}': thresholds must list at least one threshold ({unit}, "
            f"comma-separated), got '{text}'"
        )
    if not all(0 < t < float("inf") for t in levels) or any(
        b <= a for a, b in zip(levels, levels[1:], strict=False)
    ):
        raise ParamError(
            f"policy '{policy}': thresholds must be finite, positive and increasing, got '{text}'"
        )
    return levels


@dataclass(frozen=True, slots=True)
class Range:
    """The values a numeric policy parameter may take, declared beside it.

    A policy declares it in the parameter's annotation,
    ``starve: Annotated[float, Range(0, 1e6)] = 0.0``; :func:`check_params` (called by
    ``-p`` parsing and by :func:`gpusched.core.registry.make_policy`) refuses a value
    outside it (NaN included) with one line naming the policy, the parameter and the range.
    Every numeric parameter of a built-in policy declares one (a test checks it).

    Attributes
    ----------
    lo, hi
        The bounds, in the parameter's unit.
    lo_open, hi_open
        Exclude the bound (``Range(0, 1e6, lo_open=True)``: 0 < x <= 1e6).
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, x: object) -> bool:
        if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
            return False
        v = float(x) if not isinstance(x, int | np.integer) else x
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return bool(above and below)  # NaN: False

    def __str__(self) -> str:
        return (
            f"{'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        )


def policy_params(cls: type[Any]) -> dict[str, tuple[type, Any]]:
    """The hyperparameters a policy class declares: name -> (type, default).

    They are the keyword-only arguments of ``__init__`` other than ``rng``.
    """
    return {k: (tp, default) for k, (tp, default, _) in _declared(cls).items()}


def param_ranges(cls: type[Any]) -> dict[str, Range]:
    """The declared :class:`Range` of each parameter that has one."""
    return {k: r for k, (_, _, r) in _declared(cls).items() if r is not None}


def _declared(cls: type[Any]) -> dict[str, tuple[type, Any, Range | None]]:
    sig = inspect.signature(cls.__init__)
    hints = typing.get_type_hints(cls.__init__, include_extras=True)
    out: dict[str, tuple[type, Any, Range | None]] = {}
    for name, p in sig.parameters.items():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY or name == "rng":
            continue
        tp: Any = hints.get(name, type(p.default))
        rng: Range | None = None
        if typing.get_origin(tp) is typing.Annotated:
            rng = next((m for m in tp.__metadata__ if isinstance(m, Range)), None)
            tp = tp.__origin__
        if tp not in _SCALARS:
            tp = str
        out[name] = (tp, p.default, rng)
    return out


def check_params(cls: type[Any], params: dict[str, Any]) -> None:
    """Refuse a parameter value outside its declared :class:`Range`.

    Raises
    ------
    ParamError
        Naming the policy, the parameter, its range and the value given.
    """
    if not params:
        return  # (nothing to check: the annotations are not evaluated)
    ranges = param_ranges(cls)
    name = getattr(cls, "name", cls.__name__)
    for key, value in params.items():
        r = ranges.get(key)
        if r is not None and value not in r:
            raise ParamError(f"policy '{name}': {key} must be a number in {r}, got {value!r}")


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?inf(inity)?", re.I)


def _convert(policy: str, key: str, raw: str, tp: type) -> Any:
    """Parse one ``-p`` value strictly: no NaN, no ``1_000``, no silent coercion."""
    text = raw.strip()
    ok = True
    value: Any = text
    if tp is bool:
        low = text.lower()
        ok = low in ("1", "true", "yes", "on", "0", "false", "no", "off")
        value = low in ("1", "true", "yes", "on")
    elif tp is int:
        ok = _INT.fullmatch(text) is not None
        long = too_many_digits(text) if ok else None
        if long is not None:
            raise ParamError(f"policy '{policy}': parameter '{key}' expects {long}")
        value = int(text) if ok else None
    elif tp is float:
        ok = _FLOAT.fullmatch(text) is not None
        value = float(text) if ok else None
    if not ok:
        expected = {bool: "true or false", int: "an integer", float: "a number (NaN is not one)"}
        raise ParamError(
            f"policy '{policy}': parameter '{key}' expects {expected.get(tp, tp.__name__)}, "
            f"got '{raw}'"
        )
    return value


def parse_params(cls: type, pairs: list[str] | dict[str, str]) -> dict[str, Any]:
    """Validate ``key=value`` strings against what policy ``cls`` declares.

    Parameters
    ----------
    cls
        A policy class.
    pairs
        ``["key=value", ...]`` as given to ``-p``, or an already split mapping.

    Raises
    ------
    ParamError
        Unknown key, missing ``=``, or a value of the wrong type.
    """
    if not pairs:
        return {}  # (the annotations are not evaluated: one imports numpy.random)
    declared = policy_params(cls)
    name = getattr(cls, "name", cls.__name__)
    items: list[tuple[str, str]] = []
    if isinstance(pairs, dict):
        items = [(k, str(v)) for k, v in pairs.items()]
    else:
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise ParamError(
                    f"policy '{name}': parameter '{pair}' is not of the form key=value"
                )
            items.append((key.strip(), value))
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            raise ParamError(f"policy '{name}': parameter '{key}' is given twice; give it once")
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            hint = did_you_mean(key, declared)
            raise ParamError(f"policy '{name}' has no parameter '{key}'{hint} (it takes: {known})")
        out[key] = _convert(name, key, value, declared[key][0])
    check_params(cls, out)
    return out
