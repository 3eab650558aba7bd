"""``gpusched diff``: two runs of the same trace compared job by job.

Both runs' ``jobs.csv`` (or ``jobs.parquet``) are read (a run folder, or the file itself),
checked against the folder's manifest.json (its recorded hash and row count,
:mod:`gpusched.io.runfolder`). They must be runs of the same trace: the manifests must
record the same trace hash, and the tables the same jobs (the same ids in the same order
with the same submission times); else nothing is compared. For each job finished in both, the
change is ``JCT_B - JCT_A`` (s): negative, the job *gained* (finished sooner) under B;
positive, it *lost*; within :data:`REL_TOL` of the larger JCT it is *unchanged*. Jobs
finished in only one run, or in neither, are counted apart and left out of the totals.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError, field_error, show_name, show_text, show_value
from gpusched.io.files import check_out_file, make_parent
from gpusched.io.runfolder import MANIFEST, RunFolder, create_exclusive, open_run
from gpusched.io.tables import (
    NON_NEGATIVE,
    check_unique_columns,
    is_parquet,
    parquet_rows,
    seconds_expected,
)

__all__ = [
    "REL_TOL",
    "RunDiff",
    "RunJobs",
    "diff_runs",
    "format_duration",
    "read_run_jobs",
    "write_diff_csv",
]

#: relative JCT change below which a job counts as unchanged
REL_TOL = 1e-9
#: outcome of each job, as in the per-job CSV
GAINED, LOST, UNCHANGED = "gained", "lost", "unchanged"
ONLY_A, ONLY_B, NEITHER = "finished_only_in_a", "finished_only_in_b", "unfinished_in_both"
#: the jobs.csv columns a diff needs, and those it uses when both runs have them
REQUIRED = ("job_id", "submit", "jct", "wait_s")
OPTIONAL = ("slowdown_s",)


@dataclass(frozen=True, slots=True)
class RunJobs:
    """The per-job columns of one run.

    Attributes
    ----------
    source
        The jobs.csv read.
    label
        The run's policy and seed from its manifest.json (empty without one).
    job_id
        Job ids in file order.
    submit, jct, wait_s
        Submission time, JCT and waiting time, s (JCT and wait NaN for unfinished jobs).
    slowdown_s
        Training time beyond the duration, s, or None when the file has no such column.
    trace_sha256
        The SHA-256 of the trace the run replayed, from its manifest (None without one).
    """

    source: Path
    label: str
    job_id: list[str]
    submit: np.ndarray
    jct: np.ndarray
    wait_s: np.ndarray
    slowdown_s: np.ndarray | None
    trace_sha256: str | None = None


def _jobs_file(path: str | Path, which: str) -> tuple[Path, RunFolder | None]:
    """The jobs table of a run folder (checked against its manifest), or a jobs.csv given
    itself: checked against the manifest beside it when that records it, refused when that
    manifest is damaged (the file's run can no longer be told), read with a note when the
    manifest does not record it (a stray file), read unchecked where there is none."""
    p = Path(path)
    if p.is_dir():
        try:
            rf = open_run(p, what="a run folder written by replay --out or compare --out")
            jobs = rf.table("jobs")
        except GpuschedError as exc:
            raise GpuschedError(f"{which} {exc}") from None
        assert jobs is not None  # required
        return jobs, rf
    if not p.is_file():
        raise GpuschedError(f"{which} {show_name(path)}: no such run folder or jobs.csv")
    if (p.parent / MANIFEST).exists():
        try:
            rf = open_run(p.parent)
        except GpuschedError as exc:
            raise GpuschedError(
                f"{which} {show_name(path)}: the manifest beside it cannot be read, so its "
                f"run cannot be checked ({exc}); copy the table elsewhere to compare it "
                "unchecked"
            ) from None
        if rf.tables is not None and p.name in rf.tables:
            rf.table(p.stem)
            return p, rf
        if rf.tables is not None:
            sys.stderr.write(
                f"note: {which} {show_name(path)} is not a table the {MANIFEST} beside it "
                "records: read unchecked\n"
            )
    return p, None


def _label(manifest: dict[str, Any] | None) -> str:
    """``policy, seed s`` from a run's manifest, or empty."""
    if manifest is None or "policy" not in manifest:
        return ""
    params = manifest.get("params") or {}
    text = show_text(manifest["policy"])
    if isinstance(params, dict) and params:
        text += ":" + ",".join(f"{show_text(k)}={show_text(v)}" for k, v in params.items())
    return f"{text}, seed {show_text(manifest.get('seed'))}"


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    if is_parquet(path):  # row i as line i + 2, as in its CSV twin
        table = parquet_rows(path, nan="nan")  # a NaN (not null) is refused, as in a CSV
        header = next(table, [])
        _check_header(path, header)
        for line, cells in enumerate(table, start=2):
            yield line, dict(zip(header, cells, strict=True))
        return
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        try:
            _check_header(path, list(reader.fieldnames or []))
            for row in reader:
                yield reader.line_num, row
        except UnicodeDecodeError:
            raise GpuschedError(
                f"{show_name(path)}: not a text (UTF-8) CSV file (expected a run's jobs.csv)"
            ) from None
        except csv.Error as exc:
            raise GpuschedError(f"{show_name(path)}: not a readable CSV file ({exc})") from None


def _check_header(path: Path, header: list[str]) -> None:
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise GpuschedError(
            f"{show_name(path)}: no {', '.join(repr(c) for c in missing)} column "
            "(expected a run's jobs.csv, as replay --out writes it)"
        )
    check_unique_columns(path, header)


def read_run_jobs(path: str | Path, which: str = "run") -> RunJobs:
    """Read the columns :func:`diff_runs` needs from a run folder's (or a) jobs.csv.

    Raises
    ------
    GpuschedError
        No such folder or file, a missing column, a duplicate job id, or a field that is
        not a number (named with the file, line and field; JCT, wait and slowdown may be
        empty for an unfinished job).
    """
    file, rf = _jobs_file(path, which)
    ids: list[str] = []
    cols: dict[str, list[float]] = {c: [] for c in ("submit", "jct", "wait_s", "slowdown_s")}
    has_slowdown = True
    seen: set[str] = set()
    for line, row in _rows(file):
        job = row["job_id"]
        if job in seen:
            raise field_error(file, line, "job_id", "each job once (it appears twice)", job)
        seen.add(job)
        ids.append(job)
        has_slowdown = has_slowdown and row.get("slowdown_s") is not None
        for col in cols:
            if col == "slowdown_s" and not has_slowdown:
                continue
            cols[col].append(_number(row[col], file, line, col, empty=col != "submit"))
    if rf is not None:
        rf.check_rows(file, len(ids))
    sha = None if rf is None else rf.manifest.get("trace_sha256")
    return RunJobs(
        source=file,
        label=_label(None if rf is None else rf.manifest),
        job_id=ids,
        submit=np.asarray(cols["submit"], dtype=np.float64),
        jct=np.asarray(cols["jct"], dtype=np.float64),
        wait_s=np.asarray(cols["wait_s"], dtype=np.float64),
        slowdown_s=np.asarray(cols["slowdown_s"], dtype=np.float64) if has_slowdown else None,
        trace_sha256=sha if isinstance(sha, str) else None,
    )


def _number(text: str | None, file: Path, line: int, col: str, *, empty: bool) -> float:
    expected = seconds_expected(col, empty=empty)
    if text is None:
        raise field_error(file, line, col, expected, "")
    if text == "" and empty:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (value < 0 and col in NON_NEGATIVE):
        raise field_error(file, line, col, expected, text)
    return value


def _check_same_trace(a: RunJobs, b: RunJobs) -> None:
    where = f"{show_name(a.source)} and {show_name(b.source)} are not runs of the same trace"
    if a.trace_sha256 and b.trace_sha256 and a.trace_sha256 != b.trace_sha256:
        raise GpuschedError(
            f"{where}: their manifests record different traces (SHA-256 "
            f"{a.trace_sha256[:12]}... in A, {b.trace_sha256[:12]}... in B)"
        )
    if len(a.job_id) != len(b.job_id):
        raise GpuschedError(f"{where}: {len(a.job_id):,} jobs in A, {len(b.job_id):,} in B")
    for i, (ja, jb) in enumerate(zip(a.job_id, b.job_id, strict=True)):
        if ja != jb:
            raise GpuschedError(
                f"{where}: job {i + 1} is {show_value(ja)} in A but {show_value(jb)} in B"
            )
    bad = np.flatnonzero(a.submit != b.submit)
    if bad.size:
        i = int(bad[0])
        raise GpuschedError(
            f"{where}: job {show_value(a.job_id[i])} is submitted at {a.submit[i]:g} s in A "
            f"but at {b.submit[i]:g} s in B"
        )


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Two runs compared job by job (module docstring).

    Attributes
    ----------
    a, b
        The runs.
    outcome
        Per job: ``gained``, ``lost``, ``unchanged``, ``finished_only_in_a``,
        ``finished_only_in_b`` or ``unfinished_in_both``.
    change_s
        Per job ``JCT_B - JCT_A``, s (NaN unless finished in both).
    """

    a: RunJobs
    b: RunJobs
    outcome: np.ndarray
    change_s: np.ndarray

    def count(self, outcome: str) -> int:
        """Jobs with this outcome."""
        return int((self.outcome == outcome).sum())

    @property
    def both(self) -> np.ndarray:
        """Mask of the jobs finished in both runs."""
        mask: np.ndarray = ~np.isnan(self.change_s)
        return mask

    def top(self, outcome: str, n: int) -> list[int]:
        """Indices of the ``n`` jobs that gained (or lost) most, largest change first;
        ties in file order."""
        idx = np.flatnonzero(self.outcome == outcome)
        key = self.change_s[idx] if outcome == GAINED else -self.change_s[idx]
        return [int(i) for i in idx[np.argsort(key, kind="stable")][:n]]


def diff_runs(a: RunJobs, b: RunJobs) -> RunDiff:
    """Compare ``b`` with ``a`` job by job.

    Raises
    ------
    GpuschedError
        The runs are not of the same trace (other job ids, order or submission times).
    """
    _check_same_trace(a, b)
    done_a, done_b = ~np.isnan(a.jct), ~np.isnan(b.jct)
    change = np.where(done_a & done_b, b.jct - a.jct, np.nan)
    scale = np.fmax(np.abs(a.jct), np.abs(b.jct))
    outcome = np.full(len(a.job_id), NEITHER, dtype=object)
    outcome[done_a & ~done_b] = ONLY_A
    outcome[~done_a & done_b] = ONLY_B
    both = done_a & done_b
    same = both & (np.abs(change) <= REL_TOL * scale)
    outcome[both & ~same & (change < 0)] = GAINED
    outcome[both & ~same & (change > 0)] = LOST
    outcome[same] = UNCHANGED
    return RunDiff(a, b, outcome, change)


def check_out_csv(path: str | Path) -> Path:
    """``path`` as a file :func:`write_diff_csv` can write: not a folder nor under a file
    (checked before the runs are read, and named as given, not as the temporary file
    written beside it); a missing folder is made when it is written.

    Raises
    ------
    GpuschedError
        A folder, a path under a file, or something that is not a regular file (a
        device, a pipe: the table is renamed over its target, which would replace it), as
        :func:`gpusched.io.files.check_out_file` refuses them.
    """
    return check_out_file(path, "--out", "a CSV file")


def write_diff_csv(path: str | Path, diff: RunDiff) -> None:
    """The per-job differences: ids, submission, JCT, wait and slowdown in A and B, change."""
    a, b = diff.a, diff.b
    columns: dict[str, Any] = {
        "job_id": a.job_id,
        "submit": a.submit,
        "outcome": diff.outcome,
        "jct_a": a.jct,
        "jct_b": b.jct,
        "jct_change_s": diff.change_s,
        "wait_a": a.wait_s,
        "wait_b": b.wait_s,
        "wait_change_s": b.wait_s - a.wait_s,
    }
    if a.slowdown_s is not None and b.slowdown_s is not None:
        columns["slowdown_a"] = a.slowdown_s
        columns["slowdown_b"] = b.slowdown_s
    names = list(columns)
    # written beside the target and renamed over it when complete: a full disk or an
    # interruption leaves no partial table, and a link named like the target is replaced,
    # never written through
    target = check_out_csv(path)
    make_parent(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with create_exclusive(tmp, text=True) as fh:
            w = csv.writer(fh)
            w.writerow(names)
            for i in range(len(a.job_id)):
                w.writerow([_cell(columns[k][i]) for k in names])
        os.replace(tmp, target)
    except OSError as exc:  # named as given: the hidden temporary file is ours, not theirs
        why = exc.strerror or type(exc).__name__
        raise GpuschedError(
            f"--out {show_name(target)}: cannot write ({why[:1].lower()}{why[1:]})"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)


def _cell(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return "" if math.isnan(value) else repr(float(value))
    return value


def format_duration(seconds: float, *, sign: bool = False) -> str:
    """A duration for people: ``45.2 s``, ``12m 05s``, ``3h 02m``, ``2d 04h 10m`` (``-`` if NaN).

    ``sign`` writes ``+`` before a positive duration (a change).
    """
    if math.isnan(seconds):
        return "-"
    head = "-" if seconds < 0 else ("+" if sign and seconds > 0 else "")
    s = abs(seconds)
    if math.isinf(s):  # a sum of finite JCTs near the float's limit (a hand-edited table)
        return f"{head}inf s"
    if float(f"{s:.3g}") < 60:
        return f"{head}{s:.3g} s"
    if round(s) < 3600:
        return f"{head}{round(s) // 60}m {round(s) % 60:02d}s"
    minutes = round(s / 60)
    if minutes < 1440:
        return f"{head}{minutes // 60}h {minutes % 60:02d}m"
    days, rest = divmod(minutes, 1440)
    return f"{head}{days}d {rest // 60:02d}h {rest % 60:02d}m"
