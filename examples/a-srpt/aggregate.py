"""Aggregate a gpusched sweep results.csv into markdown tables (mean over workload seeds).

Usage (from the folder the sweep ran in, so that its trace paths resolve):
    python examples/a-srpt/aggregate.py OUT/results.csv [MORE/results.csv ...] [trace|cluster]
(group settings by trace name without its -sN seed suffix, or by cluster for the NIC sweep).
Rows of MORE results are added for the traces of the first file, where it has no run of the
same cluster, policy and parameters:
Fig. 9 takes its baselines from Fig. 6's runs of the same files, Fig. 8 its 10 Gbps cells
from Fig. 7's 0 % runs (cluster a-srpt-32x8, 10 Gbps).

Tables: the workloads' loads (offered load over the arrival window with and without the top
1 % of jobs by GPU-seconds, and the demand inside the window, on the cluster replayed); total
JCT with a 95 % interval over the seeds; average JCT, wait and slowdown; GPU utilisation and
makespan; A-SRPT against the best of the paper's five baselines, with the average waits beside
the JCTs; the predictor's accuracy on the evaluated jobs; scheduling delay per decision."""
import re
import sys
from collections import defaultdict
from math import exp, log
from pathlib import Path
from statistics import mean

from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace
from gpusched.results.stats import t_interval
from gpusched.workloads.synth import demand_load, offered_load

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # examples/, for _inputs
import _inputs  # noqa: E402
from _inputs import args, guard, need_some, read_csv  # noqa: E402

USAGE = "python examples/a-srpt/aggregate.py OUT/results.csv [MORE/results.csv ...] [trace|cluster]"
args = args(1, USAGE)
by = args.pop() if args[-1] in ("trace", "cluster") else "trace"
args = args or _inputs.args(2, USAGE)  # only trace|cluster given
path, more = args[0], args[1:]
tables = {f: need_some(read_csv(f, "a sweep's results.csv"), f, "result rows") for f in [path, *more]}
rows = [r for r in tables[path] if r["status"] == "ok"]
read_trace, load_cluster = guard(read_trace), guard(load_cluster)  # gpusched's one-line errors
BASE = ["spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime"]


def setting(r):
    if by == "cluster":
        name = re.sub(r"\.toml$", "", Path(r["cluster"]).name)
        if name == "a-srpt-32x8":
            return "nic10"  # Fig. 7's cluster: 10 Gbps
        return name.replace("a-srpt-250x8-", "").replace("a-srpt-32x8-", "")
    return re.sub(r"^.*/|-s\d+\.csv$", "", r["trace"])


def label(r):
    return r["policy"] + (f" ({r['params']})" if r["params"] else "")


def seed(r):
    m = re.search(r"-s(\d+)\.csv$", r["trace"])
    return m.group(1) if m else r.bad("trace", "a workload's path ending in -sSEED.csv")


traces = {r["trace"] for r in rows}
have = {(r["trace"], r["cluster"], r["policy"], r["params"]) for r in rows}
for extra in more:
    rows += [r for r in tables[extra] if r["status"] == "ok" and r["trace"] in traces
             and (r["trace"], r["cluster"], r["policy"], r["params"]) not in have]
data = defaultdict(dict)  # (setting, label) -> seed -> row
order_s, order_p = [], []
for r in rows:
    s, p = setting(r), label(r)
    if s not in order_s:
        order_s.append(s)
    if p not in order_p:
        order_p.append(p)
    data[(s, p)][seed(r)] = r
bad = [r for f in [path, *more] for r in tables[f] if r["status"] != "ok"]
if bad:
    print(f"FAILED cells: {len(bad)}")
unf = sum(r.whole("n_unfinished") for r in rows)
if unf:
    print(f"unfinished jobs: {unf}")


def n_gpus(cluster):
    for c in (Path(cluster), HERE / cluster):
        if c.is_file():
            return load_cluster(str(c)).n_gpus
    return load_cluster(cluster).n_gpus


# the workloads: loads on the cluster each was replayed on, one trace read per (trace, GPUs)
loads = {}
for r in rows:
    key = (r["trace"], n_gpus(r["cluster"]))
    if key not in loads:
        t = read_trace(r["trace"])
        loads[key] = (len(t), offered_load(t, key[1]), offered_load(t, key[1], 0.01),
                      demand_load(t, key[1]))
print("\nWorkloads (mean over seeds, min-max in brackets): offered load over the arrival window, "
      "the same without the top 1 % of jobs by GPU-seconds, and the demand inside the window "
      "(D < 1: even starting every job on arrival would not fill the cluster before the last "
      "arrival):\n")
load_of = {}
print("| setting | jobs | load (all) | load w/o top 1 % | demand D |")
print("|---|---|---|---|---|")
for s in order_s:
    vals = {loads[(r["trace"], n_gpus(r["cluster"]))]
            for p in order_p for r in data.get((s, p), {}).values()}
    cols = list(zip(*vals, strict=True))
    load_of[s] = " / ".join(f"{mean(c):.2f}" for c in cols[1:])
    cells = [f"{mean(c):.2f} [{min(c):.2f}-{max(c):.2f}]" for c in cols[1:]]
    print(f"| {s} | {mean(cols[0]):,.0f} | " + " | ".join(cells) + " |")


def cell(d, metric, scale, ci):
    """Mean over seeds, with the Student-t 95 % half-width when asked and n >= 2."""
    vals = [v.num(metric) / scale for v in d.values() if v.get(metric) not in ("", None)]
    if not vals:
        return ""
    iv = t_interval(vals)
    if ci and iv.half_width is not None:
        return f"{iv.mean:,.2f} ± {iv.half_width:,.2f}"
    return f"{iv.mean:,.2f}"


def table(metric, scale, unit, ci=False):
    n = max((len(d) for d in data.values()), default=0)
    print(f"\n{metric} ({unit}), mean over {n} seeds" + (" ± 95 % CI" if ci else "") + ":\n")
    print("| policy | " + " | ".join(order_s) + " |")
    print("|---" * (len(order_s) + 1) + "|")
    for p in order_p:
        cells = [cell(data[(s, p)], metric, scale, ci) if (s, p) in data else "" for s in order_s]
        print(f"| {p} | " + " | ".join(cells) + " |")


# JCT with its spread over seeds, then what it is made of: waiting and slowdown (time lost to
# running slower than at ideal placement), and how busy the GPUs were (an idle cluster is
# visible at a glance: no policy can differ there)
for m, sc, u, ci in [("total_jct_s", 1e6, "10^6 s", True), ("avg_jct_s", 1e3, "10^3 s", False),
                     ("avg_wait_s", 1e3, "10^3 s", False), ("avg_slowdown_s", 1e3, "10^3 s", False),
                     ("gpu_utilization", 0.01, "%", False), ("makespan_s", 1e6, "10^6 s", False)]:
    table(m, sc, u, ci)


def avg(d, metric):
    return mean(v.num(metric) for v in d.values())


# A-SRPT vs the paper's baselines, per setting: mean total JCT and seed-by-seed wins, waits beside
asrpt = [p for p in order_p if p.startswith("a-srpt")]
print("\nA-SRPT variants vs the best of the paper's baselines (by mean total JCT; reduction = 1 - "
      "variant / best baseline, on the means; per-seed ratio: geometric mean over seeds of the "
      "variant's total JCT over that seed's best baseline; wins: seeds where the variant beats all "
      "five baselines of that seed):\n")
print("| setting | load all / w/o top 1 % / D | a-srpt variant | total JCT (10^6 s) | avg wait "
      "(10^3 s) | best baseline | its total JCT | its avg wait | reduction | per-seed ratio | wins |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
base = [p for p in order_p if p.split(" (")[0] in BASE]
for s in order_s if base else []:
    bm = {b: avg(data[(s, b)], "total_jct_s") for b in base if (s, b) in data}
    best = min(bm, key=bm.get)
    for a in asrpt:
        d = data[(s, a)]
        am = avg(d, "total_jct_s")
        best_of = {k: min(data[(s, b)][k].num("total_jct_s") for b in bm) for k in d}
        wins = sum(d[k].num("total_jct_s") < best_of[k] for k in d)
        # geometric mean over seeds of (variant / that seed's best baseline): one seed's
        # blow-up cannot dominate it as it dominates the means
        ratio = exp(mean(log(d[k].num("total_jct_s") / best_of[k]) for k in d))
        print(f"| {s} | {load_of[s]} | {a} | {am / 1e6:,.2f} | {avg(d, 'avg_wait_s') / 1e3:,.2f} | {best} | "
              f"{bm[best] / 1e6:,.2f} | {avg(data[(s, best)], 'avg_wait_s') / 1e3:,.2f} | "
              f"{1 - am / bm[best]:+.0%} | {ratio:.2f}x | {wins}/{len(d)} |")

# prediction accuracy on the evaluated jobs (the last 20 %), from each run's summary
print("\nPredictor accuracy on the evaluated jobs (mean over seeds; 'seen': jobs whose group has a "
      "training job; MAE in iterations; paper: about 60 % within 10 %, MAE 369 / 563 / 593 for "
      "forest / median / mean):\n")
print("| setting | policy | unseen-group share | predictor | within 10 % | within 10 % (seen) | "
      "MAE (10^3 it.) | mean abs log error (seen) | rule fired |")
print("|---|---|---|---|---|---|---|---|---|")
for s in order_s:
    for p in asrpt:  # the baselines' forest is A-SRPT's: same seed, same predictions
        d = data.get((s, p), {})
        first = next(iter(d.values()), None)
        if not first or first.get("prediction.predictor") in ("", None, "oracle"):
            continue
        used = first["prediction.predictor"]
        kinds = [used] + ([k for k in ("mean", "median") if k != used] if p == asrpt[0] else [])
        for k in kinds:
            def f(m, fmt, scale=1.0, k=k, d=d):
                """The mean over seeds, or '-' when no seed has one (no seen job, say)."""
                vals = [v.num(f"prediction.{k}.{m}") / scale for v in d.values()
                        if v.get(f"prediction.{k}.{m}") not in ("", None)]
                return fmt.format(mean(vals)) if vals else "-"
            rule = mean(v.num(f"prediction.{k}.n_unseen_group_rule") /
                        max(v.num(f"prediction.{k}.n_evaluated"), 1) for v in d.values())
            print(f"| {s} | {p} | {avg(d, 'prediction.unseen_share'):.1%} | {k} | "
                  f"{f('within_10pct', '{:.1%}')} | {f('within_10pct_seen', '{:.1%}')} | "
                  f"{f('mae_iterations', '{:,.1f}', 1e3)} | {f('mae_log_seen', '{:.2f}')} | {rule:.1%} |")

print("\nScheduling delay per decision, a-srpt (mean over seeds of sched_delay_ms_avg / _p95; "
      "n_decisions):\n")
print("| setting | policy | avg ms | p95 ms | decisions |")
print("|---|---|---|---|---|")
for s in order_s:
    for a in asrpt:
        d = data[(s, a)].values()
        print(f"| {s} | {a} | {mean(v.num('sched_delay_ms_avg') for v in d):.3f} | "
              f"{mean(v.num('sched_delay_ms_p95') for v in d):.3f} | "
              f"{mean(v.num('n_decisions') for v in d):,.0f} |")
