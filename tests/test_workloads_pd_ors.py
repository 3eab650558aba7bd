"""The PD-ORS paper's workload (gpusched.workloads.pd_ors): ranges, classes, arrivals, CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpusched.core.jobs import prepare_jobs
from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace
from gpusched.jobmodels.ps import COLUMNS, params_of
from gpusched.workloads import build_workload
from gpusched.workloads.pd_ors import (
    BW_EXTERNAL,
    BW_INTERNAL,
    CLASSES,
    DECIMALS,
    RANGES,
    SAMPLE_S,
    SLOT_S,
    finishable,
    pd_ors_workload,
    worth_finishing,
)
from gpusched.workloads.sjf_bsbf import WINDOW_S, load_pool
from tests.helpers import invoke

INTEGER_COLUMNS = (
    "epochs",
    "samples",
    "global_batch",
    "ps_ratio",
    "worker_gpus",
    "worker_cpus",
    "ps_gpus",
    "ps_cpus",
)


def column(trace, name):
    return np.array([float(v) for v in trace.extra[name]])


@pytest.fixture(scope="module")
def big():
    return pd_ors_workload(3, 2000)


def test_cli_trace_reads_back_with_every_ps_column(tmp_path):
    out = tmp_path / "w.csv"
    r = invoke("workload", "pd-ors", "--jobs", 40, "--horizon", 20, "--seed", 5, "-o", out)
    assert r.exit_code == 0, r.output
    t = read_trace(out)
    alone = finishable(t, np.zeros((1, 4)))[0]
    assert 0 < alone < 40
    assert r.output.strip().splitlines() == [
        f"wrote 40 jobs to {out}: pd-ors (seed 5): 40 jobs, horizon 20 slots, alternating"
        " arrivals, c5n links",
        f"note: {alone} of 40 jobs can finish by the horizon at all (alone, F workers on one"
        " machine: eq. 13's fastest schedule); no policy finishes more",
    ]
    assert t == pd_ors_workload(5, 40, horizon=20)
    assert set(COLUMNS) <= set(t.extra)
    assert np.all(t.num_gpus == 0)
    p = params_of(t)  # the job model's own reader accepts every row
    assert len(p) == 40 and np.all(p.horizon == 20)
    # every job's ideal-placement duration is one the engine takes
    jobs = prepare_jobs(t, load_cluster("pd-ors-100"))
    assert len(jobs.n_gpus) == 40


def test_defaults_are_50_jobs_over_20_slots():
    t = build_workload("pd-ors", 1)
    assert len(t) == 50
    assert np.all(column(t, "horizon") == 20)
    assert t == pd_ors_workload(1, 50, horizon=20, arrivals="alternating")


def test_every_value_in_its_section_v_range(big):
    p = params_of(big)
    for name, (lo, hi) in RANGES.items():
        v = column(big, name)
        assert np.all((v >= lo) & (v <= hi)), name
    for name in INTEGER_COLUMNS:
        v = column(big, name)
        assert np.all(v == np.floor(v)), name
    # integer draws reach both ends of their intervals on 2,000 jobs
    for name in ("worker_gpus", "worker_cpus", "ps_cpus", "ps_ratio"):
        v = column(big, name)
        assert (v.min(), v.max()) == RANGES[name], name
    assert np.all(p.b_ext == round(BW_EXTERNAL)) and np.all(p.b_int == round(BW_INTERNAL))
    assert BW_INTERNAL == 10 * BW_EXTERNAL


def test_link_rates_from_the_cited_sources():
    # Goyal et al.: 256 GPUs x 1 h for 90 epochs of 1,281,167 images: 8.0 ms a sample
    assert SAMPLE_S == pytest.approx(7.9927e-3, rel=1e-4)
    assert SLOT_S == pytest.approx(SAMPLE_S / 5.5e-5)  # the middle of tau's range
    assert SLOT_S == pytest.approx(145.3, abs=0.1)
    assert BW_EXTERNAL == pytest.approx(12_500 * SLOT_S)  # 100 Gbit/s in MB per slot
    p = params_of(pd_ors_workload(1, 5))
    assert np.all(p.b_ext == 1_816_526) and np.all(p.b_int == 18_165_257)
    old = params_of(pd_ors_workload(1, 5, links="legacy"))
    assert np.all(old.b_ext == 4.5e6) and np.all(old.b_int == 4.5e7)
    # nothing else changes with the links
    a, b = pd_ors_workload(1, 50), pd_ors_workload(1, 50, links="legacy")
    assert np.array_equal(a.submit_time, b.submit_time)
    for name in a.extra:
        if not name.startswith("bw_"):
            assert np.array_equal(a.extra[name], b.extra[name]), name


def test_finishable_by_hand():
    # three jobs, T = 10, one machine of (0, 10, 10, 10): V c_int = E K tau (+ comm.)
    extra = {
        "epochs": ["1", "1", "1"], "samples": ["1000", "1000", "1000"],
        "global_batch": ["2", "2", "1"], "ps_ratio": ["1", "1", "1"],
        "sample_time": ["0.01", "0.01", "0.02"], "grad_mb": ["1e-9"] * 3,
        "bw_internal": ["1e12"] * 3, "bw_external": ["1e11"] * 3,
        "worker_gpus": ["0"] * 3, "worker_cpus": ["1", "2", "1"], "worker_mem_gb": ["1"] * 3,
        "worker_storage_gb": ["1"] * 3, "ps_gpus": ["0"] * 3, "ps_cpus": ["1"] * 3,
        "ps_mem_gb": ["1"] * 3, "ps_storage_gb": ["1"] * 3, "horizon": ["10"] * 3,
    }  # fmt: skip
    from gpusched.io.trace import Trace

    trace = Trace(
        job_id=np.array(["a", "b", "c"], dtype=object), submit_time=np.array([0.0, 0.0, 2.0]),
        num_gpus=np.zeros(3, dtype=np.int64), duration=np.full(3, np.nan),
        iterations=np.full(3, np.nan), model=np.array([""] * 3, dtype=object),
        extra={k: np.array(v, dtype=object) for k, v in extra.items()}, source="t",
    )  # fmt: skip
    # a, b: 10 worker-slots on 2 workers: 5 slots; c: 20 on 1 worker: 20 > 10 - 2 slots
    # a holds 10 (1 + 1) = 20 vCPU-slots, b 10 (2 + 1) = 30; 10 slots x 10 vCPUs = 100
    assert finishable(trace, np.array([[0.0, 10.0, 10.0, 10.0]])) == (2, 2)
    # 4 vCPUs: 40 vCPU-slots hold a (20) but not a and b (50)
    assert finishable(trace, np.array([[0.0, 4.0, 10.0, 10.0]])) == (2, 1)
    # a and b train 5 slots at their fastest, c cannot finish; a's sigmoid (theta1 10,
    # theta2 1, theta3 4) gives 10 / (1 + e^1) = 2.69 at 5 slots, b's (theta3 1) gives
    # 10 / (1 + e^4) = 0.180: a earns at least 1 % or 10 % of its theta1, b only 1 %
    theta = {"utility_priority": ["10"] * 3, "utility_decay": ["1"] * 3,
             "utility_target": ["4", "1", "30"]}  # fmt: skip
    trace.extra.update({k: np.array(v, dtype=object) for k, v in theta.items()})
    assert worth_finishing(trace, 0.01) == 2
    assert worth_finishing(trace, 0.1) == 1
    assert worth_finishing(trace, 0.3) == 0


def test_reals_are_rounded_and_written_as_used(big):
    for name, decimals in DECIMALS.items():
        v = column(big, name)
        assert np.array_equal(np.round(v, decimals), v), name
        # not all on a coarser grid: the decimals are really used
        assert not np.array_equal(np.round(v, decimals - 1), v), name
    for name in big.extra:
        text = big.extra[name]
        assert all(repr(float(s)) == s or str(int(float(s))) == s for s in text), name


def test_utility_classes_near_10_55_35_percent(big):
    decay = column(big, "utility_decay")
    n = len(big)
    insensitive = decay == 0
    sensitive = (decay >= 0.01) & (decay <= 1)
    critical = (decay >= 4) & (decay <= 6)
    assert np.all(insensitive | sensitive | critical)
    for mask, (_, p, _) in zip((insensitive, sensitive, critical), CLASSES, strict=True):
        share = mask.mean()
        assert abs(share - p) <= 4 * math.sqrt(p * (1 - p) / n), (share, p)


def test_arrivals_are_sorted_slots_in_the_horizon():
    for arrivals in ("alternating", "philly"):
        for horizon in (1, 7, 80):
            t = pd_ors_workload(2, 300, horizon=horizon, arrivals=arrivals)
            s = t.submit_time
            assert np.all((s >= 0) & (s < horizon) & (s == np.floor(s)))
            assert np.all(np.diff(s) >= 0)
            assert np.all(column(t, "horizon") == horizon)


def test_alternating_even_slots_get_twice_the_odd_ones():
    n = 20_000
    s = pd_ors_workload(4, n, horizon=20).submit_time.astype(np.int64)
    even = (s % 2 == 0).mean()
    assert abs(even - 2 / 3) <= 4 * math.sqrt(2 / 9 / n)
    counts = np.bincount(s, minlength=20)
    # each slot of a parity holds about its share: 2/30 (even) or 1/30 (odd) of the jobs
    expect = np.where(np.arange(20) % 2 == 0, 2 / 30, 1 / 30) * n
    assert np.all(np.abs(counts - expect) <= 4 * np.sqrt(expect))


def test_alternating_odd_horizon_weights_each_slot():
    # T = 3: slots 0 and 2 weigh 2/3, slot 1 weighs 1/3, so slot 1 holds 1/5 of the jobs
    n = 20_000
    s = pd_ors_workload(6, n, horizon=3).submit_time.astype(np.int64)
    share = np.bincount(s, minlength=3) / n
    assert np.all(np.abs(share - [0.4, 0.2, 0.4]) <= 4 * math.sqrt(0.24 / n))


def test_philly_arrivals_are_the_bundled_times_scaled():
    pool = load_pool()
    horizon = 80
    t = pd_ors_workload(1, len(pool), horizon=horizon, arrivals="philly")
    expected = np.sort(pool.offset_s * horizon // WINDOW_S)
    assert np.array_equal(t.submit_time, expected.astype(np.float64))


def test_same_seed_same_trace_and_same_jobs_under_either_arrivals():
    a = pd_ors_workload(9, 100)
    assert a == pd_ors_workload(9, 100)
    assert not a == pd_ors_workload(10, 100)
    b = pd_ors_workload(9, 100, arrivals="philly")
    assert not np.array_equal(a.submit_time, b.submit_time)
    assert a.extra.keys() == b.extra.keys()
    for name in a.extra:
        assert np.array_equal(a.extra[name], b.extra[name]), name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--arrivals", "poisson"), "--arrivals must be alternating or philly, got 'poisson'"),
        (("--links", "10g"), "--links must be c5n or legacy, got '10g'"),
        (("--horizon", 0), "--horizon must be 1 to"),
        (("--horizon", -5), "got -5"),
        (("--jobs", 0), "pd-ors takes --jobs from 1 to 2,000,000, got 0"),
        (("--arrivals", "philly", "--jobs", 4001), "at most 4000 jobs, got 4001"),
        (("--load", 1), "does not take load"),
        (("--cluster", "pd-ors-100"), "does not take cluster"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    r = invoke("workload", "pd-ors", *args, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.output
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    "option", [("--horizon", 5), ("--arrivals", "philly"), ("--links", "legacy")]
)
def test_other_presets_refuse_the_pd_ors_options(tmp_path, option):
    r = invoke("workload", "sjf-bsbf-testbed", *option, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2
    assert r.output.strip() == f"error: workload 'sjf-bsbf-testbed' does not take {option[0][2:]}"
