"""Recurring-job groups of the A-SRPT workload (issue 32): sizes and spread match their
configured values on large draws; the synthesised groups' files are unchanged; the load's
body basis, the demand inside the window; bad options give one-line errors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from gpusched.errors import GpuschedError
from gpusched.io.trace import Trace, write_trace
from gpusched.workloads.a_srpt import DEFAULT_LOAD, a_srpt_workload
from gpusched.workloads.recurring import (
    SIGMA_LOOSE,
    SIGMA_TIGHT,
    SIZE_CDF,
    TIGHT_SHARE,
    draw_group_sizes,
    recurrence_stats,
    recurring_groups,
    task_size_pmf,
)
from gpusched.workloads.synth import demand_load, offered_load, top_jobs
from tests.helpers import invoke


def _task_cdf(sizes: np.ndarray, s: int) -> float:
    """Share of tasks (jobs) whose group has <= s jobs."""
    return float(np.sum(sizes[sizes <= s]) / np.sum(sizes))


def test_task_pmf_is_the_cited_cdf():
    q = task_size_pmf(100_000)
    cdf = np.cumsum(q)
    for s, f in SIZE_CDF:
        assert cdf[s] == pytest.approx(f, abs=1e-9)
    assert q[0] == 0 and q.sum() == pytest.approx(1.0)
    small = task_size_pmf(3)  # truncated at 3 and renormalised
    assert small.size == 4 and small.sum() == pytest.approx(1.0)
    assert small[1] == pytest.approx(0.150 / 0.330)


def test_group_sizes_match_the_cdf_on_a_large_draw():
    # 2 M jobs: groups of up to 23,500 make smaller draws noisy in the tail
    sizes = draw_group_sizes(2_000_000, np.random.default_rng(7))
    assert sizes.sum() == 2_000_000 and (sizes >= 1).all()
    assert 1 - _task_cdf(sizes, 4) == pytest.approx(0.652, abs=0.01)  # "65% ... >= 5 times"
    assert _task_cdf(sizes, 1) == pytest.approx(0.150, abs=0.01)  # one-off jobs
    for s in (10, 100, 1000):
        assert _task_cdf(sizes, s) == pytest.approx(dict(SIZE_CDF)[s], abs=0.02)
    # the last group is cut to fill: sizes of a small stratum add up exactly
    assert draw_group_sizes(7, np.random.default_rng(0)).sum() == 7
    assert draw_group_sizes(0, np.random.default_rng(0)).size == 0


def _draw(n: int = 200_000, seed: int = 3):
    rng = np.random.default_rng(seed)
    gpus = np.where(rng.random(n) < 0.9, 1, 8)
    median = 10 ** rng.uniform(3, 5, n)  # long enough that rounding to 1 s does not matter
    users = np.array([f"u{i % 97}" for i in range(n)], dtype=object)
    submit = np.sort(rng.uniform(0, 1e6, n))
    return submit, gpus, median, users


def test_recurring_groups_spread_user_and_gpus_on_a_large_draw():
    submit, gpus, median, users = _draw()
    group, user, dur, info = recurring_groups(submit, gpus, median, users, np.random.default_rng(1))
    _, inv, counts = np.unique(group.astype(str), return_inverse=True, return_counts=True)
    # one GPU count and one user per group; the user is the earliest member's
    for col in (gpus, user.astype(str)):
        first = np.full(counts.size, -1, dtype=object)
        for i, g in enumerate(inv):
            if first[g] is None or first[g] == -1:
                first[g] = col[i]
        assert all(col[i] == first[inv[i]] for i in range(0, inv.size, 97))
    np.testing.assert_array_equal(user, users[info["first"]][inv])
    # durations around the earliest member's: tight groups at sd 0.05, loose at 0.33
    tight = info["sigma"] == SIGMA_TIGHT
    assert tight.mean() == pytest.approx(TIGHT_SHARE, abs=0.02)
    z = np.log(dur / median[info["first"]][inv])
    for mask, sigma, tol in ((tight, SIGMA_TIGHT, 0.005), (~tight, SIGMA_LOOSE, 0.01)):
        jobs = mask[inv]
        assert np.sqrt(np.mean(z[jobs] ** 2)) == pytest.approx(sigma, abs=tol)
    # the recurrence statistics of the same draw
    st = recurrence_stats(group, dur)
    assert st["share_ge5"] == pytest.approx(0.652, abs=0.02)
    assert st["singleton_share"] == pytest.approx(0.150, abs=0.01)
    assert 0.05 < st["median_spread"] < SIGMA_LOOSE + 0.02
    # deterministic in the generator's seed
    again = recurring_groups(submit, gpus, median, users, np.random.default_rng(1))
    np.testing.assert_array_equal(again[0], group)
    np.testing.assert_array_equal(again[2], dur)


def test_configured_spread_is_what_the_draw_shows():
    submit, gpus, median, users = _draw(50_000)
    group, _, dur, info = recurring_groups(
        submit,
        gpus,
        median,
        users,
        np.random.default_rng(2),
        tight_share=0.0,
        group_spread=0.8,
    )
    assert (info["sigma"] == 0.8).all()
    inv = np.unique(group.astype(str), return_inverse=True)[1]
    z = np.log(dur / median[info["first"]][inv])
    assert np.std(z) == pytest.approx(0.8, abs=0.02)


def test_workload_recurrence_and_groups_never_mix_gpu_counts():
    w = a_srpt_workload(4, 4000, load=2.5, n_gpus_cluster=256)
    st = recurrence_stats(w.extra["group"], w.duration)
    # a 4,000-job window: sizes capped by each GPU count's jobs, so a little below 65 %
    assert 0.5 < st["share_ge5"] < 0.75 and 0.10 < st["singleton_share"] < 0.25
    assert 0.1 < st["median_spread"] < 0.4  # synthesised groups: about 0.9
    g = np.asarray(w.extra["group"]).astype(str)
    for col in (w.num_gpus, np.asarray(w.extra["user"]).astype(str), w.model, w.extra["config"]):
        pairs = {(a, b) for a, b in zip(g, np.asarray(col).astype(str), strict=True)}
        assert len(pairs) == len(set(g))
    assert "recurring groups" in w.source
    assert a_srpt_workload(4, 4000, load=2.5, n_gpus_cluster=256) == w
    syn = a_srpt_workload(4, 4000, load=2.5, n_gpus_cluster=256, groups="synthesised")
    assert recurrence_stats(syn.extra["group"], syn.duration)["median_spread"] > 0.6


# sha256 of `gpusched workload a-srpt ...` as written by the code before issue 32 (main at
# 0a2c10d): the synthesised groups and the total load basis must reproduce them byte for byte
BEFORE = [
    (
        {"seed": 1, "jobs": 1000, "load": 4.0},
        "f05b53442402235f35dffca88e0d261970cbff40166defbaedd816f1f676a04c",
    ),
    (
        {"seed": 2, "jobs": 2600, "single_gpu_fraction": 0.5, "load": 1.0, "n_gpus_cluster": 256},
        "af6b1b9bf2d3f686ce0bf0dd30e35f8eca762863b3115a56d6c53770492d563d",
    ),
    ({"seed": 3, "jobs": 300}, "800fcfd859c6d2fdd57f3319339c4db737a0194d9b096f6bda33858eaed1a94c"),
]


@pytest.mark.parametrize(("kw", "digest"), BEFORE)
def test_synthesised_groups_write_the_files_of_before(tmp_path, kw, digest):
    kw = dict(kw)
    seed, jobs = kw.pop("seed"), kw.pop("jobs")
    w = a_srpt_workload(seed, jobs, groups="synthesised", load_basis="all", **kw)
    path = tmp_path / "w.csv"
    write_trace(w, path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    # the recurring default differs from it
    write_trace(a_srpt_workload(seed, jobs, load_basis="all", **kw), path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() != digest


def test_cli_synthesised_groups_write_the_file_of_before(tmp_path):
    out = tmp_path / "w.csv"
    r = invoke(
        "workload", "a-srpt", "--jobs", "1000", "--seed", "1", "--load", "4",
        "--groups", "synthesised", "--load-basis", "all", "-o", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert hashlib.sha256(out.read_bytes()).hexdigest() == BEFORE[0][1]


def _trace(submit, gpus, dur) -> Trace:
    n = len(submit)
    return Trace(
        job_id=np.array([f"j{i}" for i in range(n)], dtype=object),
        submit_time=np.asarray(submit, dtype=np.float64),
        num_gpus=np.asarray(gpus, dtype=np.int64),
        duration=np.asarray(dur, dtype=np.float64),
        iterations=np.full(n, np.nan),
        model=np.full(n, "", dtype=object),
        extra={},
    )


def test_loads_by_hand():
    # 3 jobs over a 100 s window on 10 GPUs: GPU-s 2*50 = 100, 1*1000 = 1000, 4*20 = 80
    t = _trace([0, 50, 100], [2, 1, 4], [50, 1000, 20])
    assert offered_load(t, 10) == pytest.approx(1180 / 1000)
    # the top 1 % of 3 jobs is ceil(0.03) = 1 job, the 1,000 GPU-s one
    np.testing.assert_array_equal(top_jobs(np.array([100.0, 1000.0, 80.0]), 0.01), [0, 1, 0])
    assert offered_load(t, 10, exclude_top=0.01) == pytest.approx(180 / 1000)
    # inside the window: job 0 all 50 s, job 1 the 50 s until the last arrival, job 2 none
    assert demand_load(t, 10) == pytest.approx((2 * 50 + 1 * 50 + 0) / 1000)
    assert np.isnan(demand_load(_trace([5], [1], [10]), 10))
    # ties go to the earlier job
    np.testing.assert_array_equal(top_jobs(np.array([5.0, 5.0]), 0.5), [1, 0])


def test_body_basis_sets_the_load_without_the_top_jobs():
    w = a_srpt_workload(5, 3000, load=2.0, n_gpus_cluster=256)
    assert offered_load(w, 256, exclude_top=0.01) == pytest.approx(2.0, rel=1e-3)
    assert offered_load(w, 256) > 2.0
    a = a_srpt_workload(5, 3000, load=2.0, n_gpus_cluster=256, load_basis="all")
    assert offered_load(a, 256) == pytest.approx(2.0, rel=1e-3)


def test_default_workload_demands_more_than_the_cluster_inside_its_window():
    """The default is contended (issue 32): its demand inside the arrival window exceeds the
    cluster's capacity even without its top 1 % of jobs. The replay check, every baseline
    waiting >= 1,000 s, is examples/a-srpt/check-contention.py (minutes, not CI)."""
    from gpusched.workloads import build_workload

    w = build_workload("a-srpt", 11)
    assert len(w) == 20_000
    assert offered_load(w, 2000, exclude_top=0.01) == pytest.approx(DEFAULT_LOAD, rel=1e-3)
    assert demand_load(w, 2000) >= 1.1
    assert demand_load(w.take(~top_jobs(w.num_gpus * w.duration, 0.01)), 2000) >= 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--groups", "foo"], "--groups must be one of recurring, synthesised, got 'foo'"),
        (
            ["--group-spread", "0"],
            "--group-spread (sd of log-duration in a loose group) must be > 0",
        ),
        (["--group-spread", "nan"], "--group-spread must be a number, got NaN"),
        (["--group-spread", "1e300"], "must be > 0 and <= 3, got 1e+300"),
        (["--group-spread", "-1"], "must be > 0 and <= 3, got -1"),
        (
            ["--tight-groups", "1.5"],
            "--tight-groups (share of tight groups) must be in [0, 1], got 1.5",
        ),
        (["--tight-groups", "-0.1"], "must be in [0, 1], got -0.1"),
        (["--tight-groups", "nan"], "--tight-groups must be a number, got NaN"),
        (
            ["--tight-spread", "0.5"],
            "--tight-spread (sd of log-duration in a tight group) must be >= 0",
        ),
        (["--tight-spread", "-1"], "below --group-spread 0.33, got -1"),
        (["--tight-spread", "inf"], "below --group-spread 0.33, got inf"),
        (["--load-basis", "x"], "--load-basis must be one of body, all, got 'x'"),
        (["--load", "nan"], "--load must be > 0 (at most 1e+06)"),
        (["--load", "1e300"], "--load must be > 0 (at most 1e+06)"),
    ],
)
def test_bad_options_give_one_line_errors(tmp_path, args, message):
    r = invoke("workload", "a-srpt", "--jobs", "50", *args, "-o", tmp_path / "w.csv")
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], r.output
    assert not (tmp_path / "w.csv").exists()


def test_options_other_presets_do_not_take(tmp_path):
    r = invoke("workload", "synth-default", "--groups", "recurring", "-o", tmp_path / "w.csv")
    assert r.exit_code == 2 and "does not take groups" in r.output


def test_library_options_are_checked():
    with pytest.raises(GpuschedError, match="--tight-groups"):
        a_srpt_workload(1, 50, tight_share=float("nan"))
    with pytest.raises(GpuschedError, match="--groups must be one of"):
        a_srpt_workload(1, 50, groups="real")
