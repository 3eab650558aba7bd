"""Policy parameters: every numeric one declares its range, checked in one place.

``gpusched.core.policy.Range`` sits in the parameter's annotation; ``parse_params`` (the
``-p`` path, sweeps, ``compare``) and ``make_policy`` refuse a value outside it with one line
naming the policy, the parameter and the range.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from gpusched.core.policy import Range, param_ranges, parse_params, policy_params
from gpusched.core.registry import available_policies, load_policy_class, make_policy
from gpusched.errors import ParamError

NAMES = sorted(available_policies())


@pytest.mark.parametrize("name", NAMES)
def test_every_numeric_parameter_declares_a_range_that_holds_its_default(name):
    cls = load_policy_class(name)
    ranges = param_ranges(cls)
    for key, (tp, default) in policy_params(cls).items():
        if tp in (int, float):
            assert key in ranges, f"{name}: parameter '{key}' declares no Range"
            assert default in ranges[key], f"{name}: default {key}={default} outside {ranges[key]}"


@pytest.mark.parametrize("name", NAMES)
def test_values_outside_a_range_are_refused_in_one_line(name):
    cls = load_policy_class(name)
    for key, r in param_ranges(cls).items():
        tp = policy_params(cls)[key][0]
        bad = ["99999999999999999999", "-99999999999999999999"]
        if tp is float:
            bad += ["inf", "-inf", "1e300"]
        for text in bad:
            with pytest.raises(ParamError) as err:
                parse_params(cls, [f"{key}={text}"])
            msg = str(err.value)
            assert "\n" not in msg and f"policy '{cls.name}'" in msg and str(r) in msg
        with pytest.raises(ParamError, match=f"{key} must be a number in"):
            make_policy(cls, {key: math.nan if tp is float else 10**30}, 0)


def test_range_bounds_open_and_closed():
    r = Range(0, 1, lo_open=True)
    assert 0 not in r and 1e-300 in r and 1 in r and 1.0000001 not in r
    assert math.nan not in r and True not in r and "0.5" not in r
    assert str(r) == "(0, 1]" and str(Range(0, 1e6)) == "[0, 1e+06]"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["-P", "tiresias", "-p", "thresholds=nan"], "thresholds must be finite"),
        (["-P", "tiresias", "-p", "thresholds=100,inf"], "thresholds must be finite"),
        # an empty list ran Tiresias with one queue, exit 0
        (["-P", "tiresias", "-p", "thresholds="], "at least one threshold"),
        (["-P", "tiresias:thresholds=,", "-c", "default"], "at least one threshold"),
        (["-P", "tiresias-l", "-p", "thresholds= "], "at least one threshold"),
        # a threshold left out dropped a queue without a word
        (
            ["-P", "tiresias", "-p", "thresholds=3250,,7200"],
            "with none left empty, got '3250,,7200'",
        ),
        (["-P", "tiresias", "-p", "thresholds=3250,"], "with none left empty, got '3250,'"),
        (["-P", "tiresias-l", "-p", "thresholds=,3250"], "with none left empty, got ',3250'"),
        (["-P", "tiresias", "-p", "starve=1e300"], "starve must be a number in [0, 1e+06]"),
        (["-P", "srtf-periodic", "-p", "interval=1e300"], "interval must be a number in"),
        (["-P", "lazer", "-p", "starts=1000000000"], "starts must be a number in [1, 100]"),
        (["-P", "lazer", "-p", "max_defer=1e300"], "max_defer must be a number in"),
    ],
)
def test_hostile_values_end_in_one_error_line(argv, needle):
    r = CliRunner().invoke(app, ["replay", "tiny", *argv])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], r.output
