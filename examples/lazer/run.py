"""Run a Lazer experiment grid in this process and keep one row of measures per run.

Usage: python examples/lazer/run.py SPEC.toml OUT.csv [--engine auto|python]

SPEC is a ``gpusched sweep`` spec (traces, clusters, policies, params, seeds); every cell
is replayed with :func:`gpusched.experiments.run.replay` and measured from its result,
without writing the run tables (a full-size jobs.csv is 20-40 MB and takes longer to write
than the simulation of most policies). A row is appended to OUT.csv as soon as its run
ends; cells already in OUT.csv are skipped, so an interrupted grid resumes. The columns
(times in s unless named otherwise):

* the summary's: ``p50/p95/avg_jct_s``, ``p50/p95/avg_wait_s``, ``gpu_utilization``,
  ``n_preemptions``, ``n_futile_preemptions``, ``futile_preemption_s``, ``n_decisions``;
* ``futile_gpu_h`` and ``load_gpu_h``: GPU-hours lost to futile preemptions and spent
  loading;
* ``p50/p95_futile_all_s`` over every job, and ``p50/p95_futile_hit_s`` over the jobs with
  some futile time (``jobs_hit``): the paper's Table 2 gives Lazer a P50 of 0.1-0.2 min,
  which cannot be a median over every job when most never lose a load;
* Lazer's ``predictions``, ``deferrals``, ``mean_x_s`` (over every prediction) and, over
  those of the exploitation stage, ``exploit_predictions``, ``exploit_mean_x_s`` and
  ``exploit_deferred_share`` (policy summary);
* ``sched_delay_ms`` (the Python path's mean time per decision; empty when the kernel
  decided), ``wall_s`` (simulation) and ``cpu_s`` (the whole replay, reading included).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import guard, read_csv  # noqa: E402

COLUMNS = [
    "trace",
    "cluster",
    "policy",
    "params",
    "seed",
    "n_jobs",
    "p50_jct_s",
    "p95_jct_s",
    "avg_jct_s",
    "p50_wait_s",
    "p95_wait_s",
    "avg_wait_s",
    "gpu_utilization",
    "n_preemptions",
    "n_futile_preemptions",
    "futile_preemption_s",
    "futile_gpu_h",
    "load_gpu_h",
    "p50_futile_all_s",
    "p95_futile_all_s",
    "jobs_hit",
    "p50_futile_hit_s",
    "p95_futile_hit_s",
    "predictions",
    "deferrals",
    "exploit_mean_x_s",
    "exploit_deferred_share",
    "n_decisions",
    "sched_delay_ms",
    "wall_s",
    "cpu_s",
    "mean_x_s",
    "exploit_predictions",
]


def measure(cell, summary: dict, result) -> dict:
    """One row of OUT.csv from a finished run."""
    s = result.state
    g = s.job_n_gpus.astype(np.float64)
    futile = s.job_futile_s
    hit = futile[futile > 0]
    lz = summary.get("lazer", {})
    delay = result.sched_delay_s
    return {
        "trace": cell.trace,
        "cluster": cell.cluster,
        "policy": cell.policy,
        "params": cell.params_text,
        "seed": cell.seed,
        "n_jobs": len(s.job_submit),
        **{
            k: summary[k]
            for k in (
                "p50_jct_s",
                "p95_jct_s",
                "avg_jct_s",
                "p50_wait_s",
                "p95_wait_s",
                "avg_wait_s",
                "gpu_utilization",
                "n_preemptions",
                "n_futile_preemptions",
                "futile_preemption_s",
                "n_decisions",
            )
        },
        "futile_gpu_h": float(np.dot(futile, g)) / 3600,
        "load_gpu_h": float(np.dot(s.job_load_spent_s, g)) / 3600,
        "p50_futile_all_s": float(np.percentile(futile, 50)),
        "p95_futile_all_s": float(np.percentile(futile, 95)),
        "jobs_hit": int(hit.size),
        "p50_futile_hit_s": float(np.percentile(hit, 50)) if hit.size else 0.0,
        "p95_futile_hit_s": float(np.percentile(hit, 95)) if hit.size else 0.0,
        "predictions": lz.get("predictions", ""),
        "deferrals": lz.get("deferrals", ""),
        "exploit_mean_x_s": lz.get("exploit_mean_x_s", ""),
        "exploit_deferred_share": lz.get("exploit_deferred_share", ""),
        "sched_delay_ms": f"{1e3 * float(np.mean(delay)):.4f}" if delay is not None and len(delay) else "",
        "wall_s": f"{result.wall_s:.2f}",
        "mean_x_s": lz.get("mean_x_s", ""),
        "exploit_predictions": lz.get("exploit_predictions", ""),
    }


@guard
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("out")
    ap.add_argument("--engine", default="auto", choices=("auto", "python"))
    args = ap.parse_args(argv)
    from gpusched.experiments.run import replay
    from gpusched.experiments.sweep import cells, load_spec

    todo = cells(load_spec(args.spec))
    out = Path(args.out)
    done: set[tuple[str, ...]] = set()
    new = not out.exists() or (out.is_file() and out.stat().st_size == 0)
    if not new:
        rows = read_csv(out, "a results .csv this script wrote (to add to)")
        done = {(r["trace"], r["policy"], r["params"], r["seed"]) for r in rows}
    with out.open("a", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        if new:
            writer.writeheader()
        for cell in todo:
            key = (cell.trace, cell.policy, cell.params_text, str(cell.seed))
            if key in done:
                continue
            c0 = time.process_time()
            summary, result = replay(
                cell.trace_input,
                cell.policy_input,
                cluster=cell.cluster_input,
                params=cell.param_pairs,
                slot_s=cell.slot_s,
                seed=cell.seed,
                mode=args.engine,
            )
            row = measure(cell, summary, result)
            row["cpu_s"] = f"{time.process_time() - c0:.2f}"
            writer.writerow(row)
            f.flush()
            print(f"{cell.describe()}: {row['wall_s']} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
