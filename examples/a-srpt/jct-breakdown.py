"""Where total JCT comes from: waiting vs running at trace speed vs placement slowdown.

Usage: python examples/a-srpt/jct-breakdown.py OUT [SUBSTRING of trace or cluster]"""
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, need_folder, need_some, read_csv  # noqa: E402

argv = args(1, "python examples/a-srpt/jct-breakdown.py OUT [SUBSTRING of trace or cluster]")
out, pat = need_folder(argv[0], "a sweep's output folder"), (argv[1] if len(argv) > 1 else "")
results = out / "results.csv"
table = need_some(read_csv(results, "the sweep's results.csv"), results, "result rows")
acc = defaultdict(lambda: defaultdict(list))


def jobs(r):
    return read_csv(out / "cells" / r["cell"] / "jobs.csv", "a sweep cell's jobs.csv")


for r in table:
    if r["status"] != "ok" or pat not in r["trace"] + r["cluster"]:
        continue
    lab = r["policy"] + (f" ({r['params']})" if r["params"] else "")
    wait = ideal = extra = 0.0; n_slow = 0
    for j in jobs(r):
        run = j.num("jct") - j.num("wait_s"); d = j.num("duration")
        wait += j.num("wait_s"); ideal += min(run, d); extra += max(run - d, 0.0)
        n_slow += run > 2 * d
    for k, v in (("wait", wait), ("ideal", ideal), ("extra", extra), ("n_slow", n_slow)):
        acc[lab][k].append(v)
print(f"filter '{pat}': mean over seeds; run = jct - wait; ideal = min(run, trace duration)")
print("| policy | total wait (10^6 s) | total run at trace duration (10^6 s) | total run beyond trace duration (10^6 s) | jobs running > 2x their duration |")
print("|---|---|---|---|---|")
for lab, d in acc.items():
    print(f"| {lab} | {mean(d['wait'])/1e6:.2f} | {mean(d['ideal'])/1e6:.2f} | {mean(d['extra'])/1e6:.2f} | {mean(d['n_slow']):.1f} |")
