"""The edge-cloud paper's workloads and clusters (gpusched.workloads.edge_cloud).

The clusters are checked as TOML text (``tomllib``): the cluster loader reads their
edge-cloud keys once the lead wires them into gpusched.io.cluster.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gpusched.errors import GpuschedError
from gpusched.io.trace import write_trace
from gpusched.workloads import WORKLOADS, build_workload, workload_cluster
from gpusched.workloads.edge_cloud import (
    DECIMALS,
    DELAYS,
    MAX_SERVERS,
    MODELS,
    N_TYPES,
    RANGES,
    SIM_SERVER_WORKERS,
    TESTBED_BW_MBPS,
    TESTBED_PS,
    TESTBED_SERVERS,
    TESTBED_WORKERS,
    TYPE_NAMES,
    UNIT_S,
    edge_cloud_cluster,
    edge_cloud_sim_workload,
    edge_cloud_testbed_workload,
)
from gpusched.workloads.sjf_bsbf import load_pool
from tests.helpers import invoke, one_line_error

CLUSTERS = Path(__file__).resolve().parent.parent / "clusters"

CHUNK_COLUMNS = [
    "chunks",
    "batches",
    "epochs",
    "worker_type",
    "batch_time",
    "update_time",
    "grad_mb",
    "bw_mbps",
    "unit_s",
    "gang_workers",
]
TABLE_II = {name: (d, b) for name, _, d, b in MODELS}


def col(trace, name):
    return np.array([float(v) for v in trace.extra[name]])


def written(trace, path: Path) -> bytes:
    write_trace(trace, path)
    return path.read_bytes()


@pytest.fixture(scope="module")
def pool():
    return load_pool()


@pytest.fixture(scope="module")
def testbed_big():
    return edge_cloud_testbed_workload(4, 4000)


@pytest.fixture(scope="module")
def sim_big():
    # every bundled job; at seed 2 a 32-GPU job gets a 27-chunk model (the cap at D_j is
    # exercised) and K = 9 (fewer types than the cluster's ten)
    return edge_cloud_sim_workload(2, 4000)


# -- the Philly sample -------------------------------------------------------------------


def test_pool_gpu_counts_divide_the_gpu_time(pool):
    assert pool.num_gpus.shape == pool.philly_id.shape
    assert np.all(pool.num_gpus >= 1)
    assert np.all(pool.gpu_time_s % pool.num_gpus == 0)
    assert len(set(pool.num_gpus.tolist())) > 3  # multi-GPU jobs are there, not all 1


# -- determinism ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["edge-cloud-testbed", "edge-cloud-sim"])
def test_same_seed_same_bytes_other_seed_differs(preset, tmp_path):
    a = written(build_workload(preset, 7), tmp_path / "a.csv")
    b = written(build_workload(preset, 7), tmp_path / "b.csv")
    c = written(build_workload(preset, 8), tmp_path / "c.csv")
    assert a == b
    assert a != c
    kind = preset.removeprefix("edge-cloud-")
    assert edge_cloud_cluster(20, 7, kind) == edge_cloud_cluster(20, 7, kind)
    assert edge_cloud_cluster(20, 7, kind) != edge_cloud_cluster(20, 8, kind)


def test_other_seeds_sample_other_philly_jobs():
    a = edge_cloud_testbed_workload(1)
    b = edge_cloud_testbed_workload(2)
    assert set(a.extra["philly_job_id"]) != set(b.extra["philly_job_id"])


# -- columns and ranges --------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["edge-cloud-testbed", "edge-cloud-sim"])
def test_columns_are_the_chunk_job_columns(preset, tmp_path):
    t = build_workload(preset, 3)
    header = written(t, tmp_path / "w.csv").decode().splitlines()[0].split(",")
    assert header == [
        "job_id",
        "submit_time",
        "num_gpus",
        *CHUNK_COLUMNS,
        "dl_model",
        "philly_job_id",
    ]
    assert np.all(t.num_gpus == 1)
    assert np.all(np.isnan(t.duration)) and np.all(t.model == "")
    assert len(set(t.job_id.tolist())) == len(t)
    assert len(t) == (30 if preset == "edge-cloud-testbed" else 300)


@pytest.mark.parametrize("which", ["testbed", "sim"])
def test_every_value_in_its_section_v_range(which, testbed_big, sim_big):
    t = testbed_big if which == "testbed" else sim_big

    def within(name, values):
        lo, hi = RANGES[name]
        assert values.min() >= lo and values.max() <= hi, name

    epochs = col(t, "epochs")
    within("epochs", epochs)
    assert np.all(epochs == np.round(epochs))
    assert set(epochs.astype(int).tolist()) == set(range(20, 61))  # ends included
    m = col(t, "batch_time")
    within("batch_time", m)
    assert np.all(np.round(m, DECIMALS["batch_time"]) == m)
    g_ms = col(t, "update_time") * 1000 * UNIT_S
    lo, hi = RANGES["update_ms"]
    assert g_ms.min() >= lo - 1e-9 and g_ms.max() <= hi + 1e-9
    assert np.allclose(np.round(g_ms, DECIMALS["update_ms"]), g_ms, rtol=0, atol=1e-9)
    within("grad_mb", col(t, "grad_mb"))
    assert np.all(col(t, "unit_s") == UNIT_S)
    bw = col(t, "bw_mbps")
    if which == "testbed":
        assert np.all(bw == TESTBED_BW_MBPS)
    else:
        within("bw_mbps", bw)
        assert np.all(bw == np.round(bw))
        assert bw.std() > 1000  # drawn, not constant
    # Table II: the model sets D_j and B_j; every model occurs
    for name, d, b in zip(t.extra["dl_model"], col(t, "chunks"), col(t, "batches"), strict=True):
        assert TABLE_II[name] == (d, b)
    counts = Counter(t.extra["dl_model"].tolist())
    assert set(counts) == set(TABLE_II)
    assert min(counts.values()) > len(t) / 6 * 0.8  # near-uniform over the six


def test_testbed_worker_types_and_gang_caps(testbed_big, pool):
    t = testbed_big
    types = t.extra["worker_type"]
    assert set(types.tolist()) == set(TESTBED_WORKERS)
    assert abs(np.mean(types == "gpu") - 0.5) < 0.05
    gang = col(t, "gang_workers").astype(int)
    philly = dict(zip(pool.philly_id.tolist(), pool.num_gpus.tolist(), strict=True))
    wanted = np.array([philly[int(p)] for p in t.extra["philly_job_id"]])
    cap = np.array([TESTBED_SERVERS * TESTBED_WORKERS[str(k)] for k in types])
    assert np.array_equal(gang, np.minimum(wanted, cap))
    assert np.any(wanted > cap)  # the cap is exercised
    assert np.any(gang > 1)


def test_sim_worker_types_from_the_first_k_and_gang_capped_at_chunks(sim_big, pool):
    t = sim_big
    k = int(re.search(r"(\d+) worker types t1\.\.t(\d+)", t.source).group(1))
    assert N_TYPES[0] <= k <= N_TYPES[1]
    assert set(t.extra["worker_type"].tolist()) == set(TYPE_NAMES[:k])
    philly = dict(zip(pool.philly_id.tolist(), pool.num_gpus.tolist(), strict=True))
    wanted = np.array([philly[int(p)] for p in t.extra["philly_job_id"]])
    gang = col(t, "gang_workers")
    assert np.array_equal(gang, np.minimum(wanted, col(t, "chunks")))
    assert np.any(wanted > col(t, "chunks"))


def test_sim_number_of_types_varies_over_seeds():
    ks = {
        int(re.search(r"(\d+) worker types", build_workload("edge-cloud-sim", s, 5).source)[1])
        for s in range(40)
    }
    assert ks == set(range(N_TYPES[0], N_TYPES[1] + 1))


# -- arrivals ------------------------------------------------------------------------------


def _hours(trace, pool, scale_num, scale_den):
    offset = dict(zip(pool.philly_id.tolist(), pool.offset_s.tolist(), strict=True))
    s = np.array([offset[int(p)] for p in trace.extra["philly_job_id"]])
    hours = s * scale_num // (scale_den * 3600)
    return hours - hours.min()


@pytest.mark.parametrize("jobs", [1, 30, 100])
def test_testbed_slots_are_the_hours_of_the_philly_window(jobs, pool):
    t = edge_cloud_testbed_workload(5, jobs)
    assert len(t) == jobs
    slots = t.submit_time
    assert np.all(slots == np.round(slots)) and slots[0] == 0
    assert np.all(np.diff(slots) >= 0)
    assert slots.max() <= 7
    assert np.array_equal(slots, _hours(t, pool, 1, 1))


@pytest.mark.parametrize("jobs", [30, 300, 1200])
def test_sim_slots_scale_the_window_by_j_over_30(jobs, pool):
    t = edge_cloud_sim_workload(6, jobs)
    slots = t.submit_time
    assert np.all(slots == np.round(slots)) and slots[0] == 0
    assert np.all(np.diff(slots) >= 0)
    span = 8 * jobs // 30
    assert span * 0.85 <= slots.max() < span
    assert np.array_equal(slots, _hours(t, pool, jobs, 30))


# -- clusters ------------------------------------------------------------------------------


def _edges_and_cloud(text: str, cloud_kind: str = "unbounded"):
    doc = tomllib.loads(text)
    groups = doc["servers"]
    edges = [g for g in groups if g["tier"] == "edge"]
    clouds = [g for g in groups if g["tier"] == "cloud"]
    assert len(edges) + len(clouds) == len(groups)
    assert len(clouds) == 1 and groups[-1] is clouds[0]
    cloud = clouds[0]
    assert cloud["count"] == 1
    if cloud_kind == "unbounded":
        assert cloud["unbounded"] is True and cloud["gpus"] == 0
        assert "workers" not in cloud and "ps" not in cloud
    else:  # the testbed's ninth machine (Sec. V-A): an edge machine's hardware and workers
        assert "unbounded" not in cloud and cloud["ps"] == "unbounded"
        assert cloud["workers"] == TESTBED_WORKERS
        assert (cloud["gpus"], cloud["cpus"], cloud["mem_gb"]) == (1, 12, 16.0)
    lo, hi = DELAYS["cloud"]
    assert isinstance(cloud["delay_s"], int) and lo <= cloud["delay_s"] <= hi
    lo, hi = DELAYS["edge"]
    for g in edges:
        assert g["count"] == 1
        assert isinstance(g["delay_s"], int) and lo <= g["delay_s"] <= hi
    return doc, edges


def test_testbed_cluster_counts():
    doc, edges = _edges_and_cloud(edge_cloud_cluster(TESTBED_SERVERS, 3, "testbed"), "machine")
    assert doc["cluster"]["name"] == "edge-cloud-testbed" and doc["cluster"]["description"]
    assert len(edges) == TESTBED_SERVERS
    for g in edges:
        assert g["workers"] == TESTBED_WORKERS and g["ps"] == TESTBED_PS
        assert (g["gpus"], g["cpus"], g["mem_gb"]) == (1, 12, 16.0)
        # the split fits the machine: gpu worker 3 GB, cpu worker 3 cores 2 GB, PS 2 cores 3 GB
        w = g["workers"]
        assert 3 * w["cpu"] + 2 * g["ps"] <= g["cpus"]
        assert 3 * w["gpu"] + 2 * w["cpu"] + 3 * g["ps"] <= g["mem_gb"]
        assert w["gpu"] <= g["gpus"]


@pytest.mark.parametrize("servers", [1, 40, 100])
def test_sim_cluster_counts(servers):
    doc, edges = _edges_and_cloud(edge_cloud_cluster(servers, 2, "sim"))
    name = doc["cluster"]["name"]
    assert name == ("edge-cloud-sim" if servers == 100 else f"edge-cloud-sim-{servers}")
    assert len(edges) == servers
    seen: Counter[str] = Counter()
    for g in edges:
        assert g["gpus"] in SIM_SERVER_WORKERS
        assert set(g["workers"]) <= set(TYPE_NAMES)
        assert all(c >= 1 for c in g["workers"].values())
        assert sum(g["workers"].values()) == g["gpus"] == g["ps"]
        seen.update(g["workers"])
    if servers >= 40:
        assert set(seen) == set(TYPE_NAMES)  # every type, so a workload of any K is served
        sizes = Counter(g["gpus"] for g in edges)
        assert set(sizes) == set(SIM_SERVER_WORKERS)


@pytest.mark.parametrize(
    ("stem", "kind"), [("edge-cloud-testbed", "testbed"), ("edge-cloud-sim", "sim")]
)
def test_bundled_cluster_is_the_generator_output_it_names(stem, kind):
    text = (CLUSTERS / f"{stem}.toml").read_text(encoding="utf-8")
    m = re.search(r"edge_cloud_cluster\((\d+), seed=(\d+),\n# kind=\"(\w+)\"\)", text)
    assert m is not None
    servers, seed = int(m[1]), int(m[2])
    assert m[3] == kind
    assert servers == (TESTBED_SERVERS if kind == "testbed" else 100)
    assert text == edge_cloud_cluster(servers, seed, kind)
    assert tomllib.loads(text)["cluster"]["name"] == stem


@pytest.mark.parametrize("kind", ["testbed", "sim"])
def test_cluster_cloud_and_shipping_options(kind):
    """--cloud unbounded gives the testbed the simulator's cloud; --ship serial writes
    every server's ship; both change nothing else (same draws)."""
    servers = TESTBED_SERVERS if kind == "testbed" else 12
    base = edge_cloud_cluster(servers, 4, kind)
    serial = edge_cloud_cluster(servers, 4, kind, ship="serial")
    doc = tomllib.loads(serial)
    assert all(g["ship"] == "serial" for g in doc["servers"])
    assert "ship" not in base.split("[cluster]")[1]
    assert [g["delay_s"] for g in doc["servers"]] == [
        g["delay_s"] for g in tomllib.loads(base)["servers"]
    ]
    if kind == "testbed":
        free = edge_cloud_cluster(servers, 4, kind, cloud="unbounded")
        _edges_and_cloud(free, "unbounded")
    else:
        with pytest.raises(GpuschedError, match="edge-cloud-sim's cloud is unbounded"):
            edge_cloud_cluster(servers, 4, kind, cloud="machine")


def test_the_testbed_cluster_loads_with_a_bounded_cloud():
    """The bundled testbed: 24 edge workers and the cloud machine's 3 (typed, bounded)."""
    from gpusched.core.tasks import worker_layout
    from gpusched.io.cluster import load_cluster

    layout = worker_layout(load_cluster("edge-cloud-testbed"), 1000)
    assert layout.cloud_first == -1 and layout.n_workers == 27
    assert int(layout.server_cloud.sum()) == 1


@pytest.mark.parametrize("preset", ["edge-cloud-testbed", "edge-cloud-sim"])
def test_arrival_scale_stretches_the_arrivals(preset):
    base = build_workload(preset, 3)
    wide = build_workload(preset, 3, arrival_scale=10.0)
    a, b = base.submit_time, wide.submit_time
    assert (b >= a).all() and b.max() >= 9 * a.max()
    assert wide.extra["chunks"].tolist() == base.extra["chunks"].tolist()  # same draws
    assert "arrivals x 10" in wide.source
    assert build_workload(preset, 3, arrival_scale=1.0).submit_time.tolist() == a.tolist()


# -- command line --------------------------------------------------------------------------


def test_cli_writes_workload_and_matching_cluster(tmp_path):
    out, cl = tmp_path / "w.csv", tmp_path / "sub" / "c40.toml"
    r = invoke(
        "workload", "edge-cloud-sim", "--servers", 40, "--seed", 1, "-o", out, "--cluster-out", cl
    )
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith(f"wrote 300 jobs to {out}: edge-cloud-sim (seed 1): 300 Philly jobs")
    assert lines[1] == f"wrote cluster to {cl}"
    assert out.read_bytes() == written(edge_cloud_sim_workload(1), tmp_path / "x.csv")
    assert cl.read_text(encoding="utf-8") == edge_cloud_cluster(40, 1, "sim")


def test_cli_testbed_cluster_and_jobs_sweep(tmp_path):
    out, cl = tmp_path / "w.csv", tmp_path / "tb.toml"
    r = invoke(
        "workload", "edge-cloud-testbed", "--jobs", 60, "--seed", 2, "-o", out, "--cluster-out", cl
    )
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == written(edge_cloud_testbed_workload(2, 60), tmp_path / "x.csv")
    assert cl.read_text(encoding="utf-8") == workload_cluster("edge-cloud-testbed", 2)
    assert cl.read_text(encoding="utf-8") == edge_cloud_cluster(TESTBED_SERVERS, 2, "testbed")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["edge-cloud-testbed", "--jobs", 0], ["edge-cloud-testbed", "--jobs", "1 to 4,000", "0"]),
        (["edge-cloud-sim", "--jobs", 4001], ["edge-cloud-sim", "--jobs", "4001"]),
        (["edge-cloud-sim", "--seed", -1], ["--seed", ">= 0"]),
        (
            ["edge-cloud-sim", "--servers", 0, "--cluster-out", "c.toml"],
            ["--servers", "1 to 10,000"],
        ),
        (
            ["edge-cloud-sim", "--servers", MAX_SERVERS + 1, "--cluster-out", "c.toml"],
            ["--servers"],
        ),
        (["edge-cloud-sim", "--servers", 40], ["--servers", "give --cluster-out"]),
        (
            ["edge-cloud-testbed", "--servers", 8, "--cluster-out", "c.toml"],
            ["8 edge servers", "--servers"],
        ),
        (["pd-ors", "--cluster-out", "c.toml"], ["--cluster-out", "'pd-ors' has no cluster"]),
        (["edge-cloud-sim", "--horizon", 5], ["does not take horizon"]),
        (["edge-cloud-testbed", "--cloud", "unbounded"], ["--cloud", "give --cluster-out"]),
        (
            ["edge-cloud-testbed", "--cloud", "fog", "--cluster-out", "c.toml"],
            ["--cloud must be machine or unbounded", "'fog'"],
        ),
        (
            ["edge-cloud-sim", "--cloud", "machine", "--cluster-out", "c.toml"],
            ["edge-cloud-sim's cloud is unbounded"],
        ),
        (
            ["edge-cloud-sim", "--ship", "slow", "--cluster-out", "c.toml"],
            ["--ship must be parallel or serial"],
        ),
        (["edge-cloud-sim", "--arrival-scale", 0], ["--arrival-scale", "> 0"]),
        (["edge-cloud-sim", "--arrival-scale", "nan"], ["--arrival-scale"]),
        (["edge-cloud-sim", "--arrival-scale", "inf"], ["--arrival-scale"]),
        (["edge-cloud-testbed", "--arrival-scale", -2], ["--arrival-scale"]),
        (["pd-ors", "--arrival-scale", 2], ["does not take arrival_scale"]),
        # the cluster was written over the trace just written, exit 0
        (["edge-cloud-sim", "--cluster-out", "./w.csv"], ["--cluster-out", "is the trace"]),
    ],
)
def test_cli_refuses_bad_options_before_writing(args, needles, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke("workload", *args, "-o", "w.csv"), *needles)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: edge_cloud_cluster(0, 1, "sim"), "--servers"),
        (lambda: edge_cloud_cluster(True, 1, "sim"), "--servers"),
        (lambda: edge_cloud_cluster(5, -1, "testbed"), "--seed"),
        (lambda: edge_cloud_cluster(5, 1, "edge"), "sim or testbed"),
        (lambda: edge_cloud_testbed_workload(1, 2.5), "--jobs"),
        (lambda: edge_cloud_sim_workload(1, 0), "--jobs"),
        (lambda: workload_cluster("nope", 1), "unknown workload"),
    ],
)
def test_functions_refuse_bad_arguments(call, needle):
    with pytest.raises(GpuschedError, match=re.escape(needle)):
        call()


@pytest.mark.parametrize("preset", sorted(WORKLOADS))
def test_every_preset_refuses_a_negative_seed(preset, tmp_path):
    # numpy's generators take no negative seed: refused before any preset draws
    one_line_error(invoke("workload", preset, "--seed", -3, "-o", tmp_path / "w.csv"), "--seed")
    assert list(tmp_path.iterdir()) == []
