"""How much of A-SRPT's slowdown falls on jobs the unseen-group rule predicted 0 for.

Usage (from the folder holding wl/, after a sweep):
    python examples/a-srpt/unseen-rule.py res/fig6-jobs
One line per a-srpt cell (forest predictor, policy seed 0): the share of jobs the rule
("We predict 0 iterations for unseen jobs", Sec. IV-C-3) fired for, the share of the
run's slowdown (time lost to running slower than at ideal placement) those jobs carry,
and the run's slowdown and waiting as shares of its total JCT. See
docs/a-srpt-results.md, "Why A-SRPT loses with the forest"."""
import glob
import sys
from pathlib import Path

import numpy as np

from gpusched.algorithms.predict import fit
from gpusched.core.jobs import prepare_jobs
from gpusched.io.cluster import load_cluster
from gpusched.io.trace import read_trace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # examples/, for _inputs
from _inputs import args, fail, guard, need_folder, need_some, read_csv, read_json  # noqa: E402

out = need_folder(args(1, "python examples/a-srpt/unseen-rule.py SWEEP_OUT")[0], "a sweep's output folder")
cells = need_some(sorted(glob.glob(f"{glob.escape(str(out))}/cells/*_a-srpt_s0-*")), out, "a-srpt cells (cells/*_a-srpt_s0-*)")
read_trace, load_cluster = guard(read_trace), guard(load_cluster)
for cell in cells:
    info = read_json(Path(cell, "cell.json"), "a sweep cell's cell.json")
    d = dict(kv.split("=", 1) for kv in info.text("describe").split() if "=" in kv)
    if "trace" not in d or "cluster" not in d:
        fail(Path(cell, "cell.json"), f"field describe: expected trace=... cluster=..., got {info['describe']!r}")
    if d.get("predictor", "forest") != "forest":  # the forest, the default predictor, only
        continue
    cluster = load_cluster(str(HERE / d["cluster"]))
    jobs = prepare_jobs(read_trace(d["trace"]), cluster)
    rule = fit("forest", jobs, 0).rule
    rows = read_csv(Path(cell, "jobs.csv"), "a sweep cell's jobs.csv")
    if len(rows) != len(rule):
        fail(Path(cell, "jobs.csv"), f"{len(rows)} jobs; expected the {len(rule)} of {d['trace']}")
    slow = np.array([r.num("slowdown_s", empty=0.0) for r in rows])
    wait = np.array([r.num("wait_s", empty=0.0) for r in rows])
    jct = np.array([r.num("jct", empty=0.0) for r in rows])
    print(
        f"{d['trace']} on {d['cluster']}: rule fires for {rule.mean():.0%} of jobs, which carry "
        f"{slow[rule].sum() / max(slow.sum(), 1e-9):.0%} of the slowdown; slowdown "
        f"{slow.sum() / jct.sum():.0%} and waiting {wait.sum() / jct.sum():.0%} of total JCT"
    )
