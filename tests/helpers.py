"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, parse_params
from gpusched.core.registry import available_policies, load_policy_class, make_policy
from gpusched.core.result import RunResult
from gpusched.io.cluster import ClusterSpec
from gpusched.io.trace import Trace


def make_trace(
    rows: list[tuple[float, int, float]],
    source: str = "test",
    *,
    models: list[str] | None = None,
    iterations: np.ndarray | None = None,
    extra: dict[str, Any] | None = None,
) -> Trace:
    """A trace from (submit s, GPUs, duration s) rows; job ids are j0, j1, ...

    ``models``, ``iterations`` and ``extra`` columns default to empty / NaN / none.
    """
    n = len(rows)
    return Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[r[0] for r in rows],
        num_gpus=[r[1] for r in rows],
        duration=[r[2] for r in rows],
        iterations=iterations if iterations is not None else np.full(n, np.nan),
        model=models or [""] * n,
        extra=extra or {},
        source=source,
    )


def run(
    rows: list[tuple[float, int, float]],
    policy: str,
    servers: int = 1,
    gpus: int = 4,
    *,
    params: list[str] | None = None,
    slot: float = 1.0,
    mode: str = "auto",
    seed: int = 0,
    **cluster_kw: Any,
) -> RunResult:
    """Replay ``rows`` on a homogeneous cluster under ``policy``."""
    cluster = ClusterSpec.homogeneous(servers, gpus, **cluster_kw)
    cls = load_policy_class(policy)
    kwargs = parse_params(cls, params or [])
    jobs = prepare_jobs(make_trace(rows), cluster)
    return Engine(jobs, cluster, make_policy(cls, kwargs, seed), slot_s=slot, mode=mode).run()


ALL_POLICIES = sorted(available_policies())
#: policies that place jobs by roles (parameter-server jobs on the resource ledger) and
#: those that place gangs on GPU indices: a run holds one kind of job only
ROLE_POLICIES = [p for p in ALL_POLICIES if getattr(load_policy_class(p), "places_roles", False)]
#: policies that run jobs made of data chunks (srtf runs both those and gangs)
TASK_POLICIES = [p for p in ALL_POLICIES if getattr(load_policy_class(p), "runs_tasks", False)]
_TASK_ONLY = [p for p in TASK_POLICIES if getattr(load_policy_class(p), "needs_tasks", False)]
#: policies whose jobs follow one job model (Pollux and Optimus: goodput jobs, which the
#: small generic traces are not)
MODEL_POLICIES = [p for p in ALL_POLICIES if getattr(load_policy_class(p), "job_model", None)]
GANG_POLICIES = [
    p
    for p in ALL_POLICIES
    if p not in ROLE_POLICIES and p not in _TASK_ONLY and p not in MODEL_POLICIES
]


class Scripted:
    """A gang policy that returns the decisions it is given, one per call (then empty ones)."""

    name = "scripted"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, decisions: Any) -> None:
        self.decisions = list(decisions)

    def decide(self, view: Any, now: float) -> Decision:
        return self.decisions.pop(0) if self.decisions else Decision()


def brute_force_mapping(spec: Any, free: np.ndarray, nic: float, intra: float, g: int) -> float:
    """The smallest eq. (7) time over every placement of each stage's replicas on servers
    with ``free`` GPUs (the exact answer the MILP of Heavy-Edge's Table II must find)."""
    import itertools

    from gpusched.jobmodels.pipeline import iteration_time

    per_stage = [
        [c for c in itertools.product(range(int(k) + 1), repeat=len(free)) if sum(c) == k]
        for k in spec.replicas
    ]
    best = np.inf
    for combo in itertools.product(*per_stage):
        x = np.array(combo).T
        if (x.sum(axis=1) <= free).all():
            best = min(best, iteration_time(spec, x, nic, intra, g))
    return float(best)


def seal(folder: Any, **fields: Any) -> Any:
    """Record ``folder``'s tables in its manifest.json as a run would (rows and SHA-256),
    creating the manifest if missing: a hand-made or deliberately damaged run folder that
    readers take as complete, so that their checks of each field are what is tested.
    ``fields`` are set in the manifest (e.g. ``policy``, ``trace_sha256``)."""
    import json
    from pathlib import Path

    from gpusched.errors import GpuschedError
    from gpusched.io.runfolder import table_record
    from gpusched.io.tables import parquet_columns

    folder = Path(folder)
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text()) if path.is_file() else {}
    tables = {}
    for stem in ("jobs", "timeline", "tasks", "events"):
        for fmt in ("csv", "parquet"):
            table = folder / f"{stem}.{fmt}"
            if not table.is_file():
                continue
            if fmt == "csv":
                import csv

                with table.open(newline="", encoding="utf-8", errors="replace") as fh:
                    rows = max(sum(1 for _ in csv.reader(fh)) - 1, 0)
            else:
                try:
                    cols = parquet_columns(table)[1]
                except GpuschedError:  # a damaged table: its rows cannot be counted
                    cols = []
                rows = len(cols[0]) if cols else 0
            tables[table.name] = table_record(table, rows)
    manifest["tables"] = tables
    manifest.update(fields)
    path.write_text(json.dumps(manifest))
    return folder


def invoke(*args: object) -> Any:
    """The command line run in this process on ``args`` (each made a string)."""
    from typer.testing import CliRunner

    from gpusched.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(result: Any, *needles: str) -> str:
    """The one line ``error: ...`` of a command that failed on a user mistake (exit 2, no
    traceback), holding every one of ``needles``."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    line = result.output.strip()
    assert line.startswith("error: ") and len(line.splitlines()) == 1, line
    for needle in needles:
        assert needle in line, line
    return line


def assert_same_run(a: Any, b: Any) -> None:
    """Two RunResults end with the same state and timeline, bit for bit."""
    for name, x, y in zip(a.state._fields, a.state, b.state, strict=True):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert a.timeline.keys() == b.timeline.keys()
    for key in a.timeline:
        assert a.timeline[key].tobytes() == b.timeline[key].tobytes(), key


def run_workload(
    policy: str, w: Any, ph: Any, mode: str, kernels: str, params: dict[str, Any] | None = None
) -> tuple[Engine, RunResult]:
    """Run a hypothesis workload ``w`` (servers, GPUs, rows, slot) with load and save times
    ``ph`` under ``policy`` on engine path ``mode`` and ``kernels``: the engine and its result."""
    servers, gpus, rows, slot = w
    n = len(rows)
    cluster = ClusterSpec.homogeneous(servers, gpus)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = make_policy(load_policy_class(policy), params or {}, 0)
    eng = Engine(
        jobs,
        cluster,
        pol,
        slot_s=slot,
        mode=mode,
        load_s=ph[0][:n],
        save_s=ph[1][:n],
        kernels=kernels,
    )
    return eng, eng.run()


def write_gang_csv(path: Any, n: int, gap_s: int, seed: int = 1) -> None:
    """A trace of ``n`` gang jobs, one every ``gap_s`` s, of 1, 2 or 4 GPUs and exponential
    durations (mean 600 s), as a user's CSV."""
    rng = np.random.default_rng(seed)
    gpus, work = rng.choice([1, 2, 4], n), rng.exponential(600, n)
    lines = ["job_id,submit_time,num_gpus,duration"]
    lines += [
        f"j{i},{i * gap_s},{int(g)},{int(d) + 1}"
        for i, (g, d) in enumerate(zip(gpus, work, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
