"""Where total JCT comes from: waiting vs running at trace speed vs placement slowdown.

Usage: python examples/a-srpt/jct-breakdown.py OUT [SUBSTRING of trace or cluster]"""
import csv
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

out, pat = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "")
acc = defaultdict(lambda: defaultdict(list))
for r in csv.DictReader(open(out / "results.csv")):
    if r["status"] != "ok" or pat not in r["trace"] + r["cluster"]:
        continue
    lab = r["policy"] + (f" ({r['params']})" if r["params"] else "")
    wait = ideal = extra = 0.0; n_slow = 0
    for j in csv.DictReader(open(out / "cells" / r["cell"] / "jobs.csv")):
        run = float(j["jct"]) - float(j["wait_s"]); d = float(j["duration"])
        wait += float(j["wait_s"]); ideal += min(run, d); extra += max(run - d, 0.0)
        n_slow += run > 2 * d
    for k, v in (("wait", wait), ("ideal", ideal), ("extra", extra), ("n_slow", n_slow)):
        acc[lab][k].append(v)
print(f"filter '{pat}': mean over seeds; run = jct - wait; ideal = min(run, trace duration)")
print("| policy | total wait (10^6 s) | total run at trace duration (10^6 s) | total run beyond trace duration (10^6 s) | jobs running > 2x their duration |")
print("|---|---|---|---|---|")
for lab, d in acc.items():
    print(f"| {lab} | {mean(d['wait'])/1e6:.2f} | {mean(d['ideal'])/1e6:.2f} | {mean(d['extra'])/1e6:.2f} | {mean(d['n_slow']):.1f} |")
