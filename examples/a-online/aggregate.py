"""Tables of docs/a-online.md from the run folders of examples/a-online/run.sh.

Usage: python examples/a-online/aggregate.py OUT_DIR

* For each experiment (testbed-jobsJ, fig7-jobsJ, fig8-serversS) and policy: the mean over
  seeds (and the range) of the JCT rate (total JCT over SRTF's on the same workload, the
  paper's metric), the average JCT and waiting (slots), the edge workers' utilisation, the
  cloud's (its utilisation when it is one machine, else its mean busy workers), the
  preemptions, the chunk moves (migrations), and Fig. 6's communication: the worker-PS
  time (eq. 1's 2 q / b) and the time data spent shipping (moves included), each over
  SRTF's.
* Fig. 11: job submissions and the edge's utilisation over time (fig7-jobs300, 20-slot
  bins), and the makespans.
* The ablation (abl-WORKLOAD-VARIANT): every policy's JCT rate (over the SRTF of the same
  comparison, switched back with the others when the variant switches it) and A_online's
  edge utilisation and makespan over SRTF's.
* Fig. 8's A_online-E trend by variant (abl-fig8-VARIANT-serversS): A_online-E's JCT rate
  against the number of edge servers with one factor switched back at a time, the seeds on
  which it falls, and both policies' waits and edge utilisation.
* Fig. 9 by counting unit (fig9-VARIANT-sSEED/POLICY event logs): preemptions.py.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import preemptions  # examples/a-online/preemptions.py (this script's folder is on the path)

from gpusched.io.cluster import load_cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard, need_folder, need_some, read_csv  # noqa: E402

POLICIES = ("a-online", "a-online-e", "srtf", "tiresias-l", "batchsche")
KEYS = (
    ("jct_rate", "JCT rate", "{:.3f}"),
    ("avg_jct_s", "avg JCT", "{:,.0f}"),
    ("avg_wait_s", "avg wait", "{:,.0f}"),
    ("gpu_utilization", "edge util", "{:.2f}"),
    ("cloud", "CLOUD", "{:.2f}"),
    ("n_preemptions", "preemptions", "{:,.0f}"),
    ("n_migrations", "moves", "{:,.0f}"),
    ("n_cloud_jobs", "cloud jobs", "{:.0f}"),
    ("comm_rate", "comm rate", "{:.2f}"),
    ("ship_rate", "shipping rate", "{:.2f}"),
)
VARIANTS = (
    ("base", "the defaults (the paper's model as read here)"),
    ("cloud", "cause 1 back: testbed cloud unbounded / sim: serial shipping (sensitivity)"),
    ("workers", "cause 2 back: baselines' k = trace GPU count"),
    ("edgeonly", "cause 2 back: baselines may use the cloud"),
    ("migrate", "cause 2 back: baselines' chunks pinned (no moves)"),
    ("batches", "cause 3 back: BatchSche per slot, flat prices (cloud 0.5), k = trace"),
    ("load10", "load: arrivals x 10"),
    ("load100", "load: arrivals x 100"),
    ("allback", "causes 1-3 back together (the earlier model)"),
)


def base_name(label: str) -> str:
    return label.partition(":")[0]


Row = dict[str, float]
NAN = float("nan")
#: comparison.csv columns every row must hold a number in, and those read if present
REQUIRED = ("total_jct_s", "avg_wait_s", "gpu_utilization", "makespan_s", "total_comm_s",
            "total_transfer_s")
OPTIONAL = ("cloud_utilization", "mean_busy_cloud", *(k for k, _, _ in KEYS))


def read(out: Path) -> dict[str, dict[str, dict[str, Row]]]:
    """experiment -> seed -> policy (base name) -> its comparison row (numbers)."""
    runs: dict[str, dict[str, dict[str, Row]]] = defaultdict(dict)
    for comp in sorted(out.glob("*-s*/comparison.csv")):
        exp, seed = comp.parent.name.rsplit("-s", 1)
        rows = read_csv(comp, "a comparison.csv of gpusched compare")
        got: dict[str, Row] = {}
        for r in rows:
            # the columns the tables need (an empty field: the value is not defined, NaN)
            num = {k: r.num(k) for k in REQUIRED}
            num.update({k: r.num(k, empty=NAN) for k in OPTIONAL if k in r})
            num["cloud"] = num.get("cloud_utilization", num.get("mean_busy_cloud", NAN))
            got[base_name(r["policy"])] = num
        runs[exp][seed] = got
    return runs


def rates(got: dict[str, Row], base: dict[str, Row] | None = None) -> dict[str, Row]:
    """Each policy's row with its JCT, communication and shipping rates over SRTF's (the
    rows a variant did not run are the same seed's base comparison's)."""
    rows = dict(base or {})
    rows.update(got)
    srtf = rows["srtf"]
    out = {}
    for pol, r in rows.items():
        r = dict(r)
        r["jct_rate"] = r["total_jct_s"] / srtf["total_jct_s"]
        for key, col in (("comm_rate", "total_comm_s"), ("ship_rate", "total_transfer_s")):
            r[key] = r[col] / srtf[col] if srtf[col] else float("nan")
        out[pol] = r
    return out


def cell(vals: list[float], fmt: str) -> str:
    vals = [v for v in vals if v == v]
    if not vals:
        return "-"
    mean = sum(vals) / len(vals)
    if len(vals) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} [{fmt.format(min(vals))}, {fmt.format(max(vals))}]"


def order(name: str) -> tuple[str, int]:
    m = re.match(r"(\D+?)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, 0)


def tables(runs: dict[str, dict[str, dict[str, Row]]]) -> None:
    for exp in sorted((e for e in runs if not e.startswith("abl-")), key=order):
        seeds = [rates(got) for got in runs[exp].values()]
        print(f"\n#### {exp} ({len(seeds)} seeds: mean [min, max])\n")
        bounded = any("cloud_utilization" in r for got in seeds for r in got.values())
        cloud = "cloud util" if bounded else "busy cloud workers"
        labels = [cloud if label == "CLOUD" else label for _, label, _ in KEYS]
        print("| policy | " + " | ".join(labels) + " |")
        print("| --- " * (len(KEYS) + 1) + "|")
        for pol in POLICIES:
            rows = [got[pol] for got in seeds if pol in got]
            if rows:
                cells = [cell([r.get(k, float("nan")) for r in rows], fmt) for k, _, fmt in KEYS]
                print(f"| {pol} | " + " | ".join(cells) + " |")


def ablation(runs: dict[str, dict[str, dict[str, Row]]]) -> None:
    for wl, title in (("tb30", "testbed, 30 jobs"), ("sim300", "simulator, 300 jobs")):
        base = runs.get(f"abl-{wl}-base", {})
        if not base:
            continue
        print(f"\n#### ablation: {title} ({len(base)} seeds: mean [min, max])\n")
        head = " | ".join(f"{p} rate" for p in POLICIES)
        print(f"| variant | {head} | A_online edge util | makespan A_online / SRTF |")
        print("| --- " * (len(POLICIES) + 3) + "|")
        for var, text in VARIANTS:
            exp = f"abl-{wl}-{var}"
            if exp not in runs:
                continue
            seeds = [rates(got, base.get(seed)) for seed, got in runs[exp].items()]
            cells = [cell([g[p]["jct_rate"] for g in seeds if p in g], "{:.3f}") for p in POLICIES]
            util = cell([g["a-online"]["gpu_utilization"] for g in seeds], "{:.2f}")
            span = [g["a-online"]["makespan_s"] / g["srtf"]["makespan_s"] for g in seeds]
            row = " | ".join(cells)
            print(f"| {var}: {text} | {row} | {util} | {cell(span, '{:.2f}')} |")


FIG8_VARIANTS = (
    ("base", "the defaults"),
    ("workers", "SRTF's k = trace GPU count"),
    ("edgeonly", "SRTF may use the cloud"),
    ("migrate", "SRTF's chunks pinned"),
    ("serial", "serial shipping"),
    ("load10", "arrivals x 10"),
    ("load100", "arrivals x 100"),
)


# the variants whose runs leave the other policies as they are (their rates are the base
# runs' totals over the variant's SRTF); serial shipping and the arrival stretches rerun
# only A_online-E and SRTF, so they have no row in the every-policy table
FIG8_ALL = ("base", "workers", "edgeonly", "migrate")
FIG8_WAY = {"a-online": "rises", "a-online-e": "falls", "tiresias-l": "falls", "batchsche": "rises"}


def fig8_ablation(runs: dict[str, dict[str, dict[str, Row]]]) -> None:
    """A_online-E's JCT rate by edge servers per variant (mean [min, max] over seeds), and
    on how many seeds it falls from the fewest servers to the most (the paper's Fig. 8
    trend, P:L457) and falls at every step; then waits and edge utilisation."""
    prefix = "abl-fig8-base-servers"
    points = sorted(int(e[len(prefix) :]) for e in runs if e.startswith(prefix))
    if not points:
        return
    got: dict[str, dict[int, dict[str, dict[str, Row]]]] = {}
    for var, _ in FIG8_VARIANTS:
        per: dict[int, dict[str, dict[str, Row]]] = {}
        for m in points:
            base = runs.get(f"abl-fig8-base-servers{m}", {})
            exp = runs.get(f"abl-fig8-{var}-servers{m}", {})
            if exp:
                per[m] = {seed: rates(g, base.get(seed)) for seed, g in exp.items()}
        if len(per) == len(points):
            got[var] = per
    lo, hi = points[0], points[-1]
    print("\n#### Fig. 8 ablation: A_online-E's JCT rate by edge servers (mean [min, max])\n")
    head = " | ".join(str(m) for m in points)
    print(f"| variant | {head} | {hi}/{lo} | falls {lo}->{hi} | falls every step |")
    print("| --- " * (len(points) + 4) + "|")
    for var, text in FIG8_VARIANTS:
        if var not in got:
            continue
        per = got[var]
        cells = [
            cell([g["a-online-e"]["jct_rate"] for g in per[m].values()], "{:.3f}") for m in points
        ]
        seeds = sorted(set.intersection(*(set(per[m]) for m in points)))
        curve = {sd: [per[m][sd]["a-online-e"]["jct_rate"] for m in points] for sd in seeds}
        ratio = cell([c[-1] / c[0] for c in curve.values()], "{:.2f}")
        falls = sum(c[-1] < c[0] for c in curve.values())
        every = sum(all(b < a for a, b in zip(c, c[1:], strict=False)) for c in curve.values())
        row = " | ".join(cells)
        print(f"| {var}: {text} | {row} | {ratio} | {falls}/{len(seeds)} | {every}/{len(seeds)} |")
    print(
        "\nEvery policy's rate at the fewest and the most servers (seed means), and the seeds"
        " on which it moves the paper's way (P:L457) from the first to the last and at every"
        " step (the variants that change only the job-level baselines):\n"
    )
    names = [p for p in POLICIES if p in FIG8_WAY]
    print("| variant | " + " | ".join(f"{p} ({FIG8_WAY[p]})" for p in names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for var in FIG8_ALL:
        per = got.get(var)
        if per is None or not all(p in g for m in points for g in per[m].values() for p in names):
            continue
        seeds = sorted(set.intersection(*(set(per[m]) for m in points)))
        cells = []
        for pol in names:
            sign = 1.0 if FIG8_WAY[pol] == "rises" else -1.0
            curve = [[per[m][sd][pol]["jct_rate"] for m in points] for sd in seeds]
            ends = sum(sign * (c[-1] - c[0]) > 0 for c in curve)
            steps = sum(
                all(sign * (b - a) > 0 for a, b in zip(c, c[1:], strict=False)) for c in curve
            )
            first = np.mean([c[0] for c in curve])
            last = np.mean([c[-1] for c in curve])
            cells.append(f"{first:.3f} -> {last:.3f} ({ends}/{len(seeds)}, {steps}/{len(seeds)})")
        print(f"| {var} | " + " | ".join(cells) + " |")
    print("\nAverage wait A_online-E / SRTF (slots), edge util A_online-E / SRTF (seed means):\n")
    print(f"| variant | {head} |")
    print("| --- " * (len(points) + 1) + "|")
    for var, _ in FIG8_VARIANTS:
        if var not in got:
            continue
        cells = []
        for m in points:
            rows = list(got[var][m].values())

            def mean(pol: str, key: str, rows: list[dict[str, Row]] = rows) -> float:
                return float(np.mean([r[pol][key] for r in rows]))

            cells.append(
                f"{mean('a-online-e', 'avg_wait_s'):,.0f} / {mean('srtf', 'avg_wait_s'):,.0f}, "
                f"{mean('a-online-e', 'gpu_utilization'):.2f} / {mean('srtf', 'gpu_utilization'):.2f}"
            )
        print(f"| {var} | " + " | ".join(cells) + " |")


def sweeps(runs: dict[str, dict[str, dict[str, Row]]]) -> None:
    """One table per sweep: a cell per policy and point, the seeds' mean JCT rate, average
    wait (slots) and edge utilisation, so that no rate is read without the load behind it."""
    for prefix, title in (
        ("testbed-jobs", "Fig. 4: testbed, by jobs"),
        ("fig7-jobs", "Fig. 7: simulator (100 servers), by jobs"),
        ("fig8-servers", "Fig. 8: simulator (300 jobs), by edge servers"),
    ):
        points = sorted(
            (e for e in runs if e.startswith(prefix)), key=lambda e: int(e[len(prefix) :])
        )
        if not points:
            continue
        print(f"\n#### {title}: JCT rate / avg wait / edge util (mean over seeds)\n")
        print("| policy | " + " | ".join(p.removeprefix(prefix) for p in points) + " |")
        print("| --- " * (len(points) + 1) + "|")
        for pol in POLICIES:
            cells = []
            for p in points:
                rows = [rates(got)[pol] for got in runs[p].values() if pol in got]
                rate = np.mean([r["jct_rate"] for r in rows])
                wait = np.mean([r["avg_wait_s"] for r in rows])
                util = np.mean([r["gpu_utilization"] for r in rows])
                cells.append(f"{rate:.3f} / {wait:,.0f} / {util:.2f}")
            print(f"| {pol} | " + " | ".join(cells) + " |")


def n_edge(toml: Path) -> int:
    """Edge workers of the cluster file ``toml`` (a bad file: gpusched's one-line error)."""
    spec = load_cluster(toml)
    return sum(g.count * g.n_workers for g in spec.groups if g.tier == "edge")


def utilisation(out: Path, exp: str = "fig7-jobs300", width: float = 20.0, bins: int = 12) -> None:
    folders = sorted(out.glob(f"{exp}-s*"))
    if not folders:
        return
    print(f"\n#### Fig. 11: {exp}, submissions and edge utilisation per {width:g}-slot bin\n")
    edges = np.arange(bins + 1) * width
    head = " | ".join(f"{int(a)}-{int(b)}" for a, b in zip(edges[:-1], edges[1:], strict=True))
    print(f"| | {head} | makespan |")
    print("| --- " * (bins + 2) + "|")
    subs = np.zeros(bins)
    util: dict[str, list[np.ndarray]] = defaultdict(list)
    spans: dict[str, list[float]] = defaultdict(list)
    for f in folders:
        seed = f.name.rsplit("-s", 1)[1]
        trace = out / "wl" / f"sim300-s{seed}.csv"
        t = np.array([r.num("submit_time") for r in read_csv(trace, "the workload's trace")])
        subs += np.histogram(t, edges)[0] / len(folders)
        workers = n_edge(out / "wl" / f"sim100-s{seed}.toml")
        for pol in POLICIES:
            found = [d for d in f.iterdir() if d.is_dir() and d.name.split("-", 1)[1] == pol]
            if not found:
                continue
            tl = found[0] / "timeline.csv"
            rows = need_some(read_csv(tl, "a run's timeline.csv"), tl, "timeline rows")
            times = np.array([r.num("time_s") for r in rows])
            busy = np.array([r.num("busy_edge") for r in rows])
            spans[pol].append(float(times[-1] - times[0]))
            ends = np.append(times[1:], times[-1])
            frac = np.zeros(bins)
            for k in range(bins):
                lo, hi = edges[k], edges[k + 1]
                overlap = np.clip(np.minimum(ends, hi) - np.maximum(times, lo), 0, None)
                frac[k] = float((busy * overlap).sum()) / (workers * width)
            util[pol].append(frac)
    print("| jobs submitted | " + " | ".join(f"{v:.0f}" for v in subs) + " | |")
    for pol in POLICIES:
        if util[pol]:
            mean = np.mean(util[pol], axis=0)
            cells = " | ".join(f"{v:.2f}" for v in mean)
            print(f"| {pol} edge util | {cells} | {np.mean(spans[pol]):,.0f} |")


@guard
def main(out: Path) -> None:
    need_folder(out, "run.sh's output folder (OUT_DIR)")
    need_some(
        [*out.glob("*-s*/comparison.csv"), *out.glob("fig9-*-s*/*/events.csv")],
        out,
        "run folders of run.sh (EXPERIMENT-sSEED/comparison.csv)",
    )
    runs = read(out)
    sweeps(runs)
    tables(runs)
    utilisation(out)
    preemptions.table(out)
    ablation(runs)
    fig8_ablation(runs)


if __name__ == "__main__":
    main(Path(args(1, "python examples/a-online/aggregate.py OUT_DIR")[0]))
