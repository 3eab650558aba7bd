"""Average absolute prediction errors (eq. 9) of forest / mean / median on A-SRPT workloads.

Usage: python examples/a-srpt/prediction-errors.py wl/jobs1000-s1.csv ..."""
import sys
from pathlib import Path

import numpy as np

from gpusched.algorithms.predict import (
    fit_predictor,
    job_iterations,
    prediction_errors,
    train_split,
)
from gpusched.core.jobs import prepare_jobs
from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard  # noqa: E402

read_trace = guard(read_trace)  # a missing or malformed trace: one line, exit 2
cluster = load_cluster("a-srpt-250x8")  # iterations do not depend on the cluster
print("| workload | forest | mean | median | test jobs | mean true iterations (test) | test jobs of unseen groups |")
print("|---|---|---|---|---|---|---|")
for path in args(1, "python examples/a-srpt/prediction-errors.py TRACE.csv [TRACE.csv ...]"):
    jobs = prepare_jobs(read_trace(path), cluster)
    e = prediction_errors(jobs, seed=0)  # seed 0 = the sweeps' policy seed (forest random_state)
    y = job_iterations(jobs)
    n_tr = train_split(len(y))
    unseen = np.sum(fit_predictor("forest", jobs, 0)[n_tr:] == 0)
    print(f"| {path} | {e['forest']:,.0f} | {e['mean']:,.0f} | {e['median']:,.0f} | "
          f"{e['n_test']:.0f} | {y[n_tr:].mean():,.0f} | {unseen} |")
