"""Every answer of Dorm's MILP in the PD-ORS experiments, to check that a change keeps them.

Run from the repository root::

    python -m bench.dorm_answers -o before.jsonl               # all of run.sh's Dorm runs
    (change the model, or HiGHS's options)
    python -m bench.dorm_answers -o after.jsonl --against before.jsonl

It replays, in this process, the Dorm runs of ``examples/pd-ors/run.sh`` (the same
workloads, clusters and seeds: Fig. 7 at I = 20, 60 and 100; Fig. 6 at 10, 30 and 100
machines; Fig. 9 with alternating and Philly arrivals, and under the x18max reading),
and writes one JSON line per MILP: the run, the MILP's index in it, the workers it gives
each active job (and a digest of them), HiGHS's model status, its branch-and-bound nodes
and the CPU time of the solve (building the model included). A last line per run keeps
its total utility. ``--against`` then prints, per run, whether every answer is the same or
which MILP is the first to differ (after it, the two runs see different states, so later
MILPs cannot be compared), and the CPU time of both records. ``--seeds`` and ``--only``
(a setting's name prefix, such as ``fig7``) choose fewer runs. The run folders are not
kept. docs/pd-ors.md (Speed) gives the records' figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "pd-ors" / "clusters"


def settings(seeds: list[int], only: str = "") -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(run name, workload arguments, cluster)`` for run.sh's Dorm runs, in its order."""
    for s in seeds:
        runs: list[tuple[str, dict[str, Any], str]] = []
        for n in (20, 60, 100):
            runs.append((f"fig7-jobs{n}-s{s}", {"jobs": n, "horizon": 20}, "pd-ors-100"))
        for h in (10, 30, 100):
            local = EXAMPLES / f"pd-ors-{h}.toml"
            cluster = str(local) if local.is_file() else f"pd-ors-{h}"
            runs.append((f"fig6-machines{h}-s{s}", {"jobs": 50, "horizon": 20}, cluster))
        for a in ("alternating", "philly"):
            wl = {"jobs": 100, "horizon": 80, "arrivals": a}
            runs.append((f"fig9-{a}-s{s}", wl, "pd-ors-30"))
        wl = {"jobs": 100, "horizon": 80, "arrivals": "alternating"}
        runs.append((f"fig9-x18max-s{s}", wl, str(EXAMPLES / "pd-ors-30-x18max.toml")))
        for name, wl, cluster in runs:
            if name.startswith(only):
                yield name, {"seed": s, **wl}, cluster


def record(seeds: list[int], only: str = "", out: Callable[[dict[str, Any]], None] = print) -> None:
    """Replay each run with Dorm and hand :func:`out` a dict per MILP and one per run."""
    from highspy import _core

    import gpusched.algorithms.dorm_milp as dm
    from gpusched.experiments.run import replay
    from gpusched.io.trace import write_trace
    from gpusched.workloads.pd_ors import pd_ors_workload

    # each run loads the policy file afresh, and it imports solve_counts from dm then
    last: dict[str, Any] = {}
    run, solve = _core._Highs.run, dm.solve_counts
    current, count = "", [0]

    def run_logged(self: Any) -> Any:
        status = run(self)
        last["status"] = str(self.getModelStatus()).rsplit(".", 1)[-1]
        last["nodes"] = int(self.getInfo().mip_node_count)
        return status

    def solve_logged(*args: Any, **kwargs: Any) -> Any:
        last.clear()
        t0 = time.process_time()
        got = solve(*args, **kwargs)
        workers = [] if got.workers is None else got.workers.tolist()
        out(
            {
                "run": current,
                "milp": count[0],
                "status": last.get("status", "none"),
                "nodes": last.get("nodes", 0),
                "cpu_s": round(time.process_time() - t0, 4),
                "answer": _digest(workers),
                "workers": workers,
            }
        )
        count[0] += 1
        return got

    _core._Highs.run = run_logged  # type: ignore[method-assign]
    dm.solve_counts = solve_logged
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for current, wl, cluster in settings(seeds, only):
                count[0] = 0
                path = Path(tmp) / f"{current}.csv"
                write_trace(pd_ors_workload(**wl), path)
                summary, _ = replay(str(path), "dorm", cluster=cluster)
                out({"run": current, "milps": count[0], "total_utility": summary["total_utility"]})
    finally:
        _core._Highs.run, dm.solve_counts = run, solve  # type: ignore[method-assign]


def _digest(workers: list[int]) -> str:
    return hashlib.sha1(np.asarray(workers, dtype=np.int64).tobytes()).hexdigest()[:12]


def compare(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[str]:
    """One line per run of ``new``: the same answers, or the first MILP that differs."""
    lines = []
    for name in dict.fromkeys(r["run"] for r in new):
        a = [r for r in new if r["run"] == name and "milp" in r]
        b = [r for r in old if r["run"] == name and "milp" in r]
        if not b:
            lines.append(f"{name}: not in the other record")
            continue
        first = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x["answer"] != y["answer"]),
            None,
        )
        if first is None and len(a) == len(b):
            lines.append(f"{name}: the same {len(a)} answers")
        elif first is None:
            lines.append(
                f"{name}: the same first {min(len(a), len(b))} answers, then {len(a)} MILPs against {len(b)}"
            )
        else:
            lines.append(
                f"{name}: MILP {first} is the first to differ "
                f"({a[first]['status']} against {b[first]['status']})"
            )
    return lines


def _read(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {path}: cannot read the record ({exc})") from None


def _cpu(rows: list[dict[str, Any]], runs: set[str] | None = None) -> float:
    """The CPU time of the MILPs of ``rows`` (of those in ``runs`` only, if given)."""
    return float(
        sum(r["cpu_s"] for r in rows if "milp" in r and (runs is None or r["run"] in runs))
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.dorm_answers", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("-o", "--out", required=True, help="the JSON-lines record to write")
    p.add_argument("--against", help="a record to compare the new one with")
    p.add_argument("--seeds", default="1-6", help="seeds, as 1-6, 1,3 or 1-3,7 (default 1-6)")
    p.add_argument("--only", default="", help="only the runs whose name starts with this")
    args = p.parse_args(argv)
    seeds = _seeds(args.seeds)
    old = _read(args.against) if args.against else None
    rows: list[dict[str, Any]] = []
    with open(args.out, "w", encoding="utf-8") as fh:

        def out(row: dict[str, Any]) -> None:
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            if "total_utility" in row:
                print(f"{row['run']}: {row['milps']} MILPs, utility {row['total_utility']:.1f}")

        record(seeds, args.only, out)
    print(f"{sum('milp' in r for r in rows)} MILPs, {_cpu(rows):.1f} s of CPU, in {args.out}")
    if old is not None:
        print("\n".join(compare(rows, old)))
        both = {r["run"] for r in rows} & {r["run"] for r in old}
        print(
            f"CPU of the runs in both: {_cpu(rows, both):.1f} s here, {_cpu(old, both):.1f} s there"
        )
    return 0


def _seeds(text: str) -> list[int]:
    """``--seeds`` as ``gpusched compare --seeds`` reads it (1-6, 1,3 or 1-3,7)."""
    from gpusched.errors import GpuschedError
    from gpusched.experiments.seeds import parse_seeds

    try:
        return list(parse_seeds(text))
    except GpuschedError as exc:
        raise SystemExit(
            f"error: --seeds {text!r}: expected a range like 1-6 or a list like 1,3 ({exc})"
        ) from None


if __name__ == "__main__":
    sys.exit(main())
