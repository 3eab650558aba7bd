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
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusched.core.events import EVENT_COLUMNS, format_gpus, parse_gpus
from gpusched.errors import GpuschedError, did_you_mean, show_name
from gpusched.io.tables import find_table, is_parquet, parquet_rows
from gpusched.results.units import fmt_s, fmt_t

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
    """A run folder's tables (columns as lists of strings)."""

    folder: Path
    jobs: dict[str, list[str]]
    events: dict[str, list[str]] | None
    manifest: dict[str, Any]
    tasks: dict[str, list[str]] | None = None  #: tasks.csv (jobs made of data chunks)

    def row(self, job: str) -> dict[str, str]:
        """jobs.csv's row of ``job`` (a GpuschedError naming the closest id if unknown)."""
        ids = self.jobs["job_id"]
        try:
            i = ids.index(job)
        except ValueError:
            hint = did_you_mean(job, ids)
            raise GpuschedError(
                f"{show_name(find_table(self.folder, 'jobs'))}: no job '{job}'{hint}"
            ) from None
        return {k: v[i] for k, v in self.jobs.items()}


def _read_columns(
    path: Path, need: tuple[str, ...], numeric: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """A CSV (or Parquet) table's columns as lists of strings; the ``numeric`` ones must
    hold numbers (or nothing). Errors name the file, line and column (a Parquet table's
    row ``i`` counts as line ``i + 2``, as in its CSV twin)."""
    try:
        return _read_checked(path, need, numeric)
    except UnicodeDecodeError:
        raise GpuschedError(f"{show_name(path)}: not a text (UTF-8) CSV file") from None
    except csv.Error as e:
        raise GpuschedError(f"{show_name(path)}: not a readable CSV file ({e})") from None


def _read_checked(
    path: Path, need: tuple[str, ...], numeric: tuple[str, ...]
) -> dict[str, list[str]]:
    if is_parquet(path):
        return _check_rows(path, parquet_rows(path), need, numeric)
    with path.open(newline="", encoding="utf-8") as fh:
        return _check_rows(path, csv.reader(fh), need, numeric)


def _check_rows(
    path: Path, reader: Iterator[list[str]], need: tuple[str, ...], numeric: tuple[str, ...]
) -> dict[str, list[str]]:
    header = next(reader, None)
    if header is None:
        raise GpuschedError(f"{show_name(path)}: empty file, expected a header line")
    missing = [c for c in need if c not in header]
    if missing:
        raise GpuschedError(
            f"{show_name(path)}: line 1: missing column(s) {', '.join(missing)}; "
            "is this a gpusched run folder?"
        )
    cols: list[list[str]] = [[] for _ in header]
    for n, rec in enumerate(reader, start=2):
        if len(rec) != len(header):
            raise GpuschedError(
                f"{show_name(path)}: line {n}: expected {len(header)} fields, got {len(rec)}"
            )
        for c, v in zip(cols, rec, strict=True):
            c.append(v)
    out = dict(zip(header, cols, strict=True))
    for name in numeric:
        for n, v in enumerate(out.get(name, ()), start=2):
            try:
                float(v) if v else None
            except ValueError:
                raise GpuschedError(
                    f"{show_name(path)}: line {n}: column '{name}': expected a number, got {v!r}"
                ) from None
    return out


def read_run(folder: str | Path) -> Run:
    """Read a run folder written by ``replay --out`` (events optional), its tables as CSV
    (jobs.csv, ...) or Parquet (jobs.parquet, ...)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GpuschedError(f"{show_name(folder)}: not a folder (give a run folder: replay --out)")
    jobs_csv = find_table(folder, "jobs")
    if not jobs_csv.is_file():
        raise GpuschedError(
            f"{show_name(folder)}: no jobs.csv here (nor jobs.parquet; give a run folder: "
            "replay --out DIR)"
        )
    times = ("submit", "finish", "jct", "wait_s", "load_s", "train_s", "save_s", "slowdown_s")
    jobs = _read_columns(jobs_csv, ("job_id", "submit", "jct", "wait_s"), times)
    ev_csv = find_table(folder, "events")
    events = _read_columns(ev_csv, EVENT_COLUMNS, ("time_s",)) if ev_csv.is_file() else None
    tasks_csv = find_table(folder, "tasks")
    tasks = _read_columns(tasks_csv, ("job_id", "job", "worker")) if tasks_csv.is_file() else None
    man = folder / "manifest.json"
    try:
        manifest = json.loads(man.read_text(encoding="utf-8")) if man.is_file() else {}
    except (ValueError, UnicodeDecodeError):
        raise GpuschedError(f"{show_name(man)}: not a JSON manifest") from None
    if not isinstance(manifest, dict):
        raise GpuschedError(f"{show_name(man)}: expected a JSON object")
    return Run(folder, jobs, events, manifest, tasks)


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


def _end_of(run: Run) -> float:
    ev = run.events
    if ev and ev["time_s"]:
        return float(ev["time_s"][-1])
    return max((_f(x) for x in run.jobs.get("finish", []) if x), default=0.0)


#: rows of the log told as they are, in these words
_OTHER = {
    "reject": "rejected",
    "note": "policy's note",
    "dispatch": "placed",
    "allocate": "allocated",
    "config": "configured",
}


def job_story(run: Run, job: str) -> list[str]:
    """``job``'s life in plain sentences, one per line."""
    row = run.row(job)
    gpus = row.get("gpus", "")
    head = f"job {job}"
    if gpus and gpus != "0":
        head += f" ({gpus} GPU{'s' if gpus != '1' else ''}"
        dur = _f(row.get("duration", ""))
        head += f", {fmt_s(dur)} of work alone)" if math.isfinite(dur) else ")"
    if run.manifest.get("policy"):
        head += f" under {run.manifest['policy']}"
    lines = [head + ":"]
    submit = _f(row["submit"])
    lines.append(f"  {fmt_t(submit):>12}  arrived")
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
            f"{name} {fmt_s(_f(row[col]))}"
            for name, col in (
                ("wait", "wait_s"),
                ("load", "load_s"),
                ("train", "train_s"),
                ("save", "save_s"),
            )  # fmt: skip
            if col in row and row[col]
        ]
        lines.append(f"  JCT {fmt_s(jct)} = " + " + ".join(parts))
        slow = _f(row.get("slowdown_s", ""))
        if math.isfinite(slow) and slow > 0:
            lines.append(f"  of its training, {fmt_s(slow)} was slowdown (slower than alone)")
    else:
        rejected = run.events is not None and any(
            e == "reject" and j == job
            for e, j in zip(run.events["event"], run.events["job_id"], strict=True)
        )
        status = row.get("status") or ("rejected" if rejected else "unfinished")
        lines.append(f"  no JCT: {status} when the run ended")
    return lines


def _history(run: Run, job: str, submit: float) -> list[str]:
    """The job's events as lines, in time order (a line's explanations right after it)."""
    assert run.events is not None
    timed: list[tuple[float, str]] = []  # (time, text); sorted stably by time

    def say(t: float, text: str, *why: str) -> None:
        timed.append((t, f"  {fmt_t(t):>12}  {text}"))
        timed.extend((t, f"  {'':>12}  {w}") for w in why)

    queued_since = submit
    times: list[float] | None = None  # the log's times as numbers, once a preemption needs them
    for s in stints(run.events, _end_of(run), job):
        plural = "s" if len(s.gpus) > 1 else ""
        where = f" on GPU{plural} {format_gpus(s.gpus)}" if s.gpus else ""
        whys = [f"why: {w[9:]}" for w in s.reasons if w.startswith("started: ")]
        say(s.start, f"started{where} after waiting {fmt_s(s.start - queued_since)}", *whys)
        if s.loaded is not None:
            say(s.loaded, f"loaded ({fmt_s(s.loaded - s.start)})")
        if s.preempt is not None:
            trained = s.preempt - (s.loaded if s.loaded is not None else s.start)
            what = {
                "futile": "before it trained anything (futile: its load was wasted)",
                "saving": f"after training {fmt_s(trained)}; saving until {fmt_t(s.end)}",
            }.get(s.how, f"after training {fmt_s(trained)}")
            whys = [f"why: {w[11:]}" for w in s.reasons if w.startswith("preempted: ")]
            if times is None:
                times = [float(x) for x in run.events["time_s"]]
            t, who = takers(run.events, s, times)
            if who:
                whys.append(f"its GPUs went to {', '.join(who)} at {fmt_t(t)}")
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
    for s in stints(run.events, _end_of(run), {tk["job_id"][i] for i in mine}):
        by_task.setdefault(s.job, []).append(s)
    out = [f"  {len(mine)} chunks:"]
    for i in mine[:most]:
        tid = tk["job_id"][i]
        tier = "cloud" if tk.get("cloud", ["0"] * len(tk["job"]))[i] in ("1", "True") else "edge"
        runs = ", ".join(
            f"{fmt_t(s.start)} to {fmt_t(s.end)}"
            + (" (preempted; postponed on its worker)" if s.preempt is not None else "")
            for s in by_task.get(tid, [])
        )
        out.append(f"    {tid}: worker {tk['worker'][i]} ({tier}), ran {runs or 'never'}")
    if len(mine) > most:
        files = ", ".join(find_table(run.folder, t).name for t in ("tasks", "events"))
        out.append(f"    ... and {len(mine) - most} more ({files})")
    return out


def worst(run: Run, n: int) -> list[str]:
    """The ``n`` jobs that lost the most time (waiting + slowdown), one line each."""
    rows = []
    cols = run.jobs
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
    width = max((len(cols["job_id"][r[1]]) for r in rows[:n]), default=3)
    for lost, i, wait, slow, over in rows[:n]:
        jct = _f(cols["jct"][i])
        pre = int(cols["preemptions"][i]) if "preemptions" in cols else 0
        main = max((("waiting", wait), ("slowdown", slow), ("load/save", over)), key=lambda x: x[1])
        share = main[1] / jct if jct > 0 else 0.0
        why = f"mostly {main[0]} ({share:.0%} of its JCT)" if lost > 0 else "lost nothing"
        if pre:
            why += f"; preempted {pre}x"
        out.append(
            f"{cols['job_id'][i]:<{width}}  JCT {fmt_s(jct):>7}  wait {fmt_s(wait):>7}  "
            f"slowdown {fmt_s(slow):>7}  {why}"
        )
    return out
