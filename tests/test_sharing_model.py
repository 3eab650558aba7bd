"""The SJF-BSBF GPU-sharing job model: eq. 3, 4, 7, memory, xi, the job-model hooks."""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gpusched.core.jobs import JobTable
from gpusched.core.state import XI_DEFAULT
from gpusched.errors import GpuschedError, TraceError
from gpusched.io.cluster import ClusterSpec, ServerGroup
from gpusched.io.trace import read_trace
from gpusched.jobmodels import sharing as S
from gpusched.jobmodels.sharing import (
    JOB_MODEL,
    MODELS,
    Profile,
    SharingPerf,
    XiTableError,
    derive_xi,
    load_profiles,
    load_xi_table,
)

# A made-up model with round numbers, so that eq. 3/4/7 can be worked by hand.
TOY = Profile(
    name="toy",
    alpha_comp_s=0.1,
    beta_comp_s=0.01,
    intra_alpha_s=0.05,
    intra_beta_s=0.01,
    inter_alpha_s=0.3,
    inter_beta_s=0.02,
    delta=2.0,
    batch_size=40,
    params=1e6,
    mem_base_gb=1.0,
    mem_per_sample_gb=0.25,
)


def test_eq3_eq4_by_hand():
    assert S.t_comp(TOY, 40) == pytest.approx(0.1 + 0.4)
    assert S.t_comm(TOY, 1, 1) == 0.0
    assert S.t_comm(TOY, 2, 1) == pytest.approx(0.05)  # intra, N - 2 = 0
    assert S.t_comm(TOY, 4, 1) == pytest.approx(0.05 + 2 * 0.01)
    assert S.t_comm(TOY, 8, 2) == pytest.approx(0.3 + 6 * 0.02)  # inter


def test_eq7_one_step_is_the_overlap_formula():
    # s = 1: t_comp(40) = 0.5, t_comm(4 GPUs, 1 server) = 0.07, delta = 2
    assert S.t_iter(TOY, 40, 40, 4, 1) == pytest.approx(math.hypot(0.5, 0.07))
    # one GPU: no all-reduce, the iteration is the computation
    assert S.t_iter(TOY, 40, 40, 1, 1) == pytest.approx(0.5)


def test_eq7_accumulation_adds_s_minus_1_computations():
    # sub-batch 10 -> s = 4 steps of 10 samples: 3 x t_comp(10) + hypot(t_comp(10), t_comm)
    tc = 0.1 + 0.01 * 10
    assert S.t_iter(TOY, 40, 10, 4, 1) == pytest.approx(3 * tc + math.hypot(tc, 0.07))
    # sub-batch 15 of 40 -> s = ceil(40/15) = 3 steps of 40/3 samples (exactly B in all)
    tc3 = 0.1 + 0.01 * 40 / 3
    assert S.t_iter(TOY, 40, 15, 4, 1) == pytest.approx(2 * tc3 + math.hypot(tc3, 0.07))


def test_sub_batches_halve_to_one():
    assert S.sub_batches(40) == [40, 20, 10, 5, 3, 2, 1]
    assert S.sub_batches(12) == [12, 6, 3, 2, 1]
    assert S.sub_batches(1) == [1]


def test_memory_is_linear_in_the_sub_batch():
    assert S.mem_gb(TOY, 40) == pytest.approx(11.0)
    assert S.mem_gb(TOY, 10) == pytest.approx(3.5)


def test_shipped_profiles_are_the_six_models_and_sane():
    prof = load_profiles()
    assert tuple(prof) == MODELS
    for p in prof.values():
        b = p.batch_size
        # accumulation never makes an iteration faster; spreading over servers costs time
        assert S.t_iter(p, b, 1, 4, 1) > S.t_iter(p, b, b, 4, 1)
        assert S.t_iter(p, b, b, 8, 2) >= S.t_iter(p, b, b, 4, 1) >= S.t_iter(p, b, b, 1, 1)
        # the default batch fits an 11 GB 2080 Ti alone (how the defaults were chosen)
        assert S.mem_gb(p, b) <= 11.0


def test_xi_table_regenerates_from_the_time_model():
    shipped = S.default_xi()
    derived = derive_xi(load_profiles())
    assert shipped.shape == (6, 6)
    np.testing.assert_allclose(shipped, derived, atol=5.1e-4)  # TOML holds 3 decimals
    assert (derived >= 1).all() and (derived <= 2).all()
    np.testing.assert_allclose(derived, derived.T)  # 1 + u_a u_b is symmetric


# --------------------------------------------------------------------------- xi files

_ALL = "\n".join(f"[xi.{a}]\n" + "\n".join(f"{b} = 1.5" for b in MODELS) + "\n" for a in MODELS)


def _xi_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "xi.toml"
    p.write_text(text)
    return p


def test_xi_table_loads_in_model_order(tmp_path):
    text = _ALL.replace("[xi.ncf]\nbert = 1.5", "[xi.ncf]\nbert = 3")
    xi = load_xi_table(_xi_file(tmp_path, text))
    assert xi[MODELS.index("ncf"), MODELS.index("bert")] == 3.0
    assert (np.delete(xi.ravel(), 4 * 6 + 0) == 1.5).all()


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (_ALL.replace("[xi.bert]", "[xi.bret]"), r"unknown model 'bret' \(did you mean 'bert'\?\)"),
        (_ALL.replace("[xi.ncf]\nbert", "[xi.ncf]\nbertt"), r"\[xi.ncf\]: unknown model 'bertt'"),
        (_ALL.replace("[xi.ncf]\nbert = 1.5\n", "[xi.ncf]\n"), r"\[xi.ncf\]: missing entry 'bert'"),
        (_ALL.replace("[xi.yolov3]", "[other]"), r"unexpected top-level key 'other'"),
        (
            _ALL.replace("[xi.ncf]\nbert = 1.5", "[xi.ncf]\nbert = 0.5"),
            r"\[xi.ncf\] bert: expected",
        ),
        (
            _ALL.replace("[xi.ncf]\nbert = 1.5", "[xi.ncf]\nbert = nan"),
            r"\[xi.ncf\] bert: expected",
        ),
        (
            _ALL.replace("[xi.ncf]\nbert = 1.5", "[xi.ncf]\nbert = true"),
            r"\[xi.ncf\] bert: expected",
        ),
        (
            _ALL.replace("[xi.ncf]\nbert = 1.5", "[xi.ncf]\nbert = '2'"),
            r"\[xi.ncf\] bert: expected",
        ),
        (_ALL.replace("[xi.ncf]", "[xi.ncf"), r"not valid TOML"),
        ("", r"no \[xi\] table"),
    ],
)
def test_xi_table_errors_are_one_line_naming_file_and_entry(tmp_path, text, expect):
    path = _xi_file(tmp_path, text)
    with pytest.raises(XiTableError, match=expect) as info:
        load_xi_table(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path))
    assert isinstance(info.value, GpuschedError)


def test_xi_table_missing_file(tmp_path):
    with pytest.raises(XiTableError, match="file not found"):
        load_xi_table(tmp_path / "nope.toml")


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.toml"
    os.mkfifo(path)  # opening it for reading would block until a writer comes
    return path


def _huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.toml"
    with path.open("wb") as fh:
        fh.truncate(S.MAX_XI_TABLE_BYTES + 1)  # sparse: big, not slow to make
    return path


def _latin1(tmp_path: Path) -> Path:
    path = tmp_path / "latin1.toml"
    path.write_bytes(_ALL.replace("[xi.bert]", "# caf\xe9\n[xi.bert]").encode("latin-1"))
    return path


@pytest.mark.parametrize(
    ("make", "expect"),
    [
        (_fifo, "not a regular file; expected an xi table"),
        (lambda tmp: Path("/dev/zero"), "not a regular file; expected an xi table"),
        (lambda tmp: tmp, "is a folder; expected an xi table"),
        (_huge, f"a table of interference ratios may be at most {S.MAX_XI_TABLE_BYTES:,} bytes"),
        (_latin1, "not UTF-8 text (byte 0xe9"),
    ],
    ids=["fifo", "dev-zero", "folder", "huge", "not-utf8"],
)
def test_xi_table_must_be_a_small_regular_text_file(tmp_path, make, expect):
    path = make(tmp_path)
    with pytest.raises(XiTableError) as info:
        load_xi_table(path)
    msg = str(info.value)
    assert expect in msg and "\n" not in msg


def test_bad_xi_table_at_the_command_line_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from gpusched.cli import app

    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,iterations,model\na,0,1,100,ncf\n")
    for bad in (_fifo(tmp_path), Path("/dev/zero"), tmp_path):
        args = ["replay", str(trace), "-c", "sjf-bsbf-16x4", "-P", "sjf-bsbf"]
        r = CliRunner().invoke(app, [*args, "-p", f"xi_table={bad}"])
        assert r.exit_code == 2, r.output
        line = r.output.strip()
        assert line.startswith("error: ") and len(line.splitlines()) == 1, line
        assert "expected an xi table" in line


def test_gavel_table_regenerates_from_its_throughputs():
    import tomllib

    doc = tomllib.loads(
        (Path(S.__file__).parent.parent / "data" / "sharing_xi_gavel.toml").read_text()
    )
    g = doc["gavel"]
    measured = {
        ("cifar10", "cifar10"): g["cifar10_alone"] / g["cifar10_beside_cifar10"][0],
        ("cifar10", "imagenet"): g["cifar10_alone"] / g["cifar10_beside_imagenet"][0],
        ("imagenet", "cifar10"): g["imagenet_alone"] / g["imagenet_beside_cifar10"][0],
    }
    # the pair lists are symmetric: [self, partner] seen from either side
    assert g["cifar10_beside_imagenet"] == g["imagenet_beside_cifar10"][::-1]
    assert g["imagenet_beside_imagenet"] == [0.0, 0.0]  # did not fit one V100: not measured
    xi, derived = S.gavel_xi(), S.default_xi()
    for a, ma in enumerate(MODELS):
        for b, mb in enumerate(MODELS):
            want = measured.get((ma, mb))
            if want is None:
                assert xi[a, b] == derived[a, b], (ma, mb)  # no Gavel model: derived kept
            else:
                assert xi[a, b] == round(want, 3), (ma, mb)
    assert len(measured) == 3 and (xi != derived).sum() == 3


# --------------------------------------------------------------------------- durations


def _trace(tmp_path: Path, rows: str) -> object:
    p = tmp_path / "t.csv"
    p.write_text("job_id,submit_time,num_gpus,iterations,model,batch_size\n" + rows)
    return read_trace(p)


def test_owns_only_the_six_models(tmp_path):
    tr = _trace(tmp_path, "a,0,1,10,bert,\nb,0,1,10,BERT,\nc,0,1,10,VGG19,\nd,0,1,10,ncf,\n")
    assert JOB_MODEL.owns(tr).tolist() == [True, False, False, True]


def test_durations_are_iterations_times_eq7_at_ideal_placement(tmp_path):
    tr = _trace(tmp_path, "a,0,8,100,cifar10,\nb,0,2,50,bert,4\n")
    work = np.full(2, np.nan)
    work, notes = JOB_MODEL.durations(tr, work, np.array([True, True]))
    prof = load_profiles()
    c, b = prof["cifar10"], prof["bert"]
    assert work[0] == pytest.approx(100 * S.t_iter(c, c.batch_size, c.batch_size, 8, 2))
    assert work[1] == pytest.approx(50 * S.t_iter(b, 4, 4, 2, 1))
    assert notes and "4-GPU servers" in notes[0]


@pytest.mark.parametrize("bad", ["0", "-3", "2.5", " 4", "four", "1e3"])
def test_durations_bad_batch_size_names_line_and_column(tmp_path, bad):
    tr = _trace(tmp_path, f"a,0,1,10,bert,8\nb,0,1,10,bert,{bad}\n")
    with pytest.raises(TraceError, match=r"t\.csv:3: column 'batch_size': expected a positive"):
        JOB_MODEL.durations(tr, np.full(2, np.nan), np.array([True, True]))


def test_durations_out_of_range_names_line(tmp_path):
    tr = _trace(tmp_path, "a,0,1,1e12,imagenet,\n")
    with pytest.raises(TraceError, match=r"t\.csv:2: column 'iterations'.*expected a duration"):
        JOB_MODEL.durations(tr, np.full(1, np.nan), np.array([True]))


# --------------------------------------------------------------------------- perf


def _jobs(models, n_gpus, batch=None):
    n = len(models)
    extra = {} if batch is None else {"batch_size": np.array(batch, dtype=object)}
    return JobTable(
        job_id=np.array([f"j{i}" for i in range(n)], dtype=object),
        submit_s=np.zeros(n),
        n_gpus=np.array(n_gpus, dtype=np.int32),
        work_s=np.ones(n),
        row=np.arange(n),
        source="jobs.csv",
        model=np.array(models, dtype=object),
        iterations=np.ones(n),
        extra=extra,
    )


def _cluster(mem=11.0):
    return ClusterSpec(
        name="c", description="", groups=(ServerGroup(4, 4, gpu_mem_gb=mem),), gpu_capacity=2
    )


def test_rate_is_one_at_full_batch_and_ideal_placement():
    jobs = _jobs(["cifar10", "bert", "other"], [4, 8, 2])
    perf = SharingPerf(jobs, _cluster())
    assert perf.rate(0, np.arange(4)) == pytest.approx(1.0)  # one server
    assert perf.rate(1, np.arange(8)) == pytest.approx(1.0)  # two whole servers
    assert perf.rate(2, np.array([0, 9])) == 1.0  # plain job


def test_rate_below_one_with_a_sub_batch_or_a_spread():
    jobs = _jobs(["bert"], [4])
    perf = SharingPerf(jobs, _cluster())
    p = load_profiles()["bert"]
    # bert at its default B = 8 on one 4-GPU server: t_comp(8) = 0.213 + 8 x 0.0578 = 0.676 s,
    # t_iter = 0.734 s. Sub-batch 2 takes s = 4 steps of 2 samples: the same 8 samples of
    # beta, but the per-step alpha (0.213 s) is paid 4 times, and only the last step
    # overlaps the all-reduce: 3 x t_comp(2) + (t_comp(2)^d + t_comm^d)^(1/d) = 1.43 s,
    # so the job progresses at 0.734 / 1.43 = 0.51 of its ideal rate.
    full = S.t_iter(p, 8, 8, 4, 1)
    acc = S.t_iter(p, 8, 2, 4, 1)
    tc2, tm, d = S.t_comp(p, 2), S.t_comm(p, 4, 1), p.delta
    assert acc == pytest.approx(3 * tc2 + (tc2**d + tm**d) ** (1 / d))
    assert acc - full > 3 * p.alpha_comp_s - (full - S.t_comp(p, 8)) > 0
    assert perf.rate(0, np.arange(4), 2) == pytest.approx(full / acc)
    assert perf.rate(0, np.arange(4), 2) < 1.0
    assert perf.rate(0, np.array([0, 1, 4, 5])) < 1.0  # two servers instead of one


def test_batch_size_column_and_default():
    jobs = _jobs(["yolov3", "yolov3"], [1, 1], batch=["4", ""])
    perf = SharingPerf(jobs, _cluster())
    assert perf.batch.tolist() == [4, load_profiles()["yolov3"].batch_size]
    assert perf.sub_batches(0) == [4, 2, 1]


def test_bad_batch_size_in_job_table_names_job():
    with pytest.raises(TraceError, match=r"jobs\.csv: job j1: column 'batch_size'"):
        SharingPerf(_jobs(["ncf", "ncf"], [1, 1], batch=["64", "x"]), _cluster())


def test_memory_decides_the_largest_sub_batch_beside_a_partner():
    jobs = _jobs(["imagenet", "cifar10", "other"], [1, 1, 1])
    perf = SharingPerf(jobs, _cluster(mem=11.0))
    room = 11.0 - perf.mem_gb(1)  # cifar10 at its full batch
    best = perf.largest_fitting(0, [(1, None)])
    assert best is not None and perf.mem_gb(0, best) <= room
    larger = [b for b in perf.sub_batches(0) if b > best]
    assert larger and all(perf.mem_gb(0, b) > room for b in larger)
    gpus = np.array([0])
    assert perf.check_start(0, gpus, best, [(1, None)]) is None
    assert "GB of GPU memory" in perf.check_start(0, gpus, None, [(1, None)])
    assert perf.check_start(0, gpus, None, []) is None  # alone at full batch it fits
    assert perf.check_start(2, gpus, None, [(0, None)]) is None  # plain: no memory


def test_check_start_rejects_bad_configs():
    perf = SharingPerf(_jobs(["bert", "other"], [1, 1]), _cluster())
    g = np.array([0])
    assert "one of [8, 4, 2, 1]" in perf.check_start(0, g, 3, [])
    assert "one of" in perf.check_start(0, g, True, [])
    assert "one of" in perf.check_start(0, g, 9, [])
    assert "must be None" in perf.check_start(1, g, 2, [])


def test_no_gpu_memory_means_no_memory_check():
    perf = SharingPerf(_jobs(["bert", "bert"], [1, 1], batch=["64", "64"]), _cluster(mem=None))
    assert perf.check_start(0, np.array([0]), None, [(1, None)]) is None
    assert perf.largest_fitting(0, [(1, None)]) == 64


def test_interference_kinds_and_plain_row():
    perf = SharingPerf(_jobs(["ncf", "other", "bert"], [1, 1, 1]), _cluster())
    kind, xi = perf.interference()
    assert kind.dtype == np.int32 and kind.tolist() == [4, 6, 0]
    assert xi.shape == (7, 7)
    np.testing.assert_array_equal(xi[:6, :6], S.default_xi())
    assert (xi[6] == XI_DEFAULT).all() and (xi[:, 6] == XI_DEFAULT).all()


def test_perf_hook_none_without_sharing_models():
    assert JOB_MODEL.perf(_jobs(["VGG19", ""], [1, 1]), _cluster()) is None
    assert isinstance(JOB_MODEL.perf(_jobs(["VGG19", "ncf"], [1, 1]), _cluster()), SharingPerf)


def test_deterministic():
    jobs = _jobs(["bert", "cifar10", "imagenet"], [4, 2, 8])
    a, b = SharingPerf(jobs, _cluster()), SharingPerf(replace(jobs), _cluster())
    gpus = [np.arange(4), np.array([3, 4]), np.arange(8)]
    for j, g in enumerate(gpus):
        for c in [None, *a.sub_batches(j)]:
            assert a.rate(j, g, c) == b.rate(j, g, c)
    np.testing.assert_array_equal(derive_xi(load_profiles()), derive_xi(load_profiles()))
