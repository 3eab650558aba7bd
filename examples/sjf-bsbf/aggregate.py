"""Tables of the SJF-BSBF experiments (docs/sjf-bsbf.md) from the run folders of run.sh.

Usage: python examples/sjf-bsbf/aggregate.py OUT

For each experiment (folder name without its -sN seed suffix) and policy: average JCT and
average queuing time in hours for all, large (more than 4 GPUs) and small jobs, as the
paper's Tables III and IV, then GPU utilisation and the GPU-hours run shared; each the
mean over the seeds, with the range (min-max) of the all-jobs average JCT.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean


def _policy(run: Path) -> str:
    manifest = json.loads((run / "manifest.json").read_text())
    params = manifest.get("params") or {}
    shown = ",".join(f"{k}={v}" for k, v in params.items() if k != "rng")
    return manifest["policy"] + (f":{shown}" if shown else "")


def _figures(run: Path) -> dict[str, float]:
    with open(run / "jobs.csv", newline="") as f:
        jobs = list(csv.DictReader(f))
    summary = json.loads((run / "summary.json").read_text())
    out: dict[str, float] = {}
    for part, keep in (("all", lambda g: True), ("large", lambda g: g > 4), ("small", lambda g: g <= 4)):
        rows = [j for j in jobs if keep(int(j["gpus"])) and j["jct"]]
        out[f"jct_{part}"] = mean(float(j["jct"]) for j in rows) / 3600 if rows else float("nan")
        out[f"wait_{part}"] = mean(float(j["wait_s"]) for j in rows) / 3600 if rows else float("nan")
    out["util"] = summary["gpu_utilization"]
    out["shared_h"] = summary["shared_gpu_s"] / 3600
    out["makespan_h"] = summary["makespan_s"] / 3600
    return out


def main(root: str) -> None:
    data: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    experiments: list[str] = []
    for folder in sorted(Path(root).iterdir()):
        if not folder.is_dir() or folder.name == "wl":
            continue
        exp = re.sub(r"-s\d+$", "", folder.name)
        experiments += [exp] if exp not in experiments else []
        for run in sorted(p for p in folder.iterdir() if (p / "jobs.csv").exists()):
            data[(exp, _policy(run))].append(_figures(run))
    cols = ("jct_all", "jct_large", "jct_small", "wait_all", "wait_large", "wait_small")
    for exp in experiments:
        print(f"\n### {exp}\n")
        print("| policy | seeds | avg JCT all (h) [range] | large | small | avg queuing all (h) "
              "| large | small | GPU util | shared GPU-h | makespan (h) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for (e, policy), runs in data.items():
            if e != exp:
                continue
            m = {k: mean(r[k] for r in runs) for k in runs[0]}
            lo = min(r["jct_all"] for r in runs)
            hi = max(r["jct_all"] for r in runs)
            cells = [f"{m['jct_all']:.2f} [{lo:.2f}-{hi:.2f}]"] + [f"{m[c]:.2f}" for c in cols[1:]]
            print(f"| {policy} | {len(runs)} | " + " | ".join(cells)
                  + f" | {m['util']:.3f} | {m['shared_h']:.1f} | {m['makespan_h']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
