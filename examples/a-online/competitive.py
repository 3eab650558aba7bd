"""The actual competitive ratio of A_online on tiny instances (the paper's Figs. 12-13).

Usage::

    python examples/a-online/competitive.py [--seeds 1-5] [--jobs 5,10,15,20,25]
        [--servers 5] [--eps 0,0.25,0.5] [--time-limit 60]

``--jobs`` and ``--servers`` take lists: Fig. 12 is jobs at 5 servers, Fig. 13 servers at
15 jobs (``--jobs 15 --servers 5,15,25,35,45``).

Sec. V-C of the edge-cloud paper: "We simplify ILP (4) by setting zeta_j = 1, whose optimal
objective is smaller than that of ILP (4). As a result, we can use the simplified problem
to calculate an upper bound of our actual competitive ratio of A_online", on "a reduced
input with [5, 25] jobs and [5, 45] servers", at several speed augmentations epsilon.

For each seed and job count this builds a small edge-cloud instance (``--servers`` edge
servers of one worker each, transmission delays of 1-2 slots, a cloud 4-6 slots away;
jobs of 1-3 chunks of 2-8 slots arriving over about J slots, no communication cost so that
zeta does not matter), runs A_online with every chunk (1 + eps) times faster (Definition
1), records which chunk trains in which slot, and computes the objective of ILP (4) of
that schedule: the fractional flow time of eq. 3, sum over chunks of sum_t y(t) (t - r_j)
/ (D_j p_j), the last, partial slot of a chunk counted by the share it trains (as
:mod:`gpusched.algorithms.exact_chunks` counts it). The optimum of the simplified ILP (4)
at speed 1 comes from :func:`gpusched.algorithms.exact_chunks.solve` (HiGHS). The ratio
printed is A_online's objective over the optimum; the total JCT of both schedules is
printed too (the optimum of (4) minimises eq. 3, not the JCT, so that ratio is only
indicative).
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from gpusched.algorithms.exact_chunks import Instance, horizon_bound, solve
from gpusched.core.state import I_N_RUN, RUNNING
from gpusched.experiments.run import build_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import ArgumentParser, guard, number, numbers, spans  # noqa: E402


def instance(seed: int, n_jobs: int, n_servers: int) -> dict:
    """A tiny instance: arrival slots, chunks, chunk slots, edge and cloud delays."""
    rng = np.random.default_rng([seed, n_jobs, n_servers])
    release = np.sort(rng.integers(0, max(1, n_jobs), n_jobs))
    return {
        "release": release,
        "chunks": rng.integers(1, 4, n_jobs),
        "slots": rng.integers(2, 9, n_jobs).astype(float),
        "edge_delay": rng.integers(1, 3, n_servers),
        "cloud_delay": int(rng.integers(4, 7)),
    }


def write_run_files(inst: dict, eps: float, folder: Path) -> tuple[str, str]:
    """The trace (every chunk 1 + eps times faster) and the cluster of an instance."""
    trace = folder / "t.csv"
    with trace.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["job_id", "submit_time", "num_gpus", "chunks", "batches", "epochs", "worker_type"]
            + ["batch_time", "update_time", "grad_mb", "bw_mbps"]
        )
        for j, (r, d, p) in enumerate(
            zip(inst["release"], inst["chunks"], inst["slots"], strict=True)
        ):
            w.writerow(
                [f"j{j}", int(r), 1, int(d), 1, 1, "a", repr(float(p) / (1 + eps)), 0, 0, 1000]
            )
    cluster = folder / "c.toml"
    groups = [
        f'[[servers]]\ncount = 1\ngpus = 1\ngpu_type = "g"\ntier = "edge"\n'
        f"delay_s = {int(dl)}\nworkers = {{ a = 1 }}\nps = 1\n"
        for dl in inst["edge_delay"]
    ]
    groups.append(
        f'[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
        f"delay_s = {inst['cloud_delay']}\nunbounded = true\n"
    )
    cluster.write_text('[cluster]\nname = "tiny-ec"\n\n' + "\n".join(groups))
    return str(trace), str(cluster)


def slot_cost(a: float, b: float, r: float) -> float:
    """sum_t w_t (t - r) over the slots t of the training interval [a, b): a full slot
    counts 1, a partial one the share of it the chunk trains."""
    total = 0.0
    t = math.floor(a + 1e-9)
    while t < b - 1e-9:
        share = min(b, t + 1) - max(a, t)
        total += share * (t - r)
        t += 1
    return total


def online(inst: dict, eps: float) -> tuple[float, float]:
    """A_online at speed 1 + eps: (eq. 3 objective of its schedule, its total JCT)."""
    with tempfile.TemporaryDirectory() as d:
        trace, cluster = write_run_files(inst, eps, Path(d))
        engine, _ = build_engine(trace, "a-online", cluster=cluster)
        moments: list[tuple[float, np.ndarray]] = []
        while not engine.finished:
            engine.step(1)
            st = engine.state
            run = st.run[: st.sim_i[I_N_RUN]]
            moments.append((engine.now, run[st.job_status[run] == RUNNING].copy()))
        res = engine.result()
    st = res.state
    info = res.extra["tasks"]
    parents = info["parent"]
    p = inst["slots"][parents] / (1 + eps)
    d = inst["chunks"][parents]
    r = inst["release"][parents]
    cost = 0.0
    for k, (t0, run) in enumerate(moments):
        t1 = moments[k + 1][0] if k + 1 < len(moments) else math.inf
        for c in run.tolist():
            end = min(t1, float(st.job_finish[c]))
            cost += slot_cost(t0, end, r[c]) / (d[c] * p[c])
    first = info["first"][:-1]
    finish = np.maximum.reduceat(st.job_finish, first)
    return cost, float((finish - inst["release"]).sum())


def exact(inst: dict, time_limit: float):
    n_w = len(inst["edge_delay"])
    n_j = len(inst["release"])
    slots = np.repeat(inst["slots"][:, None], n_w + 1, axis=1)
    delay = np.concatenate(
        [np.tile(inst["edge_delay"], (n_j, 1)), np.full((n_j, 1), inst["cloud_delay"])], axis=1
    )
    cloud = np.zeros(n_w + 1, dtype=bool)
    cloud[-1] = True
    model = Instance(
        release=inst["release"], chunks=inst["chunks"], slots=slots, delay=delay, cloud=cloud
    )
    return solve(model, horizon_bound(model), time_limit=time_limit)


@guard
def main() -> None:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=spans(0), default="1-5")
    ap.add_argument("--jobs", type=spans(1), default="5,10,15,20,25")
    ap.add_argument("--servers", type=spans(1), default="5")
    ap.add_argument("--eps", type=numbers(0), default="0,0.25,0.5")
    ap.add_argument("--time-limit", type=number(0, lo_open=True), default=60.0)
    args = ap.parse_args()
    epsilons = args.eps
    print(
        "| jobs | servers | seeds | "
        + " | ".join(f"ratio eps={e:g}" for e in epsilons)
        + " | JCT ratio eps=0 | optimal | solver s |"
    )
    print("| --- " * (6 + len(epsilons)) + "|")
    for n, m in [(n, m) for n in args.jobs for m in args.servers]:
        ratios: dict[float, list[float]] = {e: [] for e in epsilons}
        jct: list[float] = []
        status: list[str] = []
        secs = 0.0
        seeds = args.seeds
        for s in seeds:
            inst = instance(s, n, m)
            opt = exact(inst, args.time_limit)
            status.append(opt.status)
            secs += opt.runtime
            for e in epsilons:
                cost, total = online(inst, e)
                # a schedule stopped by the time limit is not optimal: its bound is used
                ratios[e].append(cost / (opt.objective if opt.status == "optimal" else opt.bound))
                if e == 0:
                    jct.append(total / opt.total_jct)

        def cell(v: list[float]) -> str:
            return f"{np.mean(v):.3f} (max {np.max(v):.3f})"

        print(
            f"| {n} | {m} | {len(seeds)} | "
            + " | ".join(cell(ratios[e]) for e in epsilons)
            + f" | {cell(jct)} | {status.count('optimal')}/{len(seeds)} | {secs:.1f} |"
        )


if __name__ == "__main__":
    main()
