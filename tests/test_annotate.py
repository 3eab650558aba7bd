"""Workload annotation (A-SRPT Sec. V-A 1-b) and the paper's workload preset."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.io.resources import resolve_trace
from gpusched.io.trace import read_trace
from gpusched.jobmodels.catalogue import load_catalogue
from gpusched.jobmodels.pipeline_jobs import parse_config, resolve_config
from gpusched.workloads.a_srpt import a_srpt_workload
from gpusched.workloads.annotate import RECURRENT_SHARE, annotate_trace, recurrent_share
from gpusched.workloads.synth import synth_trace

CAT = load_catalogue()


@pytest.fixture(scope="module")
def philly():
    return read_trace(resolve_trace("philly-2000"))


def test_deterministic_and_seed_dependent(philly):
    a, notes_a = annotate_trace(philly, 7, CAT)
    b, notes_b = annotate_trace(philly, 7, CAT)
    c, _ = annotate_trace(philly, 8, CAT)
    assert a == b and notes_a == notes_b
    assert not (a.model == c.model).all()


def test_calibrated_recurrence_and_notes(philly):
    a, notes = annotate_trace(philly, 0, CAT)
    assert abs(recurrent_share(a.extra["group"]) - RECURRENT_SHARE) < 0.02
    assert any("groups synthesised" in n for n in notes)
    assert not any("users synthesised" in n for n in notes)  # Philly has VCs as users
    t = synth_trace(3000, 1, n_gpus_cluster=64)
    s, notes = annotate_trace(t, 0, CAT)
    assert any("users synthesised" in n for n in notes)
    assert abs(recurrent_share(s.extra["group"]) - RECURRENT_SHARE) < 0.02


def test_groups_share_model_and_config(philly):
    a, _ = annotate_trace(philly, 0, CAT)
    for g in np.unique(a.extra["group"])[:200]:
        rows = a.extra["group"] == g
        assert len(set(a.model[rows])) == 1
        assert len(set(zip(a.num_gpus[rows], a.extra["config"][rows], strict=True))) == len(
            set(a.num_gpus[rows])
        )


def test_configs_fit_gpus_and_iterations_match_duration(philly):
    from gpusched.jobmodels.heavy_edge import alpha_min_estimate

    a, _ = annotate_trace(philly, 0, CAT)
    np.testing.assert_array_equal(a.duration, philly.duration)  # durations kept
    for i in range(0, len(a), 37):
        reps = parse_config(a.extra["config"][i])
        assert sum(reps) == a.num_gpus[i]
        if a.num_gpus[i] == 1:
            assert reps == (1,)
        spec = resolve_config(CAT, a.model[i], reps).spec()
        alpha = alpha_min_estimate(spec, 10.0, 300.0, 8)
        assert a.iterations[i] * alpha == pytest.approx(a.duration[i], rel=1e-12)


def test_existing_groups_are_kept(philly):
    t = synth_trace(50, 2, n_gpus_cluster=64)
    t.extra["group"] = np.array([f"G{i % 5}" for i in range(50)], dtype=object)
    a, notes = annotate_trace(t, 0, CAT)
    np.testing.assert_array_equal(a.extra["group"], t.extra["group"])
    assert any("groups from the trace" in n for n in notes)


def test_workload_preset():
    w = a_srpt_workload(3, jobs=300)
    assert len(w) == 300 and w.submit_time[0] == 0
    assert a_srpt_workload(3, jobs=300) == w
    big = a_srpt_workload(1, jobs=2600)  # block bootstrap beyond the 2,000 bundled jobs
    assert len(big) == 2600 and len(set(big.job_id)) == 2600
    assert (np.diff(big.submit_time) >= 0).all()
    multi = a_srpt_workload(2, jobs=500, single_gpu_fraction=0.0)
    assert (multi.num_gpus > 1).all()


def test_a_negative_seed_is_a_one_line_error(tmp_path):
    """``trace annotate --seed -1`` ended in NumPy's ValueError traceback."""
    from tests.helpers import invoke, one_line_error

    out = tmp_path / "a.csv"
    one_line_error(invoke("trace", "annotate", "tiny", "-o", out, "--seed", "-1"), "--seed", ">= 0")
    assert not out.exists()


def test_annotating_in_place_records_the_source_hash(tmp_path):
    """``trace annotate t.csv -o t.csv`` recorded the annotated file's SHA-256 as the
    source's."""
    import hashlib
    import json
    import shutil

    from tests.helpers import invoke

    src = tmp_path / "t.csv"
    shutil.copy(resolve_trace("tiny"), src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    assert invoke("trace", "annotate", src, "-o", src).exit_code == 0
    manifest = json.loads((tmp_path / "t.csv.manifest.json").read_text())
    assert manifest["source_sha256"] == before != hashlib.sha256(src.read_bytes()).hexdigest()
