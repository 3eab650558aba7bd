"""The live TUI of ``gpusched replay --tui``: the same replay, drawn as it runs.

Everything that imports Textual lives in this package. :func:`run_tui` builds the
engine exactly as :func:`gpusched.experiments.run.replay` does, runs the app, and returns the
summary dictionary (the same numbers as summary.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["run_tui"]


def run_tui(
    trace: str | None,
    policy: str,
    *,
    cluster: str,
    params: list[str] | None,
    slot_s: float,
    seed: int,
    until_s: float | None,
    drop_oversized: bool,
    mode: str,
    out: Path | None,
    load_s: float = 0.0,
    save_s: float = 0.0,
    events: bool = False,
    fmt: str = "csv",
) -> dict[str, Any]:
    """Replay a trace live in the terminal; return the summary when the app exits.

    Parameters
    ----------
    trace, policy, cluster, params, seed, drop_oversized, mode, load_s, save_s
        As for :func:`gpusched.experiments.run.replay`.
    slot_s
        Slot length, s.
    until_s
        Stop at this simulated time, s (None = run to the end).
    out
        Write jobs.csv, timeline.csv, summary.json and manifest.json here when the app
        exits (a run quit early is written as stopped at its current time, like
        ``--until``).
    events
        Keep the event log and write events.csv into ``out`` (``replay --events``).
    fmt
        Format of the tables written to ``out``: ``"csv"`` or ``"parquet"``.

    Returns
    -------
    dict
        The summary of the finished run (summary.json's keys), or of the part run so far
        when the user quit early or ``until_s`` cut it: then ``n_unfinished`` counts the
        jobs left and ``stopped_at_s`` is the simulated time it stopped at, s.
    """
    from gpusched.experiments.run import build_engine
    from gpusched.results.metrics import write_results
    from gpusched.tui.app import GpuschedApp, trace_label
    from gpusched.tui.session import partial_result, run_summary

    engine, path = build_engine(
        trace,
        policy,
        cluster=cluster,
        params=params,
        slot_s=slot_s,
        seed=seed,
        until_s=until_s,
        drop_oversized=drop_oversized,
        mode=mode,
        load_s=load_s,
        save_s=save_s,
        events=events,
    )
    app = GpuschedApp(engine, trace_name=trace_label(path))
    app.run()
    driver = app.driver
    if driver.started:
        driver.done.wait(timeout=30)  # the worker thread no longer touches the engine
    error = app.error or driver.error
    if error is not None:
        raise error
    result = partial_result(engine)
    if out is not None:
        return run_summary(result, write_results(result, out, str(path), fmt))
    return run_summary(result)
