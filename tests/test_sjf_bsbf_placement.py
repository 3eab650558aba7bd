"""SJF-BSBF and SJF-FFS where the GPUs are and what memory allows (issue 30).

* Theorem 1 priced at the placement a job would get (reading 5 of
  ``gpusched.algorithms.share``): two 5-job traces on 2 servers x 2 GPUs, hand-computed
  from eq. 7 and the xi table, with ``placement=aware`` (the default) and ``ideal``.
* The engine's rate for a GPU set is the time the policy prices it at (one server or
  several), so the policy's prediction is the engine's.
* At xi = 1 with every sharing decision beneficial, SJF-BSBF and SJF-FFS give the same
  schedule (the paper's Fig. 6b: "allow all the available sharing decisions as SJF-FFS,
  which results in the same performance"); the counter-case where GPU memory forces a
  small sub-batch, and the same trace with memory unbounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpusched.algorithms.share import JobTimes, pair_jct, sequential_jct
from gpusched.core.jobs import prepare_jobs
from gpusched.experiments.run import build_engine
from gpusched.jobmodels import sharing as S

HEADER = "job_id,submit_time,num_gpus,iterations,model,batch_size\n"


def _cluster(tmp_path: Path, servers: int, gpus: int, mem: str = "gpu_mem_gb = 11.0") -> Path:
    path = tmp_path / f"c{servers}x{gpus}.toml"
    path.write_text(
        f'[cluster]\nname = "c{servers}x{gpus}"\ngpu_capacity = 2\nallow_spread = true\n'
        f'[[servers]]\ncount = {servers}\ngpus = {gpus}\ngpu_type = "RTX2080Ti"\n{mem}\n'
    )
    return path


def _run(tmp_path: Path, rows: str, cluster: Path, policy: str, *params: str) -> dict[str, Any]:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + rows)
    engine, _ = build_engine(str(trace), policy, cluster=str(cluster), params=list(params))
    st = engine.run().state
    ids = [str(x) for x in engine.jobs.job_id]
    return {
        j: (float(st.job_first_start[i]), float(st.job_finish[i]), float(st.job_submit[i]))
        for i, j in enumerate(ids)
    }


def _t(model: str, batch: int, sub: int, n: int, servers: int) -> float:
    """eq. 7: one iteration, s."""
    return S.t_iter(S.load_profiles()[model], batch, sub, n, servers)


XI = S.default_xi()
K = {m: i for i, m in enumerate(S.MODELS)}
T_NCF = _t("ncf", 256, 256, 1, 1)  # 1 GPU
T_IMG = _t("imagenet", 128, 128, 1, 1)  # fits 11 GB alone: 0.909 + 0.07045 * 128 = 9.93 GB
T_Y1 = _t("yolov3", 8, 8, 2, 1)  # 2 GPUs on one server
T_Y2 = _t("yolov3", 8, 8, 2, 2)  # 2 GPUs on two servers (2.55x slower)
XI_YN = XI[K["yolov3"], K["ncf"]]  # yolov3 beside ncf
XI_NY = XI[K["ncf"], K["yolov3"]]

# Trace D: at t = 200 the 2-GPU yolov3 job J5 finds GPU 1 idle (server 0) and only J3 (ncf,
# GPU 2, server 1) to share with; J1 and J4 (imagenet, 9.93 GB) leave no memory for it
# (at sub-batch 1 it needs 1.49 + 0.84 = 2.34 GB). Any set is on two servers.
TRACE_D = (
    "J1,0,1,800,imagenet,128\n"
    "J2,1,1,20000,ncf,256\n"
    "J3,2,1,200000,ncf,256\n"
    "J4,3,1,50000,imagenet,128\n"
    "J5,200,2,3000,yolov3,8\n"
)
# Trace C: the same, with J1 an ncf job and J3, J4 long ncf jobs: J5 can share on one
# server (J1's GPU 0 and idle GPU 1).
TRACE_C = (
    "J1,0,1,200000,ncf,256\n"
    "J2,1,1,20000,ncf,256\n"
    "J3,2,1,4000000,ncf,256\n"
    "J4,3,1,4000000,ncf,256\n"
    "J5,200,2,3000,yolov3,8\n"
)


def test_theorem_1_at_the_placement_says_wait_for_trace_d() -> None:
    solo_j5 = 3000 * T_Y1  # its L_k: alone, one server
    left_j3 = 200000 * T_NCF - 198  # J3 started at 2
    wait = sequential_jct(solo_j5, left_j3)
    at_ideal = pair_jct(solo_j5, left_j3, XI_YN, XI_NY)
    at_spread = pair_jct(3000 * T_Y2, left_j3, XI_YN, XI_NY)
    assert at_ideal < wait < at_spread  # priced at the ideal placement it would share


def test_trace_d_aware_waits_for_one_server(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 2, 2)
    got = _run(tmp_path, TRACE_D, c, "sjf-bsbf")
    # J1 ends at 800 T_IMG = 493.65; the next decision (1 s slots) starts J5 on server 0
    j1_end = 800 * T_IMG
    start = float(np.ceil(j1_end))
    assert got["J5"][0] == start
    assert got["J5"][1] == pytest.approx(start + 3000 * T_Y1, rel=1e-12)
    assert got["J3"][1] == pytest.approx(2 + 200000 * T_NCF, rel=1e-12)  # never shared
    # the same as SJF: sharing across servers loses, so SJF-BSBF does not share
    sjf = _run(tmp_path, TRACE_D, c, "sjf")
    assert got == sjf


def test_trace_d_ideal_shares_across_servers_and_loses(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 2, 2)
    got = _run(tmp_path, TRACE_D, c, "sjf-bsbf", "placement=ideal")
    # J5 starts at 200 on GPU 1 (idle, server 0) and GPU 2 (J3's, server 1): J3 runs xi
    # times slower to its end; J5 meanwhile at (T_Y1 / T_Y2) / xi, then alone, spread
    left_j3 = 200000 * T_NCF - 198
    j3_end = 200 + left_j3 * XI_NY
    done = (j3_end - 200) * (T_Y1 / T_Y2) / XI_YN  # J5's work (s at its ideal rate)
    j5_end = j3_end + (3000 * T_Y1 - done) / (T_Y1 / T_Y2)
    assert got["J5"][0] == 200.0
    assert got["J3"][1] == pytest.approx(j3_end, rel=1e-9)
    assert got["J5"][1] == pytest.approx(j5_end, rel=1e-9)
    assert j5_end - 200 > 3800  # it expected ~1,836 s (Theorem 1 at the ideal placement)


def test_trace_c_aware_shares_on_one_server(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 2, 2)
    got = _run(tmp_path, TRACE_C, c, "sjf-bsbf")
    # J5 at 200 on GPU 0 (beside J1) and idle GPU 1, both on server 0: J5 at 1 / xi and J1
    # at 1 / xi until J1's end, then J5 alone on one server
    left_j1 = 200000 * T_NCF - 200
    j1_end = 200 + left_j1 * XI_NY
    done = (j1_end - 200) / XI_YN
    j5_end = j1_end + (3000 * T_Y1 - done)
    assert got["J5"][0] == 200.0
    assert got["J1"][1] == pytest.approx(j1_end, rel=1e-9)
    assert got["J5"][1] == pytest.approx(j5_end, rel=1e-9)
    # Theorem 1 predicted this pair at one-server prices
    predicted = pair_jct(3000 * T_Y1, left_j1, XI_YN, XI_NY)
    assert (j1_end - 200 + j5_end - 200) / 2 == pytest.approx(predicted, rel=1e-9)
    # J3 and J4 (the other server) are untouched
    assert got["J3"][1] == pytest.approx(2 + 4000000 * T_NCF, rel=1e-12)


def test_trace_c_ideal_spreads_over_two_partners(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 2, 2)
    ideal = _run(tmp_path, TRACE_C, c, "sjf-bsbf", "placement=ideal")
    aware = _run(tmp_path, TRACE_C, c, "sjf-bsbf")
    # line 14 at ideal prices orders J1 (shortest pair) then J3: GPUs 0 and 2, two servers
    assert ideal["J5"][0] == 200.0
    assert ideal["J5"][1] - 200 > 4000
    assert ideal["J3"][1] > aware["J3"][1]  # J3 was slowed down too
    mean = lambda r: np.mean([f - s for _, f, s in r.values()])  # noqa: E731
    assert mean(aware) < mean(ideal)


@pytest.mark.parametrize("trace", [TRACE_C, TRACE_D])
@pytest.mark.parametrize("placement", ["aware", "ideal"])
def test_plan_matches_the_loop_on_the_five_job_traces(tmp_path, trace, placement) -> None:
    c = _cluster(tmp_path, 2, 2)
    jitted = _run(tmp_path, trace, c, "sjf-bsbf", f"placement={placement}")
    looped = _run(tmp_path, trace, c, str(_loop_policy(tmp_path)), f"placement={placement}")
    assert jitted == looped


def _loop_policy(tmp_path: Path) -> Path:
    """A policy file: sjf-bsbf deciding by its Python loop."""
    path = tmp_path / "sjf_bsbf_loop.py"
    path.write_text(
        "from gpusched.core.registry import load_policy_class\n"
        "class Loop(load_policy_class('sjf-bsbf')):\n"
        "    name = 'sjf-bsbf-loop'\n"
        "    def decide(self, view, now):\n"
        "        return self.decide_loop(view, now)\n"
    )
    return path


def test_sjf_ffs_server_first_fit(tmp_path: Path) -> None:
    # 2 x 2 GPUs: J1 (ncf) on GPU 0, J2 (ncf) on GPU 2, J3 (long ncf) on GPU 3; GPU 1 idle.
    # A 2-GPU yolov3 job: first fit over servers takes server 0 (GPU 0 beside J1 + idle
    # GPU 1); GPU order alone (placement=ideal) takes GPUs 0 and 2 (two servers).
    rows = (
        "J1,0,1,4000000,ncf,256\n"
        "J2,1,1,20000,ncf,256\n"
        "J3,2,1,4000000,ncf,256\n"
        "J4,3,1,4000000,ncf,256\n"
        "J5,200,2,3000,yolov3,8\n"
    )
    c = _cluster(tmp_path, 2, 2)
    aware = _run(tmp_path, rows, c, "sjf-ffs")
    ideal = _run(tmp_path, rows, c, "sjf-ffs", "placement=ideal")
    assert aware["J5"][0] == ideal["J5"][0] == 200.0
    # one server: J5 at 1 / xi beside ncf for all its run
    assert aware["J5"][1] == pytest.approx(200 + 3000 * T_Y1 * XI_YN, rel=1e-9)
    assert ideal["J5"][1] == pytest.approx(200 + 3000 * T_Y2 * XI_YN, rel=1e-9)


def test_engine_rate_is_the_priced_time() -> None:
    from gpusched.io.cluster import load_cluster
    from gpusched.workloads import WORKLOADS

    cluster = load_cluster("sjf-bsbf-64x8")
    jobs = prepare_jobs(WORKLOADS["sjf-bsbf"](3, 400, "sjf-bsbf-64x8"), cluster)
    times = JobTimes(jobs, cluster)
    perf = times.model
    assert perf is not None
    server = np.asarray(cluster.gpu_server())
    rng = np.random.default_rng(0)
    seen = {True: 0, False: 0}
    for s, j in enumerate(times.shape_job.tolist()):
        g = int(times.n_gpus[j])
        subs = times.shape_subs[s]
        for _ in range(6):
            gpus = np.sort(rng.choice(server.size, g, replace=False))
            if rng.random() < 0.5 and g <= 8:  # one server
                first = int(rng.integers(0, 64)) * 8
                gpus = np.arange(first, first + g)
            one = len(set(server[gpus].tolist())) == 1
            seen[one] += 1
            w = int(rng.integers(0, len(subs)))
            table = times.t_iter if one else times.t_spread
            want = times.work[j] * table[s, w] / times.t_full[s]
            got = times.work[j] / perf.rate(j, gpus, subs[w])
            assert got == pytest.approx(want, rel=1e-12)
        # eq. 4 as fitted: two servers or more cost the same
        for k in range(2, 6):
            for x in subs:
                assert perf.t_iter_s(j, x, k) == perf.t_iter_s(j, x, 2)
    assert seen[True] and seen[False]
    assert times.sensitive.any() and not times.sensitive.all()


# --------------------------------------------------------------------- xi = 1

# 1 server x 2 GPUs, ncf jobs whose sub-batch always fits beside a partner: every sharing
# decision at xi = 1 is beneficial (Theorem 1 with xi = 1: together (s_A + s_B) / 2 <
# waiting (2 s_B + s_A) / 2 whenever s_B > 0)
XI1 = (
    "A,0,1,133985,ncf,256\n"
    "B,0,1,401955,ncf,256\n"
    "C,10,1,66993,ncf,256\n"
    "D,20,2,62138,ncf,256\n"
    "E,600,1,26797,ncf,256\n"
)


def test_xi_1_bsbf_equals_ffs_when_every_share_pays(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 1, 2)
    bsbf = _run(tmp_path, XI1, c, "sjf-bsbf", "xi=1.0")
    ffs = _run(tmp_path, XI1, c, "sjf-ffs", "xi=1.0")
    assert bsbf == ffs
    t2 = _t("ncf", 256, 256, 2, 1)
    a, b = 133985 * T_NCF, 401955 * T_NCF
    c_end = 10 + 66993 * T_NCF  # C shares GPU 0 with A at once (xi = 1: no slowdown)
    d_start = float(np.ceil(c_end))  # D (2 GPUs) needs a slot on GPU 0: after C ends
    e_start = float(np.ceil(a))  # E arrives at 600 with both GPUs full; A ends first
    want = {
        "A": (0.0, a),
        "B": (0.0, b),
        "C": (10.0, c_end),
        "D": (d_start, d_start + 62138 * t2),
        "E": (e_start, e_start + 26797 * T_NCF),
    }
    for j, (start, end) in want.items():
        assert bsbf[j][0] == start, j
        assert bsbf[j][1] == pytest.approx(end, rel=1e-12), j


# A yolov3 job arriving beside another on one GPU fits only at sub-batch 1 (8.25 + 2.34 GB
# of 11): eq. 7 then takes 8 steps of one sample, 4.7 times its full-batch iteration.
ACC = "B,0,1,2434,yolov3,8\nA,100,1,2434,yolov3,8\n"


def test_xi_1_memory_makes_them_differ(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 1, 1)
    full = _t("yolov3", 8, 8, 1, 1)
    sub1 = _t("yolov3", 8, 1, 1, 1)
    b_end = 2434 * full
    ffs = _run(tmp_path, ACC, c, "sjf-ffs", "xi=1.0")
    assert ffs["A"][0] == 100.0  # shares at once, at sub-batch 1
    assert ffs["A"][1] == pytest.approx(100 + 2434 * sub1, rel=1e-12)
    bsbf = _run(tmp_path, ACC, c, "sjf-bsbf", "xi=1.0")
    # Theorem 1 at xi = 1: sharing (2 (b_end - 100) + 2434 sub1 - (b_end - 100)) / 2 loses
    # to waiting (2 (b_end - 100) + 2434 full) / 2 since 2434 sub1 > (b_end - 100) + b_end
    assert bsbf["A"][0] == float(np.ceil(b_end))
    assert bsbf["A"][1] == pytest.approx(np.ceil(b_end) + 2434 * full, rel=1e-12)


def test_xi_1_memory_unbounded_makes_them_equal(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 1, 1, mem="")  # no gpu_mem_gb: memory is not checked
    ffs = _run(tmp_path, ACC, c, "sjf-ffs", "xi=1.0")
    bsbf = _run(tmp_path, ACC, c, "sjf-bsbf", "xi=1.0")
    assert ffs == bsbf
    full = _t("yolov3", 8, 8, 1, 1)
    assert bsbf["A"] == (100.0, pytest.approx(100 + 2434 * full, rel=1e-12), 100.0)
