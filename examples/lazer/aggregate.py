"""Table-2-style summary of a Lazer sweep's results.csv (docs/lazer.md).

Usage: python examples/lazer/aggregate.py OUT/results.csv

For each workload (trace name without its -sN seed suffix) and policy: P50 and P95 of JCT,
waiting and futile-preemption time in minutes (as the paper's Table 2), then GPU
utilisation, preemptions, futile preemptions and the scheduling delay per decision; each
the mean over the workload seeds, with the range (min-max) over seeds for the P50s.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import defaultdict
from statistics import mean

LABELS = {
    "srtf-periodic (interval=60.0)": "Pollux-like (60 s)",
    "srtf-periodic (interval=360.0)": "Muri-like (360 s)",
    "srtf-periodic (interval=600.0)": "Optimus-like (600 s)",
}


def main(path: str) -> None:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        print(f"FAILED cells: {len(bad)}")
    rows = [r for r in rows if r["status"] == "ok"]
    data: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    workloads: list[str] = []
    policies: list[str] = []
    for r in rows:
        w = re.sub(r"^.*/|-s\d+\.csv$", "", r["trace"])
        p = r["policy"] + (f" ({r['params']})" if r["params"] else "")
        p = LABELS.get(p, p)
        workloads += [w] if w not in workloads else []
        policies += [p] if p not in policies else []
        data[(w, p)].append(r)
    unfinished = sum(int(r["n_unfinished"]) for r in rows)
    if unfinished:
        print(f"unfinished jobs: {unfinished}")

    def cell(w: str, p: str, key: str, scale: float, spread: bool) -> str:
        got = [float(r[key]) / scale for r in data.get((w, p), [])]
        if not got:
            return ""
        text = f"{mean(got):,.1f}"
        return text + (f" ({min(got):,.1f}-{max(got):,.1f})" if spread and len(got) > 1 else "")

    print(f"\nP50 / P95 in minutes, mean over seeds (P50 range over seeds); {len(rows)} runs\n")
    print("| metric | workload | " + " | ".join(policies) + " |")
    print("|---|---" + "|---" * len(policies) + "|")
    for title, key in (("JCT", "jct"), ("Waiting", "wait"), ("Futile preemption", "futile")):
        for w in workloads:
            cells = [
                cell(w, p, f"p50_{key}_s", 60, True) + " / " + cell(w, p, f"p95_{key}_s", 60, False)
                for p in policies
            ]
            print(f"| {title} | {w} | " + " | ".join(cells) + " |")
    print("\nUtilisation, preemptions (futile), scheduling delay per decision (ms):\n")
    print("| workload | policy | GPU util. | preemptions | futile | delay avg ms | wall s |")
    print("|---|---|---|---|---|---|---|")
    for w in workloads:
        for p in policies:
            got = data.get((w, p), [])
            if not got:
                continue
            print(
                f"| {w} | {p} | {mean(float(r['gpu_utilization']) for r in got):.3f} | "
                f"{mean(float(r['n_preemptions']) for r in got):,.0f} | "
                f"{mean(float(r['n_futile_preemptions']) for r in got):,.0f} | "
                f"{mean(float(r['sched_delay_ms_avg']) for r in got):.3f} | "
                f"{mean(float(r['wall_s']) for r in got):.1f} |"
            )


if __name__ == "__main__":
    main(sys.argv[1])
