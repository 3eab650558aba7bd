"""Pollux's measured throughput tables, interpolated as its artifact's simulator does.

The goodput job model's option ``throughput="table"`` (docs/pollux.md): the simulated
truth of a job's step time is the artifact's measured profile
(``gpusched/data/pollux_profiles.csv.gz``: every row of
``simulator/traces/<app>/placements.csv`` and ``scalability.csv`` of petuum/adaptdl, branch
``osdi21-artifact``, commit c793c70, Apache-2.0), not the fitted eq. 11.

:meth:`ProfileTable.times` follows ``Application.get_throughput``
(``simulator/applications.py`` L204-227 at that commit; read, not copied):

* the placement (GPUs per node, zeros dropped) is turned to its lexicographically smallest
  rotation and read as a number (L206-209);
* a placement profiled in ``placements.csv`` is interpolated linearly in the per-GPU batch
  between its own rows (L212-215, ``scipy.interpolate.interp1d``; outside its rows'
  range the artifact raises, and so do we);
* any other is interpolated linearly over (nodes, GPUs, per-GPU batch) between the means
  of ``placements.csv``'s rows per such triple and all rows of ``scalability.csv``, nodes
  capped at 16 (L216-223, ``LinearNDInterpolator``, the same points in the same order;
  outside their hull the artifact's assertion fails, L225, and we raise).

It returns ``(step_time, sync_time)`` of one step of that per-GPU batch; an iteration with
``s`` accumulation steps takes ``step + s (step - sync)`` (simulator.py L117-130).
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import math
from pathlib import Path

import numpy as np

from gpusched.errors import CatalogueError, GpuschedError, show_name

__all__ = ["PATH", "OutsideProfile", "ProfileTable", "load_tables", "read_bundled_csv"]

PATH = Path(__file__).resolve().parent.parent / "data" / "pollux_profiles.csv.gz"
_FIELDS = (
    "app",
    "table",
    "placement",
    "num_nodes",
    "num_replicas",
    "local_bsz",
    "step_time",
    "sync_time",
)


class OutsideProfile(GpuschedError, ValueError):
    """A configuration outside an application's measured profile."""


class ProfileTable:
    """One application's profile: ``times(placement, local_bsz)`` as the artifact reads it.

    Parameters
    ----------
    app
        Its name (for messages).
    placements
        ``{placement id: (local_bsz, step, sync) rows}`` of ``placements.csv``, in file order.
    points, values
        ``(n, 3)`` (nodes, GPUs, local_bsz) and ``(n, 2)`` (step, sync): the per-triple means
        of ``placements.csv`` (sorted by the triple, as pandas' groupby) followed by
        ``scalability.csv``'s rows in file order.
    """

    def __init__(
        self,
        app: str,
        placements: dict[int, np.ndarray],
        points: np.ndarray,
        values: np.ndarray,
    ) -> None:
        self.app = app
        self.placements = placements
        self.points = points
        self.values = values
        self._lines: dict[int, object] = {}
        self._nd: object | None = None
        self._memo: dict[tuple[tuple[int, ...], float], tuple[float, float]] = {}

    @staticmethod
    def normal(placement: tuple[int, ...]) -> tuple[int, ...]:
        """Zeros dropped, then the lexicographically smallest rotation (L206-208)."""
        p = tuple(x for x in placement if x)
        return min((p[i:] + p[:i] for i in range(len(p))), default=())

    def times(self, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float]:
        """``(step_time, sync_time)`` s of one step of ``local_bsz`` per GPU on ``placement``
        (GPUs per node).

        Raises
        ------
        OutsideProfile
            Outside the profiled range (where the artifact's simulator fails too): a
            :class:`~gpusched.errors.GpuschedError`, so a command ends with one line.
        """
        key = (tuple(int(x) for x in placement), float(local_bsz))
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._times(*key)
        return got

    def _times(self, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float]:
        from scipy.interpolate import LinearNDInterpolator, interp1d

        p = self.normal(placement)
        if not p:
            raise OutsideProfile(f"{self.app}: an empty placement has no throughput")
        pid = int("".join(map(str, p)))
        rows = self.placements.get(pid)
        if rows is not None:
            f = self._lines.get(pid)
            if f is None:
                f = self._lines[pid] = interp1d(rows[:, 0], rows[:, 1:], axis=0)
            try:
                ret = np.asarray(f(local_bsz), dtype=np.float64)  # type: ignore[operator]
            except ValueError:  # interp1d: outside its rows
                lo, hi = float(rows[:, 0].min()), float(rows[:, 0].max())
                raise OutsideProfile(
                    f"{self.app}: placement {pid} is profiled for {lo:g} to {hi:g} samples per "
                    f"GPU, not {local_bsz:g} (the artifact's simulator fails here too)"
                ) from None
        else:
            if self._nd is None:
                self._nd = LinearNDInterpolator(self.points, self.values)
            nodes = min(len(p), 16)
            ret = np.asarray(self._nd([nodes, sum(p), local_bsz])[0], dtype=np.float64)  # type: ignore[operator]
        step, sync = float(ret[0]), float(ret[1])
        if not (math.isfinite(step) and math.isfinite(sync)):
            raise OutsideProfile(
                f"{self.app}: placement {p} with {local_bsz:g} samples per GPU is outside the "
                "profiled configurations (the artifact's simulator fails here too)"
            )
        return step, sync

    def iteration(self, placement: tuple[int, ...], m: int, s: int) -> tuple[float, float]:
        """``(iteration time, computation time of one step)`` s with ``s`` accumulation steps
        (simulator.py L117-130: ``step + s (step - sync)``)."""
        step, sync = self.times(placement, m)
        return step + s * (step - sync), step - sync


def read_bundled_csv(path: Path, fields: tuple[str, ...]) -> csv.DictReader[str]:
    """The rows of a bundled gzip CSV (``#`` lines are comments) with exactly the columns
    ``fields``; a :class:`CatalogueError` naming the file if it cannot be read or has others."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{show_name(path)}: cannot read: {exc}") from None
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if reader.fieldnames is None or tuple(reader.fieldnames) != fields:
        raise CatalogueError(f"{show_name(path)}: expected the columns {', '.join(fields)}")
    return reader


@functools.cache
def load_tables(path: Path = PATH) -> dict[str, ProfileTable]:
    """The six applications' tables from ``pollux_profiles.csv.gz`` (cached).

    Raises
    ------
    CatalogueError
        An unreadable or malformed file (named, with the data row).
    """
    name = show_name(path)
    reader = read_bundled_csv(path, _FIELDS)
    place: dict[str, dict[int, list[list[float]]]] = {}
    scal: dict[str, list[list[float]]] = {}
    for i, row in enumerate(reader):
        try:
            vals = [float(row[c]) for c in _FIELDS[3:]]
            pid = int(row["placement"]) if row["table"] == "placements" else 0
        except (TypeError, ValueError):
            raise CatalogueError(f"{name}: data row {i + 1}: not numbers") from None
        if not all(math.isfinite(v) and v >= 0 for v in vals) or row["table"] not in (
            "placements",
            "scalability",
        ):
            raise CatalogueError(
                f"{name}: data row {i + 1}: expected table placements|scalability and numbers >= 0"
            )
        if row["table"] == "placements":
            place.setdefault(row["app"], {}).setdefault(pid, []).append(vals)
        else:
            scal.setdefault(row["app"], []).append(vals)
    out = {}
    for app, by_pid in place.items():
        rows = np.asarray([r for rs in by_pid.values() for r in rs], dtype=np.float64)
        # pandas' groupby(["num_nodes", "num_replicas", "local_bsz"]).mean(): sorted triples
        keys, inv = np.unique(rows[:, :3], axis=0, return_inverse=True)
        inv = inv.ravel()
        sums = np.zeros((keys.shape[0], 2))
        np.add.at(sums, inv, rows[:, 3:])
        means = sums / np.bincount(inv, minlength=keys.shape[0])[:, None]
        extra = np.asarray(scal.get(app, []), dtype=np.float64).reshape(-1, 5)
        points = np.concatenate([keys, extra[:, :3]])
        values = np.concatenate([means, extra[:, 3:]])
        by_batch = {pid: np.asarray(rs, dtype=np.float64)[:, 2:] for pid, rs in by_pid.items()}
        out[app] = ProfileTable(app, by_batch, points, values)
    return out
