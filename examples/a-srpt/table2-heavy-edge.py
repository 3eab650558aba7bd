"""Table II style: Heavy-Edge vs the exact MILP (gpusched.jobmodels.heavy_edge.compare_with_optimal).

Usage: python examples/a-srpt/table2-heavy-edge.py          # 7 configurations x 20 cases
       python examples/a-srpt/table2-heavy-edge.py big 5    # GPT-175B 96 stages, 5 cases
Columns: model | config | HE PITT ms | HE PCT ms | MILP PITT ms | MILP PCT ms |
         gap mean / max | cases with gap > 0 | MILP runs that hit the 60 s limit"""
import sys

import numpy as np

from gpusched.algorithms.exact_mapping import compare_with_optimal
from gpusched.jobmodels.catalogue import load_catalogue

cat = load_catalogue()
CASES = [  # (model, replicas per stage, servers in the random availability)
    ("VGG19", (2, 2, 2), 6), ("VGG19", (3, 1), 6), ("VGG19", (7, 1), 6),
    ("BERT-large", (4, 4), 6), ("XLNet-large", (2, 2), 6),
    ("GPT-6.7B", (2, 2, 2, 2), 6), ("GPT-13B", (2,) * 8, 6),
]
if len(sys.argv) > 1 and sys.argv[1] == "big":
    CASES = [("GPT-175B", (1,) * 96, 20)]
N_CASES = 20 if len(sys.argv) < 3 else int(sys.argv[2])
NIC, INTRA, G, LIMIT = 10.0, 300.0, 8, 60.0
for model, reps, n_srv in CASES:
    cfg = next(c for c in cat.model(model).configs if c.replicas == reps)
    spec, need = cfg.spec(), cfg.n_gpus
    rng = np.random.default_rng(0)
    rows = []
    unproven = 0  # cases where the MILP could not prove optimality within LIMIT
    while len(rows) + unproven < N_CASES:
        free = rng.integers(0, G + 1, size=n_srv)  # free GPUs per server, 0..8
        if free.sum() < need:
            continue
        try:
            rows.append(compare_with_optimal(spec, free, NIC, INTRA, G, time_limit_s=LIMIT))
        except TimeoutError:
            unproven += 1
    if not rows:
        print(f"| {model} | {'x'.join(map(str, reps))} ({need} GPUs) | no proven optimum in "
              f"{unproven}/{N_CASES} cases within {LIMIT:.0f} s |", flush=True)
        continue
    he = np.mean([r.heavy_edge_s for r in rows]) * 1e3
    op = np.mean([r.optimal_s for r in rows]) * 1e3
    gaps = np.array([r.gap for r in rows])
    print(f"| {model} | {'x'.join(map(str, reps))} ({need} GPUs) | {he:.2f} | "
          f"{np.mean([r.heavy_edge_wall_s for r in rows]) * 1e3:.2f} | {op:.2f} | "
          f"{np.mean([r.optimal_wall_s for r in rows]) * 1e3:.1f} | "
          f"{gaps.mean():.1%} / {gaps.max():.1%} | {np.sum(gaps > 1e-9)}/{len(rows)} | {unproven} |", flush=True)
