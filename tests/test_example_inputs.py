"""The example scripts (examples/*/): a missing or empty input ends in one ``error:`` line.

Each script the families' run.sh drive (or that docs tell a reader to run on run.sh's
output) must end on a missing or empty input folder or file in ``error: <path>: <what
was expected>`` on stderr with exit status 2, as ``gpusched`` itself does, never in a
traceback or (worse) in empty tables and exit status 0.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"

#: scripts that read run.sh's output folder: (script, what the message says was expected)
FOLDER_SCRIPTS = [
    "a-online/aggregate.py",
    "a-online/preemptions.py",
    "pd-ors/aggregate.py",
    "pollux/aggregate.py",
    "sjf-bsbf/aggregate.py",
    "a-srpt/unseen-rule.py",
]
#: scripts that read a results .csv file
FILE_SCRIPTS = [
    "a-srpt/aggregate.py",
    "a-srpt/choose-tau.py",
    "lazer/aggregate.py",
]


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _one_line(proc: subprocess.CompletedProcess[str], path: Path, expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    assert expected in lines[0], lines[0]


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_missing_folder(script: str, tmp_path: Path) -> None:
    missing = tmp_path / "out"
    _one_line(_run(script, str(missing), cwd=tmp_path), missing, "no such folder; expected")


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_empty_folder(script: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    _one_line(_run(script, str(tmp_path / "out"), cwd=tmp_path), tmp_path / "out", "holds no ")


@pytest.mark.parametrize("script", FOLDER_SCRIPTS)
def test_file_for_folder(script: str, tmp_path: Path) -> None:
    f = tmp_path / "out.csv"
    f.write_text("a\n")
    _one_line(_run(script, str(f), cwd=tmp_path), f, "not a folder; expected")


@pytest.mark.parametrize("script", FILE_SCRIPTS)
def test_missing_file(script: str, tmp_path: Path) -> None:
    missing = tmp_path / "results.csv"
    _one_line(_run(script, str(missing), cwd=tmp_path), missing, "no such file; expected")


@pytest.mark.parametrize("script", FILE_SCRIPTS)
@pytest.mark.parametrize("text", ["", "trace,cluster,policy,params,status\n"])
def test_empty_file(script: str, text: str, tmp_path: Path) -> None:
    f = tmp_path / "results.csv"
    f.write_text(text)
    expected = "holds no result rows" if text else "empty file; expected"
    _one_line(_run(script, str(f), cwd=tmp_path), f, expected)


def test_run_folder_missing_its_summary(tmp_path: Path) -> None:
    """A run folder lacking a file the script reads: the file is named, not a traceback."""
    run = tmp_path / "out" / "exp-s1" / "fifo"
    run.mkdir(parents=True)
    (run / "jobs.csv").write_text("job_id,jct\n")
    proc = _run("pollux/aggregate.py", str(tmp_path / "out"), cwd=tmp_path)
    _one_line(proc, run / "summary.json", "no such file")


@pytest.mark.parametrize(
    "script", ["lazer/futile_victims.py", "a-srpt/prediction-errors.py", "lazer/fig8e.py"]
)
def test_missing_trace(script: str, tmp_path: Path) -> None:
    """Scripts reading a trace through gpusched give gpusched's one-line error."""
    proc = _run(script, str(tmp_path / "t.csv"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert str(tmp_path / "t.csv") in proc.stderr


def test_no_argument_is_a_usage_line(tmp_path: Path) -> None:
    proc = _run("pd-ors/aggregate.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "usage: python examples/pd-ors/aggregate.py OUT\n"


def test_competitive_missing_policy_file(tmp_path: Path) -> None:
    """pd-ors/competitive.py reads no input folder, but a --policy file it cannot find was
    a PolicyError traceback."""
    missing = tmp_path / "mine.py"
    proc = _run(
        "pd-ors/competitive.py", "--policy", str(missing), "--seeds", "1", "--jobs", "2",
        "--horizon", "3", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: policy file not found: {missing}\n"
