"""Plots of runs and sweeps: terminal output, PNG/SVG files of the right type, the sweep
figure's structure (panels, legend, title), and the one-line error for each bad input.

Sweep tables are written here in the format of ``gpusched sweep`` (results.csv) with
values from a formula, so each bar and line can be checked against the formula.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from gpusched.errors import GpuschedError
from gpusched.experiments.run import compare
from gpusched.results.plot import (
    NEED_MATPLOTLIB,
    expand_run_dirs,
    is_sweep,
    plot_runs,
    plot_sweep,
    sweep_figure,
)
from gpusched.results.sweep_plot import MAX_BARS, MAX_SERIES
from tests.helpers import seal

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: the policy variants of examples/sweep.toml: (policy, parameters)
VARIANTS: list[tuple[str, dict[str, str]]] = [
    ("fifo", {"backfill": "false"}),
    ("fifo", {"backfill": "true"}),
    ("srtf", {}),
    ("tiresias", {"starve": "0.0", "thresholds": "3250,7200,18000"}),
    ("tiresias", {"starve": "0.0", "thresholds": "1000,10000"}),
    ("tiresias", {"starve": "2.0", "thresholds": "3250,7200,18000"}),
    ("tiresias", {"starve": "2.0", "thresholds": "1000,10000"}),
]


def jct(trace: int, cluster: int, variant: int, seed: int) -> float:
    """The avg_jct_s of a cell in the tables written by :func:`write_grid`."""
    return 1000.0 * (trace + 1) + 100.0 * cluster + 10.0 * variant + seed


def write_table(path: Path, rows: list[dict[str, Any]], params: Sequence[str]) -> Path:
    """results.csv as run_sweep writes it; each row: trace, cluster, policy, params (dict),
    seed, status and metric values (avg_jct_s, gpu_utilization)."""
    header = ["cell", "status", "trace", "cluster", "policy", "params", "seed", *params]
    header += ["n_jobs", "avg_jct_s", "gpu_utilization", "sched_delay_ms_avg", "error"]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i, r in enumerate(rows):
            p = r["params"]
            w.writerow(
                [f"c{i}", r.get("status", "ok"), r["trace"], r["cluster"], r["policy"]]
                + [" ".join(f"{k}={v}" for k, v in p.items()), r["seed"]]
                + [p.get(k, "") for k in params]
                + [6, r.get("avg_jct_s", ""), r.get("gpu_utilization", ""), "", r.get("error", "")]
            )
    return path


def write_grid(
    folder: Path,
    traces: Sequence[str] = ("synth-500", "philly-2000"),
    clusters: Sequence[str] = ("default", "n32g4"),
    seeds: Sequence[int] = (0,),
    variants: Sequence[tuple[str, dict[str, str]]] = VARIANTS,
) -> Path:
    """A finished sweep's results.csv over traces x clusters x variants x seeds."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "trace": t,
            "cluster": c,
            "policy": pol,
            "params": params,
            "seed": s,
            "avg_jct_s": jct(ti, ci, vi, s),
            "gpu_utilization": 0.5,
        }
        for ti, t in enumerate(traces)
        for ci, c in enumerate(clusters)
        for vi, (pol, params) in enumerate(variants)
        for s in seeds
    ]
    params = list(dict.fromkeys(k for _, p in variants for k in p))
    return write_table(folder / "results.csv", rows, params)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``compare --out``: tiny under fifo and srtf on the testbed cluster."""
    out = tmp_path_factory.mktemp("cmp")
    compare("tiny", ["fifo", "srtf"], out=out, cluster="testbed-4x4")
    return out


@pytest.fixture(scope="module")
def results_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep table: tiresias with 3 starve values and fifo, 2 seeds, one failure."""
    rows: list[dict[str, Any]] = [
        {
            "trace": "tiny",
            "cluster": "default",
            "policy": "tiresias",
            "params": {"starve": str(starve)},
            "seed": seed,
            "avg_jct_s": 100.0 + starve / 10 + seed,
            "gpu_utilization": 0.5,
        }
        for starve in (0.0, 60.0, 600.0)
        for seed in (0, 1)
    ]
    rows += [
        {"trace": "tiny", "cluster": "default", "policy": "fifo", "params": {}, "seed": seed}
        | {"avg_jct_s": 120.0, "gpu_utilization": 0.4}
        for seed in (0, 1)
    ]
    rows.append(
        {"trace": "tiny", "cluster": "default", "policy": "fifo", "params": {"backfill": "maybe"}}
        | {"seed": 0, "status": "failed", "error": "policy 'fifo': bad"}
    )
    folder = tmp_path_factory.mktemp("sweep")
    return write_table(folder / "results.csv", rows, ["starve", "backfill"])


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/sweep.toml's 28 cells: 2 traces x 2 clusters x 7 variants, seed 0."""
    return write_grid(tmp_path_factory.mktemp("grid"))


def plot_app() -> typer.Typer:
    from gpusched.cli.sweep import plot_cmd

    app = typer.Typer(rich_markup_mode=None)  # as gpusched.cli.app
    app.command()(plot_cmd)
    return app


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)


def assert_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag in ("svg", "{http://www.w3.org/2000/svg}svg")
    assert len(path.read_bytes()) > 1000


def visible_axes(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible()]


def legend_texts(fig: Any) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


# --- runs -------------------------------------------------------------------------------


def test_expand_run_dirs(runs: Path) -> None:
    found = expand_run_dirs([runs])
    assert [p.name for p in found] == ["00-fifo", "01-srtf"]
    assert expand_run_dirs([found[0]]) == [found[0]]
    with pytest.raises(GpuschedError, match="no run in this folder"):
        expand_run_dirs([runs.parent])
    assert not is_sweep(runs) and not is_sweep(found[0])


def test_plot_runs_files(runs: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = plot_runs([runs], save=tmp_path / "runs.png")
    assert png == tmp_path / "runs.png"
    assert_png(png)
    svg = plot_runs(expand_run_dirs([runs]), save=tmp_path / "runs.svg")
    assert_svg(svg)
    text = svg.read_text()
    assert "fifo" in text and "srtf" in text  # the legend


def test_plot_runs_terminal(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = plot_runs([runs])
    out = capsys.readouterr().out
    assert out.strip() == str(text).strip()
    for title in ("JCT CDF", "Queue length", "GPU utilisation"):
        assert title in out
    # plotext's own legend is off (it covers the lines): a key under each chart instead
    assert out.count("key: A fifo   B srtf") == 3
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


def test_many_runs_are_noted(runs: Path, tmp_path: Path, capsys) -> None:
    for i in range(11):
        shutil.copytree(runs / "00-fifo", tmp_path / f"{i:02d}")
    (tmp_path / "failed").mkdir()
    (tmp_path / "failed" / "error.txt").write_text("boom\n")
    text = str(plot_runs([tmp_path]))
    err = capsys.readouterr().err
    assert f"note: {tmp_path}: left out 1 subfolder that holds no run: failed" in err
    assert "note: 11 runs in each chart; to compare the policies of a sweep" in err
    assert text.count("key: A 00   B 01   C 02") == 3  # same policy: labelled by folder


# --- sweeps: arrangement and figures -----------------------------------------------------


def test_several_policies_plot_as_a_comparison_by_default(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    table = write_grid(tmp_path, clusters=["n32g4"], seeds=(0, 1))
    fig = sweep_figure(table)
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["trace=synth-500", "trace=philly-2000"]
    assert legend_texts(fig) == ["fifo", "srtf", "tiresias"]
    title = fig.get_suptitle()
    assert title.splitlines()[0] == "avg_jct_s by policy — cluster n32g4"
    assert "panels: trace" in title and "mean over seeds 0, 1" in title
    labels = [t.get_text() for t in axes[0].get_xticklabels()]
    assert labels == [" ".join([pol, *(f"{k}={v}" for k, v in p.items())]) for pol, p in VARIANTS]
    for ti, ax in enumerate(axes):
        heights = [bar.get_height() for bar in ax.patches]
        assert heights == pytest.approx([jct(ti, 0, vi, 0) + 0.5 for vi in range(len(VARIANTS))])
        # a bar's colour is its policy's
        colours = [bar.get_facecolor() for bar in ax.patches]
        assert colours[0] == colours[1] != colours[2] != colours[3] == colours[6]


def test_x_policy_with_many_cells_facets_instead_of_a_28_entry_legend(
    grid: Path, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    fig = sweep_figure(grid, x="policy")
    assert len(visible_axes(fig)) == 4  # trace x cluster
    assert legend_texts(fig) == ["fifo", "srtf", "tiresias"]
    assert "trace=philly-2000 · cluster=n32g4" in [ax.get_title() for ax in fig.axes]
    assert fig.get_suptitle().splitlines()[0] == "avg_jct_s by policy — seed 0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied"
        assert_png(plot_sweep(grid, x="policy", save=tmp_path / "p.png"))


def test_x_param_plots_the_policies_that_have_it_and_names_the_others(
    grid: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    fig = sweep_figure(grid, x="starve")
    title = fig.get_suptitle()
    assert title.splitlines()[0] == "avg_jct_s vs starve — policy tiresias, seed 0"
    assert "note: left out fifo, srtf: they have no parameter 'starve'" in title
    assert legend_texts(fig) == ["thresholds=3250,7200,18000", "thresholds=1000,10000"]
    ax = visible_axes(fig)[0]  # synth-500, default
    lines = ax.get_lines()
    assert [list(line.get_xdata()) for line in lines] == [[0.0, 2.0], [0.0, 2.0]]
    assert list(lines[0].get_ydata()) == [jct(0, 0, 3, 0), jct(0, 0, 5, 0)]
    assert list(lines[1].get_ydata()) == [jct(0, 0, 4, 0), jct(0, 0, 6, 0)]
    plot_sweep(grid, x="backfill", save=None)
    out = capsys.readouterr().out
    assert "note: left out srtf, tiresias: they have no parameter 'backfill'" in out


def test_terminal_comparison_names_every_policy(
    grid: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = str(plot_sweep(grid))
    assert capsys.readouterr().out.strip() == text.strip()
    assert text.splitlines()[0] == "avg_jct_s by policy — seed 0"
    for policy in ("fifo", "srtf", "tiresias"):
        assert f"\n  {policy}" in text
    bars = [line for line in text.splitlines() if line.startswith("  tiresias starve=2.0")]
    assert len(bars) == 2 * 4  # two variants in each of the 4 panels
    # the first panel's last bar: tiresias starve=2.0 thresholds=1000,10000
    assert bars[1].split()[-1] == f"{jct(0, 0, 6, 0):,.1f}"


def test_terminal_line_chart_has_a_key(grid: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = str(plot_sweep(grid, x="starve"))
    capsys.readouterr()
    assert text.count("key: A thresholds=3250,7200,18000   B thresholds=1000,10000") == 4
    assert "note: left out fifo, srtf: they have no parameter 'starve'" in text


def test_too_many_series_split_by_policy_or_averaged(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    # 3 policies x 6 values of 'a' = 18 series by cluster: one panel per policy
    variants = [(p, {"a": str(a)}) for p in ("p1", "p2", "p3") for a in range(6)]
    table = write_grid(tmp_path / "split", traces=["t"], variants=variants)
    fig = sweep_figure(table, x="cluster")
    assert [ax.get_title() for ax in visible_axes(fig)] == ["policy=p1", "policy=p2", "policy=p3"]
    assert legend_texts(fig) == [f"a={a}" for a in range(6)]
    assert "one panel per policy: 18 series would not fit one legend" in fig.get_suptitle()
    # 2 policies x 12 values: too many per panel even so; each policy is drawn as its mean
    variants = [(p, {"a": str(a)}) for p in ("p1", "p2") for a in range(12)]
    assert 12 > MAX_SERIES
    table = write_grid(tmp_path / "mean", traces=["t"], variants=variants)
    fig = sweep_figure(table, x="cluster")
    assert legend_texts(fig) == ["p1 (mean of 12)", "p2 (mean of 12)"]
    assert "each policy's parameter combinations are drawn as their mean" in fig.get_suptitle()
    heights = [bar.get_height() for bar in visible_axes(fig)[0].patches]
    # bars: (default: p1, p2), (n32g4: p1, p2); p1 = variants 0-11, p2 = 12-23
    mean = [
        np.mean([jct(0, c, v, 0) for v in range(12 * p, 12 * p + 12)])
        for c in (0, 1)
        for p in (0, 1)
    ]
    assert heights == pytest.approx(mean)


def test_comparison_of_too_many_variants_merges_the_largest_policy(tmp_path: Path) -> None:
    variants = [("big", {"a": str(a)}) for a in range(MAX_BARS + 6)] + [("srtf", {})]
    table = write_grid(tmp_path, traces=["t"], clusters=["c"], variants=variants)
    text = str(plot_sweep(table))
    assert f"  big (mean of {MAX_BARS + 6})" in text and "\n  srtf" in text
    assert f"note: big: its {MAX_BARS + 6} parameter combinations are one bar" in text


def test_real_sweep_plots_as_a_comparison(tmp_path: Path, capsys) -> None:
    """A sweep run by gpusched (not a hand-written table) plots each policy."""
    from gpusched.experiments.sweep import parse_spec, run_sweep

    spec = parse_spec(
        'traces = ["tiny"]\nclusters = ["default", "testbed-4x4"]\n'
        'policies = ["fifo", "srtf", "tiresias"]\n[params.fifo]\nbackfill = [false, true]\n'
    )
    result = run_sweep(spec, out=tmp_path / "sw", processes=False, n_workers=1)
    text = str(plot_sweep(result.out, metric="p95_jct_s"))
    capsys.readouterr()
    assert text.splitlines()[0] == "p95_jct_s by policy — trace tiny, seed 0"
    for label in ("fifo backfill=false", "fifo backfill=true", "srtf", "tiresias"):
        assert text.count(f"\n  {label} ") == 2  # one bar per cluster


def test_plot_sweep_files_and_terminal(results_csv: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    assert is_sweep(results_csv) and is_sweep(results_csv.parent)
    assert_png(plot_sweep(results_csv, "avg_jct_s", "starve", save=tmp_path / "s.png"))
    assert_svg(plot_sweep(results_csv.parent, "gpu_utilization", "policy", save=tmp_path / "s.svg"))
    err = capsys.readouterr().err
    assert "note: left out fifo: it has no parameter 'starve'" in err
    assert "note: left out 1 failed cell" in err
    text = str(plot_sweep(results_csv, x="starve"))
    assert (
        text.splitlines()[0] == "avg_jct_s vs starve — trace tiny, cluster default, policy tiresias"
    )
    assert "mean over seeds 0, 1; band: min-max" in text


# --- help -------------------------------------------------------------------------------


def test_help_shows_the_plot_extra() -> None:
    res = CliRunner().invoke(plot_app(), ["--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    text = " ".join(res.output.split())  # help lines wrap
    assert "needs matplotlib: gpusched[plot])" in text
    assert "[default: (avg_jct_s)]" in text


# --- bad inputs: one line, naming the file and what was expected -------------------------


def run_plot(*args: str | Path) -> str:
    """``gpusched plot ARGS`` that must fail: its one-line error."""
    res = CliRunner().invoke(plot_app(), [str(a) for a in args])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def test_a_compare_seeds_folder_points_to_its_runs(runs: Path, tmp_path: Path) -> None:
    """compare --seeds keeps its runs at <policy>/seed-<s>/: plot on its folder said there
    was no run in its subfolders."""
    (tmp_path / "cmp" / "fifo").mkdir(parents=True)
    shutil.copytree(runs / "00-fifo", tmp_path / "cmp" / "fifo" / "seed-1")
    (tmp_path / "cmp" / "compare-runs.csv").write_text("policy,seed\nfifo,1\n")
    line = run_plot(tmp_path / "cmp")
    assert "two levels down" in line and f"{tmp_path / 'cmp' / 'fifo'}" in line, line


@pytest.fixture()
def run_copy(runs: Path, tmp_path: Path) -> Path:
    """A copy of one run folder, to break."""
    return Path(shutil.copytree(runs / "00-fifo", tmp_path / "run"))


def test_bad_folder(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_plot(empty) == f"error: {empty}: no run in this folder or its subfolders (" + (
        "a run folder (written by replay --out, compare --out or a sweep) holds jobs.csv, "
        "timeline.csv, manifest.json and summary.json)"
    )
    assert run_plot(tmp_path / "nope") == f"error: {tmp_path / 'nope'}: no such file or folder"
    (tmp_path / "notes.txt").write_text("hello\n")
    assert "notes.txt: not a run folder or a sweep" in run_plot(tmp_path / "notes.txt")
    (tmp_path / "cell").mkdir()
    (tmp_path / "cell" / "error.txt").write_text("boom\n")
    assert "cell: a failed sweep cell" in run_plot(tmp_path / "cell")
    (tmp_path / "sweep" / "cells").mkdir(parents=True)
    assert "sweep: a sweep folder without results.csv" in run_plot(tmp_path / "sweep")


@pytest.mark.parametrize("name", ["jobs.csv", "timeline.csv", "summary.json", "manifest.json"])
def test_run_file_missing(run_copy: Path, name: str) -> None:
    (run_copy / name).unlink()
    line = run_plot(run_copy)
    if name in ("jobs.csv", "timeline.csv"):  # the manifest records it: incomplete
        assert line == (
            f"error: {run_copy / name}: missing (or not a plain file), but manifest.json "
            "records it; the run folder is incomplete"
        )
        return
    assert line.startswith(f"error: {run_copy / name}: not found")
    assert "holds jobs.csv, timeline.csv, manifest.json and summary.json" in line


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "jobs.csv",
            None,
            "{path}:3: column 'jct': expected a number of seconds >= 0, or empty, got 'soon'",
        ),
        ("jobs.csv", "job_id,finish\nj0,3\n", "{path}: no column 'jct' (expected the per-job"),
        ("jobs.csv", "", "{path}: empty (expected the per-job table of a run"),
        ("timeline.csv", "time_s,busy_gpus,queued\n0,1,0\n5,2\n", "{path}:3: 2 fields, expected 3"),
        (
            "timeline.csv",
            "time_s,busy_gpus,queued\n0,1,0\n5,2,\n",
            "{path}:3: column 'queued': expected a number, got ''",
        ),
        (
            "timeline.csv",
            "time_s,busy_gpus,queued\n0,nan,0\n",
            "{path}:2: column 'busy_gpus': expected a number, got 'nan'",
        ),
        ("timeline.csv", b"\xff\xfe\x00garbage", "{path}: not a UTF-8 text file"),
        ("summary.json", '{"n_jobs": 6,', "{path}:1: not valid JSON (Expecting property name"),
        ("manifest.json", "[1, 2]", "{path}: expected the manifest of a run (a JSON object)"),
        ("manifest.json", None, "{path}: field 'cluster.servers[0].gpus' expected a whole"),
    ],
    ids=[
        "jct-not-a-number",
        "no-jct-column",
        "empty-jobs",
        "short-row",
        "empty-field",
        "nan",
        "not-utf8",
        "bad-json",
        "manifest-not-object",
        "bad-servers",
    ],
)
def test_run_file_corrupt(run_copy: Path, name: str, content: Any, expected: str) -> None:
    path = run_copy / name
    if content is None and name == "jobs.csv":
        lines = path.read_text().splitlines()
        head = lines[0].split(",")
        row = lines[2].split(",")
        row[head.index("jct")] = "soon"
        lines[2] = ",".join(row)
        content = "\n".join(lines) + "\n"
    elif content is None:
        manifest = json.loads(path.read_text())
        manifest["cluster"]["servers"][0]["gpus"] = "four"
        content = json.dumps(manifest)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    if name != "manifest.json":
        seal(run_copy)  # a table the manifest vouches for: its fields are what is checked
    assert run_plot(run_copy).startswith("error: " + expected.format(path=path))


def test_unknown_metric_or_x(grid: Path, runs: Path) -> None:
    table = grid
    assert run_plot(grid.parent, "--metric", "nope").startswith(
        f"error: {table}: no metric 'nope' (expected one of: n_jobs, avg_jct_s,"
    )
    assert run_plot(grid.parent, "--x", "nope") == (
        f"error: {table}: no column 'nope' for --x (expected a parameter: backfill, starve, "
        "thresholds; or policy, cluster, trace, seed)"
    )
    line = run_plot(grid.parent, "--metric", "sched_delay_ms_avg")
    assert line.startswith(f"error: {table}: no finished cell has a value of sched_delay_ms_avg")
    for option in ("--metric", "--x"):
        assert run_plot(runs, option, "avg_jct_s").startswith(
            f"error: {option} applies to a sweep (a sweep folder or its results.csv); {runs}"
        )


def test_an_empty_metric_is_refused(grid: Path) -> None:
    """``--metric ''`` (an unset shell variable) plotted avg_jct_s without a word."""
    assert run_plot(grid.parent, "--metric", "").startswith(f"error: {grid}: no metric ''")


def test_a_results_table_with_a_byte_order_mark_is_a_sweep(
    results_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """results.csv saved by a spreadsheet starts with a UTF-8 BOM: it was 'not a run
    folder or a sweep', and its first column not 'cell'."""
    bom = tmp_path / "results.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + results_csv.read_bytes())
    assert is_sweep(bom)
    res = CliRunner().invoke(plot_app(), [str(bom)])
    assert res.exit_code == 0, res.output
    plain = CliRunner().invoke(plot_app(), [str(results_csv)])
    assert res.output.replace(str(bom), "X") == plain.output.replace(str(results_csv), "X")


def test_bad_results_table(tmp_path: Path) -> None:
    table = write_grid(tmp_path)
    lines = table.read_text().splitlines()
    lines[2] = lines[2].replace(",1010.0,", ",fast,")
    table.write_text("\n".join(lines) + "\n")
    assert run_plot(table) == f"error: {table}:3: column 'avg_jct_s' expects a number, got 'fast'"
    (tmp_path / "bad.csv").write_text("cell,status,trace\nc0,ok,tiny\n")
    assert run_plot(tmp_path / "bad.csv").startswith(
        f"error: {tmp_path / 'bad.csv'}: not a sweep results table: no column cluster, policy, "
        "params, seed"
    )


@pytest.mark.parametrize(
    ("save", "expected"),
    [
        (
            "afile/p.png",
            "error: --save {save} is under {parent}, which is a file, not a folder",
        ),
        ("p.pdf", "error: --save {save}: expected a .png or .svg file name"),
        ("adir.png", "error: --save {save}: is a folder; expected a .png or .svg file name"),
    ],
    ids=["under-a-file", "suffix", "is-a-folder"],
)
def test_bad_save_path(runs: Path, grid: Path, tmp_path: Path, save: str, expected: str) -> None:
    path = tmp_path / save
    (tmp_path / "adir.png").mkdir()
    (tmp_path / "afile").write_text("")
    message = expected.format(save=path, parent=path.parent)
    assert run_plot(runs, "--save", path) == message
    assert run_plot(grid.parent, "--save", path) == message


def test_save_in_a_missing_folder_makes_it(runs: Path, grid: Path, tmp_path: Path) -> None:
    """``plot --save new/p.svg`` makes ``new/``, as ``replay -o`` and ``workload -o`` do."""
    for src, name in ((runs, "runs.svg"), (grid.parent, "grid.svg")):
        path = tmp_path / "new" / "deeper" / name
        r = CliRunner().invoke(plot_app(), [str(src), "--save", str(path)])
        assert r.exit_code == 0, r.output
        assert path.read_text().lstrip().startswith("<?xml")


def test_save_without_matplotlib(
    runs: Path, results_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(GpuschedError) as info:
        plot_runs([runs], save=tmp_path / "x.png")
    assert (
        str(info.value)
        == NEED_MATPLOTLIB
        == "saving plots needs matplotlib: pip install 'gpusched[plot]'"
    )
    with pytest.raises(GpuschedError, match="gpusched\\[plot\\]"):
        plot_sweep(results_csv, save=tmp_path / "x.svg")
    assert not (tmp_path / "x.png").exists()
    assert run_plot(runs, "--save", tmp_path / "x.png") == f"error: {NEED_MATPLOTLIB}"


def test_plot_cmd(runs: Path, results_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    runner = CliRunner()
    res = runner.invoke(
        plot_app(),
        [str(runs / "00-fifo"), str(runs / "01-srtf"), "--save", str(tmp_path / "r.png")],
    )
    assert res.exit_code == 0, res.output
    assert_png(tmp_path / "r.png")
    res = runner.invoke(
        plot_app(),
        [
            str(results_csv.parent),
            "-m",
            "gpu_utilization",
            "--x",
            "starve",
            "--save",
            str(tmp_path / "s.svg"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert_svg(tmp_path / "s.svg")
    res = runner.invoke(plot_app(), [str(results_csv.parent)])
    assert res.exit_code == 0 and "avg_jct_s by policy" in res.output
    assert run_plot(results_csv.parent, runs).startswith("error: plot one sweep at a time")


def test_parameter_named_like_a_metric_keeps_its_sweep_column() -> None:
    """The sweep writes a parameter that clashes with a metric as param_<name>; the plot
    must read that column, not the metric's."""
    from gpusched.results.sweep_plot import _param_columns

    header = ["cell", "status", "params", "avg_jct_s", "param_avg_jct_s", "param_cell", "x"]
    rows = [{"params": "avg_jct_s=3 cell=1 x=2"}]
    assert _param_columns(header, rows) == {
        "avg_jct_s": "param_avg_jct_s",
        "cell": "param_cell",
        "x": "x",
    }


@pytest.mark.parametrize("value", ["default", ["a"], 3])
def test_a_cluster_that_is_not_an_object_leaves_the_run_unlabelled(
    run_copy: Path, tmp_path: Path, value: Any
) -> None:
    # manifest.cluster.cluster given as a string or a list was an AttributeError traceback;
    # the name only labels the run (explain reads the folder alike)
    path = run_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["cluster"]["cluster"] = value
    path.write_text(json.dumps(manifest))
    res = CliRunner().invoke(plot_app(), [str(run_copy), "--save", str(tmp_path / "p.svg")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.svg").is_file()
