"""Plots of runs and sweeps, in the terminal (plotext) or as PNG/SVG files (matplotlib).

* :func:`plot_runs`: for one or more run folders (as written by ``replay --out``, each
  folder of ``compare --out`` or each cell of a sweep): the JCT CDF per run, the queue
  length over time and the GPU utilisation over time (busy GPUs / GPUs in the cluster).
* :func:`plot_sweep`: from a sweep's results.csv, one metric against one parameter, one
  line per combination of the other varying columns, averaged over seeds (files also
  shade the min-max band over seeds).

Without ``save`` the charts are drawn in the terminal with plotext (a core dependency);
with ``save=FILE.png`` or ``FILE.svg`` they are written with matplotlib, the optional
``plot`` extra. Long runs are thinned for drawing: a CDF keeps at most 2,000 quantiles,
and timelines are sampled on a regular grid (the value in force at each grid time).
plotext and matplotlib are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError

__all__ = ["expand_run_dirs", "is_sweep", "plot_runs", "plot_sweep"]

NEED_MATPLOTLIB = "saving plots needs matplotlib: pip install 'gpusched[plot]'"
SAVE_SUFFIXES = (".png", ".svg")
_CDF_POINTS = 2000
_FILE_POINTS = 4000
_TERM_POINTS = 400


# --- reading ----------------------------------------------------------------------------


def _read_columns(path: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Float columns ``names`` of a CSV file (empty fields become NaN)."""
    if not path.is_file():
        raise GpuschedError(f"not found: {path}")
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None) or []
        missing = [n for n in names if n not in header]
        if missing:
            raise GpuschedError(f"{path}: no column {', '.join(missing)}")
        idx = [header.index(n) for n in names]
        cols: list[list[float]] = [[] for _ in names]
        for row in reader:
            for out, i in zip(cols, idx, strict=True):
                text = row[i] if i < len(row) else ""
                out.append(float(text) if text else math.nan)
    return {n: np.asarray(c, dtype=np.float64) for n, c in zip(names, cols, strict=True)}


@dataclass(slots=True)
class _Run:
    label: str
    fields: dict[str, str]
    jct: np.ndarray  # finished jobs' JCT, sorted, s
    time_s: np.ndarray
    queued: np.ndarray
    busy: np.ndarray
    n_gpus: int | None


def _n_gpus(manifest: dict[str, Any]) -> int | None:
    servers = (manifest.get("cluster") or {}).get("servers")
    if not servers:
        return None
    try:
        return int(sum(int(s["count"]) * int(s["gpus"]) for s in servers)) or None
    except (KeyError, TypeError, ValueError):
        return None


def _run_fields(manifest: dict[str, Any], folder: Path) -> dict[str, str]:
    """What tells runs apart: policy with its parameters, cluster, trace, seed."""
    policy = manifest.get("policy")
    params = manifest.get("params") or {}
    cluster = ((manifest.get("cluster") or {}).get("cluster") or {}).get("name")
    trace = manifest.get("trace")
    return {
        "policy": " ".join([str(policy or folder.name)] + [f"{k}={v}" for k, v in params.items()]),
        "cluster": str(cluster or ""),
        "trace": Path(str(trace)).name.split(".")[0] if trace else "",
        "seed": "" if manifest.get("seed") is None else f"seed={manifest['seed']}",
    }


def _load_run(folder: Path) -> _Run:
    jobs = _read_columns(folder / "jobs.csv", ["jct"])["jct"]
    tl = _read_columns(folder / "timeline.csv", ["time_s", "busy_gpus", "queued"])
    manifest: dict[str, Any] = {}
    if (folder / "manifest.json").is_file():
        try:
            manifest = json.loads((folder / "manifest.json").read_text())
        except ValueError:
            manifest = {}
    return _Run(
        label=folder.name,
        fields=_run_fields(manifest, folder),
        jct=np.sort(jobs[~np.isnan(jobs)]),
        time_s=tl["time_s"],
        queued=tl["queued"],
        busy=tl["busy_gpus"],
        n_gpus=_n_gpus(manifest),
    )


def expand_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders named by ``paths``: a run folder itself, or every run inside a folder
    written by ``compare --out`` (or any folder whose subfolders are runs).

    Raises
    ------
    GpuschedError
        A path is missing or holds no run.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            raise GpuschedError(f"not a run folder: {p}")
        if (p / "jobs.csv").is_file():
            out.append(p)
            continue
        subs = sorted(d for d in p.iterdir() if d.is_dir() and (d / "jobs.csv").is_file())
        if not subs:
            raise GpuschedError(f"{p} holds no run (no jobs.csv in it or its subfolders)")
        out.extend(subs)
    return out


def is_sweep(path: str | Path) -> bool:
    """Whether ``path`` is a sweep results table or a folder holding results.csv."""
    p = Path(path)
    if p.is_dir():
        return (p / "results.csv").is_file()
    if p.is_file() and p.suffix == ".csv":
        with p.open(newline="") as fh:
            header = next(csv.reader(fh), [])
        return "cell" in header and "status" in header
    return False


# --- drawing helpers --------------------------------------------------------------------


@dataclass(slots=True)
class _Series:
    label: str
    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray | None = None  # band (files only)
    hi: np.ndarray | None = None


@dataclass(slots=True)
class _Chart:
    title: str
    xlabel: str
    ylabel: str
    series: list[_Series]
    step: bool = False
    logx: bool = False
    xticks: tuple[list[float], list[str]] | None = None


def _check_save(save: str | Path) -> Path:
    path = Path(save)
    if path.suffix.lower() not in SAVE_SUFFIXES:
        raise GpuschedError(f"--save must name a .png or .svg file, got {save}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise GpuschedError(NEED_MATPLOTLIB) from None
    return path


def _thin_cdf(jct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = jct.size
    if n == 0:
        return np.empty(0), np.empty(0)
    idx = np.arange(n) if n <= _CDF_POINTS else np.linspace(0, n - 1, _CDF_POINTS).astype(np.int64)
    # start at (first JCT, 0) so the curve rises from zero
    return np.concatenate([jct[:1], jct[idx]]), np.concatenate([[0.0], (idx + 1) / n])


def _sample_steps(t: np.ndarray, v: np.ndarray, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """The step function ``v`` (holding from each ``t``) sampled at ``n_max`` grid times."""
    if t.size <= n_max:
        return t, v
    grid = np.linspace(t[0], t[-1], n_max)
    idx = np.searchsorted(t, grid, side="right") - 1
    return grid, v[np.clip(idx, 0, t.size - 1)]


def _label_runs(runs: Sequence[_Run]) -> None:
    """Label runs by policy, plus cluster, trace and seed where those differ; else by folder."""
    keys = ["policy"] + [
        k for k in ("cluster", "trace", "seed") if len({r.fields[k] for r in runs}) > 1
    ]
    labels = [" ".join(r.fields[k] for k in keys if r.fields[k]) for r in runs]
    if len(set(labels)) == len(labels):
        for r, label in zip(runs, labels, strict=True):
            r.label = label


def _time_unit(runs: Sequence[_Run]) -> tuple[float, str]:
    span = max((float(r.time_s[-1]) for r in runs if r.time_s.size), default=0.0)
    return (3600.0, "h") if span > 10 * 3600 else (1.0, "s")


def _run_charts(runs: Sequence[_Run], n_points: int) -> list[_Chart]:
    div, unit = _time_unit(runs)
    cdf, queue, util = [], [], []
    for r in runs:
        x, y = _thin_cdf(r.jct)
        cdf.append(_Series(r.label, x, y))
        t, q = _sample_steps(r.time_s, r.queued, n_points)
        queue.append(_Series(r.label, t / div, q))
        t, b = _sample_steps(r.time_s, r.busy, n_points)
        util.append(_Series(r.label, t / div, b / r.n_gpus if r.n_gpus else b))
    all_jct = np.concatenate([r.jct for r in runs]) if runs else np.empty(0)
    logx = bool(all_jct.size and all_jct.min() > 0 and all_jct.max() / all_jct.min() > 100)
    with_gpus = all(r.n_gpus for r in runs)
    return [
        _Chart("JCT CDF", "JCT (s)", "fraction of jobs", cdf, step=True, logx=logx),
        _Chart("Queue length", f"time ({unit})", "queued jobs", queue, step=True),
        _Chart(
            "GPU utilisation" if with_gpus else "Busy GPUs",
            f"time ({unit})",
            "busy GPUs / GPUs" if with_gpus else "busy GPUs",
            util,
            step=True,
        ),
    ]


def _terminal(chart: _Chart, width: int, height: int, color: bool) -> str:
    """One chart as text, with plotext 6 (figure API) or plotext 5 (pyplot-like API)."""
    try:
        import plotext as plt
    except ImportError:
        raise GpuschedError("terminal plots need plotext: pip install plotext") from None
    series = [s for s in chart.series if s.x.size]
    if hasattr(plt, "plot"):  # plotext 5
        plt.clear_figure()
        plt.plotsize(width, height)
        for s in series:
            plt.plot(s.x.tolist(), s.y.tolist(), label=s.label)
        plt.title(chart.title)
        plt.xlabel(chart.xlabel)
        plt.ylabel(chart.ylabel)
        if chart.logx:
            plt.xscale("log")
        if chart.xticks:
            plt.xticks(*chart.xticks)
        text: str = plt.build()
        plt.clear_figure()
        if not color:
            text = plt.uncolorize(text)
        return text
    fig = plt.figure
    fig.clear()
    fig.plot_size(width, height)
    for s in series:
        sig = fig.signal(s.x.tolist(), s.y.tolist())
        sig.label(s.label)
        sig.lines()
        fig.draw(sig)
    fig.title(chart.title)
    fig.label(chart.xlabel, axis="x")
    fig.label(chart.ylabel, axis="y")
    if chart.logx:
        fig.ruler("x").scale("log")
    if chart.xticks:
        fig.ruler("x").ticks(*chart.xticks)
    text = fig.build().string(colorless=not color)
    fig.clear()
    return text


def _show(charts: Sequence[_Chart]) -> str:
    cols, lines = shutil.get_terminal_size((100, 40))
    width = max(40, min(cols, 140))
    height = max(16, min(22, (lines - 2) // max(len(charts), 1)))
    color = sys.stdout.isatty()
    text = "\n".join(_terminal(c, width, height, color) for c in charts)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return text


def _save(charts: Sequence[_Chart], path: Path, ncols: int) -> Path:
    from matplotlib.figure import Figure

    nrows = math.ceil(len(charts) / ncols)
    fig = Figure(figsize=(5.2 * ncols, 4.0 * nrows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax, chart in zip(axes, charts, strict=False):
        for s in chart.series:
            if not s.x.size:
                continue
            if chart.step:
                ax.step(s.x, s.y, where="post", label=s.label, linewidth=1.2)
            else:
                (line,) = ax.plot(s.x, s.y, marker="o", label=s.label)
                if s.lo is not None and s.hi is not None and np.any(s.hi > s.lo):
                    ax.fill_between(
                        s.x, s.lo, s.hi, color=line.get_color(), alpha=0.15, linewidth=0
                    )
        ax.set_title(chart.title)
        ax.set_xlabel(chart.xlabel)
        ax.set_ylabel(chart.ylabel)
        if chart.logx:
            ax.set_xscale("log")
        if chart.xticks:
            ax.set_xticks(chart.xticks[0], chart.xticks[1])
        ax.grid(alpha=0.3)
        if len(chart.series) > 1 or chart.series and chart.series[0].label:
            ax.legend(fontsize="small")
    for ax in axes[len(charts) :]:
        ax.set_visible(False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower().lstrip("."), dpi=110, metadata=_metadata(path))
    return path


def _metadata(path: Path) -> dict[str, Any]:
    # no creation date, so the same data give the same file
    return {"Date": None} if path.suffix.lower() == ".svg" else {}


# --- public -----------------------------------------------------------------------------


def plot_runs(run_dirs: Sequence[str | Path], save: str | Path | None = None) -> Path | str:
    """JCT CDFs, queue length and GPU utilisation over time for one or more runs.

    Parameters
    ----------
    run_dirs
        Run folders (with jobs.csv, timeline.csv and manifest.json), or folders holding
        run folders (``compare --out``).
    save
        A ``.png`` or ``.svg`` file to write with matplotlib; None draws in the terminal.

    Returns
    -------
    Path or str
        The file written, or the text drawn on stdout.

    Raises
    ------
    GpuschedError
        No run found, a bad suffix, or ``save`` without matplotlib installed.
    """
    path = _check_save(save) if save is not None else None
    folders = expand_run_dirs(run_dirs)
    runs = [_load_run(f) for f in folders]
    _label_runs(runs)
    if path is not None:
        return _save(_run_charts(runs, _FILE_POINTS), path, ncols=3)
    return _show(_run_charts(runs, _TERM_POINTS))


def _as_float(text: str) -> float | None:
    if text.strip().lower() in ("true", "false", "nan", "inf", "-inf", ""):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _param_columns(header: list[str], rows: list[dict[str, str]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for token in (r.get("params") or "").split(" "):
            key, sep, _ = token.partition("=")
            if not sep:
                continue
            col = key if key in header else f"param_{key}"
            if col in header and col not in cols:
                cols.append(col)
    return cols


def _sweep_chart(table: Path, metric: str, x: str | None) -> _Chart:
    with table.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        all_rows = list(reader)
    if "status" not in header or "cell" not in header:
        raise GpuschedError(
            f"{table} is not a sweep results table (no 'cell' and 'status' columns)"
        )
    params = _param_columns(header, all_rows)
    # columns: cell, status, trace, cluster, policy, params, seed, <params>, <metrics>, error
    last_fixed = max(
        [header.index("seed") if "seed" in header else 0] + [header.index(p) for p in params]
    )
    metrics = [c for c in header[last_fixed + 1 :] if c != "error"]
    if metric not in header or metric not in metrics:
        raise GpuschedError(f"no metric '{metric}' in {table} (metrics: {', '.join(metrics)})")
    rows = [r for r in all_rows if r.get("status") == "ok"]
    if not rows:
        raise GpuschedError(f"{table} has no finished cell to plot")

    def varying(col: str) -> bool:
        return len({r.get(col, "") for r in rows if r.get(col, "") != ""}) > 1

    if x is None:
        choices = [*params, "policy", "cluster", "trace", "seed"]
        x = next((c for c in choices if varying(c)), "policy")
    elif x not in header:
        if f"param_{x}" in header:
            x = f"param_{x}"
        else:
            raise GpuschedError(
                f"no column '{x}' in {table} (parameters: {', '.join(params) or 'none'}; "
                "also policy, cluster, trace, seed)"
            )
    rows = [r for r in rows if r.get(x, "") != "" and r.get(metric, "") != ""]
    if not rows:
        raise GpuschedError(f"no finished cell has both '{x}' and '{metric}'")
    group_cols = [c for c in ("trace", "cluster", "policy", *params) if c != x and varying(c)]

    xs = list(dict.fromkeys(r[x] for r in rows))
    numeric = all(_as_float(v) is not None for v in xs)
    if numeric:
        xs.sort(key=lambda v: _as_float(v) or 0.0)
        pos = {v: _as_float(v) or 0.0 for v in xs}
        xticks = None
    else:
        pos = {v: float(i) for i, v in enumerate(xs)}
        xticks = ([pos[v] for v in xs], xs)

    groups: dict[tuple[str, ...], dict[str, list[float]]] = {}
    for r in rows:
        key = tuple(r.get(c, "") for c in group_cols)
        groups.setdefault(key, {}).setdefault(r[x], []).append(float(r[metric]))
    series = []
    for key, by_x in groups.items():
        order = [v for v in xs if v in by_x]
        vals = [np.asarray(by_x[v]) for v in order]
        label = (
            " ".join(f"{c}={k}" for c, k in zip(group_cols, key, strict=True) if k != "") or metric
        )
        series.append(
            _Series(
                label,
                np.array([pos[v] for v in order]),
                np.array([v.mean() for v in vals]),
                lo=np.array([v.min() for v in vals]),
                hi=np.array([v.max() for v in vals]),
            )
        )
    n_seeds = len({r.get("seed") for r in rows})
    title = f"{metric} vs {x}" + (
        f" (mean over {n_seeds} seeds)" if n_seeds > 1 and x != "seed" else ""
    )
    return _Chart(title, x, metric, series, xticks=xticks)


def plot_sweep(
    results_csv: str | Path,
    metric: str = "avg_jct_s",
    x: str | None = None,
    save: str | Path | None = None,
) -> Path | str:
    """One metric against one parameter from a sweep's results table.

    Parameters
    ----------
    results_csv
        A sweep's results.csv, or the sweep's output folder.
    metric
        A summary column (e.g. ``avg_jct_s``, ``p95_jct_s``, ``gpu_utilization``).
    x
        The column on the x axis: a parameter name, or ``policy``, ``cluster``, ``trace``,
        ``seed``. Default: the first parameter that varies, else ``policy``. Cells without
        that parameter (other policies) are left out.
    save
        A ``.png`` or ``.svg`` file to write with matplotlib; None draws in the terminal.

    Returns
    -------
    Path or str
        The file written, or the text drawn on stdout.

    Raises
    ------
    GpuschedError
        Not a results table, an unknown metric or column, no finished cell, a bad
        suffix, or ``save`` without matplotlib installed.
    """
    path = _check_save(save) if save is not None else None
    table = Path(results_csv)
    if table.is_dir():
        table = table / "results.csv"
    if not table.is_file():
        raise GpuschedError(f"sweep results not found: {table}")
    chart = _sweep_chart(table, metric, x)
    if path is not None:
        return _save([chart], path, ncols=1)
    return _show([chart])
