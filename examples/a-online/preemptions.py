"""Fig. 9's preemption frequency counted in each unit a reader could take, from event logs.

Usage: python examples/a-online/preemptions.py OUT_DIR   (run.sh's; aggregate.py calls it)

run.sh's ``fig9`` part replays the 300-job simulator with ``--events`` for every policy,
at the defaults and with the ablation's variants (:data:`VARIANTS`), into
``OUT_DIR/fig9-VARIANT-sSEED/POLICY``; the table has a row per variant and policy, the mean
[min, max] over the seeds in each unit.

The paper's metric is "preemption frequency (the total number of preemption triggered)"
(Sec. V-A, P:L431). gpusched's ``n_preemptions`` counts chunk preemptions (a job-level
baseline pausing a job on k workers counts k). The units here (:data:`UNITS`) read the
same events.csv rows (``preempt`` and ``start``; a row's ``job_id`` is a chunk, its job
is tasks.csv's ``job`` column) in other ways.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import Row, args, fail, guard, need_folder, need_some, read_csv, read_json  # noqa: E402

#: (key, what one count is)
UNITS = (
    ("chunks", "chunk preemptions: a running chunk suspended on its worker (n_preemptions)"),
    ("pauses", "job pauses: distinct (job, time) with at least one of its chunks suspended"),
    ("triggers", "triggers: distinct (preempting job, time), the job that took a freed worker"),
    ("decisions", "decisions that preempt: distinct times with a preemption"),
    ("jobs", "jobs preempted at least once"),
)


def count(events: Iterable[Mapping[str, str]], parent: Mapping[str, str]) -> dict[str, int]:
    """The preemptions of one run's events.csv rows (in file order) in every unit of
    :data:`UNITS`; ``parent`` maps a chunk to its job.

    A trigger is the job whose chunk starts, at the time of a preemption, on the worker it
    freed (A_online: the chunk of higher gamma that preempts; a job-level baseline: the job
    the re-pack gave the worker). A preemption whose worker nobody takes at that time has no
    preempting job: it counts as its own trigger, (the paused job, time); ``untaken`` says
    how many did.
    """
    where: dict[str, str] = {}  # chunk -> the worker(s) of its last start
    freed: dict[tuple[str, str], str] = {}  # (time, worker) -> job paused there, not yet taken
    n = 0
    pauses: set[tuple[str, str]] = set()
    triggers: set[tuple[str, str]] = set()
    times: set[str] = set()
    jobs: set[str] = set()
    for row in events:
        if isinstance(row, Row):  # a row read from a file: its job_id is a chunk of tasks.csv
            if row["event"] in ("start", "preempt") and row["job_id"] not in parent:
                row.bad("job_id", "a chunk of the run's tasks.csv")
        kind = row["event"]
        if kind == "start":
            chunk, t, w = row["job_id"], row["time_s"], row["gpus"]
            where[chunk] = w
            if freed.pop((t, w), None) is not None:
                triggers.add((parent[chunk], t))
        elif kind == "preempt":
            chunk, t = row["job_id"], row["time_s"]
            job = parent[chunk]
            n += 1
            pauses.add((job, t))
            times.add(t)
            jobs.add(job)
            if chunk not in where:
                if isinstance(row, Row):
                    row.bad("job_id", "a chunk started before it is preempted")
                raise ValueError(f"chunk {chunk} preempted at {t} without a start before it")
            # a chunk is preempted only while it holds the worker of its last start
            freed[(t, where[chunk])] = job
    for (t, _), job in freed.items():
        triggers.add((f"{job} (paused)", t))
    return {
        "chunks": n,
        "pauses": len(pauses),
        "triggers": len(triggers),
        "decisions": len(times),
        "jobs": len(jobs),
        "untaken": len(freed),
    }


def count_run(run: Path) -> dict[str, float]:
    """:func:`count` of one run folder (events.csv, tasks.csv), checked against its
    summary's ``n_preemptions``, with the summary's edge utilisation and average wait."""
    parent = {r["job_id"]: r["job"] for r in read_csv(run / "tasks.csv", "a run's tasks.csv")}
    got: dict[str, float] = dict(count(read_csv(run / "events.csv", "a run's events.csv"), parent))
    summary = read_json(run / "summary.json", "a run's summary.json")
    if got["chunks"] != summary.num("n_preemptions"):
        fail(
            run / "summary.json",
            f"field n_preemptions: expected {got['chunks']:.0f}, the preempt rows of "
            f"events.csv, got {summary.num('n_preemptions'):g}",
        )
    got["edge_util"] = summary.num("gpu_utilization")
    got["avg_wait"] = summary.num("avg_wait_s")
    return got


#: run.sh's fig9 variants, in table order (the simulator's ablation rows that change a
#: preemptive policy; docs/a-online.md's ablation says what each switches back)
VARIANTS = (
    ("base", "the defaults"),
    ("workers", "job-level baselines' k = trace GPU count"),
    ("edgeonly", "job-level baselines may use the cloud"),
    ("migrate", "job-level baselines' chunks pinned"),
    ("serial", "serial shipping"),
    ("load10", "arrivals x 10"),
    ("load100", "arrivals x 100"),
)
POLICIES = ("a-online", "a-online-e", "srtf", "tiresias-l", "batchsche")


Counts = dict[str, float]


def read(out: Path) -> dict[tuple[str, str], dict[str, Counts]]:
    """(variant, policy) -> seed -> the counts of its run (run.sh's
    ``fig9-VARIANT-sSEED/POLICY`` folders)."""
    got: dict[tuple[str, str], dict[str, Counts]] = {}
    for ev in sorted(out.glob("fig9-*-s*/*/events.csv")):
        variant, seed = ev.parent.parent.name.removeprefix("fig9-").rsplit("-s", 1)
        got.setdefault((variant, ev.parent.name), {})[seed] = count_run(ev.parent)
    return got


def in_order(got: dict[tuple[str, str], dict[str, Counts]], variant: str, unit: str) -> str:
    """On how many seeds the paper's order, SRTF < A_online < A_online-E (P:L459), holds in
    ``unit`` (a policy the variant does not run is the same seed's base run): "k/n"."""

    def of(pol: str) -> dict[str, Counts]:
        return got.get((variant, pol)) or got.get(("base", pol), {})

    srtf, ao, ae = of("srtf"), of("a-online"), of("a-online-e")
    seeds = sorted(set(srtf) & set(ao) & set(ae))
    k = sum(srtf[s][unit] < ao[s][unit] < ae[s][unit] for s in seeds)
    return f"{k}/{len(seeds)}"


def cell(vals: list[float], fmt: str = "{:,.0f}") -> str:
    mean = sum(vals) / len(vals)
    if len(vals) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} [{fmt.format(min(vals))}, {fmt.format(max(vals))}]"


def table(out: Path) -> None:
    """Fig. 9's tables: each variant and policy's mean [min, max] over the seeds per unit,
    and the seeds on which each variant gives the paper's order in each unit."""
    got = read(out)
    if not got:
        return
    keys = [k for k, _ in UNITS]
    print("\n#### Fig. 9: preemptions by counting unit, 300 jobs, 100 edge servers\n")
    print(
        "| variant | policy | seeds | " + " | ".join(keys) + " | untaken | avg wait | edge util |"
    )
    print("| --- " * (len(keys) + 6) + "|")
    for var, text in VARIANTS:
        for pol in POLICIES:
            runs = got.get((var, pol))
            if runs:
                rows = list(runs.values())
                cells = [cell([r[k] for r in rows]) for k in [*keys, "untaken", "avg_wait"]]
                cells.append(cell([r["edge_util"] for r in rows], "{:.2f}"))
                print(f"| {var}: {text} | {pol} | {len(rows)} | {' | '.join(cells)} |")
    print("\n#### Fig. 9: seeds on which SRTF < A_online < A_online-E, by unit\n")
    print("| variant | " + " | ".join(keys) + " |")
    print("| --- " * (len(keys) + 1) + "|")
    for var, text in VARIANTS:
        if any(v == var for v, _ in got):
            print(f"| {var}: {text} | " + " | ".join(in_order(got, var, k) for k in keys) + " |")


@guard
def main(out: Path) -> None:
    need_folder(out, "run.sh's output folder (OUT_DIR)")
    need_some(out.glob("fig9-*-s*/*/events.csv"), out, "fig9-VARIANT-sSEED/POLICY/events.csv")
    table(out)


if __name__ == "__main__":
    main(Path(args(1, "python examples/a-online/preemptions.py OUT_DIR")[0]))
