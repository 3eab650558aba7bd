"""The markdown tables of docs/lazer.md from the rows examples/lazer/run.py writes.

Usage:
    python examples/lazer/aggregate.py table2.csv              # Table 2 beside the paper's
    python examples/lazer/aggregate.py testbed.csv             # Fig. 8 (the testbed sample)
    python examples/lazer/aggregate.py ablation.csv table2.csv # the ablation

Every cell is the mean over the workload seeds; a P50 carries the range over seeds in
parentheses. Times in minutes, as in the paper's Table 2, unless a header says otherwise.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import Row, args, need_some, read_csv  # noqa: E402

LABELS = {
    "srtf-periodic interval=60.0": "Pollux-like (60 s)",
    "srtf-periodic interval=360.0": "Muri-like (360 s)",
    "srtf-periodic interval=600.0": "Optimus-like (600 s)",
    "lazer max_defer=100.0 loading_in_rq=true": "lazer",
    "lazer max_defer=0.0 loading_in_rq=true": "lazer, X = 0",
    "lazer max_defer=100.0 loading_in_rq=false": "lazer, loading not in RQ",
    "lazer max_defer=0.0 loading_in_rq=false": "lazer, X = 0, loading not in RQ",
    "lazer max_defer=100.0": "lazer",
    "lazer max_defer=0.0": "lazer, X = 0",
}
# Go et al., DAC'26, Table 2 (P50 / P95, min): JCT, waiting, futile preemption time
PAPER = {
    ("jct", "earth"): {"sjf": (5.6, 12.6), "srtf": (7.4, 29.0), "Pollux-like (60 s)": (9.9, 94.5), "Muri-like (360 s)": (8.2, 24.4), "Optimus-like (600 s)": (10.8, 22.9), "lazer": (4.6, 10.4)},
    ("jct", "saturn"): {"sjf": (5.3, 129.5), "srtf": (8.1, 595.1), "Pollux-like (60 s)": (8.7, 2260.7), "Muri-like (360 s)": (6.6, 24.8), "Optimus-like (600 s)": (9.6, 27.1), "lazer": (2.8, 13.2)},
    ("jct", "uranus"): {"sjf": (14.6, 6999.9), "srtf": (9.7, 245.6), "Pollux-like (60 s)": (14.2, 1018.4), "Muri-like (360 s)": (11.1, 73.9), "Optimus-like (600 s)": (12.8, 68.7), "lazer": (5.9, 29.9)},
    ("wait", "earth"): {"sjf": (0.2, 50.7), "srtf": (1.0, 255.0), "Pollux-like (60 s)": (2.9, 1667.9), "Muri-like (360 s)": (4.5, 286.7), "Optimus-like (600 s)": (6.9, 270.8), "lazer": (0.1, 1.1)},
    ("wait", "saturn"): {"sjf": (0.4, 1286.3), "srtf": (1.6, 13988.2), "Pollux-like (60 s)": (3.1, 53772.9), "Muri-like (360 s)": (4.7, 329.6), "Optimus-like (600 s)": (7.4, 418.8), "lazer": (0.0, 4.6)},
    ("wait", "uranus"): {"sjf": (2.9, 167529.8), "srtf": (1.8, 4835.8), "Pollux-like (60 s)": (4.4, 23585.2), "Muri-like (360 s)": (5.82, 986.5), "Optimus-like (600 s)": (8.7, 917.1), "lazer": (0.2, 88.3)},
    ("futile_hit", "earth"): {"sjf": (0.0, 0.0), "srtf": (1.3, 128.0), "Pollux-like (60 s)": (6.4, 252.4), "Muri-like (360 s)": (0.0, 0.0), "Optimus-like (600 s)": (0.0, 0.0), "lazer": (0.1, 4.3)},
    ("futile_hit", "saturn"): {"sjf": (0.0, 0.0), "srtf": (4.0, 231.8), "Pollux-like (60 s)": (7.6, 377.2), "Muri-like (360 s)": (0.0, 0.0), "Optimus-like (600 s)": (0.0, 0.0), "lazer": (0.2, 5.3)},
    ("futile_hit", "uranus"): {"sjf": (0.0, 0.0), "srtf": (1.7, 223.5), "Pollux-like (60 s)": (2.8, 331.2), "Muri-like (360 s)": (0.0, 0.0), "Optimus-like (600 s)": (0.0, 0.0), "lazer": (0.0, 4.7)},
}
VARIANTS = {
    "": "paper's setting (defaults)",
    "ckpt": "loads/saves from checkpoints (cause 2 back)",
    "pois": "Poisson arrivals (cause 3 back)",
    "indep": "independent sizes (cause 4 back)",
    "before": "all three back, load 0.9 (the earlier page)",
}


def read(path: str) -> list[Row]:
    return need_some(read_csv(path, "a results .csv of examples/lazer/run.py"), path, "result rows")


def group(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], list[dict[str, str]]]:
    """(cluster name, variant, policy label) -> rows over seeds."""
    out: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        m = re.match(r"^(?:.*/)?([a-z]+?)(\d*)(?:-([a-z]+))?-s\d+\.csv$", r["trace"])
        if m is None:
            r.bad("trace", "a workload's path NAME[-VARIANT]-sSEED.csv")
        name = m.group(1) + m.group(2)
        p = r["policy"] + (f" {r['params']}" if r["params"] else "")
        out[(name, m.group(3) or "", LABELS.get(p, p))].append(r)
    return out


def val(rows: list[dict[str, str]], key: str, scale: float = 1.0) -> list[float]:
    return [r.num(key) / scale for r in rows if r.get(key, "") not in ("", None)]


def x_text(rows: list[dict[str, str]], label: str) -> str:
    """Lazer's deferrals per seed: exploitation's mean X, s (share of its predictions
    deferred), or, when a run never left acquisition, the mean of every X."""
    if not label.startswith("lazer") or "X = 0" in label:
        return ""
    parts = []
    for r in rows:
        n_exploit = r.get("exploit_predictions", "")
        # rows written before run.py kept exploit_predictions: full-size runs exploit
        exploits = r.num("exploit_predictions") > 0 if n_exploit else r.num("predictions", empty=0) >= 1000
        if exploits:
            x, share = r.num("exploit_mean_x_s"), r.num("exploit_deferred_share")
            parts.append(f"{x:.0f} ({share:.0%})")
        elif r.get("mean_x_s", ""):
            parts.append(f"acq. only: {r.num('mean_x_s'):.0f}")
    return ", ".join(parts)


def fmt(x: float) -> str:
    return f"{x:,.1f}" if abs(x) >= 0.05 or x == 0 else f"{x:.2f}"


def p50p95(rows, what: str, spread: bool = True) -> str:
    a, b = val(rows, f"p50_{what}_s", 60), val(rows, f"p95_{what}_s", 60)
    if not a:
        return ""
    text = fmt(mean(a))
    if spread and len(a) > 1 and max(a) - min(a) >= 0.05:
        text += f" ({fmt(min(a))}-{fmt(max(a))})"
    return text + " / " + fmt(mean(b))


def table2(rows: list[dict[str, str]]) -> None:
    data = group(rows)
    clusters = list(dict.fromkeys(k[0] for k in data))
    policies = list(dict.fromkeys(k[2] for k in data))
    n_seeds = max(len(v) for v in data.values())
    print(f"\nP50 / P95 in minutes, mean over {n_seeds} seed(s) (P50 range); ours, then the paper's\n")
    print("| metric | trace | " + " | ".join(policies) + " |")
    print("|---|---" + "|---" * len(policies) + "|")
    titles = (("JCT", "jct"), ("Waiting", "wait"), ("Futile, jobs hit", "futile_hit"), ("Futile, all jobs", "futile_all"))
    for title, key in titles:
        for c in clusters:
            cells = [p50p95(data.get((c, "", p), []), key) for p in policies]
            print(f"| {title} | {c} | " + " | ".join(cells) + " |")
            paper = PAPER.get((key, c))
            if paper:
                cells = [f"{paper[p][0]} / {paper[p][1]}" if p in paper else "" for p in policies]
                print(f"| {title} | {c} (paper) | " + " | ".join(cells) + " |")
    print("\nMeans over seeds: mean JCT and wait (min), utilisation, preemptions, futile ones,")
    print("GPU-hours lost to futile preemptions and spent loading, jobs with futile time,")
    print("Lazer's exploitation X per seed (mean s, share of predictions deferred), CPU s per replay:\n")
    print("| trace | policy | mean JCT | mean wait | GPU util. | preemptions | futile | futile GPU-h | load GPU-h | jobs hit | X per seed | delay ms | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in clusters:
        for p in policies:
            got = data.get((c, "", p), [])
            if not got:
                continue
            x = x_text(got, p)
            delay = val(got, "sched_delay_ms")
            print(
                f"| {c} | {p} | {mean(val(got, 'avg_jct_s', 60)):,.1f} | {mean(val(got, 'avg_wait_s', 60)):,.1f} | "
                f"{mean(val(got, 'gpu_utilization')):.3f} | {mean(val(got, 'n_preemptions')):,.0f} | "
                f"{mean(val(got, 'n_futile_preemptions')):,.0f} | {mean(val(got, 'futile_gpu_h')):,.0f} | "
                f"{mean(val(got, 'load_gpu_h')):,.0f} | {mean(val(got, 'jobs_hit')):,.0f} | {x} | "
                f"{(f'{mean(delay):.3f}' if delay else '(kernel)')} | {mean(val(got, 'cpu_s')):.1f} |"
            )


def ablation(rows: list[dict[str, str]], defaults: list[dict[str, str]]) -> None:
    data = group(rows + defaults)
    clusters = list(dict.fromkeys(k[0] for k in data))
    order = ["srtf", "lazer", "lazer, X = 0", "lazer, loading not in RQ", "lazer, X = 0, loading not in RQ"]
    print("\nOne input (or reading) switched back at a time; mean over seeds. Minutes, except")
    print("futile GPU-hours and Lazer's exploitation X per seed (mean s, share deferred):\n")
    print("| trace | inputs | policy | P50 JCT | P95 JCT | mean JCT | P50 / P95 wait | GPU util. | futile | futile GPU-h | X |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in clusters:
        for v, label in VARIANTS.items():
            for p in order:
                got = data.get((c, v, p), [])
                if not got:
                    continue
                x = x_text(got, p)
                a, b = val(got, "p50_jct_s", 60), val(got, "p95_jct_s", 60)
                print(
                    f"| {c} | {label} | {p} | {fmt(mean(a))} ({fmt(min(a))}-{fmt(max(a))}) | {fmt(mean(b))} | "
                    f"{fmt(mean(val(got, 'avg_jct_s', 60)))} | {fmt(mean(val(got, 'p50_wait_s', 60)))} / "
                    f"{fmt(mean(val(got, 'p95_wait_s', 60)))} | {mean(val(got, 'gpu_utilization')):.3f} | "
                    f"{mean(val(got, 'n_futile_preemptions')):,.0f} | {mean(val(got, 'futile_gpu_h')):,.0f} | {x} |"
                )


if __name__ == "__main__":
    args(1, "python examples/lazer/aggregate.py RESULTS.csv [table2.csv]")
    if len(sys.argv) == 3:
        ablation(read(sys.argv[1]), read(sys.argv[2]))
    else:
        table2(read(sys.argv[1]))
