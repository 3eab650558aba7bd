"""Explain a finished run: one job's life in sentences, and the jobs that lost the most.

Reads a run folder (``replay --out DIR``): jobs.csv always, events.csv when the run kept
the event log (``--events``, :mod:`gpusched.core.events`). From the log it rebuilds each
job's *stints*, the stretches during which it held GPUs (start, end of the load,
preemption, end of the save or completion), and who took the GPUs a preemption freed:
the jobs that started first on any of them after they were released.

``gpusched explain DIR JOB`` prints :func:`job_story`; ``gpusched explain DIR --worst N``
prints :func:`worst`, the N jobs with the most time lost (waiting plus slowdown), one
line each.
"""

from __future__ import annotations

import bisect
import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusched.core.events import EVENT_COLUMNS, EVENT_KINDS, format_gpus, parse_gpus
from gpusched.errors import (
    GpuschedError,
    did_you_mean,
    field_error,
    show_name,
    show_text,
    show_value,
)
from gpusched.io.cluster import MAX_GPUS
from gpusched.io.runfolder import MANIFEST, open_run
from gpusched.io.tables import (
    NON_NEGATIVE,
    check_unique_columns,
    is_parquet,
    parquet_rows,
    seconds_expected,
)
from gpusched.results.units import fmt_s, fmt_slot, fmt_slots, fmt_t

__all__ = ["Run", "Stint", "job_story", "read_run", "stints", "worst"]


@dataclass
class Stint:
    """One stretch of a job holding GPUs."""

    job: str
    gpus: list[int]
    start: float
    end: float = math.nan  #: released (save ended, finished, or the run ended)
    loaded: float | None = None  #: when its load ended (None: no load, or cut short)
    preempt: float | None = None
    how: str = "running"  #: finish, released, futile, saving or running (at the run's end)
    reasons: list[str] = field(default_factory=list)


@dataclass
class Run:
    """A run folder's tables (columns as lists of strings), each checked against the
    manifest and field by field when read (:func:`read_run`)."""

    folder: Path
    jobs: dict[str, list[str]]
    events: dict[str, list[str]] | None
    manifest: dict[str, Any]
    tasks: dict[str, list[str]] | None = None  #: tasks.csv (jobs made of data chunks)
    files: dict[str, Path] = field(default_factory=dict)  #: the file read for each table
    n_gpus: int | None = None  #: GPUs (workers) of the run's cluster, from its manifest

    @property
    def in_slots(self) -> bool:
        """The family counts time in slots (PD-ORS's jobs placed by roles, the edge-cloud
        paper's jobs of chunks: one slot is one simulated second; its trace is in slots)."""
        return "status" in self.jobs or "chunks" in self.jobs or self.tasks is not None

    def t(self, t: float) -> str:
        """A time of the run in its family's unit (``1,234 s`` or ``slot 89``)."""
        return fmt_slot(t) if self.in_slots else fmt_t(t)

    def d(self, x: float | None) -> str:
        """A duration in its family's unit (``12m05s`` or ``89 slots``)."""
        return fmt_slots(x) if self.in_slots else fmt_s(x)

    def file(self, stem: str) -> Path:
        """The file table ``stem`` was read from (``jobs.csv`` or ``jobs.parquet``)."""
        return self.files.get(stem, self.folder / f"{stem}.csv")

    def row(self, job: str) -> dict[str, str]:
        """jobs.csv's row of ``job`` (a GpuschedError naming the closest id if unknown)."""
        ids = self.jobs["job_id"]
        try:
            i = ids.index(job)
        except ValueError:
            hint = show_text(did_you_mean(job, ids))
            raise GpuschedError(
                f"{show_name(self.file('jobs'))}: no job {show_value(job)}{hint}"
            ) from None
        return {k: v[i] for k, v in self.jobs.items()}


#: jobs.csv columns that hold seconds (empty for an unfinished job)
_JOB_TIMES = (
    "submit",
    "first_start",
    "finish",
    "jct",
    "wait_s",
    "load_s",
    "train_s",
    "save_s",
    "slowdown_s",
    "duration",
    "shared_s",
    "futile_s",
)
#: jobs.csv columns that hold counts
_JOB_COUNTS = ("gpus", "preemptions", "n_futile", "chunks")
#: a ``gpus`` field: GPU indices as ranges, ``0-3 8``
_GPUS = re.compile(r"\d{1,12}(?:-\d{1,12})?(?: \d{1,12}(?:-\d{1,12})?)*")


def _read_columns(
    path: Path,
    need: tuple[str, ...],
    numeric: tuple[str, ...] = (),
    counts: tuple[str, ...] = (),
) -> dict[str, list[str]]:
    """A CSV (or Parquet) table's columns as lists of strings; the ``numeric`` ones must
    hold finite numbers (or nothing), the ``counts`` whole numbers >= 0. Errors name the
    file, line and column (a Parquet table's row ``i`` counts as line ``i + 2``, as in its
    CSV twin)."""
    try:
        return _read_checked(path, need, numeric, counts)
    except UnicodeDecodeError:
        raise GpuschedError(f"{show_name(path)}: not a text (UTF-8) CSV file") from None
    except csv.Error as e:
        raise GpuschedError(f"{show_name(path)}: not a readable CSV file ({e})") from None


def _read_checked(
    path: Path, need: tuple[str, ...], numeric: tuple[str, ...], counts: tuple[str, ...]
) -> dict[str, list[str]]:
    if is_parquet(path):
        # a NaN that is not null is refused as "nan" in a CSV is (gpusched writes null)
        return _check_rows(path, parquet_rows(path, nan="nan"), need, numeric, counts)
    with path.open(newline="", encoding="utf-8") as fh:
        return _check_rows(path, csv.reader(fh), need, numeric, counts)


def _check_rows(
    path: Path,
    reader: Iterator[list[str]],
    need: tuple[str, ...],
    numeric: tuple[str, ...],
    counts: tuple[str, ...],
) -> dict[str, list[str]]:
    header = next(reader, None)
    if header is None:
        raise GpuschedError(f"{show_name(path)}: empty file, expected a header line")
    missing = [c for c in need if c not in header]
    if missing:
        raise GpuschedError(
            f"{show_name(path)}:1: missing column(s) {', '.join(missing)}; "
            "is this a gpusched run folder?"
        )
    check_unique_columns(path, header)
    cols: list[list[str]] = [[] for _ in header]
    for n, rec in enumerate(reader, start=2):
        if len(rec) != len(header):
            raise GpuschedError(
                f"{show_name(path)}:{n}: expected {len(header)} fields, got {len(rec)}"
            )
        for c, v in zip(cols, rec, strict=True):
            c.append(v)
    out = dict(zip(header, cols, strict=True))
    for name in numeric:
        for n, v in enumerate(out.get(name, ()), start=2):
            if v and (not _finite(v) or (name in NON_NEGATIVE and float(v) < 0)):
                raise field_error(path, n, name, seconds_expected(name), v)
    for name in counts:
        for n, v in enumerate(out.get(name, ()), start=2):
            if not (v.isascii() and v.isdigit() and len(v) <= 12):
                raise field_error(path, n, name, "a whole number >= 0", v)
    return out


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def manifest_servers(manifest: dict[str, Any], path: Path) -> list[int] | None:
    """GPUs (workers) of each server of the run's cluster, from its manifest (None when
    the manifest records no cluster).

    Raises
    ------
    GpuschedError
        A ``cluster.servers`` that is not a list of servers with whole ``count`` and
        ``gpus`` >= 0, or more GPUs than any cluster gpusched simulates.
    """
    where = show_name(path)
    cluster = manifest.get("cluster")
    if cluster is None:
        return None
    servers = cluster.get("servers") if isinstance(cluster, dict) else None
    if not isinstance(servers, list) or not servers:
        raise GpuschedError(
            f"{where}: field 'cluster.servers' expected a list of servers with 'count' and 'gpus'"
        )
    per: list[int] = []
    total = 0
    for i, server in enumerate(servers):
        for key in ("count", "gpus"):
            value = server.get(key) if isinstance(server, dict) else None
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise GpuschedError(
                    f"{where}: field 'cluster.servers[{i}].{key}' expected a whole number "
                    f">= 0, got {show_text(repr(value))}"
                )
        total += server["count"] * server["gpus"]
        if total > MAX_GPUS:
            raise GpuschedError(
                f"{where}: field 'cluster.servers' expected at most {MAX_GPUS:,} GPUs "
                "in all (a cluster gpusched simulates)"
            )
        per.extend([server["gpus"]] * server["count"])
    return per


def _check_events(path: Path, ev: dict[str, list[str]], n_gpus: int | None) -> None:
    """Every field of events.csv that explain and plot parse: times (a number, in time
    order), kinds, and GPU lists (ranges of GPUs the cluster has)."""
    last = -math.inf
    top = MAX_GPUS if n_gpus is None else n_gpus
    kinds = set(EVENT_KINDS)
    for n, (t, kind, gpus) in enumerate(
        zip(ev["time_s"], ev["event"], ev["gpus"], strict=True), start=2
    ):
        try:
            value = float(t)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise field_error(path, n, "time_s", "a number of seconds", t)
        if value < last:
            raise field_error(path, n, "time_s", f"a time >= the row before's ({last!r})", t)
        last = value
        if kind not in kinds:
            raise field_error(path, n, "event", "one of " + ", ".join(EVENT_KINDS), kind)
        if gpus and not _gpus_ok(gpus, top):
            raise field_error(
                path, n, "gpus", f"GPU indices 0 to {top - 1} as ranges (e.g. '0-3 8')", gpus
            )


def _gpus_ok(text: str, n_gpus: int) -> bool:
    """Whether ``text`` is GPU ranges (``0-3 8``) within ``n_gpus``, each rising."""
    if not _GPUS.fullmatch(text):
        return False
    for part in text.split(" "):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if b < a or b >= n_gpus:
            return False
    return True


def read_run(folder: str | Path) -> Run:
    """Read a run folder written by ``replay --out`` (events optional), its tables as CSV
    (jobs.csv, ...) or Parquet (jobs.parquet, ...).

    Every table is checked against manifest.json (:func:`gpusched.io.runfolder.open_run`:
    the file it records, with its hash and row count) and every field explain and plot
    parse is checked before it is trusted, each with a one-line error naming the file,
    line and column.
    """
    rf = open_run(folder)
    man = rf.folder / MANIFEST
    servers = manifest_servers(rf.manifest, man)
    n_gpus = None if servers is None else sum(servers)
    files: dict[str, Path] = {}

    def table(stem: str, *args: Any, required: bool = False) -> dict[str, list[str]] | None:
        path = rf.table(stem, required=required)
        if path is None:
            return None
        cols = _read_columns(path, *args)
        rf.check_rows(path, len(cols[args[0][0]]))
        files[stem] = path
        return cols

    jobs = table(
        "jobs", ("job_id", "submit", "jct", "wait_s"), _JOB_TIMES, _JOB_COUNTS, required=True
    )
    assert jobs is not None
    seen: set[str] = set()
    for n, job in enumerate(jobs["job_id"], start=2):
        if job in seen:
            raise field_error(files["jobs"], n, "job_id", "each job once", job)
        seen.add(job)
    events = table("events", EVENT_COLUMNS)
    if events is not None:
        _check_events(files["events"], events, n_gpus)
    tasks = table("tasks", ("job_id", "job", "worker"))
    if tasks is not None:
        for n, (job, worker) in enumerate(zip(tasks["job"], tasks["worker"], strict=True), start=2):
            if job not in seen:
                raise field_error(files["tasks"], n, "job", "a job of jobs.csv", job)
            # -1: a task never placed (a run stopped by --until before it started)
            ok = worker == "-1" or (worker.isascii() and worker.isdigit() and len(worker) <= 12)
            if not ok or (n_gpus is not None and worker != "-1" and int(worker) >= n_gpus):
                workers = "a worker >= 0" if n_gpus is None else f"a worker 0 to {n_gpus - 1}"
                raise field_error(
                    files["tasks"], n, "worker", f"{workers}, or -1 (never placed)", worker
                )
    return Run(rf.folder, jobs, events, rf.manifest, tasks, files, n_gpus)


def stints(
    events: dict[str, list[str]], end_s: float, jobs: str | set[str] | None = None
) -> list[Stint]:
    """Every stretch during which a job held GPUs (only those of ``jobs``, one id or a set,
    if given), in start order."""
    open_: dict[str, Stint] = {}
    out: list[Stint] = []
    only = {jobs} if isinstance(jobs, str) else jobs
    cols = [events[c] for c in ("time_s", "event", "job_id", "gpus", "detail")]
    for t_s, ev, j, gpus, detail in zip(*cols, strict=True):
        if only is not None and j not in only:
            continue
        t = float(t_s)
        if ev == "start":
            s = Stint(j, parse_gpus(gpus), t)
            if detail:
                s.reasons.append(f"started: {detail}")
            open_[j] = s
            out.append(s)
            continue
        s_open = open_.get(j)
        if s_open is None:
            continue
        if ev == "loaded":
            s_open.loaded = t
        elif ev == "preempt":
            how, _, why = detail.partition("; ")
            s_open.preempt, s_open.how = t, how
            if why:
                s_open.reasons.append(f"preempted: {why}")
            if how != "saving":
                s_open.end = t
                del open_[j]
        elif ev in ("requeue", "finish"):
            s_open.end = t
            if ev == "finish":
                s_open.how = "finish"
            del open_[j]
    for s in open_.values():
        s.end = end_s
    return out


def takers(
    events: dict[str, list[str]], stint: Stint, times: list[float]
) -> tuple[float, list[str]]:
    """Who first started on any of the GPUs ``stint`` released, and when (inf, [] if nobody).

    ``times`` is the log's ``time_s`` column as numbers (parsed once by the caller).
    """
    best = math.inf
    who: list[str] = []
    mine = set(stint.gpus)
    lo = bisect.bisect_left(times, stint.end)
    for i in range(lo, len(times)):
        t = times[i]
        if t > best:
            break
        if events["event"][i] != "start" or events["job_id"][i] == stint.job:
            continue
        if mine.intersection(parse_gpus(events["gpus"][i])):
            best = t
            who.append(events["job_id"][i])
    return best, who


def _f(text: str) -> float:
    return float(text) if text else math.nan


def run_end(run: Run) -> float:
    """When the run stopped: its manifest's ``stopped_at_s`` (a run cut by ``--until``
    holds GPUs to then, after its last event), else its last event or finish time."""
    ev = run.events
    last = (
        float(ev["time_s"][-1])
        if ev and ev["time_s"]
        else max((_f(x) for x in run.jobs.get("finish", []) if x), default=0.0)
    )
    stopped = _stopped_at(run)
    return stopped if stopped is not None and stopped > last else last


def _stopped_at(run: Run) -> float | None:
    """The manifest's ``stopped_at_s``, when it is a finite number (else None)."""
    stopped = run.manifest.get("stopped_at_s") if isinstance(run.manifest, dict) else None
    if isinstance(stopped, int | float) and not isinstance(stopped, bool):
        return float(stopped) if math.isfinite(stopped) else None
    return None


#: rows of the log told as they are, in these words
_OTHER = {
    "reject": "rejected",
    "note": "policy's note",
    "dispatch": "placed",
    "allocate": "allocated",
    "config": "configured",
}


def job_story(run: Run, job: str) -> list[str]:
    """``job``'s life in plain sentences, one per line (control characters of job ids,
    the policy's reasons and names shown escaped: :func:`gpusched.errors.show_text`)."""
    return [show_text(line) for line in _story(run, job)]


def _story(run: Run, job: str) -> list[str]:
    row = run.row(job)
    gpus = row.get("gpus", "")
    head = f"job {job}"
    if gpus and gpus != "0":
        head += f" ({gpus} GPU{'s' if gpus != '1' else ''}"
        dur = _f(row.get("duration", ""))
        head += f", {run.d(dur)} of work alone)" if math.isfinite(dur) else ")"
    if run.manifest.get("policy"):
        head += f" under {run.manifest['policy']}"
    lines = [head + ":"]
    submit = _f(row["submit"])
    stopped = _stopped_at(run)
    if stopped is not None and submit > stopped:
        # a run cut by --until before the job's arrival (the manifest says when it stopped)
        lines.append(
            f"  {run.t(submit):>12}  would arrive, after the run ended at {run.t(stopped)}"
        )
    else:
        lines.append(f"  {run.t(submit):>12}  arrived")
    if run.events is None:
        lines.append(
            "  (no events.csv in this run folder: run replay with --events for the job's "
            "starts, preemptions and who took its GPUs)"
        )
    else:
        lines.extend(_history(run, job, submit))
    if run.events is not None and run.tasks is not None:
        lines.extend(_chunk_lines(run, job))
    jct = _f(row["jct"])
    if math.isfinite(jct):
        parts = [
            f"{name} {run.d(_f(row[col]))}"
            for name, col in (
                ("wait", "wait_s"),
                ("load", "load_s"),
                ("train", "train_s"),
                ("save", "save_s"),
            )  # fmt: skip
            if col in row and row[col]
        ]
        lines.append(f"  JCT {run.d(jct)} = " + " + ".join(parts))
        slow = _f(row.get("slowdown_s", ""))
        if math.isfinite(slow) and slow > 0:
            lines.append(f"  of its training, {run.d(slow)} was slowdown (slower than alone)")
    else:
        lines.append("  no JCT: " + _no_jct(run, job, row))
    return lines


def _no_jct(run: Run, job: str, row: dict[str, str]) -> str:
    """Why a job has no JCT: rejected (when, and the policy's reason) or unfinished."""
    reject = None
    if run.events is not None:
        cols = [run.events[c] for c in ("time_s", "event", "job_id", "detail")]
        reject = next(
            ((float(t), d) for t, e, j, d in zip(*cols, strict=True) if e == "reject" and j == job),
            None,
        )
    if reject is not None:
        why = f": {reject[1]}" if reject[1] else " (the policy gave no reason)"
        return f"rejected by the policy at {run.t(reject[0])}{why}"
    if row.get("status") == "rejected":
        return "rejected by the policy (replay with --events for when and why)"
    stop = _stopped_at(run)
    when = f" at {run.t(stop)}" if stop is not None else ""
    return f"unfinished when the run ended{when}"


def _history(run: Run, job: str, submit: float) -> list[str]:
    """The job's events as lines, in time order (a line's explanations right after it)."""
    assert run.events is not None
    timed: list[tuple[float, str]] = []  # (time, text); sorted stably by time

    def say(t: float, text: str, *why: str) -> None:
        timed.append((t, f"  {run.t(t):>12}  {text}"))
        timed.extend((t, f"  {'':>12}  {w}") for w in why)

    queued_since = submit
    times: list[float] | None = None  # the log's times as numbers, once a preemption needs them
    for s in stints(run.events, run_end(run), job):
        plural = "s" if len(s.gpus) > 1 else ""
        where = f" on GPU{plural} {format_gpus(s.gpus)}" if s.gpus else ""
        whys = [f"why: {w[9:]}" for w in s.reasons if w.startswith("started: ")]
        say(s.start, f"started{where} after waiting {run.d(s.start - queued_since)}", *whys)
        if s.loaded is not None:
            say(s.loaded, f"loaded ({run.d(s.loaded - s.start)})")
        if s.preempt is not None:
            trained = s.preempt - (s.loaded if s.loaded is not None else s.start)
            what = {
                "futile": "before it trained anything (futile: its load was wasted)",
                "saving": f"after training {run.d(trained)}; saving until {run.t(s.end)}",
            }.get(s.how, f"after training {run.d(trained)}")
            whys = [f"why: {w[11:]}" for w in s.reasons if w.startswith("preempted: ")]
            if times is None:
                times = [float(x) for x in run.events["time_s"]]
            t, who = takers(run.events, s, times)
            if who:
                whys.append(f"its GPUs went to {', '.join(who)} at {run.t(t)}")
            say(s.preempt, f"preempted {what}", *whys)
            queued_since = s.end
        elif s.how == "finish":
            say(s.end, "finished")
        else:
            say(s.end, "still running when the run ended")
    cols = [run.events[c] for c in ("time_s", "event", "job_id", "gpus", "detail")]
    for t_s, ev, j, gpus, detail in zip(*cols, strict=True):
        if j != job:
            continue
        if ev in ("share", "unshare"):
            n = "s" if " " in gpus or "-" in gpus else ""
            verb = "shares" if ev == "share" else "stops sharing"
            say(float(t_s), f"{verb} GPU{n} {gpus} {detail}")
        elif ev in _OTHER:
            say(float(t_s), _OTHER[ev] + (f": {detail}" if detail else ""))
    timed.sort(key=lambda x: x[0])  # stable: a line's explanations stay after it
    return [text for _, text in timed]


def _chunk_lines(run: Run, job: str, most: int = 40) -> list[str]:
    """One line per chunk of a job made of tasks: its worker, and when it ran."""
    assert run.events is not None and run.tasks is not None
    tk = run.tasks
    mine = [i for i, p in enumerate(tk["job"]) if p == job]
    by_task: dict[str, list[Stint]] = {}
    for s in stints(run.events, run_end(run), {tk["job_id"][i] for i in mine}):
        by_task.setdefault(s.job, []).append(s)
    out = [f"  {len(mine)} chunks:"]
    for i in mine[:most]:
        tid = tk["job_id"][i]
        tier = "cloud" if tk.get("cloud", ["0"] * len(tk["job"]))[i] in ("1", "True") else "edge"
        runs = ", ".join(
            f"{run.t(s.start)} to {run.t(s.end)}"
            + (" (preempted; postponed on its worker)" if s.preempt is not None else "")
            for s in by_task.get(tid, [])
        )
        where = "no worker yet" if tk["worker"][i] == "-1" else f"worker {tk['worker'][i]} ({tier})"
        out.append(f"    {tid}: {where}, ran {runs or 'never'}")
    if len(mine) > most:
        files = ", ".join(run.file(t).name for t in ("tasks", "events"))
        out.append(f"    ... and {len(mine) - most} more ({files})")
    return out


def worst(run: Run, n: int) -> list[str]:
    """The ``n`` jobs that lost the most time (waiting + slowdown), one line each (job ids
    shown escaped: :func:`gpusched.errors.show_text`)."""
    rows = []
    cols = run.jobs
    ids = [show_text(x) for x in cols["job_id"]]
    for i in range(len(cols["job_id"])):
        wait = _f(cols["wait_s"][i])
        slow = _f(cols["slowdown_s"][i]) if "slowdown_s" in cols else 0.0
        over = sum(_f(cols[c][i]) for c in ("load_s", "save_s") if c in cols and cols[c][i])
        if not math.isfinite(wait):
            continue
        lost = wait + (slow if math.isfinite(slow) else 0.0)
        rows.append((lost, i, wait, slow, over))
    rows.sort(key=lambda r: (-r[0], r[1]))
    out = []
    width = max((len(ids[r[1]]) for r in rows[:n]), default=3)
    col = 12 if run.in_slots else 7  # "124.36 slots" or "12m05s"
    for lost, i, wait, slow, over in rows[:n]:
        jct = _f(cols["jct"][i])
        pre = int(cols["preemptions"][i]) if "preemptions" in cols else 0
        main = max((("waiting", wait), ("slowdown", slow), ("load/save", over)), key=lambda x: x[1])
        share = main[1] / jct if jct > 0 else 0.0
        why = f"lost most to {main[0]} ({share:.0%} of its JCT)" if lost > 0 else "lost nothing"
        if pre:
            why += f"; preempted {pre}x"
        out.append(
            f"{ids[i]:<{width}}  JCT {run.d(jct):>{col}}  wait {run.d(wait):>{col}}  "
            f"slowdown {run.d(slow):>{col}}  {why}"
        )
    return out
