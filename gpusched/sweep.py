"""Parameter sweeps: a grid of traces x clusters x policies x parameters x seeds on Dask.

A sweep is described by a TOML spec (see ``docs/sweeps.md`` and ``examples/sweep.toml``)::

    traces = ["tiny", "traces/synth-500.csv"]
    clusters = ["default", "testbed-4x4"]
    policies = ["fifo", "tiresias"]
    seeds = [0, 1]
    slot = 1.0            # optional scalar, seconds
    out = "sweep-out"     # optional; the CLI's --out overrides it

    [params.fifo]
    backfill = [false, true]

Every combination is one *cell*, run as one Dask task by :func:`run_cell`, which calls
:func:`gpusched.run.replay` with ``out=`` a staging folder and then moves the files into
``OUT/cells/<cell id>/``, ``summary.json`` last with an atomic :func:`os.replace`. A cell is
finished when its ``summary.json`` exists, so a re-run skips finished cells and runs only
the missing or failed ones. A failing cell is recorded with its error (``error.txt`` in its
folder and the ``error`` column of the table) and does not stop the others. At the end the
rows of every cell, finished before or now, are gathered into ``OUT/results.csv`` (and
``OUT/results.parquet`` when pyarrow is installed): one row per cell, its parameters plus
every summary metric.

Dask and pyarrow are imported inside the functions that need them, so importing this
module (and ``gpusched --help``) stays fast.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import shutil
import time
import tomllib
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusched.errors import GpuschedError

__all__ = [
    "Cell",
    "SweepResult",
    "SweepSpec",
    "cells",
    "load_spec",
    "parse_spec",
    "plan",
    "run_cell",
    "run_sweep",
    "write_table",
]

#: the columns every results row starts with, before the parameter columns
FIXED_COLUMNS = ("cell", "status", "trace", "cluster", "policy", "params", "seed")
RESULTS_CSV = "results.csv"
RESULTS_PARQUET = "results.parquet"
CELLS_DIR = "cells"
STAGING_DIR = ".staging"
#: seconds to wait for a ``--scheduler`` address to answer
CONNECT_TIMEOUT_S = 10.0

_TOP_KEYS = {
    "traces",
    "clusters",
    "policies",
    "seeds",
    "params",
    "slot",
    "out",
    "until",
    "drop_oversized",
}
Scalar = str | int | float | bool


# --- the spec ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """A parsed sweep spec.

    Attributes
    ----------
    traces, clusters, policies
        Entries as written in the spec (trace names or paths, cluster names or paths,
        policy specs ``NAME[:key=value,...]`` or ``.py`` paths).
    seeds
        Seeds for the policies' random numbers.
    params
        ``{policy entry: {parameter: [values]}}``; every combination is a cell.
    slot_s
        Slot length in seconds.
    out
        Output folder from the spec, or None.
    until_s
        Stop every replay at this simulated time (s), or None.
    drop_oversized
        Skip jobs needing more GPUs than the cluster has instead of failing the cell.
    base_dir
        Folder that relative input paths are looked up in first (the spec file's folder).
    """

    traces: tuple[str, ...]
    clusters: tuple[str, ...] = ("default",)
    policies: tuple[str, ...] = ("fifo",)
    seeds: tuple[int, ...] = (0,)
    params: dict[str, dict[str, tuple[Scalar, ...]]] = field(default_factory=dict)
    slot_s: float = 1.0
    out: str | None = None
    until_s: float | None = None
    drop_oversized: bool = False
    base_dir: str | None = None


def _str_list(
    data: dict[str, Any], key: str, source: str, default: tuple[str, ...] | None
) -> tuple[str, ...]:
    if key not in data:
        if default is None:
            raise GpuschedError(f"{source}: '{key}' is required (a list of strings)")
        return default
    value = data[key]
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise GpuschedError(f"{source}: '{key}' must be a non-empty list of strings, got {value!r}")
    if len(set(value)) != len(value):
        raise GpuschedError(f"{source}: '{key}' lists an entry twice: {value!r}")
    return tuple(v.strip() for v in value)


def parse_spec(
    text: str, source: str = "<string>", base_dir: str | Path | None = None
) -> SweepSpec:
    """Parse and validate a sweep spec given as TOML text.

    Parameters
    ----------
    text
        The TOML document.
    source
        Name used in error messages (the file name).
    base_dir
        Folder relative input paths are looked up in first (default: the current folder).

    Raises
    ------
    GpuschedError
        Malformed TOML, an unknown key, a missing list, a value of the wrong type, or
        ``[params.X]`` for an ``X`` that ``policies`` does not list.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuschedError(f"{source}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise GpuschedError(
            f"{source}: unknown key(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(sorted(_TOP_KEYS))})"
        )
    traces = _str_list(data, "traces", source, None)
    clusters = _str_list(data, "clusters", source, ("default",))
    policies = _str_list(data, "policies", source, None)
    seeds_raw = data.get("seeds", [0])
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool):
        seeds_raw = [seeds_raw]
    if (
        not isinstance(seeds_raw, list)
        or not seeds_raw
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds_raw)
    ):
        raise GpuschedError(
            f"{source}: 'seeds' must be a non-empty list of integers, got {seeds_raw!r}"
        )
    if len(set(seeds_raw)) != len(seeds_raw):
        raise GpuschedError(f"{source}: 'seeds' lists a seed twice: {seeds_raw!r}")

    params_raw = data.get("params", {})
    if not isinstance(params_raw, dict):
        raise GpuschedError(
            f"{source}: 'params' must be tables [params.<policy>], got {params_raw!r}"
        )
    params: dict[str, dict[str, tuple[Scalar, ...]]] = {}
    for pol, table in params_raw.items():
        if pol not in policies:
            raise GpuschedError(
                f"{source}: [params.{pol}] names a policy that 'policies' does not list "
                f"({', '.join(policies)})"
            )
        if not isinstance(table, dict):
            raise GpuschedError(f"{source}: [params.{pol}] must be a table of parameter lists")
        grid: dict[str, tuple[Scalar, ...]] = {}
        for key, values in table.items():
            if not isinstance(values, list):
                values = [values]
            if not values or not all(isinstance(v, str | int | float | bool) for v in values):
                raise GpuschedError(
                    f"{source}: [params.{pol}] {key} must be a non-empty list of strings, "
                    f"numbers or booleans, got {values!r}"
                )
            grid[key] = tuple(values)
        params[pol] = grid

    slot = data.get("slot", 1.0)
    if (
        isinstance(slot, bool)
        or not isinstance(slot, int | float)
        or not (slot > 0 and math.isfinite(slot))
    ):
        raise GpuschedError(f"{source}: 'slot' must be a positive number of seconds, got {slot!r}")
    out = data.get("out")
    if out is not None and (not isinstance(out, str) or not out.strip()):
        raise GpuschedError(f"{source}: 'out' must be a folder path, got {out!r}")
    until = data.get("until")
    if until is not None and (isinstance(until, bool) or not isinstance(until, int | float)):
        raise GpuschedError(f"{source}: 'until' must be a number of seconds, got {until!r}")
    drop = data.get("drop_oversized", False)
    if not isinstance(drop, bool):
        raise GpuschedError(f"{source}: 'drop_oversized' must be true or false, got {drop!r}")
    return SweepSpec(
        traces=traces,
        clusters=clusters,
        policies=policies,
        seeds=tuple(seeds_raw),
        params=params,
        slot_s=float(slot),
        out=out,
        until_s=None if until is None else float(until),
        drop_oversized=drop,
        base_dir=None if base_dir is None else str(Path(base_dir).resolve()),
    )


def load_spec(path: str | Path) -> SweepSpec:
    """Read a sweep spec file (TOML); relative input paths in it are looked up next to it first.

    Raises
    ------
    GpuschedError
        The file is missing or the spec is invalid (see :func:`parse_spec`).
    """
    p = Path(path)
    if not p.is_file():
        raise GpuschedError(f"sweep spec not found: {path}")
    return parse_spec(p.read_text(), str(path), p.parent)


# --- cells ------------------------------------------------------------------------------


def _param_text(value: Scalar) -> str:
    """A TOML value as ``-p key=value`` text (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _resolve_input(entry: str, base_dir: str | None) -> str:
    """An absolute path if ``entry`` names an existing file, else ``entry`` (a bundled name)."""
    candidates = [Path(base_dir) / entry] if base_dir else []
    candidates.append(Path(entry))
    for c in candidates:
        if c.is_file():
            return str(c.resolve())
    return entry


def _policy_input(entry: str, base_dir: str | None) -> str:
    name, sep, rest = entry.partition(":")
    if name.endswith(".py"):
        return _resolve_input(name, base_dir) + sep + rest
    return entry


def _slug(text: str) -> str:
    stem = Path(text).name
    for suffix in (".gz", ".csv", ".toml", ".py"):
        stem = stem.removesuffix(suffix)
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", stem).strip("_") or "x"


@dataclass(frozen=True, slots=True)
class Cell:
    """One point of the grid: what :func:`run_cell` replays.

    ``trace``, ``cluster`` and ``policy`` are the spec entries as written (used in the
    results table and the cell id); the ``*_input`` fields are what is passed to
    :func:`~gpusched.run.replay` (absolute paths for files found on disk).
    """

    index: int
    trace: str
    cluster: str
    policy: str
    params: tuple[tuple[str, Scalar], ...]
    seed: int
    slot_s: float
    until_s: float | None
    drop_oversized: bool
    trace_input: str
    cluster_input: str
    policy_input: str

    @property
    def param_pairs(self) -> list[str]:
        """``["key=value", ...]`` as given to ``replay(params=...)``."""
        return [f"{k}={_param_text(v)}" for k, v in self.params]

    @property
    def params_text(self) -> str:
        """The parameters on one line (``key=value key=value``), empty when none."""
        return " ".join(self.param_pairs)

    @property
    def cell_id(self) -> str:
        """A folder name: readable parts plus a hash of everything that shapes the result."""
        key = json.dumps(
            [
                self.trace,
                self.cluster,
                self.policy,
                self.param_pairs,
                self.seed,
                self.slot_s,
                self.until_s,
                self.drop_oversized,
            ],
        )
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        parts = [_slug(self.trace), _slug(self.cluster), _slug(self.policy)]
        parts += [_slug(p) for p in self.param_pairs]
        parts.append(f"s{self.seed}")
        readable = "_".join(parts)[:120]
        return f"{readable}-{digest}"

    def describe(self) -> str:
        """The cell's parameters on one line, for progress and error reports."""
        text = f"trace={self.trace} cluster={self.cluster} policy={self.policy}"
        if self.params:
            text += " " + self.params_text
        return text + f" seed={self.seed}"


def cells(spec: SweepSpec) -> list[Cell]:
    """Every cell of the grid, in a fixed order (trace, cluster, policy, params, seed).

    Raises
    ------
    GpuschedError
        Two cells get the same id (duplicate entries in the spec).
    """
    out: list[Cell] = []
    for trace, cluster, policy in itertools.product(spec.traces, spec.clusters, spec.policies):
        grid = spec.params.get(policy, {})
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            for seed in spec.seeds:
                out.append(
                    Cell(
                        index=len(out),
                        trace=trace,
                        cluster=cluster,
                        policy=policy,
                        params=tuple(zip(keys, combo, strict=True)),
                        seed=seed,
                        slot_s=spec.slot_s,
                        until_s=spec.until_s,
                        drop_oversized=spec.drop_oversized,
                        trace_input=_resolve_input(trace, spec.base_dir),
                        cluster_input=_resolve_input(cluster, spec.base_dir),
                        policy_input=_policy_input(policy, spec.base_dir),
                    )
                )
    ids = [c.cell_id for c in out]
    if len(set(ids)) != len(ids):
        raise GpuschedError(
            "the sweep spec yields the same cell twice (a duplicate parameter value?)"
        )
    return out


def cell_dir(out: str | Path, cell: Cell) -> Path:
    """The folder of a cell's own outputs: ``OUT/cells/<cell id>``."""
    return Path(out) / CELLS_DIR / cell.cell_id


def is_finished(out: str | Path, cell: Cell) -> bool:
    """Whether the cell has run to the end (its summary.json exists)."""
    return (cell_dir(out, cell) / "summary.json").is_file()


def plan(spec: SweepSpec, out: str | Path) -> list[tuple[Cell, bool]]:
    """Every cell with whether it is already finished in ``out``."""
    return [(c, is_finished(out, c)) for c in cells(spec)]


# --- one cell (runs on a Dask worker) ---------------------------------------------------


def _publish(staging: Path, dest: Path) -> None:
    """Move a finished run from ``staging`` into ``dest``, summary.json last and atomically."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "error.txt").unlink(missing_ok=True)
    files = sorted(p for p in staging.iterdir() if p.name != "summary.json")
    for p in files:
        target = dest / p.name
        if target.is_dir() and not p.is_dir():
            shutil.rmtree(target)
        os.replace(p, target)
    os.replace(staging / "summary.json", dest / "summary.json")
    shutil.rmtree(staging, ignore_errors=True)


def run_cell(cell: Cell, out: str) -> dict[str, Any]:
    """Replay one cell into ``OUT/cells/<cell id>/``; never raise.

    Parameters
    ----------
    cell
        The grid point.
    out
        The sweep's output folder (on a filesystem the worker can write to).

    Returns
    -------
    dict
        ``{"cell": id, "status": "ok" | "failed", "summary": dict | None, "error": str | None,
        "wall_s": float}``. A :class:`~gpusched.errors.GpuschedError` gives its one-line
        message; any other exception ``Type: message`` (with the traceback in error.txt).
    """
    from gpusched.run import replay

    t0 = time.perf_counter()
    dest = cell_dir(out, cell)
    staging = Path(out) / STAGING_DIR / f"{cell.cell_id}-{uuid.uuid4().hex[:8]}"
    try:
        summary, _ = replay(
            cell.trace_input,
            cell.policy_input,
            cluster=cell.cluster_input,
            params=cell.param_pairs,
            slot_s=cell.slot_s,
            seed=cell.seed,
            until_s=cell.until_s,
            drop_oversized=cell.drop_oversized,
            out=staging,
        )
        _publish(staging, dest)
        return {
            "cell": cell.cell_id,
            "status": "ok",
            "summary": summary,
            "error": None,
            "wall_s": time.perf_counter() - t0,
        }
    except Exception as exc:  # a failing cell must not stop the others
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, GpuschedError):
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            detail = message + "\n"
        else:
            message = (
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
            )
            detail = "".join(traceback.format_exception(exc))
        try:
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "error.txt").write_text(f"{cell.describe()}\n{detail}")
        except OSError:
            pass
        return {
            "cell": cell.cell_id,
            "status": "failed",
            "summary": None,
            "error": message,
            "wall_s": time.perf_counter() - t0,
        }


# --- the whole sweep --------------------------------------------------------------------


@dataclass(slots=True)
class SweepResult:
    """What :func:`run_sweep` did.

    Attributes
    ----------
    out
        The output folder.
    rows
        One results row per cell, in grid order (as in results.csv).
    n_cells, n_ran, n_skipped
        Cells in the grid, run now, and skipped because already finished.
    failed
        ``(cell, error message)`` for each cell that failed in this run.
    results_csv, results_parquet
        The table files (parquet is None without pyarrow).
    wall_s
        Wall-clock seconds of the whole sweep.
    """

    out: Path
    rows: list[dict[str, Any]]
    n_cells: int
    n_ran: int
    n_skipped: int
    failed: list[tuple[Cell, str]]
    results_csv: Path
    results_parquet: Path | None
    wall_s: float


def default_workers() -> int:
    """One worker per usable core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _param_column(key: str) -> str:
    from gpusched.metrics import SUMMARY_KEYS

    reserved = set(FIXED_COLUMNS) | set(SUMMARY_KEYS) | {"error"}
    return f"param_{key}" if key in reserved else key


def _rows(
    all_cells: list[Cell], outcomes: dict[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    from gpusched.metrics import SUMMARY_KEYS

    param_cols: list[str] = []
    for c in all_cells:
        for k, _ in c.params:
            col = _param_column(k)
            if col not in param_cols:
                param_cols.append(col)
    metric_cols = list(SUMMARY_KEYS)
    rows: list[dict[str, Any]] = []
    for c in all_cells:
        res = outcomes.get(c.cell_id, {"status": "missing", "summary": None, "error": None})
        row: dict[str, Any] = {
            "cell": c.cell_id,
            "status": res["status"],
            "trace": c.trace,
            "cluster": c.cluster,
            "policy": c.policy,
            "params": c.params_text,
            "seed": c.seed,
        }
        row.update(dict.fromkeys(param_cols))
        for k, v in c.params:
            row[_param_column(k)] = v
        summary = res.get("summary") or {}
        for k in summary:
            if k not in metric_cols:
                metric_cols.append(k)
        row.update({k: summary.get(k) for k in metric_cols})
        row["error"] = res.get("error")
        rows.append(row)
    columns = [*FIXED_COLUMNS, *param_cols, *metric_cols, "error"]
    return [{k: r.get(k) for k in columns} for r in rows], columns


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def write_table(
    rows: list[dict[str, Any]], columns: list[str], out: str | Path
) -> tuple[Path, Path | None]:
    """Write results.csv (and results.parquet if pyarrow is installed) atomically into ``out``.

    Returns
    -------
    (csv path, parquet path or None)
    """
    import csv

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{RESULTS_CSV}.{uuid.uuid4().hex[:8]}"
    with tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_csv_value(r[k]) for k in columns])
    os.replace(tmp, out / RESULTS_CSV)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return out / RESULTS_CSV, None
    arrays = []
    for k in columns:
        values = [r[k] for r in rows]
        kinds = {type(v) for v in values if v is not None}
        if kinds == {int, float}:
            values = [None if v is None else float(v) for v in values]
        elif len(kinds) > 1:
            values = [None if v is None else _csv_value(v) for v in values]
        arrays.append(pa.array(values))
    tmp = out / f".{RESULTS_PARQUET}.{uuid.uuid4().hex[:8]}"
    pq.write_table(pa.Table.from_arrays(arrays, names=columns), tmp)
    os.replace(tmp, out / RESULTS_PARQUET)
    return out / RESULTS_CSV, out / RESULTS_PARQUET


def _read_summary(path: Path) -> dict[str, Any] | None:
    try:
        summary: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return summary


ProgressFn = Callable[[int, int, Cell, dict[str, Any]], None]


def run_sweep(
    spec: SweepSpec,
    *,
    out: str | Path | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    processes: bool = True,
    client: Any = None,
    progress: ProgressFn | None = None,
) -> SweepResult:
    """Run every unfinished cell of ``spec`` on Dask and gather one results table.

    Parameters
    ----------
    spec
        The parsed spec (:func:`load_spec`).
    out
        Output folder; overrides ``spec.out``. Default ``sweep-out``.
    scheduler
        Address of an existing Dask scheduler (``tcp://HOST:PORT``). Its workers need
        gpusched installed and must see the same input files and ``out`` folder.
    n_workers
        Workers of the LocalCluster started when no scheduler or client is given
        (default: one per core, capped at the number of cells to run).
    processes
        LocalCluster workers as processes (default) or threads in this process.
    client
        An existing ``dask.distributed.Client`` to use (not closed here).
    progress
        Called after each cell that ran as ``progress(done, total, cell, outcome)``,
        ``outcome`` being :func:`run_cell`'s dictionary.

    Returns
    -------
    SweepResult
    """
    t0 = time.perf_counter()
    out_dir = Path(out if out is not None else spec.out or "sweep-out")
    all_cells = cells(spec)
    outcomes: dict[str, dict[str, Any]] = {}
    pending: list[Cell] = []
    for c in all_cells:
        summary = _read_summary(cell_dir(out_dir, c) / "summary.json")
        if summary is None:
            pending.append(c)
        else:
            outcomes[c.cell_id] = {"status": "ok", "summary": summary, "error": None}
    out_dir.mkdir(parents=True, exist_ok=True)
    failed: list[tuple[Cell, str]] = []
    if pending:
        for res, c in _execute(pending, out_dir, scheduler, n_workers, processes, client, progress):
            outcomes[c.cell_id] = res
            if res["status"] != "ok":
                failed.append((c, res["error"]))
        staging = out_dir / STAGING_DIR
        if staging.is_dir() and not any(staging.iterdir()):
            staging.rmdir()
    rows, columns = _rows(all_cells, outcomes)
    csv_path, parquet_path = write_table(rows, columns, out_dir)
    failed.sort(key=lambda f: f[0].index)
    return SweepResult(
        out=out_dir,
        rows=rows,
        n_cells=len(all_cells),
        n_ran=len(pending),
        n_skipped=len(all_cells) - len(pending),
        failed=failed,
        results_csv=csv_path,
        results_parquet=parquet_path,
        wall_s=time.perf_counter() - t0,
    )


def _execute(
    pending: list[Cell],
    out_dir: Path,
    scheduler: str | None,
    n_workers: int | None,
    processes: bool,
    client: Any,
    progress: ProgressFn | None,
) -> list[tuple[dict[str, Any], Cell]]:
    """Submit one task per cell; return ``(outcome, cell)`` in completion order."""
    import logging

    from dask.distributed import Client, LocalCluster, as_completed

    if n_workers is not None and n_workers < 1:
        raise GpuschedError(f"--workers must be at least 1, got {n_workers}")
    cluster = None
    own_client = None
    try:
        if client is None:
            if scheduler:
                try:
                    own_client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
                except (OSError, TimeoutError) as exc:
                    raise GpuschedError(
                        f"cannot connect to Dask scheduler {scheduler}: {exc}"
                    ) from None
            else:
                n = min(n_workers or default_workers(), len(pending))
                cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=1,
                    processes=processes,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
                own_client = Client(cluster)
            client = own_client
        token = uuid.uuid4().hex[:8]
        out_text = str(out_dir.resolve())
        futures = {}
        for c in pending:
            fut = client.submit(
                run_cell, c, out_text, key=f"gpusched-cell-{c.index}-{token}", pure=False
            )
            futures[fut.key] = (fut, c)
        results: list[tuple[dict[str, Any], Cell]] = []
        for fut in as_completed([f for f, _ in futures.values()]):
            c = futures[fut.key][1]
            try:
                res = fut.result()
            except Exception as exc:  # the task itself died (worker lost, ...)
                res = {
                    "cell": c.cell_id,
                    "status": "failed",
                    "summary": None,
                    "error": f"{type(exc).__name__}: {exc}",
                    "wall_s": None,
                }
            results.append((res, c))
            if progress is not None:
                progress(len(results), len(pending), c, res)
        return results
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()
