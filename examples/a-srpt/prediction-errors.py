"""Average absolute prediction errors (eq. 9) of forest / mean / median on A-SRPT workloads.

Usage: python examples/a-srpt/prediction-errors.py wl/jobs1000-s1.csv ..."""
import sys

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

cluster = load_cluster("a-srpt-250x8")  # iterations do not depend on the cluster
print("| workload | forest | mean | median | test jobs | mean true iterations (test) | test jobs of unseen groups |")
print("|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    jobs = prepare_jobs(read_trace(path), cluster)
    e = prediction_errors(jobs, seed=0)  # seed 0 = the sweeps' policy seed (forest random_state)
    y = job_iterations(jobs)
    n_tr = train_split(len(y))
    unseen = np.sum(fit_predictor("forest", jobs, 0)[n_tr:] == 0)
    print(f"| {path} | {e['forest']:,.0f} | {e['mean']:,.0f} | {e['median']:,.0f} | "
          f"{e['n_test']:.0f} | {y[n_tr:].mean():,.0f} | {unseen} |")
