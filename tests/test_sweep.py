"""Sweeps: spec parsing, the grid, a 2 x 2 x 2 sweep on a Dask LocalCluster, resuming,
failing cells, an existing scheduler address, and the ``sweep`` command; then the hostile
cases: stale inputs, half-written cells, two sweeps into one folder, a sweep killed with
kill -9, and bad specs and output folders."""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpusched.errors import GpuschedError
from gpusched.experiments.sweep import (
    SweepResult,
    cell_dir,
    cell_status,
    cells,
    keyed_cells,
    load_spec,
    parse_spec,
    plan,
    run_sweep,
)
from gpusched.io.trace import trace_sha256, write_trace
from gpusched.results.metrics import FIXED_COLUMNS, SUMMARY_KEYS
from gpusched.workloads.synth import synth_trace

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
    # every input is found and every policy takes its parameters; 28 distinct keys
    keyed = keyed_cells(spec)
    assert [c for c, _ in keyed] == grid
    assert len({k.digest for _, k in keyed}) == 28


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
    import pyarrow.parquet as pq

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

    import gpusched.experiments.sweep as sweep_mod

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
    import gpusched.experiments.sweep as sweep_mod

    spec_file = tmp_path / "s.toml"
    spec_file.write_text('traces = ["tiny"]\npolicies = ["fifo"]\nout = "from-spec"\n')
    calls: list[dict] = []

    def fake_run_sweep(spec, **kwargs):
        calls.append(kwargs)
        out = Path(kwargs["out"])
        return SweepResult(out, [], 1, 0, 1, [], out / "results.csv", out / "results.parquet", 0.1)

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
    # the dry run reads the traces: bad.csv is refused before anything runs
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run"])
    assert res.exit_code == 2 and "2 cells" not in res.output
    assert res.output.startswith(f"error: {spec_file}: 'traces' entry 'bad.csv': ")
    assert not out.exists()  # a dry run writes nothing
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "-j", "1"])
    assert res.exit_code == 1
    assert "failed: trace=bad.csv cluster=default policy=fifo seed=0:" in res.output
    assert "2 cells: 2 ran, 0 already finished, 1 failed" in res.output
    spec_file.write_text(f'traces = ["tiny"]\npolicies = ["fifo", "sjf"]\nout = "{out}"\n')
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "2 cells, 1 finished, 1 to run" in res.output
    assert "done   trace=tiny cluster=default policy=fifo seed=0" in res.output
    assert "todo   trace=tiny cluster=default policy=sjf seed=0" in res.output
    res = runner.invoke(make_app(), ["sweep", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "error: sweep spec not found" in res.output
    # options a run refuses, a dry run refuses too (it exited 0 with them)
    for bad, said in (
        (["-j", "0"], "--workers must be at least 1, got 0"),
        (["-j", "100000"], "--workers 100000 would start"),
        (["--scheduler", "http://x"], "--scheduler must be a Dask scheduler address"),
    ):
        res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run", *bad])
        assert res.exit_code == 2 and res.output.startswith("error: ") and said in res.output


def test_sweep_format_parquet_writes_parquet_cells_kept_apart_from_csv_ones(
    tmp_path: Path,
) -> None:
    spec_file = tmp_path / "s.toml"
    out = tmp_path / "o"
    spec_file.write_text(f'traces = ["tiny"]\npolicies = ["fifo", "srtf"]\nout = "{out}"\n')
    runner = CliRunner()
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "-j", "1", "--format", "parquet"])
    assert res.exit_code == 0, res.output
    folders = sorted((out / "cells").iterdir())
    assert len(folders) == 2
    for folder in folders:
        names = {p.name for p in folder.iterdir()}
        assert names == {"jobs.parquet", "timeline.parquet", "summary.json", "manifest.json"} | {
            "cell.json"
        }
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--format", "parquet", "--dry-run"])
    assert "2 cells, 2 finished, 0 to run" in res.output, res.output
    # CSV cells are other cells (their own folders and keys), and the same results
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--dry-run"])
    assert "2 cells, 0 finished, 2 to run" in res.output, res.output
    parquet_rows = read_rows(out / "results.csv")
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert len(list((out / "cells").iterdir())) == 4
    csv_rows = read_rows(out / "results.csv")
    for a, b in zip(parquet_rows, csv_rows, strict=True):
        assert (a["policy"], a["avg_jct_s"], a["n_finished"]) == (
            b["policy"],
            b["avg_jct_s"],
            b["n_finished"],
        )
    res = runner.invoke(make_app(), ["plot", str(folders[0])])
    assert res.exit_code == 0, res.output
    res = runner.invoke(make_app(), ["sweep", str(spec_file), "--format", "feather"])
    assert res.exit_code == 2 and "--format must be one of csv, parquet" in res.output


def test_heavy_imports_stay_inside_commands() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gpusched.cli.sweep, gpusched.experiments.sweep, gpusched.results.plot; "
        "print(sorted(m for m in ('dask', 'distributed', 'plotext', 'matplotlib', 'pyarrow') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]"


# --- hostile specs ----------------------------------------------------------------------

BASE = 'traces = ["tiny"]\npolicies = ["fifo"]\n'
BIG_GRID = (
    BASE
    + "[params.fifo]\n"
    + f"a = [{', '.join(map(str, range(400)))}]\n"
    + f"b = [{', '.join(map(str, range(300)))}]\n"
)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # slot and until: NaN, infinities, negative, zero, absurd, wrong types
        (BASE + "slot = nan", ["'slot'", "nan"]),
        (BASE + "slot = inf", ["'slot'", "inf"]),
        (BASE + "slot = -1", ["'slot'", ">= 0.001"]),
        (BASE + "slot = 1e-9", ["'slot'", ">= 0.001"]),
        (BASE + "slot = 1e300", ["'slot'", "<= 1e+06"]),
        (BASE + "slot = true", ["'slot'", "boolean"]),
        (BASE + "slot = '1'", ["'slot'", "string"]),
        (BASE + "until = nan", ["'until'", "nan"]),
        (BASE + "until = inf", ["'until'", "inf"]),
        (BASE + "until = -5", ["'until'", "> 0"]),
        (BASE + "until = 0", ["'until'", "> 0"]),
        (BASE + "until = 1e300", ["'until'", "<= 1e+12"]),
        (BASE + "until = false", ["'until'", "boolean"]),
        # seeds
        (BASE + "seeds = [-1]", ["'seeds'[0]", "from 0 to 4294967295", "-1"]),
        (BASE + "seeds = [0, 4294967296]", ["'seeds'[1]", "4294967296"]),
        (BASE + "seeds = [true]", ["'seeds'[0]", "boolean"]),
        (BASE + "seeds = [nan]", ["'seeds'[0]", "float nan"]),
        (BASE + "seeds = [1, 2, 1]", ["'seeds'", "1 twice"]),
        (BASE + "seeds = []", ["'seeds'", "non-empty"]),
        (BASE + "seeds = 1.5", ["'seeds'", "non-empty list of integers"]),
        # entries: duplicates (also after stripping), wrong types, control characters
        ('traces = ["tiny", " tiny"]\npolicies = ["fifo"]', ["'traces' lists 'tiny' twice"]),
        ('traces = ["tiny"]\npolicies = ["fifo", "fifo"]', ["'policies' lists 'fifo' twice"]),
        ('traces = ["tiny", 3]\npolicies = ["fifo"]', ["'traces'[1]", "integer 3"]),
        ('traces = ["tiny"]\npolicies = [""]', ["'policies'[0]", "non-empty string"]),
        ('traces = ["t\\u0000"]\npolicies = ["fifo"]', ["'traces'[0]", "U+0000"]),
        ('traces = ["tiny"]\npolicies = ["fifo\\nsrtf"]', ["'policies'[0]", "U+000A"]),
        ('traces = ["tiny"]\nclusters = []\npolicies = ["fifo"]', ["'clusters'", "non-empty"]),
        # parameter values: NaN, infinities, absurd magnitudes, nested values, duplicates
        (BASE + "[params.fifo]\nx = [nan]", ["[params.fifo] x[0]", "finite", "nan"]),
        (BASE + "[params.fifo]\nx = [1.0, -inf]", ["[params.fifo] x[1]", "-inf"]),
        (BASE + "[params.fifo]\nx = 1e300", ["[params.fifo] x[0]", "at most 1e+15"]),
        (BASE + "[params.fifo]\nx = [-9223372036854775808]", ["x[0]", "at most 1e+15"]),
        (BASE + "[params.fifo]\nx = [[1, 2]]", ["[params.fifo] x[0]", "array"]),
        (BASE + "[params.fifo]\nx = [{a = 1}]", ["[params.fifo] x[0]", "table"]),
        (BASE + "[params.fifo]\nx = [1979-05-27]", ["[params.fifo] x[0]", "date"]),
        (BASE + "[params.fifo]\nx = []", ["[params.fifo] x", "non-empty"]),
        (BASE + "[params.fifo]\nx = [1, 1]", ["[params.fifo] x", "value 1 twice"]),
        (BASE + "[params.fifo]\nx = [true, 'true']", ["[params.fifo] x", "true twice"]),
        (BASE + '[params.fifo]\nx = ["a\\u0000"]', ["[params.fifo] x[0]", "U+0000"]),
        (BASE + '[params.fifo]\n"a-b" = [1]', ["'a-b' is not a parameter name"]),
        (BASE + '[params.fifo]\n"a=b" = [1]', ["'a=b' is not a parameter name"]),
        (BASE + "params = 3", ["'params' must be tables"]),
        (BASE + "params = {fifo = 3}", ["[params.fifo] must be a table"]),
        # the rest
        (BASE + "out = ''", ["'out'"]),
        (BASE + "out = 5", ["'out'"]),
        (BASE + 'out = "a\\nb"', ["'out'", "U+000A"]),
        (BASE + "drop_oversized = 'yes'", ["'drop_oversized'", "true or false"]),
        (BASE + "drop_oversized = 1", ["'drop_oversized'", "integer"]),
        (BASE + "Traces = ['x']", ["unknown key(s) Traces"]),
        (BASE + "x = " + "[" * 5000, ["invalid TOML", "nested too deeply"]),
        (BIG_GRID, ["120,000 cells", "at most 100,000"]),
    ],
)
def test_hostile_spec_values(text: str, needles: list[str]) -> None:
    with pytest.raises(GpuschedError) as info:
        parse_spec(text, "spec.toml")
    message = str(info.value)
    assert message.startswith("spec.toml: ") and "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_spec_file_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusched.experiments.sweep as sweep_mod

    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(GpuschedError, match="is a folder"):
        load_spec(folder)
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(GpuschedError, match="not a regular file"):
        load_spec(fifo)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b'traces = ["\xff"]\n')
    with pytest.raises(GpuschedError, match=r"not UTF-8 text \(byte 0xff at offset 11\)"):
        load_spec(binary)
    big = tmp_path / "big.toml"
    big.write_text(BASE + "# " + "x" * 200 + "\n")
    monkeypatch.setattr(sweep_mod, "MAX_SPEC_BYTES", 100)
    with pytest.raises(GpuschedError, match="a sweep spec may be at most 100 bytes"):
        load_spec(big)


BAD_CLUSTER = '[cluster]\nname = "bad"\nservers = 0\ngpus_per_server = 4\n'


def tiny_csv() -> Path:
    from gpusched.io.resources import bundled_dir

    return bundled_dir("traces") / "tiny.csv"


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('traces = ["nope.csv"]\npolicies = ["fifo"]', ["'traces' entry 'nope.csv'", "not found"]),
        ('traces = ["' + "x" * 300 + '"]\npolicies = ["fifo"]', ["'traces' entry", "not found"]),
        (
            'traces = ["tiny"]\nclusters = ["bad.toml"]\npolicies = ["fifo"]',
            ["'clusters' entry 'bad.toml'", "cluster.servers", ">= 1"],
        ),
        (
            'traces = ["tiny"]\nclusters = ["no-such"]\npolicies = ["fifo"]',
            ["'clusters' entry 'no-such'", "unknown cluster"],
        ),
        ('traces = ["tiny"]\npolicies = ["nosuch"]', ["'policies' entry 'nosuch'", "unknown"]),
        ('traces = ["tiny"]\npolicies = ["gone.py"]', ["'policies' entry 'gone.py'", "not found"]),
        (
            BASE + "[params.fifo]\nbackfill = [true, 'maybe']",
            ["[params.fifo] backfill = maybe", "expects true or false, got 'maybe'"],
        ),
        (BASE + "[params.fifo]\nnope = [1]", ["[params.fifo] nope = 1", "no parameter 'nope'"]),
        (
            'traces = ["tiny"]\npolicies = ["tiresias"]\n[params.tiresias]\nstarve = [0.0, -1.0]',
            ["[params.tiresias] starve = -1.0", "starve must be a number in [0, 1e+06], got -1.0"],
        ),
        (
            'traces = ["tiny"]\npolicies = ["a-srpt"]\n[params.a-srpt]\ntau = ["nan"]',
            ["[params.a-srpt] tau = nan", "parameter 'tau' expects a number (NaN is not one)"],
        ),
        (
            'traces = ["tiny"]\npolicies = ["a-srpt:tau=inf"]',
            ["'policies' entry 'a-srpt:tau=inf'", "tau must be a number in [0, 1e+09]"],
        ),
        (
            'traces = ["tiny"]\npolicies = ["fifo:backfill=true"]\n'
            '[params."fifo:backfill=true"]\nbackfill = [false]',
            ["backfill: also set in the policy entry"],
        ),
        (
            'traces = ["tiny"]\npolicies = ["fifo:backfill=true,backfill=false"]',
            ["'backfill' is given twice"],
        ),
        # the same run twice: a bundled name and its file; 1 and 1.0 for a float
        (f'traces = ["tiny", "{tiny_csv()}"]\npolicies = ["fifo"]', ["two cells are the same run"]),
        (
            'traces = ["tiny"]\npolicies = ["tiresias"]\n[params.tiresias]\nstarve = [1, 1.0]',
            ["two cells are the same run", "starve=1 ", "starve=1.0 "],
        ),
        # a parameter given its default is the run without it
        (
            'traces = ["tiny"]\npolicies = ["fifo", "fifo:backfill=false"]',
            ["two cells are the same run", "fifo seed=", "fifo:backfill=false seed="],
        ),
        # 0.0 and -0.0 gave two cells of one run
        (
            'traces = ["tiny"]\npolicies = ["tiresias"]\n[params.tiresias]\nstarve = [0.0, -0.0]',
            ["two cells are the same run", "starve=0.0 ", "starve=-0.0 "],
        ),
    ],
)
def test_inputs_and_parameters_are_checked_before_any_work(
    tmp_path: Path, text: str, needles: list[str]
) -> None:
    (tmp_path / "bad.toml").write_text(BAD_CLUSTER)
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(text + "\n")
    spec = load_spec(spec_file)
    out = tmp_path / "out"
    for attempt in (lambda: plan(spec, out), lambda: run_sweep(spec, out=out)):
        with pytest.raises(GpuschedError) as info:
            attempt()
        message = str(info.value)
        assert message.startswith(f"{spec_file}: ") and "\n" not in message
        for needle in needles:
            assert needle in message, (needle, message)
    assert not out.exists()


# --- stale inputs -----------------------------------------------------------------------

NAP_POLICY = '''"""FIFO that sleeps in every decision (a slow policy for tests)."""

import time

from gpusched.core.policy import Decision


class NapPolicy:
    name = "nap"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, *, nap: float = 0.0, rng=None) -> None:
        self.nap = nap

    def decide(self, view, now):
        time.sleep(self.nap)
        return Decision(order=view.queued, blocking=True)
'''


def test_changed_inputs_make_cells_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusched

    trace = tmp_path / "t.csv"
    write_trace(synth_trace(6, seed=1, n_gpus_cluster=8, load=0.9, max_duration_s=600.0), trace)
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "c"\nservers = 2\ngpus_per_server = 4\n')
    policy = tmp_path / "nap.py"
    policy.write_text(NAP_POLICY)
    spec_file = tmp_path / "s.toml"
    spec_file.write_text('traces = ["t.csv"]\nclusters = ["c.toml"]\npolicies = ["nap.py"]\n')
    spec = load_spec(spec_file)
    out = tmp_path / "out"

    def states() -> list[tuple[str, str]]:
        return [(st.state, st.reason) for _, st in plan(spec, out)]

    first = run_sweep(spec, out=out, n_workers=1, processes=False)
    assert (first.n_ran, first.n_stale, first.failed) == (1, 0, [])
    record = json.loads((cell_dir(out, cells(spec)[0]) / "cell.json").read_text())
    assert record["inputs"]["trace"] == trace_sha256(trace)
    assert record["inputs"]["policy"] == trace_sha256(policy)
    # every output's size, and the SHA-256 of summary.json and manifest.json (the hashes
    # cell_status checks; the manifest records each table's)
    assert set(record["files"]) == OUTPUT_FILES
    for name in ("summary.json", "manifest.json"):
        hashed = cell_dir(out, cells(spec)[0]) / name
        assert record["files"][name] == {
            "bytes": hashed.stat().st_size,
            "sha256": trace_sha256(hashed),
        }
    assert record["files"]["jobs.csv"].keys() == {"bytes"}
    jct = first.rows[0]["avg_jct_s"]

    # the trace changes: the cell is stale, runs again, and its row changes with it
    write_trace(synth_trace(6, seed=2, n_gpus_cluster=8, load=0.9, max_duration_s=600.0), trace)
    assert states() == [("stale", "changed since it ran: trace")]
    notes: list[str] = []
    second = run_sweep(spec, out=out, n_workers=1, processes=False, note=notes.append)
    assert (second.n_ran, second.n_skipped, second.n_stale) == (1, 0, 1)
    assert notes == second.notes and "run again because an input changed" in notes[0]
    assert second.rows[0]["avg_jct_s"] != jct
    assert states() == [("done", "")]

    # so does an edit of the cluster file or of the policy file (even a comment)
    cluster.write_text(cluster.read_text() + "nic_gbps = 25\n")
    assert states() == [("stale", "changed since it ran: cluster file")]
    policy.write_text(NAP_POLICY + "# edited\n")
    assert states() == [("stale", "changed since it ran: cluster file, policy file")]
    assert run_sweep(spec, out=out, n_workers=1, processes=False).n_stale == 1
    assert states() == [("done", "")]

    # and a new gpusched version
    monkeypatch.setattr(gpusched, "__version__", "9.9.9")
    (((state, reason),)) = states()
    assert state == "stale" and reason.endswith(" -> 9.9.9")


def test_key_covers_everything_a_result_depends_on() -> None:
    spec = parse_spec(
        'traces = ["tiny"]\npolicies = ["fifo:backfill=true", "fifo:backfill=false", "srtf"]\n'
        "seeds = [0, 1]\n"
    )
    keys = [k for _, k in keyed_cells(spec)]
    assert len({k.digest for k in keys}) == 6
    assert keys[0].record["policy_params"] == ["backfill=true"]
    for changed in ("slot = 2.0", "until = 100.0", "drop_oversized = true"):
        other = keyed_cells(parse_spec(spec_text_with(changed)))[0][1]
        assert other.digest != keyed_cells(parse_spec(spec_text_with("")))[0][1].digest, changed


def test_entry_point_policy_is_keyed_by_its_module_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import gpusched.core.registry as registry
    from gpusched.core import plugins
    from gpusched.experiments.sweep import input_digests

    ep = EntryPoint(
        name="third-party", value="tests.ep_policy:ThirdPartyFIFO", group=registry.GROUP
    )
    monkeypatch.setattr(
        plugins, "entry_points", lambda group: [ep] if group == registry.GROUP else []
    )
    ((cell, key),) = keyed_cells(parse_spec('traces = ["tiny"]\npolicies = ["third-party"]\n'))
    module_file = Path(__file__).parent / "ep_policy.py"
    assert key.record["policy"] == trace_sha256(module_file)
    assert input_digests(cell)["policy"] == key.record["policy"]  # what a worker checks
    ((_, bundled),) = keyed_cells(parse_spec(spec_text_with("")))
    assert bundled.record["policy"] == trace_sha256(registry.bundled_dir("policies") / "fifo.py")


def spec_text_with(extra: str) -> str:
    return f'traces = ["tiny"]\npolicies = ["fifo"]\n{extra}\n'


def test_cell_status_of_forged_or_damaged_folders(tmp_path: Path) -> None:
    """Whatever a cell folder holds, only a complete record of the current key is done."""
    import hashlib

    ((cell, key),) = keyed_cells(parse_spec(BASE))
    out = tmp_path / "out"
    folder = cell_dir(out, cell)
    folder.mkdir(parents=True)
    import gpusched.experiments.sweep as sweep_mod

    outputs = dict.fromkeys(sweep_mod.OUTPUT_FILES, b"x" * 10)
    outputs["summary.json"] = b'{"n_jobs": 6}'
    for name, data in outputs.items():
        (folder / name).write_bytes(data)

    def files(**changes: object) -> dict[str, object]:
        table: dict[str, object] = {
            name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in outputs.items()
        }
        table.update(changes)
        return table

    def status_with(record: object) -> tuple[str, str]:
        text = record if isinstance(record, str) else json.dumps(record)
        (folder / "cell.json").write_text(text)
        st = cell_status(out, cell, key)
        return st.state, st.reason

    good = {"key": key.digest, "inputs": key.record, "files": files()}
    assert status_with(good) == ("done", "")
    assert cell_status(out, cell, key).summary == {"n_jobs": 6}
    # what run_cell records now (the SHA-256 of summary.json and manifest.json) is done too
    sizes_only = {name: {"bytes": len(data)} for name, data in outputs.items()}
    sizes_only["summary.json"] = files()["summary.json"]
    sizes_only["manifest.json"] = files()["manifest.json"]
    assert status_with({**good, "files": sizes_only}) == ("done", "")
    del sizes_only["manifest.json"]["sha256"]  # recorded before manifests vouched for tables
    assert status_with({**good, "files": sizes_only}) == (
        "todo",
        "incomplete: manifest.json differs from the recorded one",
    )
    assert status_with("{not json")[0] == "todo"
    assert status_with([1, 2])[0] == "todo"
    assert status_with({**good, "files": []})[0] == "todo"
    assert status_with({**good, "key": 5})[0] == "todo"
    assert status_with({**good, "key": "0" * 64}) == ("stale", "changed since it ran: key")
    other = {**key.record, "seed": 7}
    assert status_with({**good, "key": "0" * 64, "inputs": other}) == (
        "stale",
        "changed since it ran: seed",
    )
    no_manifest = files()
    del no_manifest["manifest.json"]
    assert status_with({**good, "files": no_manifest}) == (
        "todo",
        "incomplete: manifest.json is not recorded",
    )
    assert status_with({**good, "files": files(**{"../../etc/passwd": {"bytes": 1}})}) == (
        "todo",
        "incomplete: cell.json lists '../../etc/passwd'",
    )
    assert status_with({**good, "files": files(**{"jobs.csv": "big"})})[0] == "todo"
    assert status_with({**good, "files": files(**{"summary.json": {"bytes": 13}})}) == (
        "todo",
        "incomplete: summary.json differs from the recorded one",
    )
    (folder / "summary.json").write_bytes(b"[1, 2, 3, 4, 5]")  # same size, not an object
    outputs["summary.json"] = b"[1, 2, 3, 4, 5]"
    assert status_with({**good, "files": files()}) == (
        "todo",
        "incomplete: summary.json is not a JSON object",
    )
    shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the folder should be")
    assert cell_status(out, cell, key).state == "todo"


def test_run_cell_refuses_inputs_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpusched
    import gpusched.experiments.run as run_mod
    from gpusched.experiments.sweep import run_cell

    trace = tmp_path / "t.csv"
    write_trace(synth_trace(6, seed=1, n_gpus_cluster=8, load=0.9, max_duration_s=600.0), trace)
    spec_file = tmp_path / "s.toml"
    spec_file.write_text('traces = ["t.csv"]\npolicies = ["fifo"]\n')
    ((cell, key),) = keyed_cells(load_spec(spec_file))
    out = tmp_path / "out"
    folder = cell_dir(out, cell)

    # changed between planning and running
    original = trace.read_bytes()
    write_trace(synth_trace(6, seed=2, n_gpus_cluster=8, load=0.9, max_duration_s=600.0), trace)
    res = run_cell(cell, key, str(out))
    assert res["status"] == "failed"
    assert res["error"] == f"trace {trace} changed since the sweep started; run the sweep again"
    assert {p.name for p in folder.iterdir()} == {"error.txt"}

    # changed while the cell ran: nothing is published
    trace.write_bytes(original)
    real_run_into = run_mod.run_into

    def replay_then_edit(*args, **kwargs):
        result = real_run_into(*args, **kwargs)
        trace.write_bytes(original + b"j9,100,1,5\n")
        return result

    monkeypatch.setattr(run_mod, "run_into", replay_then_edit)
    res = run_cell(cell, key, str(out))
    assert res["error"].endswith("changed while the cell ran; run the sweep again")
    assert {p.name for p in folder.iterdir()} == {"error.txt"}
    monkeypatch.setattr(run_mod, "run_into", real_run_into)
    trace.write_bytes(original)

    # a worker with another gpusched version
    monkeypatch.setattr(gpusched, "__version__", "9.9.9")
    res = run_cell(cell, key, str(out))
    assert "this worker runs gpusched 9.9.9" in res["error"]
    monkeypatch.undo()
    assert run_cell(cell, key, str(out))["status"] == "ok"
    assert cell_status(out, cell, key).finished
    assert not (out / ".staging").exists() or not any((out / ".staging").iterdir())


# --- the lock ---------------------------------------------------------------------------


def write_lock(out: Path, **fields: object) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / ".lock").write_text(json.dumps(fields))


def test_lock_refuses_a_live_or_foreign_holder(tmp_path: Path) -> None:
    import socket

    spec_file = write_spec(tmp_path)
    host = socket.gethostname()
    cases = [
        ({"pid": os.getppid(), "host": host}, f"in use by another sweep (pid {os.getppid()} on"),
        ({"pid": 4242, "host": "elsewhere.example"}, "(pid 4242 on elsewhere.example"),
        ({"pid": True, "host": host}, "exists but names no process"),
        ({"host": host}, "exists but names no process"),
    ]
    for i, (fields, needle) in enumerate(cases):
        out = tmp_path / f"out{i}"
        write_lock(out, **fields, started="2024-01-01T00:00:00+00:00")
        with pytest.raises(GpuschedError) as info:
            run_sweep(load_spec(spec_file), out=out, n_workers=1, processes=False)
        assert needle in str(info.value) and str(out / ".lock") in str(info.value)
        assert needle in refusal(spec_file, out)
        assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing else written
    (tmp_path / "out0" / ".lock").write_text("")  # empty: killed between create and write
    assert "names no process" in refusal(spec_file, tmp_path / "out0")


def refusal(spec_file: Path, out: Path) -> str:
    """The one-line error of ``gpusched sweep SPEC -o OUT`` (which must exit 2)."""
    res = CliRunner().invoke(make_app(), ["sweep", str(spec_file), "-o", str(out), "-j", "1"])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def test_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from gpusched.experiments.sweep import SweepLock, read_lock

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(dead.stdout)
    out = tmp_path / "out"
    write_lock(out, pid=pid, host=socket.gethostname(), started="2024-01-01T00:00:00+00:00")
    notes: list[str] = []
    result = run_sweep(parse_spec(BASE), out=out, processes=False, n_workers=1, note=notes.append)
    assert result.failed == [] and result.n_ran == 1
    assert len(notes) == 1 and f"pid {pid} on" in notes[0] and "no longer running" in notes[0]
    assert notes[0].startswith(f"taking over {out / '.lock'}")
    assert not (out / ".lock").exists()

    # our own pid with a token we do not hold: an earlier process that had our pid
    write_lock(out, pid=os.getpid(), host=socket.gethostname(), token="earlier")
    again = run_sweep(parse_spec(BASE), out=out, processes=False)
    assert again.n_ran == 0 and "no longer running" in again.notes[0]

    # a lock this process holds: a second sweep into the folder is refused
    with SweepLock(out) as held:
        assert read_lock(out)["token"] == held.token
        with pytest.raises(GpuschedError, match=f"in use by another sweep \\(pid {os.getpid()}"):
            run_sweep(parse_spec(BASE), out=out, processes=False)
        res = CliRunner().invoke(
            make_app(), ["sweep", str(write_spec(tmp_path)), "-o", str(out), "--dry-run"]
        )
        assert res.exit_code == 0 and f"note: a sweep holds {out}/ (pid {os.getpid()}" in res.output
    assert not (out / ".lock").exists()


def write_spec(tmp_path: Path, text: str = BASE) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


# --- output folders, worker counts, scheduler addresses ---------------------------------


def test_bad_output_folders_are_refused_before_any_work(tmp_path: Path) -> None:
    spec_file = write_spec(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    used = tmp_path / "used"
    (used / "cells").parent.mkdir()
    (used / "cells").write_text("x")
    tabled = tmp_path / "tabled"
    (tabled / "results.csv").mkdir(parents=True)
    linked = tmp_path / "linked"
    linked.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    (linked / ".staging").symlink_to(precious)
    a_run = tmp_path / "run"
    a_run.mkdir()
    (a_run / "manifest.json").write_text("{}")
    a_comparison = tmp_path / "cmp"
    a_comparison.mkdir()
    (a_comparison / "comparison.csv").write_text("policy\n")
    cases = [
        (["-o", ""], "--out: an empty name ''; expected a folder"),
        (["-o", "  "], "--out: an empty name '  '"),
        (["-o", str(a_file)], f"output folder {a_file} is a file, not a folder"),
        (["-o", str(a_file / "sub")], f"is under {a_file}, which is a file"),
        (["-o", str(used)], f"{used / 'cells'} is a file"),
        (["-o", str(tabled)], f"{tabled / 'results.csv'} is a folder"),
        (["-o", "a\tb"], "control characters"),
        (["-o", str(linked)], f"{linked / '.staging'} is a symbolic link"),
        # the sweep's cells and results were added to a replay's or compare's folder,
        # which plot then read as a sweep
        (["-o", str(a_run)], "holds manifest.json: it is the results of a replay"),
        (["-o", str(a_comparison)], "holds comparison.csv"),
        (["-o", str(tmp_path / "o"), "-j", "0"], "--workers must be at least 1, got 0"),
        (["-o", str(tmp_path / "o"), "-j", "100000"], "--workers 100000 would start 100000"),
        (["-o", str(tmp_path / "o"), "--scheduler", "garbage"], "--scheduler must be"),
        (["-o", str(tmp_path / "o"), "--scheduler", "http://h:1"], "--scheduler must be"),
        (["-o", str(tmp_path / "o"), "--scheduler", "tcp://h:99999"], "--scheduler must be"),
    ]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for args, needle in cases:
        for extra in ([], ["--dry-run"]):
            if extra and ("-j" in args or "--scheduler" in args):
                continue  # a dry run neither starts workers nor connects
            res = CliRunner().invoke(make_app(), ["sweep", str(spec_file), *args, *extra])
            assert res.exit_code == 2, (args, res.output)
            lines = res.output.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], (
                args,
                res.output,
            )
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


# --- kill -9 ----------------------------------------------------------------------------


def test_sweep_killed_with_kill_9_resumes_to_the_same_results(tmp_path: Path) -> None:
    """A sweep killed (SIGKILL) after its first cell: a second sweep into the folder is
    refused while it runs; after the kill, the re-run takes the stale lock over, keeps the
    finished cell byte for byte, runs the rest, and every cell's outputs equal those of an
    uninterrupted sweep (results.csv too, but for the wall-clock columns)."""
    import signal
    import subprocess
    import sys

    psutil = pytest.importorskip("psutil")
    (tmp_path / "nap.py").write_text(NAP_POLICY)
    spec_file = write_spec(
        tmp_path,
        'traces = ["tiny"]\npolicies = ["nap.py"]\nseeds = [0, 1, 2]\n'
        '[params."nap.py"]\nnap = 0.15\n',
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from gpusched.cli import app; app()", "sweep", str(spec_file)]
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(
        [*cmd, "-o", str(out), "-j", "1"], stdout=log, stderr=log, env=os.environ
    )
    try:
        deadline = time.monotonic() + 180
        while not list(out.glob("cells/*/cell.json")):
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "no cell finished in time"
            time.sleep(0.05)
        message = refusal(spec_file, out)
        assert f"in use by another sweep (pid {first.pid} on" in message
        workers = psutil.Process(first.pid).children(recursive=True)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        log.close()
    wait_gone(psutil, workers)
    done_before = {p.parent.name: folder_bytes(p.parent) for p in out.glob("cells/*/cell.json")}
    assert 1 <= len(done_before) < 3

    res = CliRunner().invoke(make_app(), ["sweep", str(spec_file), "-o", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "note: taking over" in res.output and f"pid {first.pid} on" in res.output
    assert f"3 cells: {3 - len(done_before)} ran, {len(done_before)} already finished" in res.output
    for name, files in done_before.items():
        assert folder_bytes(out / "cells" / name) == files
    # no lock, staging folder or half-written table is left behind
    assert {p.name for p in out.iterdir()} <= {"cells", "results.csv", "results.parquet"}

    reference = run_sweep(load_spec(spec_file), out=tmp_path / "ref", n_workers=1, processes=False)
    for row in reference.rows:
        mine = folder_bytes(out / "cells" / row["cell"])
        theirs = folder_bytes(reference.out / "cells" / row["cell"])
        for name in ("jobs.csv", "timeline.csv", "manifest.json"):
            assert mine[name] == theirs[name], name
    clock = {"wall_s", "sched_delay_ms_avg", "sched_delay_ms_p95"}
    assert [without(r, clock) for r in read_rows(out / "results.csv")] == [
        without(r, clock) for r in read_rows(reference.results_csv)
    ]


def without(row: dict[str, str], keys: set[str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if k not in keys}


def wait_gone(psutil, procs, timeout_s: float = 30.0) -> None:
    """Wait until the killed sweep's worker processes are gone (or zombies)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return
        time.sleep(0.1)


@pytest.mark.parametrize("n_cells", [3, 4])
def test_compile_once_compiles_the_missing_kernels_for_several_cells(
    monkeypatch: pytest.MonkeyPatch, n_cells: int
) -> None:
    """With the python path's kernels missing from the cache, WARM_UP_CELLS or more cells
    compile them first (and say so); fewer leave each cell to decide for itself."""
    from gpusched.core import warmup
    from gpusched.experiments import sweep

    assert sweep.WARM_UP_CELLS == 4
    compiled: list[str] = []
    monkeypatch.setattr(warmup, "compiled_in_cache", lambda mode: mode != "python")
    monkeypatch.setattr(warmup, "warm_up", compiled.append)
    notes: list[str] = []
    sweep.compile_once(n_cells, notes.append)
    if n_cells >= 4:
        assert compiled == ["python"]
        assert notes == [
            "compiling simulation kernels once for the 4 cells, first run only (up to a minute)"
        ]
    else:
        assert compiled == [] and notes == []


def test_a_local_sweep_compiles_once_before_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpusched.experiments import sweep

    calls: list[int] = []
    monkeypatch.setattr(sweep, "compile_once", lambda n, tell=None: calls.append(n))
    spec = parse_spec(BASE + "seeds = [0, 1, 2, 3, 4]\n")
    result = run_sweep(spec, out=tmp_path / "out", n_workers=1, processes=False)
    assert result.n_ran == 5 and not result.failed and calls == [5]
    again = run_sweep(spec, out=tmp_path / "out", n_workers=1, processes=False)
    assert again.n_ran == 0 and calls == [5, 0]


def test_a_parameter_named_like_a_job_models_metric_gets_its_own_column(tmp_path):
    """fifo-ps with a parameter n_admitted (a metric the parameter-server model adds):
    results.csv held n_admitted twice, which plot then refused."""
    from gpusched.io.resources import bundled_dir
    from tests.helpers import invoke

    here = bundled_dir("policies") / "x.py"
    (tmp_path / "myps.py").write_text(
        "from gpusched.core.registry import sibling_policy\n"
        f"_Base = sibling_policy({str(here)!r}, 'fifo_ps.py')\n\n"
        "class MyPS(_Base):\n"
        "    name = 'myps'\n\n"
        "    def __init__(self, *, n_admitted: int = 0, rng=None):\n"
        "        super().__init__(rng=rng)\n"
    )
    spec = tmp_path / "s.toml"
    spec.write_text(
        'traces = ["ps-20"]\nclusters = ["pd-ors-30"]\npolicies = ["myps.py"]\n'
        '[params."myps.py"]\nn_admitted = [1, 2]\n'
    )
    out = tmp_path / "out"
    r = invoke("sweep", spec, "-o", out, "-j", "1")
    assert r.exit_code == 0, r.output
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert header.count("n_admitted") == 1 and "param_n_admitted" in header
    r = invoke(
        "plot", out, "--metric", "n_admitted", "--x", "n_admitted", "--save", tmp_path / "p.svg"
    )
    assert r.exit_code == 0, r.output
