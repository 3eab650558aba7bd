"""The performance model's readings (A-SRPT paper, Sec. III-B; issue 14, part 3).

eq. (6) first case: "share" 2g(k-1)h/(k B_inter) vs "literal" 2(k-1)h/(x^m B_inter);
batch: "split" (whole mini-batch / k per replica) vs "per-replica" (nothing divided).
Every number below is worked out by hand in the comments.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpusched.algorithms.exact_mapping import optimal_mapping
from gpusched.cli import app
from gpusched.cli.listing import _reading
from gpusched.core.jobs import prepare_jobs
from gpusched.errors import ClusterError
from gpusched.io.cluster import ClusterSpec, load_cluster, parse_cluster
from gpusched.io.trace import read_trace
from gpusched.jobmodels.catalogue import load_catalogue
from gpusched.jobmodels.heavy_edge import alpha_min_estimate, job_graph
from gpusched.jobmodels.pipeline import (
    DEFAULT_READING,
    Reading,
    alpha_max,
    iteration_time,
    pipeline_spec,
    stage_server_times,
)
from gpusched.jobmodels.pipeline_jobs import PipelineJobs
from gpusched.jobmodels.reading import reading_of
from tests.helpers import brute_force_mapping

# 8 Gbit/s NIC = 1e9 B/s, 10 GB/s intra = 1e10 B/s, g = 4 (as tests/test_perfmodel.py).
NIC, INTRA, G = 8.0, 10.0, 4
SHARE_SPLIT = Reading("share", "split")
LITERAL_SPLIT = Reading("literal", "split")
SHARE_PER = Reading("share", "per-replica")
LITERAL_PER = Reading("literal", "per-replica")


def two_stage(reading: Reading = DEFAULT_READING):
    # whole-batch fwd [0.2, 0.1] s, bwd [0.4, 0.2] s, activations 4e8 B, h = [1e9, 5e8] B,
    # replicas [2, 1]
    return pipeline_spec([0.2, 0.1], [0.4, 0.2], [4e8, 0.0], [1e9, 5e8], [2, 1], reading)


def one_stage(k: int, reading: Reading, h: float = 1e9):
    # pure data parallelism: whole-batch fwd 0.4 s, bwd 0.8 s, h bytes of parameters
    return pipeline_spec([0.4], [0.8], [0.0], [h], [k], reading)


def test_default_is_share_split_and_reproduces_todays_numbers():
    assert DEFAULT_READING == SHARE_SPLIT
    assert two_stage().reading == SHARE_SPLIT
    # the hand numbers of tests/test_perfmodel.py: AllReduce over the NIC share
    # 2 * 1 * 1e9 / 2 = 1e9 B per replica / (1e9 / 4) = 4.0 s
    x = np.array([[1, 1], [1, 0]])
    np.testing.assert_allclose(
        stage_server_times(two_stage(SHARE_SPLIT), x, NIC, INTRA, G), [[4.34, 1.94], [5.9, 0.0]]
    )
    assert alpha_max(two_stage(SHARE_SPLIT), NIC, INTRA, G) == pytest.approx(5.9)


def test_literal_by_hand():
    x = np.array([[1, 1], [1, 0]])
    # stage 1, x = 1 of k = 2: 2 (2-1) 1e9 / (1 * 1e9) = 2.0 s (share: 4.0)
    # server 0 stage 1: comp 0.3 + intra 0.04 + 2.0 = 2.34; server 1: 0.3 + 1.6 + 2.0 = 3.9
    # stage 2 has k = 1 (no AllReduce): 1.94 as under share
    beta = stage_server_times(two_stage(LITERAL_SPLIT), x, NIC, INTRA, G)
    np.testing.assert_allclose(beta, [[2.34, 1.94], [3.9, 0.0]])
    assert alpha_max(two_stage(LITERAL_SPLIT), NIC, INTRA, G) == pytest.approx(3.9)


def test_literal_depends_on_x_share_does_not():
    # k = 4 on two servers holding 1 and 3 replicas; comp = 1.2 / 4 = 0.3 s
    x = np.array([[1], [3]])
    # literal: 2 * 3 * 1e9 / (x * 1e9) = 6.0 s (x = 1) and 2.0 s (x = 3)
    lit = stage_server_times(one_stage(4, LITERAL_SPLIT), x, NIC, INTRA, G)
    np.testing.assert_allclose(lit, [[6.3], [2.3]])
    # share: 2 g (k-1) h / (k B) = 2 * 4 * 3 * 1e9 / (4 * 1e9) = 6.0 s on both
    share = stage_server_times(one_stage(4, SHARE_SPLIT), x, NIC, INTRA, G)
    np.testing.assert_allclose(share, [[6.3], [6.3]])
    # all four together: 2 (k-1) h / (k B_intra) = 6e9 / 4e10 = 0.15 s under both readings
    whole = np.array([[4]])
    for r in (SHARE_SPLIT, LITERAL_SPLIT):
        assert iteration_time(one_stage(4, r), whole, NIC, INTRA, G) == pytest.approx(0.45)


def test_per_replica_by_hand():
    spec = two_stage(SHARE_PER)
    # nothing divided by k: p^f = [0.2, 0.1], p^b = [0.4, 0.2], d^out_1 = d^in_2 = 4e8 B
    np.testing.assert_allclose(spec.p_f, [0.2, 0.1])
    np.testing.assert_allclose(spec.p_b, [0.4, 0.2])
    np.testing.assert_allclose(spec.d_out, [4e8, 0.0])
    np.testing.assert_allclose(spec.d_in, [0.0, 4e8])
    # consolidated: stage 1 0.6 + intra 2 * 4e8 / 1e10 = 0.08 + AllReduce 0.1 = 0.78;
    # stage 2 0.3 + intra 2 * 4e8 * (2/2) / 1e10 = 0.08 -> 0.38
    beta = stage_server_times(spec, np.array([[2, 1]]), NIC, INTRA, G)
    np.testing.assert_allclose(beta, [[0.78, 0.38]])
    # Heavy-Edge's inter-stage edge 2 d^out_1 / k_2 = 8e8 B (split: 2 * 2e8 / 1 = 4e8)
    assert job_graph(spec)[0, 2] == pytest.approx(8e8)
    assert job_graph(two_stage(SHARE_SPLIT))[0, 2] == pytest.approx(4e8)


@pytest.mark.parametrize("allreduce", ["share", "literal"])
def test_per_replica_compute_does_not_shrink_with_k(allreduce):
    # no parameters (no AllReduce), one server: the time is the compute alone
    for k in (1, 2, 4):
        per = iteration_time(
            one_stage(k, Reading(allreduce, "per-replica"), h=0.0), [[k]], NIC, INTRA, G
        )
        split = iteration_time(
            one_stage(k, Reading(allreduce, "split"), h=0.0), [[k]], NIC, INTRA, G
        )
        assert per == pytest.approx(1.2)
        assert split == pytest.approx(1.2 / k)


def test_reading_rejects_unknown_values():
    with pytest.raises(ValueError, match="share, literal"):
        Reading("literally", "split")
    with pytest.raises(ValueError, match="split, per-replica"):
        Reading("share", "per_replica")


@pytest.mark.parametrize("reading", [LITERAL_SPLIT, LITERAL_PER, SHARE_PER])
def test_milp_exact_under_every_reading(reading):
    # k up to 4 exercises the literal reading's secant lines (x = 1, 2, 3)
    rng = np.random.default_rng(5)
    for _ in range(6):
        n_s = int(rng.integers(1, 3))
        spec = pipeline_spec(
            rng.uniform(0.001, 0.05, n_s),
            rng.uniform(0.002, 0.1, n_s),
            rng.uniform(0, 50e6, n_s),
            rng.uniform(0, 200e6, n_s),
            rng.integers(2, 5, n_s),
            reading,
        )
        free = rng.integers(0, 5, 3)
        free[0] += max(0, spec.n_gpus - int(free.sum()))
        _, opt = optimal_mapping(spec, free, 10.0, 300.0, 8)
        assert opt == pytest.approx(brute_force_mapping(spec, free, 10.0, 300.0, 8), rel=1e-9)


def test_catalogue_ideal_time_follows_the_reading():
    cat = load_catalogue()
    split = cat.ideal_iteration_s("ResNet152", 4)
    assert cat.ideal_iteration_s("ResNet152", 4, reading=SHARE_SPLIT) == split
    per = cat.ideal_iteration_s("ResNet152", 4, reading=SHARE_PER)
    # one server: compute 4x (nothing split over the 4 replicas), AllReduce unchanged
    spec = cat.config_for("ResNet152", 4).spec()
    comp = float((spec.p_f + spec.p_b)[0])
    assert per - split == pytest.approx(3 * comp)
    assert alpha_min_estimate(spec.with_reading(SHARE_PER), 10.0, 300.0, 8) == pytest.approx(per)


# ---------------------------------------------------------------------- cluster files

HEAD = '[cluster]\nname = "r"\nservers = 2\ngpus_per_server = 8\n'


def test_cluster_default_and_keys():
    spec = parse_cluster(HEAD, "c.toml")
    assert reading_of(spec) == DEFAULT_READING
    spec = parse_cluster(
        HEAD + 'allreduce_reading = "literal"\nbatch_reading = "per-replica"\n', "c.toml"
    )
    assert (spec.allreduce_reading, spec.batch_reading) == ("literal", "per-replica")
    assert reading_of(spec) == LITERAL_PER
    assert reading_of(pickle.loads(pickle.dumps(spec))) == LITERAL_PER
    d = spec.as_dict()["cluster"]
    assert (d["allreduce_reading"], d["batch_reading"]) == ("literal", "per-replica")
    assert _reading(spec) == " [eq. 6 literal, batch per-replica]"
    assert _reading(parse_cluster(HEAD, "c.toml")) == ""


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        ('allreduce_reading = "literally"', ["cluster.allreduce_reading", "'share', 'literal'"]),
        ("allreduce_reading = true", ["cluster.allreduce_reading", "a boolean"]),
        ('batch_reading = "per_replica"', ["cluster.batch_reading", "'split', 'per-replica'"]),
        ("batch_reading = 1", ["cluster.batch_reading", "an integer"]),
    ],
)
def test_cluster_bad_reading(line, needles):
    with pytest.raises(ClusterError) as exc:
        parse_cluster(HEAD + line + "\n", "bad.toml")
    msg = str(exc.value)
    assert msg.startswith("bad.toml: ") and "\n" not in msg
    for needle in needles:
        assert needle in msg


def test_cluster_spec_in_code_is_checked():
    with pytest.raises(ClusterError, match="cluster.batch_reading"):
        ClusterSpec.homogeneous(1, 8, batch_reading="whole")


def test_cli_bad_reading_is_a_one_line_error(tmp_path: Path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\n")
    bad = tmp_path / "bad.toml"
    bad.write_text(HEAD + 'allreduce_reading = "typeset"\n')
    r = CliRunner().invoke(app, ["replay", str(trace), "-c", str(bad)])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert line.startswith("error: ") and len(line.splitlines()) == 1
    assert "bad.toml" in line and "cluster.allreduce_reading" in line and "'literal'" in line


def test_pipeline_jobs_use_the_clusters_reading(tmp_path: Path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration,model,config\na,0,4,100,ResNet152,4\n")
    cat = load_catalogue()
    spec = cat.config_for("ResNet152", 4).spec()
    for text, reading in (("", SHARE_SPLIT), ('allreduce_reading = "literal"\n', LITERAL_SPLIT)):
        cluster = parse_cluster(HEAD + text, "c.toml")
        jobs = prepare_jobs(read_trace(trace), cluster)
        pj = PipelineJobs(jobs, cluster, cat)
        assert pj.specs[0].reading == reading
        want = alpha_max(spec.with_reading(reading), 10.0, 300.0, 8)
        assert pj.alpha_max[0] == pytest.approx(want)
        # a spread placement (one GPU on each of 4 servers) is priced under the same reading
        assert pj.alpha(0, np.array([0, 1, 2, 3])) == pytest.approx(want)
    # ResNet152 on 4 GPUs: literal halves the AllReduce of a spread replica (k / g = 1/2)
    share = PipelineJobs(jobs, parse_cluster(HEAD, "c.toml"), cat).alpha_max[0]
    lit = PipelineJobs(jobs, parse_cluster(HEAD + text, "c.toml"), cat).alpha_max[0]
    assert lit < share


def test_bundled_clusters_keep_the_default():
    assert reading_of(load_cluster("a-srpt-250x8")) == DEFAULT_READING


def test_workload_iterations_follow_the_clusters_reading(tmp_path: Path):
    from gpusched.workloads import build_workload

    per = tmp_path / "per.toml"
    per.write_text(HEAD + 'batch_reading = "per-replica"\n')
    a = build_workload("a-srpt", 1, 60, single_gpu_fraction=0.0)
    b = build_workload("a-srpt", 1, 60, single_gpu_fraction=0.0, cluster=str(per))
    assert list(a.extra["config"]) == list(b.extra["config"])  # same models and configs
    ratio = np.asarray(b.iterations) / np.asarray(a.iterations)
    # per-replica alpha_min is never below split's (k times the compute), so the same
    # duration implies as many or fewer iterations; some jobs replicate a stage
    assert (ratio <= 1 + 1e-12).all() and (ratio < 0.99).any()
