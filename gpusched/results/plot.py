"""Plots of runs and sweeps, in the terminal (plotext) or as PNG/SVG files (matplotlib).

* :func:`plot_runs`: for one or more run folders (as written by ``replay --out``, each
  folder of ``compare --out`` or each cell of a sweep): the JCT CDF per run, the queue
  length over time and the GPU utilisation over time (busy GPUs / GPUs in the cluster).
* :func:`plot_sweep`: from a sweep's results.csv, one metric per policy (a policy
  comparison, the default when several policies ran) or against one parameter, averaged
  over seeds. How the table is arranged into panels, series and titles is
  :mod:`gpusched.results.sweep_plot`'s job; this module reads files and draws.

Without ``save`` the charts are drawn in the terminal: line charts with plotext (a core
dependency), one letter per series and a key under each chart; bar charts as text bars
with their values. With ``save=FILE.png`` or ``FILE.svg`` they are written with
matplotlib, the optional ``plot`` extra, with the legend outside the axes. Long runs are
thinned for drawing: a CDF keeps at most 2,000 quantiles, and timelines are sampled on a
regular grid (the value in force at each grid time). plotext and matplotlib are imported
inside the functions, so importing this module is cheap.

Every bad input (a folder that is not a run or a sweep, a missing or corrupt file, an
unknown metric or column, a bad ``save`` path) raises a :class:`GpuschedError` whose
one-line message names the file and what was expected.
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
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.errors import GpuschedError, field_error, show_name, show_text
from gpusched.io.files import (
    NotAFile,
    check_out_file,
    make_parent,
    parse_json,
    read_regular_file,
)
from gpusched.io.runfolder import open_run
from gpusched.io.tables import NON_NEGATIVE, has_table, seconds_expected
from gpusched.results.sweep_plot import Panel, SweepPlot, arrange, csv_rows, read_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "expand_run_dirs",
    "is_sweep",
    "plot_runs",
    "plot_sweep",
    "sweep_figure",
]

NEED_MATPLOTLIB = "saving plots needs matplotlib: pip install 'gpusched[plot]'"
SAVE_SUFFIXES = (".png", ".svg")
RUN_FILES = ("jobs.csv", "timeline.csv", "manifest.json", "summary.json")
_RUN_FOLDER = (
    "a run folder (written by replay --out, compare --out or a sweep) holds "
    "jobs.csv, timeline.csv, manifest.json and summary.json"
)
#: the tables of a run folder, each .csv or .parquet (``--format``)
_RUN_TABLES = ("jobs", "timeline")
_CDF_POINTS = 2000
_FILE_POINTS = 4000
_TERM_POINTS = 400
#: one marker per series in terminal charts, named in the key under the chart
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#: line styles of runs 1-10, 11-20, ... in files (the 10 colours repeat)
_LINE_STYLES = ("-", "--", ":", "-.")
#: eighths of a character cell, for text bars
_EIGHTHS = " ▏▎▍▌▋▊▉"


# --- reading runs -----------------------------------------------------------------------


def _read_columns(
    path: Path, names: Sequence[str], what: str, allow_empty: bool = False
) -> dict[str, np.ndarray]:
    """Finite float columns ``names`` of the CSV file ``path`` (with ``allow_empty``, an
    empty field becomes NaN, e.g. the JCT of an unfinished job).

    Raises
    ------
    GpuschedError
        The file is missing, not UTF-8 CSV, lacks a column, has a row of the wrong
        length or a field that is not a number; ``what`` says what the file should be.
    """
    if not path.is_file():
        raise GpuschedError(f"{show_name(path)}: not found ({_RUN_FOLDER})")
    rows = csv_rows(
        path,
        what,
        names,
        lambda missing: (
            f"no column {', '.join(map(repr, missing))} (expected {what}, "
            f"with columns {', '.join(names)})"
        ),
        if_empty=" with a header line",
        nan="nan",  # a Parquet NaN that is not null: refused, as "nan" in a CSV is
    )
    _, header = next(rows)
    idx = [header.index(n) for n in names]
    cols: list[list[float]] = [[] for _ in names]
    for line, row in rows:
        for out, i, name in zip(cols, idx, names, strict=True):
            out.append(_number(row[i], path, line, name, allow_empty))
    return {n: np.asarray(c, dtype=np.float64) for n, c in zip(names, cols, strict=True)}


def _number(text: str, path: Path, line: int, column: str, allow_empty: bool) -> float:
    if not text and allow_empty:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (value < 0 and column in NON_NEGATIVE):
        # NaN would also crash plotext; a JCT is worded as the other readers word it
        expected = (
            seconds_expected(column, empty=allow_empty)
            if column in NON_NEGATIVE
            else "a number" + (", or empty" if allow_empty else "")
        )
        raise field_error(path, line, column, expected, text)
    return value


def _read_json(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``; a one-line error if missing, corrupt or not an object."""
    where = show_name(path)
    if not path.exists():  # a folder or a pipe there is named as such below
        raise GpuschedError(f"{where}: not found ({_RUN_FOLDER})")
    try:
        data = parse_json(read_regular_file(path))
    except UnicodeDecodeError:
        raise GpuschedError(f"{where}: not a UTF-8 text file (expected {what})") from None
    except json.JSONDecodeError as exc:
        raise GpuschedError(
            f"{where}:{exc.lineno}: not valid JSON ({exc.msg}; expected {what})"
        ) from None
    except NotAFile as exc:
        raise GpuschedError(f"{where}: {exc} (expected {what})") from None
    except ValueError as exc:  # JSON no reader can take (nested too deeply)
        raise GpuschedError(f"{where}: not valid JSON ({exc}; expected {what})") from None
    except OSError as exc:
        raise GpuschedError(f"{where}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise GpuschedError(f"{where}: expected {what} (a JSON object), got {type(data).__name__}")
    return data


@dataclass(slots=True)
class _Run:
    label: str
    fields: dict[str, str]
    jct: np.ndarray  # finished jobs' JCT, sorted, s
    time_s: np.ndarray
    queued: np.ndarray
    busy: np.ndarray
    n_gpus: int | None
    #: what the run's rows are: "gpus" (gang jobs), "roles" (GPUs held on the resource
    #: ledger) or "chunks" (jobs of data chunks: the queue counts chunks, the busy units
    #: are the edge workers)
    kind: str = "gpus"


def _n_gpus(manifest: dict[str, Any], path: Path, edge_only: bool = False) -> int | None:
    """GPUs (workers) in the run's cluster (None when the manifest has no cluster);
    ``edge_only``: of its edge servers (``tier = "edge"``)."""
    from gpusched.results.explain import manifest_servers

    servers = manifest_servers(manifest, path)
    if servers is None:
        return None
    if edge_only:
        groups = manifest["cluster"]["servers"]
        edge = [g.get("tier") == "edge" for g in groups for _ in range(int(g["count"]))]
        return sum(n for n, e in zip(servers, edge, strict=True) if e) or None
    return sum(servers) or None


def _run_fields(manifest: dict[str, Any], path: Path) -> dict[str, str]:
    """What tells runs apart: policy with its parameters, cluster, trace, seed."""
    where = show_name(path)
    policy, params, trace = (manifest.get(k) for k in ("policy", "params", "trace"))
    if not isinstance(policy, str) or not policy:
        raise GpuschedError(f"{where}: field 'policy' expected the policy's name, got {policy!r}")
    if not isinstance(params, dict | None):
        raise GpuschedError(f"{where}: field 'params' expected an object, got {params!r}")
    cluster = manifest.get("cluster")
    spec = cluster.get("cluster") if isinstance(cluster, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    seed = manifest.get("seed")
    fields = {
        "policy": " ".join([policy] + [f"{k}={v}" for k, v in (params or {}).items()]),
        "cluster": str(name or ""),
        "trace": Path(str(trace)).name.split(".")[0] if trace else "",
        "seed": "" if seed is None else f"seed={seed}",
    }
    return {k: show_text(v) for k, v in fields.items()}  # labels and keys on the terminal


def _load_run(folder: Path) -> _Run:
    """A run folder's tables, each checked against its manifest (:func:`open_run`)."""
    for name in ("manifest.json", "summary.json"):
        if not (folder / name).exists():  # what is there is named by _read_json
            extra = " (without it the run did not finish)" if name == "summary.json" else ""
            raise GpuschedError(f"{show_name(folder / name)}: not found{extra}; {_RUN_FOLDER}")
    manifest = _read_json(folder / "manifest.json", "the manifest of a run")
    rf = open_run(folder)
    tables = {}
    for stem in _RUN_TABLES:
        path = rf.table(stem, required=False)
        if path is None:
            raise GpuschedError(f"{show_name(folder / (stem + '.csv'))}: not found; {_RUN_FOLDER}")
        tables[stem] = path
    jobs = _read_columns(tables["jobs"], ["jct"], "the per-job table of a run", True)
    rf.check_rows(tables["jobs"], len(jobs["jct"]))
    # one utilisation figure per family, summary.json's gpu_utilization over time: jobs
    # placed by roles hold GPUs on the ledger (held_gpus), not GPU indices; jobs of chunks
    # count the edge workers busy (busy_edge), not the cloud's
    header = _header(tables["timeline"])
    kind = "roles" if "held_gpus" in header else "chunks" if "busy_edge" in header else "gpus"
    busy = {"roles": "held_gpus", "chunks": "busy_edge"}.get(kind, "busy_gpus")
    tl = _read_columns(
        tables["timeline"],
        ["time_s", busy, "queued"],
        "the timeline of a run",
    )
    rf.check_rows(tables["timeline"], len(tl["time_s"]))
    _read_json(folder / "summary.json", "the summary of a run")
    return _Run(
        label=show_text(folder.name),
        fields=_run_fields(manifest, folder / "manifest.json"),
        jct=np.sort(jobs["jct"][~np.isnan(jobs["jct"])]),
        time_s=tl["time_s"],
        queued=tl["queued"],
        busy=tl[busy],
        n_gpus=_n_gpus(manifest, folder / "manifest.json", edge_only=kind == "chunks"),
        kind=kind,
    )


def _header(path: Path) -> list[str]:
    """The column names of a run table (CSV or Parquet); empty if it cannot be read (the
    reading that follows says why)."""
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        with path.open(newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh), [])
    except (OSError, ValueError, csv.Error):
        return []


def _is_run(folder: Path) -> bool:
    return any((folder / name).is_file() for name in RUN_FILES) or any(
        has_table(folder, stem) for stem in _RUN_TABLES
    )


def expand_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders named by ``paths``: a run folder itself, or every run inside a folder
    written by ``compare --out`` (or any folder whose subfolders are runs). A folder is
    taken for a run when it holds any of jobs.csv, timeline.csv, manifest.json and
    summary.json (:func:`plot_runs` then checks it has all four); subfolders that are
    not runs are named on stderr.

    Raises
    ------
    GpuschedError
        A path is missing, is a file, or holds no run.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        where = show_name(p)
        if not p.exists():
            raise GpuschedError(f"{where}: no such file or folder")
        if not p.is_dir():
            raise GpuschedError(
                f"{where}: not a run folder or a sweep (expected a run folder, a folder of run "
                "folders, or a sweep folder or its results.csv)"
            )
        if _is_run(p):
            out.append(p)
            continue
        if (p / "error.txt").is_file():
            raise GpuschedError(
                f"{where}: a failed sweep cell, with no run to plot (see error.txt)"
            )
        if (p / "cells").is_dir():
            raise GpuschedError(
                f"{where}: a sweep folder without results.csv (gpusched sweep writes it at the "
                "end; run the sweep again to finish it)"
            )
        subs = sorted(d for d in p.iterdir() if d.is_dir() and not d.name.startswith("."))
        runs = [d for d in subs if _is_run(d)]
        if not runs:
            seeds = (p / "compare-runs.csv").is_file()  # compare --seeds: DIR/<policy>/seed-<s>/
            deeper = [d for d in subs if seeds and any(_is_run(e) for e in d.iterdir())]
            if deeper:
                raise GpuschedError(
                    f"{where}: its runs are two levels down (compare --seeds: "
                    "<policy>/seed-<s>); give one policy's folder, e.g. "
                    f"{show_name(deeper[0])}, or the runs themselves"
                )
            raise GpuschedError(f"{where}: no run in this folder or its subfolders ({_RUN_FOLDER})")
        others = [d.name for d in subs if d not in runs]
        if others:
            n = len(others)
            sys.stderr.write(
                f"note: {where}: left out {n} subfolder{'s' if n > 1 else ''} that "
                f"{'hold' if n > 1 else 'holds'} no run: {', '.join(map(show_name, others))}\n"
            )
        out.extend(runs)
    return out


def is_sweep(path: str | Path) -> bool:
    """Whether ``path`` is a sweep results table or a folder holding results.csv."""
    p = Path(path)
    if p.is_dir():
        return (p / "results.csv").is_file()
    if p.is_file() and p.suffix == ".csv":
        try:
            with p.open(newline="", encoding="utf-8-sig") as fh:  # a BOM: a spreadsheet's save
                header = next(csv.reader(fh), [])
        except (UnicodeDecodeError, csv.Error):
            return False
        return "cell" in header and "status" in header
    return False


# --- drawing helpers --------------------------------------------------------------------


@dataclass(slots=True)
class _Series:
    label: str
    x: np.ndarray
    y: np.ndarray


@dataclass(slots=True)
class _Chart:
    title: str
    xlabel: str
    ylabel: str
    series: list[_Series]
    step: bool = False
    logx: bool = False
    xticks: tuple[list[float], list[str]] | None = None


def check_save(save: str | Path) -> Path:
    """``save`` as a path, after checking it can be written as a PNG or SVG (a missing
    folder is made when it is written).

    Raises
    ------
    GpuschedError
        A suffix other than .png or .svg, an existing folder of that name, a path under a
        file (:func:`gpusched.io.files.check_out_file`), or matplotlib not installed.
    """
    path = Path(save)
    if path.suffix.lower() not in SAVE_SUFFIXES:
        raise GpuschedError(f"--save {show_name(save)}: expected a .png or .svg file name")
    check_out_file(path, "--save", "a .png or .svg file name")
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
    kinds = {r.kind for r in runs}
    chunks = kinds == {"chunks"}
    queued = "queued chunks" if chunks else "queued jobs" if "chunks" not in kinds else "queued"
    what = "edge workers" if chunks else "GPUs"
    return [
        _Chart("JCT CDF", "JCT (s)", "fraction of jobs", cdf, step=True, logx=logx),
        _Chart("Queue length", f"time ({unit})", queued, queue, step=True),
        _Chart(
            ("Edge utilisation" if chunks else "GPU utilisation") if with_gpus else f"Busy {what}",
            f"time ({unit})",
            f"busy {what} / {what}" if with_gpus else f"busy {what}",
            util,
            step=True,
        ),
    ]


def _letters(labels: Sequence[str]) -> dict[str, str]:
    """One marker letter per distinct label, in order (cycling after 52)."""
    distinct = list(dict.fromkeys(labels))
    return {label: _LETTERS[i % len(_LETTERS)] for i, label in enumerate(distinct)}


def _key(entries: Sequence[tuple[str, str]], width: int) -> list[str]:
    """The key under a terminal chart: ``A label   B label``, wrapped at ``width``."""
    lines = ["key:"]
    items = [f"{letter} {label}" for letter, label in entries]
    if len(items) > 1:
        items.append("(where lines meet, the later letter shows)")
    for item in items:
        if len(lines[-1]) + 3 + len(item) > width and lines[-1].strip() != "key:":
            lines.append("    ")
        lines[-1] += ("   " if lines[-1].strip() not in ("", "key:") else " ") + item
    return lines


def _terminal(chart: _Chart, width: int, height: int, color: bool, marks: dict[str, str]) -> str:
    """One line chart as text (plotext 6 figure API or plotext 5 pyplot-like API): each
    series drawn with its letter in ``marks``, and a key of the letters under the chart
    (plotext's own legend would sit on top of the lines)."""
    try:
        import plotext as plt
    except ImportError:
        raise GpuschedError("terminal plots need plotext: pip install plotext") from None
    series = [s for s in chart.series if s.x.size]
    if hasattr(plt, "plot"):  # plotext 5
        plt.clear_figure()
        plt.plotsize(width, height)
        for s in series:
            plt.plot(s.x.tolist(), s.y.tolist(), marker=marks[s.label])
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
    else:
        fig = plt.figure
        fig.clear()
        fig.plot_size(width, height)
        for s in series:
            sig = fig.signal(s.x.tolist(), s.y.tolist(), marker=marks[s.label])
            sig.lines()
            fig.draw(sig)
        fig.legend(active=False)
        fig.title(chart.title)
        fig.label(chart.xlabel, axis="x")
        fig.label(chart.ylabel, axis="y")
        if chart.logx:
            fig.ruler("x").scale("log")
        if chart.xticks:
            fig.ruler("x").ticks(*chart.xticks)
        text = fig.build().string(colorless=not color)
        fig.clear()
    labelled = [s for s in series if s.label]
    if labelled:
        text += "\n" + "\n".join(_key([(marks[s.label], s.label) for s in labelled], width))
    return text


def _term_size(n_charts: int) -> tuple[int, int, bool]:
    cols, lines = shutil.get_terminal_size((100, 40))
    width = max(40, min(cols, 140))
    height = max(16, min(22, (lines - 2) // max(n_charts, 1)))
    return width, height, sys.stdout.isatty()


def _write(text: str) -> str:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return text


def _savefig(fig: Figure, path: Path) -> Path:
    # no creation date in an SVG, so the same data give the same file
    metadata: dict[str, Any] = {"Date": None} if path.suffix.lower() == ".svg" else {}
    make_parent(path)
    try:
        fig.savefig(path, format=path.suffix.lower().lstrip("."), dpi=110, metadata=metadata)
    except OSError as exc:
        where = show_name(path)
        raise GpuschedError(f"--save {where}: cannot write ({exc.strerror or exc})") from None
    return path


def _run_figure(charts: Sequence[_Chart]) -> Figure:
    """The run charts side by side, one legend for all of them under the axes (in as
    many columns as fit); after 10 runs the colours repeat with another line style."""
    from matplotlib.figure import Figure

    labels = [s.label for s in charts[0].series]
    fig_w = 5.2 * len(charts)
    n_cols = max(1, min(len(labels), int(fig_w / (0.8 + 0.075 * max(map(len, labels))))))
    legend_h = 0.3 + 0.22 * math.ceil(len(labels) / n_cols)
    fig = Figure(figsize=(fig_w, 4.2 + legend_h), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(charts), squeeze=False)).ravel()
    for ax, chart in zip(axes, charts, strict=True):
        for i, s in enumerate(chart.series):
            if s.x.size:
                ax.step(
                    s.x,
                    s.y,
                    where="post",
                    label=s.label,
                    linewidth=1.2,
                    color=f"C{i % 10}",
                    linestyle=_LINE_STYLES[i // 10 % len(_LINE_STYLES)],
                )
        ax.set_title(chart.title)
        ax.set_xlabel(chart.xlabel)
        ax.set_ylabel(chart.ylabel)
        if chart.logx:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    handles, shown = axes[0].get_legend_handles_labels()
    if shown:
        fig.legend(handles, shown, loc="outside lower center", ncols=n_cols, fontsize="small")
    return fig


# --- text bars (terminal bar charts) -----------------------------------------------------


def _fmt(value: float) -> str:
    """A compact rendering of a metric value: 279,566 / 19,115.1 / 0.345."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e5:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def _bar(value: float, top: float, width: int) -> str:
    """A horizontal bar of ``value`` on a scale where ``top`` fills ``width`` cells."""
    if top <= 0 or value <= 0 or not math.isfinite(value):
        return ""
    eighths = round(8 * width * min(value / top, 1.0))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def _text_bars(plot: SweepPlot, width: int) -> list[str]:
    """Each panel of a categorical sweep plot as labelled text bars with their values."""
    lines: list[str] = []
    for panel in plot.panels:
        # (label, depth, value, lo, hi); depth 1 = a series under its category
        items: list[tuple[str, int, float, float, float]] = []
        for cat in plot.categories:
            present = [(g, g.xs.index(cat)) for g in panel.groups if cat in g.xs]
            if not present:
                continue
            if len(present) == 1 and (plot.comparison or not present[0][0].label):
                g, i = present[0]
                items.append((cat, 0, g.y[i], g.lo[i], g.hi[i]))
                continue
            items.append((cat, 0, math.nan, math.nan, math.nan))
            items += [(g.label or "-", 1, g.y[i], g.lo[i], g.hi[i]) for g, i in present]
        label_w = max(len("  " * d + s) for s, d, *_ in items)
        values = [
            _fmt(y) + (f"  ({_fmt(lo)}-{_fmt(hi)})" if hi > lo else "") for _, _, y, lo, hi in items
        ]
        value_w = max(len(v) for v in values)
        bar_w = max(10, width - label_w - value_w - 6)
        top = max((y for _, _, y, _, _ in items if math.isfinite(y)), default=0.0)
        lines += ["", panel.title] if panel.title else [""]
        for (label, depth, y, _, _), value in zip(items, values, strict=True):
            name = ("  " * depth + label).ljust(label_w)
            if math.isnan(y):
                lines.append(f"  {name}".rstrip())
            else:
                lines.append(f"  {name}  {_bar(y, top, bar_w).ljust(bar_w)}  {value}")
    return lines


def _sweep_text(plot: SweepPlot) -> str:
    """The sweep plot for the terminal: title, subtitle and notes, then each panel."""
    width, height, color = _term_size(len(plot.panels))
    head = [plot.title] + ([plot.subtitle] if plot.subtitle else [])
    head += [f"note: {n}" for n in plot.notes]
    if not plot.numeric:
        return "\n".join(head + _text_bars(plot, width))
    marks = _letters(plot.series)
    xticks = _numeric_ticks(plot)
    charts = []
    for panel in plot.panels:
        chart = _Chart(
            panel.title or plot.title,
            plot.xlabel,
            plot.ylabel,
            [
                _Series(g.label, np.array([plot.positions[v] for v in g.xs]), g.y)
                for g in panel.groups
            ],
            xticks=xticks,
        )
        charts.append(_terminal(chart, width, height, color, marks))
    return "\n\n".join(["\n".join(head), *charts])


def _numeric_ticks(plot: SweepPlot) -> tuple[list[float], list[str]] | None:
    """Ticks at the swept values when there are few of them."""
    if len(plot.categories) > 12:
        return None
    return [plot.positions[c] for c in plot.categories], list(plot.categories)


# --- sweep figures ----------------------------------------------------------------------


def sweep_figure(
    results_csv: str | Path, metric: str = "avg_jct_s", x: str | None = None
) -> Figure:
    """The matplotlib figure that :func:`plot_sweep` saves, to show or edit from Python.

    Parameters are those of :func:`plot_sweep`. The figure has one axes per panel (hidden
    spares fill the grid), a figure legend under the axes when there is more than one
    series, and a suptitle with the title, subtitle and notes on separate lines.

    Raises
    ------
    GpuschedError
        As :func:`plot_sweep`, or matplotlib not installed.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise GpuschedError(NEED_MATPLOTLIB) from None
    return _draw_sweep(arrange(read_table(_table_path(results_csv), metric), metric, x))


@dataclass(slots=True)
class _Style:
    """A colour and marker per series (by legend order), and the bars side by side."""

    colour: dict[str, str]
    marker: dict[str, str]
    dodge: int  # most bars at one x value

    @classmethod
    def of(cls, plot: SweepPlot) -> _Style:
        at_once = (
            sum(cat in g.xs for g in p.groups) for p in plot.panels for cat in plot.categories
        )
        return cls(
            colour={s: f"C{i % 10}" for i, s in enumerate(plot.series)},
            marker={s: "osD^v<>ph*"[i // 10 % 10] for i, s in enumerate(plot.series)},
            dodge=max(at_once, default=1),
        )


def _draw_lines(ax: Any, panel: Panel, plot: SweepPlot, style: _Style) -> None:
    """Mean lines with a min-max band (where the seeds differ)."""
    for g in panel.groups:
        xs = np.array([plot.positions[v] for v in g.xs])
        colour = style.colour[g.label]
        ax.plot(xs, g.y, marker=style.marker[g.label], color=colour, label=g.label)
        if np.any(g.hi > g.lo):
            ax.fill_between(xs, g.lo, g.hi, color=colour, alpha=0.15, linewidth=0)


def _draw_bars(ax: Any, panel: Panel, plot: SweepPlot, style: _Style) -> None:
    """Bars side by side at each category, with min-max whiskers (where the seeds differ)."""
    width = 0.8 / style.dodge
    for i, cat in enumerate(plot.categories):
        present = [g for g in panel.groups if cat in g.xs]
        for j, g in enumerate(present):
            at = g.xs.index(cat)
            y, lo, hi = g.y[at], g.lo[at], g.hi[at]
            ax.bar(
                i + (j - (len(present) - 1) / 2) * width,
                y,
                width=width * 0.95,
                color=style.colour[g.label],
                yerr=[[y - lo], [hi - y]] if hi > lo else None,
                ecolor="0.25",
                capsize=2,
            )
    ax.set_xlim(-0.6, len(plot.categories) - 0.4)


def _rotate_labels(plot: SweepPlot) -> bool:
    longest = max((len(c) for c in plot.categories), default=0)
    return not plot.numeric and len(plot.categories) * max(longest, 4) > 60


def _legend_columns(plot: SweepPlot, fig_w: float) -> int:
    """Legend columns that fit the figure's width (0: no legend, a single series)."""
    if len(plot.series) < 2:
        return 0
    entry_w = 0.6 + 0.075 * max(map(len, plot.series))
    return max(1, min(len(plot.series), int(fig_w / entry_w)))


def _figure_size(plot: SweepPlot, style: _Style) -> tuple[float, float]:
    """Inches: panels wide enough for their bars, room for labels, legend and title."""
    n_cat = len(plot.categories)
    nrows = math.ceil(len(plot.panels) / plot.ncols)
    bars = 0.42 * n_cat + 0.22 * n_cat * (style.dodge - 1)
    panel_w = 4.6 if plot.numeric else min(9.0, max(3.6, 1.2 + bars))
    longest = max((len(c) for c in plot.categories), default=0)
    labels_h = 0.07 * min(longest, 48) if _rotate_labels(plot) else 0.0
    fig_w = panel_w * plot.ncols
    n_legend = _legend_columns(plot, fig_w)
    legend_h = 0.35 + 0.22 * math.ceil(len(plot.series) / n_legend) if n_legend else 0.0
    title_h = 0.3 * (2 + len(plot.notes))
    return fig_w, 3.4 * nrows + labels_h + legend_h + title_h


def _x_axes(axes: Any, plot: SweepPlot) -> None:
    """Shared x ticks, shown (with the x label) under the lowest panel of each column."""
    n, ncols = len(plot.panels), plot.ncols
    nrows = axes.shape[0]
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    for col in range(min(ncols, n)):
        row = max(r for r in range(nrows) if r * ncols + col < n)
        axes[row][col].set_xlabel(plot.xlabel)
        axes[row][col].tick_params(labelbottom=True)
    if plot.numeric:
        ticks = _numeric_ticks(plot)
        if ticks:
            axes[0][0].set_xticks(ticks[0], ticks[1])
        return
    axes[0][0].set_xticks(range(len(plot.categories)), plot.categories)
    if _rotate_labels(plot):
        for ax in axes.ravel():
            ax.tick_params(axis="x", labelrotation=30, labelsize="small")
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")


def _draw_sweep(plot: SweepPlot) -> Figure:
    """The sweep plot as a figure: the title, subtitle and notes above a grid of panels,
    and the legend (if more than one series) under them, outside the axes."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    style = _Style.of(plot)
    fig = Figure(figsize=_figure_size(plot, style), layout="constrained")
    nrows = math.ceil(len(plot.panels) / plot.ncols)
    axes = fig.subplots(nrows, plot.ncols, squeeze=False, sharex=True)
    for k, panel in enumerate(plot.panels):
        ax = axes[k // plot.ncols][k % plot.ncols]
        (_draw_lines if plot.numeric else _draw_bars)(ax, panel, plot, style)
        if panel.title:
            ax.set_title(panel.title, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        if k % plot.ncols == 0:
            ax.set_ylabel(plot.ylabel)
    _x_axes(axes, plot)
    n_legend = _legend_columns(plot, fig.get_figwidth())
    if n_legend:
        handles: list[Any] = [
            Line2D([], [], color=style.colour[s], marker=style.marker[s], label=s)
            if plot.numeric
            else Patch(color=style.colour[s], label=s)
            for s in plot.series
        ]
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=n_legend,
            fontsize="small",
            title=plot.legend_title or None,
            title_fontsize="small",
        )
    lines = [plot.title] + ([plot.subtitle] if plot.subtitle else [])
    lines += [f"note: {note}" for note in plot.notes]
    fig.suptitle("\n".join(lines), fontsize="medium")
    return fig


def _table_path(results_csv: str | Path) -> Path:
    table = Path(results_csv)
    if table.is_dir():
        table = table / "results.csv"
    if not table.is_file():
        raise GpuschedError(
            f"{table}: sweep results not found (expected a sweep folder holding results.csv, "
            "or the results.csv itself)"
        )
    return table


# --- public -----------------------------------------------------------------------------


def plot_runs(run_dirs: Sequence[str | Path], save: str | Path | None = None) -> Path | str:
    """JCT CDFs, queue length and GPU utilisation over time for one or more runs.

    Parameters
    ----------
    run_dirs
        Run folders (with jobs.csv, timeline.csv, manifest.json and summary.json), or
        folders holding run folders (``compare --out``).
    save
        A ``.png`` or ``.svg`` file to write with matplotlib (its folder must exist);
        None draws in the terminal.

    Returns
    -------
    Path or str
        The file written, or the text drawn on stdout.

    Raises
    ------
    GpuschedError
        No run found, a missing or corrupt run file, a bad ``save`` path, or ``save``
        without matplotlib installed.
    """
    path = check_save(save) if save is not None else None
    folders = expand_run_dirs(run_dirs)
    runs = [_load_run(f) for f in folders]
    _label_runs(runs)
    if len(runs) > 10:
        sys.stderr.write(
            f"note: {len(runs)} runs in each chart"
            + (": colours repeat with other line styles" if path is not None else "")
            + "; to compare the policies of a sweep, plot the sweep folder instead\n"
        )
    if path is not None:
        return _savefig(_run_figure(_run_charts(runs, _FILE_POINTS)), path)
    charts = _run_charts(runs, _TERM_POINTS)
    width, height, color = _term_size(len(charts))
    marks = _letters([r.label for r in runs])
    return _write("\n\n".join(_terminal(c, width, height, color, marks) for c in charts))


def plot_sweep(
    results_csv: str | Path,
    metric: str = "avg_jct_s",
    x: str | None = None,
    save: str | Path | None = None,
) -> Path | str:
    """One metric per policy, or against one parameter, from a sweep's results table.

    The cells are averaged over seeds (files show the min-max over seeds as whiskers or
    a band) and split into panels, one per trace and cluster that vary. What is held
    fixed is named in the title; cells left out (failed, without a value, or of
    policies without the ``x`` parameter) and series drawn as a mean of several
    parameter combinations are named in notes under the title.

    Parameters
    ----------
    results_csv
        A sweep's results.csv, or the sweep's output folder.
    metric
        A summary column (e.g. ``avg_jct_s``, ``p95_jct_s``, ``gpu_utilization``).
    x
        ``policy`` (a bar per policy and parameter combination, coloured by policy), a
        parameter name (the policies that have it, a line per combination of their other
        parameters), or ``cluster``, ``trace``, ``seed``. Default: ``policy`` when
        several policies ran, else the first parameter that varies.
    save
        A ``.png`` or ``.svg`` file to write with matplotlib (its folder must exist);
        None draws in the terminal.

    Returns
    -------
    Path or str
        The file written, or the text drawn on stdout. When saving, the notes are
        also written to stderr.

    Raises
    ------
    GpuschedError
        Not a results table, an unknown metric or column, no finished cell, a bad
        ``save`` path, or ``save`` without matplotlib installed.
    """
    path = check_save(save) if save is not None else None
    plot = arrange(read_table(_table_path(results_csv), metric), metric, x)
    if path is None:
        return _write(_sweep_text(plot))
    for note in plot.notes:
        sys.stderr.write(f"note: {note}\n")
    return _savefig(_draw_sweep(plot), path)
