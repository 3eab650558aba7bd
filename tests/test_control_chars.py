"""Control characters never reach the terminal (issue 27, part 4).

Job ids come from traces (a quoted CSV field or a Parquet string may hold anything), labels
from the user: every human-facing output shows them escaped, as error messages do
(:func:`gpusched.errors.show_text`): tables, ``explain``, ``diff``, the Gantt chart and
its key, plots, and the TUI. A job id holding a newline must not split a line."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpusched.errors import show_text
from tests.helpers import invoke

#: a colour, a reset and an OSC title change ended by BEL
EVIL = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07"
SPLIT = "a\nb"
RAW = ("\x1b", "\x07", "a\nb")


def clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, repr(text)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A trace whose job ids hold escape sequences and a newline, and two runs of it."""
    root = tmp_path_factory.mktemp("hostile")
    trace = root / "hostile.csv"
    with trace.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "submit_time", "num_gpus", "duration"])
        w.writerows([(EVIL, 0, 16, 100), (SPLIT, 0, 2, 50), ("j2", 5, 4, 30), ("j3", 6, 4, 20)])
    runs = []
    for policy in ("srtf", "fifo"):
        out = root / policy
        r = invoke("replay", trace, "-P", policy, "-c", "testbed-4x4", "-o", out, "--events")
        assert r.exit_code == 0, r.output
        clean(r.output)
        runs.append(out)
    return trace, runs[0], runs[1]


def test_explain_escapes_ids_and_never_splits_a_line(hostile):
    _, run, _ = hostile
    r = invoke("explain", run, "--worst", "4")
    assert r.exit_code == 0, r.output
    clean(r.output)
    assert show_text(EVIL) in r.output and "a\\nb" in r.output
    assert len(r.output.strip().splitlines()) == 5  # the heading and one line per job
    plain = invoke("explain", run, "j3").output.strip().splitlines()
    for job in (SPLIT, EVIL):
        r = invoke("explain", run, job)
        assert r.exit_code == 0, r.output
        clean(r.output)
        lines = r.output.strip().splitlines()
        assert lines[0].startswith(f"job {show_text(job)} (")
        assert len(lines) == len(plain), r.output


def test_gantt_key_and_title_are_escaped(hostile, tmp_path):
    _, run, _ = hostile
    r = invoke("plot", run, "--gantt")
    assert r.exit_code == 0, r.output
    clean(r.output)
    assert f"={show_text(EVIL)}" in r.output


def test_diff_tables_are_escaped(hostile):
    _, a, b = hostile
    r = invoke("diff", a, b, "--top", "5")
    assert r.exit_code == 0, r.output
    clean(r.output)


def test_run_plots_are_escaped(hostile, tmp_path):
    import shutil

    _, a, _ = hostile
    evil = Path(shutil.copytree(a, tmp_path / "run\x1b]0;x\x07"))
    r = invoke("plot", evil, a)  # the same policy: the keys name the folders
    assert r.exit_code == 0, r.output
    clean(r.output)


def test_result_tables_escape_labels(capsys):
    from gpusched.cli._common import print_table

    print_table([{"policy": "mine\x1b]0;x\x07", "n_finished": 3}], "policy")
    out = capsys.readouterr().out
    clean(out)
    assert "mine\\x1b]0;x\\x07" in out


def test_the_tui_never_draws_a_raw_control_character(hostile):
    import asyncio

    from gpusched.tui.app import GpuschedApp
    from tests.test_tui import make_engine, screen_text

    trace, _, _ = hostile

    async def go() -> None:
        engine = make_engine(str(trace), "srtf", "testbed-4x4")
        app = GpuschedApp(engine, trace_name="ev\x1bil.csv", paused=True, speed=10.0)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.settle()
            await pilot.press("n", "n")
            await app.settle()
            await pilot.pause()
            text = "\n".join(screen_text(app))
            clean(text)
            assert "\\x1b" in text  # the id and the title are there, escaped
            assert show_text(EVIL) in "".join(str(x) for x in app.jobs.job_id)
            assert engine.jobs.job_id[0] == EVIL  # the engine's own ids are untouched

    asyncio.run(go())
