"""The pieces of the GPU-sharing policies (SJF-BSBF and SJF-FFS) that are not the policy.

Luo et al., *Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise Resource
Sharing* (``policies/sjf_bsbf.py`` cites the algorithm lines):

* :func:`pair_jct`: Theorem 1 (Sec. V-A, eq. 16-25): the average JCT of a running job B and
  a new job A that either shares B's GPUs now (kappa = 0) or waits for B to end (the fully
  non-overlapped schedule); the theorem says one of the two is optimal, and "in practice,
  evaluating the conditions for the best solution is the same as directly comparing the
  fully overlapped time and the fully non-overlapped time", which is what this does.
* :func:`best_sub_batch`: Alg. 2, the sub-batch search over powers of two.
* :class:`JobTimes`: what the policies need to know of a job: its solo time at a sub-batch
  (eq. 7 through the sharing job model), its memory, and the interference ratios.
* :func:`consolidated`: "the top-G GPUs in G_free", as consolidated as possible (Alg. 1
  line 7; Sec. V-B 2: "to make them as colidated on the nodes as possible").

Reading choices (the paper is silent or ambiguous; a careful reader's choice, stated):

1. Times are measured from now. B's remaining time alone is its remaining work over its
   solo rate (at the configuration it runs with); A's solo time at sub-batch b is its
   duration times t_iter(b) / t_iter(B_A) (eq. 7; gradient accumulation keeps the global
   batch, so the iterations do not change).
2. While sharing, A runs at t_A xi_A and B at t_B xi_B (eq. 16-17); when the shorter ends,
   the other continues alone (at its solo speed, A keeping its sub-batch: the paper never
   re-batches a running job). If A waits, it starts when B ends, alone, at its full batch.
3. Alg. 2 as printed assigns ``t_bar <- t`` and returns inside the loop; we read it as
   ``t_bar <- t_share`` with the return after the loop (the text: "we record that
   configuration if better"). The loop runs for b = B, ceil(B/2), ..., 1, so b = 1 is tried.
   Sub-batches that do not fit in GPU memory beside B are skipped (Sec. IV-A 4: "the memory
   footprint frequently imposes constraints on feasibility").
4. Jobs of no sharing model (a plain ``duration`` trace) have one configuration (the
   default) and no memory model; their xi comes from the engine's matrix.
5. Placement (``placement="aware"``, the default). Theorem 1's :math:`t_A` is A's iteration
   time on the GPUs A would get: eq. 4 depends on where the GPUs are (one server or
   several), and the engine charges exactly that (``SharingPerf.rate``). So a job whose
   ideal placement is one server (``1 < G <= GPUs per server``: a *placement-sensitive*
   shape) is first offered a set on one server (lines 14-17 walked per server: the first
   server whose GPUs of partners worth sharing with, at one-server times, plus its idle
   GPUs hold the gang); failing that, Alg. 2 and Theorem 1 are evaluated again at the
   cross-server time (:attr:`JobTimes.t_spread`) and the gang is assembled across servers
   as the paper's lines 15-17 read; failing that, the job waits. Waiting keeps L_k: A
   alone at its ideal placement and full batch (it would then start by lines 6-7,
   consolidated). Shapes of one GPU or of more than one server's GPUs cost the same on any
   GPUs (eq. 4 as fitted distinguishes only one server from several), so for them nothing
   changes. ``placement="ideal"`` is the former reading (every candidate priced at the
   ideal placement, GPUs assembled in pair order across servers), kept for the ablation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.helpers import helper

__all__ = [
    "JobTimes",
    "alone_holders",
    "best_sub_batch",
    "best_sub_batches",
    "consolidated",
    "first_enough",
    "first_of_each_shape",
    "gpus_of_pairs",
    "gpus_on_one_server",
    "pair_jct",
    "plan_sjf_bsbf",
    "sjf_order",
    "worth_sharing",
]


def pair_jct(solo_a: Any, solo_b: Any, xi_a: Any, xi_b: Any) -> Any:
    """Average JCT (from now) of new job A and running job B sharing from now on, s.

    ``solo_a`` / ``solo_b`` are their times alone (A from its start, B what it has left);
    together each runs ``xi`` times slower (eq. 16-17) until the shorter ends. Numbers or
    arrays (broadcast).
    """
    shared_a = solo_a * xi_a  # A's time if it shared all along
    shared_b = solo_b * xi_b
    avg = np.where(
        shared_a <= shared_b,
        (2 * shared_a + solo_b - shared_a / xi_b) / 2.0,  # A ends first, B finishes alone
        (2 * shared_b + solo_a - shared_b / xi_a) / 2.0,  # B ends first, A finishes alone
    )
    return avg if avg.ndim else float(avg)


def sequential_jct(solo_a_full: Any, solo_b: Any) -> Any:
    """Average JCT (from now) when A waits for B and then runs alone at its full batch, s."""
    return (solo_b + solo_b + solo_a_full) / 2.0


def best_sub_batch(
    times: JobTimes, a: int, b_job: int, b_config: Any, solo_b: float
) -> tuple[bool, Any, float]:
    """Alg. 2: ``(share, sub_batch, avg_jct)`` for new job ``a`` beside running ``b_job``.

    For every sub-batch of ``a`` that fits in GPU memory beside ``b_job`` (at its
    ``b_config``), Theorem 1 compares sharing now with waiting; the best average JCT wins
    (ties to the smaller sub-batch, as the printed ``<=`` does). ``share`` is False when
    waiting is best, or when no sub-batch fits (``avg_jct`` inf).
    """
    share, k, t = best_sub_batches(times, a, np.array([b_job]), [b_config], np.array([solo_b]))
    subs = times.profile(a)[0]
    return bool(share[0]), subs[int(k[0])] if np.isfinite(t[0]) else None, float(t[0])


def best_sub_batches(
    times: JobTimes,
    a: int,
    partners: np.ndarray,
    configs: list[Any],
    solo_b: np.ndarray,
    mem_b: np.ndarray | None = None,
    spread: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`best_sub_batch` for many running jobs at once (numpy over partners x sub-batches).

    ``mem_b``: the partners' memory at their configs, GB, if the caller has it. ``spread``:
    A shares at its cross-server times (:attr:`JobTimes.t_spread`; waiting keeps its
    ideal-placement time, reading 5). Returns per
    partner: share (bool), the index of the chosen sub-batch in
    ``times.profile(a)[0]``, and the pair's average JCT (inf when no sub-batch fits).
    """
    _, solo_a, mem_a = times.profile(a, spread)
    xa = times.xi[times.kind[a], times.kind[partners]][:, None]
    xb = times.xi[times.kind[partners], times.kind[a]][:, None]
    if mem_b is None:
        mem_b = np.array([times.mem(b, c) for b, c in zip(partners.tolist(), configs, strict=True)])
    fits = mem_a[None, :] + mem_b[:, None] <= times.limit_gb
    together = pair_jct(solo_a[None, :], solo_b[:, None], xa, xb)  # partners x sub-batches
    # A waits, then runs alone at its full batch and ideal placement (L_k)
    wait = sequential_jct(times.profile(a)[1][0], solo_b)[:, None]
    share = together < wait
    t = np.where(fits, np.where(share, together, wait), np.inf)
    n_sub = solo_a.shape[0]
    k = n_sub - 1 - np.argmin(t[:, ::-1], axis=1)  # ties: the smaller sub-batch (Alg. 2 "<=")
    rows = np.arange(partners.shape[0])
    best = t[rows, k]
    return share[rows, k] & np.isfinite(best), k, best


def worth_sharing(
    times: JobTimes,
    jobs: np.ndarray,
    partners: np.ndarray,
    solo_b: np.ndarray,
    mem_b: np.ndarray,
    spread: bool = False,
) -> np.ndarray:
    """Whether Alg. 2 finds each new job worth sharing with each running job (one jitted
    pass over jobs x partners x sub-batches): ``share`` of :func:`best_sub_batches`, row by
    row.

    Parameters
    ----------
    times
        The jobs' times.
    jobs
        New jobs, int array.
    partners
        Running jobs, int array.
    solo_b
        The partners' remaining times alone, s.
    mem_b
        The partners' memory at their configs, GB.
    spread
        Whether the new jobs share at their cross-server times (:attr:`JobTimes.t_spread`);
        waiting keeps their ideal-placement times.

    Returns
    -------
    numpy.ndarray
        bool ``(len(jobs), len(partners))``: True where some sub-batch fits beside the
        partner and sharing now beats waiting (Theorem 1). :func:`best_sub_batches` keeps
        a partner exactly then: its best pair JCT is below waiting only through such a
        sub-batch, and any such sub-batch puts the best below waiting.
    """
    s = times.shape_of[jobs]
    i64, f64 = np.int64, np.float64
    out: np.ndarray = _worth_sharing(
        np.ascontiguousarray(times.work[jobs], f64),
        np.ascontiguousarray(s, i64),
        np.ascontiguousarray(times.kind[jobs], i64),
        np.ascontiguousarray(times.kind[partners], i64),
        np.ascontiguousarray(solo_b, f64),
        np.ascontiguousarray(mem_b, f64),
        times.t_spread if spread else times.t_iter,
        times.t_full,
        times.mem_gb,
        times.n_sub,
        np.ascontiguousarray(times.xi, f64),
        float(times.limit_gb),
        times.shortcut(s, spread),
    )
    return out


@helper
def _pair_jct(solo_a, solo_b, xi_a, xi_b):  # type: ignore[no-untyped-def]
    """:func:`pair_jct` of one pair (the same operations in the same order: bit-equal)."""
    shared_a = solo_a * xi_a
    shared_b = solo_b * xi_b
    if shared_a <= shared_b:
        return (2 * shared_a + solo_b - shared_a / xi_b) / 2.0
    return (2 * shared_b + solo_a - shared_b / xi_a) / 2.0


@helper
def _worth_sharing(  # type: ignore[no-untyped-def]
    work, shape, kind_a, kind_b, solo_b, mem_b, t_iter, t_full, mem_gb, n_sub, xi, limit, shortcut
):
    """:func:`worth_sharing` in loops, one call instead of some thirty numpy operations.

    Per job ``a`` (duration ``work[a]``, shape ``shape[a]``) and partner ``p``, over the
    sub-batches ``w`` of the job's shape: A's solo time ``work t_iter / t_full`` (eq. 7,
    as :meth:`JobTimes.profile`; ``t_iter`` is the table of the placement priced, and
    column 0 of the ideal one equals ``t_full``), the fit ``mem_gb + mem_b <= limit``
    (padding is NaN: fits nothing), waiting ``(2 solo_b + work) / 2`` (A alone at its
    ideal placement and full batch) and sharing (:func:`pair_jct`),
    each with the numpy version's operations in its order. ``shortcut``: the largest
    sub-batch that fits decides, unless some pair is within 1e-9 of a tie, in which case
    every pair is decided over all its sub-batches (as the numpy version did).
    """
    n_a = work.shape[0]
    n_b = solo_b.shape[0]
    out = np.zeros((n_a, n_b), dtype=np.bool_)
    full = not shortcut
    if shortcut:
        for a in range(n_a):
            s = shape[a]
            solo_0 = work[a] * t_full[s] / t_full[s]  # == work t_iter[s, 0] / t_full[s] (ideal)
            for p in range(n_b):
                first = -1
                for w in range(n_sub[s]):
                    if mem_gb[s, w] + mem_b[p] <= limit:
                        first = w
                        break
                if first < 0:
                    continue
                wait = (solo_b[p] + solo_b[p] + solo_0) / 2.0
                solo_a = work[a] * t_iter[s, first] / t_full[s]
                xa = xi[kind_a[a], kind_b[p]]
                xb = xi[kind_b[p], kind_a[a]]
                together = _pair_jct(solo_a, solo_b[p], xa, xb)
                if together < wait:
                    out[a, p] = True
                elif together <= wait * (1.0 + 1e-9):
                    full = True  # a near-tie: rounding might matter, try every sub-batch
        if not full:
            return out
    for a in range(n_a):
        s = shape[a]
        solo_0 = work[a] * t_full[s] / t_full[s]
        for p in range(n_b):
            wait = (solo_b[p] + solo_b[p] + solo_0) / 2.0
            xa = xi[kind_a[a], kind_b[p]]
            xb = xi[kind_b[p], kind_a[a]]
            hit = False
            for w in range(n_sub[s]):
                if mem_gb[s, w] + mem_b[p] <= limit:
                    solo_a = work[a] * t_iter[s, w] / t_full[s]
                    if _pair_jct(solo_a, solo_b[p], xa, xb) < wait:
                        hit = True
                        break
            out[a, p] = hit
    return out


def first_of_each_shape(
    need: np.ndarray, shape: np.ndarray, refused: np.ndarray, pos: int, stop: int, room: int
) -> np.ndarray:
    """Positions ``i`` in ``pos:stop`` with ``need[i] <= room`` whose ``shape[i]`` is not
    ``refused`` and not that of an earlier such position, ascending (int64).

    SJF-BSBF's jobs to evaluate (``policies/sjf_bsbf.py``, reading 3): the first job of
    each shape not yet refused, among those that fit the GPUs idle or holding one job.
    """
    out: np.ndarray = _first_of_each_shape(
        np.ascontiguousarray(need, np.int64),
        np.ascontiguousarray(shape, np.int64),
        np.ascontiguousarray(refused, np.bool_),
        int(pos),
        int(stop),
        int(room),
    )
    return out


@helper
def _first_of_each_shape(need, shape, refused, pos, stop, room):  # type: ignore[no-untyped-def]
    seen = refused.copy()  # a shape refused or already taken
    out = np.empty(max(stop - pos, 0), dtype=np.int64)
    m = 0
    for i in range(pos, stop):
        if need[i] <= room and not seen[shape[i]]:
            seen[shape[i]] = True
            out[m] = i
            m += 1
    return out[:m]


def alone_holders(
    one: np.ndarray, holder: np.ndarray, status: np.ndarray, skip: int
) -> tuple[np.ndarray, np.ndarray]:
    """The jobs alone on some GPU, ascending, and on how many GPUs each is (int64 both).

    ``one``: the GPUs holding exactly one job (a mask); ``holder``: the job in each GPU's
    first slot; ``status``: each job's status; jobs of status ``skip`` are left out
    (SJF-BSBF: jobs it started in this very decision are still queued in the view).
    """
    jobs, counts = _alone_holders(
        np.ascontiguousarray(one, np.bool_),
        np.ascontiguousarray(holder, np.int64),
        status,
        int(skip),
    )
    return jobs, counts


@helper
def _alone_holders(one, holder, status, skip):  # type: ignore[no-untyped-def]
    """The distinct holders are kept ascending as they are met (a binary search each, and
    the previous GPU's holder checked first: a gang's GPUs are mostly adjacent), not by
    sorting every GPU's holder: there are far fewer jobs than GPUs."""
    n = one.shape[0]
    jobs = np.empty(n, dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    k = 0  # distinct holders so far, jobs[:k] ascending
    last = -1  # where the previous GPU's holder is in jobs
    for g in range(n):
        if not one[g]:
            continue
        h = holder[g]
        if last >= 0 and jobs[last] == h:
            counts[last] += 1
            continue
        lo, hi = 0, k  # the first of jobs[:k] >= h
        while lo < hi:
            mid = (lo + hi) // 2
            if jobs[mid] < h:
                lo = mid + 1
            else:
                hi = mid
        if lo == k or jobs[lo] != h:
            for i in range(k, lo, -1):
                jobs[i] = jobs[i - 1]
                counts[i] = counts[i - 1]
            jobs[lo] = h
            counts[lo] = 0
            k += 1
        counts[lo] += 1
        last = lo
    m = 0
    for i in range(k):
        if status[jobs[i]] != skip:
            jobs[m] = jobs[i]
            counts[m] = counts[i]
            m += 1
    return jobs[:m], counts[:m]


def sjf_order(
    queued: np.ndarray, duration: np.ndarray, n_gpus: np.ndarray, shape_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``queued`` jobs shortest ``duration`` first (ties: their order in ``queued``, a
    stable sort), with each one's GPU count and shape (int64 all three)."""
    order, need, shape = _sjf_order(
        np.ascontiguousarray(queued, np.int64),
        duration,
        n_gpus,
        np.ascontiguousarray(shape_of, np.int64),
    )
    return order, need, shape


@helper
def _sjf_order(queued, duration, n_gpus, shape_of):  # type: ignore[no-untyped-def]
    key = np.empty(queued.shape[0], dtype=np.float64)
    for i in range(queued.shape[0]):
        key[i] = duration[queued[i]]
    order = queued[np.argsort(key, kind="mergesort")]  # mergesort is stable
    need = np.empty(order.shape[0], dtype=np.int64)
    shape = np.empty(order.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        need[i] = n_gpus[order[i]]
        shape[i] = shape_of[order[i]]
    return order, need, shape


def first_enough(ok: np.ndarray, n_own: np.ndarray, n_free: int, need: np.ndarray) -> int:
    """The first job (row of ``ok``, jobs x partners) worth sharing with some partner whose
    partners' GPUs (``n_own`` each) plus ``n_free`` idle ones hold its ``need``; the
    number of rows when none is (Alg. 1 lines 15-17)."""
    return int(
        _first_enough(
            np.ascontiguousarray(ok, np.bool_),
            np.ascontiguousarray(n_own, np.int64),
            int(n_free),
            np.ascontiguousarray(need, np.int64),
        )
    )


@helper
def _first_enough(ok, n_own, n_free, need):  # type: ignore[no-untyped-def]
    for i in range(ok.shape[0]):
        some = False
        gpus = 0
        for p in range(ok.shape[1]):
            if ok[i, p]:
                some = True
                gpus += n_own[p]
        if some and gpus + n_free >= need[i]:
            return i
    return ok.shape[0]


def consolidated(free: np.ndarray, gpu_server: np.ndarray, g: int) -> np.ndarray | None:
    """``g`` GPUs among the ``free`` ones (a mask), on the fewest servers; None if too few.

    A single server with room when there is one (best fit: the fewest free GPUs that still
    fit, lowest index on ties), else servers by most free GPUs (lowest index on ties),
    lowest-numbered GPUs first: the engine's default placement.
    """
    idx = np.flatnonzero(free)
    if idx.size < g:
        return None
    per = np.bincount(gpu_server[idx], minlength=int(gpu_server.max()) + 1)
    fit = np.flatnonzero(per >= g)
    if fit.size:
        server = fit[np.argmin(per[fit])]
        on: np.ndarray = idx[gpu_server[idx] == server][:g]
        return on
    chosen: list[int] = []
    for server in np.lexsort((np.arange(per.size), -per)):
        on = idx[gpu_server[idx] == server]
        chosen += on[: g - len(chosen)].tolist()
        if len(chosen) == g:
            break
    return np.asarray(chosen, dtype=np.int64)


def gpus_of_pairs(
    g: int,
    free: np.ndarray,
    one: np.ndarray,
    holder: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, list[int]] | None:
    """Alg. 1 lines 12-17 (numpy): the GPUs alone with the partners Alg. 2 chose, best
    pairs first, then ``free`` GPUs, wherever they are.

    Parameters
    ----------
    g
        GPUs the job needs.
    free, one
        Masks of the GPUs holding no job and one job.
    holder
        The job in each GPU's first slot.
    pairs
        ``(partners, share, k, t)`` as :func:`best_sub_batches` gives them for these
        partners: whether to share, the sub-batch index and the pair's average JCT.

    Returns
    -------
    tuple or None
        ``(gpus ascending, the sub-batch index of each partner whose GPUs were taken)``,
        or None when the GPUs are too few.
    """
    partners, share, k, t = pairs
    keep = np.flatnonzero(share)  # line 12
    if keep.size == 0:
        return None
    keep = keep[np.lexsort((partners[keep], t[keep]))]  # line 14: by the pair's JCT
    gpus: list[int] = []
    chosen: list[int] = []
    for i in keep.tolist():  # lines 15-17
        on_b = np.flatnonzero(one & (holder == partners[i]))
        gpus += on_b[: g - len(gpus)].tolist()
        chosen.append(int(k[i]))
        if len(gpus) == g:
            break
    if len(gpus) < g:  # free GPUs last
        gpus += np.flatnonzero(free)[: g - len(gpus)].tolist()
    if len(gpus) < g:
        return None
    return np.asarray(sorted(gpus), dtype=np.int64), chosen


def gpus_on_one_server(
    g: int,
    free: np.ndarray,
    one: np.ndarray,
    holder: np.ndarray,
    gpu_server: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, list[int]] | None:
    """Alg. 1 lines 14-17 on one server (numpy; reading 5): the partners Alg. 2 chose,
    best pairs first, add their GPUs to their servers' tallies; the first server whose
    tally plus its free GPUs holds ``g`` (the lowest if several at once) takes the
    partners' GPUs there, then its free ones. Arguments and result as
    :func:`gpus_of_pairs` (``gpu_server``: each GPU's server); None when no server holds
    the gang."""
    partners, share, k, t = pairs
    keep = np.flatnonzero(share)
    keep = keep[np.lexsort((partners[keep], t[keep]))]  # line 14
    server = np.asarray(gpu_server)
    tally = np.bincount(server[free], minlength=int(server.max()) + 1)
    walked = 0
    reached = np.zeros(0, dtype=np.int64)
    while reached.size == 0:
        if walked == keep.size:
            return None
        on_b = one & (holder == partners[keep[walked]])
        tally += np.bincount(server[on_b], minlength=tally.size)
        reached = np.flatnonzero(tally >= g)
        walked += 1
    on = server == reached[0]
    gpus: list[int] = []
    chosen: list[int] = []
    for i in keep[:walked].tolist():
        got = np.flatnonzero(one & on & (holder == partners[i]))[: g - len(gpus)]
        if got.size:
            gpus += got.tolist()
            chosen.append(int(k[i]))
    gpus += np.flatnonzero(free & on)[: g - len(gpus)].tolist()
    return np.asarray(sorted(gpus), dtype=np.int64), chosen


class JobTimes:
    """Solo times, sub-batches, memory and interference of the jobs, for the policies.

    Parameters
    ----------
    jobs
        The job table.
    cluster
        The cluster spec.

    ``xi`` is the interference matrix the run uses, indexed by ``kind``: the job model's
    (``base_xi``) unless a policy replaces it with the one it injects.
    """

    def __init__(self, jobs: Any, cluster: Any) -> None:
        from gpusched.jobmodels.sharing import JOB_MODEL

        self.work = np.asarray(jobs.work_s, dtype=np.float64)
        self.n_gpus = np.asarray(jobs.n_gpus, dtype=np.int64)
        self.model = JOB_MODEL.perf(jobs, cluster)
        if self.model is not None:
            self.kind, base = self.model.interference()
        else:
            from gpusched.core.state import XI_DEFAULT

            self.kind, base = np.zeros(len(jobs), np.int32), np.full((1, 1), XI_DEFAULT)
        self.base_xi = np.asarray(base, dtype=np.float64)
        self.xi = self.base_xi  # the run's matrix: a policy may replace it (interference)
        #: GPU memory a job and its partners must fit, GB (the cluster's smallest GPU)
        self.limit_gb = self.model.limit_gb() if self.model is not None else np.inf
        #: GPUs of the cluster's largest server (a gang of at most this many has one server
        #: as its ideal placement)
        self.gpus_per_server = self.model.gpus_per_server if self.model is not None else 1
        self._profiles: dict[tuple[int, bool], tuple[list[Any], np.ndarray, np.ndarray]] = {}
        #: each job's shape (:meth:`shape`) as an index, and one job of each shape
        keys = [np.asarray(self.kind, np.int64), self.n_gpus]
        if self.model is not None:
            keys.append(np.asarray(self.model.batch, np.int64))
        _, first, inverse = np.unique(
            np.stack(keys, axis=1).reshape(len(self.work), len(keys)),
            axis=0,
            return_index=True,
            return_inverse=True,
        )
        self.shape_of = np.asarray(inverse, dtype=np.int64).reshape(-1)
        self.shape_job = np.asarray(first, dtype=np.int64)
        self._shape_tables()

    def _shape_tables(self) -> None:
        """Per shape (rows) and sub-batch (columns, the full batch first): the iteration
        time ``t_iter``, s, at the ideal placement (1 for a job of one configuration) and
        ``t_spread`` across servers, the full batch's ``t_full``, s, and the memory
        ``mem_gb``, GB; rows are padded to the longest with the full batch's time and NaN
        memory (which fits nothing)."""
        subs: list[list[Any]] = []
        times: list[list[float]] = []
        spread: list[list[float]] = []
        full: list[float] = []
        mems: list[list[float]] = []
        sensitive: list[bool] = []
        model = self.model
        for j in self.shape_job.tolist():
            if model is None or not model.sub_batches(j):
                subs.append([None])
                times.append([1.0])
                spread.append([1.0])
                full.append(1.0)
                mems.append([0.0])
                sensitive.append(False)
                continue
            subs.append([None, *model.sub_batches(j)[1:]])
            full.append(model.t_iter_s(j, None))
            times.append([model.t_iter_s(j, x) for x in subs[-1]])
            # one server is this shape's ideal placement, and a set on two or more servers
            # is slower (eq. 4 across servers; any count of them costs the same)
            sensitive.append(1 < int(self.n_gpus[j]) <= self.gpus_per_server)
            spread.append(
                [model.t_iter_s(j, x, n_servers=2) for x in subs[-1]]
                if sensitive[-1]
                else times[-1]
            )
            mems.append([model.mem_gb(j, x) for x in subs[-1]])
        width = max((len(x) for x in subs), default=1)
        self.shape_subs = subs
        self.n_sub = np.array([len(x) for x in subs], dtype=np.int64)
        #: whether a shape's iteration time never falls as its sub-batch shrinks
        self.t_rising = np.array([bool(np.all(np.diff(t) >= 0)) for t in times], dtype=bool)
        self.t_rising_spread = np.array([bool(np.all(np.diff(t) >= 0)) for t in spread], dtype=bool)
        self._all_rising = bool(self.t_rising.all())
        self._all_rising_spread = bool(self.t_rising_spread.all())
        #: whether a shape is placement-sensitive (``1 < G <= gpus_per_server``, a model job)
        self.sensitive = np.array(sensitive, dtype=bool)
        #: whether a shape's cross-server time is never below its one-server time at any
        #: sub-batch (then a pair worth sharing across servers is worth it on one server)
        self.spread_slower = np.array(
            [
                bool(np.all(np.asarray(x) >= np.asarray(t)))
                for x, t in zip(spread, times, strict=True)
            ],
            dtype=bool,
        )
        self._xi_seen: np.ndarray | None = None
        self._xi_ok = False
        #: each shape's sub-batches as numbers (NaN: the full batch, ``None``)
        self.sub_value = np.full((len(subs), width), np.nan)
        for i, row in enumerate(subs):
            self.sub_value[i, 1 : len(row)] = row[1:]
        self._tables: tuple[Any, ...] | None = None
        self._scalars: tuple[tuple[Any, ...], tuple[float, bool]] | None = None
        self.t_full = np.array(full, dtype=np.float64)
        self.t_iter = np.repeat(self.t_full[:, None], width, axis=1)
        #: as ``t_iter``, on GPUs of two or more servers (equal to ``t_iter`` for shapes
        #: that are not placement-sensitive); padding as ``t_iter``
        self.t_spread = np.repeat(self.t_full[:, None], width, axis=1)
        self.mem_gb = np.full((len(subs), width), np.nan)
        for i, (t, x, m) in enumerate(zip(times, spread, mems, strict=True)):
            self.t_iter[i, : len(t)] = t
            self.t_spread[i, : len(x)] = x
            self.mem_gb[i, : len(m)] = m

    def shortcut(self, shapes: np.ndarray, spread: bool = False) -> bool:
        """Whether :func:`worth_sharing` may try only the largest sub-batch that fits for
        jobs of these shapes: their iteration times (across servers if ``spread``) rise as
        the sub-batch shrinks, and every ratio of the run's ``xi`` is at least 1."""
        if self._xi_seen is not self.xi:
            self._xi_seen, self._xi_ok = self.xi, bool(np.min(self.xi) >= 1.0)
        if spread:
            rising = self._all_rising_spread or bool(self.t_rising_spread[shapes].all())
        else:
            rising = self._all_rising or bool(self.t_rising[shapes].all())
        return self._xi_ok and rising

    def tables(self) -> tuple[np.ndarray, ...]:
        """The arrays :func:`plan_sjf_bsbf` reads, contiguous and typed: ``work``, ``kind``,
        ``shape_of``, ``t_iter``, ``t_full``, ``mem_gb``, ``n_sub``, ``t_rising``, the run's
        ``xi``, ``sub_value``, ``t_spread``, ``t_rising_spread``, ``sensitive`` and
        ``spread_slower``; cached until ``xi`` is replaced."""
        if self._tables is None or self._tables[8] is not self.xi:
            self._tables = (
                self.work,
                np.ascontiguousarray(self.kind, np.int64),
                self.shape_of,
                self.t_iter,
                self.t_full,
                self.mem_gb,
                self.n_sub,
                self.t_rising,
                self.xi,
                self.sub_value,
                self.t_spread,
                self.t_rising_spread,
                self.sensitive,
                self.spread_slower,
            )
        return self._tables

    def plan_tables(self) -> tuple[tuple[np.ndarray, ...], tuple[float, bool]]:
        """:meth:`tables`, and the memory limit (GB) and whether every ratio of the run's
        ``xi`` is at least 1, for :func:`plan_sjf_bsbf`; cached until ``xi`` is replaced."""
        tables = self.tables()
        if self._scalars is None or self._scalars[0] is not tables:
            self._scalars = (tables, (float(self.limit_gb), self.shortcut(self.shape_job[:0])))
        return self._scalars

    def profile(self, j: int, spread: bool = False) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """Job ``j``'s sub-batches (Alg. 2's candidates, its default first as None), its
        solo time at each (s, eq. 7: its duration times the iteration time over the full
        batch's at the ideal placement; across servers if ``spread``) and its memory at
        each (GB); cached."""
        got = self._profiles.get((j, spread))
        if got is None:
            s = int(self.shape_of[j])
            n = int(self.n_sub[s])
            table = self.t_spread if spread else self.t_iter
            solo = self.work[j] * table[s, :n] / self.t_full[s]
            got = (self.shape_subs[s], solo, self.mem_gb[s, :n])
            self._profiles[(j, spread)] = got
        return got

    def shape(self, j: int) -> tuple[Any, ...]:
        """Jobs of one shape have the same sub-batches, memory and interference, and solo
        times proportional to their durations."""
        if self.model is None:
            return (int(self.kind[j]), int(self.n_gpus[j]))
        return (int(self.kind[j]), int(self.n_gpus[j]), int(self.model.batch[j]))

    def sub_batches(self, j: int) -> list[Any]:
        """Alg. 2's candidates, the full batch first (None: the job's default)."""
        return self.profile(j)[0]

    def mem(self, j: int, sub: Any) -> float:
        """GPU memory of job ``j`` at sub-batch ``sub``, GB (0 without a memory model)."""
        subs, _, mem = self.profile(j)
        return float(mem[subs.index(sub)]) if sub in subs else float(mem[0])

    def fits(self, j: int, sub: Any, partners: list[tuple[int, Any]]) -> bool:
        """Whether job ``j`` at ``sub`` fits in GPU memory beside ``partners``."""
        return self.mem(j, sub) + sum(self.mem(b, c) for b, c in partners) <= self.limit_gb


def plan_sjf_bsbf(
    times: JobTimes,
    queued: np.ndarray,
    job: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    gpu: tuple[np.ndarray, np.ndarray, np.ndarray],
    mem_run: np.ndarray,
    skip: int,
    aware: bool = True,
) -> tuple[list[tuple[int, np.ndarray, int]], list[int]]:
    """One decision of SJF-BSBF (Alg. 1 with Alg. 2 and Theorem 1) in one jitted call: the
    policy's Python loop (``SJFBSBFPolicy.decide_loop`` in ``policies/sjf_bsbf.py``) with
    the same steps in the same order, so the same starts.

    Parameters
    ----------
    times
        The jobs' times.
    queued
        The queued jobs, in submission order (an integer array).
    job
        Per job: ``(duration s, GPUs, status, remaining work s, solo rate)``.
    gpu
        ``(jobs on each GPU, the jobs on each GPU (n_gpus x capacity, -1 empty), server of
        each GPU)``.
    mem_run
        Each running job's memory at its configuration, GB (NaN: not known yet). The
        memory of the jobs this decision starts is filled in (their configurations are
        fixed for their lifetimes).
    skip
        The status of queued jobs (jobs started in this decision are still queued in the
        view: not partners).
    aware
        Price each candidate at the placement it would get (reading 5, the default);
        False prices every candidate at its ideal placement.

    Returns
    -------
    tuple
        ``(starts, missing)``. ``starts``: ``(job, gpus, sub)`` per job to start, in
        order; ``gpus`` (int64) in the order the policy lists them, ``sub`` the index of
        the job's sub-batch in ``times.profile(job)[0]`` (0: its full batch, the
        default). ``missing``: running jobs whose ``mem_run`` the decision needs and is
        NaN; when there are any nothing is planned (fill those and call again).
    """
    duration, n_gpus, status, remaining, solo_rate = job
    n_on, gpu_job, server = gpu
    tables, scalars = times.plan_tables()
    out = _plan_sjf_bsbf(
        np.ascontiguousarray(queued),
        (duration, n_gpus, status, remaining, solo_rate),
        (n_on, gpu_job, server),
        mem_run,
        tables,
        (*scalars, int(skip), bool(aware)),
    )
    # one array back (numpy boxes each array a jitted function returns, ~1.5 us each):
    # [n, n_missing, jobs (n), sub (n), offsets (n + 1), gpus, missing]
    head = out.tolist()
    n, n_missing = head[0], head[1]
    if n_missing:
        return [], head[len(head) - n_missing :]
    at = 3 + 3 * n  # where the GPUs begin
    bounds = head[2 + 2 * n : at]
    starts = [
        (head[2 + i], out[at + bounds[i] : at + bounds[i + 1]], head[2 + n + i]) for i in range(n)
    ]
    return starts, []


@helper
def _consolidated(n_on, server, n_servers, g, out, at):  # type: ignore[no-untyped-def]
    """:func:`consolidated` of the GPUs with ``n_on == 0`` into ``out[at:at + g]`` (the
    caller checked that there are ``g``)."""
    per = np.zeros(n_servers, dtype=np.int64)
    for x in range(n_on.shape[0]):
        if n_on[x] == 0:
            per[server[x]] += 1
    best = -1
    for s in range(n_servers):  # one server: the fewest free that fit, lowest index
        if per[s] >= g and (best < 0 or per[s] < per[best]):
            best = s
    if best >= 0:
        m = 0
        for x in range(n_on.shape[0]):
            if m < g and n_on[x] == 0 and server[x] == best:
                out[at + m] = x
                m += 1
        return
    rank = np.argsort(-per, kind="mergesort")  # most free first, lowest index on ties
    m = 0
    for s in rank:
        for x in range(n_on.shape[0]):
            if m < g and n_on[x] == 0 and server[x] == s:
                out[at + m] = x
                m += 1
        if m == g:
            return


#: how a planned start finds its GPUs (lines 14-17): at the ideal placement's prices
#: wherever they are, on one server, or across servers at cross-server prices
_GLOBAL, _ONE_SERVER, _SPREAD = 0, 1, 2


@helper
def _alg2(j, partners, solo_b, mem_b, t_share, tables, limit):  # type: ignore[no-untyped-def]
    """Line 11 for job ``j`` beside each of ``partners``, as :func:`best_sub_batches` row by
    row (A shares at ``t_share``, waits at its ideal full-batch time): per partner whether
    to share, the pair's average JCT and the chosen sub-batch's index."""
    work, kind, shape_of, _, t_full, mem_gb, n_sub, _, xi, _ = tables[:10]
    s = shape_of[j]
    n = n_sub[s]
    m = partners.shape[0]
    share = np.zeros(m, dtype=np.bool_)
    best_t = np.empty(m, dtype=np.float64)
    best_k = np.empty(m, dtype=np.int64)
    solo_0 = work[j] * t_full[s] / t_full[s]
    for p in range(m):
        xa = xi[kind[j], kind[partners[p]]]
        xb = xi[kind[partners[p]], kind[j]]
        wait = (solo_b[p] + solo_b[p] + solo_0) / 2.0
        k = n - 1
        tk = np.inf
        sk = False
        found_nan = False
        for w in range(n - 1, -1, -1):  # argmin over the reversed row: ties to the last
            together = _pair_jct(work[j] * t_share[s, w] / t_full[s], solo_b[p], xa, xb)
            sh = together < wait
            if mem_gb[s, w] + mem_b[p] <= limit:
                t = together if sh else wait
            else:
                t = np.inf
            if np.isnan(t):
                if not found_nan:
                    k, tk, sk, found_nan = w, t, sh, True
            elif not found_nan and (t < tk or w == n - 1):
                k, tk, sk = w, t, sh
        best_k[p] = k
        best_t[p] = tk
        share[p] = sk and np.isfinite(tk)
    return share, best_t, best_k


@helper
def _smaller_sub(s, k, sub, sub_value):  # type: ignore[no-untyped-def]
    """The smaller of sub-batch indices ``k`` and ``sub`` of shape ``s`` (0 and -1: none
    chosen; reading 1: the job takes the smallest its partners need)."""
    if k > 0 and (sub < 0 or sub_value[s, k] < sub_value[s, sub]):
        return k
    return sub


@helper
def _place_kept(  # type: ignore[no-untyped-def]
    j, g, n_on, holder, partners, solo_b, mem_b, t_share, tables, limit, out, at
):
    """Lines 10-17 for job ``j`` over the ``partners`` worth sharing with (as the policy's
    ``_place``, with :func:`best_sub_batches` row by row; A shares at ``t_share``): GPUs
    into ``out[at:at + g]`` ascending; returns the sub-batch index (0: the full batch) or
    -1 when it finds too few GPUs."""
    s = tables[2][j]
    sub_value = tables[9]
    share, best_t, best_k = _alg2(j, partners, solo_b, mem_b, t_share, tables, limit)  # line 11
    keep = np.flatnonzero(share)  # line 12
    if keep.size == 0:
        return -1
    keep = keep[np.argsort(best_t[keep], kind="mergesort")]  # line 14 (partners ascend)
    got = 0
    sub = -1
    for i in keep:  # lines 15-17
        for x in range(n_on.shape[0]):
            if got < g and n_on[x] == 1 and holder[x] == partners[i]:
                out[at + got] = x
                got += 1
        sub = _smaller_sub(s, best_k[i], sub, sub_value)
        if got == g:
            break
    for x in range(n_on.shape[0]):  # free GPUs last
        if got < g and n_on[x] == 0:
            out[at + got] = x
            got += 1
    if got < g:
        return -1
    out[at : at + g] = np.sort(out[at : at + g])
    return max(sub, 0)


@helper
def _place_one_server(  # type: ignore[no-untyped-def]
    j, g, n_on, holder, server, n_servers, partners, solo_b, mem_b, tables, limit, out, at
):
    """Lines 14-17 on one server for job ``j`` (reading 5): the partners worth sharing with
    at one-server times, best pairs first, add their GPUs to their servers' tallies; the
    first server whose tally plus its idle GPUs holds ``g`` takes the partners' GPUs there
    (in that order), then its idle GPUs. GPUs into ``out[at:at + g]`` ascending; returns
    the sub-batch index (0: the full batch) or -1 when no server holds the gang."""
    s = tables[2][j]
    sub_value = tables[9]
    share, best_t, best_k = _alg2(j, partners, solo_b, mem_b, tables[3], tables, limit)
    keep = np.flatnonzero(share)
    if keep.size == 0:
        return -1
    keep = keep[np.argsort(best_t[keep], kind="mergesort")]  # line 14
    tally = np.zeros(n_servers, dtype=np.int64)  # idle GPUs, then partners' GPUs, per server
    for x in range(n_on.shape[0]):
        if n_on[x] == 0:
            tally[server[x]] += 1
    win = -1
    last = -1
    for r in range(keep.shape[0]):
        b = partners[keep[r]]
        for x in range(n_on.shape[0]):
            if n_on[x] == 1 and holder[x] == b:
                tally[server[x]] += 1
        for v in range(n_servers):  # the lowest server that now holds the gang
            if tally[v] >= g:
                win = v
                break
        if win >= 0:
            last = r
            break
    if win < 0:
        return -1
    got = 0
    sub = -1
    for r in range(last + 1):  # the partners' GPUs on that server, in line-14 order
        b = partners[keep[r]]
        took = False
        for x in range(n_on.shape[0]):
            if got < g and n_on[x] == 1 and holder[x] == b and server[x] == win:
                out[at + got] = x
                got += 1
                took = True
        if took:
            sub = _smaller_sub(s, best_k[keep[r]], sub, sub_value)
    for x in range(n_on.shape[0]):  # then its idle GPUs
        if got < g and n_on[x] == 0 and server[x] == win:
            out[at + got] = x
            got += 1
    out[at : at + g] = np.sort(out[at : at + g])
    return max(sub, 0)


@helper
def _on_one_server(okrow, partners, n_on, holder, server, n_servers, g):  # type: ignore[no-untyped-def]
    """Whether some server's idle GPUs plus its GPUs alone with a partner in ``okrow``
    hold ``g`` (``partners`` ascending)."""
    tally = np.zeros(n_servers, dtype=np.int64)
    for x in range(n_on.shape[0]):
        if n_on[x] == 0:
            tally[server[x]] += 1
        elif n_on[x] == 1:
            p = np.searchsorted(partners, holder[x])
            if p < partners.shape[0] and partners[p] == holder[x] and okrow[p]:
                tally[server[x]] += 1
    for v in range(n_servers):
        if tally[v] >= g:
            return True
    return False


@helper
def _first_placeable(  # type: ignore[no-untyped-def]
    ok, cand_jobs, cand_need, partners, n_own, free_n, solo_b, mem_b, gpu, tables, scalars
):
    """Lines 9-17's test of the candidate jobs in order: the first that finds GPUs worth
    sharing (``ok``: jobs x partners at ideal-placement prices), with how (``_GLOBAL``,
    ``_ONE_SERVER`` or ``_SPREAD``) and, for ``_SPREAD``, the partners worth sharing with
    at cross-server prices. Without ``aware`` (or for a shape that is not
    placement-sensitive) this is the GPU count of :func:`first_enough`."""
    n_on, holder, server, n_servers = gpu
    limit, xi_ok, aware = scalars
    work, kind, shape_of, _, t_full, mem_gb, n_sub, _, xi, _ = tables[:10]
    t_spread, rising_spread, sensitive, spread_slower = tables[10:]
    none = np.zeros(0, dtype=np.bool_)
    for r in range(ok.shape[0]):
        j = cand_jobs[r]
        s = shape_of[j]
        g = cand_need[r]
        some = False
        count = 0
        for p in range(ok.shape[1]):
            if ok[r, p]:
                some = True
                count += n_own[p]
        enough = some and count + free_n >= g
        if not (aware and sensitive[s]):
            if enough:
                return r, _GLOBAL, none
            continue
        if some and _on_one_server(ok[r], partners, n_on, holder, server, n_servers, g):
            return r, _ONE_SERVER, none
        if spread_slower[s] and not enough:
            continue  # across servers the pairs only get worse, and there are too few
        ok_s = _worth_sharing(
            work[cand_jobs[r : r + 1]],
            shape_of[cand_jobs[r : r + 1]],
            kind[cand_jobs[r : r + 1]],
            kind[partners],
            solo_b,
            mem_b,
            t_spread,
            t_full,
            mem_gb,
            n_sub,
            xi,
            limit,
            xi_ok and rising_spread[s],
        )[0]
        count = 0
        for p in range(ok_s.shape[0]):
            if ok_s[p]:
                count += n_own[p]
        if count > 0 and count + free_n >= g:
            return r, _SPREAD, ok_s
    return ok.shape[0], _GLOBAL, none


@helper
def _plan_sjf_bsbf(queued, job, gpu, mem_run, tables, scalars):  # type: ignore[no-untyped-def]
    """:func:`plan_sjf_bsbf`; ``tables`` are :class:`JobTimes`'s arrays, ``scalars`` the
    memory limit, whether the run's xi are all >= 1, the queued status and whether to
    price candidates at the placement they would get (reading 5)."""
    duration, n_gpus, status, remaining, solo_rate = job
    gpu_n_jobs, gpu_job, server = gpu
    work, kind, shape_of, t_iter, t_full, mem_gb, n_sub, t_rising, xi, _ = tables[:10]
    t_spread = tables[10]
    limit, xi_ok, skip, aware = scalars
    n_g = gpu_n_jobs.shape[0]
    jobs = np.empty(queued.shape[0], dtype=np.int64)
    offsets = np.zeros(queued.shape[0] + 1, dtype=np.int64)
    gpus = np.empty(n_g, dtype=np.int64)
    subs = np.empty(queued.shape[0], dtype=np.int64)
    n_start = 0
    n_on = np.empty(n_g, dtype=np.int64)  # our copy, updated as we start
    holder = np.empty(n_g, dtype=np.int64)
    shares = 1 if gpu_job.shape[1] > 1 else 0
    n_free = 0
    n_one = 0
    n_servers = 0
    for x in range(n_g):
        n_on[x] = gpu_n_jobs[x]
        holder[x] = gpu_job[x, 0]
        if n_on[x] == 0:
            n_free += 1
        elif n_on[x] == 1:
            n_one += shares
        n_servers = max(n_servers, server[x] + 1)
    if queued.shape[0] == 0 or n_free + n_one == 0:
        return _packed(jobs, subs, offsets, gpus, 0, offsets[:0])
    order, need, shape = _sjf_order(queued, duration, n_gpus, shape_of)  # line 1
    refused = np.zeros(t_full.shape[0], dtype=np.bool_)  # shapes that found no GPUs
    pos = 0
    while pos < order.shape[0] and n_free + n_one > 0:
        stop = pos  # the next job that fits the idle GPUs (lines 6-7)
        while stop < order.shape[0] and need[stop] > n_free:
            stop += 1
        at = offsets[n_start]
        sub = -1
        g = 0
        if n_one:  # lines 9-17 for order[pos:stop]: the first that finds GPUs to share
            cand = _first_of_each_shape(need, shape, refused, pos, stop, n_free + n_one)
            if cand.shape[0]:
                one = n_on == 1
                free_n = n_free + n_one - np.count_nonzero(one)
                partners, n_own = _alone_holders(one, holder, status, skip)
                mem_b = np.empty(partners.shape[0], dtype=np.float64)
                solo_b = np.empty(partners.shape[0], dtype=np.float64)
                for p in range(partners.shape[0]):
                    mem_b[p] = mem_run[partners[p]]
                    solo_b[p] = remaining[partners[p]] / solo_rate[partners[p]]
                nan = np.isnan(mem_b)
                if nan.any():
                    return _packed(jobs, subs, offsets, gpus, 0, partners[nan])
                if partners.shape[0] == 0:
                    for c in cand:
                        refused[shape[c]] = True
                else:
                    jc = order[cand]
                    sc = shape[cand]
                    shortcut = xi_ok
                    for c in sc:
                        shortcut = shortcut and t_rising[c]
                    ok = _worth_sharing(  # lines 11-12
                        work[jc],
                        sc,
                        kind[jc],
                        kind[partners],
                        solo_b,
                        mem_b,
                        t_iter,
                        t_full,
                        mem_gb,
                        n_sub,
                        xi,
                        limit,
                        shortcut,
                    )
                    tried, how, ok_s = _first_placeable(  # lines 15-17: GPUs enough?
                        ok,
                        jc,
                        need[cand],
                        partners,
                        n_own,
                        free_n,
                        solo_b,
                        mem_b,
                        (n_on, holder, server, n_servers),
                        tables,
                        (limit, xi_ok, aware),
                    )
                    for c in cand[:tried]:
                        refused[shape[c]] = True
                    if tried < cand.shape[0]:
                        c = cand[tried]
                        kept = ok[tried] if how != _SPREAD else ok_s
                        if how == _ONE_SERVER:
                            sub = _place_one_server(
                                order[c],
                                need[c],
                                n_on,
                                holder,
                                server,
                                n_servers,
                                partners[kept],
                                solo_b[kept],
                                mem_b[kept],
                                tables,
                                limit,
                                gpus,
                                at,
                            )
                        else:
                            sub = _place_kept(
                                order[c],
                                need[c],
                                n_on,
                                holder,
                                partners[kept],
                                solo_b[kept],
                                mem_b[kept],
                                t_spread if how == _SPREAD else t_iter,
                                tables,
                                limit,
                                gpus,
                                at,
                            )
                        assert sub >= 0  # worth_sharing and the GPU count said so
                        pos = c + 1
                        jobs[n_start] = order[c]
                        g = need[c]
        if sub < 0:
            if stop == order.shape[0]:
                break
            g = need[stop]
            _consolidated(n_on, server, n_servers, g, gpus, at)
            jobs[n_start] = order[stop]
            sub = 0
            pos = stop + 1
        subs[n_start] = sub
        offsets[n_start + 1] = at + g
        j = jobs[n_start]
        mem_run[j] = mem_gb[shape_of[j], sub]  # JobTimes.mem(j, its config), fixed from now on
        n_start += 1
        for x in gpus[at : at + g]:
            if n_on[x] == 0:
                holder[x] = jobs[n_start - 1]
                n_free -= 1
                n_one += shares
            else:
                n_one -= 1
            n_on[x] += 1
    return _packed(jobs, subs, offsets, gpus, n_start, offsets[:0])


@helper
def _packed(jobs, subs, offsets, gpus, n, missing):  # type: ignore[no-untyped-def]
    """:func:`plan_sjf_bsbf`'s arrays in one: ``[n, len(missing), jobs[:n], subs[:n],
    offsets[:n + 1], gpus[:offsets[n]], missing]``."""
    n_gpus = offsets[n]
    out = np.empty(2 + 3 * n + 1 + n_gpus + missing.shape[0], dtype=np.int64)
    out[0] = n
    out[1] = missing.shape[0]
    out[2 : 2 + n] = jobs[:n]
    out[2 + n : 2 + 2 * n] = subs[:n]
    out[2 + 2 * n : 3 + 3 * n] = offsets[: n + 1]
    out[3 + 3 * n : 3 + 3 * n + n_gpus] = gpus[:n_gpus]
    out[3 + 3 * n + n_gpus :] = missing
    return out
