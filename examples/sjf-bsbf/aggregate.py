"""Tables of the SJF-BSBF experiments (docs/sjf-bsbf.md) from the run folders of run.sh.

Usage: python examples/sjf-bsbf/aggregate.py OUT

Run folders are ``EXPERIMENT__VARIANT-sSEED`` (run.sh). For each experiment and variant,
and each policy: average JCT and average queuing time for all, large (more than 4 GPUs)
and small jobs, as the paper's Tables III and IV, then GPU utilisation, the GPU-hours run
shared, the load paid per start (the restart cost), preemptions per run and the makespan;
each the mean over the seeds, with the range (min-max) of the all-jobs average JCT. Hours,
or seconds for the testbed (the paper's Table II is in seconds).

Then, per experiment, the ablation: one row per variant, one column per policy, each cell
"average JCT / average queuing" (mean over seeds), a variant's policies that it does not
change marked "=" (the defaults' row holds them), and on how many seeds SJF-BSBF's average
JCT is below Tiresias's and below SJF-FFS's.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard, need_folder, need_some, read_csv, read_json  # noqa: E402

POLICIES = ("fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf")


def _policy(run: Path) -> tuple[str, str]:
    """The run's policy name and its label with its parameters."""
    manifest = read_json(run / "manifest.json", "a run's manifest.json")
    params = manifest.obj("params")
    shown = ",".join(f"{k}={v}" for k, v in params.items() if k != "rng")
    return manifest.text("policy"), manifest.text("policy") + (f":{shown}" if shown else "")


def _figures(run: Path, scale: float) -> dict[str, float]:
    jobs = read_csv(run / "jobs.csv", "a run's jobs.csv")
    summary = read_json(run / "summary.json", "a run's summary.json")
    out: dict[str, float] = {}
    parts = (("all", lambda g: True), ("large", lambda g: g > 4), ("small", lambda g: g <= 4))
    for part, keep in parts:
        rows = [j for j in jobs if keep(j.whole("gpus")) and j["jct"]]
        out[f"jct_{part}"] = mean(j.num("jct") for j in rows) / scale if rows else float("nan")
        out[f"wait_{part}"] = (
            mean(j.num("wait_s") for j in rows) / scale if rows else float("nan")
        )
    starts = sum(1 + j.whole("preemptions") for j in jobs if j["first_start"])
    out["load_per_start"] = sum(j.num("load_s", empty=0.0) for j in jobs) / max(starts, 1)
    out["preemptions"] = float(sum(j.whole("preemptions") for j in jobs))
    out["util"] = summary.num("gpu_utilization")
    out["shared_h"] = summary.num("shared_gpu_s") / 3600
    out["makespan"] = summary.num("makespan_s") / scale
    return out


@guard
def main(root: str) -> None:
    root = need_folder(root, "run.sh's output folder (OUT)")
    need_some(root.glob("*__*-s*/*/jobs.csv"), root, "run folders of run.sh (EXPERIMENT__VARIANT-sSEED/RUN/jobs.csv)")
    # (experiment, variant, label) -> runs; (experiment, variant, policy, seed) -> figures
    data: dict[tuple[str, str, str], list[dict[str, float]]] = defaultdict(list)
    by_seed: dict[tuple[str, str, str, str], dict[str, float]] = {}
    order: list[tuple[str, str]] = []
    for folder in sorted(root.iterdir()):
        m = re.fullmatch(r"(.+?)__(.+)-s(\d+)", folder.name)
        if not folder.is_dir() or m is None:
            continue
        exp, variant, seed = m.groups()
        if (exp, variant) not in order:
            order.append((exp, variant))
        scale = 1.0 if exp == "testbed" else 3600.0
        for run in sorted(p for p in folder.iterdir() if (p / "jobs.csv").exists()):
            name, label = _policy(run)
            fig = _figures(run, scale)
            data[(exp, variant, label)].append(fig)
            # the ablation compares policies by name; the xi sweep by label
            by_seed[(exp, variant, label if exp == "xi" else name, seed)] = fig
    order.sort(key=lambda ev: (ev[0], ev[1] != "defaults", ev[1]))
    cols = ("jct_all", "jct_large", "jct_small", "wait_all", "wait_large", "wait_small")
    for exp, variant in order:
        unit = "s" if exp == "testbed" else "h"
        print(f"\n### {exp}, {variant}\n")
        print(
            f"| policy | seeds | avg JCT all ({unit}) [range] | large | small "
            f"| avg queuing all ({unit}) | large | small | GPU util | shared GPU-h "
            f"| load s/start | preemptions | makespan ({unit}) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for (e, v, label), runs in data.items():
            if (e, v) != (exp, variant):
                continue
            m = {k: mean(r[k] for r in runs) for k in runs[0]}
            lo = min(r["jct_all"] for r in runs)
            hi = max(r["jct_all"] for r in runs)
            f = "{:.0f}" if exp == "testbed" else "{:.2f}"
            cells = [f"{f.format(m['jct_all'])} [{f.format(lo)}-{f.format(hi)}]"]
            cells += [f.format(m[c]) for c in cols[1:]]
            print(
                f"| {label} | {len(runs)} | "
                + " | ".join(cells)
                + f" | {m['util']:.3f} | {m['shared_h']:.1f} | {m['load_per_start']:.0f}"
                + f" | {m['preemptions']:.0f} | {f.format(m['makespan'])} |"
            )
    _ablation([ev for ev in order if ev[0] != "xi"], by_seed)
    _xi_sweep(by_seed)


def _ablation(
    order: list[tuple[str, str]], by_seed: dict[tuple[str, str, str, str], dict[str, float]]
) -> None:
    """Per experiment: variants x policies, "JCT / queuing", and SJF-BSBF's wins."""
    for exp in dict.fromkeys(e for e, _ in order):
        variants = [v for e, v in order if e == exp]
        if "defaults" not in variants or len(variants) < 2:
            continue
        unit = "s" if exp == "testbed" else "h"
        f = "{:.0f}" if exp == "testbed" else "{:.2f}"
        print(f"\n### ablation: {exp} (avg JCT / avg queuing, {unit}; mean over seeds)\n")
        print("| variant | " + " | ".join(POLICIES) + " | BSBF < Tiresias | BSBF < FFS |")
        print("|---|" + "---|" * (len(POLICIES) + 2))
        for v in variants:
            cells = []
            for p in POLICIES:
                runs = [
                    fig for (e, vv, pp, _), fig in by_seed.items() if (e, vv, pp) == (exp, v, p)
                ]
                if not runs:  # not run: "=" the defaults' (if they ran it), "-" neither
                    ran = any(k[:3] == (exp, "defaults", p) for k in by_seed)
                    cells.append("=" if ran and v != "defaults" else "-")
                    continue
                jct = mean(r["jct_all"] for r in runs)
                wait = mean(r["wait_all"] for r in runs)
                cells.append(f"{f.format(jct)} / {f.format(wait)}")
            cells += [_wins(by_seed, exp, v, "tiresias"), _wins(by_seed, exp, v, "sjf-ffs")]
            print(f"| {v} | " + " | ".join(cells) + " |")


def _wins(
    by_seed: dict[tuple[str, str, str, str], dict[str, float]], exp: str, v: str, other: str
) -> str:
    """On how many seeds SJF-BSBF's average JCT is below ``other``'s in variant ``v`` (a
    policy the variant does not run is taken from the defaults)."""
    seeds = sorted({s for (e, vv, _, s) in by_seed if (e, vv) == (exp, v)})
    won = n = 0
    for s in seeds:
        mine = by_seed.get((exp, v, "sjf-bsbf", s)) or by_seed.get((exp, "defaults", "sjf-bsbf", s))
        theirs = by_seed.get((exp, v, other, s)) or by_seed.get((exp, "defaults", other, s))
        if mine is None or theirs is None:
            continue
        n += 1
        won += mine["jct_all"] < theirs["jct_all"]
    return f"{won}/{n}" if n else "-"


def _xi_sweep(by_seed: dict[tuple[str, str, str, str], dict[str, float]]) -> None:
    """Fig. 6(b): per injected xi, SJF-FFS's and SJF-BSBF's average JCT (h, mean over
    seeds) and how much lower SJF-BSBF's is, per variant."""
    variants = sorted({v for (e, v, _, _) in by_seed if e == "xi"}, key=lambda v: v != "defaults")
    if not variants:
        return
    xis = sorted({float(k.split("xi=")[1]) for (e, _, k, _) in by_seed if e == "xi"})
    print("\n### xi sweep (avg JCT, h; mean over seeds; SJF-BSBF's gain over SJF-FFS)\n")
    print("| xi | " + " | ".join(f"{v}: sjf-ffs | sjf-bsbf | gain" for v in variants) + " |")
    print("|---|" + "---|---|---|" * len(variants))
    for x in xis:
        cells = []
        for v in variants:
            got = {}
            for p in ("sjf-ffs", "sjf-bsbf"):
                runs = [
                    fig
                    for (e, vv, k, _), fig in by_seed.items()
                    if (e, vv) == ("xi", v)
                    and k.startswith(p + ":")
                    and float(k.split("xi=")[1]) == x
                ]
                got[p] = mean(r["jct_all"] for r in runs) if runs else float("nan")
            gain = 1 - got["sjf-bsbf"] / got["sjf-ffs"]
            cells += [f"{got['sjf-ffs']:.2f}", f"{got['sjf-bsbf']:.2f}", f"{100 * gain:.0f} %"]
        print(f"| {x:g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(args(1, "python examples/sjf-bsbf/aggregate.py OUT")[0])
