"""The Pollux simulator's workloads: 160 jobs over 8 hours, and their 0.5x-2x load sets.

A. Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI 2021, Sec. 5.3 (simulator experiments, Fig. 7-8): eight workloads of 160
jobs sampled from the Microsoft Philly traces, each job one of the six applications with a
"TunedJobs" starting configuration (GPUs and global batch) that the baselines keep; the
load sets scale the number of jobs in the same 8 hours (Fig. 8a: 0.5x-2x).

Bundled: ``gpusched/data/pollux_workloads.csv.gz``, the artifact's 40 files
``simulator/workloads{,-realistic,-0.5,-1.5,-2.0}/workload-{1..8}.csv`` (petuum/adaptdl,
branch osdi21-artifact, commit c793c70; Apache-2.0; arrival times from the Philly traces,
CC BY 4.0), values unchanged (``gpusched/data/README.md``).

The trace: ``job_id`` = the artifact's ``name``, ``submit_time`` = ``time`` (s),
``num_gpus`` = ``num_replicas`` (the TunedJobs GPUs; Pollux ignores them), ``model`` =
``application``, ``batch_size`` = ``ceil(batch_size / num_replicas)`` per GPU (the sharing
model's unit; the simulator runs the same per-GPU batch, ``simulator.py`` L77),
``iterations`` = the application's whole progress in iterations at ``M0`` divided by the
job's ``num_gpus x batch_size / M0`` (so a job is done after ``max_epochs`` epochs'
progress, as the simulator's, ``applications.py`` L132-150), and ``goodput`` = 1 (the
rows of :mod:`gpusched.jobmodels.goodput`). ``--seed S`` picks ``workload-S`` (1-8; the
paper's figures average all 8), ``--load`` the set (1 = ``workloads``, 0.5, 1.5, 2;
``--load 0`` the ``workloads-realistic`` set, whose batch is M0 x GPUs: its ncf jobs ask for
up to 8 GPUs, which Pollux and Optimus never give ncf (sim L332-333) and which only the
artifact's measured profile covers, so its rows carry ``throughput`` = ``table``: the
goodput model simulates them on the interpolated tables, as the artifact does).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from pathlib import Path

import numpy as np

from gpusched.errors import GpuschedError
from gpusched.io.trace import Trace
from gpusched.jobmodels.goodput import load_apps

__all__ = ["LOADS", "pollux_workload"]

DATA = Path(__file__).resolve().parent.parent / "data" / "pollux_workloads.csv.gz"

#: ``--load`` -> the artifact's folder (``0``: the realistic configurations)
LOADS: dict[float, str] = {
    1.0: "workloads",
    0.5: "workloads-0.5",
    1.5: "workloads-1.5",
    2.0: "workloads-2.0",
    0.0: "workloads-realistic",
}


def _rows() -> list[dict[str, str]]:
    with gzip.open(DATA, "rt", encoding="utf-8", newline="") as f:
        text = "".join(line for line in f if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(text)))


def pollux_workload(seed: int = 1, jobs: int | None = None, load: float | None = None) -> Trace:
    """Workload ``seed`` (1-8) of the set of ``load`` (default 1: 160 jobs over 8 h).

    Raises
    ------
    GpuschedError
        A seed outside 1-8, a load that is not one of the sets, or ``jobs`` other than
        the set's size.
    """
    load = 1.0 if load is None else float(load)
    if load not in LOADS:
        raise GpuschedError(
            f"--load {load:g}: the Pollux workloads come in loads 0.5, 1, 1.5 and 2, and 0 "
            "(the realistic set)"
        )
    if not 1 <= seed <= 8:
        raise GpuschedError(f"--seed {seed}: the Pollux simulator has workloads 1 to 8")
    name = LOADS[load]
    rows = [r for r in _rows() if r["set"] == name and r["workload"] == str(seed)]
    if jobs is not None and jobs != len(rows):
        raise GpuschedError(f"--jobs {jobs}: workload {seed} of {name} has {len(rows)} jobs")
    apps = {a.name: a for a in load_apps()}
    ids, submit, gpus, models, per_gpu, its = [], [], [], [], [], []
    for r in rows:
        app = apps[r["application"]]
        k, batch = int(r["num_replicas"]), int(r["batch_size"])
        b = math.ceil(batch / k)
        ids.append(r["name"])
        submit.append(float(r["time"]))
        gpus.append(k)
        models.append(app.name)
        per_gpu.append(str(b))
        # progress = iterations x k b / M0 = the application's whole progress
        its.append(app.progress * app.init_batch / (k * b))
    n = len(rows)
    return Trace(
        job_id=np.array(ids, dtype=object),
        submit_time=np.asarray(submit, dtype=np.float64),
        num_gpus=np.asarray(gpus),
        duration=np.full(n, np.nan),
        iterations=np.asarray(its, dtype=np.float64),
        model=np.array(models, dtype=object),
        extra={
            "batch_size": np.array(per_gpu, dtype=object),
            "goodput": np.full(n, "1", dtype=object),
            **({"throughput": np.full(n, "table", dtype=object)} if load == 0.0 else {}),
        },
        source=f"Pollux simulator {name}/workload-{seed}.csv (petuum/adaptdl osdi21-artifact)",
    )
