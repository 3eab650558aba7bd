"""The actual competitive ratio of PD-ORS (the paper's Fig. 10) on tiny instances.

Usage: python examples/pd-ors/competitive.py [--seeds 1-10] [--machines 3] [--scale 100]
       [--time-limit 60] [--policy pd-ors]

For each seed: the section-V workload with I = 10 jobs and T = 10 slots (``gpusched
workload pd-ors``), its ``samples`` divided by ``--scale`` (at the paper's sizes most jobs
need more than 10 slots even at their fastest, so the optimum would be a handful of jobs;
``--scale 1`` keeps them), replayed under the policy on ``--machines`` machines of
pd-ors-100's size, and solved offline, exactly, as the MILP of
:mod:`gpusched.algorithms.exact_ps` (HiGHS). The ratio is OPT / ALG (the paper's
definition: >= 1, lower is better). For the comparison both utilities are taken at the
end of a job's last slot (training time ``completion + 1 - arrival`` slots, the MILP's
convention); the engine's exact finish inside the slot would give PD-ORS slightly more.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpusched.algorithms.exact_ps import solve_offline
from gpusched.core.ledger import capacities
from gpusched.core.state import FINISHED
from gpusched.experiments.run import replay
from gpusched.io.cluster import parse_cluster
from gpusched.io.trace import write_trace
from gpusched.jobmodels.ps import PSJob, params_of
from gpusched.workloads.pd_ors import pd_ors_workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import ArgumentParser, guard, number, spans, whole  # noqa: E402

CLUSTER = """
[cluster]
name = "pd-ors-{h}"
description = "{h} machines of pd-ors-100's size"
allow_spread = true
[[servers]]
count = {h}
gpus = 36
gpu_type = "generic"
cpus = 100
mem_gb = 306.0
storage_gb = 135.0
"""


@guard
def main() -> None:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=spans(0), default="1-10")
    ap.add_argument("--machines", type=whole(1, 10_000), default=3)  # the MILP: tiny instances
    # divides the samples, so at least 1 (1 keeps the paper's sizes)
    ap.add_argument("--scale", type=number(1), default=100.0)
    ap.add_argument("--time-limit", type=number(0, lo_open=True), default=60.0)
    ap.add_argument("--policy", default="pd-ors")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--horizon", type=int, default=10)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cluster_path = tmp / "cluster.toml"
    cluster_path.write_text(CLUSTER.format(h=a.machines))
    cap = capacities(parse_cluster(cluster_path.read_text()))
    print(
        f"| seed | {a.policy} utility | OPT utility | ratio OPT/ALG | {a.policy} finished "
        "| OPT finished | MILP status | MILP s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for seed in a.seeds:
        trace = pd_ors_workload(seed, a.jobs, horizon=a.horizon)
        k = np.asarray(trace.extra["samples"], dtype=float)
        k = np.maximum(np.round(k / a.scale), 1).astype(int)
        trace = replace(trace, extra={**trace.extra, "samples": k.astype(str).astype(object)})
        path = tmp / f"w{seed}.csv"
        write_trace(trace, path)
        _, res = replay(str(path), a.policy, cluster=str(cluster_path), seed=seed)
        st = res.state
        p = params_of(res.jobs)
        arrival = np.ceil(st.job_submit - 1e-9).astype(int)
        done = st.job_status == FINISHED
        last = np.ceil(st.job_finish - 1e-9) - 1  # the job's last slot
        alg = float(
            sum(
                PSJob.of(p, j, int(arrival[j])).utility(int(last[j]))
                for j in np.flatnonzero(done)
            )
        )
        jobs = [PSJob.of(p, j, int(arrival[j])) for j in range(len(res.jobs))]
        t0 = time.perf_counter()
        opt = solve_offline(jobs, cap, a.horizon, time_limit=a.time_limit)
        dt = time.perf_counter() - t0
        ratio = opt.utility / alg if alg > 0 else math.inf
        ratios.append(ratio)
        print(
            f"| {seed} | {alg:.2f} | {opt.utility:.2f} | {ratio:.3f} | {int(done.sum())} "
            f"| {int((opt.completion >= 0).sum())} | {opt.status} | {dt:.1f} |"
        )
    finite = [r for r in ratios if math.isfinite(r)]
    if finite:
        print(
            f"\nratio over {len(finite)} seeds: mean {np.mean(finite):.3f}, "
            f"min {min(finite):.3f}, max {max(finite):.3f}"
        )


if __name__ == "__main__":
    main()
