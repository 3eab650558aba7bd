"""Aggregate a gpusched sweep results.csv into markdown tables (mean over workload seeds).

Usage: python examples/a-srpt/aggregate.py OUT/results.csv [trace|cluster]
(group settings by trace name without its -sN seed suffix, or by cluster for the NIC sweep)."""
import csv
import re
import sys
from collections import defaultdict
from statistics import mean

from gpusched.results.stats import t_interval

path, by = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "trace")
rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
BASE = ["spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime"]
def setting(r):
    if by == "cluster":
        return re.sub(r"\.toml$", "", r["cluster"]).replace("a-srpt-250x8-", "")
    return re.sub(r"^wl/|-s\d+\.csv$", "", r["trace"])
def label(r):
    return r["policy"] + (f" ({r['params']})" if r["params"] else "")
def seed(r):
    return re.search(r"-s(\d+)\.csv$", r["trace"]).group(1)
data = defaultdict(dict)  # (setting, label) -> seed -> row
order_s, order_p = [], []
for r in rows:
    s, p = setting(r), label(r)
    if s not in order_s: order_s.append(s)
    if p not in order_p: order_p.append(p)
    data[(s, p)][seed(r)] = r
bad = [r for r in csv.DictReader(open(path)) if r["status"] != "ok"]
if bad: print(f"FAILED cells: {len(bad)}")
unf = sum(int(r["n_unfinished"]) for r in rows)
if unf: print(f"unfinished jobs: {unf}")
def cell(d, metric, scale, ci):
    """Mean over seeds, with the Student-t 95 % half-width when asked and n >= 2."""
    vals = [float(v[metric]) / scale for v in d.values() if v.get(metric) not in ("", None)]
    if not vals:
        return ""
    iv = t_interval(vals)
    if ci and iv.half_width is not None:
        return f"{iv.mean:,.2f} ± {iv.half_width:,.2f}"
    return f"{iv.mean:,.2f}"
def table(metric, scale, unit, ci=False):
    n = max((len(d) for d in data.values()), default=0)
    print(f"\n{metric} ({unit}), mean over {n} seeds" + (" ± 95 % CI" if ci else "") + ":\n")
    print("| policy | " + " | ".join(order_s) + " |")
    print("|---" * (len(order_s) + 1) + "|")
    for p in order_p:
        cells = [cell(data[(s, p)], metric, scale, ci) if (s, p) in data else "" for s in order_s]
        print(f"| {p} | " + " | ".join(cells) + " |")
# JCT with its spread over seeds, then what it is made of: waiting and slowdown (time lost to
# running slower than at ideal placement), and how busy the GPUs were (an idle cluster is
# visible at a glance: no policy can differ there)
for m, sc, u, ci in [("total_jct_s", 1e6, "10^6 s", True), ("avg_jct_s", 1e3, "10^3 s", False),
                     ("avg_wait_s", 1e3, "10^3 s", False), ("avg_slowdown_s", 1e3, "10^3 s", False),
                     ("gpu_utilization", 0.01, "%", False), ("makespan_s", 1e6, "10^6 s", False)]:
    table(m, sc, u, ci)
# A-SRPT vs the paper's baselines, per setting: mean total JCT and seed-by-seed wins
# A-SRPT-Perfect too: how far the same policy gets with a perfect predictor
asrpt = [p for p in order_p if p.startswith("a-srpt")]
print("\nA-SRPT (and A-SRPT-Perfect) total JCT vs the best of the paper baselines run (per seed: best baseline chosen per seed):\n")
print("| setting | a-srpt variant | a-srpt mean (10^6 s) | best baseline (by mean) | its mean | reduction | seeds where a-srpt < every baseline |")
print("|---|---|---|---|---|---|---|")
# baseline variants present: a paper baseline with any parameters (e.g. "wcs-subtime (select=most)")
base = [p for p in order_p if p.split(" (")[0] in BASE]
for s in order_s if base else []:  # a sweep without baselines (e.g. tau.toml) has no comparison
    bm = {b: mean(float(v["total_jct_s"]) for v in data[(s, b)].values()) for b in base if (s, b) in data}
    best = min(bm, key=bm.get)
    for a in asrpt:
        d = data[(s, a)]
        am = mean(float(v["total_jct_s"]) for v in d.values())
        wins = sum(float(d[k]["total_jct_s"]) < min(float(data[(s, b)][k]["total_jct_s"]) for b in bm) for k in d)
        print(f"| {s} | {a} | {am/1e6:,.2f} | {best} | {bm[best]/1e6:,.2f} | {1 - am / bm[best]:+.0%} | {wins}/{len(d)} |")
print("\nScheduling delay per decision, a-srpt (mean over seeds of sched_delay_ms_avg / _p95; n_decisions):\n")
print("| setting | policy | avg ms | p95 ms | decisions |")
print("|---|---|---|---|---|")
for s in order_s:
    for a in asrpt:
        d = data[(s, a)].values()
        print(f"| {s} | {a} | {mean(float(v['sched_delay_ms_avg']) for v in d):.3f} | "
              f"{mean(float(v['sched_delay_ms_p95']) for v in d):.3f} | {mean(float(v['n_decisions']) for v in d):,.0f} |")
