"""Inputs the commands treat alike: policy specs with spaces, output files' folders, and
a sweep's dry run reading its traces and clusters."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpusched.experiments.run import PolicySpec
from gpusched.experiments.sweep import parse_spec
from tests.helpers import invoke, one_line_error

# --- policy specs: the whitespace around name, keys and values is not part of the label ---


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        (" fifo", "fifo"),
        ("fifo ", "fifo"),
        ("fifo:", "fifo"),
        (" tiresias : thresholds = 100 ", "tiresias:thresholds=100"),
        ("tiresias:thresholds=3250, 7200", "tiresias:thresholds=3250,7200"),
        ("tiresias:thresholds=3250,7200", "tiresias:thresholds=3250,7200"),
    ],
)
def test_policy_spec_drops_surrounding_whitespace(text: str, normal: str) -> None:
    spec = PolicySpec.parse(text)
    assert spec.text == normal
    assert spec.label(spec.name) == normal
    assert spec.name == normal.partition(":")[0]


def test_replay_label_and_manifest_without_spaces(tmp_path: Path) -> None:
    r = invoke("replay", "tiny", "-P", " tiresias : thresholds=100 ", "-o", tmp_path / "r")
    assert r.exit_code == 0, r.output
    assert "\ntiresias:thresholds=100 " in r.output
    assert " tiresias : " not in r.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["policy"] == "tiresias"


def test_compare_labels_and_run_folders_without_spaces(tmp_path: Path) -> None:
    r = invoke("compare", "tiny", "-P", " fifo", "-P", "sjf ", "-o", tmp_path / "c")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "00-fifo",
        "01-sjf",
        "comparison.csv",
    ]
    with open(tmp_path / "c" / "comparison.csv", newline="") as f:
        assert [row["policy"] for row in csv.DictReader(f)] == ["fifo", "sjf"]


def test_sweep_policies_are_named_as_replay_names_them() -> None:
    spec = parse_spec('traces = ["tiny"]\npolicies = [" tiresias : thresholds = 100 ", "sjf:"]')
    assert spec.policies == ("tiresias:thresholds=100", "sjf")
    with pytest.raises(Exception, match="lists 'fifo' twice"):
        parse_spec('traces = ["tiny"]\npolicies = [" fifo", "fifo:"]')
