"""Tests of gpusched.io.cluster: bundled specs, derived arrays and the loader's errors.

The totals of the bundled specs are written out by hand from their sources (the
comment at the top of each TOML file); nothing here reads files outside the repository.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from gpusched.errors import ClusterError, GpuschedError
from gpusched.io.cluster import (
    ClusterSpec,
    ServerGroup,
    bundled_clusters,
    load_cluster,
    parse_cluster,
)

# name -> (servers, GPUs, gpu_capacity), counted by hand from each file's sources.
BUNDLED = {
    "default": (4, 32, 1),
    "a-srpt-250x8": (250, 2000, 1),
    "sjf-bsbf-16x4": (16, 64, 2),
    "sjf-bsbf-64x8": (64, 512, 2),
    "testbed-4x4": (4, 16, 2),
    # 798 P100 x2 + 497 T4 x2 + 280 MISC x8 + 135 V100M32 x8 + 104 V100 x8 + 83 CPU x0
    "pai-2020": (1897, 6742, 1),
    "tiresias-n32g4": (32, 128, 1),
    "philly-64x8": (64, 512, 1),
    "lazer-testbed": (4, 16, 1),
    "lazer-sim-512": (64, 512, 1),
    "pd-ors-100": (100, 3600, 1),
    "pd-ors-30": (30, 1080, 1),
    # 8 edge machines x 1 GPU + a ninth as the cloud, bounded like them (Sec. V-A)
    "edge-cloud-testbed": (9, 9, 1),
    # 100 edge servers of 2 or 8 workers (their GPUs) + the cloud
    "edge-cloud-sim": (101, 530, 1),
    # Pollux's simulated cluster: 16 nodes x 4 T4
    "pollux-16x4": (16, 64, 1),
}


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- bundled specs ---------------------------------------------------------------------


def test_bundled_list_is_sorted_and_complete() -> None:
    listed = bundled_clusters()
    names = [name for name, _ in listed]
    assert names == sorted(names)
    assert set(names) == set(BUNDLED)
    assert all(desc for _, desc in listed)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_spec_totals(name: str) -> None:
    spec = load_cluster(name)
    n_servers, n_gpus, capacity = BUNDLED[name]
    assert spec.name == name
    assert (spec.n_servers, spec.n_gpus, spec.gpu_capacity) == (n_servers, n_gpus, capacity)
    assert spec.server_gpus().sum() == n_gpus
    assert spec.gpu_server().shape == (n_gpus,)
    assert Path(spec.source).name == f"{name}.toml"
    # Loading by path gives the same spec.
    assert load_cluster(Path(spec.source)) == spec


def test_pai_2020_by_type() -> None:
    spec = load_cluster("pai-2020")
    types = spec.server_gpu_type()
    gpus = spec.server_gpus()
    by_type = {t: (int((types == t).sum()), int(gpus[types == t].sum())) for t in set(types)}
    assert by_type == {
        "P100": (798, 1596),
        "T4": (497, 994),
        "V100": (104, 832),
        "V100M32": (135, 1080),
        "MISC": (280, 2240),
        "CPU": (83, 0),
    }


def test_a_srpt_network() -> None:
    spec = load_cluster("a-srpt-250x8")
    assert spec.nic_gbps == 10.0
    assert spec.intra_gbyte_s == 300.0
    assert spec.gpu_types() == ["V100"]


# -- derived arrays --------------------------------------------------------------------


HETERO = """
[cluster]
name = "hetero"
description = "two groups and a CPU-only machine"
nic_gbps = 25
intra_gbyte_s = 16
gpu_capacity = 2
allow_spread = false

[[servers]]
count = 2
gpus = 4
gpu_type = "A100"
gpu_mem_gb = 40
rack = "r0"

[[servers]]
count = 1
gpus = 0
gpu_type = "CPU"
cpus = 64

[[servers]]
count = 1
gpus = 2
gpu_type = "T4"
tier = "edge"
delay_s = 1.5
"""


def test_heterogeneous_mapping(tmp_path: Path) -> None:
    spec = load_cluster(write(tmp_path, HETERO))
    assert spec.n_servers == 4
    assert spec.n_gpus == 10
    assert spec.server_gpus().tolist() == [4, 4, 0, 2]
    assert spec.server_gpus().dtype == np.int32
    assert spec.gpu_server().tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 3, 3]
    assert spec.gpu_server().dtype == np.int32
    assert spec.server_start().tolist() == [0, 4, 8, 8, 10]
    assert spec.server_group().tolist() == [0, 0, 1, 2]
    assert spec.server_gpu_type().tolist() == ["A100", "A100", "CPU", "T4"]
    assert spec.server_rack().tolist() == ["r0", "r0", "", ""]
    assert spec.server_tier().tolist() == ["cloud", "cloud", "cloud", "edge"]
    assert spec.server_delay_s().tolist() == [0.0, 0.0, 0.0, 1.5]
    assert spec.gpu_types() == ["A100", "T4"]
    assert (spec.nic_gbps, spec.intra_gbyte_s, spec.gpu_capacity) == (25.0, 16.0, 2)
    assert spec.allow_spread is False
    assert spec.groups[0].gpu_mem_gb == 40.0
    assert isinstance(spec.groups[0].gpu_mem_gb, float)
    assert spec.groups[1].cpus == 64


def test_arrays_are_read_only(tmp_path: Path) -> None:
    spec = load_cluster(write(tmp_path, HETERO))
    for arr in (
        spec.server_gpus(),
        spec.gpu_server(),
        spec.server_start(),
        spec.server_group(),
        spec.server_gpu_type(),
        spec.server_rack(),
        spec.server_delay_s(),
    ):
        with pytest.raises(ValueError):
            arr[0] = arr[0]


def test_spec_is_frozen_hashable_and_picklable(tmp_path: Path) -> None:
    spec = load_cluster(write(tmp_path, HETERO))
    with pytest.raises(AttributeError):
        spec.nic_gbps = 1.0  # type: ignore[misc]
    assert hash(spec) == hash(load_cluster(write(tmp_path, HETERO)))
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec
    assert again.gpu_server().tolist() == spec.gpu_server().tolist()
    assert not again.gpu_server().flags.writeable


def test_minimal_form_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, '[cluster]\nname = "tiny"\nservers = 3\ngpus_per_server = 2\n')
    spec = load_cluster(str(path))
    assert spec == ClusterSpec.homogeneous(3, 2, name="tiny", description="", source=str(path))
    assert spec.groups == (ServerGroup(count=3, gpus=2, gpu_type="generic"),)
    assert (spec.n_servers, spec.n_gpus) == (3, 6)
    assert (spec.nic_gbps, spec.intra_gbyte_s, spec.gpu_capacity) == (10.0, 300.0, 1)
    assert spec.allow_spread is True
    assert spec.description == ""
    assert spec.source == str(path)


def test_as_dict_round_trips(tmp_path: Path) -> None:
    spec = load_cluster(write(tmp_path, HETERO))
    d = spec.as_dict()
    rebuilt = ClusterSpec(
        groups=tuple(ServerGroup(**s) for s in d["servers"]), source=d["source"], **d["cluster"]
    )
    assert rebuilt == spec


# -- errors ----------------------------------------------------------------------------


def error_of(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ClusterError) as info:
        load_cluster(path)
    message = str(info.value)
    assert str(path) in message
    assert "\n" not in message
    return message


FULL_HEAD = '[cluster]\nname = "x"\n'


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # unknown keys (typos), with a suggestion
        (
            FULL_HEAD + "nic_gpbs = 10\n[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\n",
            ["cluster.nic_gpbs", "unknown key", "nic_gbps"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpu=1\ngpu_type='a'\n",
            ["servers[0].gpu", "unknown key", "'gpus'"],
        ),
        (FULL_HEAD + "servers = 1\ngpus_per_server = 1\n[extra]\n", ["extra", "unknown key"]),
        # full-form keys are not accepted in [cluster] next to [[servers]]
        (
            FULL_HEAD + "gpus_per_server = 4\n[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\n",
            ["cluster.gpus_per_server", "unknown key"],
        ),
        # non-positive and negative counts
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\n"
            "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\n[[servers]]\ncount=2\ngpus=-1\ngpu_type='a'\n",
            ["servers[2].gpus", "integer >= 0", "-1"],
        ),
        (FULL_HEAD + "[[servers]]\ncount=0\ngpus=1\ngpu_type='a'\n", ["servers[0].count", ">= 1"]),
        (FULL_HEAD + "servers = -3\ngpus_per_server = 1\n", ["cluster.servers", ">= 1"]),
        # a value that is there is judged before a missing one is reported
        (FULL_HEAD + "servers = -3\n", ["cluster.servers", ">= 1"]),
        (FULL_HEAD + "servers = 2\n", ["cluster.gpus_per_server", "missing"]),
        # workers that are all 0 were later reported as a cluster of 0 GPUs
        (
            FULL_HEAD + "[[servers]]\ncount=2\ngpus=1\ngpu_type='g'\ntier='edge'\n"
            "workers={cpu=0,gpu=0}\nps=2\n",
            ["servers[0].workers", "every count is 0"],
        ),
        # a list of servers written inside [cluster]
        (FULL_HEAD + "servers = []\n", ["cluster.servers", "number of servers", "[[servers]]"]),
        (
            FULL_HEAD + "servers = [{count = 2}]\ngpus_per_server = 1\n",
            ["cluster.servers", "number of servers", "[[servers]]"],
        ),
        (
            FULL_HEAD + "gpu_capacity = 0\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.gpu_capacity", ">= 1"],
        ),
        # zero GPUs in total
        (FULL_HEAD + "servers = 4\ngpus_per_server = 0\n", ["0 GPUs"]),
        (FULL_HEAD + "[[servers]]\ncount=3\ngpus=0\ngpu_type='CPU'\n", ["servers", "0 GPUs"]),
        # wrong types
        (
            FULL_HEAD + "[[servers]]\ncount='2'\ngpus=1\ngpu_type='a'\n",
            ["servers[0].count", "integer", "string"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=2.0\ngpus=1\ngpu_type='a'\n",
            ["servers[0].count", "float"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=true\ngpus=1\ngpu_type='a'\n",
            ["servers[0].count", "boolean"],
        ),
        (
            FULL_HEAD + "nic_gbps = 'fast'\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.nic_gbps", "number"],
        ),
        (
            FULL_HEAD + "nic_gbps = nan\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.nic_gbps", "finite"],
        ),
        (
            FULL_HEAD + "allow_spread = 'yes'\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.allow_spread", "true or false"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type=7\n",
            ["servers[0].gpu_type", "string"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ngpu_mem_gb=-4\n",
            ["servers[0].gpu_mem_gb", "> 0"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ndelay_s=-1\n",
            ["servers[0].delay_s", ">= 0"],
        ),
        (FULL_HEAD + "servers = [1, 2]\n", ["servers", "array of tables"]),
        ("[cluster]\nname = 5\nservers = 1\ngpus_per_server = 1\n", ["cluster.name", "string"]),
        ("cluster = 3\n", ["cluster", "table"]),
        # bad tier
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ntier='fog'\n",
            ["servers[0].tier", "'edge'", "'cloud'", "fog"],
        ),
        # missing keys
        ("[cluster]\nservers = 1\ngpus_per_server = 1\n", ["cluster.name", "missing"]),
        (FULL_HEAD + "servers = 1\n", ["cluster.gpus_per_server", "missing"]),
        (FULL_HEAD + "[[servers]]\ncount=1\ngpu_type='a'\n", ["servers[0].gpus", "missing"]),
        ("[servers]\ncount = 1\n", ["cluster", "missing"]),
    ],
)
def test_bad_spec_names_file_and_key(tmp_path: Path, text: str, needles: list[str]) -> None:
    message = error_of(tmp_path, text)
    for needle in needles:
        assert needle in message, (needle, message)


def test_malformed_toml_gives_line_and_column(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[cluster]\nname = "x"\nservers = = 4\n')
    assert "invalid TOML" in message
    assert "line 3" in message
    assert "column" in message


def test_unknown_bundled_name_lists_names() -> None:
    with pytest.raises(ClusterError) as info:
        load_cluster("no-such-cluster")
    message = str(info.value)
    assert "no-such-cluster" in message
    for name in BUNDLED:
        assert name in message


def test_missing_file() -> None:
    with pytest.raises(ClusterError, match="not found"):
        load_cluster("nowhere/at-all.toml")


def test_cluster_error_is_a_gpusched_error() -> None:
    assert issubclass(ClusterError, GpuschedError)


def test_parse_cluster_uses_source_name() -> None:
    with pytest.raises(ClusterError, match=r"^inline: cluster\.servers"):
        parse_cluster('[cluster]\nname="x"\nservers=0\ngpus_per_server=1\n', source="inline")


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ClusterError, match="0 GPUs"):
        ClusterSpec("x", "", (ServerGroup(2, 0, "CPU"),))
    with pytest.raises(ClusterError, match="count"):
        ServerGroup(0, 4, "V100")
    with pytest.raises(ClusterError, match="tier"):
        ServerGroup(1, 4, "V100", tier="fog")
    with pytest.raises(ClusterError, match="no servers"):
        ClusterSpec("x", "", ())


# -- hostile files: limits, non-numbers, odd strings, odd files ------------------------

MINIMAL = FULL_HEAD + "servers = 1\ngpus_per_server = 1\n"
GROUP = "[[servers]]\ncount = {count}\ngpus = {gpus}\ngpu_type = 'a'\n"


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # integers beyond the state's dtypes: rejected with the key and the allowed range
        (
            FULL_HEAD + "servers = 9223372036854775807\ngpus_per_server = 8\n",
            ["cluster.servers", "<= 1,000,000", "9223372036854775807"],
        ),
        (
            FULL_HEAD + "servers = 99999999999999999999999\ngpus_per_server = 8\n",
            ["cluster.servers", "<= 1,000,000"],
        ),
        (
            FULL_HEAD + GROUP.format(count=1, gpus=2**31),
            ["servers[0].gpus", "<= 10,000,000", str(2**31)],
        ),
        # count x gpus would wrap around in int64 (2**19 * 2**44 = 2**63): refused, not wrapped
        (
            FULL_HEAD + GROUP.format(count=2**19, gpus=2**44),
            ["servers[0].gpus", "<= 10,000,000"],
        ),
        (FULL_HEAD + "gpu_capacity = 128\nservers = 1\ngpus_per_server = 1\n", ["<= 64", "128"]),
        (FULL_HEAD + "gpu_capacity = 300\nservers = 1\ngpus_per_server = 1\n", ["<= 64"]),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ncpus=99999999999\n",
            ["servers[0].cpus", "<= 1,000,000"],
        ),
        # absurd totals, named at the group that crosses the limit
        (
            FULL_HEAD + GROUP.format(count=1000, gpus=8) + GROUP.format(count=999_000, gpus=11),
            ["servers[1]", "10,997,000 GPUs", "at most 10,000,000"],
        ),
        (
            FULL_HEAD + GROUP.format(count=600_000, gpus=1) + GROUP.format(count=600_000, gpus=0),
            ["servers[1]", "1,200,000 servers", "at most 1,000,000"],
        ),
        (
            FULL_HEAD + "servers = 1000000\ngpus_per_server = 11\n",
            ["cluster.servers x cluster.gpus_per_server", "11,000,000 GPUs"],
        ),
        (
            FULL_HEAD + "gpu_capacity = 20\nservers = 1000000\ngpus_per_server = 10\n",
            ["cluster.gpu_capacity", "200,000,000 GPU slots", "at most 100,000,000"],
        ),
        # NaN, infinities, huge and tiny floats
        (FULL_HEAD + "nic_gbps = inf\nservers = 1\ngpus_per_server = 1\n", ["nic_gbps", "inf"]),
        (FULL_HEAD + "nic_gbps = -inf\nservers = 1\ngpus_per_server = 1\n", ["nic_gbps"]),
        (
            FULL_HEAD + "intra_gbyte_s = nan\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.intra_gbyte_s", "finite", "nan"],
        ),
        (
            FULL_HEAD + "nic_gbps = 1e300\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.nic_gbps", "<= 1e+06", "1e+300"],
        ),
        (
            FULL_HEAD + "nic_gbps = 1e400\nservers = 1\ngpus_per_server = 1\n",  # TOML: inf
            ["cluster.nic_gbps", "inf"],
        ),
        (
            FULL_HEAD + "nic_gbps = 1e-300\nservers = 1\ngpus_per_server = 1\n",
            ["cluster.nic_gbps", ">= 0.001"],
        ),
        (FULL_HEAD + "nic_gbps = 0\nservers = 1\ngpus_per_server = 1\n", ["cluster.nic_gbps"]),
        (FULL_HEAD + "intra_gbyte_s = -300\nservers=1\ngpus_per_server=1\n", ["intra_gbyte_s"]),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\nmem_gb=1e300\n",
            ["servers[0].mem_gb", "<= 1e+09"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\nstorage_gb=nan\n",
            ["servers[0].storage_gb", "finite"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ndelay_s=inf\n",
            ["servers[0].delay_s", "finite", "inf"],
        ),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ngpu_mem_gb=0\n",
            ["servers[0].gpu_mem_gb", "> 0"],
        ),
        # booleans are not numbers (bool is an int in Python)
        (FULL_HEAD + "gpu_capacity = true\nservers=1\ngpus_per_server=1\n", ["boolean"]),
        (FULL_HEAD + "nic_gbps = true\nservers = 1\ngpus_per_server = 1\n", ["nic_gbps", "bool"]),
        (FULL_HEAD + "servers = 1\ngpus_per_server = false\n", ["gpus_per_server", "boolean"]),
        (
            FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ndelay_s=false\n",
            ["servers[0].delay_s", "boolean"],
        ),
        (FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\ncpus=true\n", ["cpus"]),
        # strings: control characters, line breaks, over-long names, empty names
        ('[cluster]\nname = "a\\u202eb"\nservers=1\ngpus_per_server=1\n', ["U+202E"]),
        ('[cluster]\nname = "a\\u0000b"\nservers=1\ngpus_per_server=1\n', ["U+0000"]),
        (
            '[cluster]\nname = "x"\ndescription = """two\nlines"""\nservers=1\ngpus_per_server=1\n',
            ["cluster.description", "control characters", "U+000A"],
        ),
        (
            '[cluster]\nname = "' + "n" * 65 + '"\nservers=1\ngpus_per_server=1\n',
            ["cluster.name", "at most 64 characters", "65"],
        ),
        ('[cluster]\nname = "  "\nservers=1\ngpus_per_server=1\n', ["cluster.name", "non-empty"]),
        (
            FULL_HEAD + '[[servers]]\ncount=1\ngpus=1\ngpu_type="a\\tb"\n',
            ["servers[0].gpu_type", "U+0009"],
        ),
        (FULL_HEAD + "[[servers]]\ncount=1\ngpus=1\ngpu_type='a'\nrack=''\n", ["rack"]),
        # TOML itself: a key given twice (groups have no names; a duplicate key is the
        # nearest thing) and a table given twice
        (FULL_HEAD + "servers = 1\nservers = 2\ngpus_per_server = 1\n", ["invalid TOML", "line 4"]),
        (MINIMAL + '[cluster]\nname = "y"\n', ["invalid TOML"]),
        # arrays nested deeper than the parser's recursion limit
        ("a = " + "[" * 5000, ["invalid TOML", "nested too deeply"]),
        # not TOML at all
        ('{"cluster": {"name": "json"}}\n', ["invalid TOML", "line 1"]),
    ],
)
def test_hostile_spec_is_one_line_error(tmp_path: Path, text: str, needles: list[str]) -> None:
    message = error_of(tmp_path, text)
    for needle in needles:
        assert needle in message, (needle, message)


def test_unicode_names_are_kept(tmp_path: Path) -> None:
    text = (
        '[cluster]\nname = "集群-α"\ndescription = "Größe: 2 × 4"\n'
        '[[servers]]\ncount = 2\ngpus = 4\ngpu_type = "Ä100"\nrack = "ラック1"\n'
    )
    spec = load_cluster(write(tmp_path, text))
    assert (spec.name, spec.description) == ("集群-α", "Größe: 2 × 4")
    assert spec.server_gpu_type().tolist() == ["Ä100", "Ä100"]
    assert spec.server_rack().tolist() == ["ラック1", "ラック1"]


def test_limits_are_inclusive(tmp_path: Path) -> None:
    from gpusched.io.cluster import MAX_GPU_CAPACITY, MAX_GPUS

    big = load_cluster(write(tmp_path, FULL_HEAD + GROUP.format(count=1, gpus=MAX_GPUS)))
    assert big.n_gpus == MAX_GPUS and big.gpu_server().dtype == np.int32
    shared = load_cluster(
        write(
            tmp_path,
            FULL_HEAD + f"gpu_capacity = {MAX_GPU_CAPACITY}\n" + GROUP.format(count=2, gpus=4),
        )
    )
    assert shared.gpu_capacity == MAX_GPU_CAPACITY
    over = error_of(tmp_path, FULL_HEAD + GROUP.format(count=1, gpus=MAX_GPUS + 1))
    assert "servers[0].gpus" in over


def test_folder_device_and_binary_files(tmp_path: Path) -> None:
    folder = tmp_path / "d.toml"
    folder.mkdir()
    for spec in (folder, str(folder), str(tmp_path)):
        with pytest.raises(ClusterError, match="is a folder; expected a cluster .toml file"):
            load_cluster(spec)
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)  # stat only: opening a FIFO would block
    with pytest.raises(ClusterError, match="not a regular file"):
        load_cluster(fifo)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b'[cluster]\nname = "\xff\xfe"\n')
    with pytest.raises(ClusterError) as info:
        load_cluster(binary)
    assert str(info.value) == (
        f"{binary}: not UTF-8 text (byte 0xff at offset 18); expected a TOML file"
    )


def test_odd_names_are_errors_not_tracebacks(tmp_path: Path) -> None:
    for name in ("x" * 5000 + ".toml", "x\x00.toml", "nowhere/" + "y" * 300):
        with pytest.raises(ClusterError, match="not found"):
            load_cluster(name)
    with pytest.raises(ClusterError) as info:
        load_cluster("def\nault")
    assert "\n" not in str(info.value) and "unknown cluster" in str(info.value)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, MINIMAL)

    def denied(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(ClusterError) as info:
        load_cluster(path)
    assert str(info.value) == f"{path}: cannot read cluster file: Permission denied"


def test_oversized_file_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpusched.io.cluster as cluster_mod

    path = write(tmp_path, MINIMAL + "# " + "padding " * 40 + "\n")
    monkeypatch.setattr(cluster_mod, "MAX_FILE_BYTES", 100)
    with pytest.raises(ClusterError, match=r"a cluster file may be at most 100 bytes"):
        load_cluster(path)


def test_direct_construction_checks_limits() -> None:
    from gpusched.io.cluster import MAX_GPUS

    with pytest.raises(ClusterError, match="ServerGroup.count"):
        ClusterSpec.homogeneous(2**40, 2**40)
    with pytest.raises(ClusterError, match="GPUs in total"):
        ClusterSpec("x", "", (ServerGroup(1, MAX_GPUS), ServerGroup(1, 1)))
    with pytest.raises(ClusterError, match="gpu_capacity"):
        ClusterSpec.homogeneous(1, 1, gpu_capacity=128)
    with pytest.raises(ClusterError, match="gpu_capacity"):
        ClusterSpec.homogeneous(1, 1, gpu_capacity=True)
    with pytest.raises(ClusterError, match="nic_gbps"):
        ClusterSpec.homogeneous(1, 1, nic_gbps=float("nan"))
    with pytest.raises(ClusterError, match="delay_s"):
        ServerGroup(1, 1, delay_s=float("inf"))
