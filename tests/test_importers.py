"""Tests of the source-trace importers (gpusched.importers), on small fixtures in each format."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

from gpusched.errors import GpuschedError, TraceError
from gpusched.importers import (
    IMPORTERS,
    ImportExclusionWarning,
    convert_trace,
    import_trace,
    import_trace_with_report,
)
from gpusched.trace import read_trace

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


def test_gavel_msr_philly() -> None:
    t, rep = import_trace_with_report("gavel-msr-philly", FIX / "gavel_msr.csv")
    assert t.job_id.tolist() == ["0e4a51-0", "0e4a51-1", "6214e9-0"]
    assert t.submit_time.tolist() == [0.0, 6.0, 2.5]
    assert t.num_gpus.tolist() == [1, 2, 4]
    assert t.iterations.tolist() == [95121, 10000, 2000]
    assert np.isnan(t.duration).all()
    assert t.model.tolist() == ["Transformer", "Recommendation", "A3C"]
    assert t.extra["batch_size"].tolist() == ["128", "8192", ""]
    assert t.extra["user"].tolist() == ["0e4a51", "0e4a51", "6214e9"]
    assert rep.excluded == {"seed != 0 (pass seed=None to keep every seed)": 2}
    all_seeds, rep = import_trace_with_report("gavel-msr-philly", FIX / "gavel_msr.csv", seed=None)
    assert len(all_seeds) == 5 and rep.n_excluded == 0
    assert all_seeds.job_id[3] == "1-0e4a51-0" and all_seeds.model[4] == "CycleGAN"
    one_vc, rep = import_trace_with_report(
        "gavel-msr-philly", FIX / "gavel_msr.csv", seed=0, vc="6214e9"
    )
    assert one_vc.job_id.tolist() == ["6214e9-0"] and one_vc.submit_time.tolist() == [0.0]
    assert rep.n_excluded == 4


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
    with pytest.raises(TraceError, match=r"x.csv:1: missing required column 'submit_offset_s'"):
        import_trace("philly-pollux", p)
