"""Is the default A-SRPT workload contended, and not only because of a few giant jobs? (issue 32)

Usage (from any scratch folder; writes its traces to ./contention/):
    python examples/a-srpt/check-contention.py 101 102 103 [--load L] [--jobs N]

For each seed: `gpusched workload a-srpt` with every default (20,000 jobs, recurring groups,
load 3 without the top 1 % of jobs, on a-srpt-250x8), then the same file with the top 1 %
of jobs by GPU-seconds deleted (arrival times kept). Both are replayed on a-srpt-250x8 under
the paper's five baselines. The test passes when every baseline's average wait is at least
1,000 s on both. One row per (seed, variant): offered load over the arrival window with and
without the top 1 %, demand inside the window, each baseline's average wait and average JCT.
The value was picked on seeds 1-3; check it on seeds >= 100 (docs/a-srpt-results.md)."""
import argparse
import time
from pathlib import Path

from gpusched.experiments.run import replay
from gpusched.io.trace import read_trace, write_trace
from gpusched.workloads import build_workload
from gpusched.workloads.synth import demand_load, offered_load, top_jobs

BASELINES = ["spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime"]
CLUSTER, G = "a-srpt-250x8", 2000
ap = argparse.ArgumentParser()
ap.add_argument("seeds", type=int, nargs="+")
ap.add_argument("--load", type=float, default=None)
ap.add_argument("--jobs", type=int, default=None)
a = ap.parse_args()
out = Path("contention")
out.mkdir(exist_ok=True)
print("| seed | variant | load (all) | load w/o top 1 % | demand D | "
      + " | ".join(f"{b} wait / JCT (ks)" for b in BASELINES) + " | pass |")
print("|---" * (6 + len(BASELINES)) + "|")
ok_all = True
for seed in a.seeds:
    opts = {} if a.load is None else {"load": a.load}
    tr = build_workload("a-srpt", seed, a.jobs, **opts)
    full = out / f"default-s{seed}.csv"
    write_trace(tr, full)
    body = out / f"default-notop-s{seed}.csv"
    write_trace(tr.take(~top_jobs(tr.num_gpus * tr.duration, 0.01)), body)
    for name, path in (("default", full), ("top 1 % deleted", body)):
        t = read_trace(path)
        cells, ok = [], True
        for b in BASELINES:
            t0 = time.process_time()
            s, _ = replay(str(path), b, cluster=CLUSTER)
            ok &= s["avg_wait_s"] >= 1000
            cells.append(f"{s['avg_wait_s'] / 1e3:,.2f} / {s['avg_jct_s'] / 1e3:,.1f}")
        ok_all &= ok
        print(f"| {seed} | {name} | {offered_load(t, G):.2f} | {offered_load(t, G, 0.01):.2f} | "
              f"{demand_load(t, G):.2f} | " + " | ".join(cells) + f" | {'yes' if ok else 'NO'} |",
              flush=True)
print(f"\nevery baseline waits >= 1,000 s on average in every row: {'yes' if ok_all else 'NO'}")
