"""Per-job records, the summary and the manifest of a run, and writing them to a folder.

Definitions (all in seconds of simulated time):

* JCT = finish - submit;
* JCT = W + L + T + P (the Lazer paper's eq. 1), each measured on its own by the kernel:
  W (``wait_s``) the time queued, before the first start and after every preemption
  (the Tiresias simulator's ``pending_time``); L (``load_s``) the time loading after
  each start, futile loads included; T (``train_s``) the time training; P
  (``save_s``) the time pausing and saving after preemptions. The engine checks the
  identity for every finished job;
* futile time (``futile_s``): load time wasted by a preemption that came before the
  job trained anything since its last start (eq. 2); ``futile_gpu_s`` weighs it by the
  job's GPUs;
* makespan = last finish - first submission;
* slowdown (``slowdown_s``): training time beyond the job's duration, i.e. time lost to
  running slower than alone at ideal placement (spread, shared, a smaller sub-batch);
  negative for a job that trained faster than its duration (an elastic job given more
  GPUs than its duration assumes, docs/pollux.md), so
  JCT = ``wait_s`` + ``load_s`` + duration + ``slowdown_s`` + ``save_s``; the summary's
  ``avg_slowdown_s`` and ``total_slowdown_s`` are over finished jobs (in runs of jobs
  made of tasks: the critical chunk's, like the job's other parts, below);
* shared time (``shared_s``): seconds the job trained while another job held one of its
  GPUs; ``shared_gpu_s`` integrates the GPUs holding two or more jobs over the run;
* GPU utilisation = busy GPU-time / (G x makespan), where a GPU is busy while it holds
  at least one job (a GPU holding two jobs is one busy GPU): \\sum_j g_j x (time holding
  GPUs) minus the GPU-time of every job beyond the first on a GPU;
* total JCT = \\sum_j JCT_j (total flow time).

Unfinished jobs (a run stopped by ``--until`` or a trace's horizon) are counted in
``n_unfinished`` and left out of the JCT statistics; their ``finish`` and ``jct`` are
empty in jobs.csv.

Runs of jobs placed by roles (parameter-server jobs on multi-resource machines) add
``n_admitted`` (jobs that ran), ``n_rejected`` (refused by the policy: neither finished
nor unfinished) and ``utilization_<resource>`` (resource-time held / (capacity x
makespan)) for each resource of the ledger but the GPUs, whose figure is
``gpu_utilization`` itself (GPU-time held on the ledger: one figure per resource,
the same in every table, plot and screen); jobs.csv gains ``status``. A job model adds
its own keys through its ``summary`` hook (:func:`gpusched.core.jobmodel.summaries`), e.g.
the PD-ORS family's ``total_utility``.
A policy adds its own through an optional ``summary()`` method (after the others, replacing
none), e.g. ``prediction`` for the A-SRPT family's predictor policies: the accuracy of
their job-length predictor (:func:`gpusched.algorithms.predict.prediction_report`), a
nested object; tables of runs (comparison.csv, a sweep's results.csv) flatten nested keys
with dots (:func:`flat_summary`), e.g. ``prediction.forest.within_10pct``.

Runs of jobs made of tasks (data chunks on typed workers, :mod:`gpusched.core.tasks`) report
per *job*: a job finishes with its last chunk, so its JCT is that chunk's, and its wait,
load (data shipping while holding a worker), train and save columns are that critical
chunk's (JCT = W + L + T + P still holds); ``preemptions`` add up its chunks';
``slowdown_s`` is the critical chunk's (so JCT = wait + load + that chunk's duration + slowdown
+ save); ``comm_s`` is the time all its chunks lost to worker-PS communication; ``tier`` says where
its chunks ran. tasks.csv keeps one record per chunk (with its job and worker). The
summary's statistics are over jobs; ``gpu_utilization`` is the edge workers' (busy
worker-time / (edge workers x makespan)); the cloud's busy worker-time is
``cloud_worker_s``, ``mean_busy_cloud`` that over the makespan, and a bounded cloud adds
``cloud_utilization`` (over its workers x makespan); ``n_preemptions`` counts chunk
preemptions, ``n_migrations`` and ``migrate_s`` the moves of policies that migrate and their
transmission time.
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from gpusched import __version__
from gpusched.core.result import RunResult
from gpusched.core.state import F_EXTRA_GPU_S, F_SHARED_GPU_S, FINISHED, REJECTED
from gpusched.errors import PolicyError
from gpusched.io.tables import table_name, write_table
from gpusched.io.trace import trace_sha256

SUMMARY_KEYS = (
    "n_jobs",
    "n_finished",
    "n_unfinished",
    "stopped_at_s",
    "avg_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "avg_wait_s",
    "p50_wait_s",
    "p95_wait_s",
    "avg_slowdown_s",
    "total_jct_s",
    "makespan_s",
    "gpu_utilization",
    "n_preemptions",
    "n_futile_preemptions",
    "futile_preemption_s",
    "p50_futile_s",
    "p95_futile_s",
    "futile_gpu_s",
    "shared_gpu_s",
    "total_wait_s",
    "total_load_s",
    "total_train_s",
    "total_save_s",
    "total_slowdown_s",
    "n_decisions",
    "sched_delay_ms_avg",
    "sched_delay_ms_p95",
    "wall_s",
)

#: the columns every row of a sweep's results table starts with, before the parameter
#: columns and the summary metrics (:mod:`gpusched.experiments.sweep`)
FIXED_COLUMNS = ("cell", "status", "trace", "cluster", "policy", "params", "seed")


def param_column(key: str, metrics: Iterable[str] = ()) -> str:
    """The sweep results column of policy parameter ``key`` (``param_<key>`` where the name
    is taken by a fixed column, a summary metric, one of ``metrics`` (the other columns the
    table holds: a job model's or a policy's own) or ``error``)."""
    reserved = set(FIXED_COLUMNS) | set(SUMMARY_KEYS) | set(metrics) | {"error"}
    return f"param_{key}" if key in reserved else key


def job_records(res: RunResult) -> dict[str, np.ndarray]:
    """Per-job columns of jobs.csv, in submission order (jobs made of tasks: per job, see
    the module docstring; :func:`task_records` has the chunks)."""
    if "tasks" in res.extra:
        return _parent_records(res)
    return task_records(res)


def task_records(res: RunResult) -> dict[str, np.ndarray]:
    """Per-row columns: per job, or per task of jobs made of tasks (tasks.csv).

    A finished job's JCT splits into waiting, loading, training and pause-and-save time
    (Lazer paper, eq. 1: JCT = W + L + T + P): ``wait_s + load_s + train_s + save_s``;
    ``futile_s`` is the part of ``load_s`` wasted by futile preemptions (``n_futile``).
    """
    st = res.state
    done = st.job_status == FINISHED
    jct = np.where(done, st.job_finish - st.job_submit, np.nan)
    return {
        "job_id": res.jobs.job_id,
        "submit": st.job_submit,
        "first_start": st.job_first_start,
        "finish": st.job_finish,
        "jct": jct,
        "wait_s": np.where(done, st.job_wait_s, np.nan),
        "gpus": np.asarray(res.jobs.n_gpus),  # asked for (an elastic job's vary)
        "duration": st.job_work,
        "preemptions": st.job_n_preempt,
        "load_s": st.job_load_spent_s,
        "train_s": st.job_executed,
        "save_s": st.job_save_spent_s,
        "futile_s": st.job_futile_s,
        "n_futile": st.job_n_futile,
        "slowdown_s": np.where(done, _slowdown(st.job_executed, st.job_work), np.nan),
        "shared_s": st.job_shared_s,
        **_role_records(res),
        **_task_columns(res),
    }


def _task_columns(res: RunResult) -> dict[str, np.ndarray]:
    """tasks.csv's extra columns: each task's job, worker and tier."""
    info = res.extra.get("tasks")
    if info is None:
        return {}
    return {
        "job": np.asarray(info["parents"].job_id)[info["parent"]],
        "worker": info["worker"],
        "cloud": info["cloud"].astype(np.int8),
        "transfer_s": info["transfer_s"],
    }


def _parent_records(res: RunResult) -> dict[str, np.ndarray]:
    """Per-job records of jobs made of tasks: each job's last chunk decides (module doc)."""
    st = res.state
    info = res.extra["tasks"]
    parent, first = info["parent"], info["first"]
    parents = info["parents"]
    starts = first[:-1]
    n = len(parents)
    if n == 0:
        return {"job_id": parents.job_id, "submit": parents.submit_s}
    finish = np.maximum.reduceat(st.job_finish, starts)  # NaN unless every chunk finished
    order = np.lexsort((np.nan_to_num(st.job_finish, nan=np.inf), parent))
    crit = order[first[1:] - 1]  # each job's last-finishing chunk
    done = ~np.isnan(finish)
    submit = np.asarray(parents.submit_s, dtype=np.float64)
    cloud = info["cloud"].astype(np.int64)
    n_cloud = np.add.reduceat(cloud, starts)
    chunks = np.diff(first)
    tier = np.where(n_cloud == 0, "edge", np.where(n_cloud == chunks, "cloud", "both"))
    lost = _slowdown(st.job_executed, st.job_work).clip(min=0)

    def crit_of(a: np.ndarray) -> np.ndarray:
        return np.where(done, a[crit], np.nan)

    return {
        "job_id": parents.job_id,
        "submit": submit,
        "first_start": np.fmin.reduceat(st.job_first_start, starts),
        "finish": finish,
        "jct": finish - submit,
        "wait_s": crit_of(st.job_wait_s),
        "chunks": chunks,
        "duration": np.asarray(parents.work_s, dtype=np.float64),
        "preemptions": np.add.reduceat(st.job_n_preempt, starts),
        "load_s": crit_of(st.job_load_spent_s),
        "train_s": crit_of(st.job_executed),
        "save_s": crit_of(st.job_save_spent_s),
        "slowdown_s": crit_of(_slowdown(st.job_executed, st.job_work)),
        "comm_s": np.add.reduceat(lost, starts),
        "transfer_s": crit_of(info["transfer_s"]),
        "tier": tier.astype(object),
        "cloud_chunks": n_cloud,
    }


def _task_summary(res: RunResult) -> dict[str, Any]:
    """The summary's keys for jobs made of tasks: statistics over jobs (module doc)."""
    info = res.extra.get("tasks")
    if info is None:
        return {}
    st = res.state
    rec = _parent_records(res)
    n = len(info["parents"])
    done = ~np.isnan(rec["finish"]) if n else np.zeros(0, dtype=bool)
    jct = rec["jct"][done] if n else np.zeros(0)
    wait = rec["wait_s"][done] if n else np.zeros(0)
    slow = rec["slowdown_s"][done] if n else np.zeros(0)
    end = float(np.nanmax(rec["finish"])) if done.any() else float(st.sim_f[0])
    if res.stopped_at is not None:
        end = res.stopped_at
    makespan = max(end - float(rec["submit"][0]), 0.0) if n else 0.0
    holding = st.job_executed + st.job_load_spent_s + st.job_save_spent_s
    cloud = info["cloud"]
    n_edge = info["n_edge_workers"]
    edge_s = float(holding[~cloud].sum())
    return {
        "n_jobs": n,
        "n_finished": int(done.sum()),
        "n_unfinished": int(n - done.sum()),
        **_jct_stats(jct, wait, slow),
        "makespan_s": makespan,
        "gpu_utilization": edge_s / (n_edge * makespan) if n_edge and makespan > 0 else 0.0,
        "total_wait_s": float(wait.sum()),
        "total_slowdown_s": float(slow.sum()),
        "n_tasks": int(len(res.jobs)),
        "n_cloud_jobs": int((rec["tier"] == "cloud").sum()) if n else 0,
        "n_cloud_chunks": int(cloud.sum()),
        "cloud_worker_s": float(holding[cloud].sum()),
        **_cloud_use(float(holding[cloud].sum()), info.get("n_cloud_workers", 0), makespan),
        "ps_held_s": info["ps_held_s"],
        "total_transfer_s": float(info["transfer_s"].sum()),
        "n_migrations": int(info["n_migrations"].sum()) if "n_migrations" in info else 0,
        "migrate_s": float(info["migrate_s"].sum()) if "migrate_s" in info else 0.0,
    }


def _cloud_use(cloud_s: float, n_cloud: int, makespan: float) -> dict[str, float]:
    """The cloud's use: mean busy cloud workers over the makespan, and for a bounded cloud
    (``n_cloud`` workers) its utilisation, that over ``n_cloud``."""
    busy = cloud_s / makespan if makespan > 0 else 0.0
    out = {"mean_busy_cloud": busy}
    if n_cloud:
        out["cloud_utilization"] = busy / n_cloud
    return out


def _role_records(res: RunResult) -> dict[str, np.ndarray]:
    """jobs.csv's extra columns in a run of jobs placed by roles: the status."""
    if "ledger" not in res.extra:
        return {}
    from gpusched.core.state import STATUS_NAMES

    names = np.asarray(STATUS_NAMES, dtype=object)
    return {"status": names[res.state.job_status]}


def _role_summary(res: RunResult, makespan: float, gpu_util: float) -> dict[str, Any]:
    """Admission and per-resource utilisation of a run of jobs placed by roles.

    One figure per resource: the GPUs' is ``gpu_utilization`` (GPU-time held on the ledger
    over G x makespan, replacing the index-based figure ``gpu_util``, 0 for jobs that hold
    no GPU indices), the others' ``utilization_<resource>``."""
    led = res.extra.get("ledger")
    if led is None:
        return {}
    st = res.state
    out: dict[str, Any] = {
        "n_admitted": int((~np.isnan(st.job_first_start)).sum()),
        "n_rejected": int((st.job_status == REJECTED).sum()),
    }
    for name, held, cap in zip(led["resources"], led["held_s"], led["capacity"], strict=True):
        value = held / (cap * makespan) if cap > 0 and makespan > 0 else 0.0
        out["gpu_utilization" if name == "gpus" else f"utilization_{name}"] = value
    out.setdefault("gpu_utilization", gpu_util)
    return out


def _slowdown(executed: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Training time beyond the duration, s; float noise of a job at rate 1 reads 0."""
    lost = executed - work
    return np.where(np.abs(lost) <= 1e-9 * work, 0.0, lost)


def _pct(a: np.ndarray, q: float) -> float | None:
    return _pcts(a, (q,))[0]


def _pcts(a: np.ndarray, qs: tuple[float, ...]) -> list[float | None]:
    """``[float(np.percentile(a, q)) for q in qs]`` (None for an empty ``a``), from one
    partition of ``a``.

    NumPy's "linear" method, step for step and so to the same bits: the virtual index
    ``(n - 1) * (q / 100)``, its floor ``i`` (the last element from ``n - 1`` on), weight
    ``g`` = the index minus ``i``, and ``x[i] + (x[i+1] - x[i]) * g``, or
    ``x[i+1] - (x[i+1] - x[i]) * (1 - g)`` when ``g >= 0.5``. Done here because
    ``np.percentile`` imports ``numpy.ma`` (about 10 ms of a small run) to pick its
    partition points. Arrays that are not plain float64 vectors without NaN go to NumPy.
    """
    n = a.size
    if not n:
        return [None] * len(qs)
    if a.dtype != np.float64 or a.ndim != 1 or np.isnan(a).any():
        return [float(v) for v in np.percentile(a, qs)]
    idx = [(n - 1) * (q / 100) for q in qs]
    low = [n - 1 if v >= n - 1 else math.floor(v) for v in idx]
    x = np.partition(a, sorted({0, n - 1, *low, *(min(i + 1, n - 1) for i in low)}))
    out: list[float | None] = []
    for v, i in zip(idx, low, strict=True):
        if v >= n - 1:  # NumPy's index -1 on both sides, weight v + 1
            lo = hi = x[n - 1]
            g = v + 1
        else:
            lo, hi = x[i], x[i + 1]
            g = v - i
        diff = hi - lo
        out.append(float(hi - diff * (1 - g) if g >= 0.5 else lo + diff * g))
    return out


def _mean(a: np.ndarray) -> float | None:
    return float(a.mean()) if a.size else None


def _jct_stats(jct: np.ndarray, wait: np.ndarray, slowdown: np.ndarray) -> dict[str, Any]:
    """The summary's JCT, waiting and slowdown statistics of the finished jobs (in
    SUMMARY_KEYS order)."""
    p50, p95, p99 = _pcts(jct, (50, 95, 99))
    w50, w95 = _pcts(wait, (50, 95))
    return {
        "avg_jct_s": _mean(jct),
        "p50_jct_s": p50,
        "p95_jct_s": p95,
        "p99_jct_s": p99,
        "avg_wait_s": _mean(wait),
        "p50_wait_s": w50,
        "p95_wait_s": w95,
        "avg_slowdown_s": _mean(slowdown),
        "total_jct_s": float(jct.sum()),
    }


def flat_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with nested objects spread into dotted keys, for one row of a table.

    ``{"prediction": {"forest": {"within_10pct": 0.1}}}`` becomes
    ``{"prediction.forest.within_10pct": 0.1}``; scalar keys are kept as they are.
    """
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            for sub, v in flat_summary(value).items():
                out[f"{key}.{sub}"] = v
        else:
            out[key] = value
    return out


def summarize(res: RunResult) -> dict[str, Any]:
    """The summary.json dictionary of a run (see the module docstring for definitions)."""
    st = res.state
    rec = task_records(res)  # per row: jobs made of tasks are summed up by _task_summary
    done = st.job_status == FINISHED
    jct = rec["jct"][done]
    wait = rec["wait_s"][done]
    slow = rec["slowdown_s"][done]
    futile = st.job_futile_s[done]
    n = len(res.jobs)
    if n:
        end = float(np.nanmax(st.job_finish)) if done.any() else float(st.sim_f[0])
        if res.stopped_at is not None:
            end = res.stopped_at
        makespan = max(end - float(st.job_submit[0]), 0.0)
    else:
        makespan = 0.0
    holding = st.job_executed + st.job_load_spent_s + st.job_save_spent_s
    held = res.extra.get("held_gpu_s")  # elastic gangs: their sizes varied from stint to stint
    held_gpu_s = float((holding * st.job_n_gpus).sum()) if held is None else float(held.sum())
    busy_gpu_s = held_gpu_s - float(st.sim_f[F_EXTRA_GPU_S])
    util = busy_gpu_s / (res.cluster.n_gpus * makespan) if makespan > 0 else 0.0
    delays = res.sched_delay_s
    rejected = int((st.job_status == REJECTED).sum())
    f50, f95 = _pcts(futile, (50, 95))
    from gpusched.core import jobmodel

    out: dict[str, Any] = {
        "n_jobs": n,
        "n_finished": int(done.sum()),
        "n_unfinished": int(n - done.sum()) - rejected,
        "stopped_at_s": res.stopped_at,
        **_jct_stats(jct, wait, slow),
        "makespan_s": makespan,
        "gpu_utilization": util,
        "n_preemptions": int(st.job_n_preempt.sum()),
        "n_futile_preemptions": int(st.job_n_futile.sum()),
        "futile_preemption_s": float(st.job_futile_s.sum()),
        "p50_futile_s": f50,
        "p95_futile_s": f95,
        "futile_gpu_s": float((st.job_futile_s * st.job_n_gpus).sum()),
        "shared_gpu_s": float(st.sim_f[F_SHARED_GPU_S]),
        "total_wait_s": float(wait.sum()),
        "total_load_s": float(st.job_load_spent_s[done].sum()),
        "total_train_s": float(st.job_executed[done].sum()),
        "total_save_s": float(st.job_save_spent_s[done].sum()),
        "total_slowdown_s": float(slow.sum()),
        "n_decisions": int(res.extra.get("n_decisions", 0)),
        "sched_delay_ms_avg": _mean(delays * 1e3) if delays is not None else None,
        "sched_delay_ms_p95": _pct(delays * 1e3, 95) if delays is not None else None,
        "wall_s": res.wall_s,
        **_role_summary(res, makespan, util),
        **jobmodel.summaries(res),
        **_task_summary(res),
    }
    for key, value in res.extra.get("policy_summary", {}).items():
        if key in out:  # the policy's tables replace none of the above
            raise PolicyError(
                f"policy '{res.policy_name}': summary() names a table {key!r}, which "
                "gpusched's own summary has; give it another name (the policy's, say)"
            )
        out[key] = value
    return out


def installed_version(name: str) -> str:
    """The installed version of distribution ``name``, as ``importlib.metadata.version``
    gives it, without importing the package: the name of its one ``.dist-info`` folder
    beside it (a small run never imports Numba, and ``importlib.metadata`` costs 20 ms);
    ``importlib.metadata`` when that folder is not found."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = list(site.glob(f"{name}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(name) + 1 : -len(".dist-info")]
    from importlib.metadata import version

    return version(name)


def policy_notes(res: RunResult) -> list[str]:
    """The policy's own notes on the run (its ``notes()`` hook), each as
    ``"<policy>: <note>"``."""
    return [f"{res.policy_name}: {n}" for n in res.extra.get("policy_notes", ())]


def manifest(
    res: RunResult,
    trace_path: str | None,
    notes: tuple[str, ...] = (),
    tables: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What produced a run: trace hash, cluster, policy and parameters, seed, versions, and
    (``tables``) each table's file name with its row count and SHA-256
    (:func:`gpusched.io.runfolder.table_record`), which readers check.

    Not which form of the kernels ran (interpreted or compiled, chosen by timing): both give
    the same schedule bit for bit, and the same run must leave the same manifest."""
    sha = None
    if trace_path and Path(trace_path).is_file():
        sha = trace_sha256(trace_path)
    out = {
        "trace": trace_path,
        "trace_sha256": sha,
        "n_dropped_oversized": res.jobs.n_dropped,
        "cluster": res.cluster.as_dict(),
        "policy": res.policy_name,
        "params": res.params,
        "seed": res.seed,
        "slot_s": res.slot_s,
        "engine_mode": res.mode,
        "perf_model": res.extra.get("perf"),
        "stopped_at_s": res.stopped_at,
        "notes": list(res.jobs.notes) + policy_notes(res) + list(notes),
        "versions": {
            "gpusched": __version__,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": installed_version("numba"),
        },
    }
    if tables is not None:
        out["tables"] = tables
    return out


def write_results(
    res: RunResult, out: str | Path, trace_path: str | None = None, fmt: str = "csv"
) -> dict[str, Any]:
    """Write jobs, timeline, summary.json and manifest.json into the new folder ``out``
    (and tasks, events when the run has them); return the summary.

    ``out`` is a fresh folder (a transaction's staging folder,
    :class:`gpusched.io.runfolder.FolderTransaction`): every file is created exclusively,
    never through an existing file or link. The tables are ``jobs.csv`` and so on with
    ``fmt="csv"``, ``jobs.parquet`` and so on with ``fmt="parquet"``
    (:mod:`gpusched.io.tables`); manifest.json, written last, records each one's rows
    and SHA-256.
    """
    from gpusched.io.runfolder import create_exclusive, table_record

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables: dict[str, dict[str, Any]] = {}

    def put(stem: str, columns: Any) -> None:
        name = table_name(stem, fmt)
        write_table(out / name, columns, fmt, exclusive=True)
        first = next(iter(columns.values()), ())
        tables[name] = table_record(out / name, len(first))

    put("jobs", job_records(res))
    if "tasks" in res.extra:
        put("tasks", task_records(res))
    put("timeline", res.timeline)
    if "events" in res.extra:
        put("events", res.extra["events"])
    summary = summarize(res)
    with create_exclusive(out / "summary.json", text=True) as fh:
        fh.write(json.dumps(summary, indent=2) + "\n")
    with create_exclusive(out / "manifest.json", text=True) as fh:
        fh.write(json.dumps(manifest(res, trace_path, tables=tables), indent=2, default=str) + "\n")
    return summary
