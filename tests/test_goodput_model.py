"""Pollux's goodput job model (gpusched/jobmodels/goodput.py): hand-computed goodput, the
agent's batch choice, the bundled data, and one-line errors on bad rows."""

from __future__ import annotations

import csv
import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from gpusched.core.jobs import prepare_jobs
from gpusched.errors import TraceError
from gpusched.io.cluster import ClusterSpec
from gpusched.io.trace import Trace
from gpusched.jobmodels.goodput import (
    ADAPTIVE,
    JOB_MODEL,
    best_configs,
    candidates,
    fixed_config,
    gain,
    iteration_time,
    load_apps,
)

DATA = Path(__file__).resolve().parents[1] / "gpusched" / "data"


def _trace(rows, throughput=None):
    """rows: (model, num_gpus, per-GPU batch, iterations); ``throughput``: that column."""
    n = len(rows)
    extra = {"batch_size": [str(r[2]) for r in rows], "goodput": ["1"] * n}
    if throughput is not None:
        extra["throughput"] = list(throughput)
    return Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[0.0] * n,
        num_gpus=[r[1] for r in rows],
        duration=[np.nan] * n,
        iterations=[r[3] for r in rows],
        model=[r[0] for r in rows],
        extra=extra,
        source="t.csv",
    )


def _perf(rows, **options):
    cluster = ClusterSpec.homogeneous(16, 4)
    jobs = prepare_jobs(_trace(rows), cluster)
    return JOB_MODEL.perf(jobs, cluster, **options), jobs


def test_goodput_by_hand_cifar10():
    # cifar10, fixed batch 512 on 4 GPUs of one node: ceil(512/4) = 128 per GPU, no
    # accumulation (128 <= max local 1024). sharing.toml [models.cifar10]:
    #   T_grad = 0.01723 + 0.0006642 x 128 = 0.1022476 s
    #   T_sync = 0.02906 + 0.004483 x (4 - 2) = 0.038026 s (one node)
    #   T = (T_grad^1.855 + T_sync^1.855)^(1/1.855) = 0.11074619006447484 s
    # pollux_gradstats.csv.gz, cifar10, batch 512, epoch 10: sqr 0.14840219280546516,
    # var 2.424385923306376; scale 512/128 = 4:
    #   gain = (var + sqr) / (var / 4 + sqr) = 3.4099306016361455
    # t_ref = T(1 GPU, 128) = T_grad = 0.1022476 s; rate = gain / T x t_ref
    app = load_apps()[1]
    # a whole cifar10 job: iterations x 512 / 128 = the application's progress
    perf, jobs = _perf([("cifar10", 4, 128, app.progress * 128 / 512)])
    assert app.t_ref == pytest.approx(0.1022476, rel=1e-12)
    # epoch 10 begins at progress 3906.95... (min over batches), 11 at 4297
    remaining = jobs.work_s[0] - 4000.0 * app.t_ref
    rate, level = perf.progress_rate(0, np.arange(4), None, remaining, True)
    assert rate == pytest.approx(3.1482547614583285, rel=1e-9)
    assert perf.agent(0).epoch == 10
    # it re-tunes at epoch 11 (progress 4297), or after its first interval (60 s less its
    # 30 s restart) if that came first
    epoch_11 = jobs.work_s[0] - 4297.0 * app.t_ref
    assert level == pytest.approx(max(epoch_11, remaining - rate * 30.0), rel=1e-12)
    assert level == pytest.approx(epoch_11, rel=1e-12)
    g = gain(128, 512, 0.14840219280546516, 2.424385923306376)
    assert float(g) == pytest.approx(3.4099306016361455, rel=1e-12)


def test_goodput_by_hand_imagenet():
    # imagenet, fixed batch 3200 on 8 GPUs over 2 nodes: ceil(3200/8) = 400 per GPU >
    # max local 200, so s = 1 accumulation step of m = 200. sharing.toml:
    #   T_grad = 0.07844 + 0.004208 x 200 = 0.92004 s
    #   T_sync = 0.328 + 0.007686 x (8 - 2) = 0.374116 s (inter-node)
    #   T = 1 x T_grad + (T_grad^2.269 + T_sync^2.269)^(1/2.269) = 1.8909202473705313 s
    # imagenet, batch 3200 (validated), epoch 30: sqr 0.023449173454772324,
    # var 6.136699843745661; scale 3200/200 = 16: gain = 15.135764800832703
    app = load_apps()[3]
    perf, jobs = _perf([("imagenet", 8, 400, app.progress * 200 / 3200)])
    remaining = jobs.work_s[0] - 195000.0 * app.t_ref  # epoch 30: [192176, 198581)
    rate, _ = perf.progress_rate(0, np.array([0, 1, 2, 3, 4, 5, 6, 7]), None, remaining, True)
    a = perf.agent(0)
    assert (a.k, a.n, a.m, a.s, a.epoch) == (8, 2, 200, 1, 30)
    assert rate == pytest.approx(15.135764800832703 * 0.92004 / 1.8909202473705313, rel=1e-9)
    assert float(iteration_time(app.profile, 200, 1, 8, 2)) == pytest.approx(
        1.8909202473705313, rel=1e-12
    )


def test_agent_picks_the_best_candidate():
    app = load_apps()[1]  # cifar10
    theta, sqr, var = app.theta(), 0.2, 2.0
    for k, n in ((1, 1), (3, 1), (4, 1), (8, 2), (24, 6)):
        good, m, s = best_configs(app, theta, sqr, var, np.array([k]), np.array([n]))
        mm, ss, ok = candidates(app, np.array([k]))
        best = 0.0
        for m_i, s_i, v in zip(mm[0], ss[0], ok[0], strict=True):
            if not v:
                continue
            t = float(iteration_time(app.profile, int(m_i), int(s_i), k, n))
            g = float(gain(128, k * m_i * (s_i + 1), sqr, var)) / t
            best = max(best, g)
        assert good[0] == pytest.approx(best, rel=1e-12)
        assert app.min_local <= m[0] <= app.max_local


def test_accumulation_rules():
    cifar, ncf = load_apps()[1], load_apps()[4]
    assert fixed_config(cifar, 128, 1) == (128, 0)  # M0 on one GPU: no step
    assert fixed_config(cifar, 256, 1) == (128, 1)  # above M0 on one GPU: >= 1 step
    assert fixed_config(cifar, 2048, 6) == (342, 0)  # ceil(2048 / 6)
    assert fixed_config(ncf, 32768, 1) == (16384, 1)
    m, s, ok = candidates(cifar, np.array([1]))
    assert (s[0][ok[0]][1:] >= 1).all()  # on one GPU every batch above M0 accumulates


def test_ncf_keeps_its_batch_under_pollux():
    perf, jobs = _perf([("ncf", 1, 32768, 10.0)])
    perf.progress_rate(0, np.array([0]), ADAPTIVE, jobs.work_s[0], True)
    a = perf.agent(0)
    assert not a.adaptive and a.global_batch == 32768


def test_adaptive_agent_starts_small_then_tunes():
    perf, jobs = _perf([("cifar10", 1, 128, 1000.0)])
    w = jobs.work_s[0]
    perf.progress_rate(0, np.arange(4), ADAPTIVE, w, True)
    a = perf.agent(0)
    assert a.global_batch == 128 and a.profiled  # max(M0, 32 x 4) before any fit (sim L70)
    v = a.version
    perf.progress_rate(0, np.arange(4), ADAPTIVE, w - 10.0, False)  # its re-tune
    assert a.version > v and a.global_batch != 128


def test_progress_of_each_application():
    # paper's total progress: the min over batch sizes of the last epoch's progress
    want = {"bert": 14774.0, "cifar10": 39062.90816659533, "ncf": 194174.0}
    apps = {a.name: a for a in load_apps()}
    for name, p in want.items():
        assert apps[name].progress == pytest.approx(p, rel=1e-12)


def test_bundled_statistics_match_their_rows():
    with gzip.open(DATA / "pollux_gradstats.csv.gz", "rt") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 2152
    apps = {a.name: a for a in load_apps()}
    r = next(x for x in rows if (x["app"], x["batch_size"], x["epoch"]) == ("yolov3", "64", "7"))
    sqr, var = apps["yolov3"].stats(64, 7)
    assert (float(sqr), float(var)) == (float(r["grad_sqr"]), float(r["grad_var"]))
    # between validated batches each statistic is interpolated linearly (app L186-202)
    s32, _ = apps["yolov3"].stats(32, 7)
    s48, _ = apps["yolov3"].stats(48, 7)
    assert float(s48) == pytest.approx((float(s32) + float(sqr)) / 2, rel=1e-12)


@pytest.mark.parametrize(
    ("row", "what"),
    [
        (("resnet", 1, 128, 10.0), "is not a Pollux application"),
        (("cifar10", 1, 64, 10.0), "validated for 128 to 4096"),
        (("cifar10", 2, 4000, 10.0), "validated for 128 to 4096"),
        (("cifar10", 8, "x", 10.0), "expected a whole number of samples per GPU"),
        (("ncf", 2, 16384, 10.0), "on at most 1 GPU"),
        (("deepspeech2", 4, 5, 10.0), "takes 10 to 80"),
    ],
)
def test_bad_rows_name_their_line(row, what):
    cluster = ClusterSpec.homogeneous(16, 4)
    with pytest.raises(TraceError) as err:
        prepare_jobs(_trace([row]), cluster)
    text = str(err.value)
    assert text.startswith("t.csv:2: column '") and what in text and "\n" not in text


def test_refit_is_an_option():
    perf, jobs = _perf([("bert", 8, 48, 100.0)], throughput="refit")
    base, _ = _perf([("bert", 8, 48, 100.0)])
    gpus = np.arange(8)
    r1 = perf.progress_rate(0, gpus, None, jobs.work_s[0], True)[0]
    r0 = base.progress_rate(0, gpus, None, jobs.work_s[0], True)[0]
    assert r1 != r0 and math.isfinite(r1)
