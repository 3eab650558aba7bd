"""Gantt charts of a run: GPUs (or servers) by time, coloured by job, phases shaded.

Built from the run's event log (``replay --out DIR --events``; :mod:`gpusched.core.events`)
through :func:`gpusched.results.explain.stints`: each stretch a job held GPUs splits into its
load (from the start to the end of the load), training and save (from the preemption
to the release). ``gpusched plot DIR --gantt`` draws it in the terminal, a character
per GPU and time bin (the job's letter while training, ``:`` loading, ``~`` saving,
``#`` two jobs sharing); ``--save FILE.png|svg`` draws bars with matplotlib, two jobs
sharing a GPU each in half of its row, outlined, with sharing in the legend.

Large clusters are aggregated so the chart stays readable: above :data:`MAX_ROWS`
GPUs a row is a server (or a group of servers), shaded by its busy fraction in each
time bin, from idle to fully busy (a heat map in files); in the terminal a bin in which a
GPU of the row holds two jobs shows :data:`SHARED_MARK` instead.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError, show_name, show_text
from gpusched.io.runfolder import MANIFEST
from gpusched.results.explain import Run, manifest_servers, run_end, stints
from gpusched.results.units import fmt_s

__all__ = ["MAX_ROWS", "Gantt", "gantt", "gantt_figure", "gantt_text"]

#: the most rows drawn one per GPU (terminal, file); above it rows aggregate servers
MAX_ROWS = {"text": 48, "file": 160}
LOADING, TRAINING, SAVING = 0, 1, 2
_LETTERS = string.ascii_uppercase + string.ascii_lowercase + string.digits
_SHADES = " .:-=+*%@#"
#: a time bin of a server row in which one of its GPUs holds two jobs (terminal charts of
#: large clusters, where rows aggregate servers)
SHARED_MARK = "2"


@dataclass
class Gantt:
    """Segments of a run: row (GPU index), start, end, job index, phase."""

    rows: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    job: np.ndarray
    phase: np.ndarray
    jobs: list[str]  #: job ids by index
    n_gpus: int
    gpu_server: np.ndarray  #: server of each GPU
    end_s: float


def _cluster_gpus(run: Run) -> np.ndarray:
    """The server of each GPU from the run's manifest (checked by
    :func:`~gpusched.results.explain.manifest_servers`)."""
    per = manifest_servers(run.manifest, run.folder / MANIFEST)
    if not per:
        raise GpuschedError(
            f"{show_name(run.folder / MANIFEST)}: no cluster servers recorded; "
            "is this a gpusched run folder?"
        )
    return np.repeat(np.arange(len(per), dtype=np.int64), per)


def gantt(run: Run) -> Gantt:
    """The segments of ``run`` (it must have an event log)."""
    if run.events is None:
        raise GpuschedError(
            f"{show_name(run.folder)}: no events.csv; a Gantt chart needs the event log "
            "(replay ... --out DIR --events)"
        )
    end = run_end(run)  # a run cut by --until holds its GPUs to then
    index: dict[str, int] = {}
    rows, t0, t1, job, phase = [], [], [], [], []
    for s in stints(run.events, end):
        if not s.gpus:
            continue
        j = index.setdefault(s.job, len(index))
        trained_from = s.loaded if s.loaded is not None else s.start
        stop = s.preempt if s.preempt is not None else s.end
        pieces = []
        if s.loaded is not None:
            pieces.append((s.start, s.loaded, LOADING))
        elif s.how == "futile":
            pieces.append((s.start, stop, LOADING))
        if s.how != "futile":
            pieces.append((trained_from, stop, TRAINING))
        if s.how == "saving":
            pieces.append((stop, s.end, SAVING))
        for a, b, ph in pieces:
            if b <= a:
                continue
            for g in s.gpus:
                rows.append(g)
                t0.append(a)
                t1.append(b)
                job.append(j)
                phase.append(ph)
    if not rows and "allocate" in run.events["event"]:
        raise GpuschedError(
            f"{show_name(run.folder)}: its jobs are placed by roles (workers and parameter "
            "servers per machine), which hold no GPU indices: there is no GPU Gantt chart "
            "to draw (timeline.csv has the resources held over time)"
        )
    servers = _cluster_gpus(run)
    return Gantt(
        np.asarray(rows, dtype=np.int64),
        np.asarray(t0, dtype=np.float64),
        np.asarray(t1, dtype=np.float64),
        np.asarray(job, dtype=np.int64),
        np.asarray(phase, dtype=np.int8),
        list(index),
        int(servers.size),
        servers,
        end,
    )


def _groups(g: Gantt, max_rows: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Row of each GPU, row labels and GPUs per row: one per GPU if they fit, else per
    server, else per group of servers."""
    if g.n_gpus <= max_rows:
        return np.arange(g.n_gpus), [f"GPU {i}" for i in range(g.n_gpus)], np.ones(g.n_gpus)
    n_srv = int(g.gpu_server.max()) + 1 if g.gpu_server.size else 0
    per = max(1, math.ceil(n_srv / max_rows))
    row = g.gpu_server // per
    n_rows = int(row.max()) + 1
    size = np.bincount(row, minlength=n_rows).astype(np.float64)
    if per == 1:
        labels = [f"server {r}" for r in range(n_rows)]
    else:
        labels = [f"servers {r * per}-{min((r + 1) * per, n_srv) - 1}" for r in range(n_rows)]
    return row, labels, size


def busy_grid(g: Gantt, row_of: np.ndarray, size: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Busy fraction of each row in each time bin (bins between ``edges``)."""
    n_rows = size.size
    out = np.zeros((n_rows, edges.size - 1))
    if g.t0.size == 0:
        return out
    width = np.diff(edges)
    rows = row_of[g.rows]
    for r in range(n_rows):
        m = rows == r
        if not m.any():
            continue
        # the integral of held GPUs over time, at the bin edges
        ts = np.concatenate([g.t0[m], g.t1[m]])
        d = np.concatenate([np.ones(m.sum()), -np.ones(m.sum())])
        o = np.argsort(ts, kind="stable")
        ts, d = ts[o], d[o]
        level = np.cumsum(d)
        area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(ts))])
        at = np.interp(edges, ts, area, left=0.0, right=float(area[-1]))
        out[r] = np.diff(at) / (width * size[r])
    return np.clip(out, 0.0, None)


def _bins(edges: np.ndarray, a: float, b: float) -> list[tuple[int, float]]:
    """The time bins that [a, b) overlaps, with the overlap, s."""
    n = edges.size - 1
    lo = max(int(np.searchsorted(edges, a, side="right")) - 1, 0)
    hi = min(int(np.searchsorted(edges, b, side="left")), n)
    out = []
    for k in range(lo, hi):
        over = min(b, float(edges[k + 1])) - max(a, float(edges[k]))
        if over > 0:
            out.append((k, over))
    return out


def shared(g: Gantt) -> list[tuple[int, float, float]]:
    """Stretches during which a GPU held two jobs: (GPU, from, to)."""
    out = []
    order = np.lexsort((g.t0, g.rows))
    rows, t0, t1 = g.rows[order].tolist(), g.t0[order].tolist(), g.t1[order].tolist()
    job = g.job[order].tolist()
    last_r, reach, holder = -1, -math.inf, -1
    for r, a, b, j in zip(rows, t0, t1, job, strict=True):
        if r != last_r:
            last_r, reach, holder = r, -math.inf, -1
        if a < reach and j != holder:
            out.append((r, a, min(b, reach)))
        if b > reach:
            reach, holder = b, j
    return out


def _lanes(g: Gantt) -> tuple[np.ndarray, np.ndarray]:
    """Each segment's lane and its number of lanes: a segment that overlaps another job's
    on its GPU (GPU sharing) takes one lane of as many as the row needs, so neither is
    drawn over the other; any other segment has the whole row (one lane)."""
    n = g.rows.size
    lane = np.zeros(n, dtype=np.int64)
    overlaps = np.zeros(n, dtype=bool)
    order = np.lexsort((g.t0, g.rows))
    open_: list[tuple[float, int, int]] = []  # (end, job, segment) of each lane's last
    last_row = -1
    for i in order.tolist():
        r, a, b, j = int(g.rows[i]), float(g.t0[i]), float(g.t1[i]), int(g.job[i])
        if r != last_row:
            open_, last_row = [], r
        free = None
        for k, (end, job, seg) in enumerate(open_):
            if end > a and job != j:  # another job holds this GPU meanwhile
                overlaps[i] = overlaps[seg] = True
            elif free is None:
                free = k
        if free is None:
            free = len(open_)
            open_.append((b, j, i))
        else:
            open_[free] = (b, j, i)
        lane[i] = free
    per_row = np.ones(g.n_gpus, dtype=np.int64)
    if overlaps.any():
        np.maximum.at(per_row, g.rows[overlaps], lane[overlaps] + 1)
    lanes = np.where(overlaps, per_row[g.rows] if n else 1, 1)
    return np.where(overlaps, lane, 0), lanes


def gantt_text(run: Run, width: int = 100) -> str:
    """The chart as text for the terminal."""
    g = gantt(run)
    row_of, labels, size = _groups(g, MAX_ROWS["text"])
    n_bins = max(10, width - max(len(x) for x in labels) - 3)
    end = g.end_s if g.end_s > 0 else 1.0
    edges = np.linspace(0.0, end, n_bins + 1)
    lab_w = max(len(x) for x in labels)
    lines = [
        f"{show_text(run.manifest.get('policy', ''))} on {show_name(run.folder)}: 0 to "
        f"{fmt_s(end)}, {fmt_s(end / n_bins)} per column"
    ]
    if len(labels) < g.n_gpus:
        grid = busy_grid(g, row_of, size, edges)
        top = len(_SHADES) - 1
        shades = np.array(list(_SHADES), dtype="<U1")
        cells = shades[np.minimum((grid * top + 0.5).astype(np.int64), top)]
        stretches = shared(g)
        for gpu, a, b in stretches:  # a GPU of the row holds two jobs: shown over the shade
            for k, _ in _bins(edges, a, b):
                cells[row_of[gpu], k] = SHARED_MARK
        for r, lab in enumerate(labels):
            lines.append(f"{lab:>{lab_w}} |{''.join(cells[r])}|")
        legend = f"busy fraction per row and column: '{_SHADES[1]}' little ... '#' all"
        if stretches:
            legend += f"; '{SHARED_MARK}' a GPU of the row holds two jobs (shared)"
        lines.append(legend)
        return "\n".join(lines) + "\n"
    cells = np.full((len(labels), n_bins), " ", dtype="<U1")
    best = np.zeros((len(labels), n_bins))
    seen: dict[int, None] = {}
    for r, a, b, j, ph in zip(
        g.rows.tolist(), g.t0.tolist(), g.t1.tolist(), g.job.tolist(), g.phase.tolist(),
        strict=True,
    ):  # fmt: skip
        for k, over in _bins(edges, a, b):
            if over > best[r, k]:
                best[r, k] = over
                glyph = _LETTERS[j % len(_LETTERS)] if ph == TRAINING else ":~"[ph == SAVING]
                cells[r, k] = glyph
                if ph == TRAINING:
                    seen[j] = None
    for r, a, b in shared(g):
        for k, _ in _bins(edges, a, b):
            cells[r, k] = "#"
    for r, lab in enumerate(labels):
        lines.append(f"{lab:>{lab_w}} |{''.join(cells[r])}|")
    key = [f"{_LETTERS[j % len(_LETTERS)]}={show_text(g.jobs[j])}" for j in list(seen)[:40]]
    lines.append("key: " + "  ".join(key) + ("  ..." if len(seen) > 40 else ""))
    lines.append("':' loading  '~' saving  '#' shared  (letters repeat every 62 jobs)")
    return "\n".join(lines) + "\n"


def gantt_figure(run: Run) -> Any:
    """The chart as a matplotlib figure (bars per GPU, or a heat map of servers)."""
    from matplotlib.figure import Figure

    g = gantt(run)
    row_of, labels, size = _groups(g, MAX_ROWS["file"])
    fig = Figure(figsize=(12, max(3.0, min(0.12 * len(labels) + 1.5, 20.0))))
    ax = fig.add_subplot()
    end = g.end_s if g.end_s > 0 else 1.0
    unit, scale = ("h", 3600.0) if end > 3 * 3600 else ("s", 1.0)
    if len(labels) < g.n_gpus:
        edges = np.linspace(0.0, end, 801)
        grid = busy_grid(g, row_of, size, edges)
        im = ax.imshow(
            grid, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1,
            extent=(0, end / scale, len(labels) - 0.5, -0.5),
        )  # fmt: skip
        fig.colorbar(im, ax=ax, label="busy GPU fraction")
        ax.set_ylabel(labels[0].split()[0] + "s" if labels else "")
    else:
        import matplotlib as mpl
        from matplotlib.patches import Patch, Rectangle

        cmap = mpl.colormaps["tab20"]
        lane, lanes = _lanes(g)
        height = 0.8 / lanes  # a GPU holding two jobs: each in its own half of the row
        y = g.rows - 0.4 + (lane + 0.5) * height
        for ph, alpha, hatch in (
            (TRAINING, 1.0, None),
            (LOADING, 0.35, "//"),
            (SAVING, 0.35, "xx"),
        ):
            m = g.phase == ph
            if not m.any():
                continue
            colors = [cmap(j % 20) for j in g.job[m].tolist()]
            ax.barh(
                y[m], (g.t1[m] - g.t0[m]) / scale, left=g.t0[m] / scale, height=height[m],
                color=colors, alpha=alpha, hatch=hatch, linewidth=0,
            )  # fmt: skip
        stretches = shared(g)
        for gpu, a, b in stretches:
            ax.add_patch(
                Rectangle(
                    (a / scale, gpu - 0.45), (b - a) / scale, 0.9,
                    fill=False, edgecolor="black", linewidth=0.6,
                )
            )  # fmt: skip
        ax.set_ylim(g.n_gpus - 0.5, -0.5)
        ax.set_ylabel("GPU")
        handles = [
            Patch(facecolor="grey", label="training (colour: job)"),
            Patch(facecolor="grey", alpha=0.35, hatch="//", label="loading"),
            Patch(facecolor="grey", alpha=0.35, hatch="xx", label="saving"),
        ]
        if stretches:
            handles.append(
                Patch(fill=False, edgecolor="black", label="shared: two jobs on one GPU, each "
                      "in half of its row")
            )  # fmt: skip
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_xlabel(f"simulated time ({unit})")
    fig.suptitle(f"{show_text(run.manifest.get('policy', ''))}: {show_text(run.folder.name)}")
    return fig


def save_gantt(run: Run, path: Path) -> Path:
    """Write the chart to ``path`` (.png or .svg), making its missing folders."""
    from gpusched.io.files import make_parent

    fig = gantt_figure(run)
    make_parent(path)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path
