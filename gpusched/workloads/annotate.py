"""Workload annotation: give each recurring-job group a DNN model and a parallel configuration.

Implements the workload construction of Sec. V-A 1-b of Z. Luo, J. Liu, M. Lee and
N. B. Shroff, "Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in
GPU Clusters" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563:

    "We assign each model and the derived distributed training configuration to a job
    group (i.e., a group of recurrent jobs) following the GPU requirement in the trace. If
    a job in a group requires only a single GPU, we pair the group with a model with a
    single-GPU training configuration. Otherwise, if the job group demands more than one
    GPU, we randomly select a model and one of its training configurations for the group.
    The number of job training iterations is computed by dividing the job duration in the
    trace by its approximate minimum per-iteration training time."

:func:`annotate_trace` writes ``model``, ``config`` (replicas per stage, e.g. ``"2+2+2"``)
and ``iterations`` = duration / :math:`\\tilde\\alpha^{min}` (Sec. IV-B estimate, on the
catalogue's reference cluster unless told otherwise) and keeps ``duration``. Seeded: the
same trace and seed give the same annotation.

When the trace has no ``group`` (recurring-job id) column, groups are synthesised; when it
has no ``user`` column, users are synthesised first. The process (documented so it can be
reproduced and criticised):

* users (only if absent): each job's user is drawn from a Zipf(1.1) popularity over
  :math:`U = \\lceil\\sqrt{n}\\rceil` users (an arbitrary heavy-tailed choice; Philly's VCs and
  PAI's users are heavy-tailed);
* groups (only if absent): recurring jobs of one user share a GPU demand, so groups are
  formed within each (user, num_gpus) key, in submission order, by Simon's process: a
  key's first job opens a group; each later job opens a new group with probability
  :math:`p`, else joins the group of a uniformly chosen earlier job of its key (i.e. a group
  with probability proportional to its size). :math:`p` is set by bisection (common random
  numbers, so the result is deterministic) so that the share of jobs whose group has at
  least 5 submissions matches ``recurrent_share`` = 0.65: "most DDL jobs are recurrent,
  with nearly 65% submitted at least five times over two months" (Sec. IV-C-3, citing
  Q. Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale
  Heterogeneous GPU Clusters", USENIX NSDI 2022). The trace is treated as the whole
  observation window; on short traces this overstates recurrence per unit time.
  Synthesised groups carry no information about duration beyond user and GPU count, so a
  predictor keyed on them is weaker than on real group ids.

Choices where the paper is silent: a group with jobs of several GPU counts gets one model
that can run all of them if the catalogue has one, otherwise one model per (group, GPU
count); "one of its training configurations" is uniform among the catalogue's listed
configurations with exactly that many GPUs, or :meth:`Catalogue.config_for`'s synthesised
one when none is listed; a one-GPU job uses the model's single-GPU configuration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.io.trace import Trace

__all__ = ["MIN_RECURRENCE", "RECURRENT_SHARE", "annotate_trace", "recurrent_share", "synth_groups"]

RECURRENT_SHARE = 0.65
"""Share of jobs submitted at least five times (Weng et al., NSDI 2022, via Sec. IV-C-3)."""

MIN_RECURRENCE = 5


def recurrent_share(groups: np.ndarray, k: int = MIN_RECURRENCE) -> float:
    """Share of jobs whose group has at least ``k`` jobs.

    Parameters
    ----------
    groups
        Group id of every job.
    k
        Minimum submissions of a recurring group.
    """
    g = np.asarray(groups).astype(str)
    if g.size == 0:
        return 0.0
    _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    return float((counts[inv] >= k).mean())


def _simon(keys: np.ndarray, p: float, u_new: np.ndarray, u_pick: np.ndarray) -> np.ndarray:
    """Simon's process within each key, in job order; returns an integer group per job."""
    group = np.empty(keys.shape[0], dtype=np.int64)
    members: dict[Any, list[int]] = {}
    n_groups = 0
    for i, key in enumerate(keys.tolist()):
        prev = members.setdefault(key, [])
        if not prev or u_new[i] < p:
            group[i] = n_groups
            n_groups += 1
        else:
            group[i] = group[prev[int(u_pick[i] * len(prev))]]
        prev.append(i)
    return group


def synth_groups(
    keys: np.ndarray,
    rng: np.random.Generator,
    share: float = RECURRENT_SHARE,
    k: int = MIN_RECURRENCE,
) -> tuple[np.ndarray, float, float]:
    """Recurring-job groups by Simon's process within each key, calibrated to ``share``.

    Parameters
    ----------
    keys
        Per job (submission order) the key within which groups form, e.g. ``"user/num_gpus"``.
    rng
        Source of the two uniform draws per job (reused for every candidate ``p``).
    share
        Target share of jobs whose group has at least ``k`` jobs.
    k
        Minimum group size that counts as recurring.

    Returns
    -------
    (groups, p, achieved)
        Integer group per job, the new-group probability chosen, the share achieved.
    """
    n: int = keys.shape[0]
    u_new, u_pick = rng.random(n), rng.random(n)
    lo, hi = 0.0, 1.0  # share decreases as p grows
    best = (_simon(keys, 0.0, u_new, u_pick), 0.0)
    best_err = abs(recurrent_share(best[0], k) - share)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        g = _simon(keys, mid, u_new, u_pick)
        got = recurrent_share(g, k)
        if abs(got - share) < best_err:
            best, best_err = (g, mid), abs(got - share)
        if got > share:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4:
            break
    return best[0], best[1], recurrent_share(best[0], k)


def _zipf_users(n: int, rng: np.random.Generator, s: float = 1.1) -> np.ndarray:
    n_users = max(1, int(np.ceil(np.sqrt(n))))
    w = 1.0 / np.arange(1, n_users + 1) ** s
    idx = rng.choice(n_users, size=n, p=w / w.sum())
    return np.array([f"u{i:04d}" for i in idx], dtype=object)


class _Models:
    """Which catalogue models/configurations can run a GPU count, and their alpha_min."""

    def __init__(
        self, cat: Any, g: int | None, nic: float | None, intra: float | None, reading: Any
    ) -> None:
        from gpusched.jobmodels.heavy_edge import alpha_min_estimate

        self.cat = cat
        ref = cat.reference
        self.g = int(ref.gpus_per_server if g is None else g)
        self.nic = float(ref.nic_gbps if nic is None else nic)
        self.intra = float(ref.intra_gbyte_s if intra is None else intra)
        self.reading = reading
        self._amin = alpha_min_estimate
        self.names = list(cat.models)
        self._cfgs: dict[tuple[str, int], list[tuple[int, ...]]] = {}
        self._alpha: dict[tuple[str, tuple[int, ...]], float] = {}

    def configs(self, model: str, n_gpus: int) -> list[tuple[int, ...]]:
        """Configurations of ``model`` with exactly ``n_gpus`` GPUs (listed, else synthesised)."""
        key = (model, n_gpus)
        if key not in self._cfgs:
            from gpusched.errors import CatalogueError

            prof = self.cat.model(model)
            if n_gpus == 1:
                out = [tuple(prof.single_gpu.replicas)] if prof.single_gpu is not None else []
            else:
                out = [tuple(c.replicas) for c in prof.configs if c.n_gpus == n_gpus]
                if not out:
                    try:
                        out = [
                            tuple(
                                self.cat.config_for(
                                    model,
                                    n_gpus,
                                    gpus_per_server=self.g,
                                    nic_gbps=self.nic,
                                    intra_gbyte_s=self.intra,
                                    reading=self.reading,
                                ).replicas
                            )
                        ]
                    except CatalogueError:
                        out = []
            self._cfgs[key] = out
        return self._cfgs[key]

    def alpha_min(self, model: str, reps: tuple[int, ...]) -> float:
        """:math:`\\tilde\\alpha^{min}` of a configuration, s per iteration."""
        key = (model, reps)
        if key not in self._alpha:
            from gpusched.jobmodels.pipeline_jobs import resolve_config

            spec = resolve_config(self.cat, model, reps).spec(self.reading)
            self._alpha[key] = float(self._amin(spec, self.nic, self.intra, self.g))
        return self._alpha[key]


def annotate_trace(
    trace: Trace,
    seed: int,
    catalogue: Any = None,
    *,
    recurrent_share_target: float = RECURRENT_SHARE,
    gpus_per_server: int | None = None,
    nic_gbps: float | None = None,
    intra_gbyte_s: float | None = None,
    reading: Any = None,
) -> tuple[Trace, list[str]]:
    """Assign models, configurations and iterations to a trace's job groups (Sec. V-A 1-b).

    Parameters
    ----------
    trace
        A trace with ``duration`` for every job (s).
    seed
        Seed of every random choice (users, groups, models, configurations).
    catalogue
        A loaded :class:`~gpusched.jobmodels.catalogue.Catalogue`; default the shipped one.
    recurrent_share_target
        Share of jobs in groups of at least 5 jobs when groups are synthesised.
    gpus_per_server, nic_gbps, intra_gbyte_s
        Cluster for :math:`\\tilde\\alpha^{min}` (GPUs per server, Gbit/s, GByte/s); ``None``
        takes the catalogue's reference (the paper's Sec. V-B cluster).
    reading
        The performance model's :class:`~gpusched.jobmodels.reading.Reading` for
        :math:`\\tilde\\alpha^{min}` (so ``iterations = duration / alpha_min`` under it);
        ``None`` takes the default reading. Replay the trace on a cluster with the same
        reading, or its jobs' ideal durations change by the ratio of the two readings'
        :math:`\\tilde\\alpha^{min}`.

    Returns
    -------
    (Trace, notes)
        The trace with ``model``, ``iterations`` and extra ``user``, ``group``, ``config``
        columns (``duration`` kept), and human-readable notes on what was synthesised.

    Raises
    ------
    GpuschedError
        A job without a duration, or a GPU count no catalogue model can run.
    """
    from gpusched.errors import GpuschedError, check_seed, show_name, show_value

    if catalogue is None:
        from gpusched.jobmodels.catalogue import load_catalogue

        catalogue = load_catalogue()
    n = len(trace)
    dur = np.asarray(trace.duration, dtype=np.float64)
    if n and not np.isfinite(dur).all():
        first = int(np.flatnonzero(~np.isfinite(dur))[0])
        raise GpuschedError(
            f"{trace.source}: job '{trace.job_id[first]}' has no duration to annotate"
        )
    check_seed(seed)
    rng = np.random.default_rng(seed)
    rng_users, rng_groups, rng_models = rng.spawn(3)
    notes: list[str] = []
    extra = dict(trace.extra)
    order = np.argsort(np.asarray(trace.submit_time), kind="stable")
    gpus = np.asarray(trace.num_gpus, dtype=np.int64)

    if "user" not in extra:
        users = np.empty(n, dtype=object)
        users[order] = _zipf_users(n, rng_users)
        extra["user"] = users
        notes.append(
            f"users synthesised: Zipf(1.1) over {max(1, int(np.ceil(np.sqrt(n))))} users "
            f"(seed {seed})"
        )
    if "group" not in extra:
        keys = np.array(
            [f"{u}/{g}" for u, g in zip(extra["user"][order], gpus[order], strict=True)],
            dtype=object,
        )
        grp, p, got = synth_groups(keys, rng_groups, recurrent_share_target)
        groups = np.empty(n, dtype=object)
        groups[order] = [f"g{x:06d}" for x in grp]
        extra["group"] = groups
        notes.append(
            f"groups synthesised within (user, num_gpus) by Simon's process, new-group probability "
            f"p={p:.4f}: {got:.1%} of jobs in groups of >= {MIN_RECURRENCE} submissions "
            f"(target {recurrent_share_target:.0%}, Weng et al. NSDI'22 via A-SRPT Sec. IV-C-3)"
        )
    else:
        notes.append(
            f"groups from the trace: {recurrent_share(extra['group']):.1%} of jobs in groups "
            f"of >= {MIN_RECURRENCE}"
        )

    if reading is None:
        from gpusched.jobmodels.reading import DEFAULT_READING

        reading = DEFAULT_READING
    models = _Models(catalogue, gpus_per_server, nic_gbps, intra_gbyte_s, reading)
    group = np.asarray(extra["group"]).astype(str)
    model_of = np.empty(n, dtype=object)
    config_of = np.empty(n, dtype=object)
    iters = np.empty(n)
    # groups in order of first submission, so draws do not depend on row order
    first_seen: dict[str, list[int]] = {}
    for i in order.tolist():
        first_seen.setdefault(group[i], []).append(i)
    n_split = 0
    for gname, members in first_seen.items():
        demands = sorted({int(gpus[i]) for i in members})
        able = [m for m in models.names if all(models.configs(m, d) for d in demands)]
        choice: dict[int, str] = {}
        if able:
            m = able[int(rng_models.integers(len(able)))]
            choice = dict.fromkeys(demands, m)
        else:
            n_split += 1
            for d in demands:
                cand = [m for m in models.names if models.configs(m, d)]
                if not cand:
                    row = next(i for i in members if int(gpus[i]) == d)
                    at = f":{int(trace.line[row])}" if np.asarray(trace.line).size == n else ""
                    raise GpuschedError(
                        f"{show_name(trace.source)}{at}: column 'num_gpus': no catalogue model "
                        f"can run {d} GPUs (job {show_value(str(trace.job_id[row]))}, group "
                        f"{show_value(str(gname))})"
                    )
                choice[d] = cand[int(rng_models.integers(len(cand)))]
        cfg_for: dict[int, tuple[int, ...]] = {}
        for d in demands:
            cands = models.configs(choice[d], d)
            cfg_for[d] = cands[int(rng_models.integers(len(cands)))]
        for i in members:
            d = int(gpus[i])
            reps = cfg_for[d]
            model_of[i] = choice[d]
            config_of[i] = "+".join(map(str, reps))
            iters[i] = dur[i] / models.alpha_min(choice[d], reps)
    if n_split:
        notes.append(f"{n_split} group(s) with several GPU counts got one model per GPU count")
    had = [
        c
        for c, given in (("model", trace.model), ("iterations", trace.iterations))
        if np.asarray(given).size and _any_given(given)
    ]
    had += ["config"] if "config" in trace.extra else []
    if had:  # the trace's own are replaced: say so, not silently
        notes.append(f"the trace's own {', '.join(had)} replaced by the assignment below")
    extra["config"] = config_of
    notes.append(
        f"models and configurations assigned per group from {catalogue.path.name} (seed {seed}); "
        f"iterations = duration / alpha_min on {models.g} GPUs/server, {models.nic:g} Gbit/s NIC, "
        f"{models.intra:g} GB/s intra-server"
    )
    out = Trace(
        job_id=trace.job_id,
        submit_time=trace.submit_time,
        num_gpus=trace.num_gpus,
        duration=dur,
        iterations=iters,
        model=model_of if n else np.empty(0, dtype=object),
        extra=extra,
        load_s=trace.load_s,  # the trace's own load and save times, kept
        save_s=trace.save_s,
        source=f"annotate_trace({trace.source}, seed={seed})",
    )
    return out, notes


def _any_given(column: Any) -> bool:
    """Whether a model (text) or iterations (float) column holds any value."""
    a = np.asarray(column)
    if a.dtype.kind == "f":
        return bool(np.isfinite(a).any())
    return any(str(x).strip() for x in a.tolist())
