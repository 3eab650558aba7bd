"""SJF-BSBF and SJF-FFS (SJF-BSBF paper, Alg. 1-2, Theorem 1): hand-checked pieces and schedules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpusched.algorithms.share import best_sub_batch, consolidated, pair_jct, sequential_jct
from gpusched.errors import ParamError
from tests.helpers import run


def _insert_at(kappa: float, solo_a: float, solo_b: float, xi_a: float, xi_b: float) -> float:
    """Average JCT (from now) when A joins B's GPUs ``kappa`` s from now (brute force)."""
    if kappa >= solo_b:  # B is done first: A runs alone from kappa
        return (solo_b + kappa + solo_a) / 2.0
    left_b = solo_b - kappa  # B alone until kappa, then shared
    sa, sb = solo_a * xi_a, left_b * xi_b
    if sa <= sb:
        t_a = kappa + sa
        t_b = kappa + sa + left_b - sa / xi_b
    else:
        t_b = kappa + sb
        t_a = kappa + sb + solo_a - sb / xi_a
    return (t_a + t_b) / 2.0


@pytest.mark.parametrize(
    ("solo_a", "solo_b", "xi", "share"),
    [
        (10.0, 100.0, 1.5, True),  # short newcomer beside a long job: share now
        (10.0, 100.0, 3.0, True),
        (100.0, 10.0, 2.0, False),  # long newcomer beside a nearly done job: wait
        (50.0, 50.0, 2.0, False),  # time-slicing two equal jobs gains nothing
        (50.0, 50.0, 1.2, True),
    ],
)
def test_theorem_1_share_now_or_wait(solo_a: float, solo_b: float, xi: float, share: bool) -> None:
    together = pair_jct(solo_a, solo_b, xi, xi)
    wait = sequential_jct(solo_a, solo_b)
    assert (together < wait) is share
    # Theorem 1: over every insertion time kappa in [0, solo_b] the best is an end point
    grid = [_insert_at(k, solo_a, solo_b, xi, xi) for k in np.linspace(0.0, solo_b, 401)]
    assert min(grid) == pytest.approx(min(together, wait))
    assert min(together, wait) == pytest.approx(min(grid[0], grid[-1]))


def test_theorem_1_by_hand() -> None:
    # A 10 s alone, B 100 s left, xi 1.5: A ends at 15, B has done 10 of its 100 by then
    # and ends at 15 + 90 = 105: mean 60; waiting: B at 100, A at 110: mean 105
    assert pair_jct(10.0, 100.0, 1.5, 1.5) == pytest.approx(60.0)
    assert sequential_jct(10.0, 100.0) == pytest.approx(105.0)
    # A 100 s, B 10 s left, xi 2: B ends at 20, A did 10 and ends at 110: mean 65 > 60
    assert pair_jct(100.0, 10.0, 2.0, 2.0) == pytest.approx(65.0)
    assert sequential_jct(100.0, 10.0) == pytest.approx(60.0)


class _Times:
    """Job 0 (A): full batch 8 and sub-batches 4, 2, 1; job 1 (B) takes 5 GB of an 11 GB
    GPU, so only sub-batches <= 4 fit beside it."""

    kind = np.array([0, 0])
    xi = np.full((1, 1), 1.2)
    limit_gb = 11.0

    def profile(self, j: int, spread: bool = False) -> tuple[list[Any], np.ndarray, np.ndarray]:
        return [None, 4, 2, 1], np.array([100.0, 110.0, 130.0, 170.0]), np.array([8, 5, 4, 3.0])

    def mem(self, j: int, sub: Any) -> float:
        return 5.0


def test_alg_2_searches_the_sub_batch_by_hand() -> None:
    # B has 300 s left. Waiting: (300 + 300 + 100) / 2 = 350. Sharing at sub-batch 4:
    # A ends at 132, B did 110 and ends at 132 + 190 = 322: 227; at 2: (156 + 326) / 2 =
    # 241; at 1: (204 + 334) / 2 = 269. Batch 8 does not fit beside B.
    share, sub, t = best_sub_batch(_Times(), 0, 1, None, 300.0)  # type: ignore[arg-type]
    assert (share, sub) == (True, 4)
    assert t == pytest.approx(227.0)
    # B nearly done (5 s left): waiting, (5 + 5 + 100) / 2 = 55, beats every sub-batch
    share, sub, t = best_sub_batch(_Times(), 0, 1, None, 5.0)  # type: ignore[arg-type]
    assert share is False
    assert t == pytest.approx(55.0)


def test_consolidated_prefers_one_server_then_the_emptiest() -> None:
    server = np.repeat(np.arange(3), 4)
    free = np.zeros(12, bool)
    free[[1, 2, 4, 5, 6, 7, 8]] = True  # server 0: 2 free, 1: 4 free, 2: 1 free
    assert consolidated(free, server, 2).tolist() == [1, 2]  # best fit: server 0
    assert consolidated(free, server, 3).tolist() == [4, 5, 6]
    assert consolidated(free, server, 6).tolist() == [4, 5, 6, 7, 1, 2]
    assert consolidated(free, server, 8) is None


def test_sjf_bsbf_shares_when_it_pays() -> None:
    # one GPU, C = 2, plain jobs (xi 2): a 10 s job arriving beside a 1000 s one shares
    # (mean 514.5 against 1004): job 0 has done 1 s by t = 1, shares until job 1's 10 s are
    # done at 21 (5 of its own), then runs its last 989 s alone: 1010
    res = run([(0.0, 1, 1000.0), (1.0, 1, 10.0)], "sjf-bsbf", 1, 1, gpu_capacity=2)
    assert res.state.job_first_start.tolist() == [0.0, 1.0]
    assert res.state.job_finish.tolist() == pytest.approx([1010.0, 21.0])


def test_sjf_bsbf_waits_when_sharing_hurts_and_sjf_ffs_does_not() -> None:
    # a 1000 s job arriving beside a 20 s one (19 s left): waiting (mean 519) beats
    # sharing (528.5), so SJF-BSBF starts it at 20; SJF-FFS shares at once, and job 0
    # then ends at 1 + 38 = 39 instead of 20
    rows = [(0.0, 1, 20.0), (1.0, 1, 1000.0)]
    bsbf = run(rows, "sjf-bsbf", 1, 1, gpu_capacity=2)
    assert bsbf.state.job_first_start.tolist() == [0.0, 20.0]
    assert bsbf.state.job_finish.tolist() == pytest.approx([20.0, 1020.0])
    ffs = run(rows, "sjf-ffs", 1, 1, gpu_capacity=2)
    assert ffs.state.job_first_start.tolist() == [0.0, 1.0]
    assert ffs.state.job_finish.tolist() == pytest.approx([39.0, 1020.0])


def test_injected_xi_changes_physics_and_decision() -> None:
    # with xi = 1 sharing is free: even the long newcomer shares and nobody slows down
    rows = [(0.0, 1, 20.0), (1.0, 1, 1000.0)]
    res = run(rows, "sjf-bsbf", 1, 1, params=["xi=1.0"], gpu_capacity=2)
    assert res.state.job_first_start.tolist() == [0.0, 1.0]
    assert res.state.job_finish.tolist() == pytest.approx([20.0, 1001.0])


def test_exclusive_cluster_makes_it_sjf() -> None:
    rng = np.random.default_rng(5)
    rows = sorted(
        (float(rng.integers(0, 100)), int(rng.choice([1, 2, 4])), float(rng.integers(5, 200)))
        for _ in range(40)
    )
    sjf = run(rows, "sjf", 2, 4)
    for policy in ("sjf-bsbf", "sjf-ffs"):
        got = run(rows, policy, 2, 4)
        assert got.state.job_finish.tolist() == sjf.state.job_finish.tolist(), policy


@pytest.mark.parametrize("bad", ["xi=0.5", "xi=nan", "xi=-1"])
def test_bad_xi_is_a_param_error(bad: str) -> None:
    with pytest.raises(ParamError, match="xi"):
        run([(0.0, 1, 10.0)], "sjf-bsbf", 1, 1, params=[bad], gpu_capacity=2)


@pytest.mark.parametrize(
    "params",
    [["xi=1.5", "xi_table=x.toml"], ["xi=1.5", "xi_model=gavel"], ["xi_table=x", "xi_model=gavel"]],
)
def test_xi_sources_together_are_refused(params: list[str]) -> None:
    with pytest.raises(ParamError, match="only one of xi, xi_table and xi_model"):
        run([(0.0, 1, 10.0)], "sjf-ffs", 1, 1, params=params)


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ("placement=spread", "placement must be one of aware, ideal"),
        ("placement=", "placement must be one of aware, ideal"),
        ("xi_model=paper", "xi_model must be one of derived, gavel"),
    ],
)
@pytest.mark.parametrize("policy", ["sjf-bsbf", "sjf-ffs"])
def test_bad_placement_and_xi_model_are_param_errors(policy: str, bad: str, what: str) -> None:
    with pytest.raises(ParamError, match=what):
        run([(0.0, 1, 10.0)], policy, 1, 1, params=[bad], gpu_capacity=2)


def test_xi_table_replaces_the_model_pairs(tmp_path: Any) -> None:
    from gpusched.core.registry import load_policy_class
    from gpusched.jobmodels.sharing import MODELS, load_xi_table

    table = tmp_path / "xi.toml"
    rows = [
        f"[xi.{a}]\n" + "".join(f"{b} = {1.5 if a == b else 1.25}\n" for b in MODELS)
        for a in MODELS
    ]
    table.write_text("\n".join(rows))
    policy = load_policy_class("sjf-bsbf")(xi_table=str(table))
    got = policy.interference(np.full((7, 7), 2.0))
    np.testing.assert_array_equal(got[:6, :6], load_xi_table(table))
    assert got[6].tolist() == [2.0] * 7  # jobs of no sharing model keep the engine's ratio
    with pytest.raises(ParamError, match="no job of this trace is one of them"):
        run([(0.0, 1, 10.0)], "sjf-bsbf", 1, 1, params=[f"xi_table={table}"], gpu_capacity=2)
