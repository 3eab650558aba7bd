"""The SJF-BSBF paper's workloads (gpusched.workloads.sjf_bsbf): sizes, ranges, determinism, CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpusched.errors import GpuschedError
from gpusched.io.trace import read_trace
from gpusched.workloads import build_workload
from gpusched.workloads.sjf_bsbf import (
    APPLICATIONS,
    MODELS,
    REALISTIC_BATCH,
    REALISTIC_REDRAWN,
    RESTART_S,
    WINDOW_S,
    load_pool,
    sjf_bsbf_testbed_workload,
    sjf_bsbf_workload,
)
from tests.helpers import invoke


@pytest.fixture(scope="module")
def base():
    return sjf_bsbf_workload(1)


def test_bundled_pool_is_pollux_filtered_and_in_the_window():
    pool = load_pool()
    assert len(pool) == 4000
    assert np.all((pool.offset_s >= 0) & (pool.offset_s < WINDOW_S))
    assert np.all(pool.gpu_time_s < 1000 * 3600)
    assert np.all(np.diff(pool.offset_s) >= 0)
    assert np.unique(pool.philly_id).size == len(pool)


@pytest.mark.parametrize(
    ("jobs", "load", "n"),
    [(None, None, 240), (480, None, 480), (None, 0.5, 120), (None, 2, 480), (360, 1.5, 360)],
)
def test_counts(jobs, load, n):
    assert len(sjf_bsbf_workload(2, jobs, load=load)) == n


def test_columns_and_ranges(base):
    assert base.columns() == [
        "job_id",
        "submit_time",
        "num_gpus",
        "iterations",
        "model",
        "load_s",
        "save_s",
        "batch_size",
        "philly_job_id",
    ]
    assert np.all(np.isnan(base.duration))
    assert np.all((base.submit_time >= 0) & (base.submit_time < WINDOW_S))
    assert np.all(np.diff(base.submit_time) >= 0)
    assert set(base.model) <= set(MODELS)
    it = base.iterations
    assert np.all(it >= 1) and np.all(it == np.round(it))
    bs = np.array([int(b) for b in base.extra["batch_size"]])
    assert np.all(bs >= 1)
    for m, g, b, i in zip(base.model, base.num_gpus, bs, it, strict=True):
        a = APPLICATIONS[m]
        glob = {c[1] for c in a.configs if c[0] == g}
        assert len(glob) == 1, (m, g)  # a Pollux configuration of this model
        (gb,) = glob
        assert b == math.ceil(gb / g)
        assert i == math.ceil(a.epochs * a.samples_per_epoch / gb)
    assert np.unique(base.job_id).size == len(base)


def test_all_six_models_in_240_job_draws():
    for seed in range(5):
        assert set(sjf_bsbf_workload(seed).model) == set(MODELS), seed


def test_gpu_counts_fit_the_cluster(base):
    assert base.num_gpus.max() <= 64
    capped = sjf_bsbf_workload(1, max_gpus=24)
    assert capped.num_gpus.max() <= 24
    assert set(capped.num_gpus[capped.model == "imagenet"]) == {24}
    with pytest.raises(GpuschedError, match="imagenet has no Pollux configuration with <= 16"):
        sjf_bsbf_workload(1, max_gpus=16)


def test_deterministic_and_seed_dependent(base):
    assert sjf_bsbf_workload(1) == base
    assert not sjf_bsbf_workload(2) == base
    assert sjf_bsbf_testbed_workload(4) == sjf_bsbf_testbed_workload(4)
    assert not sjf_bsbf_testbed_workload(4) == sjf_bsbf_testbed_workload(5)


def test_load_two_is_denser_arrivals_over_the_same_window():
    w = sjf_bsbf_workload(3, load=2)
    assert len(w) == 480 and w.submit_time.max() < WINDOW_S
    assert w.submit_time.max() > WINDOW_S / 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_testbed_split_and_iterations(seed):
    t = sjf_bsbf_testbed_workload(seed)
    g = t.num_gpus
    assert len(t) == 30
    assert np.sum(g <= 8) == 20
    assert np.sum(np.isin(g, [12, 16])) == 10
    assert np.all((t.iterations >= 100) & (t.iterations <= 5000))
    assert np.all(t.iterations == np.round(t.iterations))
    assert g.max() <= 16 and "imagenet" not in set(t.model)
    assert np.all(np.diff(t.submit_time) >= 0) and t.submit_time.max() < 1800


def test_testbed_iterations_keep_the_order_of_full_size_lengths():
    t = sjf_bsbf_testbed_workload(1)
    full = [
        math.ceil(APPLICATIONS[m].epochs * APPLICATIONS[m].samples_per_epoch / (int(b) * g))
        for m, b, g in zip(t.model, t.extra["batch_size"], t.num_gpus, strict=True)
    ]
    order = np.argsort(full, kind="stable")
    assert np.all(np.diff(t.iterations[order]) >= 0)


def test_cli_writes_a_trace_read_trace_reads(tmp_path):
    out = tmp_path / "w.csv"
    r = invoke("workload", "sjf-bsbf", "--jobs", 240, "--seed", 7, "-o", out)
    assert r.exit_code == 0, r.output
    t = read_trace(out)
    assert t == sjf_bsbf_workload(7)
    out2 = tmp_path / "tb.csv"
    r = invoke("workload", "sjf-bsbf-testbed", "--seed", 7, "-o", out2)
    assert r.exit_code == 0, r.output
    assert read_trace(out2) == sjf_bsbf_testbed_workload(7)
    r = invoke("workload", "sjf-bsbf", "--load", 0.5, "--cluster", "sjf-bsbf-16x4", "-o", out)
    assert r.exit_code == 0, r.output
    assert len(read_trace(out)) == 120


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sjf-bsbf", "--jobs", 240, "--load", 0.5), "--jobs 240 and --load 0.5 disagree"),
        (("sjf-bsbf", "--load", 0.501), "whole number of jobs"),
        (("sjf-bsbf", "--load", 0), "--load must be > 0"),
        (
            ("sjf-bsbf", "--jobs", 0),
            "sjf-bsbf takes --jobs from 1 to 5,000,000, got 0",
        ),
        (("sjf-bsbf", "--cluster", "testbed-4x4"), "imagenet has no Pollux configuration"),
        (("sjf-bsbf", "--single-gpu-fraction", 0.5), "does not take single_gpu_fraction"),
        (("sjf-bsbf-testbed", "--jobs", 5), "sjf-bsbf-testbed has 30 jobs"),
        (("sjf-bsbf-testbed", "--load", 1), "does not take load"),
        (("sjf-bsbf", "--restart-s", -1), "--restart-s must be 0"),
        (("sjf-bsbf", "--restart-s", "nan"), "--restart-s must be 0"),
        (("sjf-bsbf", "--restart-s", "inf"), "--restart-s must be 0"),
        (("sjf-bsbf", "--restart-s", 1e-9), "--restart-s must be 0"),
        (("sjf-bsbf-testbed", "--restart-s", -5), "--restart-s must be 0"),
        (("sjf-bsbf", "--gpu-counts", "all"), "--gpu-counts must be one of pollux, philly"),
        (("sjf-bsbf-testbed", "--gpu-counts", "philly"), "does not take gpu_counts"),
        (("synth-default", "--restart-s", 30), "does not take restart_s"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    r = invoke("workload", *args, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.output
    assert not (tmp_path / "x.csv").exists()


def test_registry_defaults():
    assert len(build_workload("sjf-bsbf", 1)) == 240
    assert build_workload("sjf-bsbf", 1) == sjf_bsbf_workload(1)


# ------------------------------------------------------------------ restart cost (issue 30)


@pytest.mark.parametrize(
    "make", [lambda **k: sjf_bsbf_workload(3, **k), lambda **k: sjf_bsbf_testbed_workload(3, **k)]
)
def test_every_start_costs_pollux_rescale_time(make):
    # Pollux's simulator (petuum/adaptdl@c793c708, simulator/simulator.py:163):
    # rescale_time = 30 on every allocation; de-allocation costs nothing
    t = make()
    assert RESTART_S == 30.0
    assert np.all(t.load_s == 30.0) and np.all(t.save_s == 0.0)
    assert "30 s per start (Pollux's rescale_time)" in t.source
    off = make(restart_s=0)
    assert np.all(np.isnan(off.load_s)) and np.all(np.isnan(off.save_s))
    assert "load_s" not in off.columns() and "rescale_time" not in off.source
    # the rest of the workload is the same draw
    assert off.num_gpus.tolist() == t.num_gpus.tolist()
    assert off.iterations.tolist() == t.iterations.tolist()
    assert np.all(make(restart_s=12.5).load_s == 12.5)


def test_restart_cost_reaches_the_run(tmp_path):
    from gpusched.experiments.run import replay

    out = tmp_path / "w.csv"
    assert invoke("workload", "sjf-bsbf-testbed", "--seed", 2, "-o", out).exit_code == 0
    summary, res = replay(str(out), "sjf", cluster="testbed-4x4")
    assert np.all(res.state.job_load_s == 30.0) and np.all(res.state.job_save_s == 0.0)
    no = tmp_path / "w0.csv"
    invoke("workload", "sjf-bsbf-testbed", "--seed", 2, "--restart-s", 0, "-o", no)
    _, res0 = replay(str(no), "sjf", cluster="testbed-4x4")
    assert np.all(res0.state.job_load_s == 0.0)
    # each job's JCT grows by at least the 30 s of its one start (SJF: one start each)
    jct = res.state.job_finish - res.state.job_submit
    jct0 = res0.state.job_finish - res0.state.job_submit
    assert jct.mean() >= jct0.mean() + 30 - 1e-9


def test_philly_gpu_counts_are_the_jobs_own():
    pool = load_pool()
    by_id = dict(zip(pool.philly_id.tolist(), pool.num_gpus.tolist(), strict=True))
    t = sjf_bsbf_workload(4, 480, gpu_counts="philly")
    assert "GPU counts of the Philly jobs" in t.source
    bs = np.array([int(b) for b in t.extra["batch_size"]])
    for m, g, b, pid, it in zip(
        t.model, t.num_gpus, bs, t.extra["philly_job_id"], t.iterations, strict=True
    ):
        assert b == REALISTIC_BATCH[m]
        if m in REALISTIC_REDRAWN:
            assert g in REALISTIC_REDRAWN[m]  # redrawn, as Pollux does for these classes
        else:
            assert g == by_id[int(pid)]
        a = APPLICATIONS[m]
        assert it == math.ceil(a.epochs * a.samples_per_epoch / (b * g))
    large = np.mean(t.num_gpus > 4)
    assert large < 0.15 < np.mean(sjf_bsbf_workload(4, 480).num_gpus > 4)


def test_realistic_redraws_are_pollux_published_counts():
    # counts of Pollux's workloads-realistic rows (8 x 160 jobs): yolov3 59, imagenet 26
    assert len(REALISTIC_REDRAWN["yolov3"]) == 59
    assert len(REALISTIC_REDRAWN["imagenet"]) == 26
    assert sorted(set(REALISTIC_REDRAWN["imagenet"])) == [8, 16, 32]


def test_philly_gpu_counts_beyond_the_cluster_are_an_error():
    with pytest.raises(GpuschedError, match=r"GPUs, more than the cluster's largest job \(8\)"):
        sjf_bsbf_workload(1, 4000, gpu_counts="philly", max_gpus=8)
    assert len(sjf_bsbf_workload(1, 240, gpu_counts="philly", max_gpus=64)) == 240
