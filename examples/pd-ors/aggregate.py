"""Tables of the PD-ORS experiments (docs/pd-ors.md) from the run folders of run.sh.

Usage: python examples/pd-ors/aggregate.py OUT

For each experiment (folder name without its -sN seed suffix): first how many of its jobs
can finish at all (alone at their fastest, eq. 13) and at most together (an upper bound
for any policy: gpusched.workloads.pd_ors.finishable) and how many could earn at least 1 %
of their utility's height even alone (worth_finishing), then per policy over the seeds:
total utility (mean, and min-max), jobs finished / admitted / rejected / unfinished, the
median training time (slots; the horizon T for a job that did not finish, as the paper's
Fig. 9), and the utilisation of each resource (resource-time held over capacity x
makespan), so that a setting where no policy can differ shows as one.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

import numpy as np

from gpusched.io.trace import read_trace
from gpusched.workloads.pd_ors import finishable, worth_finishing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard, need_folder, need_some, read_json  # noqa: E402

RESOURCES = ("gpus", "cpus", "mem_gb", "storage_gb")


def _policy(manifest: dict) -> str:
    params = manifest.obj("params")
    # Lemma 8's opt comes from the other seeds (run.sh): one row for all seeds
    shown = ",".join(f"{k}={'past' if k == 'opt' else v}" for k, v in params.items() if k != "rng")
    return manifest.text("policy") + (f":{shown}" if shown else "")


def _fmt(xs: list[float], digits: int = 1) -> str:
    m = mean(xs)
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} [{min(xs):.{digits}f}-{max(xs):.{digits}f}]"


def _capacity(manifest: dict) -> np.ndarray:
    rows = []
    for g in manifest["cluster"]["servers"]:
        rows += [[g.num(r) for r in RESOURCES]] * int(g.num("count"))
    return np.asarray(rows, dtype=np.float64)


def _trace(root: Path, manifest: dict) -> Path:
    path = Path(manifest.text("trace"))
    for base in (Path.cwd(), root.parent, root):
        if (base / path).exists():
            return base / path
    return root / "wl" / path.name


@guard
def main(root_arg: str) -> None:
    root = need_folder(root_arg, "run.sh's output folder (OUT)")
    need_some(root.glob("*/*/summary.json"), root, "run folders of run.sh (EXPERIMENT-sSEED/RUN/summary.json)")
    data: dict[tuple[str, str], list[dict]] = defaultdict(list)
    can: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    experiments: list[str] = []
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or folder.name == "wl":
            continue
        exp = re.sub(r"-s\d+$", "", folder.name)
        experiments += [exp] if exp not in experiments else []
        runs = sorted(p for p in folder.iterdir() if (p / "summary.json").exists())
        for i, run in enumerate(runs):
            manifest = read_json(run / "manifest.json", "a run's manifest.json")
            data[(exp, _policy(manifest))].append(read_json(run / "summary.json", "a run's summary.json"))
            if i == 0:
                trace = read_trace(_trace(root, manifest))
                alone, together = finishable(trace, _capacity(manifest))
                can[exp].append((alone, together, len(trace), worth_finishing(trace)))
    for exp in experiments:
        print(f"\n### {exp}\n")
        if can[exp]:
            c = np.array(can[exp], dtype=float)
            print(
                f"Jobs that can finish at all: {c[:, 0].mean():.1f} of {c[:, 2].mean():.0f} alone"
                f" at their fastest; at most {c[:, 1].mean():.1f} together (any policy);"
                f" {c[:, 3].mean():.1f} alone earn at least 1 % of their theta1.\n"
            )
        print(
            "| policy | seeds | total utility [range] | finished | admitted | rejected "
            "| unfinished | median training (slots) | GPU / CPU / mem / storage util |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for (e, policy), runs in data.items():
            if e != exp:
                continue

            def col(k: str, runs: list[dict] = runs) -> list[float]:
                return [r.num(k, missing=0.0) for r in runs]

            admitted = [r.get("n_admitted") for r in runs]
            adm = f"{mean(col('n_admitted')):.1f}" if None not in admitted else "-"
            keys = ["gpu_utilization" if r == "gpus" else f"utilization_{r}" for r in RESOURCES]
            util = " / ".join(f"{mean(col(k)):.2f}" for k in keys)
            print(
                f"| {policy} | {len(runs)} | {_fmt(col('total_utility'))} "
                f"| {mean(col('n_finished')):.1f} | {adm} | {mean(col('n_rejected')):.1f} "
                f"| {mean(col('n_unfinished')):.1f} | {_fmt(col('median_training_slots'))} "
                f"| {util} |"
            )


if __name__ == "__main__":
    main(args(1, "python examples/pd-ors/aggregate.py OUT")[0])
