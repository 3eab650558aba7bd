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

Every combination is one *cell*. Before anything runs, :func:`keyed_cells` checks the
inputs (every trace and cluster file exists, every cluster file is valid, every policy
accepts its parameters, no two cells are the same run) and gives each cell a
:class:`CellKey`: the SHA-256 of what its result depends on (the trace's bytes, the
cluster file's bytes, the policy file's bytes, parameters, seed, slot, until,
drop_oversized and the gpusched version).

Each cell runs as one Dask task, :func:`run_cell`, which re-hashes the inputs, calls
:func:`gpusched.experiments.run.replay` with ``out=`` a staging folder, writes ``cell.json`` (the key
plus the size of every output file and the SHA-256 of summary.json) and renames the whole
folder to ``OUT/cells/<cell id>/`` in one step. :func:`cell_status` is the one test of
"finished" used by resuming and by ``--dry-run``: ``cell.json`` is readable, its key is
the cell's current key, and every output it lists is there with its size (summary.json
with its hash). A cell whose key differs (an input changed) is *stale* and runs again.
A failing cell gets a folder holding only ``error.txt`` and does not stop the others. At
the end every cell's row is read back from its folder into ``OUT/results.csv`` and
``OUT/results.parquet``: one row per cell, its parameters
plus every summary metric.

One sweep at a time writes an output folder: :class:`SweepLock` holds ``OUT/.lock``
(created with ``O_CREAT | O_EXCL``, holding pid and host) while it runs. The lock, the
staging and the renames are those of every results writer (:mod:`gpusched.io.runfolder`);
a cell's manifest.json records its tables' rows and hashes, as every run folder's does.

Dask and pyarrow are imported inside the functions that need them, so importing this
module (and ``gpusched --help``) stays fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import math
import os
import re
import shutil
import stat
import threading
import time
import tomllib
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusched.errors import (
    MAX_SEED,
    GpuschedError,
    control_char,
    empty_name,
    is_blank,
    show_name,
)
from gpusched.io.files import (
    check_small_file,
    parse_json,
    parse_toml,
    read_json_or_none,
    read_regular_file,
    read_small_text,
)
from gpusched.io.runfolder import MANIFEST, FolderLock, remove_tree, swap_in
from gpusched.io.runfolder import read_lock as read_lock_file

__all__ = [
    "Cell",
    "CellKey",
    "CellStatus",
    "SweepLock",
    "SweepResult",
    "SweepSpec",
    "cell_status",
    "cells",
    "check_scheduler",
    "dask_client",
    "input_digests",
    "keyed_cells",
    "load_spec",
    "output_dir",
    "parse_spec",
    "plan",
    "read_lock",
    "run_cell",
    "run_sweep",
    "write_table",
]

RESULTS_CSV = "results.csv"
RESULTS_PARQUET = "results.parquet"
CELLS_DIR = "cells"
STAGING_DIR = ".staging"
#: a finished cell's record: its key, and the size of each output (written last)
CELL_FILE = "cell.json"
#: a failed cell's record: its parameters and the error
ERROR_FILE = "error.txt"
#: the most of a failed cell's error.txt read back (its second line is the error)
MAX_ERROR_BYTES = 1 << 20
#: the output folder's lock: pid, host, start time of the sweep writing it
LOCK_FILE = ".lock"
#: the files of a finished cell whose SHA-256 its cell.json records
_HASHED = ("summary.json", "manifest.json")
#: the files ``replay --out`` writes; a finished cell has every one
OUTPUT_FILES = ("jobs.csv", "timeline.csv", "manifest.json", "summary.json")


def output_files(fmt: str) -> tuple[str, ...]:
    """The files a finished cell holds with its run tables in format ``fmt``."""
    return (f"jobs.{fmt}", f"timeline.{fmt}", "manifest.json", "summary.json")


#: version of the cell.json layout (part of the key: a new layout re-runs every cell)
KEY_FORMAT = 1
#: seconds to wait for a ``--scheduler`` address to answer
CONNECT_TIMEOUT_S = 10.0

# Limits of a spec: beyond them a value is a mistake, not a setting.
#: most cells in one sweep
MAX_CELLS = 100_000
#: ``(shortest, longest)`` slot, s
SLOT_RANGE_S = (1e-3, 1e6)
#: latest ``until``, s (about 31,700 years)
MAX_UNTIL_S = 1e12
#: largest magnitude of a numeric parameter (beyond it a float no longer holds every integer)
MAX_PARAM = 1e15
#: longest entry or string parameter, characters
MAX_ENTRY_CHARS = 4096
#: largest spec file, bytes
MAX_SPEC_BYTES = 2**20

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
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEDULER = re.compile(r"(?:(tcp|tls|ucx|ws|wss)://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]@]+):(\d{1,5})")
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
        Seeds for the policies' random numbers (0 .. :data:`MAX_SEED`).
    params
        ``{policy entry: {parameter: [values]}}``; every combination is a cell.
    slot_s
        Slot length in seconds (within :data:`SLOT_RANGE_S`).
    out
        Output folder from the spec, or None.
    until_s
        Stop every replay at this simulated time (s, at most :data:`MAX_UNTIL_S`), or None.
    drop_oversized
        Skip jobs needing more GPUs than the cluster has instead of failing the cell.
    base_dir
        Folder that relative input paths are looked up in first (the spec file's folder).
    source
        The spec file (or ``"<string>"``), named in error messages.
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
    source: str = "<string>"
    table_format: str = "csv"  #: the cells' run tables, csv or parquet (``sweep --format``)


def _check_text(text: str, what: str, source: str) -> None:
    """Refuse control characters and over-long text in an entry or string value."""
    bad = control_char(text)
    if bad:
        raise GpuschedError(
            f"{source}: {what} must not hold control characters, got U+{ord(bad):04X} in {text!r}"
        )
    if len(text) > MAX_ENTRY_CHARS:
        raise GpuschedError(
            f"{source}: {what} must be at most {MAX_ENTRY_CHARS} characters, got {len(text):,}"
        )


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
    if not isinstance(value, list) or not value:
        raise GpuschedError(f"{source}: '{key}' must be a non-empty list of strings, got {value!r}")
    entries: list[str] = []
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v.strip():
            raise GpuschedError(
                f"{source}: '{key}'[{i}] must be a non-empty string, got {_shown_value(v)}"
            )
        _check_text(v, f"'{key}'[{i}]", source)
        entry = v.strip()
        if entry in entries:
            raise GpuschedError(f"{source}: '{key}' lists {entry!r} twice")
        entries.append(entry)
    return tuple(entries)


def _policy_list(entries: tuple[str, ...], source: str) -> tuple[str, ...]:
    """The ``policies`` entries as results name them (``PolicySpec.normal``: no
    whitespace around the name, keys and values), each once."""
    from gpusched.experiments.run import PolicySpec

    out: list[str] = []
    for entry in entries:
        normal = PolicySpec.normal(entry)
        if not normal:
            raise GpuschedError(f"{source}: 'policies' entry {entry!r} names no policy")
        if normal in out:
            raise GpuschedError(f"{source}: 'policies' lists {normal!r} twice")
        out.append(normal)
    return tuple(out)


def _shown_value(v: object) -> str:
    """A value for an error message: its type when that is the problem, and at most 60 chars."""
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    names: dict[type, str] = {
        bool: "boolean",
        int: "integer",
        float: "float",
        str: "string",
        list: "array",
        dict: "table",
    }
    return f"{names.get(type(v), type(v).__name__)} {text}"


def _seeds(data: dict[str, Any], source: str) -> tuple[int, ...]:
    raw = data.get("seeds", [0])
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise GpuschedError(f"{source}: 'seeds' must be a non-empty list of integers, got {raw!r}")
    for i, s in enumerate(raw):
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
            raise GpuschedError(
                f"{source}: 'seeds'[{i}] must be an integer from 0 to {MAX_SEED}, "
                f"got {_shown_value(s)}"
            )
    if len(set(raw)) != len(raw):
        dup = next(s for s in raw if raw.count(s) > 1)
        raise GpuschedError(f"{source}: 'seeds' lists the seed {dup} twice")
    return tuple(raw)


def _param_value(v: object, what: str, source: str) -> Scalar:
    """One parameter value: a string, a boolean, or a finite number of sane magnitude."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        if not (math.isfinite(v) and abs(v) <= MAX_PARAM):
            raise GpuschedError(
                f"{source}: {what} must be a finite number of magnitude at most {MAX_PARAM:g}, "
                f"got {v!r}"
            )
        return v
    if isinstance(v, str):
        _check_text(v, what, source)
        return v
    raise GpuschedError(
        f"{source}: {what} must be a string, number or boolean, got {_shown_value(v)}"
    )


def _params(
    data: dict[str, Any], source: str, policies: tuple[str, ...]
) -> dict[str, dict[str, tuple[Scalar, ...]]]:
    raw = data.get("params", {})
    if not isinstance(raw, dict):
        raise GpuschedError(f"{source}: 'params' must be tables [params.<policy>], got {raw!r}")
    params: dict[str, dict[str, tuple[Scalar, ...]]] = {}
    for pol, table in raw.items():
        if pol not in policies:
            raise GpuschedError(
                f"{source}: [params.{pol}] names a policy that 'policies' does not list "
                f"({', '.join(policies)})"
            )
        if not isinstance(table, dict):
            raise GpuschedError(f"{source}: [params.{pol}] must be a table of parameter lists")
        grid: dict[str, tuple[Scalar, ...]] = {}
        for key, values in table.items():
            where = f"[params.{pol}] {key}"
            if not _PARAM_NAME.fullmatch(key):
                raise GpuschedError(
                    f"{source}: [params.{pol}] {key!r} is not a parameter name "
                    "(letters, digits and _, not starting with a digit)"
                )
            if not isinstance(values, list):
                values = [values]
            if not values:
                raise GpuschedError(
                    f"{source}: {where} must be a non-empty list of strings, numbers or "
                    "booleans, got []"
                )
            checked = [_param_value(v, f"{where}[{i}]", source) for i, v in enumerate(values)]
            texts = [_param_text(v) for v in checked]
            for i, text in enumerate(texts):
                if text in texts[:i]:
                    raise GpuschedError(f"{source}: {where} lists the value {text} twice")
            grid[key] = tuple(checked)
        params[pol] = grid
    return params


def _number(
    data: dict[str, Any], key: str, source: str, lo: float, hi: float, *, lo_open: bool = False
) -> float | None:
    """An optional number of seconds within ``[lo, hi]`` (``(lo, hi]`` when ``lo_open``)."""
    if key not in data:
        return None
    value = data[key]
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (lo < value if lo_open else lo <= value)
        and value <= hi
    )
    if not ok:
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise GpuschedError(
            f"{source}: '{key}' must be a number of seconds {low} and <= {hi:g}, "
            f"got {_shown_value(value)}"
        )
    return float(value)


def _n_cells(
    traces: tuple[str, ...],
    clusters: tuple[str, ...],
    policies: tuple[str, ...],
    params: dict[str, dict[str, tuple[Scalar, ...]]],
    seeds: tuple[int, ...],
) -> int:
    per_policy = sum(math.prod(len(v) for v in params.get(p, {}).values()) for p in policies)
    return len(traces) * len(clusters) * per_policy * len(seeds)


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
        Malformed TOML, an unknown key, a missing or empty list, a duplicate entry, seed
        or parameter value, a value of the wrong type, NaN, an infinity or a value out of
        range (seeds 0 .. :data:`MAX_SEED`, slot within :data:`SLOT_RANGE_S`, until in
        (0, :data:`MAX_UNTIL_S`], numeric parameters of magnitude at most
        :data:`MAX_PARAM`), control characters in an entry, ``[params.X]`` for an ``X``
        that ``policies`` does not list, or more than :data:`MAX_CELLS` cells. The
        message starts with ``source`` and names the key.
    """
    try:
        data = parse_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuschedError(f"{source}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise GpuschedError(
            f"{source}: unknown key(s) {', '.join(map(str, unknown))} "
            f"(allowed: {', '.join(sorted(_TOP_KEYS))})"
        )
    traces = _str_list(data, "traces", source, None)
    clusters = _str_list(data, "clusters", source, ("default",))
    policies = _policy_list(_str_list(data, "policies", source, None), source)
    seeds = _seeds(data, source)
    params = _params(data, source, policies)
    slot = _number(data, "slot", source, *SLOT_RANGE_S)
    until = _number(data, "until", source, 0.0, MAX_UNTIL_S, lo_open=True)
    out = data.get("out")
    if is_blank(out):
        raise GpuschedError(f"{source}: 'out': {empty_name(out, 'a folder')}")
    if out is not None and not isinstance(out, str):
        raise GpuschedError(f"{source}: 'out' must be a folder path, got {out!r}")
    if out is not None:
        _check_text(out, "'out'", source)
    drop = data.get("drop_oversized", False)
    if not isinstance(drop, bool):
        raise GpuschedError(
            f"{source}: 'drop_oversized' must be true or false, got {_shown_value(drop)}"
        )
    n = _n_cells(traces, clusters, policies, params, seeds)
    if n > MAX_CELLS:
        raise GpuschedError(
            f"{source}: the grid has {n:,} cells; at most {MAX_CELLS:,} are allowed "
            "(split it into several sweeps)"
        )
    return SweepSpec(
        traces=traces,
        clusters=clusters,
        policies=policies,
        seeds=seeds,
        params=params,
        slot_s=1.0 if slot is None else slot,
        out=out,
        until_s=until,
        drop_oversized=drop,
        base_dir=None if base_dir is None else str(Path(base_dir).resolve()),
        source=source,
    )


def _read_text_file(path: Path, what: str, max_bytes: int) -> str:
    """A small UTF-8 text file, or a one-line GpuschedError saying why it cannot be read."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        raise GpuschedError(f"{what} not found: {show_name(path)}") from None
    check_small_file(
        path,
        st,
        what=what,
        expected=f"a {what} (a TOML file)",
        max_bytes=max_bytes,
        error=GpuschedError,
    )
    return read_small_text(path, what=what, max_bytes=max_bytes, error=GpuschedError)


def load_spec(path: str | Path) -> SweepSpec:
    """Read a sweep spec file (TOML); relative input paths in it are looked up next to it first.

    Raises
    ------
    GpuschedError
        An empty name, a file that is missing, a folder, not a regular file, larger than
        :data:`MAX_SPEC_BYTES`, unreadable or not UTF-8, or the spec is invalid (see
        :func:`parse_spec`).
    """
    if is_blank(path):
        raise GpuschedError(f"sweep spec: {empty_name(path, 'a TOML file')}")
    p = Path(path)
    text = _read_text_file(p, "sweep spec", MAX_SPEC_BYTES)
    return parse_spec(text, str(path), p.parent)


# --- cells ------------------------------------------------------------------------------


def _param_text(value: Scalar) -> str:
    """A TOML value as ``-p key=value`` text (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_file(path: Path) -> bool:
    """``Path.is_file`` that answers False for names the OS refuses (too long, NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _resolve_input(entry: str, base_dir: str | None) -> str:
    """An absolute path if ``entry`` names an existing file, else ``entry`` (a bundled name)."""
    candidates = [Path(base_dir) / entry] if base_dir else []
    candidates.append(Path(entry))
    for c in candidates:
        if _is_file(c):
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
    :func:`~gpusched.experiments.run.replay` (absolute paths for files found on disk).
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
    table_format: str = "csv"  #: its run tables, csv or parquet
    cell_id: str = field(init=False, repr=False, compare=False)
    """A folder name: readable parts plus a hash of the settings that name the cell.

    The id depends on the spec's entries and settings, not on file contents: a cell
    keeps its folder when its trace changes, and :class:`CellKey` tells the runs apart.
    """

    def __post_init__(self) -> None:
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
            ]
            # Parquet cells get folders of their own; CSV cells keep the ids they had
            + ([self.table_format] if self.table_format != "csv" else []),
        )
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        parts = [_slug(self.trace), _slug(self.cluster), _slug(self.policy)]
        parts += [_slug(p) for p in self.param_pairs]
        parts.append(f"s{self.seed}")
        readable = "_".join(parts)[:120]
        object.__setattr__(self, "cell_id", f"{readable}-{digest}")  # frozen: set once here

    @property
    def param_pairs(self) -> list[str]:
        """``["key=value", ...]`` as given to ``replay(params=...)``."""
        return [f"{k}={_param_text(v)}" for k, v in self.params]

    @property
    def params_text(self) -> str:
        """The parameters on one line (``key=value key=value``), empty when none."""
        return " ".join(self.param_pairs)

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
        Two cells get the same id (cannot happen for a spec from :func:`parse_spec`,
        which refuses duplicate entries and values).
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
                        table_format=spec.table_format,
                    )
                )
    ids = [c.cell_id for c in out]
    if len(set(ids)) != len(ids):
        raise GpuschedError(f"{spec.source}: the sweep spec yields the same cell twice")
    return out


def cell_dir(out: str | Path, cell: Cell) -> Path:
    """The folder of a cell's own outputs: ``OUT/cells/<cell id>``."""
    return Path(out) / CELLS_DIR / cell.cell_id


# --- what a cell's result depends on ----------------------------------------------------


def _sha256_file(path: Path) -> str:
    from gpusched.io.trace import trace_sha256

    return trace_sha256(path)


def _trace_file(entry: str) -> Path:
    from gpusched.io.resources import resolve_trace

    try:
        return resolve_trace(entry)
    except OSError as exc:  # a name the OS refuses (too long, ...)
        raise GpuschedError(f"trace not found: {entry} ({exc.strerror})") from None


def _policy_name(policy_input: str) -> str:
    return policy_input.partition(":")[0].strip()


def _class_source(cls: type, name: str) -> str:
    """The SHA-256 of the file that defines policy class ``cls`` (``name`` for messages)."""
    from gpusched.errors import PolicyError

    try:
        source = inspect.getsourcefile(cls)
    except TypeError:  # a built-in class
        source = None
    if source is None:
        raise PolicyError(f"policy '{name}': cannot find the file that defines it")
    return _sha256_file(Path(source))


def _policy_source(policy_input: str) -> str:
    """The SHA-256 of the file that defines the policy class, found by loading it.

    A path gives its file, a bundled name the bundled file, a third-party policy
    registered by entry point the file of its module (only that file, not modules it
    imports).
    """
    from gpusched.core.registry import load_policy_class

    name = _policy_name(policy_input)
    with _REPLAY_LOCK:  # loading compiles Python source: one thread at a time (see there)
        cls = load_policy_class(name)
    return _class_source(cls, name)


def input_digests(cell: Cell) -> dict[str, str]:
    """Hash the files a cell reads: ``{"trace": sha256, "cluster": sha256, "policy": ...}``.

    Raises
    ------
    GpuschedError
        A trace, cluster or policy that cannot be found or read.
    """
    from gpusched.io.cluster import resolve_cluster

    try:
        cluster = _sha256_file(resolve_cluster(cell.cluster_input))
        trace = _sha256_file(_trace_file(cell.trace_input))
        policy = _policy_source(cell.policy_input)
    except OSError as exc:
        raise GpuschedError(
            f"cannot read {exc.filename}: {exc.strerror or type(exc).__name__}"
        ) from None
    return {"trace": trace, "cluster": cluster, "policy": policy}


@dataclass(frozen=True, slots=True)
class CellKey:
    """What a cell's result depends on, as canonical JSON; :attr:`digest` is its SHA-256.

    The record holds the SHA-256 of the trace, the cluster file and the policy file
    (:func:`input_digests`), the parameters as passed to the policy (those written in
    the policy entry, ``NAME:key=value``, and those of ``[params.X]``), the seed, slot,
    until and drop_oversized, the gpusched version and :data:`KEY_FORMAT`. Two runs with
    the same key give the same results (wall-clock times aside).
    """

    text: str

    @classmethod
    def of(cls, cell: Cell, digests: dict[str, str]) -> CellKey:
        """The key of ``cell`` given its :func:`input_digests`."""
        from gpusched import __version__
        from gpusched.experiments.run import PolicySpec

        record = {
            "format": KEY_FORMAT,
            "gpusched": __version__,
            **digests,
            "policy_params": list(PolicySpec.parse(cell.policy_input).params),
            "params": cell.param_pairs,
            "seed": cell.seed,
            "slot_s": cell.slot_s,
            "until_s": cell.until_s,
            "drop_oversized": cell.drop_oversized,
        }
        if cell.table_format != "csv":  # CSV cells keep the keys they had
            record["table_format"] = cell.table_format
        return cls(json.dumps(record, sort_keys=True, separators=(",", ":")))

    @property
    def record(self) -> dict[str, Any]:
        """The key's fields."""
        record: dict[str, Any] = json.loads(self.text)
        return record

    @property
    def digest(self) -> str:
        """SHA-256 hex digest of :attr:`text`."""
        return hashlib.sha256(self.text.encode()).hexdigest()


_KEY_WORDS = {
    "trace": "trace",
    "cluster": "cluster file",
    "policy": "policy file",
    "gpusched": "gpusched version",
    "format": "sweep format",
    "policy_params": "parameters",
}


def _key_changes(old: object, new: dict[str, Any]) -> str:
    """Which inputs differ between a stored key record and the current one, in words."""
    if not isinstance(old, dict):
        return "unknown inputs"
    changed = [k for k in new if old.get(k) != new[k]]
    words = [_KEY_WORDS.get(k, k) for k in changed]
    if "gpusched" in changed:
        words[changed.index("gpusched")] = f"gpusched {old.get('gpusched')} -> {new['gpusched']}"
    return ", ".join(words) or "key"


def _check_policies(
    spec: SweepSpec, all_cells: list[Cell]
) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    """Load every policy and try every parameter combination, before anything runs.

    Returns ``{(policy entry, params text): canonical policy}`` (the class and its
    converted parameters), used to find cells that are the same run, and
    ``{policy entry: SHA-256 of the file defining its class}`` for the cells' keys.

    Raises
    ------
    GpuschedError
        Naming the spec file and the entry or ``[params.X] key``: an unknown policy, a
        file that does not load, an unknown parameter, a value of the wrong type, NaN or
        an infinity after conversion, a value the policy refuses, or a parameter given
        both in the entry and in ``[params.X]``.
    """
    from gpusched.core.policy import parse_params
    from gpusched.core.registry import load_policy_class, make_policy, policy_identity
    from gpusched.experiments.run import PolicySpec

    src = spec.source
    canonical: dict[tuple[str, str], str] = {}
    sources: dict[str, str] = {}
    by_entry: dict[str, list[Cell]] = {}
    for c in all_cells:
        by_entry.setdefault(c.policy, []).append(c)
    for entry, its_cells in by_entry.items():
        where = f"{src}: 'policies' entry {entry!r}"
        ps = PolicySpec.parse(its_cells[0].policy_input)
        try:
            cls = load_policy_class(ps.name)
            inline = parse_params(cls, list(ps.params))
            sources[entry] = _class_source(cls, ps.name)
        except GpuschedError as exc:
            raise GpuschedError(f"{where}: {exc}") from None
        except OSError as exc:
            raise GpuschedError(
                f"{where}: cannot read {exc.filename}: {exc.strerror or type(exc).__name__}"
            ) from None
        _check_finite(inline, where)
        grid = spec.params.get(entry, {})
        for key, values in grid.items():
            if key in inline:
                raise GpuschedError(
                    f"{src}: [params.{entry}] {key}: also set in the policy entry {entry!r}; "
                    "give it in one place"
                )
            for v in values:
                what = f"{src}: [params.{entry}] {key} = {_param_text(v)}"
                try:
                    _check_finite(parse_params(cls, [f"{key}={_param_text(v)}"]), what)
                except GpuschedError as exc:
                    raise GpuschedError(f"{what}: {exc}") from None
        for c in its_cells:
            if (entry, c.params_text) in canonical:
                continue
            kwargs = parse_params(cls, [*ps.params, *c.param_pairs])
            what = f"{src}: [params.{entry}] {c.params_text}" if c.params else where
            try:
                make_policy(cls, kwargs, c.seed)
            except Exception as exc:  # a policy's own check (or a user's policy failing)
                raise GpuschedError(f"{what}: {_one_line(exc)}") from None
            canonical[(entry, c.params_text)] = policy_identity(cls, ps.name, kwargs)
    return canonical, sources


def _check_finite(kwargs: dict[str, Any], where: str) -> None:
    for key, value in kwargs.items():
        if isinstance(value, float | int) and not isinstance(value, bool):
            if not (math.isfinite(value) and abs(value) <= MAX_PARAM):
                raise GpuschedError(
                    f"{where}: parameter '{key}' must be a finite number of magnitude at most "
                    f"{MAX_PARAM:g}, got {value!r}"
                )


def _one_line(exc: BaseException) -> str:
    """``message`` of a GpuschedError, ``Type: message`` of anything else; first line only."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, GpuschedError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}".rstrip(": ")


def keyed_cells(spec: SweepSpec) -> list[tuple[Cell, CellKey]]:
    """Every cell of the grid with its key, after checking every input; nothing is written.

    Each trace, cluster and policy file is read once here (cluster files are validated,
    policies loaded and constructed with every parameter combination).

    Raises
    ------
    GpuschedError
        Naming the spec file and the entry: a trace, cluster or policy that cannot be
        found or read, an invalid cluster file, parameters a policy refuses (see
        :func:`_check_policies`), or two cells that are the same run (the same files,
        the same converted parameters and seed, e.g. ``"tiny"`` and ``"traces/tiny.csv"``).
    """
    from gpusched.io.cluster import load_cluster, resolve_cluster

    src = spec.source
    all_cells = cells(spec)
    canonical, policy_sources = _check_policies(spec, all_cells)
    digests: dict[tuple[str, str], str] = {}
    real: dict[tuple[str, str], str] = {}  # the file each trace and cluster entry reads

    def fetch(
        kind: str, entry: str, what: Callable[[str], tuple[str, str]], as_written: str
    ) -> str:
        if (kind, entry) not in digests:
            label = {"trace": "'traces'", "cluster": "'clusters'"}[kind]
            try:
                digests[(kind, entry)], real[(kind, entry)] = what(entry)
            except GpuschedError as exc:
                raise GpuschedError(f"{src}: {label} entry {as_written!r}: {exc}") from None
            except OSError as exc:
                raise GpuschedError(
                    f"{src}: {label} entry {as_written!r}: cannot read {exc.filename}: "
                    f"{exc.strerror or type(exc).__name__}"
                ) from None
        return digests[(kind, entry)]

    def trace_of(entry: str) -> tuple[str, str]:
        path = _trace_file(entry)
        return _sha256_file(path), str(path.resolve())

    def cluster_of(entry: str) -> tuple[str, str]:
        path = resolve_cluster(entry)
        load_cluster(path)
        return _sha256_file(path), str(path.resolve())

    out: list[tuple[Cell, CellKey]] = []
    same_run: dict[tuple[str, str, str, int], Cell] = {}
    for c in all_cells:
        d = {
            "trace": fetch("trace", c.trace_input, trace_of, c.trace),
            "cluster": fetch("cluster", c.cluster_input, cluster_of, c.cluster),
            "policy": policy_sources[c.policy],
        }
        run = (
            real[("trace", c.trace_input)],
            real[("cluster", c.cluster_input)],
            canonical[(c.policy, c.params_text)],
            c.seed,
        )
        if run in same_run:
            raise GpuschedError(
                f"{src}: two cells are the same run: {same_run[run].describe()} and "
                f"{c.describe()} (the same files, parameters and seed)"
            )
        same_run[run] = c
        out.append((c, CellKey.of(c, d)))
    return out


# --- finished or not: the one test ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CellStatus:
    """Where a cell stands in an output folder (:func:`cell_status`).

    Attributes
    ----------
    state
        ``"done"`` (finished with the current key), ``"todo"`` (never run, or its
        folder is incomplete), ``"stale"`` (finished, but an input changed since) or
        ``"failed"`` (its last run failed).
    reason
        Why it is not done, in a few words (empty when done).
    summary
        The cell's summary.json when done, else None.
    """

    state: str
    reason: str = ""
    summary: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def finished(self) -> bool:
        """Whether the cell is done with its current inputs (it will not run again)."""
        return self.state == "done"


def _error_line(folder: Path) -> str:
    """The error of a failed cell's error.txt (its second line), or ``""``."""
    try:
        raw = read_regular_file(folder / ERROR_FILE, MAX_ERROR_BYTES, head=True)
    except (OSError, ValueError):
        return ""
    lines = raw.decode(errors="replace").splitlines()
    return lines[1][:200] if len(lines) > 1 else "failed"


def cell_status(out: str | Path, cell: Cell, key: CellKey) -> CellStatus:
    """Whether ``cell`` is finished in ``out``: the one test resuming and ``--dry-run`` use.

    A cell is done when ``cells/<id>/cell.json`` is readable, holds the cell's current
    key, and lists every file of :func:`output_files`, each present with the size it
    had when the cell finished, and summary.json and manifest.json (which records each
    table's hash) with the same SHA-256.
    """
    folder = cell_dir(out, cell)
    try:
        is_dir = folder.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        return CellStatus("todo", "not run yet")
    meta = read_json_or_none(folder / CELL_FILE)
    if meta is None:
        error = _error_line(folder)
        if error:
            return CellStatus("failed", error)
        return CellStatus("todo", f"incomplete: no readable {CELL_FILE}")
    files = meta.get("files") if isinstance(meta, dict) else None
    if not isinstance(files, dict) or not isinstance(meta.get("key"), str):
        return CellStatus("todo", f"incomplete: {CELL_FILE} is not a cell record")
    if meta["key"] != key.digest:
        return CellStatus(
            "stale", "changed since it ran: " + _key_changes(meta.get("inputs"), key.record)
        )
    for name in output_files(cell.table_format):
        if name not in files:
            return CellStatus("todo", f"incomplete: {name} is not recorded")
    for name, info in files.items():
        size = info.get("bytes") if isinstance(info, dict) else None
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            return CellStatus("todo", f"incomplete: {CELL_FILE} lists {name!r}")
        try:
            actual = (folder / name).stat().st_size
        except OSError:
            return CellStatus("todo", f"incomplete: {name} is missing")
        if actual != size:
            return CellStatus("todo", f"incomplete: {name} has {actual} bytes, not {size}")
    for name in _HASHED[1:]:
        raw = _read_bytes(folder / name)
        if raw is None or hashlib.sha256(raw).hexdigest() != files[name].get("sha256"):
            return CellStatus("todo", f"incomplete: {name} differs from the recorded one")
    raw = _read_bytes(folder / "summary.json")
    summary = _loads_dict(raw)
    if raw is None or hashlib.sha256(raw).hexdigest() != files["summary.json"].get("sha256"):
        return CellStatus("todo", "incomplete: summary.json differs from the recorded one")
    if summary is None:
        return CellStatus("todo", "incomplete: summary.json is not a JSON object")
    return CellStatus("done", "", summary)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return read_regular_file(path)
    except (OSError, ValueError):
        return None


def _loads_dict(raw: bytes | None) -> dict[str, Any] | None:
    try:
        value = parse_json(raw) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_grid_inputs(spec: SweepSpec, keyed: list[tuple[Cell, CellKey]]) -> None:
    """Parse and validate every distinct trace of the grid, and fit its jobs to each
    cluster it is paired with, as a replay would before running (what ``--dry-run`` adds
    to :func:`keyed_cells`, which hashes the traces and validates the clusters).

    Each trace file is read once, whatever the number of entries, clusters, policies and
    seeds naming it; each cluster file is loaded once. Nothing is run or written.

    Raises
    ------
    GpuschedError
        The first problem, on one line: ``<spec>: 'traces' entry 'x.csv': <the trace's
        first error>``, or ``... on 'clusters' entry 'c': <why its jobs do not fit>``
        (e.g. a job needing more GPUs than the cluster has, without ``drop_oversized``).
    """
    from gpusched.core.jobs import prepare_jobs
    from gpusched.errors import TraceError
    from gpusched.experiments.run import read_for
    from gpusched.io.cluster import load_cluster

    src = spec.source
    # trace file -> (its first cell, {cluster input: the first cell pairing them})
    grid: dict[str, tuple[Cell, dict[str, Cell]]] = {}
    for c, _ in keyed:
        path = str(_trace_file(c.trace_input).resolve())
        grid.setdefault(path, (c, {}))[1].setdefault(c.cluster_input, c)
    clusters: dict[str, Any] = {}

    def first_line(exc: GpuschedError) -> str:
        if isinstance(exc, TraceError):
            return exc.errors[0]
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    for path, (first, pairs) in grid.items():
        for cluster_input in pairs:
            if cluster_input not in clusters:
                clusters[cluster_input] = load_cluster(cluster_input)  # checked by keyed_cells
        where = f"{src}: 'traces' entry {first.trace!r}"
        try:
            trace = read_for(Path(path), clusters[first.cluster_input])
        except GpuschedError as exc:
            raise GpuschedError(f"{where}: {first_line(exc)}") from None
        for cluster_input, c in pairs.items():
            try:
                prepare_jobs(trace, clusters[cluster_input], drop_oversized=c.drop_oversized)
            except GpuschedError as exc:
                raise GpuschedError(
                    f"{where} on 'clusters' entry {c.cluster!r}: {first_line(exc)}"
                ) from None
        del trace


def plan(
    spec: SweepSpec, out: str | Path, *, read_traces: bool = False
) -> list[tuple[Cell, CellStatus]]:
    """Every cell with its :func:`cell_status` in ``out`` (checks the inputs; writes
    nothing). ``read_traces`` (``--dry-run``) also parses and validates each distinct
    trace once (:func:`read_grid_inputs`), so a trace that would fail its cells is
    refused here; without it, such cells are listed (``failed`` once they have run)."""
    out_dir = output_dir(spec, out)
    keyed = keyed_cells(spec)
    if read_traces:
        read_grid_inputs(spec, keyed)
    return [(c, cell_status(out_dir, c, k)) for c, k in keyed]


# --- one cell (runs on a Dask worker) ---------------------------------------------------


def _swap_in(folder: Path, dest: Path, out: Path) -> None:
    """Make ``folder`` the cell's folder ``dest`` with renames only
    (:func:`gpusched.io.runfolder.swap_in`; an older ``dest`` goes through the staging area)."""
    swap_in(folder, dest, out / STAGING_DIR)


def _file_table(folder: Path) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size}}`` of the files in ``folder``, with the ``"sha256"`` of
    summary.json and manifest.json (what :func:`cell_status` checks; the manifest in turn
    records every table's hash)."""
    table: dict[str, dict[str, Any]] = {}
    for p in sorted(folder.iterdir()):
        if p.is_file():
            table[p.name] = {"bytes": p.stat().st_size}
    for name in _HASHED:
        if name in table:
            table[name]["sha256"] = _sha256_file(folder / name)
    return table


def _check_inputs(cell: Cell, key: CellKey, when: str) -> None:
    """Refuse to run (or publish) a cell whose input files no longer match its key."""
    record = key.record
    now = input_digests(cell)
    changed = [k for k in ("trace", "cluster", "policy") if now[k] != record.get(k)]
    if changed:
        names = {"trace": cell.trace_input, "cluster": cell.cluster_input}
        what = ", ".join(f"{k} {names.get(k, _policy_name(cell.policy_input))}" for k in changed)
        raise GpuschedError(f"{what} changed {when}; run the sweep again")


#: Cells of one process replay one at a time. Worker processes (the default) run one cell
#: each anyway; thread workers (``processes=False``) share one interpreter, where loading
#: a policy compiles Python source, which CPython 3.11 does not do safely in two threads
#: at once ("SystemError: AST constructor recursion depth mismatch").
_REPLAY_LOCK = threading.Lock()


def run_cell(cell: Cell, key: CellKey, out: str) -> dict[str, Any]:
    """Replay one cell into ``OUT/cells/<cell id>/``; never raise.

    Parameters
    ----------
    cell
        The grid point.
    key
        Its key from :func:`keyed_cells`. The cell fails, without running, when this
        worker's gpusched version differs from the key's or an input file's hash no
        longer matches; and without publishing when an input changed while it ran.
    out
        The sweep's output folder (on a filesystem the worker can write to).

    Returns
    -------
    dict
        ``{"cell": id, "status": "ok" | "failed", "summary": dict | None, "error": str | None,
        "wall_s": float}``. A :class:`~gpusched.errors.GpuschedError` gives its one-line
        message; any other exception ``Type: message`` (with the traceback in error.txt).
    """
    from gpusched import __version__
    from gpusched.experiments.run import run_into

    t0 = time.perf_counter()
    out_dir = Path(out)
    dest = cell_dir(out_dir, cell)
    staging = out_dir / STAGING_DIR / f"{cell.cell_id}-{uuid.uuid4().hex[:8]}"
    try:
        wanted = key.record.get("gpusched")
        if wanted != __version__:
            raise GpuschedError(
                f"this worker runs gpusched {__version__}, the sweep {wanted}: "
                "install the same version everywhere"
            )
        _check_inputs(cell, key, "since the sweep started")
        with _REPLAY_LOCK:
            summary, _ = run_into(
                cell.trace_input,
                cell.policy_input,
                staging,
                cluster=cell.cluster_input,
                params=cell.param_pairs,
                slot_s=cell.slot_s,
                seed=cell.seed,
                until_s=cell.until_s,
                drop_oversized=cell.drop_oversized,
                fmt=cell.table_format,
            )
        _check_inputs(cell, key, "while the cell ran")
        record = {
            "format": KEY_FORMAT,
            "cell": cell.cell_id,
            "describe": cell.describe(),
            "key": key.digest,
            "inputs": key.record,
            "files": _file_table(staging),
        }
        (staging / CELL_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        _swap_in(staging, dest, out_dir)
        return {
            "cell": cell.cell_id,
            "status": "ok",
            "summary": summary,
            "error": None,
            "wall_s": time.perf_counter() - t0,
        }
    except Exception as exc:  # a failing cell must not stop the others
        shutil.rmtree(staging, ignore_errors=True)
        message = _one_line(exc)
        if isinstance(exc, GpuschedError):
            detail = message + "\n"
        else:
            detail = "".join(traceback.format_exception(exc))
        try:
            staging.mkdir(parents=True)
            (staging / ERROR_FILE).write_text(f"{cell.describe()}\n{detail}")
            _swap_in(staging, dest, out_dir)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
        return {
            "cell": cell.cell_id,
            "status": "failed",
            "summary": None,
            "error": message,
            "wall_s": time.perf_counter() - t0,
        }


# --- the output folder and its lock -----------------------------------------------------


def output_dir(spec: SweepSpec, out: str | Path | None = None) -> Path:
    """The sweep's output folder (``out``, else the spec's, else ``sweep-out``), checked.

    Raises
    ------
    GpuschedError
        An empty path or one with control characters, a path that is a file (or under
        a file), or a folder whose ``cells``/``.staging`` is a file, whose ``.staging``
        is a symbolic link (the sweep deletes what it holds), whose
        ``results.csv``/``results.parquet`` is a folder, whose ``results.csv`` is not a
        sweep's (the sweep would replace it), or that holds a run's
        ``manifest.json`` or a comparison's ``comparison.csv`` (the folder of a replay or
        compare, which the sweep's results would turn into a sweep folder).
    """
    raw = out if out is not None else (spec.out or "sweep-out")
    text = str(raw)
    if is_blank(raw):
        raise GpuschedError(f"--out: {empty_name(raw, 'a folder')}")
    bad = control_char(text)
    if bad:
        raise GpuschedError(
            f"the output folder must not hold control characters, got U+{ord(bad):04X} in {text!r}"
        )
    path = Path(raw)
    for parent in [path, *path.parents]:
        try:
            st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue  # look further up (NotADirectoryError: a parent is a file)
        except OSError as exc:
            raise GpuschedError(f"output folder {path}: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            where = "is" if parent == path else f"is under {parent}, which is"
            raise GpuschedError(f"output folder {path} {where} a file, not a folder")
        break
    for name in (CELLS_DIR, STAGING_DIR):
        sub = path / name
        if sub.exists() and not sub.is_dir():
            raise GpuschedError(f"{sub} is a file; a sweep folder keeps its cells in a folder")
    if (path / STAGING_DIR).is_symlink():  # its contents are deleted: never follow a link
        raise GpuschedError(f"{path / STAGING_DIR} is a symbolic link; remove it")
    for name in (RESULTS_CSV, RESULTS_PARQUET):
        if (path / name).is_dir():
            raise GpuschedError(f"{path / name} is a folder; the sweep writes a file there")
    if (path / RESULTS_CSV).is_file() and not _sweep_results(path / RESULTS_CSV):
        # the sweep replaces results.csv at its end: never a file someone else wrote
        raise GpuschedError(
            f"output folder {path} holds {RESULTS_CSV}, which is not a sweep's results "
            f"(its header does not start with {','.join(_SWEEP_HEADER)}) and which the sweep "
            "would replace; give the sweep a folder of its own (or move that file away)"
        )
    from gpusched.experiments.run import COMPARISON_CSV

    for name in (MANIFEST, COMPARISON_CSV):  # a sweep's cells are one level further down
        if (path / name).exists():
            raise GpuschedError(
                f"output folder {path} holds {name}: it is the results of a replay or "
                "compare, not a sweep's folder; give the sweep a folder of its own"
            )
    return path


#: the first columns of every sweep's results.csv (results.metrics.FIXED_COLUMNS)
_SWEEP_HEADER = ("cell", "status")


def _sweep_results(path: Path) -> bool:
    """Whether the file ``path`` starts like a sweep's results.csv (its first line begins
    with :data:`_SWEEP_HEADER`); False for a file that cannot be read."""
    try:
        first = read_regular_file(path, 4096, head=True).split(b"\n", 1)[0]
    except (OSError, ValueError):
        return False
    head = first.rstrip(b"\r\n").split(b",")[: len(_SWEEP_HEADER)]
    return head == [c.encode() for c in _SWEEP_HEADER]


class SweepLock(FolderLock):
    """``OUT/.lock``: only one sweep writes an output folder at a time
    (:class:`gpusched.io.runfolder.FolderLock`, the lock every results writer takes).

    Parameters
    ----------
    out
        The output folder (created if missing).
    note
        Called with a one-line note when a stale lock is taken over.
    """

    def __init__(self, out: str | Path, note: Callable[[str], None] | None = None) -> None:
        super().__init__(Path(out) / LOCK_FILE, out, "sweep", note)
        self.out = Path(out)

    def __enter__(self) -> SweepLock:
        self.acquire()
        return self


def read_lock(out: str | Path) -> dict[str, Any] | None:
    """The holder of ``OUT/.lock`` (``pid``, ``host``, ``started``, ``token``), or None.

    None also when the file is missing or does not hold a pid and a host.
    """
    return read_lock_file(Path(out) / LOCK_FILE)


def _clean_staging(out_dir: Path) -> None:
    """Remove what killed sweeps left: staging folders and half-written tables."""
    staging = out_dir / STAGING_DIR
    if staging.is_dir():
        for p in staging.iterdir():
            remove_tree(p)
    for pattern in (f".{RESULTS_CSV}.*", f".{RESULTS_PARQUET}.*"):
        for p in out_dir.glob(pattern):
            remove_tree(p)


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
        The table files.
    wall_s
        Wall-clock seconds of the whole sweep.
    n_stale
        Cells that ran again because an input changed since they finished.
    notes
        One-line notes (a stale lock taken over, stale cells re-run).
    """

    out: Path
    rows: list[dict[str, Any]]
    n_cells: int
    n_ran: int
    n_skipped: int
    failed: list[tuple[Cell, str]]
    results_csv: Path
    results_parquet: Path
    wall_s: float
    n_stale: int = 0
    notes: list[str] = field(default_factory=list)


def default_workers() -> int:
    """One worker per usable core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


#: most local worker processes per usable core: the runs are CPU-bound, so more than one
#: per core is no faster, and each process holds its own interpreter and kernels (about
#: 100-150 MB): thousands would exhaust the machine's memory
MAX_WORKERS_PER_CORE = 4


def check_workers(n_workers: int | None) -> None:
    """Refuse a local worker count below 1 or above :data:`MAX_WORKERS_PER_CORE` per core."""
    if n_workers is None:
        return
    if n_workers < 1:
        raise GpuschedError(f"--workers must be at least 1, got {n_workers}")
    cores = default_workers()
    most = MAX_WORKERS_PER_CORE * cores
    if n_workers > most:
        raise GpuschedError(
            f"--workers {n_workers} would start {n_workers} processes on {cores} usable "
            f"core(s); at most {most} ({MAX_WORKERS_PER_CORE} per core: the runs are "
            "CPU-bound, and each process takes about 100-150 MB)"
        )


def _rows(
    all_cells: list[Cell], outcomes: dict[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    from gpusched.results.metrics import FIXED_COLUMNS, SUMMARY_KEYS, flat_summary, param_column

    none = {"status": "missing", "summary": None, "error": None}
    summaries = {
        c.cell_id: flat_summary(outcomes.get(c.cell_id, none).get("summary") or {})
        for c in all_cells
    }
    metric_cols = list(SUMMARY_KEYS)
    for summary in summaries.values():
        metric_cols += [k for k in summary if k not in metric_cols]
    # a parameter named like any metric written (a job model's own, say) gets param_<name>
    taken = set(metric_cols)
    param_cols: list[str] = []
    for c in all_cells:
        for k, _ in c.params:
            col = param_column(k, taken)
            if col not in param_cols:
                param_cols.append(col)
    rows: list[dict[str, Any]] = []
    for c in all_cells:
        res = outcomes.get(c.cell_id, none)
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
            row[param_column(k, taken)] = v
        summary = summaries[c.cell_id]
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
) -> tuple[Path, Path]:
    """Write results.csv and results.parquet atomically into ``out``.

    Returns
    -------
    (csv path, parquet path)
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
    import pyarrow as pa
    import pyarrow.parquet as pq

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


def check_scheduler(address: str) -> str:
    """``[SCHEME://]HOST:PORT`` of a Dask scheduler, checked before connecting.

    Raises
    ------
    GpuschedError
        Not of that form, an unknown scheme, or a port outside 1..65535.
    """
    text = address.strip()
    if re.fullmatch(r"inproc://\S+", text):  # a scheduler in this process
        return text
    m = _SCHEDULER.fullmatch(text)
    if m is None or not 1 <= int(m.group(3)) <= 65535:
        raise GpuschedError(
            f"--scheduler must be a Dask scheduler address tcp://HOST:PORT "
            f"(or tls://, ws://, wss://, ucx://), got {address!r}"
        )
    return text


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
    note: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run every unfinished cell of ``spec`` on Dask and gather one results table.

    Everything that can be checked is checked before anything is written: the output
    folder (:func:`output_dir`), the worker count, the scheduler address and every
    input (:func:`keyed_cells`). Then the folder is locked (:class:`SweepLock`), cells
    that are not finished by :func:`cell_status` run (stale ones again), and the table
    is built from the cell folders, read back by the same test.

    Parameters
    ----------
    spec
        The parsed spec (:func:`load_spec`).
    out
        Output folder; overrides ``spec.out``. Default ``sweep-out``.
    scheduler
        Address of an existing Dask scheduler (``tcp://HOST:PORT``). Its workers need
        gpusched installed (the same version) and must see the same input files and
        ``out`` folder.
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
    note
        Called with each one-line note as it happens (also kept in ``result.notes``).

    Returns
    -------
    SweepResult

    Raises
    ------
    GpuschedError
        A bad output folder, worker count, scheduler address or input, or an output
        folder another sweep is writing.
    """
    t0 = time.perf_counter()
    out_dir = output_dir(spec, out)
    if scheduler is None:
        check_workers(n_workers)
    if scheduler is not None and client is None:
        scheduler = check_scheduler(scheduler)
    keyed = keyed_cells(spec)
    notes: list[str] = []

    def tell(message: str) -> None:
        notes.append(message)
        if note is not None:
            note(message)

    with SweepLock(out_dir, note=tell):
        _clean_staging(out_dir)
        before = {c.cell_id: cell_status(out_dir, c, k) for c, k in keyed}
        pending = [(c, k) for c, k in keyed if not before[c.cell_id].finished]
        stale = [c for c, _ in pending if before[c.cell_id].state == "stale"]
        if stale:
            tell(
                f"{len(stale)} finished cell(s) run again because an input changed, e.g. "
                f"{stale[0].describe()}: {before[stale[0].cell_id].reason}"
            )
        ran: dict[str, dict[str, Any]] = {}
        if scheduler is None and client is None:
            compile_once(len(pending), tell)
        if pending:
            for res, c in _execute(
                pending, out_dir, scheduler, n_workers, processes, client, progress
            ):
                ran[c.cell_id] = res
        _clean_staging(out_dir)
        with contextlib.suppress(OSError):
            (out_dir / STAGING_DIR).rmdir()
        outcomes, failed = _outcomes(out_dir, keyed, ran, before)
        all_cells = [c for c, _ in keyed]
        rows, columns = _rows(all_cells, outcomes)
        csv_path, parquet_path = write_table(rows, columns, out_dir)
    return SweepResult(
        out=out_dir,
        rows=rows,
        n_cells=len(keyed),
        n_ran=len(pending),
        n_skipped=len(keyed) - len(pending),
        failed=failed,
        results_csv=csv_path,
        results_parquet=parquet_path,
        wall_s=time.perf_counter() - t0,
        n_stale=len(stale),
        notes=notes,
    )


#: a sweep of at least this many cells to run compiles the kernels first (see compile_once)
WARM_UP_CELLS = 4


def compile_once(n_cells: int, tell: Callable[[str], None] | None = None) -> None:
    """Before ``n_cells`` (>= :data:`WARM_UP_CELLS`) cells or runs start on local Dask
    workers, compile the simulation kernels here if Numba's cache lacks them (saying so
    through ``tell``): the workers then load them from the cache, instead of each running
    its cells on the interpreted kernels or compiling them at the same time."""
    if n_cells < WARM_UP_CELLS:
        return
    from gpusched.core.warmup import PATHS, compiled_in_cache, warm_up

    missing = [m for m in PATHS if not compiled_in_cache(m)]
    if missing and tell is not None:
        tell(
            f"compiling simulation kernels once for the {n_cells} cells, first run only "
            "(up to a minute)"
        )
    for mode in missing:
        warm_up(mode)


def _outcomes(
    out_dir: Path,
    keyed: list[tuple[Cell, CellKey]],
    ran: dict[str, dict[str, Any]],
    before: dict[str, CellStatus],
) -> tuple[dict[str, dict[str, Any]], list[tuple[Cell, str]]]:
    """Each cell's row data, read back from its folder by :func:`cell_status`.

    A cell that ran is read again; one that did not keeps its status from ``before``
    (taken under the same lock, so its folder has not changed since).
    """
    outcomes: dict[str, dict[str, Any]] = {}
    failed: list[tuple[Cell, str]] = []
    for c, k in keyed:
        res = ran.get(c.cell_id)
        status = before[c.cell_id] if res is None else cell_status(out_dir, c, k)
        if status.finished:
            outcomes[c.cell_id] = {"status": "ok", "summary": status.summary, "error": None}
            continue
        if res is not None and res["status"] != "ok":
            error = res["error"]
        else:
            error = f"outputs not complete after the run ({status.reason})"
        outcomes[c.cell_id] = {"status": "failed", "summary": None, "error": error}
        failed.append((c, error))
    return outcomes, failed


@contextlib.contextmanager
def dask_client(
    n_tasks: int,
    *,
    scheduler: str | None = None,
    n_workers: int | None = None,
    processes: bool = True,
    client: Any = None,
) -> Iterator[Any]:
    """A ``dask.distributed.Client`` for ``n_tasks`` tasks, closed (with what it started) on exit.

    ``client`` is used as it is (and not closed); else one connects to ``scheduler``;
    else a LocalCluster starts with ``n_workers`` single-threaded workers (default one
    per core), never more than ``n_tasks``. Sweeps and ``compare --seeds`` run through it.

    Raises
    ------
    GpuschedError
        The scheduler does not answer.
    """
    import logging

    from dask.distributed import Client, LocalCluster

    if client is not None:
        yield client
        return
    cluster = None
    own_client = None
    try:
        if scheduler:
            try:
                own_client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError) as exc:
                raise GpuschedError(
                    f"cannot connect to Dask scheduler {scheduler}: {exc}"
                ) from None
        else:
            n = max(1, min(n_workers or default_workers(), n_tasks))
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            own_client = Client(cluster)
        yield own_client
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()


def _execute(
    pending: list[tuple[Cell, CellKey]],
    out_dir: Path,
    scheduler: str | None,
    n_workers: int | None,
    processes: bool,
    client: Any,
    progress: ProgressFn | None,
) -> list[tuple[dict[str, Any], Cell]]:
    """Submit one task per cell; return ``(outcome, cell)`` in completion order."""
    from dask.distributed import as_completed

    with dask_client(
        len(pending),
        scheduler=scheduler,
        n_workers=n_workers,
        processes=processes,
        client=client,
    ) as dask:
        token = uuid.uuid4().hex[:8]
        out_text = str(out_dir.resolve())
        futures = {}
        for c, k in pending:
            fut = dask.submit(
                run_cell, c, k, out_text, key=f"gpusched-cell-{c.index}-{token}", pure=False
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
