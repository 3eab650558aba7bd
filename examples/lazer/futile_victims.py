"""Which of Lazer's starts its futile preemptions hit (docs/lazer.md, "Reading Alg. 1-2").

Usage: python examples/lazer/futile_victims.py TRACE [--jobs N] [-p key=value ...]

Replays the first N jobs of TRACE on lazer-sim-512 under ``lazer`` on the Python decision
path, noting which part of Alg. 1 started each job: an arrival that found enough idle GPUs,
an arrival that preempted at once (X = 0, line 5), a deferral's end (line 10), or the
completion handler (line 16). A futile preemption takes a job that is still loading; the
table counts them by the start they cut short. Only starts by arrival ask the predictor.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from gpusched.core.state import LOADING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import ArgumentParser, guard, whole  # noqa: E402

_EPS = 1e-9


@guard
def main(argv: list[str] | None = None) -> None:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--jobs", type=whole(1), default=None)  # the first N jobs
    ap.add_argument("-p", dest="params", action="append", default=[])
    args = ap.parse_args(argv)

    import numpy as np

    from gpusched.core.engine import Engine
    from gpusched.core.jobs import prepare_jobs
    from gpusched.core.policy import parse_params
    from gpusched.core.registry import load_policy_class
    from gpusched.experiments.run import phase_times
    from gpusched.io.cluster import load_cluster
    from gpusched.io.trace import read_trace

    base = load_policy_class("lazer")
    started_by: dict[int, str] = {}
    hits: Counter[str] = Counter()
    lost: Counter[str] = Counter()

    class Tagged(base):  # type: ignore[misc, valid-type]
        """Lazer, noting who started each job and whom each futile preemption hit."""

        how = "completion handler (line 16)"

        def _on_arrival(self, view, j, now):
            self.how = "arrival, idle GPUs"
            return super()._on_arrival(view, j, now)

        def _on_timer(self, view, j, jr):
            self.how = "end of a deferral (line 10)"
            return super()._on_timer(view, j, jr)

        def _on_completion(self, view, first_new):
            self.how = "completion handler (line 16)"
            return super()._on_completion(view, first_new)

        def _preempt_and_start(self, view, j, jr):
            if self.how == "arrival, idle GPUs":
                self.how = "arrival, X = 0 (line 5)"
            now = view.now
            for k in jr.tolist():
                if view.job_status[k] == LOADING and view.job_phase_end[k] > now + _EPS:
                    hits[started_by.get(k, "?")] += 1
                    lost[started_by.get(k, "?")] += now - float(
                        view.job_phase_end[k] - view.job_load_s[k]
                    )
            return super()._preempt_and_start(view, j, jr)

        def _start(self, view, j, gpus):
            started_by[j] = self.how
            return super()._start(view, j, gpus)

        def decide(self, view, now):
            self.how = "after saves (line 5 or 10)"  # promised starts come first
            return super().decide(view, now)

    cluster = load_cluster("lazer-sim-512")
    trace = read_trace(args.trace)
    if args.jobs is not None:
        trace = trace.take(np.arange(min(args.jobs, len(trace))))
    jobs = prepare_jobs(trace, cluster)
    pol = Tagged(**parse_params(base, args.params))
    load, save = phase_times(jobs, 0.0, 0.0)
    res = Engine(jobs, cluster, pol, mode="python", load_s=load, save_s=save).run()
    total = int(res.state.job_n_futile.sum())
    print(f"{len(jobs)} jobs, {total} futile preemptions, params {args.params or 'default'}\n")
    print("| start cut short | futile preemptions | share | load lost, h |")
    print("|---|---|---|---|")
    for how, n in hits.most_common():
        print(f"| {how} | {n:,} | {n / max(total, 1):.1%} | {lost[how] / 3600:,.1f} |")


if __name__ == "__main__":
    main()
