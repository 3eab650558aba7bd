"""Plain functions behind the CLI: resolve inputs, run one replay, compare several.

The CLI commands are thin wrappers over these (weasel's ``project_pull_cli`` ->
``project_pull``), so tests and sweeps call them directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusched.errors import GpuschedError
from gpusched.resources import bundled_dir

DEFAULT_TRACE = "synth-500"
DEFAULT_CLUSTER = "default"


def resolve_trace(spec: str | None) -> Path:
    """A trace path, or the bundled trace of that name (``philly-2000`` -> traces/philly-2000.csv)."""
    spec = spec or DEFAULT_TRACE
    path = Path(spec)
    if path.is_file():
        return path
    for suffix in ("", ".csv", ".csv.gz"):
        bundled = bundled_dir("traces") / f"{spec}{suffix}"
        if bundled.is_file():
            return bundled
    names = sorted(p.name.split(".")[0] for p in bundled_dir("traces").glob("*.csv*"))
    raise GpuschedError(f"trace not found: {spec} (bundled traces: {', '.join(names)})")


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """``NAME[:key=value,...]`` as given to ``--policy``."""

    text: str
    name: str
    params: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, extra: list[str] | None = None) -> PolicySpec:
        name, _, rest = text.partition(":")
        pairs: list[str] = []
        for piece in rest.split(",") if rest else []:
            if "=" not in piece and pairs:
                pairs[-1] += "," + piece  # a comma inside a value: thresholds=3250,7200
            elif piece.strip():
                pairs.append(piece)
        return cls(text, name.strip(), tuple(pairs) + tuple(extra or ()))


def build_engine(
    trace: str | None,
    policy: str,
    *,
    cluster: str = DEFAULT_CLUSTER,
    params: list[str] | None = None,
    slot_s: float = 1.0,
    seed: int = 0,
    until_s: float | None = None,
    drop_oversized: bool = False,
    mode: str = "auto",
) -> tuple[Any, Path]:
    """Resolve the inputs and build an :class:`~gpusched.engine.Engine`; also return the trace path.

    Parameters are those of :func:`replay`. Annotated pipeline traces (a ``config``
    column) get the placement-aware :class:`~gpusched.pipeline_job.PipelinePerf`.
    """
    import math

    from gpusched.cluster import load_cluster
    from gpusched.engine import Engine
    from gpusched.jobs import prepare_jobs
    from gpusched.policy import parse_params
    from gpusched.registry import load_policy_class, make_policy
    from gpusched.trace import read_trace

    if not (slot_s > 0 and math.isfinite(slot_s)):
        raise GpuschedError(f"--slot must be a positive number of seconds, got {slot_s}")
    spec = PolicySpec.parse(policy, params)
    cls = load_policy_class(spec.name)
    kwargs = parse_params(cls, list(spec.params))
    pol = make_policy(cls, kwargs, seed)
    spec_cluster = load_cluster(cluster)
    path = resolve_trace(trace)
    jobs = prepare_jobs(read_trace(path), spec_cluster, drop_oversized=drop_oversized)
    perf = None
    if "config" in jobs.extra:
        # annotated pipeline jobs: speed depends on placement (A-SRPT eq. 4-7)
        from gpusched.pipeline_job import PipelinePerf

        perf = PipelinePerf(jobs, spec_cluster)
    engine = Engine(
        jobs,
        spec_cluster,
        pol,
        slot_s=slot_s,
        until_s=math.inf if until_s is None else until_s,
        mode=mode,
        params=kwargs,
        seed=seed,
        perf=perf,
    )
    return engine, path


def replay(
    trace: str | None,
    policy: str,
    *,
    out: str | Path | None = None,
    progress: Callable[[float, int, int], None] | None = None,
    **kwargs: Any,
) -> tuple[dict[str, Any], Any]:
    """Replay one trace under one policy; write results to ``out`` if given.

    Parameters
    ----------
    trace
        A trace path or bundled trace name (None: the bundled default).
    policy
        ``NAME[:key=value,...]`` or a path to a policy file.
    out
        Folder for jobs.csv, timeline.csv, summary.json, manifest.json.
    progress
        Called now and then with (simulated time s, jobs finished, jobs total).
    **kwargs
        ``cluster``, ``params`` (``["key=value"]``), ``slot_s``, ``seed``,
        ``until_s``, ``drop_oversized``, ``mode``: see :func:`build_engine`.

    Returns
    -------
    (summary, result)
        The summary dictionary (as in summary.json) and the :class:`RunResult`.
    """
    from gpusched.metrics import summarize, write_results

    engine, path = build_engine(trace, policy, **kwargs)
    result = engine.run(progress=progress)
    if out is not None:
        summary = write_results(result, out, str(path))
    else:
        summary = summarize(result)
    return summary, result


def compare(
    trace: str | None,
    policies: list[str],
    *,
    out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Replay one trace under several policy specs; write comparison.csv to ``out``.

    Each row is ``{"policy": spec as given, **summary}``; each run's own outputs go
    to ``out/<index>-<name>/``.
    """
    import csv

    rows: list[dict[str, Any]] = []
    for i, text in enumerate(policies):
        if progress:
            progress(text)
        sub = None
        if out is not None:
            safe = "".join(ch if ch.isalnum() or ch in "-_=." else "_" for ch in text)
            sub = Path(out) / f"{i:02d}-{safe}"
        summary, _ = replay(trace, text, out=sub, **kwargs)
        rows.append({"policy": text, **summary})
    if out is not None and rows:
        Path(out).mkdir(parents=True, exist_ok=True)
        with (Path(out) / "comparison.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return rows
