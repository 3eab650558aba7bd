"""Plots of runs and sweeps: terminal output, PNG/SVG files of the right type, and the
one-line error when matplotlib is missing."""

from __future__ import annotations

import csv
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpusched.errors import GpuschedError
from gpusched.plot import NEED_MATPLOTLIB, expand_run_dirs, is_sweep, plot_runs, plot_sweep
from gpusched.run import compare

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``compare --out``: tiny under fifo and srtf on the testbed cluster."""
    out = tmp_path_factory.mktemp("cmp")
    compare("tiny", ["fifo", "srtf"], out=out, cluster="testbed-4x4")
    return out


@pytest.fixture(scope="module")
def results_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep table as run_sweep writes it: 2 policies, a parameter, 2 seeds, one failure."""
    path = tmp_path_factory.mktemp("sweep") / "results.csv"
    header = ["cell", "status", "trace", "cluster", "policy", "params", "seed", "starve"]
    header += ["n_jobs", "avg_jct_s", "gpu_utilization", "wall_s", "error"]
    rows = []
    for starve in (0.0, 60.0, 600.0):
        for seed in (0, 1):
            jct = 100.0 + starve / 10 + seed
            rows.append(
                [
                    f"t{starve}{seed}",
                    "ok",
                    "tiny",
                    "default",
                    "tiresias",
                    f"starve={starve}",
                    seed,
                    starve,
                    6,
                    jct,
                    0.5,
                    0.01,
                    "",
                ]
            )
    for seed in (0, 1):
        rows.append(
            [f"f{seed}", "ok", "tiny", "default", "fifo", "", seed, "", 6, 120.0, 0.4, 0.01, ""]
        )
    rows.append(
        [
            "bad",
            "failed",
            "tiny",
            "default",
            "fifo",
            "backfill=maybe",
            0,
            "",
            "",
            "",
            "",
            "",
            "policy 'fifo': bad",
        ]
    )
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)


def assert_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag in ("svg", "{http://www.w3.org/2000/svg}svg")
    assert len(path.read_bytes()) > 1000


def test_expand_run_dirs(runs: Path) -> None:
    found = expand_run_dirs([runs])
    assert [p.name for p in found] == ["00-fifo", "01-srtf"]
    assert expand_run_dirs([found[0]]) == [found[0]]
    with pytest.raises(GpuschedError, match="holds no run"):
        expand_run_dirs([runs.parent])
    assert not is_sweep(runs) and not is_sweep(found[0])


def test_plot_runs_files(runs: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = plot_runs([runs], save=tmp_path / "runs.png")
    assert png == tmp_path / "runs.png"
    assert_png(png)
    svg = plot_runs(expand_run_dirs([runs]), save=tmp_path / "sub" / "runs.svg")
    assert_svg(svg)
    text = svg.read_text()
    assert "fifo" in text and "srtf" in text  # the legend


def test_plot_runs_terminal(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = plot_runs([runs])
    out = capsys.readouterr().out
    assert out.strip() == str(text).strip()
    for title in ("JCT CDF", "Queue length", "GPU utilisation", "fifo", "srtf"):
        assert title in out
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


def test_plot_sweep_files_and_terminal(results_csv: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    assert is_sweep(results_csv) and is_sweep(results_csv.parent)
    assert_png(plot_sweep(results_csv, "avg_jct_s", "starve", save=tmp_path / "s.png"))
    # categorical x, and the sweep folder instead of the csv
    assert_svg(plot_sweep(results_csv.parent, "gpu_utilization", "policy", save=tmp_path / "s.svg"))
    text = plot_sweep(results_csv)  # default x: the first varying parameter
    assert "avg_jct_s vs starve (mean over 2 seeds)" in str(text)
    assert "avg_jct_s vs starve" in capsys.readouterr().out


def test_plot_sweep_errors(results_csv: Path, runs: Path) -> None:
    with pytest.raises(GpuschedError, match="no metric 'nope'.*avg_jct_s"):
        plot_sweep(results_csv, "nope")
    with pytest.raises(GpuschedError, match="no column 'backfill'.*starve"):
        plot_sweep(results_csv, x="backfill")
    with pytest.raises(GpuschedError, match="sweep results not found"):
        plot_sweep(runs)
    with pytest.raises(GpuschedError, match=r"\.png or \.svg"):
        plot_sweep(results_csv, save="x.pdf")


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

    from gpusched.cli.sweep import plot_cmd

    app = typer.Typer()
    app.command()(plot_cmd)
    res = CliRunner().invoke(app, [str(runs), "--save", str(tmp_path / "x.png")])
    assert res.exit_code == 2
    assert res.output.strip() == f"error: {NEED_MATPLOTLIB}"


def test_plot_cmd(runs: Path, results_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from gpusched.cli.sweep import plot_cmd

    app = typer.Typer()
    app.command()(plot_cmd)
    runner = CliRunner()
    res = runner.invoke(
        app, [str(runs / "00-fifo"), str(runs / "01-srtf"), "--save", str(tmp_path / "r.png")]
    )
    assert res.exit_code == 0, res.output
    assert_png(tmp_path / "r.png")
    res = runner.invoke(
        app,
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
    res = runner.invoke(app, [str(results_csv.parent)])
    assert res.exit_code == 0 and "avg_jct_s vs starve" in res.output
    res = runner.invoke(app, [str(results_csv.parent), str(runs)])
    assert res.exit_code == 2 and "one sweep at a time" in res.output
