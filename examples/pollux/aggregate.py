"""Tables of the Pollux experiments (docs/pollux.md) from the run folders of run.sh.

Usage: python examples/pollux/aggregate.py OUT

Each figure is the mean over the workloads run (the artifact's own 8 by default): per
experiment and policy, the average JCT (h), utilisation and average waiting (h), the
restarts per job (preemptions: with no save time each is a re-allocation or a suspension)
and, for the headline, Pollux's reduction against each baseline.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import Row, args, guard, need_folder, need_some, read_csv, read_json  # noqa: E402


def _policy(run: Path) -> str:
    manifest = read_json(run / "manifest.json", "a run's manifest.json")
    params = manifest.obj("params")
    shown = ",".join(f"{k}={v}" for k, v in params.items() if k != "rng")
    return manifest.text("policy") + (f":{shown}" if shown else "")


def _jobs(run: Path) -> list[Row]:
    return need_some(read_csv(run / "jobs.csv", "a run's jobs.csv"), run / "jobs.csv", "jobs")


def _summary(run: Path):
    return read_json(run / "summary.json", "a run's summary.json")


def _figures(run: Path) -> dict[str, float]:
    s = _summary(run)
    jobs = _jobs(run)
    return {
        "jct_h": s.num("avg_jct_s") / 3600,
        "p99_h": s.num("p99_jct_s") / 3600,
        "makespan_h": s.num("makespan_s") / 3600,
        "util": s.num("gpu_utilization"),
        "wait_h": s.num("avg_wait_s") / 3600,
        "restarts": mean(j.whole("preemptions") for j in jobs),
        "n": s.num("n_finished"),
    }


def _by_app(run: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for j in _jobs(run):
        out[j["job_id"].rsplit("-", 1)[0]].append(j.num("jct") / 3600)
    return out


def _load(root: Path) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """(experiment, policy) -> workload -> figures."""
    data: dict[tuple[str, str], dict[str, dict[str, float]]] = defaultdict(dict)
    for folder in sorted(root.iterdir()):
        m = re.fullmatch(r"(.+)-([ws]\d+)", folder.name)
        if not folder.is_dir() or m is None:
            continue
        for run in sorted(p for p in folder.iterdir() if (p / "jobs.csv").exists()):
            data[(m.group(1), _policy(run))][m.group(2)] = _figures(run)
    return data


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def headline(data, loads=("load0.5", "load1", "load1.5", "load2"), title="") -> None:
    print(f"\n### Headline{title}: average JCT (h), mean over workloads\n")
    print(_row(["load", "workloads", "Pollux", "Optimus+Oracle", "Tiresias", "vs Optimus",
                "vs Tiresias", "util P / O / T", "wait (h) P / O / T"]))
    print(_row(["---"] * 9))
    for load in loads:
        runs = {p.split(":")[0]: v for (e, p), v in data.items() if e == load}
        if not {"pollux", "optimus", "tiresias"} <= set(runs):
            continue
        f = {k: {m: mean(w[m] for w in v.values()) for m in ("jct_h", "util", "wait_h")}
             for k, v in runs.items()}
        p, o, t = f["pollux"], f["optimus"], f["tiresias"]
        print(_row([
            re.sub(r"^[a-z]+", "", load) + "x", str(len(runs["pollux"])), f"{p['jct_h']:.3f}", f"{o['jct_h']:.3f}",
            f"{t['jct_h']:.3f}", f"{p['jct_h'] / o['jct_h'] - 1:+.1%}",
            f"{p['jct_h'] / t['jct_h'] - 1:+.1%}",
            f"{p['util']:.2f} / {o['util']:.2f} / {t['util']:.2f}",
            f"{p['wait_h']:.3f} / {o['wait_h']:.3f} / {t['wait_h']:.3f}",
        ]))


def per_workload(data, exp="load1") -> None:
    print(f"\n### {exp}: average JCT (s) per workload\n")
    runs = {p.split(":")[0]: v for (e, p), v in data.items() if e == exp}
    names = sorted(runs.get("pollux", {}), key=lambda w: int(w[1:]))
    print(_row(["policy", *names]))
    print(_row(["---"] * (len(names) + 1)))
    for pol in ("pollux", "optimus", "tiresias"):
        if pol in runs:
            print(_row([pol, *(f"{runs[pol][w]['jct_h'] * 3600:.0f}" for w in names)]))


def per_app(root: Path, exp="load1") -> None:
    print(f"\n### {exp}: average JCT (h) per application, over all its jobs\n")
    apps: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for folder in sorted(root.glob(f"{exp}-w*")):
        for run in sorted(p for p in folder.iterdir() if (p / "jobs.csv").exists()):
            pol = _policy(run).split(":")[0]
            for app, jcts in _by_app(run).items():
                apps[app][pol] += jcts
    print(_row(["application", "jobs", "Pollux", "Optimus+Oracle", "Tiresias"]))
    print(_row(["---"] * 5))
    for app in ("ncf", "cifar10", "bert", "deepspeech2", "yolov3", "imagenet"):
        if app in apps:
            v = apps[app]
            print(_row([app, str(len(v["pollux"])),
                        *(f"{mean(v[p]):.2f}" if v[p] else "" for p in ("pollux", "optimus", "tiresias"))]))


def variants(data, exps: tuple[str, ...], title: str, base=("load1", "pollux")) -> None:
    print(f"\n### {title}\n")
    print(_row(["policy", "workloads", "avg JCT (h)", "vs Pollux on the same workloads",
                "p99 (h)", "util", "wait (h)", "restarts/job"]))
    print(_row(["---"] * 8))
    ref = data.get(base, {})
    for (e, pol), runs in sorted(data.items()):
        if e not in exps:
            continue
        ws = sorted(runs)
        f = {m: mean(runs[w][m] for w in ws) for m in ("jct_h", "p99_h", "util", "wait_h", "restarts")}
        same = [w for w in ws if w in ref]
        vs = (mean(runs[w]["jct_h"] for w in same) / mean(ref[w]["jct_h"] for w in same) - 1
              if same else float("nan"))
        print(_row([pol, str(len(ws)), f"{f['jct_h']:.3f}", f"{vs:+.1%}", f"{f['p99_h']:.2f}",
                    f"{f['util']:.2f}", f"{f['wait_h']:.3f}", f"{f['restarts']:.1f}"]))


SJF_ARMS = (
    ("sjf", "pollux"),
    ("sjfgp", "tiresias, goodput physics"),
    ("sjfsh", "tiresias, sharing model"),
)


def sjf_bsbf(root: Path) -> None:
    """Rows in docs/sjf-bsbf.md's format: Pollux, and the Tiresias arms that attribute its
    difference (the goodput physics; the sharing physics with Pollux's 30 s restart)."""
    print("\n### SJF-BSBF Tables III and IV: Pollux on the sharing workloads (h)\n")
    print(_row(["jobs", "policy", "seeds", "avg JCT all (h) [range]", "large", "small",
                "avg queuing all (h)", "large", "small", "GPU util", "shared GPU-h",
                "makespan (h)", "preemptions", "restarts/job"]))
    print(_row(["---"] * 14))
    for n in (240, 480):
        for prefix, name in SJF_ARMS:
            rows = []
            for folder in sorted(root.glob(f"{prefix}-n{n}-s*")):
                # large/small by the GPUs the trace asks for, as the paper splits them
                # (Pollux's jobs.csv gives the elastic job's own count, not the request)
                wl = root / "wl" / f"{folder.name}.csv"
                asked = {r["job_id"]: r.whole("num_gpus") for r in read_csv(wl, "the run's trace")}
                for run in (p for p in folder.iterdir() if (p / "jobs.csv").exists()):
                    jobs = _jobs(run)
                    for j in jobs:
                        if j["job_id"] not in asked:
                            j.bad("job_id", f"a job of the trace {wl}")
                    s = _summary(run)
                    out = {"util": s.num("gpu_utilization"), "makespan": s.num("makespan_s") / 3600,
                           "preempt": sum(j.whole("preemptions") for j in jobs),
                           "restarts": mean(j.whole("preemptions") for j in jobs)}
                    for part, keep in (("all", lambda g: True), ("large", lambda g: g > 4),
                                       ("small", lambda g: g <= 4)):
                        sel = [j for j in jobs if keep(asked[j["job_id"]]) and j["jct"]]
                        nan = float("nan")  # no finished job of this part (none large, say)
                        out[f"jct_{part}"] = mean(j.num("jct") for j in sel) / 3600 if sel else nan
                        out[f"wait_{part}"] = mean(j.num("wait_s") for j in sel) / 3600 if sel else nan
                    rows.append(out)
            if not rows:
                continue
            f = {k: mean(r[k] for r in rows) for k in rows[0]}
            lo, hi = min(r["jct_all"] for r in rows), max(r["jct_all"] for r in rows)
            print(_row([str(n), name, str(len(rows)), f"{f['jct_all']:.2f} [{lo:.2f}-{hi:.2f}]",
                        f"{f['jct_large']:.2f}", f"{f['jct_small']:.2f}", f"{f['wait_all']:.2f}",
                        f"{f['wait_large']:.2f}", f"{f['wait_small']:.2f}", f"{f['util']:.3f}",
                        "0.0", f"{f['makespan']:.2f}", f"{f['preempt']:.0f}",
                        f"{f['restarts']:.1f}"]))


APPS = ("ncf", "cifar10", "bert", "deepspeech2", "yolov3", "imagenet")


def attribution(root: Path, title: str, exps: tuple[str, ...]) -> None:
    """Per (experiment, policy): the means over workloads and the per-application average
    JCT (h, over all the application's jobs): the table and periodic-Tiresias ablations."""
    print(f"\n### {title}\n")
    print(_row(["experiment", "policy", "workloads", "avg JCT (h)", "util", "wait (h)",
                "restarts/job", *APPS]))
    print(_row(["---"] * (7 + len(APPS))))
    for exp in exps:
        runs: dict[str, list[Path]] = defaultdict(list)
        for folder in sorted(root.glob(f"{exp}-w*")):
            for run in sorted(p for p in folder.iterdir() if (p / "jobs.csv").exists()):
                runs[_policy(run)].append(run)
        for pol, rs in sorted(runs.items()):
            f = [_figures(r) for r in rs]
            apps: dict[str, list[float]] = defaultdict(list)
            for r in rs:
                for app, jcts in _by_app(r).items():
                    apps[app] += jcts
            print(_row([exp, pol, str(len(rs)), f"{mean(x['jct_h'] for x in f):.3f}",
                        f"{mean(x['util'] for x in f):.2f}", f"{mean(x['wait_h'] for x in f):.3f}",
                        f"{mean(x['restarts'] for x in f):.1f}",
                        *(f"{mean(apps[a]):.2f}" if apps[a] else "" for a in APPS)]))


@guard
def main(out: str) -> None:
    root = need_folder(out, "run.sh's output folder (OUT)")
    need_some(root.glob("*/*/jobs.csv"), root, "run folders of run.sh (EXPERIMENT-sSEED/RUN/jobs.csv)")
    data = _load(root)
    headline(data)
    headline(data, ("art0.5", "art1", "art1.5", "art2"),
             " with the artifact's settings (measured tables; Tiresias every 60 s, arrival order)")
    per_workload(data)
    per_app(root)
    variants(data, ("load1", "ablation", "ga"), "Ablations at load 1 (Pollux unless named)")
    attribution(root, "Load 1: fitted throughput (load1) against the measured tables (table), "
                "Tiresias every 60 s (tper, tpertable), also in arrival order (tart, tarttable)",
                ("load1", "table", "tper", "tpertable", "tart", "tarttable"))
    attribution(root, "The realistic set (--load 0; the measured tables)", ("real",))
    sjf_bsbf(root)


if __name__ == "__main__":
    main(args(1, "python examples/pollux/aggregate.py OUT")[0])
