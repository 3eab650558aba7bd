"""The model catalogue: per-model stage profiles and parallel configurations (TOML).

The A-SRPT paper (Luo et al., INFOCOM 2025, arXiv:2501.05563, Sec. V-A 1-b, Table I)
assigns each recurring job group a DNN model and a distributed training configuration and
derives ``iterations = duration / alpha_min``. This module loads those models from
``gpusched/data/models.toml`` (or a user file of the same shape) and answers
:meth:`Catalogue.ideal_iteration_s`: the per-iteration time at ideal placement, i.e. the
paper's :math:`\\tilde\\alpha^{min}` (Sec. IV-B: fewest servers, Heavy-Edge mapping, eq. 7).

Stage profiles are derived from per-sample block numbers (see the TOML header):
forward seconds = MACs x FLOPs/MAC x batch / (peak FLOP/s x efficiency), backward = a
fixed multiple of forward, activation bytes = elements x batch x bytes per element,
parameter bytes = parameters x bytes per gradient.

Checkpoints (the ``[storage]`` table and each model's ``checkpoint`` table) give load and
pause-and-save times (:meth:`Catalogue.overheads`), used for the Lazer paper (Go et al.,
DAC'26): a training checkpoint holds ``params x value_bytes x (1 + optimizer_states)``
bytes, and a load (save) takes a fixed cost plus those bytes over the storage link. A
model may have a checkpoint only (no blocks, no configurations): it then has load and save
times but no iteration time.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.errors import CatalogueError
from gpusched.io.files import parse_toml
from gpusched.jobmodels.heavy_edge import alpha_min_estimate
from gpusched.jobmodels.pipeline import DEFAULT_READING, PipelineSpec, Reading, spec_from_stages

__all__ = [
    "Catalogue",
    "Checkpoint",
    "ModelProfile",
    "ParallelConfig",
    "Reference",
    "StageProfile",
    "Storage",
    "default_catalogue_path",
    "load_catalogue",
]

_DEFAULT = Path(__file__).resolve().parent.parent / "data" / "models.toml"


def default_catalogue_path() -> Path:
    """Path of the shipped catalogue, ``gpusched/data/models.toml``."""
    return _DEFAULT


@dataclass(frozen=True, slots=True)
class StageProfile:
    """One pipeline stage (or one profiled block) for one whole mini-batch.

    Attributes
    ----------
    name
        Block name, or ``"first..last"`` for a stage of several blocks.
    fwd_s
        Forward time of the model's mini-batch through the stage on the reference GPU, s.
    bwd_s
        Backward time of the same, s.
    act_out_bytes
        Activation bytes sent to the next stage per mini-batch (gradients of the same size
        come back), bytes.
    param_bytes
        Trainable-parameter bytes all-reduced among the stage's replicas, bytes.
    params
        Trainable parameters, count.
    n_blocks
        Expanded catalogue blocks in the stage.
    """

    name: str
    fwd_s: float
    bwd_s: float
    act_out_bytes: float
    param_bytes: float
    params: int
    n_blocks: int = 1


@dataclass(frozen=True, slots=True)
class ParallelConfig:
    """A distributed training configuration: replicas per pipeline stage.

    Attributes
    ----------
    replicas
        :math:`k_s` per stage.
    stages
        The stage profiles (contiguous runs of the model's blocks).
    synthesized
        True when :meth:`Catalogue.config_for` derived it (no listed configuration matched).
    """

    replicas: tuple[int, ...]
    stages: tuple[StageProfile, ...]
    synthesized: bool = False

    @property
    def n_stages(self) -> int:
        """Pipeline stages ``S``."""
        return len(self.replicas)

    @property
    def n_gpus(self) -> int:
        """GPUs needed, :math:`\\sum_s k_s`."""
        return sum(self.replicas)

    def spec(self, reading: Reading = DEFAULT_READING) -> PipelineSpec:
        """The configuration as a :class:`gpusched.jobmodels.pipeline.PipelineSpec`.

        Parameters
        ----------
        reading
            How the performance model reads it (:class:`~gpusched.jobmodels.pipeline.Reading`).
        """
        return spec_from_stages(self.stages, self.replicas, reading)


@dataclass(frozen=True, slots=True)
class Reference:
    """Reference hardware and unit conventions of a catalogue (its ``[reference]`` table).

    Attributes
    ----------
    gpu
        Reference GPU name.
    peak_flops
        Peak FLOP/s of the reference GPU.
    flops_per_mac, backward_per_forward
        FLOPs per multiply-accumulate; backward / forward time ratio.
    activation_bytes, gradient_bytes
        Bytes per activation element and per all-reduced gradient element.
    state_bytes_per_param, gpu_memory_bytes
        Training-state bytes per parameter and GPU memory, bytes (the single-GPU fit test).
    gpus_per_server, nic_gbps, intra_gbyte_s
        Default cluster for :meth:`Catalogue.ideal_iteration_s`: GPUs per server, NIC in
        Gbit/s, intra-server bandwidth in GByte/s.
    efficiency
        Fraction of ``peak_flops`` sustained, per model family.
    """

    gpu: str
    peak_flops: float
    flops_per_mac: float
    backward_per_forward: float
    activation_bytes: float
    gradient_bytes: float
    state_bytes_per_param: float
    gpu_memory_bytes: float
    gpus_per_server: int
    nic_gbps: float
    intra_gbyte_s: float
    efficiency: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """One model of the catalogue.

    Attributes
    ----------
    name, family
        Model name (e.g. ``"VGG19"``) and family (a key of ``[efficiency]``).
    params
        Trainable parameters, count (sum over blocks).
    paper_params
        The count printed in the paper's Table I, for reference.
    batch_size
        Samples per iteration (Table I mini-batch size).
    blocks
        Profiled blocks in model order, ``repeat`` expanded.
    configs
        Listed parallel configurations.
    single_gpu
        The listed one-GPU configuration, or None when the model does not fit one GPU.
    fits_one_gpu
        ``params * state_bytes_per_param <= gpu_memory_bytes`` (activations ignored).
    """

    name: str
    family: str
    params: int
    paper_params: float
    batch_size: int
    blocks: tuple[StageProfile, ...]
    configs: tuple[ParallelConfig, ...]
    single_gpu: ParallelConfig | None
    fits_one_gpu: bool = False


@dataclass(frozen=True, slots=True)
class Storage:
    """Where checkpoints are read and written (a catalogue's ``[storage]`` table).

    Attributes
    ----------
    link_gbit_s
        Bandwidth between the GPU servers and the checkpoint storage, Gbit/s.
    value_bytes
        Bytes per stored value (weights and optimizer state), bytes.
    load_fixed_s, save_fixed_s
        Fixed part of one load (process start, CUDA context, GPU memory allocation) and of
        one pause-and-save, s.
    """

    link_gbit_s: float
    value_bytes: float
    load_fixed_s: float
    save_fixed_s: float

    def transfer_s(self, n_bytes: float) -> float:
        """Seconds to move ``n_bytes`` bytes over the link."""
        return n_bytes / (self.link_gbit_s * 1e9 / 8)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A model's training checkpoint and the load and save times it implies.

    Attributes
    ----------
    params
        Parameters, count.
    optimizer_states
        Optimizer values kept per parameter (Adam: 2, SGD with momentum: 1).
    n_bytes
        ``params x value_bytes x (1 + optimizer_states)``, bytes.
    load_s, save_s
        ``load_fixed_s`` (``save_fixed_s``) plus ``n_bytes`` over the storage link, s,
        rounded to 1 ms.
    """

    params: int
    optimizer_states: int
    n_bytes: float
    load_s: float
    save_s: float


def _merge(blocks: tuple[StageProfile, ...]) -> StageProfile:
    name = blocks[0].name if len(blocks) == 1 else f"{blocks[0].name}..{blocks[-1].name}"
    return StageProfile(
        name=name,
        fwd_s=sum(b.fwd_s for b in blocks),
        bwd_s=sum(b.bwd_s for b in blocks),
        act_out_bytes=blocks[-1].act_out_bytes,
        param_bytes=sum(b.param_bytes for b in blocks),
        params=sum(b.params for b in blocks),
        n_blocks=sum(b.n_blocks for b in blocks),
    )


def balanced_split(cost: np.ndarray, replicas: tuple[int, ...]) -> list[int]:
    """Split blocks into contiguous stages minimising the largest per-replica cost.

    Exact min-max dynamic programme over :math:`\\max_s C_s / k_s` with every stage
    non-empty; among equal optima the last stages take as many blocks as possible.

    Parameters
    ----------
    cost
        ``(L,)`` per-block cost, seconds (forward + backward).
    replicas
        :math:`k_s` per stage, ``S <= L``.

    Returns
    -------
    list of int
        Blocks per stage, summing to ``L``.
    """
    n_b, n_s = len(cost), len(replicas)
    csum = np.concatenate([[0.0], np.cumsum(cost)])
    seg = csum[None, :] - csum[:, None]  # seg[i, j] = cost of blocks i..j-1
    valid = np.triu(np.ones((n_b + 1, n_b + 1), dtype=bool), 1)
    best = np.full(n_b + 1, np.inf)
    best[0] = 0.0
    arg = np.zeros((n_s, n_b + 1), dtype=np.int64)
    for s, k in enumerate(replicas):
        cand = np.where(valid, np.maximum(best[:, None], seg / k), np.inf)
        arg[s] = np.argmin(cand, axis=0)
        best = cand[arg[s], np.arange(n_b + 1)]
    sizes: list[int] = []
    j = n_b
    for s in range(n_s - 1, -1, -1):
        i = int(arg[s, j])
        sizes.append(j - i)
        j = i
    return sizes[::-1]


class Catalogue:
    """A loaded model catalogue; build it with :func:`load_catalogue`.

    Attributes
    ----------
    path
        The TOML file it was read from.
    reference
        Reference hardware and default cluster.
    models
        Model name -> :class:`ModelProfile` (the models with blocks and configurations).
    storage
        The ``[storage]`` table, or None when the catalogue has no checkpoints.
    checkpoints
        Model name -> :class:`Checkpoint`, for every model with a ``checkpoint`` table
        (some of them have no :class:`ModelProfile`).
    """

    def __init__(
        self,
        path: Path,
        reference: Reference,
        models: dict[str, ModelProfile],
        storage: Storage | None = None,
        checkpoints: dict[str, Checkpoint] | None = None,
    ):
        self.path = path
        self.reference = reference
        self.models = models
        self.storage = storage
        self.checkpoints = checkpoints or {}
        self._cache: dict[
            tuple[str, int, int, float, float, Reading], tuple[ParallelConfig, float]
        ] = {}

    def model(self, name: str) -> ModelProfile:
        """Return a model's profile.

        Parameters
        ----------
        name
            Model name as in the catalogue (case-sensitive).

        Raises
        ------
        CatalogueError
            Naming the file and the unknown model, with the known names; or, for a model
            with only a checkpoint, saying that it has no iteration time.
        """
        try:
            return self.models[name]
        except KeyError:
            if name in self.checkpoints:
                raise CatalogueError(
                    f"{self.path}: model {name!r} has load and save times only (no blocks or "
                    "configurations), so it has no iteration time: give its jobs a 'duration'"
                ) from None
            known = ", ".join(sorted(self.models))
            raise CatalogueError(f"{self.path}: unknown model {name!r} (known: {known})") from None

    def overheads(self, model: str) -> tuple[float, float] | None:
        """Load and pause-and-save times of ``model``'s checkpoint, s, or None.

        Parameters
        ----------
        model
            Model name (case-sensitive).

        Returns
        -------
        tuple of float or None
            ``(load_s, save_s)`` (see :class:`Checkpoint`), or None when the model has no
            ``checkpoint`` table (or is not in the catalogue).
        """
        ckpt = self.checkpoints.get(model)
        return None if ckpt is None else (ckpt.load_s, ckpt.save_s)

    def _cluster(
        self, gpus_per_server: int | None, nic_gbps: float | None, intra_gbyte_s: float | None
    ) -> tuple[int, float, float]:
        ref = self.reference
        return (
            int(ref.gpus_per_server if gpus_per_server is None else gpus_per_server),
            float(ref.nic_gbps if nic_gbps is None else nic_gbps),
            float(ref.intra_gbyte_s if intra_gbyte_s is None else intra_gbyte_s),
        )

    def _candidates(self, prof: ModelProfile, num_gpus: int) -> list[ParallelConfig]:
        listed = [c for c in prof.configs if c.n_gpus == num_gpus]
        if listed:
            return listed
        stage_counts = sorted({c.n_stages for c in prof.configs})
        out = []
        for n_s in stage_counts:
            if n_s == 1 and not prof.fits_one_gpu:
                continue
            k, rest = divmod(num_gpus, n_s)
            if rest or k > prof.batch_size or n_s > len(prof.blocks):
                continue
            replicas = (k,) * n_s
            stages = _stages_for(prof.blocks, replicas, None)
            out.append(ParallelConfig(replicas=replicas, stages=stages, synthesized=True))
        return out

    def _resolve(
        self,
        model: str,
        num_gpus: int,
        gpus_per_server: int | None,
        nic_gbps: float | None,
        intra_gbyte_s: float | None,
        reading: Reading,
    ) -> tuple[ParallelConfig, float]:
        prof = self.model(model)
        g, nic, intra = self._cluster(gpus_per_server, nic_gbps, intra_gbyte_s)
        key = (model, int(num_gpus), g, nic, intra, reading)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if num_gpus < 1:
            raise CatalogueError(
                f"{self.path}: model {model!r}: num_gpus must be >= 1, got {num_gpus}"
            )
        cands = self._candidates(prof, int(num_gpus))
        if not cands:
            listed = sorted({c.n_gpus for c in prof.configs})
            raise CatalogueError(
                f"{self.path}: model {model!r} cannot run on {num_gpus} GPUs: no configuration "
                f"lists {num_gpus} GPUs (listed: {listed}) and {num_gpus} is not a multiple of "
                f"a listed stage count with at most {prof.batch_size} replicas per stage"
            )
        best: tuple[ParallelConfig, float] | None = None
        for cfg in cands:  # fastest at ideal placement; ties keep the first listed
            t = alpha_min_estimate(cfg.spec(reading), nic, intra, g)
            if best is None or t < best[1]:
                best = (cfg, t)
        assert best is not None
        self._cache[key] = best
        return best

    def config_for(
        self,
        model: str,
        num_gpus: int,
        *,
        gpus_per_server: int | None = None,
        nic_gbps: float | None = None,
        intra_gbyte_s: float | None = None,
        reading: Reading = DEFAULT_READING,
    ) -> ParallelConfig:
        """The parallel configuration a job of ``model`` on ``num_gpus`` GPUs runs.

        Rule: among the listed configurations using exactly ``num_gpus`` GPUs, the one with
        the smallest ideal per-iteration time (ties: first listed). If none is listed,
        synthesise uniform configurations ``[num_gpus / S] * S`` for every stage count ``S``
        the model lists that divides ``num_gpus`` with at most ``batch_size`` replicas per
        stage (``S = 1`` only if the model fits one GPU), stages balanced by compute, and take
        the fastest.

        Parameters
        ----------
        model
            Model name.
        num_gpus
            GPUs the job holds.
        gpus_per_server, nic_gbps, intra_gbyte_s
            Cluster used to rank candidates (GPUs per server, NIC Gbit/s, intra-server
            GByte/s); ``None`` takes the catalogue's ``[reference]`` values.
        reading
            The performance model's reading (:class:`~gpusched.jobmodels.pipeline.Reading`)
            the candidates are ranked under.

        Raises
        ------
        CatalogueError
            Naming the model and GPU count when no configuration fits.
        """
        return self._resolve(model, num_gpus, gpus_per_server, nic_gbps, intra_gbyte_s, reading)[0]

    def ideal_iteration_s(
        self,
        model: str,
        num_gpus: int,
        *,
        gpus_per_server: int | None = None,
        nic_gbps: float | None = None,
        intra_gbyte_s: float | None = None,
        reading: Reading = DEFAULT_READING,
    ) -> float:
        """Per-iteration time at ideal placement, :math:`\\tilde\\alpha^{min}` (Sec. IV-B).

        The configuration is chosen by :meth:`config_for`; the job then gets the fewest
        servers (all ``g`` GPUs of each but the last), Heavy-Edge maps it and eq. (7) gives
        the time. Results are cached per (model, GPUs, cluster).

        Parameters
        ----------
        model
            Model name.
        num_gpus
            GPUs the job holds.
        gpus_per_server, nic_gbps, intra_gbyte_s
            Cluster (GPUs per server, NIC Gbit/s, intra-server GByte/s); ``None`` takes the
            catalogue's ``[reference]`` values (the paper's Sec. V-B cluster).
        reading
            The performance model's reading (:class:`~gpusched.jobmodels.pipeline.Reading`);
            under ``"per-replica"`` a replica computes a whole batch, so the time does not
            shrink with the replica count.

        Returns
        -------
        float
            Seconds per iteration.

        Raises
        ------
        CatalogueError
            Unknown model, or no configuration for ``num_gpus`` (message names both).
        """
        return self._resolve(model, num_gpus, gpus_per_server, nic_gbps, intra_gbyte_s, reading)[1]


# ---------------------------------------------------------------------------- loading


@dataclass
class _Ctx:
    path: Path
    where: str = ""

    def fail(self, fld: str, msg: str) -> CatalogueError:
        return CatalogueError(f"{self.path}: {self.where}field {fld!r}: {msg}")


def _num(
    ctx: _Ctx, table: Mapping[str, Any], key: str, *, integer: bool = False, pos: bool = False
) -> Any:
    if key not in table:
        raise ctx.fail(key, "missing")
    v = table[key]
    ok_type = isinstance(v, int) if integer else isinstance(v, int | float)
    if isinstance(v, bool) or not ok_type:
        kind = "an integer" if integer else "a number"
        raise ctx.fail(key, f"expected {kind}, got {v!r}")
    if not np.isfinite(v) or v < 0 or (pos and v <= 0):
        raise ctx.fail(key, f"expected a finite number {'> 0' if pos else '>= 0'}, got {v!r}")
    return v


def _str(ctx: _Ctx, table: Mapping[str, Any], key: str) -> str:
    v = table.get(key)
    if not isinstance(v, str) or not v:
        raise ctx.fail(key, f"expected a non-empty string, got {v!r}")
    return v


def _stages_for(
    blocks: tuple[StageProfile, ...], replicas: tuple[int, ...], split: list[int] | None
) -> tuple[StageProfile, ...]:
    if split is None:
        split = balanced_split(np.array([b.fwd_s + b.bwd_s for b in blocks]), replicas)
    stages, start = [], 0
    for n in split:
        stages.append(_merge(blocks[start : start + n]))
        start += n
    return tuple(stages)


def _load_reference(ctx: _Ctx, doc: Mapping[str, Any]) -> Reference:
    ref = doc.get("reference")
    if not isinstance(ref, dict):
        raise ctx.fail("reference", "missing [reference] table")
    ctx.where = "[reference] "
    eff = doc.get("efficiency")
    if not isinstance(eff, dict) or not eff:
        raise CatalogueError(f"{ctx.path}: missing or empty [efficiency] table")
    effs = {}
    for fam in eff:
        ctx.where = "[efficiency] "
        v = _num(ctx, eff, fam, pos=True)
        if v > 1:
            raise ctx.fail(fam, f"an efficiency is a fraction of peak, got {v}")
        effs[fam] = float(v)
    ctx.where = "[reference] "
    return Reference(
        gpu=_str(ctx, ref, "gpu"),
        peak_flops=float(_num(ctx, ref, "peak_flops", pos=True)),
        flops_per_mac=float(_num(ctx, ref, "flops_per_mac", pos=True)),
        backward_per_forward=float(_num(ctx, ref, "backward_per_forward")),
        activation_bytes=float(_num(ctx, ref, "activation_bytes", pos=True)),
        gradient_bytes=float(_num(ctx, ref, "gradient_bytes", pos=True)),
        state_bytes_per_param=float(_num(ctx, ref, "state_bytes_per_param", pos=True)),
        gpu_memory_bytes=float(_num(ctx, ref, "gpu_memory_bytes", pos=True)),
        gpus_per_server=int(_num(ctx, ref, "gpus_per_server", integer=True, pos=True)),
        nic_gbps=float(_num(ctx, ref, "nic_gbps", pos=True)),
        intra_gbyte_s=float(_num(ctx, ref, "intra_gbyte_s", pos=True)),
        efficiency=effs,
    )


_TOP_KEYS = ("schema", "reference", "efficiency", "storage", "models")
_STORAGE_KEYS = ("link_gbit_s", "value_bytes", "load_fixed_s", "save_fixed_s")
_CHECKPOINT_KEYS = ("params", "optimizer_states")
# keys that make a model table a profiled (pipeline) model rather than a checkpoint only
_PROFILE_KEYS = ("family", "paper_params", "batch_size", "blocks", "configs")


def _unknown_keys(ctx: _Ctx, table: Mapping[str, Any], known: tuple[str, ...]) -> None:
    extra = [k for k in table if k not in known]
    if extra:
        raise ctx.fail(extra[0], f"unknown field (expected {', '.join(known)})")


def _load_storage(ctx: _Ctx, doc: Mapping[str, Any]) -> Storage | None:
    raw = doc.get("storage")
    if raw is None:
        return None
    ctx.where = "[storage] "
    if not isinstance(raw, dict):
        raise ctx.fail("storage", "expected a table")
    _unknown_keys(ctx, raw, _STORAGE_KEYS)
    return Storage(
        link_gbit_s=float(_num(ctx, raw, "link_gbit_s", pos=True)),
        value_bytes=float(_num(ctx, raw, "value_bytes", pos=True)),
        load_fixed_s=float(_num(ctx, raw, "load_fixed_s")),
        save_fixed_s=float(_num(ctx, raw, "save_fixed_s")),
    )


def _load_checkpoint(
    ctx: _Ctx, name: str, raw: Any, storage: Storage | None, profile: ModelProfile | None
) -> Checkpoint:
    ctx.where = f"model {name!r}: checkpoint: "
    if not isinstance(raw, dict):
        raise ctx.fail("checkpoint", "expected a table")
    if storage is None:
        raise ctx.fail("checkpoint", "a checkpoint needs the catalogue's [storage] table")
    _unknown_keys(ctx, raw, _CHECKPOINT_KEYS)
    if "params" in raw or profile is None:
        params = int(_num(ctx, raw, "params", integer=True, pos=True))
    else:
        params = profile.params  # a profiled model: the sum over its blocks
    states = int(_num(ctx, raw, "optimizer_states", integer=True))
    n_bytes = params * storage.value_bytes * (1 + states)
    move = storage.transfer_s(n_bytes)
    return Checkpoint(
        params=params,
        optimizer_states=states,
        n_bytes=n_bytes,
        load_s=round(storage.load_fixed_s + move, 3),
        save_s=round(storage.save_fixed_s + move, 3),
    )


def _load_model(ctx: _Ctx, name: str, tbl: Any, ref: Reference) -> ModelProfile:
    ctx.where = f"model {name!r}: "
    if not isinstance(tbl, dict):
        raise ctx.fail(name, "expected a table")
    family = _str(ctx, tbl, "family")
    if family not in ref.efficiency:
        raise ctx.fail("family", f"{family!r} has no entry in [efficiency]")
    batch = int(_num(ctx, tbl, "batch_size", integer=True, pos=True))
    paper_params = float(_num(ctx, tbl, "paper_params", pos=True))
    speed = ref.peak_flops * ref.efficiency[family]
    raw_blocks = tbl.get("blocks")
    if not isinstance(raw_blocks, list) or not raw_blocks:
        raise ctx.fail("blocks", "expected at least one [[...blocks]] entry")
    blocks: list[StageProfile] = []
    for i, b in enumerate(raw_blocks):
        ctx.where = f"model {name!r}: blocks[{i}]: "
        if not isinstance(b, dict):
            raise ctx.fail("blocks", "expected a table")
        bname = _str(ctx, b, "name")
        macs = float(_num(ctx, b, "macs"))
        params = int(_num(ctx, b, "params", integer=True))
        out_el = float(_num(ctx, b, "out_elements"))
        repeat = int(_num(ctx, b, "repeat", integer=True, pos=True)) if "repeat" in b else 1
        fwd = macs * ref.flops_per_mac * batch / speed
        prof = StageProfile(
            name=bname,
            fwd_s=fwd,
            bwd_s=fwd * ref.backward_per_forward,
            act_out_bytes=out_el * batch * ref.activation_bytes,
            param_bytes=params * ref.gradient_bytes,
            params=params,
        )
        if repeat == 1:
            blocks.append(prof)
        else:
            blocks.extend(
                StageProfile(
                    f"{bname}{j + 1}",
                    prof.fwd_s,
                    prof.bwd_s,
                    prof.act_out_bytes,
                    prof.param_bytes,
                    prof.params,
                )
                for j in range(repeat)
            )
    btuple = tuple(blocks)
    n_params = sum(b.params for b in btuple)
    fits = n_params * ref.state_bytes_per_param <= ref.gpu_memory_bytes

    raw_cfgs = tbl.get("configs")
    if not isinstance(raw_cfgs, list) or not raw_cfgs:
        raise CatalogueError(
            f"{ctx.path}: model {name!r}: field 'configs': needs at least one configuration"
        )
    configs: list[ParallelConfig] = []
    for i, c in enumerate(raw_cfgs):
        ctx.where = f"model {name!r}: configs[{i}]: "
        if not isinstance(c, dict):
            raise ctx.fail("configs", "expected a table")
        rep = c.get("replicas")
        if isinstance(rep, int) and not isinstance(rep, bool):
            n_st = int(_num(ctx, c, "stages", integer=True, pos=True))
            rep = [rep] * n_st
        elif "stages" in c:
            raise ctx.fail("stages", "give 'stages' only with a single integer 'replicas'")
        if (
            not isinstance(rep, list)
            or not rep
            or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in rep)
        ):
            raise ctx.fail("replicas", f"expected integers >= 1, got {rep!r}")
        if max(rep) > batch:
            raise ctx.fail("replicas", f"{max(rep)} replicas exceed the batch of {batch} samples")
        if len(rep) > len(btuple):
            raise ctx.fail("replicas", f"{len(rep)} stages but only {len(btuple)} blocks")
        if len(rep) == 1 and not fits:
            raise ctx.fail(
                "replicas",
                f"a one-stage configuration needs the whole model on a GPU: {n_params} params "
                f"x {ref.state_bytes_per_param:g} B > {ref.gpu_memory_bytes:g} B",
            )
        split = c.get("split")
        if split is not None and (
            not isinstance(split, list)
            or len(split) != len(rep)
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in split)
            or sum(split) != len(btuple)
        ):
            raise ctx.fail(
                "split",
                f"expected {len(rep)} integers >= 1 summing to {len(btuple)}, got {split!r}",
            )
        replicas = tuple(int(k) for k in rep)
        configs.append(ParallelConfig(replicas, _stages_for(btuple, replicas, split)))
    single = next((c for c in configs if c.replicas == (1,)), None)
    return ModelProfile(
        name=name,
        family=family,
        params=n_params,
        paper_params=paper_params,
        batch_size=batch,
        blocks=btuple,
        configs=tuple(configs),
        single_gpu=single,
        fits_one_gpu=fits,
    )


def load_catalogue(path: str | Path | None = None) -> Catalogue:
    """Load and validate a model catalogue.

    Parameters
    ----------
    path
        A TOML file shaped like ``gpusched/data/models.toml``; ``None`` loads that file.

    Returns
    -------
    Catalogue
        Models with their block and stage profiles and configurations, and the
        checkpoints with their load and save times.

    Raises
    ------
    CatalogueError
        If the file is missing, is not TOML, or a field is malformed (or unknown, in the
        ``[storage]`` and ``checkpoint`` tables); the message names the file, the model and
        the field.
    """
    p = Path(path) if path is not None else _DEFAULT
    try:
        doc = parse_toml(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogueError(f"{p}: catalogue file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{p}: not valid TOML: {exc}") from None
    ctx = _Ctx(p)
    unknown = [k for k in doc if k not in _TOP_KEYS]
    if unknown:
        raise CatalogueError(
            f"{p}: unknown top-level key {unknown[0]!r} (expected {', '.join(_TOP_KEYS)})"
        )
    ref = _load_reference(ctx, doc)
    storage = _load_storage(ctx, doc)
    raw = doc.get("models")
    if not isinstance(raw, dict) or not raw:
        raise CatalogueError(f"{p}: no [models.<name>] tables")
    models: dict[str, ModelProfile] = {}
    checkpoints: dict[str, Checkpoint] = {}
    for name, tbl in raw.items():
        if not isinstance(tbl, dict) or "checkpoint" not in tbl:
            models[name] = _load_model(ctx, name, tbl, ref)
            continue
        if any(k in tbl for k in _PROFILE_KEYS):
            models[name] = _load_model(ctx, name, tbl, ref)
        else:  # a checkpoint only: load and save times, no iteration time
            ctx.where = f"model {name!r}: "
            _unknown_keys(ctx, tbl, ("checkpoint",))
        checkpoints[name] = _load_checkpoint(
            ctx, name, tbl["checkpoint"], storage, models.get(name)
        )
    return Catalogue(p, ref, models, storage, checkpoints)


# --------------------------------------------------------------------------- job model


class CatalogueJobModel:
    """The catalogue as a job model (:mod:`gpusched.core.jobmodel`): durations and overheads.

    A trace row that gives ``iterations`` and ``model`` instead of ``duration`` runs
    ``iterations x`` the model's ideal iteration time on its GPU count
    (:meth:`Catalogue.ideal_iteration_s`); every derived duration is checked against the
    trace bounds, and errors name the line of the trace file. A job whose ``model`` has a
    checkpoint in the catalogue loads and saves for that checkpoint's times
    (:meth:`overheads`).
    """

    def overheads(self, jobs: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-job (load_s, save_s), s: the catalogue's checkpoint times for each job's model.

        NaN where the model has no checkpoint (then the run's ``--load-s``/``--save-s``
        apply) and on rows of annotated pipeline jobs, i.e. rows with a non-empty
        ``config`` field (the A-SRPT family, :mod:`gpusched.jobmodels.pipeline_jobs`): the
        A-SRPT paper has no load or save phases, so its results must not move when its
        models (VGG19) gain a checkpoint. Vectorised over the distinct model names.

        Parameters
        ----------
        jobs
            The job table (:class:`gpusched.core.jobs.JobTable`): its ``model`` and ``extra``.

        Returns
        -------
        tuple of numpy.ndarray or None
            ``(load_s, save_s)``, float64 of one value per job, or None when no job's
            model has a checkpoint.
        """
        n = len(jobs)
        model = np.asarray(getattr(jobs, "model", ()), dtype=object)
        if n == 0 or model.shape != (n,):
            return None
        cat = load_catalogue()
        if not cat.checkpoints:
            return None
        values = model.tolist()
        names = sorted(set(values))
        table = np.full((len(names) + 1, 2), np.nan)  # one row per name, then "no value"
        for k, name in enumerate(names):
            got = cat.overheads(str(name))
            if got is not None:
                table[k] = got
        if np.isnan(table).all():
            return None
        row = {name: k for k, name in enumerate(names)}
        codes = np.fromiter(map(row.__getitem__, values), dtype=np.int64, count=n)
        config = getattr(jobs, "extra", {}).get("config")
        if config is not None:  # pipeline rows take the "no value" row of the table
            codes = np.where(np.asarray(config, dtype=object) != "", len(names), codes)
        return table[codes, 0], table[codes, 1]

    def durations(
        self, trace: Any, work: np.ndarray, need: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """Fill ``work[need]`` (s); return it and the note ``replay`` prints."""
        from gpusched.core.jobmodel import duration_problem
        from gpusched.errors import TraceError, show_name

        cat = load_catalogue()
        name = show_name(trace.source)
        errors: list[str] = []
        cache: dict[tuple[str, int], float] = {}
        for i in np.flatnonzero(need).tolist():
            key = (str(trace.model[i]), int(trace.num_gpus[i]))
            where = f"{name}:{int(trace.line[i])}:"
            if key not in cache:
                try:
                    cache[key] = cat.ideal_iteration_s(*key)
                except CatalogueError as exc:
                    errors.append(f"{where} column 'model': {exc}")
                    cache[key] = np.nan
                    continue
            if np.isnan(cache[key]):
                continue  # unknown model, reported once
            work[i] = trace.iterations[i] * cache[key]
            problem = duration_problem(trace.iterations[i], key[0], key[1], work[i])
            if problem:
                errors.append(f"{where} {problem}")
        if errors:
            raise TraceError(errors)
        return work, [
            f"{int(need.sum())} job durations derived as iterations x catalogue iteration time"
        ]


JOB_MODEL = CatalogueJobModel()
