"""The model catalogue (gpusched/data/models.toml) and ideal per-iteration times."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpusched.errors import CatalogueError
from gpusched.jobmodels.catalogue import default_catalogue_path, load_catalogue
from gpusched.jobmodels.heavy_edge import alpha_min_estimate

TABLE_I = [
    "VGG19", "ResNet152", "Inception-V3", "BERT-large", "XLNet-large", "T5",
    "GPT-6.7B", "GPT-13B", "GPT-175B",
]  # fmt: skip


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def test_loads_every_table_i_model(cat):
    assert sorted(cat.models) == sorted(TABLE_I)
    assert load_catalogue(default_catalogue_path()).models.keys() == cat.models.keys()


@pytest.mark.parametrize("name", TABLE_I)
def test_model_shape(cat, name):
    m = cat.model(name)
    assert len(m.configs) >= 1
    for c in m.configs:
        assert len(c.stages) == len(c.replicas) and c.n_gpus == sum(c.replicas)
        assert sum(s.n_blocks for s in c.stages) == len(m.blocks)
        assert sum(s.params for s in c.stages) == m.params
        assert sum(s.fwd_s for s in c.stages) == pytest.approx(sum(b.fwd_s for b in m.blocks))
        assert max(c.replicas) <= m.batch_size
    assert (m.single_gpu is not None) == m.fits_one_gpu
    # Table I parameter counts, within 15 % except XLNet-large (see docs/a-srpt.md)
    if name != "XLNet-large":
        assert m.params == pytest.approx(m.paper_params, rel=0.15)


def test_single_gpu_models(cat):
    small = {"VGG19", "ResNet152", "Inception-V3", "BERT-large", "XLNet-large"}
    assert {n for n, m in cat.models.items() if m.single_gpu is not None} == small


def test_ideal_iteration_single_gpu_is_compute(cat):
    m = cat.model("VGG19")
    t = cat.ideal_iteration_s("VGG19", 1)
    assert t == pytest.approx(sum(b.fwd_s + b.bwd_s for b in m.blocks))
    # 19.63 GMACs * 2 * 32 samples * 3 (fwd + 2x bwd) / (125e12 * 0.20) ~ 0.151 s
    assert t == pytest.approx(19.632e9 * 2 * 32 * 3 / (125e12 * 0.2), rel=1e-3)


def test_ideal_iteration_matches_estimate(cat):
    cfg = cat.config_for("GPT-6.7B", 16)
    ref = cat.reference
    expect = alpha_min_estimate(cfg.spec(), ref.nic_gbps, ref.intra_gbyte_s, ref.gpus_per_server)
    assert cat.ideal_iteration_s("GPT-6.7B", 16) == pytest.approx(expect)
    # the fastest of the listed 16-GPU configurations wins
    times = [
        alpha_min_estimate(c.spec(), ref.nic_gbps, ref.intra_gbyte_s, ref.gpus_per_server)
        for c in cat.model("GPT-6.7B").configs
        if c.n_gpus == 16
    ]
    assert cat.ideal_iteration_s("GPT-6.7B", 16) == pytest.approx(min(times))
    # more bandwidth never slows the ideal placement
    assert cat.ideal_iteration_s("GPT-6.7B", 16, nic_gbps=100) <= expect


def test_synthesised_configuration(cat):
    cfg = cat.config_for("BERT-large", 16)  # none listed: 4 stages x 4 replicas
    assert cfg.synthesized and cfg.replicas == (4, 4, 4, 4)
    assert cat.ideal_iteration_s("BERT-large", 16) > 0


def test_unknown_model_names_it(cat):
    with pytest.raises(CatalogueError, match="NoSuchNet"):
        cat.ideal_iteration_s("NoSuchNet", 1)


def test_impossible_gpu_count_names_model_and_count(cat):
    with pytest.raises(CatalogueError, match=r"'GPT-175B'.*\b7 GPUs"):
        cat.ideal_iteration_s("GPT-175B", 7)
    with pytest.raises(CatalogueError, match="'ResNet152'.*8 GPUs"):
        cat.config_for("ResNet152", 8)  # batch 4: at most 4 data-parallel replicas


def test_every_number_has_a_comment():
    for i, line in enumerate(default_catalogue_path().read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        if re.search(r"=\s*[\[\d]", code):
            assert "#" in line, f"models.toml:{i} has a number without a comment: {line!r}"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


def test_malformed_catalogue_names_file_model_field(tmp_path):
    good = default_catalogue_path().read_text()
    bad = good.replace("macs = 1936392192", 'macs = "lots"', 1)
    p = _write(tmp_path, bad)
    with pytest.raises(CatalogueError) as exc:
        load_catalogue(p)
    msg = str(exc.value)
    assert str(p) in msg and "'VGG19'" in msg and "'macs'" in msg
    with pytest.raises(CatalogueError, match="not valid TOML"):
        load_catalogue(_write(tmp_path, "models = [\n"))
    with pytest.raises(CatalogueError, match="not found"):
        load_catalogue(tmp_path / "missing.toml")
    too_many = good.replace(
        "replicas = [4]  # pure data parallelism (batch 4", "replicas = [5]  #", 1
    )
    with pytest.raises(CatalogueError, match="'ResNet152'.*'replicas'"):
        load_catalogue(_write(tmp_path, too_many))


def test_stage_profiles_are_numbers(cat):
    for m in cat.models.values():
        for c in m.configs:
            spec = c.spec()
            assert np.isfinite(spec.fwd_s).all() and (spec.fwd_s >= 0).all()


# -- checkpoints: load and pause-and-save times (the Lazer paper's models) -----------------

LAZER_MODELS = [
    "ConvNeXt-B", "EfficientNet-B0", "VGG19", "ViT-B/16", "Swin-B", "Conformer-B", "TNT-B",
]  # fmt: skip


def test_checkpoint_times_follow_the_storage_formula(cat):
    st = cat.storage
    assert st is not None and sorted(cat.checkpoints) == sorted(LAZER_MODELS)
    for name in LAZER_MODELS:
        ck = cat.checkpoints[name]
        assert ck.n_bytes == ck.params * st.value_bytes * (1 + ck.optimizer_states)
        move = ck.n_bytes / (st.link_gbit_s * 1e9 / 8)
        assert cat.overheads(name) == (
            round(st.load_fixed_s + move, 3),
            round(st.save_fixed_s + move, 3),
        )
    # VGG19's checkpoint counts its profiled blocks' parameters; its profile is unchanged
    assert cat.checkpoints["VGG19"].params == cat.model("VGG19").params == 143667240
    assert cat.overheads("ResNet152") is None and cat.overheads("NoSuchNet") is None


def test_checkpoint_times_are_the_papers_magnitudes(cat):
    # Sec. 3.2 of the Lazer paper: about 4 s per load, about 8 s per pause-and-save
    loads = [cat.overheads(m)[0] for m in LAZER_MODELS]
    saves = [cat.overheads(m)[1] for m in LAZER_MODELS]
    assert 3.5 < np.mean(loads) < 4.5 and 7 < np.mean(saves) < 9
    assert min(loads) == cat.overheads("EfficientNet-B0")[0]  # the smallest checkpoint
    assert max(loads) == cat.overheads("VGG19")[0]  # the largest


def test_checkpoint_only_model_has_no_iteration_time(cat):
    assert "ViT-B/16" not in cat.models
    with pytest.raises(CatalogueError, match=r"'ViT-B/16' has load and save times only"):
        cat.ideal_iteration_s("ViT-B/16", 1)


def test_malformed_checkpoint_names_model_and_field(tmp_path):
    good = default_catalogue_path().read_text()
    cases = {
        "optimizer_states = 1  # SGD": (
            'optimizer_states = "one"  # SGD',
            "'VGG19'.*'optimizer_states'",
        ),
        "params = 5288548": ("params = -1", "'EfficientNet-B0'.*'params'"),
        "load_fixed_s = 3.7": ("load_fixed_s = 3.7\nspeed = 2", r"\[storage\].*'speed'.*unknown"),
        '[models."TNT-B".checkpoint]\n': (
            '[models."TNT-B".checkpoint]\nbytes = 3\n',
            "'TNT-B'.*'bytes'.*unknown",
        ),
    }
    for old, (new, pattern) in cases.items():
        assert old in good
        with pytest.raises(CatalogueError, match=pattern):
            load_catalogue(_write(tmp_path, good.replace(old, new, 1)))
    with pytest.raises(CatalogueError, match="unknown top-level key 'storage_off'"):
        load_catalogue(_write(tmp_path, good.replace("\n[storage]\n", "\n[storage_off]\n", 1)))
    start = good.index("\n[storage]\n")
    end = good.index("save_fixed_s = ", start)
    no_storage = good[:start] + good[good.index("\n", end) + 1 :]
    with pytest.raises(CatalogueError, match=r"'VGG19': checkpoint: .*\[storage\] table"):
        load_catalogue(_write(tmp_path, no_storage))


class _Jobs:
    def __init__(self, model, extra=None):
        self.model = np.array(model, dtype=object)
        self.extra = extra or {}

    def __len__(self):
        return len(self.model)


def test_overheads_hook_per_job():
    from gpusched.jobmodels.catalogue import JOB_MODEL

    cat = load_catalogue()
    load, save = JOB_MODEL.overheads(_Jobs(["TNT-B", "", "ResNet152", "VGG19", "TNT-B"]))
    exp = cat.overheads("TNT-B")
    assert (load[0], save[0]) == exp and (load[4], save[4]) == exp
    assert (load[3], save[3]) == cat.overheads("VGG19")
    assert np.isnan(load[1:3]).all() and np.isnan(save[1:3]).all()
    # A-SRPT's annotated pipeline rows (a config) keep no load/save: its results must not move
    config = np.array(["2+2+2", "", "", "", ""], dtype=object)
    load, save = JOB_MODEL.overheads(_Jobs(["VGG19", "VGG19", "", "", ""], {"config": config}))
    assert np.isnan(load[0]) and np.isnan(save[0])
    assert (load[1], save[1]) == cat.overheads("VGG19")
    assert JOB_MODEL.overheads(_Jobs(["", "ResNet152"])) is None


def test_replay_takes_catalogue_then_trace_then_run_default(tmp_path):
    import csv

    from typer.testing import CliRunner

    from gpusched.cli import app

    cat = load_catalogue()
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,model\n"
        "a,0,1,50,TNT-B\nb,0,2,40,EfficientNet-B0\nc,0,1,30,NoSuchNet\nd,0,1,20,\n"
    )
    with_cols = tmp_path / "u.csv"
    with_cols.write_text(
        "job_id,submit_time,num_gpus,duration,model,load_s,save_s\n"
        "a,0,1,50,TNT-B,12.5,3\nb,0,2,40,EfficientNet-B0,,\n"
    )

    def loads(path, *opts):
        out = tmp_path / f"run-{path.stem}-{len(opts)}"
        r = CliRunner().invoke(app, ["replay", str(path), "-P", "fifo", "-o", str(out), *opts])
        assert r.exit_code == 0, r.output
        with open(out / "jobs.csv") as fh:
            return {row["job_id"]: float(row["load_s"]) for row in csv.DictReader(fh)}

    # no load_s/save_s columns: the catalogue's time for catalogued models, else --load-s
    got = loads(trace, "--load-s", "7")
    assert got["a"] == pytest.approx(cat.overheads("TNT-B")[0])
    assert got["b"] == pytest.approx(cat.overheads("EfficientNet-B0")[0])
    assert got["c"] == got["d"] == 7.0
    assert loads(trace)["c"] == 0.0  # the run default is 0
    # a trace column wins over the catalogue; an empty field falls back to the catalogue
    got = loads(with_cols, "--load-s", "7")
    assert got["a"] == 12.5
    assert got["b"] == pytest.approx(cat.overheads("EfficientNet-B0")[0])
