"""Tests of the source-trace importers (gpusched.workloads.importers), on small fixtures in each format."""

from __future__ import annotations

import gzip
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from gpusched.errors import GpuschedError, TraceError
from gpusched.io.trace import read_trace
from gpusched.workloads.importers import (
    IMPORTERS,
    ImportExclusionWarning,
    _gavel_throughputs,
    convert_trace,
    gavel_v100_throughputs,
    import_trace,
    import_trace_with_report,
)

runner = CliRunner()

FIX = Path(__file__).resolve().parent / "fixtures"


def test_registry_keys() -> None:
    assert set(IMPORTERS) == {"philly-pollux", "gavel-msr-philly", "tiresias", "openb"}


def test_unknown_kind_lists_known() -> None:
    with pytest.raises(GpuschedError, match="philly-pollux") as info:
        import_trace("helios", FIX / "philly_pollux.csv")
    assert not isinstance(info.value, TraceError)


def test_philly_pollux(tmp_path: Path) -> None:
    t, rep = import_trace_with_report("philly-pollux", FIX / "philly_pollux.csv")
    assert t.job_id.tolist() == ["31566", "54649", "1984", "54760"]
    assert t.submit_time.tolist() == [0, 235696, 257229, 258252]
    assert t.duration.tolist() == [2240194, 3256045, 2643038, 61]
    assert t.num_gpus.tolist() == [8, 1, 1, 4]
    assert t.extra["user"].tolist() == ["7f04ca", "6214e9", "6214e9", "11cb48"]
    assert "gpu_time_s" not in t.extra
    assert rep.n_rows == rep.n_jobs == 4 and rep.n_excluded == 0
    # gz input, and the canonical file written by convert_trace reads back identical
    gz = tmp_path / "philly.csv.gz"
    gz.write_bytes(gzip.compress((FIX / "philly_pollux.csv").read_bytes()))
    assert IMPORTERS["philly-pollux"](gz) == t
    convert_trace("philly-pollux", gz, tmp_path / "out.csv")
    assert read_trace(tmp_path / "out.csv") == t


# Gavel's V100 "null" throughputs (steps/s) of the fixture's job types, typed in from
# scheduler/oracle_throughputs.json of stanford-futuredata/gavel (commit 19b15c0), not read
# from the bundled table, so that a wrong number or formula in either place fails a test.
GAVEL_V100 = {
    "Transformer (batch size 128)": 5.771210833383417,
    "Recommendation (batch size 8192)": 0.6023546957515021,
    "A3C": 8.233033211429207,
    "ResNet-50 (batch size 64)": 5.4575999796347645,
    "CycleGAN": 4.918494739402234,
}


def test_gavel_msr_philly() -> None:
    t, rep = import_trace_with_report("gavel-msr-philly", FIX / "gavel_msr.csv")
    assert t.job_id.tolist() == ["0e4a51-0", "0e4a51-1", "6214e9-0"]
    assert t.submit_time.tolist() == [0.0, 6.0, 2.5]
    assert t.num_gpus.tolist() == [1, 2, 4]
    assert t.iterations.tolist() == [95121, 10000, 2000]
    # Hand-checked: 95121 steps of Transformer (batch size 128) at 5.7712 steps/s = 4.58 h.
    assert 16481.98 < t.duration[0] < 16481.99
    assert t.duration.tolist() == [
        95121 / GAVEL_V100["Transformer (batch size 128)"],
        10000 / GAVEL_V100["Recommendation (batch size 8192)"],  # 2 GPUs: same rate
        2000 / GAVEL_V100["A3C"],  # 4 GPUs: same rate
    ]
    assert t.model.tolist() == ["Transformer", "Recommendation", "A3C"]
    assert t.extra["batch_size"].tolist() == ["128", "8192", ""]
    assert t.extra["job_type"][1] == "Recommendation (batch size 8192)"
    assert t.extra["user"].tolist() == ["0e4a51", "0e4a51", "6214e9"]
    assert rep.excluded == {
        "seed != 0 (keep every seed with --all-seeds, or seed=None in Python)": 2
    }
    assert any("total_steps / Gavel's measured V100 throughput" in n for n in rep.notes)
    all_seeds, rep = import_trace_with_report("gavel-msr-philly", FIX / "gavel_msr.csv", seed=None)
    assert len(all_seeds) == 5 and rep.n_excluded == 0
    assert all_seeds.job_id[3] == "1-0e4a51-0" and all_seeds.model[4] == "CycleGAN"
    assert all_seeds.duration[3:].tolist() == [
        5000 / GAVEL_V100["ResNet-50 (batch size 64)"],  # 8 GPUs
        3000 / GAVEL_V100["CycleGAN"],
    ]
    one_vc, rep = import_trace_with_report(
        "gavel-msr-philly", FIX / "gavel_msr.csv", seed=0, vc="6214e9"
    )
    assert one_vc.job_id.tolist() == ["6214e9-0"] and one_vc.submit_time.tolist() == [0.0]
    assert rep.n_excluded == 4


def test_gavel_throughput_table_is_read_exactly() -> None:
    """The bundled table holds Gavel's 26 job types, each number read back digit for digit."""
    table = gavel_v100_throughputs()
    path = Path(__file__).resolve().parents[1] / "gpusched" / "data" / "gavel_throughputs.toml"
    text = path.read_text(encoding="utf-8")
    assert "stanford-futuredata/gavel" in text and "scheduler/oracle_throughputs.json" in text
    assert "19b15c0a0d5fe76cb0cf98bcd72c54aed697c44d" in text and "MIT License" in text
    written = dict(re.findall(r'^"([^"]+)" = ([0-9.e+-]+)$', text, flags=re.MULTILINE))
    assert len(table) == len(written) == 26
    assert {k: repr(v) for k, v in table.items()} == written
    families = {re.sub(r" \(batch size \d+\)$", "", k) for k in table}
    assert families == {
        "Transformer",
        "ResNet-18",
        "ResNet-50",
        "LM",
        "Recommendation",
        "CycleGAN",
        "A3C",
    }
    for job_type, rate in GAVEL_V100.items():
        assert table[job_type] == rate
    table.clear()  # a copy: the importer's table is untouched
    assert len(gavel_v100_throughputs()) == 26


def test_gavel_throughput_table_checks_its_file(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text('schema = 1\nworker_type = "v100"\n[steps_per_s]\n"A3C" = 0\n')
    with pytest.raises(GpuschedError, match="'A3C': expected a positive number, got 0"):
        _gavel_throughputs(bad)
    bad.write_text('schema = 2\nworker_type = "v100"\n[steps_per_s]\n"A3C" = 1.5\n')
    with pytest.raises(GpuschedError, match="expected schema = 1"):
        _gavel_throughputs(bad)


GAVEL_HEAD = "seed,vc,line,job_type,total_steps,arrival_time_s,scale_factor\n"


def test_gavel_unknown_job_type_is_excluded(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text(
        GAVEL_HEAD
        + "0,v,0,A3C,10,0,1\n0,v,1,BERT (batch size 8),10,5,1\n1,v,0,BERT (batch size 8),10,0,1\n"
    )
    t, rep = import_trace_with_report("gavel-msr-philly", p)
    assert t.job_id.tolist() == ["v-0"] and t.duration.tolist() == [10 / GAVEL_V100["A3C"]]
    assert rep.excluded == {
        "seed != 0 (keep every seed with --all-seeds, or seed=None in Python)": 1,
        "job_type has no V100 throughput in Gavel's table (nothing to time it with)": 1,
    }
    with pytest.warns(ImportExclusionWarning, match="excluded 1 rows: job_type has no V100"):
        import_trace("gavel-msr-philly", p)


def test_gavel_duration_out_of_bounds_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text(GAVEL_HEAD + "0,v,0,A3C,10,0,1\n0,v,1,Recommendation (batch size 512),1e12,0,1\n")
    with pytest.raises(TraceError) as info:
        import_trace("gavel-msr-philly", p)
    (msg,) = info.value.errors
    assert msg.startswith(
        f"{p}:3: column 'total_steps': 1000000000000.0 steps of 'Recommendation (batch size 512)' "
        "at Gavel's 0.33148208257478157 steps/s on a V100 take "
    )
    assert msg.endswith("s; expected a duration in [0.001, 1e+10] s")


def test_tiresias() -> None:
    with pytest.warns(ImportExclusionWarning, match="excluded 1 rows: num_gpu = 0"):
        t = import_trace("tiresias", FIX / "tiresias_60job.csv")
    assert t.job_id.tolist() == ["0", "1", "2"]
    assert t.submit_time.tolist() == [0, 30, 53]
    assert t.num_gpus.tolist() == [1, 8, 2]
    assert t.duration[:2].tolist() == [164, 147] and np.isnan(t.duration[2])
    assert t.iterations.tolist() == [606, 133, 157]
    assert t.model.tolist() == ["vgg19", "vgg11", "inception4"]
    assert "interval" not in t.extra


def test_openb() -> None:
    t, rep = import_trace_with_report("openb", FIX / "openb_pods.csv")
    assert t.job_id.tolist() == ["openb-pod-0000", "openb-pod-0001", "openb-pod-0004"]
    assert t.submit_time.tolist() == [0, 426961, 699900]
    assert t.duration.tolist() == [12537396, 590, 3590]
    assert t.num_gpus.tolist() == [1, 1, 8]
    assert t.extra["gpu_milli"].tolist() == ["1000", "460", "1000"]
    assert rep.n_rows == 5 and rep.n_jobs == 3
    assert rep.excluded == {
        "CPU-only pod (num_gpu = 0)": 1,
        "never scheduled (no scheduled_time; Pending at trace end)": 1,
    }
    assert any("1 pods with a fractional GPU share" in n for n in rep.notes)
    text = str(rep)
    assert "excluded 1 rows: CPU-only pod" in text and "kept 3 jobs" in text
    t2, rep2 = import_trace_with_report("openb", FIX / "openb_pods.csv", fractional="exclude")
    assert len(t2) == 2 and rep2.n_excluded == 3
    with pytest.raises(GpuschedError):
        import_trace_with_report("openb", FIX / "openb_pods.csv", fractional="round")


def test_no_warning_without_exclusions() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_trace("philly-pollux", FIX / "philly_pollux.csv")


@pytest.mark.parametrize(
    ("kind", "fixture", "line", "col"),
    [
        ("philly-pollux", "philly_pollux_bad.csv", 3, "column 'num_gpus'"),
        ("gavel-msr-philly", "gavel_msr_bad.csv", 3, "column 'arrival_time_s'"),
        ("tiresias", "tiresias_bad.csv", 3, "fields"),
        ("openb", "openb_bad.csv", 3, "column 'num_gpu'"),
    ],
)
def test_bad_input(kind: str, fixture: str, line: int, col: str) -> None:
    path = FIX / fixture
    with pytest.raises(TraceError) as info:
        import_trace(kind, path)
    first = info.value.errors[0]
    assert first.startswith(f"{path}:{line}:") and col in first


def test_tiresias_bad_reports_every_line() -> None:
    with pytest.raises(TraceError) as info:
        import_trace("tiresias", FIX / "tiresias_bad.csv")
    errs = info.value.errors
    assert len(errs) == 2 and errs[1].startswith(f"{FIX / 'tiresias_bad.csv'}:4:")


def test_missing_source_column(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("job_id,submit_time,num_gpus\n1,0,1\n")
    with pytest.raises(TraceError) as info:
        import_trace("philly-pollux", p)
    (msg,) = info.value.errors
    assert msg.startswith(
        f"{p}:1: missing required columns 'submit_offset_s', 'duration_s', 'vc'; "
        "the header has 3 columns: 'job_id', 'submit_time', 'num_gpus'"
    )


# --------------------------------------------------------------------------- hostile input
# The importers read through gpusched.io.trace.CsvTable, so they share the reader's rules.

PHILLY_HEAD = "job_id,submit_time,submit_offset_s,duration_s,num_gpus,gpu_time_s,vc\n"


@pytest.mark.parametrize(
    ("row", "col", "what"),
    [
        ("1,t,0,10,4294967297,0,v", "num_gpus", "an integer in [1, 2147483647]"),
        ("1,t,0,10,1_0,0,v", "num_gpus", "an integer in [1, 2147483647]"),
        ("1,t,0,10,4.0,0,v", "num_gpus", "an integer in [1, 2147483647]"),
        ("1,t,1e300,10,1,0,v", "submit_offset_s", "a number of seconds in [0, 1e+10]"),
        ("1,t,inf,10,1,0,v", "submit_offset_s", "a number of seconds in [0, 1e+10]"),
        ("1,t,0,1e-300,1,0,v", "duration_s", "a number of seconds in [0.001, 1e+10]"),
        ("1,t,0, 10,1,0,v", "duration_s", "a number of seconds in [0.001, 1e+10]"),
    ],
)
def test_importer_rejects_what_the_reader_rejects(
    tmp_path: Path, row: str, col: str, what: str
) -> None:
    p = tmp_path / "p.csv"
    p.write_text(PHILLY_HEAD + "\n" + row + "\n")  # a blank line: the row is on line 3
    with pytest.raises(TraceError) as info:
        import_trace("philly-pollux", p)
    (msg,) = info.value.errors
    assert msg.startswith(f"{p}:3: column '{col}': expected {what}, got ")


def test_gpu_counts_never_wrap(tmp_path: Path) -> None:
    gavel = "seed,vc,line,job_type,total_steps,arrival_time_s,scale_factor\n"
    tiresias = "job_id,num_gpu,submit_time,duration\n"
    openb = "name,num_gpu,gpu_milli,pod_phase,creation_time,deletion_time,scheduled_time\n"
    for kind, text, col in [
        ("gavel-msr-philly", gavel + "0,v,0,A3C,10,0,4294967297\n", "scale_factor"),
        ("tiresias", tiresias + "a,4294967297,0,10\n", "num_gpu"),
        ("openb", openb + "p,4294967296,0,Running,0,10,0\n", "num_gpu"),
        ("gavel-msr-philly", gavel + "18446744073709551616,v,0,A3C,10,0,1\n", "seed"),
    ]:
        p = tmp_path / f"{kind}.csv"
        p.write_text(text)
        with pytest.raises(TraceError) as info:
            import_trace(kind, p)
        assert info.value.errors[0].startswith(f"{p}:2: column '{col}': expected an integer in [")


def test_openb_run_time_below_the_minimum(tmp_path: Path) -> None:
    p = tmp_path / "o.csv"
    head = "name,num_gpu,gpu_milli,pod_phase,creation_time,deletion_time,scheduled_time\n"
    p.write_text(head + "a,1,1000,Running,0,100,0\nb,1,1000,Running,0,5.0001,5\n")
    with pytest.raises(TraceError) as info:
        import_trace("openb", p)
    (msg,) = info.value.errors
    assert msg.startswith(
        f"{p}:3: column 'deletion_time': deletion_time - scheduled_time = {5.0001 - 5!r} s, "
    )
    assert "shorter than the shortest duration gpusched simulates (0.001 s)" in msg


def test_importers_read_files_like_the_reader(tmp_path: Path) -> None:
    bad_gz = tmp_path / "p.csv.gz"
    bad_gz.write_bytes(gzip.compress(b"x")[:10] + b"garbage")
    bad_utf8 = tmp_path / "u.csv"
    bad_utf8.write_bytes(PHILLY_HEAD.encode() + b"1,t\xff,0,10,1,0,v\n")
    tabs = tmp_path / "t.csv"
    tabs.write_text(PHILLY_HEAD.replace(",", "\t"))
    for path, needle in [
        (bad_gz, f"{bad_gz}: cannot read: corrupt gzip data"),
        (tmp_path, f"{tmp_path}: cannot read: it is a directory"),
        (bad_utf8, f"{bad_utf8}:2: byte 0xff (byte 4 of the line) is not valid UTF-8"),
        (tabs, "tab-separated? gpusched reads comma-separated CSV"),
    ]:
        with pytest.raises(TraceError, match=re.escape(needle)):
            import_trace("philly-pollux", path)


def test_tiresias_missing_work_columns(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("job_id,num_gpu,submit_time,iterations\n0,1,0,10\n")
    with pytest.raises(TraceError) as info:
        import_trace("tiresias", p)
    assert info.value.errors[0].startswith(
        f"{p}:1: missing required column 'duration' (or 'iterations' and 'model_name')"
    )


# --------------------------------------------------------------------------- the CLI


def _cli(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_gavel_seed_options(tmp_path: Path) -> None:
    src = FIX / "gavel_msr.csv"
    out = tmp_path / "g.csv"
    r = _cli("trace", "import", "gavel-msr-philly", src, "-o", out, "--all-seeds")
    assert r.exit_code == 0, r.output
    assert len(read_trace(out)) == 5 and "excluded" not in r.output
    r = _cli("trace", "import", "gavel-msr-philly", src, "-o", out, "--seed", "1")
    assert r.exit_code == 0 and read_trace(out).job_id.tolist() == ["0e4a51-0", "0e4a51-1"]
    assert "excluded 3 rows: seed != 1 (keep every seed with --all-seeds" in r.output
    r = _cli("trace", "import", "gavel-msr-philly", src, "-o", out, "--vc", "6214e9")
    assert r.exit_code == 0 and read_trace(out).job_id.tolist() == ["6214e9-0"]


def test_cli_openb_fractional(tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    r = _cli(
        "trace", "import", "openb", FIX / "openb_pods.csv", "-o", out, "--fractional", "exclude"
    )
    assert r.exit_code == 0, r.output
    assert len(read_trace(out)) == 2 and "fractional GPU share" in r.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["philly-pollux", "philly_pollux.csv", "--seed", "1"],
            "--seed applies to 'gavel-msr-philly'",
        ),
        (["tiresias", "tiresias_60job.csv", "--all-seeds"], "--all-seeds applies to"),
        (["openb", "openb_pods.csv", "--vc", "x"], "--vc applies to"),
        (
            ["gavel-msr-philly", "gavel_msr.csv", "--fractional", "whole"],
            "--fractional applies to 'openb'",
        ),
        (["gavel-msr-philly", "gavel_msr.csv", "--seed", "1", "--all-seeds"], "not both"),
        (["openb", "openb_pods.csv", "--fractional", "round"], "fractional must be"),
        (["philly-pollux", "philly_pollux.csv", "-o", "."], "--output .: is a folder; expected"),
    ],
)
def test_cli_import_misuse(tmp_path: Path, args: list[str], needle: str) -> None:
    out = [] if "-o" in args else ["-o", tmp_path / "x.csv"]
    r = _cli("trace", "import", args[0], FIX / args[1], *args[2:], *out)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and needle in r.output and "Traceback" not in r.output


def test_cli_import_directory_and_hostile_name(tmp_path: Path) -> None:
    r = _cli("trace", "import", "openb", tmp_path, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "cannot read: it is a directory" in r.output
    name = tmp_path / "x\ny.csv"
    r = _cli("trace", "import", "openb", name, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and r.output == f"error: file not found: {str(name)!r}\n"


@pytest.mark.parametrize(
    ("kind", "fixture"),
    [
        ("philly-pollux", "philly_pollux.csv"),
        ("tiresias", "tiresias_replay.csv"),
        ("openb", "openb_pods.csv"),
    ],
)
def test_import_then_replay(tmp_path: Path, kind: str, fixture: str) -> None:
    out = tmp_path / "t.csv.gz"
    r = _cli("trace", "import", kind, FIX / fixture, "-o", out)
    assert r.exit_code == 0, r.output
    r = _cli("replay", out, "-P", "fifo", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n_finished"] == len(read_trace(out))


def test_gavel_import_then_replay(tmp_path: Path) -> None:
    """Gavel's work (total_steps) becomes V100 time on import, so the import replays as is."""
    out = tmp_path / "g.csv"
    r = _cli("trace", "import", "gavel-msr-philly", FIX / "gavel_msr.csv", "-o", out)
    assert r.exit_code == 0, r.output
    assert "note: duration = total_steps / Gavel's measured V100 throughput" in r.output
    r = _cli("trace", "stats", out, "--json")
    assert r.exit_code == 0, r.output
    stats = json.loads(r.output)
    durations = sorted(read_trace(out).duration.tolist())
    assert stats["jobs_with_duration"] == 3 and stats["jobs_by_iterations"] == 0
    assert stats["duration_s"]["p50"] == durations[1] and stats["duration_s"]["max"] == durations[2]
    r = _cli("trace", "stats", out)
    assert r.exit_code == 0 and "duration_s  p50: 16,482," in r.output
    r = _cli("replay", out, "-P", "fifo", "--json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["n_finished"] == 3
    # The 7 GPUs fit the default 32-GPU cluster at once: each JCT is the job's duration,
    # rounded up to the 1 s slot.
    assert np.mean(durations) <= summary["avg_jct_s"] <= np.mean(durations) + 1.0


@pytest.mark.parametrize(
    ("option", "needle"), [({"seed": 7}, "--seed 7"), ({"vc": "0e4a5"}, "0e4a51")]
)
def test_gavel_filter_matching_no_row_is_an_error(option, needle) -> None:
    """A mistyped --seed or --vc must not write an empty trace with exit 0."""
    with pytest.raises(GpuschedError, match="matches no row") as err:
        import_trace("gavel-msr-philly", FIX / "gavel_msr.csv", **option)
    assert needle in str(err.value)
