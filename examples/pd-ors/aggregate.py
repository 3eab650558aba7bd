"""Tables of the PD-ORS experiments (docs/pd-ors.md) from the run folders of run.sh.

Usage: python examples/pd-ors/aggregate.py OUT

For each experiment (folder name without its -sN seed suffix) and policy, over the seeds:
total utility (mean, and min-max), jobs finished / rejected / unfinished, the median
training time (slots; the horizon T for a job that did not finish, as the paper's Fig. 9),
the average training time (completion - arrival) and wait of the finished jobs, and the utilisation of GPUs and CPUs (resource-time held
over capacity x makespan) so that an idle cluster shows as one.
"""

from __future__ import annotations

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


def _fmt(xs: list[float], digits: int = 1) -> str:
    m = mean(xs)
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} [{min(xs):.{digits}f}-{max(xs):.{digits}f}]"


def main(root: str) -> None:
    data: dict[tuple[str, str], list[dict]] = defaultdict(list)
    experiments: list[str] = []
    for folder in sorted(Path(root).iterdir()):
        if not folder.is_dir() or folder.name == "wl":
            continue
        exp = re.sub(r"-s\d+$", "", folder.name)
        experiments += [exp] if exp not in experiments else []
        for run in sorted(p for p in folder.iterdir() if (p / "summary.json").exists()):
            data[(exp, _policy(run))].append(json.loads((run / "summary.json").read_text()))
    for exp in experiments:
        print(f"\n### {exp}\n")
        print(
            "| policy | seeds | total utility [range] | finished | rejected | unfinished "
            "| median training (slots) | avg training of finished (slots) | avg wait (slots) "
            "| GPU util | CPU util | wall s |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for (e, policy), runs in data.items():
            if e != exp:
                continue
            col = lambda k: [float(r[k] or 0.0) for r in runs]  # noqa: E731
            print(
                f"| {policy} | {len(runs)} | {_fmt(col('total_utility'))} "
                f"| {mean(col('n_finished')):.1f} | {mean(col('n_rejected')):.1f} "
                f"| {mean(col('n_unfinished')):.1f} | {_fmt(col('median_training_slots'))} "
                f"| {mean(col('avg_jct_s')):.2f} | {mean(col('avg_wait_s')):.2f} | {mean(col('gpu_utilization')):.2f} "
                f"| {mean(col('utilization_cpus')):.2f} | {mean(col('wall_s')):.1f} |"
            )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1])
