"""Spread penalty alpha_max / alpha_min of every catalogue configuration under each reading.

Usage: python examples/a-srpt/spread-penalties.py            # Markdown table (docs/a-srpt.md)
       python examples/a-srpt/spread-penalties.py --table2   # VGG19 2x2x2 / GPT-175B vs Table II

alpha_min: the fewest servers, Heavy-Edge, eq. (7) (gpusched.jobmodels.heavy_edge.
alpha_min_estimate); alpha_max: one replica per server (gpusched.jobmodels.pipeline.alpha_max).
Cluster: the catalogue's [reference] (the paper's Sec. V-B: 8 GPUs per server, 10 Gbit/s NIC,
300 GB/s NVLink). Readings: allreduce share|literal (eq. 6, first case) x batch
split|per-replica (gpusched.jobmodels.reading.Reading).
"""

import sys

import numpy as np

from gpusched.jobmodels.heavy_edge import alpha_min_estimate, heavy_edge
from gpusched.algorithms.exact_mapping import optimal_mapping
from gpusched.jobmodels.catalogue import load_catalogue
from gpusched.jobmodels.pipeline import Reading, alpha_max, iteration_time

cat = load_catalogue()
ref = cat.reference
NIC, INTRA, G = ref.nic_gbps, ref.intra_gbyte_s, ref.gpus_per_server
READINGS = [Reading(a, b) for b in ("split", "per-replica") for a in ("share", "literal")]


def penalties() -> None:
    head = " | ".join(r.label for r in READINGS)
    print(f"| model | config | alpha_min ms (split / per-replica) | {head} |")
    print("|---|---|---|" + "---|" * len(READINGS))
    for name, prof in cat.models.items():
        for cfg in prof.configs:
            if cfg.n_gpus == 1:
                continue  # one GPU: never spread, penalty 1
            amin = {r: alpha_min_estimate(cfg.spec(r), NIC, INTRA, G) for r in READINGS}
            ratio = [alpha_max(cfg.spec(r), NIC, INTRA, G) / amin[r] for r in READINGS]
            reps = cfg.replicas
            text = (
                f"{reps[0]}x{len(reps)}"
                if len(set(reps)) == 1 and len(reps) > 4
                else "+".join(map(str, reps))
            )
            times = f"{amin[READINGS[0]] * 1e3:.1f} / {amin[READINGS[2]] * 1e3:.1f}"
            cells = " | ".join(f"{x:.3g}x" for x in ratio)
            print(f"| {name} | {text} | {times} | {cells} |")


def table2(n_cases: int = 20) -> None:
    """Table II's measurement: 20 random availabilities (free GPUs 0..8 per server)."""
    print("| model | reading | Heavy-Edge PITT ms | MILP PITT ms | paper HE / ILP ms |")
    print("|---|---|---|---|---|")
    for model, reps, n_srv, paper in (
        ("VGG19", (2, 2, 2), 6, "88.11 / 82.96"),
        ("GPT-175B", (1,) * 96, 20, "10.14 / 10.14"),
    ):
        cfg = next(c for c in cat.model(model).configs if c.replicas == reps)
        rng = np.random.default_rng(0)
        cases = []
        while len(cases) < n_cases:
            free = rng.integers(0, G + 1, size=n_srv)
            if free.sum() >= cfg.n_gpus:
                cases.append(free)
        for r in READINGS:
            spec = cfg.spec(r)
            he, op = [], []
            for free in cases:
                m = heavy_edge(spec, free)
                he.append(iteration_time(spec, m.alloc, NIC, INTRA, G))
                if model == "VGG19":  # the 96-stage MILP takes minutes per case
                    op.append(
                        optimal_mapping(spec, m.gpus_per_server, NIC, INTRA, G, exact=True)[1]
                    )
            ms = f"{np.mean(op) * 1e3:.2f}" if op else "-"
            print(
                f"| {model} {'+'.join(map(str, reps)) if len(reps) < 5 else '1x96'} | {r.label} | "
                f"{np.mean(he) * 1e3:.2f} | {ms} | {paper} |"
            )


if __name__ == "__main__":
    table2() if "--table2" in sys.argv else penalties()
