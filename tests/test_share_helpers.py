"""SJF-BSBF's jitted helpers (``gpusched.algorithms.share``) against the numpy code they
replaced: the SJF order, the jobs to evaluate (first of each shape), the jobs alone on some
GPU, the first job that finds enough GPUs, and a whole decision (``plan_sjf_bsbf``) against
the policy's step-by-step Python (``decide_loop``) at every decision point of whole runs.
Also the sharing model's per-job set-up, worked out once per distinct model and batch,
against the same formulas row by row."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.algorithms.share import (
    alone_holders,
    first_enough,
    first_of_each_shape,
    sjf_order,
)
from gpusched.core import jobmodel
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class
from gpusched.core.state import QUEUED, RUNNING
from gpusched.errors import TraceError
from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace
from gpusched.jobmodels import sharing as S
from gpusched.workloads import WORKLOADS


def first_of_each_shape_numpy(need, shape, refused, pos, stop, room):
    """The policy's former ``_candidates``."""
    cand = pos + np.flatnonzero(need[pos:stop] <= room)
    sh = shape[cand]
    live = ~refused[sh]
    cand, sh = cand[live], sh[live]
    if cand.size < 2:
        return cand
    _, first = np.unique(sh, return_index=True)
    return cand[np.sort(first)]


def alone_holders_numpy(one, holder, status, skip):
    """The policy's former partner list: np.unique with counts, then the status filter."""
    jobs, counts = np.unique(holder[one], return_counts=True)
    keep = status[jobs] != skip
    return jobs[keep], counts[keep]


@pytest.mark.parametrize("seed", range(20))
def test_first_of_each_shape_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    need = rng.integers(1, 9, n)
    shape = rng.integers(0, 6, n)
    refused = rng.random(6) < 0.3
    pos = int(rng.integers(0, n + 1))
    stop = int(rng.integers(pos, n + 1))
    room = int(rng.integers(0, 9))
    got = first_of_each_shape(need, shape, refused, pos, stop, room)
    want = first_of_each_shape_numpy(need, shape, refused, pos, stop, room)
    assert got.tolist() == want.tolist()
    assert len(set(shape[got].tolist())) == got.size


def test_first_of_each_shape_leaves_refused_alone():
    refused = np.array([False, True, False])
    got = first_of_each_shape(np.ones(4, int), np.array([1, 0, 0, 2]), refused, 0, 4, 1)
    assert got.tolist() == [1, 3]
    assert refused.tolist() == [False, True, False]


@pytest.mark.parametrize("seed", range(20))
def test_alone_holders_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n_gpus = int(rng.integers(0, 64))
    one = rng.random(n_gpus) < 0.5
    holder = rng.integers(0, 12, n_gpus)
    status = np.where(rng.random(12) < 0.2, QUEUED, RUNNING).astype(np.int8)
    status.flags.writeable = seed % 2 == 0  # the view's status array is read-only
    jobs, counts = alone_holders(one, holder, status, QUEUED)
    want_jobs, want_counts = alone_holders_numpy(one, holder, status, QUEUED)
    assert jobs.tolist() == want_jobs.tolist()
    assert counts.tolist() == want_counts.tolist()


@pytest.mark.parametrize("seed", range(20))
def test_sjf_order_matches_a_stable_numpy_sort(seed):
    rng = np.random.default_rng(seed)
    n_jobs = 30
    duration = rng.integers(1, 6, n_jobs).astype(np.float64)  # many ties
    n_gpus = rng.integers(1, 9, n_jobs).astype(np.int32)
    shape_of = rng.integers(0, 4, n_jobs)
    queued = np.sort(rng.choice(n_jobs, int(rng.integers(0, n_jobs)), replace=False))
    queued = queued.astype(np.int32)
    order, need, shape = sjf_order(queued, duration, n_gpus, shape_of)
    want = queued[np.argsort(duration[queued], kind="stable")]
    assert order.tolist() == want.tolist()
    assert need.tolist() == n_gpus[want].tolist()
    assert shape.tolist() == shape_of[want].tolist()


@pytest.mark.parametrize("seed", range(20))
def test_first_enough_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n_jobs, n_partners = int(rng.integers(0, 6)), int(rng.integers(0, 6))
    ok = rng.random((n_jobs, n_partners)) < 0.4
    n_own = rng.integers(1, 5, n_partners)
    n_free = int(rng.integers(0, 4))
    need = rng.integers(1, 9, n_jobs)
    enough = ok.any(axis=1) & (ok @ n_own + n_free >= need)
    found = np.flatnonzero(enough)
    want = int(found[0]) if found.size else n_jobs
    assert first_enough(ok, n_own, n_free, need) == want


def _starts(decision):
    return [(a.job, a.gpus.tolist(), a.config) for a in decision.actions]


def _both_ways(seed: int, n_jobs: int, cluster_name: str, scale_xi: float, **params):
    """Replay the sjf-bsbf workload with a policy that decides both ways at every decision
    point, checks that they agree and starts what they say; returns its counts."""
    base = load_policy_class("sjf-bsbf")

    class Both(base):  # type: ignore[misc, valid-type]
        def prepare(self, jobs, cluster):
            super().prepare(jobs, cluster)
            self.times.xi = self.times.xi * scale_xi  # beliefs only: the run's physics stay
            self.n_starts = self.n_shared = self.n_sub = self.n_noted = self.n_calls = 0
            self.n_one_server = self.n_spread = 0  # shared starts of placement-sensitive gangs
            self.server = np.asarray(cluster.gpu_server())

        def _note_memory(self, view, jobs):
            self.n_noted += len(jobs)
            super()._note_memory(view, jobs)

        def decide(self, view, now):
            # the memory noted of each running job (decide notes it when it starts the
            # job) is that of the config the engine records for it
            for b in view.running.tolist():
                if not np.isnan(self._mem_run[b]):
                    assert self._mem_run[b] == self.times.mem(b, view.job_config.get(b))
            want = self.decide_loop(view, now)
            self.n_calls += 1
            if self.n_calls % 3 == 0:  # forget: decide must ask for what it needs
                self._mem_run[:] = np.nan
            got = super().decide(view, now)
            assert _starts(got) == _starts(want), f"t={now}"
            on = np.array(view.gpu_n_jobs)
            for a in got.actions:
                self.n_starts += 1
                shared = bool(on[a.gpus].any())
                self.n_shared += shared
                self.n_sub += a.config is not None
                if shared and self.times.sensitive[self.times.shape_of[a.job]]:
                    spread = len(set(self.server[a.gpus].tolist())) > 1
                    self.n_spread += spread
                    self.n_one_server += not spread
                on[a.gpus] += 1
            return got

    cluster = load_cluster(cluster_name)
    jobs = prepare_jobs(WORKLOADS["sjf-bsbf"](seed, n_jobs, cluster_name), cluster)
    policy = Both(**params)
    perf = jobmodel.perf(jobs, cluster)
    Engine(jobs, cluster, policy, mode="python", perf=perf).run()
    return policy


@pytest.mark.parametrize(
    ("seed", "params", "scale_xi"),
    [
        (1, {}, 1.0),
        (2, {}, 1.0),
        (3, {"xi": 1.5}, 1.0),
        (1, {"xi": 1.0}, 1.0),
        (2, {}, 0.9),
        (1, {"placement": "ideal"}, 1.0),
        (3, {"xi_model": "gavel"}, 1.0),
    ],
)
def test_plan_matches_the_python_decision(seed, params, scale_xi):
    # xi = 1.0: sharing costs nothing, many near-ties; xi scaled below 1: no shortcut
    policy = _both_ways(seed, 480, "sjf-bsbf-16x4", scale_xi, **params)
    assert policy.n_starts == 480
    assert policy.n_shared > 0  # the sharing path (Alg. 2's placement) was taken
    assert policy.n_noted > 0  # and decide asked for memory it had forgotten
    if not params:
        assert policy.n_sub > 0  # and chose sub-batches


@pytest.mark.parametrize(
    ("seed", "params"), [(1, {}), (2, {"xi": 1.25}), (1, {"placement": "ideal"})]
)
def test_plan_matches_the_python_decision_on_a_larger_cluster(seed, params):
    # 8-GPU servers: gangs of 2-8 GPUs are placement-sensitive (one server is their ideal)
    policy = _both_ways(seed, 1500, "sjf-bsbf-64x8", 1.0, **params)
    assert policy.n_starts == 1500
    assert policy.n_shared > 0
    if params.get("placement", "aware") == "aware":
        assert policy.n_one_server > 0  # gangs shared on one server (reading 5)
        assert policy.n_spread > 0  # and across servers, priced there


def test_sharing_perf_batches_match_job_by_job():
    cluster = load_cluster("sjf-bsbf-16x4")
    jobs = prepare_jobs(WORKLOADS["sjf-bsbf"](2, 480, "sjf-bsbf-16x4"), cluster)
    perf = S.SharingPerf(jobs, cluster)
    profiles = S.load_profiles()
    limit = perf.limit_gb(None)
    assert len(set(zip(perf.kind.tolist(), perf.batch.tolist(), strict=True))) > 1
    for j in range(len(jobs)):
        p = profiles[S.MODELS[perf.kind[j]]]
        text = str(jobs.extra["batch_size"][j])
        batch = p.batch_size if text == "" else int(text)
        assert perf.batch[j] == batch
        assert perf.solo[j] == S.solo_sub_batch(p, batch, limit)


def _rows_trace(tmp_path, rows):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus,iterations,model,batch_size\n" + rows)
    return read_trace(path)


def test_durations_match_row_by_row(tmp_path):
    rng = np.random.default_rng(0)
    models = ["bert", "cifar10", "ncf"]
    rows = "".join(
        f"j{i},0,{rng.choice([1, 2, 4, 8])},{rng.integers(1, 5000)},{rng.choice(models)},"
        f"{rng.choice(['', '4', '8', '64'])}\n"
        for i in range(60)
    )
    tr = _rows_trace(tmp_path, rows)
    work, _ = S.JOB_MODEL.durations(tr, np.full(60, np.nan), np.ones(60, dtype=bool))
    profiles = S.load_profiles()
    gps, mem = S.reference_gpus_per_server(), S.reference_gpu_mem_gb()
    for i in range(60):
        p = profiles[str(tr.model[i])]
        text = str(tr.extra["batch_size"][i])
        b = p.batch_size if text == "" else int(text)
        n = int(tr.num_gpus[i])
        solo = S.solo_sub_batch(p, b, mem)
        want = tr.iterations[i] * S.t_iter(p, b, solo, n, S.ideal_servers(n, gps))
        assert work[i] == want  # bit for bit


def test_durations_report_every_bad_row_in_line_order(tmp_path):
    # a duration out of range, a bad batch (twice, the same text), and good rows between
    tr = _rows_trace(
        tmp_path,
        "a,0,4,1000,cifar10,256\n"
        "b,0,1,9e15,ncf,\n"
        "c,0,2,100,cifar10,abc\n"
        "d,0,1,1e-9,ncf,\n"
        "e,0,2,100,cifar10,abc\n"
        "f,0,8,50,bert,\n",
    )
    with pytest.raises(TraceError) as err:
        S.JOB_MODEL.durations(tr, np.full(6, np.nan), np.ones(6, dtype=bool))
    got = [(e.split(":")[1], e.split(": ", 1)[1].split(":")[0]) for e in err.value.errors]
    assert got == [
        ("3", "column 'iterations'"),
        ("4", "column 'batch_size'"),
        ("5", "column 'iterations'"),
        ("6", "column 'batch_size'"),
    ]
