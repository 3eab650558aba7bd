"""Cluster specs: the simulated hardware, and the validating TOML loader.

A cluster is a tuple of :class:`ServerGroup` (identical servers) plus the
cluster-wide network and sharing settings, held in a frozen :class:`ClusterSpec`.
Servers are numbered group by group, in file order; GPUs are numbered server by
server (GPU ``k`` of server ``s`` has global index ``server_start[s] + k``).

Two TOML forms are accepted.

Minimal, homogeneous::

    [cluster]
    name = "tiny"
    servers = 4
    gpus_per_server = 8
    gpu_type = "V100"      # optional, default "generic"
    gpu_mem_gb = 32        # optional

Full::

    [cluster]
    name = "lab"
    description = "two kinds of server"
    nic_gbps = 10          # Gbit/s, default 10
    intra_gbyte_s = 300    # GByte/s, default 300
    gpu_capacity = 1       # jobs per GPU at once, default 1 (exclusive)
    allow_spread = true    # may a gang job span servers, default true
    allreduce_reading = "share"  # A-SRPT eq. (6) first case: "share" | "literal"
    batch_reading = "split"      # A-SRPT batch size: "split" over replicas | "per-replica"

    [[servers]]
    count = 2
    gpus = 8
    gpu_type = "V100"
    gpu_mem_gb = 32        # optional, as are cpus, mem_gb, storage_gb, rack
    tier = "cloud"         # optional: "edge" | "cloud" (default)
    delay_s = 0.0          # optional: per-chunk transmission delay, s
    ship = "parallel"      # optional: "parallel" (default) | "serial" (see below)
    workers = { gpu = 1, cpu = 2 }   # optional: typed workers per server (edge-cloud)
    ps = 2                 # optional: parameter-server slots per server (edge-cloud)
    unbounded = false      # optional: the cloud, with unbounded workers and PSs

Typed workers, ``ps``, ``ship`` and ``unbounded`` describe an edge-cloud cluster (docs/architecture.md,
"Jobs made of tasks"): jobs made of data chunks run one chunk per worker of the
job's type (:mod:`gpusched.core.tasks`); worker type names are identifiers of letters,
digits, ``-`` and ``_``. The cloud's parallelism is explicit:

* ``unbounded = true``: workers of every type and PSs without limit, one worker per chunk
  (the edge-cloud paper's model, Sec. III-A "infinite workers and PSs"); needs ``tier =
  "cloud"`` and ``count = 1``, excludes ``workers``/``ps``, and a cluster has at most one;
* a ``tier = "cloud"`` group with a ``workers`` table is a bounded cloud: those workers
  only, typed, never preempted (chunks queue for them); its ``ps`` may be ``"unbounded"``
  (PS slots without limit: PSs are not the cloud's bottleneck in the paper's model).

``ship`` is how a job's chunks placed on a server at once travel there: ``"parallel"`` (the
default; each arrives ``delay_s`` later, as the paper's Alg. 3 and constraint 2i have it)
or ``"serial"`` (one after another over one link per job and server: the k-th arrives ``k x
delay_s`` later; a sensitivity setting).

The defaults of ``nic_gbps`` and ``intra_gbyte_s`` are the A-SRPT paper's
evaluation settings (10 Gbps NIC, 300 GB/s NVLink of V100 servers).
``allreduce_reading`` and ``batch_reading`` choose how the A-SRPT performance model reads
the paper's eq. (6) and batch size (:class:`gpusched.jobmodels.reading.Reading`,
``docs/a-srpt.md``); they matter only for pipeline jobs (a ``config`` column).

Every mistake raises :class:`~gpusched.errors.ClusterError` with a one-line
message naming the file, the key path (``servers[2].gpus``, 0-based) and what
was expected. Nothing is coerced: a boolean is not a number, ``2.0`` is not an
integer, and ``nan``/``inf`` are not numbers.

Limits (checked before anything is allocated, so that an absurd file fails at
once instead of allocating gigabytes or wrapping around in the simulator's
fixed-width arrays): at most :data:`MAX_SERVERS` servers and :data:`MAX_GPUS`
GPUs in total, at most :data:`MAX_GPU_CAPACITY` jobs per GPU and
:data:`MAX_GPU_SLOTS` GPUs x ``gpu_capacity`` (the state's per-GPU job table),
bandwidths within :data:`BANDWIDTH_RANGE`, sizes (GB) at most :data:`MAX_SIZE_GB`,
``delay_s`` at most :data:`MAX_DELAY_S`, names and labels at most
:data:`MAX_NAME_CHARS` characters (descriptions :data:`MAX_DESCRIPTION_CHARS`)
without control characters, and files at most :data:`MAX_FILE_BYTES` bytes of
UTF-8 TOML.
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusched.errors import (
    ClusterError,
    control_char,
    did_you_mean,
    empty_name,
    is_blank,
    show_name,
)
from gpusched.io.files import check_small_file, parse_toml, read_small_text
from gpusched.io.resources import bundled_dir

#: Readings of the A-SRPT performance model a cluster file may choose (the vocabulary of its
#: ``allreduce_reading`` and ``batch_reading`` keys, default first). The model that applies
#: them is :class:`gpusched.jobmodels.reading.Reading`; the core only validates the words.
ALLREDUCE_READINGS: tuple[str, ...] = ("share", "literal")
BATCH_READINGS: tuple[str, ...] = ("split", "per-replica")

if TYPE_CHECKING:  # numpy is imported when the arrays are first asked for: listing
    import numpy as np  # clusters (``gpusched clusters``) needs none of it

__all__ = [
    "BANDWIDTH_RANGE",
    "MAX_GPUS",
    "MAX_GPU_CAPACITY",
    "MAX_GPU_SLOTS",
    "MAX_SERVERS",
    "SHIPPING",
    "TIERS",
    "ClusterSpec",
    "ServerGroup",
    "bundled_clusters",
    "load_cluster",
    "parse_cluster",
    "resolve_cluster",
]

#: Allowed values of :attr:`ServerGroup.tier`.
TIERS: tuple[str, ...] = ("edge", "cloud")
#: How a job's chunks placed on a server at once travel there (``ship``).
SHIPPING: tuple[str, ...] = ("parallel", "serial")

DEFAULT_GPU_TYPE = "generic"
DEFAULT_NIC_GBPS = 10.0
DEFAULT_INTRA_GBYTE_S = 300.0

#: Most GPUs in one cluster (GPU indices are int32; 10 million keeps the per-GPU
#: arrays of the state under a few hundred MB).
MAX_GPUS = 10_000_000
#: Most servers in one cluster (CPU-only servers included).
MAX_SERVERS = 1_000_000
#: Most jobs one GPU may hold at once (the per-GPU job counter is int8).
MAX_GPU_CAPACITY = 64
#: Most GPUs x ``gpu_capacity``: the state's ``gpu_job`` table has that many int32 cells.
MAX_GPU_SLOTS = 100_000_000
#: ``(lowest, highest)`` ``nic_gbps`` (Gbit/s) and ``intra_gbyte_s`` (GByte/s).
BANDWIDTH_RANGE = (1e-3, 1e6)
#: Largest ``gpu_mem_gb``, ``mem_gb`` and ``storage_gb``, GB.
MAX_SIZE_GB = 1e9
#: Largest ``delay_s``, s.
MAX_DELAY_S = 1e6
#: Most CPU cores per server.
MAX_CPUS = 1_000_000
#: Longest ``name``, ``gpu_type`` and ``rack``, in characters.
MAX_NAME_CHARS = 64
#: Longest ``description``, in characters.
MAX_DESCRIPTION_CHARS = 500
#: Largest cluster file, bytes.
MAX_FILE_BYTES = 16 * 2**20


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """A group of identical servers.

    Parameters
    ----------
    count
        Number of servers in the group (>= 1).
    gpus
        GPUs per server (>= 0; 0 for CPU-only machines).
    gpu_type
        GPU model name, e.g. ``"V100"``; free text, compared by equality.
    gpu_mem_gb
        Memory per GPU, GB (10^9 bytes), or None when unknown.
    cpus
        CPU cores per server, or None when unknown.
    mem_gb
        Host memory per server, GB, or None when unknown.
    storage_gb
        Local storage per server, GB, or None when unknown.
    rack
        Optional grouping label (the TUI aggregates servers by it).
    tier
        ``"edge"`` or ``"cloud"`` (the edge-cloud model); ``"cloud"`` by default.
    delay_s
        Transmission delay of one data chunk to a server of this group, s (>= 0).
    ship
        How a job's chunks travel to such a server: ``"parallel"`` (each ``delay_s``
        after it is placed) or ``"serial"`` (one after another per job and server).
    workers
        Typed workers per server, as ``(type, count)`` pairs (the edge-cloud model); empty
        for GPU clusters.
    ps
        Parameter-server slots per server (the edge-cloud model).
    unbounded
        The cloud of the edge-cloud model: unbounded workers of every type and PSs.
    ps_unbounded
        A bounded cloud group's PS slots are without limit (``ps = "unbounded"``).
    """

    count: int
    gpus: int
    gpu_type: str = DEFAULT_GPU_TYPE
    gpu_mem_gb: float | None = None
    cpus: int | None = None
    mem_gb: float | None = None
    storage_gb: float | None = None
    rack: str | None = None
    tier: str = "cloud"
    delay_s: float = 0.0
    workers: tuple[tuple[str, int], ...] = ()
    ps: int = 0
    unbounded: bool = False
    ship: str = "parallel"
    ps_unbounded: bool = False

    def __post_init__(self) -> None:
        # Backstop for specs built in code; the loader reports file and key first.
        if not _is_int(self.count) or not 1 <= self.count <= MAX_SERVERS:
            raise ClusterError(
                f"ServerGroup.count: expected an integer >= 1 and <= {MAX_SERVERS:,}, "
                f"got {self.count!r}"
            )
        if not _is_int(self.gpus) or not 0 <= self.gpus <= MAX_GPUS:
            raise ClusterError(
                f"ServerGroup.gpus: expected an integer >= 0 and <= {MAX_GPUS:,}, got {self.gpus!r}"
            )
        if not isinstance(self.gpu_type, str) or not self.gpu_type.strip():
            raise ClusterError(
                f"ServerGroup.gpu_type: expected a non-empty string, got {self.gpu_type!r}"
            )
        if self.tier not in TIERS:
            raise ClusterError(f"ServerGroup.tier: expected one of {TIERS}, got {self.tier!r}")
        if not (_is_number(self.delay_s) and 0 <= self.delay_s <= MAX_DELAY_S):
            raise ClusterError(
                f"ServerGroup.delay_s: expected a number >= 0 and <= {MAX_DELAY_S:g}, "
                f"got {self.delay_s!r}"
            )
        for name, n in self.workers:
            if not (isinstance(name, str) and _type_name_ok(name)):
                raise ClusterError(f"ServerGroup.workers: bad worker type name {name!r}")
            if not _is_int(n) or not 0 <= n <= MAX_GPUS:
                raise ClusterError(
                    f"ServerGroup.workers[{name!r}]: expected an integer >= 0, got {n!r}"
                )
        if not _is_int(self.ps) or not 0 <= self.ps <= MAX_GPUS:
            raise ClusterError(f"ServerGroup.ps: expected an integer >= 0, got {self.ps!r}")
        if self.unbounded and (self.tier != "cloud" or self.count != 1 or self.workers or self.ps):
            raise ClusterError(
                "ServerGroup.unbounded: only one cloud server (tier 'cloud', count 1, "
                "no workers or ps) is unbounded"
            )
        if self.ship not in SHIPPING:
            raise ClusterError(f"ServerGroup.ship: expected one of {SHIPPING}, got {self.ship!r}")
        if self.ps_unbounded and (self.tier != "cloud" or self.unbounded or self.ps):
            raise ClusterError(
                "ServerGroup.ps_unbounded: only a bounded cloud group (tier 'cloud', not "
                "unbounded, ps 0) has PS slots without limit"
            )

    @property
    def n_workers(self) -> int:
        """Typed workers per server (0 for GPU clusters and the unbounded cloud)."""
        return sum(n for _, n in self.workers)

    @property
    def n_gpus(self) -> int:
        """GPUs in the whole group (``count * gpus``)."""
        return self.count * self.gpus


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A validated cluster: server groups plus network and sharing settings.

    Parameters
    ----------
    name
        Short name (the bundled file stem for bundled specs).
    description
        One line on what setting this is and where it comes from.
    groups
        Server groups, in file order; servers are numbered group by group.
    nic_gbps
        Inter-server NIC bandwidth per server, Gbit/s (10^9 bit/s).
    intra_gbyte_s
        Intra-server GPU-to-GPU bandwidth (NVLink or PCIe), GByte/s (10^9 byte/s),
        the A-SRPT paper's ``B_intra``; 300 for V100 NVLink.
    gpu_capacity
        Jobs that may share one GPU at once (1 = exclusive; the SJF-BSBF paper uses 2).
    allow_spread
        Whether a gang job may span several servers.
    allreduce_reading
        The A-SRPT performance model's reading of eq. (6), first case: ``"share"`` or
        ``"literal"`` (:class:`gpusched.jobmodels.reading.Reading`).
    batch_reading
        Whether Table I's batch size is ``"split"`` over a stage's replicas or is
        ``"per-replica"``.
    source
        The file the spec was loaded from (``"<memory>"`` when built in code).

    Attributes
    ----------
    n_servers : int
        Servers in the cluster.
    n_gpus : int
        GPUs in the cluster.

    Notes
    -----
    The per-server and per-GPU arrays are computed once and are read-only.
    """

    name: str
    description: str
    groups: tuple[ServerGroup, ...]
    nic_gbps: float = DEFAULT_NIC_GBPS
    intra_gbyte_s: float = DEFAULT_INTRA_GBYTE_S
    gpu_capacity: int = 1
    allow_spread: bool = True
    source: str = "<memory>"
    allreduce_reading: str = ALLREDUCE_READINGS[0]
    batch_reading: str = BATCH_READINGS[0]
    n_servers: int = field(init=False)
    n_gpus: int = field(init=False)
    _server_gpus: np.ndarray = field(init=False, repr=False, compare=False)
    _server_start: np.ndarray = field(init=False, repr=False, compare=False)
    _gpu_server: np.ndarray = field(init=False, repr=False, compare=False)
    _server_group: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups = tuple(self.groups)
        object.__setattr__(self, "groups", groups)
        where = self.source
        if not groups:
            raise ClusterError(f"{where}: cluster {self.name!r} has no servers")
        if not all(isinstance(g, ServerGroup) for g in groups):
            raise ClusterError(f"{where}: cluster {self.name!r}: groups must be ServerGroups")
        clouds = [i for i, g in enumerate(groups) if g.unbounded]
        if len(clouds) > 1:
            raise ClusterError(
                f"{where}: servers[{clouds[1]}].unbounded: a cluster has at most one unbounded "
                f"cloud, and servers[{clouds[0]}] is one already"
            )
        if not _is_int(self.gpu_capacity) or not 1 <= self.gpu_capacity <= MAX_GPU_CAPACITY:
            raise ClusterError(
                f"{where}: cluster.gpu_capacity: expected an integer >= 1 and "
                f"<= {MAX_GPU_CAPACITY}, got {self.gpu_capacity!r}"
            )
        lo, hi = BANDWIDTH_RANGE
        for key in ("nic_gbps", "intra_gbyte_s"):
            value = getattr(self, key)
            if not (_is_number(value) and lo <= value <= hi):
                raise ClusterError(
                    f"{where}: cluster.{key}: expected a number >= {lo:g} and <= {hi:g}, "
                    f"got {value!r}"
                )
        if not isinstance(self.allow_spread, bool):
            raise ClusterError(
                f"{where}: cluster.allow_spread: expected true or false, got {self.allow_spread!r}"
            )
        for key, allowed in (
            ("allreduce_reading", ALLREDUCE_READINGS),
            ("batch_reading", BATCH_READINGS),
        ):
            if getattr(self, key) not in allowed:
                raise ClusterError(
                    f"{where}: cluster.{key}: expected one of "
                    f"{', '.join(map(repr, allowed))}, got {getattr(self, key)!r}"
                )
        # Totals in Python integers first: numpy int64 products would wrap around.
        n_servers = sum(g.count for g in groups)
        n_gpus = sum(g.count * g.gpus for g in groups)
        if n_gpus <= 0:
            raise ClusterError(
                f"{where}: cluster {self.name!r} has 0 GPUs in total: "
                "expected at least one server group with gpus >= 1"
            )
        problem = _size_problem(n_servers, n_gpus, self.gpu_capacity)
        if problem:
            raise ClusterError(f"{where}: cluster {self.name!r}: {problem}")
        object.__setattr__(self, "n_servers", n_servers)
        object.__setattr__(self, "n_gpus", n_gpus)

    def _derive(self) -> None:
        """Compute the per-server and per-GPU arrays (once; read-only)."""
        import numpy as np

        groups = self.groups
        counts = np.array([g.count for g in groups], dtype=np.int64)
        per = np.array([g.gpus for g in groups], dtype=np.int64)
        server_group = np.repeat(np.arange(len(groups), dtype=np.int32), counts)
        server_gpus = per[server_group].astype(np.int32)
        server_start = np.zeros(self.n_servers + 1, dtype=np.int64)
        np.cumsum(server_gpus, out=server_start[1:])
        gpu_server = np.repeat(np.arange(self.n_servers, dtype=np.int32), server_gpus)
        object.__setattr__(self, "_server_group", _readonly(server_group))
        object.__setattr__(self, "_server_gpus", _readonly(server_gpus))
        object.__setattr__(self, "_server_start", _readonly(server_start))
        object.__setattr__(self, "_gpu_server", _readonly(gpu_server))

    def _array(self, name: str) -> np.ndarray:
        try:
            return getattr(self, name)  # type: ignore[no-any-return]
        except AttributeError:  # not derived yet
            self._derive()
            return getattr(self, name)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild through __init__ so that the derived arrays are recomputed read-only
        # (specs are pickled to sweep workers).
        args = (
            self.name,
            self.description,
            self.groups,
            self.nic_gbps,
            self.intra_gbyte_s,
            self.gpu_capacity,
            self.allow_spread,
            self.source,
            self.allreduce_reading,
            self.batch_reading,
        )
        return (ClusterSpec, args)

    # -- construction -------------------------------------------------------------------

    @classmethod
    def homogeneous(
        cls,
        n_servers: int,
        gpus_per_server: int,
        *,
        name: str = "homogeneous",
        gpu_type: str = DEFAULT_GPU_TYPE,
        **kwargs: Any,
    ) -> ClusterSpec:
        """Build a cluster of identical servers in code (tests, quick experiments).

        Parameters
        ----------
        n_servers
            Number of servers (>= 1).
        gpus_per_server
            GPUs per server (>= 1).
        name
            Cluster name.
        gpu_type
            GPU model name.
        **kwargs
            Other :class:`ClusterSpec` fields (``nic_gbps`` in Gbit/s,
            ``intra_gbyte_s`` in GByte/s, ``gpu_capacity``, ``allow_spread``, ...).
        """
        kwargs.setdefault("description", f"{n_servers} x {gpus_per_server} {gpu_type}")
        return cls(
            name=name,
            groups=(ServerGroup(n_servers, gpus_per_server, gpu_type),),
            **kwargs,
        )

    # -- derived arrays (read-only, computed once) --------------------------------------

    def server_gpus(self) -> np.ndarray:
        """GPUs per server, int32, shape ``(n_servers,)``."""
        return self._array("_server_gpus")

    def server_start(self) -> np.ndarray:
        """Global index of each server's first GPU, int64, shape ``(n_servers + 1,)``.

        The last entry is ``n_gpus``, so server ``s`` owns GPUs
        ``server_start()[s]:server_start()[s + 1]``.
        """
        return self._array("_server_start")

    def gpu_server(self) -> np.ndarray:
        """Server index of each GPU, int32, shape ``(n_gpus,)`` (GPUs numbered server by server)."""
        return self._array("_gpu_server")

    def server_group(self) -> np.ndarray:
        """Index into :attr:`groups` of each server, int32, shape ``(n_servers,)``."""
        return self._array("_server_group")

    def server_gpu_type(self) -> np.ndarray:
        """GPU model name of each server, numpy ``str`` array, shape ``(n_servers,)``."""
        return self._per_server(lambda g: g.gpu_type)

    def server_rack(self) -> np.ndarray:
        """Rack label of each server, numpy ``str`` array, shape ``(n_servers,)``.

        Servers without a rack get ``""``.
        """
        return self._per_server(lambda g: g.rack or "")

    def server_tier(self) -> np.ndarray:
        """Tier of each server (``"edge"``/``"cloud"``), ``str`` array, shape ``(n_servers,)``."""
        return self._per_server(lambda g: g.tier)

    def server_serial(self) -> np.ndarray:
        """Per server: does a job's chunks ship there one after another (``ship =
        "serial"``)? bool, shape ``(n_servers,)``."""
        import numpy as np

        values = np.array([g.ship == "serial" for g in self.groups], dtype=bool)
        return _readonly(values[self.server_group()])

    def server_delay_s(self) -> np.ndarray:
        """Per-chunk transmission delay to each server, s, float64, shape ``(n_servers,)``."""
        import numpy as np

        values = np.array([float(g.delay_s) for g in self.groups], dtype=np.float64)
        return _readonly(values[self.server_group()])

    def gpu_types(self) -> list[str]:
        """Distinct GPU model names of servers with GPUs, in order of first appearance."""
        return list(dict.fromkeys(g.gpu_type for g in self.groups if g.gpus > 0))

    def _per_server(self, get: Any) -> np.ndarray:
        import numpy as np

        values = np.array([get(g) for g in self.groups], dtype=np.str_)
        return _readonly(values[self.server_group()])

    # -- serialisation -----------------------------------------------------------------

    @property
    def where(self) -> str:
        """``"<file>: "`` for a spec read from a file, to start a message about it; ``""``
        for one built in memory (its source is ``<memory>`` or ``<string>``)."""
        return "" if self.source.startswith("<") else f"{show_name(self.source)}: "

    def as_dict(self) -> dict[str, Any]:
        """Return the spec in the full TOML form, as plain dicts (for run manifests).

        Optional fields that are unset are left out; ``source`` is included.
        """
        servers = []
        for g in self.groups:
            d: dict[str, Any] = {"count": g.count, "gpus": g.gpus, "gpu_type": g.gpu_type}
            for key in ("gpu_mem_gb", "cpus", "mem_gb", "storage_gb", "rack"):
                value = getattr(g, key)
                if value is not None:
                    d[key] = value
            d["tier"] = g.tier
            d["delay_s"] = g.delay_s
            if g.workers:
                d["workers"] = dict(g.workers)
            if g.ps:
                d["ps"] = g.ps
            if g.ps_unbounded:
                d["ps"] = "unbounded"
            if g.unbounded:
                d["unbounded"] = True
            if g.ship != SHIPPING[0]:
                d["ship"] = g.ship
            servers.append(d)
        return {
            "cluster": {
                "name": self.name,
                "description": self.description,
                "nic_gbps": self.nic_gbps,
                "intra_gbyte_s": self.intra_gbyte_s,
                "gpu_capacity": self.gpu_capacity,
                "allow_spread": self.allow_spread,
                "allreduce_reading": self.allreduce_reading,
                "batch_reading": self.batch_reading,
            },
            "servers": servers,
            "source": self.source,
        }


# -- loading ---------------------------------------------------------------------------

_CLUSTER_KEYS = (
    "name",
    "description",
    "nic_gbps",
    "intra_gbyte_s",
    "gpu_capacity",
    "allow_spread",
    "allreduce_reading",
    "batch_reading",
)
_MINIMAL_KEYS = ("servers", "gpus_per_server", "gpu_type", "gpu_mem_gb")
_SERVER_KEYS = (
    "count",
    "gpus",
    "gpu_type",
    "gpu_mem_gb",
    "cpus",
    "mem_gb",
    "storage_gb",
    "rack",
    "tier",
    "delay_s",
    "workers",
    "ps",
    "unbounded",
    "ship",
)
_TOP_KEYS = ("cluster", "servers")


def bundled_clusters() -> list[tuple[str, str]]:
    """List the bundled cluster specs.

    Returns
    -------
    list of (str, str)
        ``(name, description)`` of every bundled spec, sorted by name.
    """
    return [(name, spec.description) for name, spec in bundled_cluster_specs()]


def bundled_cluster_specs() -> list[tuple[str, ClusterSpec]]:
    """``(name, spec)`` of every bundled cluster spec, sorted by name."""
    return [(p.stem, load_cluster(p)) for p in sorted(bundled_dir("clusters").glob("*.toml"))]


def _bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir("clusters").glob("*.toml"))


def _size_problem(n_servers: int, n_gpus: int, capacity: int) -> str:
    """Why a cluster of this size is refused, or ``""`` (Python integers: no wrap-around)."""
    if n_servers > MAX_SERVERS:
        return f"{n_servers:,} servers in total; at most {MAX_SERVERS:,} are allowed"
    if n_gpus > MAX_GPUS:
        return f"{n_gpus:,} GPUs in total; at most {MAX_GPUS:,} are allowed"
    if n_gpus * capacity > MAX_GPU_SLOTS:
        return (
            f"{n_gpus:,} GPUs x gpu_capacity {capacity} = {n_gpus * capacity:,} GPU slots; "
            f"at most {MAX_GPU_SLOTS:,} are allowed"
        )
    return ""


def _stat(path: Path) -> os.stat_result | None:
    """``os.stat`` that answers None for a missing or unusable name (too long, NUL byte)."""
    try:
        return path.stat()
    except (OSError, ValueError):
        return None


def resolve_cluster(name_or_path: str | Path) -> Path:
    """The cluster file a name or path stands for, checked to be a readable-sized regular file.

    Parameters
    ----------
    name_or_path
        A path to a ``.toml`` file, or the name of a bundled spec (see
        :func:`load_cluster` for how the two are told apart).

    Returns
    -------
    Path
        The file (as given for a path, in the bundled folder for a name).

    Raises
    ------
    ClusterError
        An empty name, an unknown bundled name, or a path that is missing, a folder, not a regular
        file, or larger than :data:`MAX_FILE_BYTES`.
    """
    text = str(name_or_path)
    if is_blank(name_or_path):
        expected = f"a .toml path or a bundled name ({', '.join(_bundled_names()) or '(none)'})"
        raise ClusterError(f"cluster: {empty_name(text, expected)}")
    path = Path(name_or_path)
    st = _stat(path)
    is_path = (
        isinstance(name_or_path, Path)
        or (st is not None and stat.S_ISREG(st.st_mode))
        or path.suffix == ".toml"
        or "/" in text
        or "\\" in text
    )
    candidate = bundled_dir("clusters") / f"{text}.toml"
    if not is_path and st is not None and (control_char(text) or _stat(candidate) is None):
        is_path = True  # "." or a folder or device that is no bundled name: report what it is
    if not is_path:
        if control_char(text) or _stat(candidate) is None:
            known = _bundled_names()
            names = ", ".join(known) or "(none)"
            raise ClusterError(
                f"unknown cluster {text!r}{did_you_mean(text, known)}: expected a .toml path "
                f"or a bundled name ({names})"
            )
        path, st = candidate, _stat(candidate)
    where = show_name(path)
    if st is None:
        stem = text[: -len(".toml")] if text.endswith(".toml") else ""
        hint = (
            f" (the bundled cluster is named without .toml: -c {stem})"
            if stem in _bundled_names()
            else ""
        )
        raise ClusterError(f"{where}: cluster file not found{hint}")
    check_small_file(
        path,
        st,
        what="cluster file",
        expected="a cluster .toml file",
        max_bytes=MAX_FILE_BYTES,
        error=ClusterError,
    )
    return path


def load_cluster(name_or_path: str | Path) -> ClusterSpec:
    """Load and validate a cluster spec.

    Parameters
    ----------
    name_or_path
        A path to a ``.toml`` file, or the name of a bundled spec such as
        ``"default"`` (see :func:`bundled_clusters`). An argument that names an
        existing file, ends in ``.toml`` or contains a path separator is a path.

    Returns
    -------
    ClusterSpec
        The validated spec; ``source`` is the file it was read from.

    Raises
    ------
    ClusterError
        Unknown bundled name (the message lists the bundled names), missing,
        unreadable or oversized file, a folder, text that is not UTF-8, malformed
        TOML (with line and column), or an invalid spec (the message names the
        file and key path).
    """
    path = resolve_cluster(name_or_path)
    text = read_small_text(path, what="cluster file", max_bytes=MAX_FILE_BYTES, error=ClusterError)
    return parse_cluster(text, source=str(path))


def parse_cluster(text: str, source: str = "<string>") -> ClusterSpec:
    """Parse and validate a cluster spec from TOML text.

    Parameters
    ----------
    text
        The TOML document.
    source
        Name used in error messages and stored as :attr:`ClusterSpec.source`.

    Returns
    -------
    ClusterSpec
        The validated spec.

    Raises
    ------
    ClusterError
        Malformed TOML or an invalid spec; the message names ``source`` and the key path.
    """
    where = show_name(source)
    try:
        doc = parse_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClusterError(f"{where}: invalid TOML: {exc}") from None
    return _Validator(source).spec(doc)


def _type_name_ok(name: str) -> bool:
    """A worker type name: 1-64 letters, digits, '-' or '_'."""
    return (
        0 < len(name) <= MAX_NAME_CHARS
        and name.isascii()
        and all(c.isalnum() or c in "-_" for c in name)
    )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _type_name(v: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(v), type(v).__name__)


class _Validator:
    """Turns a parsed TOML document into a ClusterSpec, raising precise ClusterErrors."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> ClusterError:
        return ClusterError(f"{show_name(self.source)}: {key}: {message}")

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                did = did_you_mean(key.lower(), allowed)
                keypath = f"{where}.{key}" if where else key
                raise self.fail(
                    show_name(keypath),
                    f"unknown key{did}; expected one of: {', '.join(allowed)}",
                )

    def got(self, value: object) -> str:
        text = repr(value)
        if len(text) > 60:
            text = text[:57] + "..."
        return f"got {_type_name(value)} {text}"

    def integer(
        self, table: dict[str, Any], key: str, where: str, *, minimum: int, maximum: int
    ) -> int:
        value = table[key]
        if not _is_int(value) or not minimum <= value <= maximum:
            raise self.fail(
                f"{where}.{key}",
                f"expected an integer >= {minimum} and <= {maximum:,}, {self.got(value)}",
            )
        return int(value)

    def number(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        *,
        minimum: float = 0.0,
        maximum: float,
        positive: bool = True,
    ) -> float:
        """A finite number in ``[minimum, maximum]`` (``> minimum`` when ``positive`` and 0)."""
        value = table[key]
        if positive and minimum == 0:
            bound = "> 0"
            ok = _is_number(value) and 0 < value <= maximum
        else:
            bound = f">= {minimum:g}"
            ok = _is_number(value) and minimum <= value <= maximum
        if not ok:
            raise self.fail(
                f"{where}.{key}",
                f"expected a finite number {bound} and <= {maximum:g}, {self.got(value)}",
            )
        return float(value)

    def string(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        *,
        empty: bool = False,
        max_chars: int = MAX_NAME_CHARS,
    ) -> str:
        value = table[key]
        what = "a string" if empty else "a non-empty string"
        what += f" of at most {max_chars} characters"
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(f"{where}.{key}", f"expected {what}, {self.got(value)}")
        if len(value) > max_chars:
            raise self.fail(f"{where}.{key}", f"expected {what}, got {len(value):,} characters")
        bad = control_char(value)
        if bad:
            raise self.fail(
                f"{where}.{key}",
                f"expected {what} without control characters, got U+{ord(bad):04X} in {value!r}",
            )
        return value

    def spec(self, doc: dict[str, Any]) -> ClusterSpec:
        self.check_keys(doc, _TOP_KEYS, "")
        if "cluster" not in doc:
            raise self.fail("cluster", "missing table [cluster]")
        cluster = doc["cluster"]
        if not isinstance(cluster, dict):
            raise self.fail("cluster", f"expected a table [cluster], {self.got(cluster)}")
        full = "servers" in doc
        if full:
            self.check_keys(cluster, _CLUSTER_KEYS, "cluster")
            groups = self.groups(doc["servers"])
        else:
            self.check_keys(cluster, _CLUSTER_KEYS + _MINIMAL_KEYS, "cluster")
            groups = self.minimal_group(cluster)
        if "name" not in cluster:
            raise self.fail("cluster.name", "missing; expected a non-empty string")
        name = self.string(cluster, "name", "cluster")
        description = (
            self.string(
                cluster, "description", "cluster", empty=True, max_chars=MAX_DESCRIPTION_CHARS
            )
            if "description" in cluster
            else ""
        )
        lo, hi = BANDWIDTH_RANGE
        nic = (
            self.number(cluster, "nic_gbps", "cluster", minimum=lo, maximum=hi)
            if "nic_gbps" in cluster
            else None
        )
        intra = (
            self.number(cluster, "intra_gbyte_s", "cluster", minimum=lo, maximum=hi)
            if "intra_gbyte_s" in cluster
            else None
        )
        capacity = (
            self.integer(cluster, "gpu_capacity", "cluster", minimum=1, maximum=MAX_GPU_CAPACITY)
            if "gpu_capacity" in cluster
            else 1
        )
        spread = cluster.get("allow_spread", True)
        if not isinstance(spread, bool):
            raise self.fail("cluster.allow_spread", f"expected true or false, {self.got(spread)}")
        readings = {
            key: self.choice(cluster, key, "cluster", allowed, default)
            for key, allowed, default in (
                ("allreduce_reading", ALLREDUCE_READINGS, ALLREDUCE_READINGS[0]),
                ("batch_reading", BATCH_READINGS, BATCH_READINGS[0]),
            )
        }
        self.check_size(groups, capacity, full)
        return ClusterSpec(
            name=name,
            description=description,
            groups=groups,
            nic_gbps=DEFAULT_NIC_GBPS if nic is None else nic,
            intra_gbyte_s=DEFAULT_INTRA_GBYTE_S if intra is None else intra,
            gpu_capacity=capacity,
            allow_spread=spread,
            source=self.source,
            **readings,
        )

    def choice(
        self, table: dict[str, Any], key: str, where: str, allowed: tuple[str, ...], default: str
    ) -> str:
        """One of ``allowed`` (a string, compared exactly), or ``default`` when absent."""
        if key not in table:
            return default
        value = table[key]
        if value not in allowed:
            raise self.fail(
                f"{where}.{key}",
                f"expected one of {', '.join(map(repr, allowed))}, {self.got(value)}",
            )
        return str(value)

    def check_size(self, groups: tuple[ServerGroup, ...], capacity: int, full: bool) -> None:
        """Refuse 0 GPUs, and totals beyond the limits, naming the group that crosses one."""
        n_servers = n_gpus = 0
        for i, g in enumerate(groups):
            n_servers += g.count
            n_gpus += g.count * g.gpus
            where = f"servers[{i}]" if full else "cluster.servers x cluster.gpus_per_server"
            problem = _size_problem(n_servers, n_gpus, 1)
            if problem:
                raise self.fail(where, f"the cluster would have {problem}")
        if n_gpus <= 0:
            where = "servers" if full else "cluster.gpus_per_server"
            raise self.fail(where, "the cluster has 0 GPUs in total; expected at least 1")
        problem = _size_problem(n_servers, n_gpus, capacity)
        if problem:
            raise self.fail("cluster.gpu_capacity", f"the cluster would have {problem}")

    def minimal_group(self, cluster: dict[str, Any]) -> tuple[ServerGroup, ...]:
        if isinstance(cluster.get("servers"), list):
            raise self.fail(
                "cluster.servers",
                f"expected the number of servers, {self.got(cluster['servers'])}; a list of"
                " servers goes in a [[servers]] array of tables, outside [cluster]",
            )
        # a value that is there is checked before one that is missing is reported
        limits = {"servers": (1, MAX_SERVERS), "gpus_per_server": (0, MAX_GPUS)}
        got = {
            key: self.integer(cluster, key, "cluster", minimum=lo, maximum=hi)
            for key, (lo, hi) in limits.items()
            if key in cluster
        }
        for key in limits:
            if key not in got:
                raise self.fail(
                    f"cluster.{key}",
                    "missing; a spec needs either cluster.servers and cluster.gpus_per_server"
                    " or a [[servers]] array of tables",
                )
        count, gpus = got["servers"], got["gpus_per_server"]
        gpu_type = (
            self.string(cluster, "gpu_type", "cluster")
            if "gpu_type" in cluster
            else DEFAULT_GPU_TYPE
        )
        mem = (
            self.number(cluster, "gpu_mem_gb", "cluster", maximum=MAX_SIZE_GB)
            if "gpu_mem_gb" in cluster
            else None
        )
        return (ServerGroup(count=count, gpus=gpus, gpu_type=gpu_type, gpu_mem_gb=mem),)

    def groups(self, servers: object) -> tuple[ServerGroup, ...]:
        if not isinstance(servers, list) or not servers:
            raise self.fail(
                "servers", f"expected a non-empty [[servers]] array of tables, {self.got(servers)}"
            )
        if len(servers) > MAX_SERVERS:
            raise self.fail(
                "servers", f"{len(servers):,} groups; at most {MAX_SERVERS:,} servers are allowed"
            )
        groups = tuple(self.group(entry, f"servers[{i}]") for i, entry in enumerate(servers))
        clouds = [i for i, g in enumerate(groups) if g.unbounded]
        if len(clouds) > 1:  # the engine has one cloud: a second would silently win
            raise self.fail(
                f"servers[{clouds[1]}].unbounded",
                f"a cluster has at most one unbounded cloud, and servers[{clouds[0]}] is one already",
            )
        return groups

    def group(self, entry: object, where: str) -> ServerGroup:
        if not isinstance(entry, dict):
            raise self.fail(where, f"expected a table, {self.got(entry)}")
        self.check_keys(entry, _SERVER_KEYS, where)
        for key in ("count", "gpus", "gpu_type"):
            if key not in entry:
                raise self.fail(f"{where}.{key}", "missing; required in every [[servers]] entry")
        count = self.integer(entry, "count", where, minimum=1, maximum=MAX_SERVERS)
        gpus = self.integer(entry, "gpus", where, minimum=0, maximum=MAX_GPUS)
        gpu_type = self.string(entry, "gpu_type", where)

        def opt_size(key: str) -> float | None:
            return self.number(entry, key, where, maximum=MAX_SIZE_GB) if key in entry else None

        cpus = (
            self.integer(entry, "cpus", where, minimum=1, maximum=MAX_CPUS)
            if "cpus" in entry
            else None
        )
        rack = self.string(entry, "rack", where) if "rack" in entry else None
        tier = "cloud"
        if "tier" in entry:
            tier = entry["tier"]
            if tier not in TIERS:
                raise self.fail(
                    f"{where}.tier",
                    f"expected one of {', '.join(map(repr, TIERS))}, {self.got(tier)}",
                )
        delay = (
            self.number(entry, "delay_s", where, positive=False, maximum=MAX_DELAY_S)
            if "delay_s" in entry
            else 0.0
        )
        workers = self.workers(entry, where)
        ps_unbounded = entry.get("ps") == "unbounded"
        if ps_unbounded and (tier != "cloud" or not workers):
            raise self.fail(
                f"{where}.ps",
                '"unbounded" is for a bounded cloud: it needs tier = "cloud" and a workers table',
            )
        ps = (
            self.integer(entry, "ps", where, minimum=0, maximum=MAX_GPUS)
            if "ps" in entry and not ps_unbounded
            else 0
        )
        ship = entry.get("ship", SHIPPING[0])
        if ship not in SHIPPING:
            raise self.fail(
                f"{where}.ship",
                f"expected one of {', '.join(map(repr, SHIPPING))}, {self.got(ship)}",
            )
        unbounded = entry.get("unbounded", False)
        if not isinstance(unbounded, bool):
            raise self.fail(f"{where}.unbounded", f"expected true or false, {self.got(unbounded)}")
        if unbounded and (tier != "cloud" or count != 1 or workers or ps):
            raise self.fail(
                f"{where}.unbounded",
                'only one cloud server is unbounded: it needs tier = "cloud" and count = 1, '
                "and gives no workers or ps (it has as many as any job needs)",
            )
        return ServerGroup(
            count=count,
            gpus=gpus,
            gpu_type=gpu_type,
            gpu_mem_gb=opt_size("gpu_mem_gb"),
            cpus=cpus,
            mem_gb=opt_size("mem_gb"),
            storage_gb=opt_size("storage_gb"),
            rack=rack,
            tier=tier,
            delay_s=delay,
            workers=workers,
            ps=ps,
            unbounded=unbounded,
            ship=ship,
            ps_unbounded=ps_unbounded,
        )

    def workers(self, entry: dict[str, Any], where: str) -> tuple[tuple[str, int], ...]:
        """The ``workers`` table: worker type -> count per server."""
        if "workers" not in entry:
            return ()
        table = entry["workers"]
        if not isinstance(table, dict) or not table:
            raise self.fail(
                f"{where}.workers",
                f"expected a table of worker type = count, e.g. {{ gpu = 1 }}, {self.got(table)}",
            )
        out = []
        for name in table:
            if not _type_name_ok(name):
                raise self.fail(
                    f"{where}.workers",
                    f"worker type {show_name(name)}: expected letters, digits, '-' or '_' "
                    f"(at most {MAX_NAME_CHARS} characters)",
                )
            n = self.integer(table, name, f"{where}.workers", minimum=0, maximum=MAX_GPUS)
            out.append((name, n))
        if not any(n for _, n in out):
            raise self.fail(
                f"{where}.workers",
                "every count is 0; expected at least one worker per server (leave out a "
                "group of servers without any)",
            )
        return tuple(out)
