"""Annotated pipeline jobs on a cluster: eq. (4)-(7) speed on a Heavy-Edge mapping, perf model.

Glue between the A-SRPT leaf modules (:mod:`gpusched.jobmodels.pipeline`, :mod:`gpusched.jobmodels.heavy_edge`,
:mod:`gpusched.jobmodels.catalogue`) and the engine, for Z. Luo, J. Liu, M. Lee and
N. B. Shroff, "Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in
GPU Clusters" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563.

* :class:`PipelineJobs`: per job of a job table, its parallel configuration (``model`` and
  ``config`` columns, e.g. ``"2+2+2"`` replicas per stage), its true iterations
  :math:`n_i`, the estimate :math:`\\tilde\\alpha_i^{min}` (Sec. IV-B) and
  :math:`\\alpha_i^{max}` (Sec. III-B) on *this* cluster, and :math:`\\alpha_i` of any
  placement (eq. 7 after Heavy-Edge mapping), cached.
* :class:`PipelinePerf`: the engine's ``perf=`` model. A job runs at rate
  :math:`\\alpha^{ref}_i / \\alpha_i(x)` where :math:`\\alpha^{ref}_i` = duration / iterations
  is the per-iteration time its trace duration assumes, so that it runs for exactly
  :math:`n_i \\alpha_i(x)` seconds (the paper's :math:`n_i\\alpha_i` in problem (8)).

Conventions: an unannotated job (empty ``model``) has one "iteration" per second of work,
:math:`\\alpha^{min} = \\alpha^{max} = 1` and rate 1 wherever it runs. A placement is
described only by how many GPUs the job holds on each server; servers are homogeneous for
the perf model (``g`` = the largest server), so :math:`\\alpha` depends only on the sorted
per-server counts. The GPU list handed to ``Start`` is ordered by stage replica
(stage-major: the ``v``-th GPU hosts replica ``v`` of Heavy-Edge's vertex numbering);
:class:`PipelinePerf` does not rely on that order (it re-runs the deterministic Heavy-Edge
on the counts, which gives the same mapping).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.jobs import job_iterations
from gpusched.errors import TraceError, show_name
from gpusched.jobmodels.heavy_edge import (
    alpha_min_estimate,
    heavy_edge_partition,
    job_graph,
    vertex_stages,
)
from gpusched.jobmodels.pipeline import (
    PipelineSpec,
    alpha_max,
    iteration_time,
)
from gpusched.jobmodels.reading import reading_of

__all__ = [
    "PipelineJobs",
    "PipelinePerf",
    "format_config",
    "parse_config",
    "resolve_config",
]


def parse_config(text: str) -> tuple[int, ...]:
    """``"2+2+2"`` -> ``(2, 2, 2)`` (replicas per pipeline stage).

    Raises
    ------
    ValueError
        Not a ``+``-separated list of positive integers.
    """
    try:
        reps = tuple(int(p) for p in str(text).split("+"))
    except ValueError:
        raise ValueError(
            f"config must look like '2+2+2' (replicas per stage), got {text!r}"
        ) from None
    if not reps or min(reps) < 1:
        raise ValueError(f"config must list positive replica counts, got {text!r}")
    return reps


def format_config(replicas: tuple[int, ...] | list[int]) -> str:
    """``(2, 2, 2)`` -> ``"2+2+2"``."""
    return "+".join(str(int(k)) for k in replicas)


def resolve_config(catalogue: Any, model: str, replicas: tuple[int, ...]) -> Any:
    """The :class:`~gpusched.jobmodels.catalogue.ParallelConfig` of ``model`` with these replicas.

    A listed configuration if one has exactly these replicas, otherwise one synthesised
    with stages balanced by compute (as :meth:`Catalogue.config_for` synthesises them).

    Raises
    ------
    ValueError
        More stages than the model has blocks, or more replicas per stage than samples.
    """
    from gpusched.jobmodels.catalogue import ParallelConfig, _stages_for

    prof = catalogue.model(model)
    for cfg in prof.configs:
        if tuple(cfg.replicas) == tuple(replicas):
            return cfg
    if len(replicas) > len(prof.blocks) or max(replicas) > prof.batch_size:
        raise ValueError(
            f"model {model!r} cannot run config {format_config(replicas)}: "
            f"{len(prof.blocks)} blocks, batch {prof.batch_size}"
        )
    if len(replicas) == 1 and not prof.fits_one_gpu:
        raise ValueError(
            f"model {model!r} does not fit one GPU, so it cannot run {format_config(replicas)}"
        )
    return ParallelConfig(
        tuple(replicas), _stages_for(prof.blocks, tuple(replicas), None), synthesized=True
    )


class PipelineJobs:
    """Pipeline models of every job of a job table on one cluster.

    Parameters
    ----------
    jobs
        :class:`gpusched.core.jobs.JobTable`; reads ``model``, ``iterations``, ``work_s``,
        ``n_gpus`` and ``extra["config"]`` (when absent, a job with a model runs
        :meth:`Catalogue.config_for` of its GPU count).
    cluster
        :class:`gpusched.io.cluster.ClusterSpec`: ``nic_gbps`` (:math:`B_{inter}`),
        ``intra_gbyte_s`` (:math:`B_{intra}`), GPUs per server ``g`` and the performance
        model's reading (``allreduce_reading``, ``batch_reading``), which every spec, the
        ideal time, :math:`\\alpha^{max}` and each placement's time use.
    catalogue
        A loaded catalogue; default :func:`gpusched.jobmodels.catalogue.load_catalogue`.

    Attributes
    ----------
    n_gpus, iterations
        :math:`g_i` and true iterations :math:`n_i` per job.
    alpha_min, alpha_max
        :math:`\\tilde\\alpha_i^{min}` and :math:`\\alpha_i^{max}` on this cluster, s/iteration.
    alpha_ref
        Per-iteration time the job's duration assumes (duration / iterations), s.
    spec_id
        Index into ``specs`` per job; -1 for an unannotated job.
    """

    def __init__(self, jobs: Any, cluster: Any, catalogue: Any = None) -> None:
        n = len(jobs)
        self.n_gpus = np.asarray(jobs.n_gpus, dtype=np.int64)
        self.g = int(cluster.server_gpus().max())
        self.n_total = int(cluster.n_gpus)
        self.nic = float(cluster.nic_gbps)
        self.intra = float(cluster.intra_gbyte_s)
        self.reading = reading_of(cluster)
        work = np.asarray(jobs.work_s, dtype=np.float64)
        models = (
            np.asarray(jobs.model, dtype=object) if len(jobs.model) == n else np.full(n, "", object)
        )
        configs = (jobs.extra or {}).get("config")
        self.spec_id = np.full(n, -1, dtype=np.int64)
        self.specs: list[PipelineSpec] = []
        self.alpha_min = np.ones(n)
        self.alpha_max = np.ones(n)
        annotated = np.array([bool(m) for m in models], dtype=bool) if n else np.zeros(0, bool)
        if annotated.any():
            if catalogue is None:
                from gpusched.jobmodels.catalogue import load_catalogue

                catalogue = load_catalogue()
            ids: dict[tuple[str, tuple[int, ...]], int] = {}
            errors: list[str] = []  # a bad config names the trace's file and line
            lines = np.asarray(getattr(jobs, "line", ()), dtype=np.int64)
            for j in np.flatnonzero(annotated):
                model = str(models[j])
                text = str(configs[j]) if configs is not None and str(configs[j]) else ""
                if model not in catalogue.models:  # e.g. a Lazer trace's checkpoint-only models
                    where = f":{int(lines[j])}" if j < len(lines) else ""
                    errors.append(
                        f"{show_name(getattr(jobs, 'source', ''))}{where}: column 'model': "
                        f"{_no_pipeline(catalogue, model)}"
                    )
                    continue
                try:
                    if text:
                        reps = parse_config(text)
                    else:
                        reps = tuple(
                            catalogue.config_for(
                                model,
                                int(self.n_gpus[j]),
                                gpus_per_server=self.g,
                                nic_gbps=self.nic,
                                intra_gbyte_s=self.intra,
                                reading=self.reading,
                            ).replicas
                        )
                    if sum(reps) != self.n_gpus[j]:
                        raise ValueError(
                            f"job '{jobs.job_id[j]}': config {format_config(reps)} uses "
                            f"{sum(reps)} GPUs, "
                            f"the job asks for {int(self.n_gpus[j])}"
                        )
                    key = (model, reps)
                    if key not in ids:
                        spec = resolve_config(catalogue, model, reps).spec(self.reading)
                        ids[key] = len(self.specs)
                        self.specs.append(spec)
                except ValueError as exc:
                    where = f":{int(lines[j])}" if j < len(lines) else ""
                    errors.append(
                        f"{show_name(getattr(jobs, 'source', ''))}{where}: column 'config': {exc}"
                    )
                    continue
                self.spec_id[j] = ids[key]
            if errors:
                raise TraceError(errors)
            a_min = np.array(
                [alpha_min_estimate(s, self.nic, self.intra, self.g) for s in self.specs]
            )
            a_max = np.array([alpha_max(s, self.nic, self.intra, self.g) for s in self.specs])
            sel = self.spec_id >= 0
            self.alpha_min[sel] = a_min[self.spec_id[sel]]
            self.alpha_max[sel] = a_max[self.spec_id[sel]]
        it = job_iterations(jobs)
        given = (
            np.isfinite(np.asarray(jobs.iterations, dtype=np.float64))
            if len(jobs.iterations) == n
            else np.zeros(n, bool)
        )
        # annotated job without iterations: its duration is at this cluster's alpha_min
        it = np.where(annotated & ~given, work / self.alpha_min, it)
        self.iterations = it
        self.alpha_ref = np.where(annotated & (it > 0), work / np.where(it > 0, it, 1.0), 1.0)
        self.alpha_ref = np.where(annotated & (it > 0), self.alpha_ref, self.alpha_min)
        self._cache: dict[tuple[int, tuple[int, ...]], tuple[float, np.ndarray]] = {}

    @property
    def comm_ratio(self) -> np.ndarray:
        """:math:`\\alpha_i^{max} / \\tilde\\alpha_i^{min}` per job (Alg. 1 line 8)."""
        return self.alpha_max / self.alpha_min

    def mapping(self, j: int, counts: np.ndarray) -> tuple[float, np.ndarray]:
        """:math:`\\alpha_i` and the Heavy-Edge vertex placement on servers holding ``counts`` GPUs.

        Parameters
        ----------
        j
            Job index.
        counts
            GPUs the job gets on each of its servers, in descending order (Heavy-Edge's
            server order), summing to :math:`g_i`.

        Returns
        -------
        (alpha, vertex_pos)
            Seconds per iteration (eq. 7; ``alpha_ref`` for unannotated jobs) and, per stage
            replica (stage-major), the position in ``counts`` of its server.
        """
        sid = int(self.spec_id[j])
        key = (sid, tuple(int(c) for c in counts))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if sid < 0:
            pos = np.repeat(np.arange(len(counts)), counts)
            out = (1.0, pos)
        else:
            spec = self.specs[sid]
            c = np.asarray(counts, dtype=np.int64)
            pos = heavy_edge_partition(job_graph(spec), c)
            alloc = np.zeros((c.size, spec.n_stages), dtype=np.int64)
            np.add.at(alloc, (pos, vertex_stages(spec)), 1)
            out = (iteration_time(spec, alloc, self.nic, self.intra, self.g), pos)
        self._cache[key] = out
        return out

    def alpha(self, j: int, gpu_server: np.ndarray) -> float:
        """:math:`\\alpha_i` of job ``j`` on GPUs of the given servers (one entry per GPU)."""
        counts = np.unique(np.asarray(gpu_server), return_counts=True)[1]
        return self.mapping(j, np.sort(counts)[::-1])[0]


class PipelinePerf:
    """The engine's ``perf`` model for annotated pipeline jobs.

    ``rate(job, gpus)`` = :math:`\\alpha^{ref}_i / \\alpha_i(x)`, where :math:`x` is the
    job's per-server replica allocation that Heavy-Edge gives on the servers of ``gpus``,
    :math:`\\alpha_i(x)` is eq. (7) on the cluster's NIC and intra-server bandwidth, and
    :math:`\\alpha^{ref}_i` = duration / iterations. A job therefore runs
    :math:`n_i\\alpha_i(x)` seconds. Unannotated jobs run at rate 1. Rates above 1 occur
    when a placement beats the fewest-servers estimate :math:`\\tilde\\alpha^{min}` the
    annotation used; they are not clipped.

    Parameters
    ----------
    jobs, cluster, catalogue
        As for :class:`PipelineJobs`; or pass ``pipeline=`` to share one.
    """

    def __init__(
        self,
        jobs: Any,
        cluster: Any,
        catalogue: Any = None,
        *,
        pipeline: PipelineJobs | None = None,
    ) -> None:
        self.jobs = pipeline if pipeline is not None else PipelineJobs(jobs, cluster, catalogue)
        self.gpu_server = np.asarray(cluster.gpu_server())

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        """Progress rate (s of ideal work per s) of ``job`` on ``gpus`` (no configs)."""
        pj = self.jobs
        if pj.spec_id[job] < 0:
            return 1.0
        return float(pj.alpha_ref[job] / pj.alpha(job, self.gpu_server[np.asarray(gpus)]))


class PipelineJobModel:
    """Pipeline jobs as a job model (:mod:`gpusched.core.jobmodel`): annotated traces (a
    ``config`` column) run at the placement-aware speed of :class:`PipelinePerf`."""

    def perf(self, jobs: Any, cluster: Any) -> PipelinePerf | None:
        """The engine's rate model for annotated jobs; None for a trace without ``config``."""
        return PipelinePerf(jobs, cluster) if "config" in jobs.extra else None


JOB_MODEL = PipelineJobModel()


def _no_pipeline(catalogue: Any, model: str) -> str:
    """Why a job naming ``model`` cannot be placed as a pipeline, and what can."""
    what = (
        "has load and save times only in the model catalogue, no pipeline profile (blocks or "
        "configurations)"
        if model in catalogue.checkpoints
        else "is not in the model catalogue"
    )
    return (
        f"{model!r} {what}; jobs placed as pipelines (A-SRPT and its baselines) need a model "
        f"with one ({', '.join(sorted(catalogue.models))}) or no model"
    )
