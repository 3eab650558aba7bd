"""Pick A-SRPT's delay factor tau from tuning sweeps (tau-tune.toml, tau-tune-nic.toml).

Usage: python examples/a-srpt/choose-tau.py RESULTS.csv [RESULTS.csv ...]

For every workload (trace file, cluster) it divides each tau's total JCT by the best total
JCT any tau reached on that workload, then prints the mean and the worst of that ratio per
tau, per workload family and over all. The tau with the lowest overall mean ratio wins.
"""

import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import _number, args, fail, need_some, read_csv  # noqa: E402

runs = defaultdict(dict)  # (trace, cluster) -> tau -> total JCT, s
for path in args(1, "python examples/a-srpt/choose-tau.py RESULTS.csv [RESULTS.csv ...]"):
    rows = need_some(read_csv(path, "a sweep's results.csv"), path, "result rows")
    for r in rows:
        if r["status"] != "ok" or r["policy"] != "a-srpt":
            continue
        m = re.search(r"tau=([0-9.e+]+)", r["params"])
        if m is None or _number(m.group(1)) is None:
            r.bad("params", "tau=NUMBER (a tuning sweep's a-srpt row)")
        runs[(r["trace"], r["cluster"])][float(m.group(1))] = r.num("total_jct_s")

if not runs:
    fail(" ".join(sys.argv[1:]), "no successful a-srpt rows with tau=...; expected tuning sweeps' results.csv")
taus = sorted({t for v in runs.values() for t in v})
ratio = defaultdict(lambda: defaultdict(list))  # family -> tau -> ratios
for (trace, cluster), by_tau in runs.items():
    family = re.sub(r"^.*/|-s\d+\.csv$", "", trace)
    if "nic" in cluster:
        family += " " + re.sub(r"^a-srpt-250x8-|\.toml$", "", cluster)
    best = min(by_tau.values())
    for t, v in by_tau.items():
        ratio[family][t].append(v / best)
        ratio["all"][t].append(v / best)

print("mean total JCT / best tau's, per workload family (3 seeds each)\n")
print("| workloads | " + " | ".join(f"tau={t:g}" for t in taus) + " |")
print("|---" * (len(taus) + 1) + "|")
for fam in sorted(ratio, key=lambda f: (f == "all", f)):
    print(f"| {fam} | " + " | ".join(f"{fmean(ratio[fam][t]):.2f}" for t in taus) + " |")
print("| all, worst | " + " | ".join(f"{max(ratio['all'][t]):.2f}" for t in taus) + " |")
best_tau = min(taus, key=lambda t: fmean(ratio["all"][t]))
print(f"\nlowest mean ratio over all {len(runs)} workloads: tau = {best_tau:g}")
