"""Why A-SRPT's jobs wait or run slowly: an instrumented replay of one a-srpt run.

Usage: python examples/a-srpt/asrpt-trace.py TRACE CLUSTER [tau] [predictor]

It swaps the policy's decide() for a copy of policies/a_srpt.py's that also records, per
job, when it left the virtual single machine (line 2), how it was started (lines 8-23) and
its placement slowdown, then prints where the waiting and the slow running come from
(docs/a-srpt-results.md). The copy must stay in step with the policy: the script replays
the same run without the instrumentation and exits with an error if the total JCT differs.
"""
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from gpusched.core.policy import Decision, Start
from gpusched.core.state import QUEUED
from gpusched.experiments.run import build_engine
from gpusched.algorithms.pipeline_placer import Placer
from gpusched.results.metrics import job_records, summarize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard  # noqa: E402

trace, cluster = args(2, "python examples/a-srpt/asrpt-trace.py TRACE CLUSTER [tau] [predictor]")[:2]
build_engine = guard(build_engine)  # a missing or malformed trace or cluster: one line, exit 2
params = []
if len(sys.argv) > 3: params.append(f"tau={sys.argv[3]}")
if len(sys.argv) > 4: params.append(f"predictor={sys.argv[4]}")
engine, _ = build_engine(trace, "a-srpt", cluster=cluster, params=params, slot_s=1.0, seed=0)
pol = engine.policy
info = defaultdict(dict)
hist = []
def decide(view, now):
    self = pol; pj = self.pj
    for j in self.virtual.advance(now):
        self.pending.append(j); info[j]["release"] = now
    placer = Placer(view); gpu_server = np.asarray(view.gpu_server); actions = []
    def start(j, gpus, how, alpha):
        placer.commit(gpus, gpu_server); actions.append(Start(j, gpus))
        info[j].update(start=now, how=how, slow=alpha / pj.alpha_min[j])
    if self.delayed is not None:
        j, kappa, deadline = self.delayed
        gpus, alpha = placer.place(pj, j, "most")
        if alpha < kappa:
            start(j, gpus, "delayed, started when placement improved", alpha); self.delayed = None
        elif now >= deadline - 1e-9:
            start(j, gpus, "delayed, started at deadline", alpha); self.delayed = None
    while self.delayed is None and self.pending:
        j = self.pending[0]
        if view.job_status[j] != QUEUED or not placer.fits(int(pj.n_gpus[j])):
            break
        self.pending.popleft()
        if pj.alpha_max[j] / pj.alpha_min[j] >= self.comm_heavy:
            gpus, alpha = placer.place(pj, j, "most")
            wait = self.tau * self.size[j]
            if alpha / pj.alpha_min[j] <= self.comm_heavy or not wait > 0:
                start(j, gpus, "comm-heavy, good placement at once" if alpha / pj.alpha_min[j] <= self.comm_heavy else "comm-heavy, window 0 (predicted 0 or tau 0)", alpha)
            else:
                self.delayed = (j, alpha, now + wait)
                info[j].update(delay_from=now, window=wait)
        else:
            gpus, alpha = placer.place(pj, j, "least")
            start(j, gpus, "not comm-heavy", alpha)
    wake = self.virtual.next_completion()
    if self.delayed is not None:
        wake = min(wake, self.delayed[2])
    hist.append((now, self.delayed is not None, len(self.pending), int(placer.total)))
    return Decision(actions=actions, wake_at=wake if np.isfinite(wake) and wake > now else None)
pol.decide = decide
res = engine.run()
s = summarize(res); rec = job_records(res)
G = int(np.asarray(res.cluster.server_gpus()).sum())
plain, _ = build_engine(trace, "a-srpt", cluster=cluster, params=params, slot_s=1.0, seed=0)
plain_total = summarize(plain.run())["total_jct_s"]
if plain_total != s["total_jct_s"]:
    sys.exit(f"instrumented copy of decide() drifted from policies/a_srpt.py: total JCT "
             f"{s['total_jct_s']:.6g} s vs {plain_total:.6g} s without instrumentation")
print(f"total_jct {s['total_jct_s']/1e6:.2f} x10^6 s; G={G} (same as the plain policy)")
sub = rec["submit"]; fs = rec["first_start"]; wait = rec["wait_s"]; run = rec["jct"] - wait; d = rec["duration"]
n = len(sub)
held = np.array([info[j]["release"] - sub[j] for j in range(n)])
pend = np.array([fs[j] - info[j]["release"] for j in range(n)])
print(f"job-s of waiting: total {wait.sum()/1e6:.2f}; held in A~1 (submit->release) {held.sum()/1e6:.2f}; release->start {pend.sum()/1e6:.2f}")
# pending time while a delayed job holds the queue vs head does not fit
t_del = t_hol = js_del = js_hol = 0.0; idle_hol = 0.0; idle_del = 0.0
for (t0, dl, npend, idle), (t1, *_ ) in zip(hist, hist[1:]):
    dt = t1 - t0
    if dl:
        t_del += dt; js_del += npend * dt; idle_del += idle * dt
    elif npend:
        t_hol += dt; js_hol += npend * dt; idle_hol += idle * dt
print(f"time a delayed job held the queue {t_del/1e6:.3f} x10^6 s (job-s of others pending meanwhile {js_del/1e6:.2f}, mean idle GPUs {idle_del/max(t_del,1e-9):.1f});"
      f" head did not fit {t_hol/1e6:.3f} x10^6 s (job-s pending {js_hol/1e6:.2f}, mean idle GPUs {idle_hol/max(t_hol,1e-9):.1f})")
own_delay = sum(info[j]["start"] - info[j]["delay_from"] for j in range(n) if "delay_from" in info[j])
print(f"delayed jobs' own delay: {own_delay/1e6:.3f} x10^6 s")
byhow = defaultdict(lambda: [0, 0, 0.0, 0.0])
for j in range(n):
    h = info[j]["how"]; b = byhow[h]
    b[0] += 1; b[1] += run[j] > 2 * d[j]; b[2] += max(run[j] - d[j], 0); b[3] += wait[j]
w0 = [j for j in range(n) if info[j]["how"].startswith("comm-heavy, window 0")]
print(f"window-0 jobs: {len(w0)}, of which predicted 0 iterations: {sum(pol.n_pred[j] == 0 for j in w0)}; all jobs predicted 0: {int((pol.n_pred == 0).sum())}")
print("| how started | jobs | > 2x | beyond (10^6 s) | their wait (10^6 s) |")
for h, (c, k, e, w) in sorted(byhow.items()):
    print(f"| {h} | {c} | {k} | {e/1e6:.2f} | {w/1e6:.2f} |")
# top 5 jobs by beyond (the trace read as gpusched reads it: a bundled name, .csv.gz or
# .parquet too; a trace without a config column shows it empty)
from gpusched.io.resources import resolve_trace  # noqa: E402
from gpusched.io.trace import read_trace  # noqa: E402

tr = guard(read_trace)(guard(resolve_trace)(trace))
config = tr.extra.get("config", [""] * len(tr))
wl = {str(j): {"model": m, "config": c, "num_gpus": g}
      for j, m, c, g in zip(tr.job_id, tr.model, config, tr.num_gpus, strict=True)}
top = np.argsort(-(run - d))[:6]
for j in top:
    r = wl[str(rec["job_id"][j])]
    print(f"  job {rec['job_id'][j]} {r['model']} {r['config']} g={r['num_gpus']} dur {d[j]:.0f} wait {wait[j]:.0f} held {held[j]:.0f} slow {run[j]/d[j]:.1f}x how={info[j]['how']} window={info[j].get('window',0):.0f}")
top = np.argsort(-wait)[:3]
for j in top:
    r = wl[str(rec["job_id"][j])]
    print(f"  longest wait: job {rec['job_id'][j]} {r['model']} {r['config']} g={r['num_gpus']} dur {d[j]:.0f} wait {wait[j]:.0f} held {held[j]:.0f} pending {pend[j]:.0f}")
import os

for k in os.environ.get("JOBS", "").split(","):
    if not k: continue
    j = int(np.flatnonzero(rec["job_id"].astype(str) == k)[0])
    print(f"  job {k}: held {held[j]:.0f} pending {pend[j]:.0f} how={info[j]['how']} window={info[j].get('window',0):.0f} slow={info[j]['slow']:.1f} n_pred={pol.n_pred[j]:.0f}")
