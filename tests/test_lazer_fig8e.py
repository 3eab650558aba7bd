"""examples/lazer/fig8e.py (Fig. 8(e) of the Lazer paper): F in hindsight and the searches.

F of eq. 4 for a decision is computed after the run from the trace's arrivals; these cases
are hand-computed, and a tiny replay checks that the hindsight f equals the f the policy
itself observed for its samples.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).parent.parent / "examples" / "lazer" / "fig8e.py"
_spec = importlib.util.spec_from_file_location("lazer_fig8e", _PATH)
assert _spec is not None and _spec.loader is not None
fig8e = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fig8e  # dataclasses look their module up there
_spec.loader.exec_module(fig8e)

# arrivals (s) and durations (s): a decision at t0 = 20 for j_new with T' = 50, p = 5,
# l = 10, so F's window is Delta in (5, 15], i.e. arrivals in (25, 35]
SUBMIT = np.array([0.0, 20.0, 25.0, 28.0, 31.0, 36.0])
DURATION = np.array([100.0, 50.0, 10.0, 60.0, 10.0, 10.0])


def test_f_is_the_first_shorter_arrival_in_the_load_window_less_p():
    # 25 is at Delta = p (excluded); 28 is longer than j_new (60 > 50); 31 is the first
    # shorter arrival inside: F = 31 - 20 - 5 = 6
    assert fig8e.hindsight_f_time(SUBMIT, DURATION, 20.0, 5.0, 10.0, 50.0) == pytest.approx(6.0)


def test_f_is_zero_without_a_shorter_arrival_in_the_window():
    # l = 5: window (25, 30]: only the longer job at 28
    assert fig8e.hindsight_f_time(SUBMIT, DURATION, 20.0, 5.0, 5.0, 50.0) == 0.0
    # the window's end is included: l = 6 reaches the arrival at 31 (Delta = 11 = p + l)
    assert fig8e.hindsight_f_time(SUBMIT, DURATION, 20.0, 5.0, 6.0, 50.0) == pytest.approx(6.0)


def test_grid_and_random_search_explore_integers_and_count_to_the_best():
    fs = fig8e.search_grid(3.0, 10)
    assert fs.tolist() == [3.0, 2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert fig8e.evals_to_best(fs) == 4
    xs = fig8e.search_random(0.0, 5000, np.random.default_rng(1))  # F = 0: f = X
    assert set(xs.tolist()) == set(range(101))  # uniform over the integers 0..100


def test_bo_reaches_f_zero_when_f_is_zero():
    fs, pred, _ = fig8e.search_bo(np.zeros(4), 0.0, 20, np.random.default_rng(0))
    assert fs.size == 20
    assert fs.min() == 0.0  # X = 0 at the bound
    assert pred == 0.0


def test_hindsight_f_equals_what_the_policy_observed(tmp_path):
    # 16-GPU testbed, 113 s loads, 8 s saves. j0 (16 GPUs) trains from 113 s; j1 (16 GPUs,
    # shorter) arrives at 200: J_r = {j0}, p = 8; j2 (1 GPU, shorter still) arrives at 211,
    # Delta = 11 in (8, 121]: F = 11 - 8 = 3.
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,load_s,save_s\n"
        "a,0,16,1000,113,8\nb,200,16,500,113,8\nc,211,1,10,113,8\n"
    )
    found, n_checked = fig8e.collect(str(trace))
    assert found[0].t0 == 200.0 and found[0].p == 8.0 and found[0].load == 113.0
    assert found[0].f_time == pytest.approx(3.0)
    assert n_checked == len(found) >= 1  # every sample's f was reproduced
