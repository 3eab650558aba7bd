"""The Lazer paper's workloads (gpusched.workloads.lazer) and its two bundled clusters.

Targets come from gpusched/data/helios.toml (HeliosArtifact summary, the paper's Table 1).
The full-size workloads are drawn in memory once per module (about a second each) and
never written; files are written only for 100-job samples.
"""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest
from scipy.stats import ks_2samp

from gpusched.errors import GpuschedError
from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace
from gpusched.jobmodels.catalogue import load_catalogue
from gpusched.workloads import lazer
from gpusched.workloads.lazer import (
    HELIOS_CLUSTERS,
    MODELS,
    duration_params,
    gpu_mix,
    helios_cluster,
    lazer_helios_workload,
    lazer_philly_workload,
    sample_keeping_interarrivals,
)
from tests.helpers import invoke

TABLE_1 = {  # Go et al., DAC'26, Table 1: jobs (K), training time per job (min), inter-arrival (s)
    "earth": (427, 59.5, 39),
    "saturn": (698, 72.2, 80),
    "uranus": (329, 128.1, 243),
}


@pytest.fixture(scope="module")
def full():
    return {name: lazer_helios_workload(name, 1) for name in HELIOS_CLUSTERS}


def test_bundled_numbers_match_the_papers_table_1():
    for name, (k_jobs, train_min, gap_s) in TABLE_1.items():
        c = helios_cluster(name)
        assert c.n_jobs // 1000 == k_jobs  # the paper truncates (698,896 -> 698K)
        assert c.mean_training_s == train_min * 60 and c.mean_interarrival_s == gap_s
        assert c.median_gpus == 1
    with pytest.raises(GpuschedError, match="unknown Helios cluster 'venus'"):
        helios_cluster("venus")


@pytest.mark.parametrize("name", HELIOS_CLUSTERS)
def test_full_size_count_and_means(full, name):
    c = helios_cluster(name)
    t = full[name]
    assert len(t) == c.n_jobs and len(set(t.job_id.tolist())) == c.n_jobs
    assert 0 <= t.submit_time[0] < 600 and (np.diff(t.submit_time) >= 0).all()
    assert (t.submit_time == np.rint(t.submit_time)).all()
    # Stratified draws put the means on the targets up to the spread inside the top
    # probability slices; independent draws would scatter the mean duration by
    # cv / sqrt(n) = 1.7-2.2 % (cv 11-16 for these heavy tails). The tolerance (1 %) is
    # far below that and far above the stratified error (seeds 1-3 stay within 0.2 %).
    # The arrival rate is set so the n jobs span n - 1 of Table 1's gaps (to 1e-4,
    # plus whole-second rounding).
    gaps = np.diff(t.submit_time)
    assert gaps.mean() == pytest.approx(c.mean_interarrival_s, rel=0.001)
    assert t.duration.mean() == pytest.approx(c.mean_training_s, rel=0.01)
    # the median lands on the summary's median (whole seconds)
    assert abs(np.median(t.duration) - c.median_run_s) <= 1
    assert t.duration.min() >= 1 and t.duration.max() <= c.max_run_s
    assert (t.duration == np.rint(t.duration)).all()


@pytest.mark.parametrize("name", HELIOS_CLUSTERS)
def test_gpu_mix_median_one_and_mean(full, name):
    c = helios_cluster(name)
    g = full[name].num_gpus
    sizes, probs = gpu_mix(c.mean_gpus)
    assert float(np.dot(sizes, probs)) == pytest.approx(c.mean_gpus, rel=1e-9)
    assert probs[0] > 0.5 and (np.diff(probs) < 0).all()  # median 1, fewer jobs as size grows
    assert np.median(g) == 1
    assert set(np.unique(g).tolist()) <= set(sizes.tolist()) and g.max() <= 512
    # stratified: each size's count is within one job of n * p, so the mean is within
    # sum(sizes) / n (< 0.003 GPUs) of the target
    assert abs(g.mean() - c.mean_gpus) <= sizes.sum() / len(g)


def test_duration_params_hit_median_and_mean():
    mu, sigma = duration_params(124, 4332, 1, 181 * 86400)
    median, mean = lazer._truncated_lognormal(mu, sigma, 1, 181 * 86400)
    assert median == pytest.approx(124, rel=1e-9) and mean == pytest.approx(4332, rel=1e-9)
    with pytest.raises(GpuschedError, match="need 0 < lo < median < mean < hi"):
        duration_params(300, 200, 1, 1000)


@pytest.mark.parametrize("name", HELIOS_CLUSTERS)
def test_every_job_has_one_of_seven_models_with_the_papers_times(full, name):
    t = full[name]
    names, counts = np.unique(t.model.astype(str), return_counts=True)
    assert sorted(names.tolist()) == sorted(MODELS)
    # uniform: each share is 1/7 within 0.005 (about 9 standard errors at n >= 329k)
    assert np.abs(counts / len(t) - 1 / 7).max() < 0.005
    # Sec. 3.2: +113 s of L_k (SRTF), P_k 8 s on average
    assert (t.load_s == 113.0).all() and (t.save_s == 8.0).all()
    assert "load 113 s and save 8 s per job" in t.source


def test_checkpoint_overheads_are_the_catalogues():
    cat = load_catalogue()
    t = lazer_helios_workload("uranus", 1, 500, overheads="checkpoint")
    for m in set(t.model.tolist()):
        rows = t.model == m
        load, save = cat.overheads(m)
        assert (t.load_s[rows] == load).all() and (t.save_s[rows] == save).all()
    assert "catalogue" in t.source
    # the same jobs otherwise: the overheads draw nothing
    d = lazer_helios_workload("uranus", 1, 500)
    assert (d.job_id == t.job_id).all() and (d.model == t.model).all()


def test_sample_keeps_the_interarrival_distribution(full):
    t = full["earth"]
    n = 100
    small = lazer_helios_workload("earth", 1, 100)
    assert len(small) == n
    # the sample's rows are rows of the full workload (same seed), with new submit times
    pos = {j: i for i, j in enumerate(t.job_id.tolist())}
    idx = np.array([pos[j] for j in small.job_id.tolist()])
    assert (np.diff(idx) > 0).all()
    assert (small.duration == t.duration[idx]).all() and (small.model == t.model[idx]).all()
    assert (small.load_s == t.load_s[idx]).all()
    # each pick arrives its own original gap after the previous one
    own_gap = t.submit_time[idx] - t.submit_time[idx - 1]
    assert np.array_equal(np.diff(np.concatenate([[0.0], small.submit_time])), own_gap)
    # one gap per 1/n quantile slice: KS distance <= 2/n for the n - 1 gaps between picks
    # (1/n for all n, one more for leaving out the first pick's; + stratum-edge rounding)
    full_gaps = np.diff(t.submit_time)
    ks = ks_2samp(np.diff(small.submit_time), full_gaps).statistic
    assert ks <= 2 / n + 1 / len(full_gaps) + 1e-12
    assert np.mean(own_gap) == pytest.approx(full_gaps.mean(), rel=0.15)


def test_sampler_strata_on_a_bursty_trace():
    rng = np.random.default_rng(5)
    # bursts: many 0-1 s gaps, some hours-long quiet periods
    gaps = np.where(
        rng.random(20_000) < 0.9, rng.integers(0, 2, 20_000), rng.integers(1, 9000, 20_000)
    )
    submit = np.concatenate([[0.0], np.cumsum(gaps.astype(float))])
    for n in (7, 100, 1000):
        index, new = sample_keeping_interarrivals(submit, n, np.random.default_rng(n))
        assert len(index) == n and (np.diff(index) > 0).all() and (np.diff(new) >= 0).all()
        own = np.diff(np.concatenate([[0.0], new]))
        # one pick per stratum of (N - 1) / n ranked gaps: within 1/n (+ rounding of the
        # stratum edges) of the original distribution at every point
        assert ks_2samp(own, gaps).statistic <= 1 / n + 1 / len(gaps) + 1e-12
    with pytest.raises(GpuschedError, match="can sample 1 to 20000 of 20001 jobs"):
        sample_keeping_interarrivals(submit, 20001, rng)


def test_sample_caps_gpus_at_the_testbed_and_full_size_at_512(full):
    assert full["saturn"].num_gpus.max() == 512
    assert "0 GPU count(s) capped at 512" in full["saturn"].source
    big = full["uranus"]
    small = lazer_helios_workload("uranus", 1, 2000)
    pos = {j: i for i, j in enumerate(big.job_id.tolist())}
    orig = big.num_gpus[[pos[j] for j in small.job_id.tolist()]]
    assert (small.num_gpus == np.minimum(orig, 16)).all() and (orig > 16).any()
    n_capped = int((orig > 16).sum())
    assert f"{n_capped} GPU count(s) capped at 16" in small.source
    # a given cap (the CLI's --cluster: its largest job) replaces the default
    uncapped = lazer_helios_workload("uranus", 1, 2000, max_gpus=512)
    assert (uncapped.num_gpus == orig).all()


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    paths = {}
    for tag, seed in (("a", 1), ("b", 1), ("c", 2)):
        paths[tag] = tmp_path / f"{tag}.csv"
        r = invoke("workload", "lazer-uranus", "--jobs", "300", "--seed", seed, "-o", paths[tag])
        assert r.exit_code == 0, r.output
    assert paths["a"].read_bytes() == paths["b"].read_bytes()
    assert paths["a"].read_bytes() != paths["c"].read_bytes()
    header = paths["a"].read_text().splitlines()[0]
    assert header == "job_id,submit_time,num_gpus,duration,model,load_s,save_s"


def test_earth100_replays_on_the_testbed_with_catalogue_times(tmp_path):
    w = tmp_path / "earth100.csv"
    r = invoke("workload", "lazer-earth", "--jobs", "100", "--seed", "1", "-o", w)
    assert r.exit_code == 0, r.output
    trace = read_trace(w)
    assert len(trace) == 100 and trace.num_gpus.max() <= 16
    out = tmp_path / "run"
    r = invoke("replay", w, "-P", "srtf", "-c", "lazer-testbed", "-o", out)
    assert r.exit_code == 0, r.output
    with open(out / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 100
    given = dict(zip(trace.job_id.tolist(), trace.load_s.tolist(), strict=True))
    never_preempted = [row for row in rows if row["preemptions"] == "0"]
    assert never_preempted
    for row in never_preempted:  # one load, of the model's catalogue time
        assert float(row["load_s"]) == pytest.approx(given[row["job_id"]])


def test_philly_bundled_and_given_source(tmp_path):
    cat = load_catalogue()
    t = lazer_philly_workload(1, overheads="checkpoint")
    src = read_trace(_bundled_philly())
    assert len(t) == len(src) == 2000
    assert sorted(set(t.model.tolist())) == sorted(MODELS)
    assert all(
        cat.overheads(m) == (ls, ss) for m, ls, ss in zip(t.model, t.load_s, t.save_s, strict=True)
    )
    assert (lazer_philly_workload(1).load_s == 113.0).all()  # the paper's, by default
    assert sorted(t.duration.tolist()) == sorted(src.duration.tolist())  # Philly's own
    small = lazer_philly_workload(1, 100)
    assert len(small) == 100 and set(small.job_id.tolist()) <= set(t.job_id.tolist())
    assert small.num_gpus.max() <= 16
    # a canonical trace given as the source
    p = tmp_path / "p.csv"
    p.write_text("job_id,submit_time,num_gpus,duration\nx,50,2,10\ny,20,64,30\nz,20,1,5\n")
    r = invoke("workload", "lazer-philly", "--source", p, "--seed", "4", "-o", tmp_path / "o.csv")
    assert r.exit_code == 0, r.output
    out = read_trace(tmp_path / "o.csv")
    assert out.job_id.tolist() == ["y", "z", "x"] and out.submit_time.tolist() == [0, 0, 30]
    assert out.num_gpus.tolist() == [64, 1, 2]  # full size: capped at 512 only


def _bundled_philly():
    from gpusched.io.resources import resolve_trace

    return resolve_trace("philly-2000")


def test_user_errors_are_one_line(tmp_path):
    o = tmp_path / "o.csv"
    r = invoke("workload", "lazer-earth", "--jobs", "500000", "-o", o)
    assert (
        r.exit_code == 2 and "lazer-earth has 427,148 jobs: --jobs must be 1 to 427148" in r.output
    )
    r = invoke("workload", "lazer-earth", "--jobs", "0", "-o", o)
    assert r.exit_code == 2 and "--jobs must be 1 to" in r.output
    r = invoke("workload", "lazer-philly", "--load", "0.5", "-o", o)
    assert r.exit_code == 2 and "does not take load" in r.output
    for bad in ("-1", "nan", "inf", "0", "1e9"):
        r = invoke("workload", "lazer-saturn", "--load", bad, "-o", o)
        assert r.exit_code == 2 and "--load must be a number in (0, 100]" in r.output, bad
        assert len(r.output.strip().splitlines()) == 1
    for opt, bad, what in (
        ("--arrivals", "bursty", "--arrivals must be one of helios, poisson"),
        ("--sizes", "nan", "--sizes must be one of copula, independent"),
        ("--overheads", "", "--overheads must be one of paper, checkpoint"),
    ):
        r = invoke("workload", "lazer-earth", "--jobs", "10", opt, bad, "-o", o)
        assert r.exit_code == 2 and what in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1
    r = invoke("workload", "sjf-bsbf", "--sizes", "copula", "-o", o)
    assert r.exit_code == 2 and "does not take sizes" in r.output
    r = invoke("workload", "lazer-philly", "--source", tmp_path / "none.csv", "-o", o)
    assert r.exit_code == 2 and "none.csv" in r.output
    assert "Traceback" not in r.output and not o.exists()


def test_bundled_clusters_match_the_paper():
    testbed, sim = load_cluster("lazer-testbed"), load_cluster("lazer-sim-512")
    assert (testbed.n_servers, testbed.n_gpus, testbed.nic_gbps) == (4, lazer.TESTBED_GPUS, 40)
    assert (sim.n_servers, sim.n_gpus) == (64, lazer.SIM_GPUS)
    assert sim.n_gpus == 32 * testbed.n_gpus  # Sec. 1: "32x more GPUs"
    assert testbed.allow_spread and sim.allow_spread and testbed.gpu_capacity == 1
    assert math.log2(lazer.SIM_GPUS) == lazer.MAX_LOG2_GPUS


def test_load_scales_the_counts_per_bin_to_the_offered_load(full):
    from gpusched.workloads.synth import offered_load

    base = full["earth"]
    scaled = lazer_helios_workload("earth", 1, load=0.5)
    assert offered_load(scaled, 512) == pytest.approx(0.5, rel=0.005)
    # the same jobs, over a longer span; the 10-minute bins stay where they were, each
    # holding about 0.5 / 0.94 as many jobs (hourly sums: the rounding of small counts
    # blurs single bins)
    assert (scaled.job_id == base.job_id).all() and (scaled.duration == base.duration).all()
    ratio = offered_load(scaled, 512) / offered_load(base, 512)
    assert ratio == pytest.approx(0.5 / offered_load(base, 512), rel=0.01)
    hours = int(base.submit_time[-1] // 3600)
    a = np.bincount((base.submit_time // 3600).astype(int))[:hours]
    b = np.bincount((scaled.submit_time // 3600).astype(int))[:hours]
    assert b.sum() == pytest.approx(ratio * a.sum(), rel=0.01)
    assert np.corrcoef(a, b)[0, 1] > 0.99


def test_load_is_for_the_full_size_workload_only():
    with pytest.raises(GpuschedError, match="--load applies to the full-size workload"):
        lazer.lazer_helios_workload("uranus", 1, 100, load=0.9)


def test_profile_arrivals_by_hand():
    # counts 2, 0, 1 per 100-s bin (mean 1): a mean gap of 50 s doubles them (m = 2),
    # tiled from bin 1: bins 0, 1, 2 of the tiling hold 0, 2, 4 jobs, bin 4 the next 2
    counts = np.array([2, 0, 1])
    t = lazer.profile_arrivals(8, 50.0, counts, 100.0, 1, np.full(8, 0.5))
    # the first bin with a job becomes bin 0: 2 jobs at 50, 4 at 150, 2 at 350
    assert t.tolist() == [50, 50, 150, 150, 150, 150, 350, 350]
    # m = 1/3 (mean gap 300 s): cumulative rounding, floor(m S_b): 1 job per cycle
    t = lazer.profile_arrivals(3, 300.0, counts, 100.0, 0, np.zeros(3))
    assert t.tolist() == [0, 300, 600]


@pytest.mark.parametrize("name", HELIOS_CLUSTERS)
def test_arrivals_follow_the_venus_profile(full, name):
    counts, bin_s = lazer.venus_profile()
    assert bin_s == 600 and counts.size == 26_064 and counts.sum() == 125_214
    assert counts.max() == 717
    t = full[name]
    per_bin = np.bincount((t.submit_time // 600).astype(int))
    # the profile's shape at Table 1's rate, tiled from the start bin the source names
    start = int(re.search(r"from profile bin (\d+)", t.source).group(1))
    m = (600 / helios_cluster(name).mean_interarrival_s) / counts.mean()
    prof = np.tile(np.roll(counts, -start), 6)[: per_bin.size]
    first = int(np.flatnonzero(prof)[0])  # the first bin holding a job is bin 0
    prof = np.tile(np.roll(counts, -start - first), 6)[: per_bin.size]
    assert np.corrcoef(per_bin, prof)[0, 1] > {"earth": 0.99, "saturn": 0.98, "uranus": 0.9}[name]
    # m, up to the calibration that makes the n jobs span n - 1 mean gaps (a cut cycle's
    # rate is not the profile's mean: Saturn covers 3.6 cycles and is scaled 1.5 % less)
    assert per_bin.sum() / prof.sum() == pytest.approx(m, rel=0.03)
    assert per_bin.max() >= 0.9 * m * counts.max()
    assert np.unique(t.submit_time).size < len(t)  # same-second arrivals in the bursts


@pytest.mark.parametrize("name", HELIOS_CLUSTERS)
def test_copula_hits_the_summarys_gpu_time_and_keeps_the_marginals(full, name):
    c = helios_cluster(name)
    t = full[name]
    g, d = t.num_gpus.astype(float), t.duration
    assert (g * d).mean() == pytest.approx(c.coupling * g.mean() * d.mean(), rel=0.02)
    assert c.coupling == pytest.approx(
        {"earth": 2.484, "saturn": 1.878, "uranus": 2.181}[name], abs=1e-3
    )
    indep = lazer.helios_jobs(c, np.random.default_rng(1), 50_000, sizes="independent")
    coup = lazer.helios_jobs(c, np.random.default_rng(1), 50_000)
    assert (np.sort(indep.num_gpus) == np.sort(coup.num_gpus)).all()
    assert (indep.duration == coup.duration).all()
    gi = indep.num_gpus.astype(float)
    assert (gi * indep.duration).mean() < 1.4 * gi.mean() * indep.duration.mean()
