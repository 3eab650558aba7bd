"""Means and Student-t intervals (gpusched.results.stats) against a textbook example and by hand."""

from __future__ import annotations

import math

import pytest

from gpusched.results.stats import paired_interval, t_interval

# Student's sleep data (Cushny & Peebles 1905, as analysed by "Student", Biometrika 6(1),
# 1908): extra hours of sleep of 10 patients under two drugs. R's documented example
# ``t.test(extra ~ group, data = sleep, paired = TRUE)`` reports the mean difference
# -1.58 (group 1 minus group 2), t = -4.0621 on 9 degrees of freedom and the 95 percent
# confidence interval (-2.4598858, -0.7001142).
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_paired_interval_matches_students_sleep_data():
    d = paired_interval(SLEEP_2, SLEEP_1)  # group 1 minus group 2, as R reports it
    assert d.n == 10
    assert d.mean == pytest.approx(-1.58, abs=1e-12)
    assert d.low == pytest.approx(-2.4598858, abs=1e-7)
    assert d.high == pytest.approx(-0.7001142, abs=1e-7)
    # t statistic = mean / (s / sqrt(n))
    assert d.std is not None
    assert d.mean / (d.std / math.sqrt(d.n)) == pytest.approx(-4.0621, abs=1e-4)
    assert d.within_noise is False
    # the other way round: the same interval mirrored
    e = paired_interval(SLEEP_1, SLEEP_2)
    assert (e.low, e.high) == pytest.approx((0.7001142, 2.4598858), abs=1e-7)


def test_t_interval_by_hand_two_values():
    # 1 and 3: mean 2, s = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2); t(0.975, 1) = 12.706
    # (any t table), so the half-width is 12.706 * sqrt(2) / sqrt(2) = 12.706
    i = t_interval([1.0, 3.0])
    assert i.mean == 2.0
    assert i.std == pytest.approx(math.sqrt(2.0))
    assert i.half_width == pytest.approx(12.706, abs=5e-4)
    assert i.contains(-10.0) and not i.contains(15.0)


def test_t_interval_by_hand_sleep_group_1():
    # mean 0.75; s = 1.789010 (sum of squares 28.805 / 9); t(0.975, 9) = 2.262 (t table):
    # half-width 2.262157 * 1.789010 / sqrt(10) = 1.279780
    i = t_interval(SLEEP_1)
    assert i.mean == pytest.approx(0.75)
    assert i.std == pytest.approx(math.sqrt(28.805 / 9))
    assert i.half_width == pytest.approx(1.279780, abs=1e-6)


def test_one_value_has_no_interval_and_no_nan():
    i = t_interval([5.0])
    assert (i.n, i.mean, i.std, i.half_width, i.low, i.high) == (1, 5.0, None, None, None, None)
    assert i.contains(5.0) is None and i.within_noise is None


def test_identical_values_give_a_zero_width_interval():
    i = t_interval([4.0, 4.0, 4.0])
    assert (i.std, i.half_width, i.low, i.high) == (0.0, 0.0, 4.0, 4.0)
    # the float sum of three 0.1 over 3 is 0.10000000000000002: no rounding noise is shown
    i = t_interval([0.1, 0.1, 0.1])
    assert (i.mean, i.std, i.half_width) == (0.1, 0.0, 0.0)
    assert paired_interval([1.0, 2.0], [1.0, 2.0]).within_noise is True
    assert paired_interval([1.0, 2.0], [2.0, 3.0]).within_noise is False


def test_wider_confidence_gives_a_wider_interval():
    assert t_interval(SLEEP_1, 0.99).half_width > t_interval(SLEEP_1).half_width


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t_interval([]), "at least one"),
        (lambda: t_interval([1.0, math.nan]), "finite"),
        (lambda: t_interval([1.0, 2.0], 1.0), "confidence"),
        (lambda: paired_interval([1.0], [1.0, 2.0]), "equal lengths"),
    ],
)
def test_bad_calls(call, message):
    with pytest.raises(ValueError, match=message):
        call()
