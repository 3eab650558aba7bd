"""Sweeps: spec parsing, the grid, a 2 x 2 x 2 sweep on a Dask LocalCluster, resuming,
failing cells, an existing scheduler address, and the ``sweep`` command; then the hostile
cases: stale inputs, half-written cells, two sweeps into one folder, a sweep killed with
kill -9, and bad specs and output folders."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpusched.errors import GpuschedError
from gpusched.metrics import SUMMARY_KEYS
from gpusched.sweep import (
    FIXED_COLUMNS,
    SweepResult,
    cell_dir,
    cells,
    load_spec,
    parse_spec,
    plan,
    run_sweep,
)
from gpusched.synth import synth_trace
from gpusched.trace import write_trace

pytest.importorskip("distributed")

OUTPUT_FILES = {"jobs.csv", "timeline.csv", "summary.json", "manifest.json"}


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second tiny trace: 12 synthetic jobs of at most 16 GPUs (fits both clusters)."""
    path = tmp_path_factory.mktemp("traces") / "small.csv"
    write_trace(synth_trace(12, seed=3, n_gpus_cluster=16, load=0.9, max_duration_s=3600.0), path)
    return path


def grid_text(trace: Path, *, extra: str = "") -> str:
    return f"""
traces = ["tiny", "{trace}"]
clusters = ["default", "testbed-4x4"]
policies = ["fifo", "srtf"]
seeds = [0]
{extra}
"""


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


# --- the spec and the grid --------------------------------------------------------------


def test_parse_spec_grid_and_params() -> None:
    spec = parse_spec(
        """
traces = ["tiny"]
policies = ["fifo", "tiresias"]
seeds = [0, 1]
slot = 2.0
out = "here"
[params.fifo]
backfill = [false, true]
[params.tiresias]
starve = [0.0, 60.0]
thresholds = ["3250,7200,18000", "1000,5000"]
"""
    )
    assert spec.clusters == ("default",)
    assert spec.slot_s == 2.0 and spec.out == "here"
    grid = cells(spec)
    # fifo: 2 values x 2 seeds; tiresias: 2 x 2 values x 2 seeds
    assert len(grid) == 4 + 8
    assert len({c.cell_id for c in grid}) == len(grid)
    fifo = [c for c in grid if c.policy == "fifo"]
    assert {c.param_pairs[0] for c in fifo} == {"backfill=false", "backfill=true"}
    ti = grid[-1]
    assert ti.param_pairs == ["starve=60.0", "thresholds=1000,5000"] and ti.seed == 1
    assert all(c.slot_s == 2.0 for c in grid)
    # ids are stable across parses, and change when the slot changes
    again = cells(parse_spec(spec_text_with_slot(2.0)))
    other = cells(parse_spec(spec_text_with_slot(1.0)))
    assert again[0].cell_id != other[0].cell_id
    assert again[0].cell_id == cells(parse_spec(spec_text_with_slot(2.0)))[0].cell_id


def spec_text_with_slot(slot: float) -> str:
    return f'traces = ["tiny"]\npolicies = ["fifo"]\nslot = {slot}\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('policies = ["fifo"]', "'traces' is required"),
        ('traces = ["tiny"]\npolicies = []', "non-empty list"),
        ('traces = ["tiny"]\npolicies = ["fifo"]\nseeds = [1.5]', "'seeds'"),
        ('traces = ["tiny"]\npolicies = ["fifo"]\nslot = 0', "'slot'"),
        ('traces = ["tiny"]\npolicies = ["fifo"]\ncluster = ["x"]', "unknown key(s) cluster"),
        ('traces = ["tiny"]\npolicies = ["fifo"]\n[params.srtf]\nx = [1]', "[params.srtf]"),
        ('traces = ["tiny"]\npolicies = ["fifo"]\n[params.fifo]\nbackfill = []', "non-empty list"),
        ('traces = ["tiny"\n', "invalid TOML"),
    ],
)
def test_parse_spec_errors(text: str, message: str) -> None:
    with pytest.raises(GpuschedError, match=None) as info:
        parse_spec(text, "spec.toml")
    assert message in str(info.value)
    assert str(info.value).startswith("spec.toml")


def test_relative_inputs_resolve_next_to_the_spec(tmp_path: Path, small_trace: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.csv").write_bytes(small_trace.read_bytes())
    spec_file = tmp_path / "sub" / "sweep.toml"
    spec_file.write_text('traces = ["mine.csv", "tiny"]\npolicies = ["fifo"]\n')
    grid = cells(load_spec(spec_file))
    assert grid[0].trace == "mine.csv"
    assert grid[0].trace_input == str((tmp_path / "sub" / "mine.csv").resolve())
    assert grid[1].trace_input == "tiny"  # a bundled name stays a name
    with pytest.raises(GpuschedError, match="sweep spec not found"):
        load_spec(tmp_path / "nope.toml")


def test_example_spec_parses() -> None:
    spec = load_spec(Path(__file__).resolve().parents[1] / "examples" / "sweep.toml")
    grid = cells(spec)
    assert len(grid) == 28
    assert {c.policy for c in grid} == set(spec.policies)


# --- running ----------------------------------------------------------------------------


def test_sweep_2x2x2_on_local_cluster(tmp_path: Path, small_trace: Path) -> None:
    """2 traces x 2 clusters x 2 policies on a process LocalCluster with 2 workers."""
    psutil = pytest.importorskip("psutil")
    spec = parse_spec(grid_text(small_trace))
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    seen: list[tuple[int, int, str]] = []
    result = run_sweep(
        spec,
        out=tmp_path / "out",
        n_workers=2,
        processes=True,
        progress=lambda done, total, cell, res: seen.append((done, total, res["status"])),
    )
    assert (result.n_cells, result.n_ran, result.n_skipped, result.failed) == (8, 8, 0, [])
    assert [d for d, _, _ in seen] == list(range(1, 9)) and {t for _, t, _ in seen} == {8}

    rows = read_rows(result.results_csv)
    assert len(rows) == 8
    header = list(rows[0])
    assert header[: len(FIXED_COLUMNS)] == list(FIXED_COLUMNS)
    assert set(SUMMARY_KEYS) <= set(header)
    assert {r["status"] for r in rows} == {"ok"}
    assert {(r["trace"], r["cluster"], r["policy"]) for r in rows} == {
        (t, c, p)
        for t in ("tiny", str(small_trace))
        for c in ("default", "testbed-4x4")
        for p in ("fifo", "srtf")
    }
    for r in rows:
        assert int(r["n_finished"]) == int(r["n_jobs"]) > 0
        folder = result.out / "cells" / r["cell"]
        assert {p.name for p in folder.iterdir()} == OUTPUT_FILES | {"cell.json"}
        assert json.loads((folder / "summary.json").read_text())["avg_jct_s"] == float(
            r["avg_jct_s"]
        )
    assert not (result.out / ".staging").exists() and not (result.out / ".lock").exists()
    if result.results_parquet is not None:
        pq = pytest.importorskip("pyarrow.parquet")
        assert pq.read_table(result.results_parquet).num_rows == 8
    # the LocalCluster's worker processes are gone (multiprocessing's resource tracker,
    # started with the first spawn, lives as long as this process and is not counted)
    left = [
        p
        for p in me.children(recursive=True)
        if p.pid not in before
        and p.is_running()
        and "resource_tracker" not in " ".join(p.cmdline())
    ]
    assert left == []


def test_resume_runs_only_unfinished_cells(tmp_path: Path, small_trace: Path) -> None:
    spec = parse_spec(grid_text(small_trace))
    out = tmp_path / "out"
    grid = cells(spec)
    first = run_sweep(spec, out=out, n_workers=2, processes=False)
    assert first.n_ran == 8
    assert [st.state for _, st in plan(spec, out)] == ["done"] * 8
    # an interrupted or damaged sweep: three cells are intact, five are not
    shutil.rmtree(cell_dir(out, grid[3]))  # never published
    (cell_dir(out, grid[4]) / "cell.json").unlink()  # killed before its record
    (cell_dir(out, grid[5]) / "manifest.json").unlink()  # a listed output is missing
    timeline = cell_dir(out, grid[6]) / "timeline.csv"
    timeline.write_bytes(timeline.read_bytes()[:-10])  # truncated
    summary = cell_dir(out, grid[7]) / "summary.json"
    summary.write_text(summary.read_text().replace('"n_jobs"', '"n_jobX"'))  # same size, edited
    kept = {c.cell_id: folder_bytes(cell_dir(out, c)) for c in grid[:3]}
    mtimes = {c.cell_id: (cell_dir(out, c) / "summary.json").stat().st_mtime_ns for c in grid[:3]}
    statuses = [st for _, st in plan(spec, out)]
    assert [st.finished for st in statuses] == [True] * 3 + [False] * 5
    assert [st.reason for st in statuses[3:]] == [
        "not run yet",
        "incomplete: no readable cell.json",
        "incomplete: manifest.json is missing",
        f"incomplete: timeline.csv has {timeline.stat().st_size} bytes, "
        f"not {timeline.stat().st_size + 10}",
        "incomplete: summary.json differs from the recorded one",
    ]

    ran: list[str] = []
    second = run_sweep(
        spec,
        out=out,
        n_workers=2,
        processes=False,
        progress=lambda d, t, c, r: ran.append(c.cell_id),
    )
    assert (second.n_ran, second.n_skipped, second.failed) == (5, 3, [])
    assert sorted(ran) == sorted(c.cell_id for c in grid[3:])
    for c in grid[:3]:
        assert folder_bytes(cell_dir(out, c)) == kept[c.cell_id]
        assert (cell_dir(out, c) / "summary.json").stat().st_mtime_ns == mtimes[c.cell_id]
    assert [st.state for _, st in plan(spec, out)] == ["done"] * 8
    assert len(read_rows(second.results_csv)) == 8

    # everything finished: nothing runs, no cluster is started, and the table is rebuilt
    # from the cell folders byte for byte
    table = second.results_csv.read_bytes()
    third = run_sweep(spec, out=out, scheduler="tcp://127.0.0.1:1")  # would fail to connect
    assert (third.n_ran, third.n_skipped) == (0, 8)
    assert third.results_csv.read_bytes() == table


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


BAD_TRACE = "job_id,submit_time,num_gpus,duration\nj1,0,two,60\n"


def test_failing_cell_is_reported_and_others_complete(tmp_path: Path) -> None:
    tiny_cluster = tmp_path / "two-gpus.toml"
    tiny_cluster.write_text(
        '[cluster]\nname = "two-gpus"\n\n[[servers]]\ncount = 1\ngpus = 2\ngpu_type = "V100"\n'
    )
    bad_trace = tmp_path / "bad.csv"
    bad_trace.write_text(BAD_TRACE)
    spec = parse_spec(
        f"""
traces = ["tiny", "{bad_trace}"]
clusters = ["default", "{tiny_cluster}"]
policies = ["fifo"]
seeds = [0]
"""
    )
    failures: list[str] = []
    result = run_sweep(
        spec,
        out=tmp_path / "out",
        n_workers=2,
        processes=False,
        progress=lambda d, t, c, r: r["status"] == "failed" and failures.append(c.describe()),
    )
    # bad.csv fails on both clusters; the 2-GPU cluster is too small for tiny's 8-GPU jobs
    assert result.n_ran == 4 and len(result.failed) == 3 and len(failures) == 3
    messages = {(c.trace, c.cluster): err for c, err in result.failed}
    assert "bad.csv" in messages[(str(bad_trace), "default")]
    assert ("tiny", "default") not in messages
    too_small = messages[("tiny", str(tiny_cluster))]
    assert too_small and "\n" not in too_small
    rows = {(r["trace"], r["cluster"]): r for r in read_rows(result.results_csv)}
    ok = rows[("tiny", "default")]
    assert ok["status"] == "ok" and ok["error"] == "" and float(ok["avg_jct_s"]) > 0
    bad = rows[(str(bad_trace), "default")]
    assert bad["status"] == "failed" and "bad.csv" in bad["error"] and bad["avg_jct_s"] == ""
    folder = result.out / "cells" / bad["cell"]
    assert {p.name for p in folder.iterdir()} == {"error.txt"}
    assert "trace=" + str(bad_trace) in (folder / "error.txt").read_text()
    assert [st.state for _, st in plan(spec, result.out)].count("failed") == 3

    # a re-run retries only the failed cells
    again = run_sweep(spec, out=tmp_path / "out", n_workers=1, processes=False)
    assert (again.n_ran, again.n_skipped, len(again.failed)) == (3, 1, 3)


def test_existing_scheduler_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dask.distributed import LocalCluster

    import gpusched.sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "CONNECT_TIMEOUT_S", 1.0)
    spec = parse_spec('traces = ["tiny"]\npolicies = ["fifo", "srtf"]\n')
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as lc:
        result = run_sweep(spec, out=tmp_path / "out", scheduler=lc.scheduler_address)
        assert (result.n_ran, result.failed) == (2, [])
    with pytest.raises(GpuschedError, match="cannot connect to Dask scheduler"):
        run_sweep(
            parse_spec('traces = ["tiny"]\npolicies = ["sjf"]\n'),
            out=tmp_path / "out2",
            scheduler="tcp://127.0.0.1:9",
        )


# --- the command ------------------------------------------------------------------------


def make_app() -> typer.Typer:
    from gpusched.cli.sweep import plot_cmd, sweep_cmd

    app = typer.Typer()
    app.command("sweep")(sweep_cmd)
    app.command("plot")(plot_cmd)
    return app


def test_sweep_cmd_passes_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusched.sweep as sweep_mod

    spec_file = tmp_path / "s.toml"
    spec_file.write_text('traces = ["tiny"]\npolicies = ["fifo"]\nout = "from-spec"\n')
    calls: list[dict] = []

    def fake_run_sweep(spec, **kwargs):
        calls.append(kwargs)
        out = Path(kwargs["out"])
        return SweepResult(out, [], 1, 0, 1, [], out / "results.csv", None, 0.1)

    monkeypatch.setattr(sweep_mod, "run_sweep", fake_run_sweep)
    runner = CliRunner()
    res = runner.invoke(
        make_app(),
        [
            "sweep",
            str(spec_file),
            "--out",
            str(tmp_path / "o"),
            "--scheduler",
            "tcp://h:8786",
            "-j",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    assert calls[-1]["out"] == tmp_path / "o"
    assert calls[-1]["scheduler"] == "tcp://h:8786" and calls[-1]["n_workers"] == 3
    assert "1 cells: 0 ran, 1 already finished, 0 failed" in res.output
    res = runner.invoke(make_app(), ["sweep", str(spec_file)])
    assert calls[-1]["out"] == Path("from-spec") and calls[-1]["scheduler"] is None


def test_sweep_cmd_runs_reports_failures_and_dry_run(tmp_path: Path) -> None:
    spec_file = tmp_path / "s.toml"
    out = tmp_path / "o"
    (tmp_path / "bad.csv").write_text(BAD_TRACE)
    spec_file.write_text(f'traces = ["tiny", "bad.csv"]\npolicies = ["fifo"]\nout = "{out}"\n')
    runner = CliRunner()
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run"])
    assert res.exit_code == 0 and "2 cells, 0 finished, 2 to run" in res.output
    assert not out.exists()  # a dry run writes nothing
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "-j", "1"])
    assert res.exit_code == 1
    assert "failed: trace=bad.csv cluster=default policy=fifo seed=0:" in res.output
    assert "2 cells: 2 ran, 0 already finished, 1 failed" in res.output
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run"])
    assert "2 cells, 1 finished, 1 to run" in res.output
    assert "done   trace=tiny cluster=default policy=fifo seed=0" in res.output
    assert "failed trace=bad.csv cluster=default policy=fifo seed=0  (" in res.output
    res = runner.invoke(make_app(), ["sweep", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "error: sweep spec not found" in res.output


def test_heavy_imports_stay_inside_commands() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gpusched.cli.sweep, gpusched.sweep, gpusched.plot; "
        "print(sorted(m for m in ('dask', 'distributed', 'plotext', 'matplotlib', 'pyarrow') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]"
