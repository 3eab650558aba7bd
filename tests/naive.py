"""A slow, obviously correct reference simulator of gpusched's slotted model.

Written from the model's specification only (not from ``gpusched/core/kernel.py``), in plain
Python: lists, dicts and floats. ``tests/test_kernel_vs_naive.py`` checks the engine
against it. The model, in short:

* decision points are multiples of the slot length L; at each one we (1) advance running
  jobs to now (a job whose remaining work r fits in the elapsed time finishes at the
  exact time t_prev + r), (2) admit arrivals, (3) let the policy decide, (4) jump to the
  slot boundary ceil(e / L) * L of the earliest future event e;
* jobs are gangs of g GPUs that progress at rate 1 while they hold GPUs and train;
* after each start a job loads for its load time, holding its GPUs without progress;
  after each preemption it pauses and saves for its save time, holding its GPUs, then
  waits in the queue again; a job preempted before it trained anything since its last
  start (still loading, or at the very moment its load ended) releases its GPUs at once,
  pays no save, and the load time it spent is futile;
* fifo / sjf never preempt; srtf / tiresias re-pack every unfinished job each time, over
  the GPUs not held by saving jobs;
* tiresias keeps one list per level (the Tiresias simulator's queues): an arrival goes to
  the back of level 0; a running job whose attained GPU-seconds reached a threshold goes
  to the back of its new level at that decision point (several at once: by job index);
  the re-pack walks the lists level by level, then each list puts its jobs holding GPUs
  (loading or training) first, the others after, both keeping their order.

:func:`simulate_shared` (GPU sharing), :func:`simulate_roles` (parameter-server jobs placed
by roles), :func:`simulate_tasks` (jobs made of data chunks on typed workers) and
:func:`simulate_lazer` (the Lazer paper's Alg. 1-2 with a given deferral) each state the
model they re-implement in their docstrings.
"""

from __future__ import annotations

import math

EPS_T = 1e-9  # s: tolerance on time comparisons (arrivals, completions)
EPS_A = 1e-6  # GPU-s: tolerance on Tiresias level thresholds
PREEMPTIVE = ("srtf", "tiresias")


def place(idle: list[list[int]], g: int) -> list[int] | None:
    """Pick g GPUs from ``idle`` (idle GPU numbers per server, ascending), or None.

    Consolidated first: the server with the fewest idle GPUs that still has >= g
    (lowest index on ties). Otherwise spread: repeatedly the server with the most idle
    GPUs (lowest index on ties), lowest-numbered GPUs first.
    """
    if sum(len(s) for s in idle) < g:
        return None
    fitting = [i for i in range(len(idle)) if len(idle[i]) >= g]
    if fitting:
        best = min(fitting, key=lambda i: (len(idle[i]), i))
        return idle[best][:g]
    taken: list[int] = []
    free = [list(s) for s in idle]  # local copy we consume
    while len(taken) < g:
        best = max(range(len(free)), key=lambda i: (len(free[i]), -i))
        n = min(len(free[best]), g - len(taken))
        taken += free[best][:n]
        free[best] = free[best][n:]
    return taken


def level(attained: float, thresholds: tuple[float, ...]) -> int:
    """Tiresias level: how many thresholds the attained service has reached."""
    return sum(1 for th in thresholds if attained >= th - EPS_A)


def simulate(
    jobs: list[tuple[float, int, float]],
    server_gpus: list[int],
    policy: str,
    slot: float,
    thresholds: tuple[float, ...] = (3250.0, 7200.0),
    backfill: bool = False,
    log: list | None = None,
    load: list[float] | None = None,
    save: list[float] | None = None,
) -> list[dict]:
    """Replay ``jobs`` = [(submit s, n_gpus, work s), ...] (sorted by submit).

    ``load`` and ``save`` give each job's load and save time (s, default 0).
    Returns one dict per job: ``first_start``, ``finish`` (s), ``n_preempt``, and the
    parts of its JCT: ``wait``, ``load``, ``train``, ``save`` (s), ``futile`` (s of
    load wasted) and ``n_futile``.
    If ``log`` is a list, ``(t, owner)`` is appended after every decision, where
    ``owner[gpu]`` is the job on that GPU or -1.
    """
    n = len(jobs)
    assert all(jobs[i][0] <= jobs[i + 1][0] for i in range(n - 1)), "jobs must be sorted"
    submit = [float(j[0]) for j in jobs]
    gpus = [int(j[1]) for j in jobs]
    work = [float(j[2]) for j in jobs]
    total_gpus = sum(server_gpus)
    server_of: list[int] = []  # GPUs are numbered server by server
    for s, count in enumerate(server_gpus):
        server_of += [s] * count

    load_s = [float(x) for x in load] if load is not None else [0.0] * n
    save_s = [float(x) for x in save] if save is not None else [0.0] * n
    remaining = list(work)
    attained = [0.0] * n  # GPU-seconds of service (Tiresias)
    phase: dict[int, str] = {}  # holder -> "load", "run" or "save"
    phase_end: dict[int, float] = {}  # holder -> end of its load (training began) or save
    last_start = [0.0] * n
    enqueued = list(submit)  # when each job last entered the queue
    spent = {k: [0.0] * n for k in ("wait", "load", "train", "save", "futile")}
    n_futile = [0] * n
    first_start: list[float | None] = [None] * n
    finish: list[float | None] = [None] * n
    n_preempt = [0] * n
    owner = [-1] * total_gpus  # job on each GPU
    held: dict[int, list[int]] = {}  # running job -> its GPUs
    queued: list[int] = []  # admitted jobs waiting for GPUs
    lists: list[list[int]] = [[] for _ in range(len(thresholds) + 1)]  # tiresias levels
    level_of: dict[int, int] = {}  # tiresias: the list each unfinished job is in
    next_arrival = 0  # index of the first job not yet admitted

    def idle_by_server() -> list[list[int]]:
        idle: list[list[int]] = [[] for _ in server_gpus]
        for gpu, j in enumerate(owner):
            if j == -1:
                idle[server_of[gpu]].append(gpu)
        return idle

    def start(j: int, t: float) -> bool:
        chosen = place(idle_by_server(), gpus[j])
        if chosen is None:
            return False
        for gpu in chosen:
            owner[gpu] = j
        held[j] = chosen
        queued.remove(j)
        if first_start[j] is None:
            first_start[j] = t
        spent["wait"][j] += t - enqueued[j]
        last_start[j] = t
        phase[j] = "load" if load_s[j] > 0 else "run"
        phase_end[j] = t + load_s[j]
        return True

    def release(j: int) -> None:
        for gpu in held.pop(j):
            owner[gpu] = -1
        del phase[j], phase_end[j]

    def requeue(j: int, t: float) -> None:
        release(j)
        queued.append(j)
        enqueued[j] = t

    def preempt(j: int, t: float) -> None:
        n_preempt[j] += 1
        if phase[j] == "load" or t <= phase_end[j] + EPS_T:  # trained nothing since its start
            if load_s[j] > 0:
                n_futile[j] += 1
                spent["futile"][j] += t - last_start[j]
            requeue(j, t)
        elif save_s[j] > 0:
            phase[j] = "save"
            phase_end[j] = t + save_s[j]
        else:
            requeue(j, t)

    def advance(j: int, t0: float, t1: float) -> bool:
        """Holder j from t0 to t1: load, then train; or save, then back to the queue.

        Returns True if the job finished.
        """
        if phase[j] == "save":
            end = min(phase_end[j], t1)
            spent["save"][j] += end - t0
            if phase_end[j] <= t1 + EPS_T:
                requeue(j, phase_end[j])
            return False
        if phase[j] == "load":
            end = min(phase_end[j], t1)
            spent["load"][j] += end - t0
            if phase_end[j] > t1 + EPS_T:
                return False
            phase[j] = "run"
            t0 = phase_end[j]
        dt = max(t1 - t0, 0.0)
        if remaining[j] <= dt + EPS_T:
            finish[j] = t0 + remaining[j]
            attained[j] += gpus[j] * remaining[j]
            spent["train"][j] += remaining[j]
            remaining[j] = 0.0
            release(j)
            return True
        remaining[j] -= dt
        attained[j] += gpus[j] * dt
        spent["train"][j] += dt
        return False

    def priority(j: int) -> tuple:
        """Sort key of job j under the policy (smaller goes first)."""
        if policy == "fifo":
            return (j,)
        if policy == "sjf":
            return (work[j], j)
        if policy == "srtf":
            return (remaining[j], j)
        if policy == "tiresias":
            return (level_of[j], lists[level_of[j]].index(j))
        raise ValueError(f"unknown policy {policy!r}")

    def decide(t: float) -> None:
        if policy not in PREEMPTIVE:
            # Non-preemptive fill over the queue in priority order.
            for j in sorted(queued, key=priority):
                if all(o != -1 for o in owner):
                    break  # no idle GPU left
                if not start(j, t) and policy == "fifo" and not backfill:
                    break  # head-of-line blocking
            return
        # Preemptive re-pack: choose greedily under the GPUs no saving job holds...
        active = [j for j in held if phase[j] != "save"]
        order = sorted(queued + active, key=priority)
        cap = total_gpus - sum(gpus[j] for j in held if phase[j] == "save")
        selected = set()
        for j in order:
            if gpus[j] <= cap:
                selected.add(j)
                cap -= gpus[j]
        # ...preempt loading and running jobs left out (they keep their progress)...
        for j in sorted(active):
            if j not in selected:
                preempt(j, t)
        # ...and start the selected waiting jobs, in priority order; one that finds no
        # room (jobs preempted just now still save on their GPUs) waits for the next try.
        saving = any(phase[j] == "save" for j in held)
        for j in order:
            if j in selected and j not in held:
                placed = start(j, t)
                assert placed or saving, "a selected job must fit (sum of gangs <= cluster)"
        if policy == "tiresias":  # holders first in every list, both parts in order
            for lst in lists:
                front = [j for j in lst if j in held and phase[j] != "save"]
                lst[:] = front + [j for j in lst if j not in front]

    def tiresias_lists(t: float) -> None:
        """Arrivals and demotions join the back of their lists."""
        for j in queued:
            if j not in level_of:
                level_of[j] = 0
                lists[0].append(j)
        for j in sorted(held):
            q = level(attained[j], thresholds)
            if q > level_of[j]:
                lists[level_of[j]].remove(j)
                lists[q].append(j)
                level_of[j] = q

    def next_event(t: float) -> float:
        events = []
        for j in held:
            if phase[j] == "save":
                events.append(phase_end[j])
            else:
                events.append(max(t, phase_end[j]) + remaining[j])
        if next_arrival < n:
            events.append(submit[next_arrival])
        if policy == "tiresias":
            for j in held:
                q = level(attained[j], thresholds)
                if q < len(thresholds) and phase[j] != "save":
                    begin = max(t, phase_end[j])
                    events.append(begin + (thresholds[q] - attained[j]) / gpus[j])
        return min(events) if events else math.inf

    def boundary(e: float) -> float:
        # Slot boundary ceil(e/L)*L of event time e, except that an event within EPS_T
        # after a boundary counts as at it, like the arrival and completion tests do
        # (else a job "arriving" at t + 1e-10 would wait a slot it is deemed to be in).
        # The engine snaps too, with a band of about 1e-9 slot lengths rather than 1e-9 s;
        # the tests keep generated times out of that band.
        return math.ceil((e - EPS_T) / slot) * slot

    t = boundary(submit[0]) if n else 0.0
    t_prev = t
    done = 0
    while done < n:
        # (1) progress every holder from t_prev to t (each on its own: no decision
        # happens inside a slot)
        for j in sorted(held):
            if advance(j, t_prev, t):
                done += 1
                if policy == "tiresias":
                    lists[level_of.pop(j)].remove(j)
        # (2) admit arrivals
        while next_arrival < n and submit[next_arrival] <= t + EPS_T:
            queued.append(next_arrival)
            next_arrival += 1
        # (3) policy decision
        if policy == "tiresias":
            tiresias_lists(t)
        decide(t)
        if log is not None:
            log.append((t, list(owner)))
        if done == n:
            break
        # (4) jump to the slot boundary of the earliest future event
        e = next_event(t)
        assert e < math.inf, "stuck: jobs wait but nothing can happen"
        nxt = boundary(e)
        if nxt <= t:
            nxt = (math.floor(t / slot + 0.5) + 1) * slot
        t_prev, t = t, nxt
    return [
        {
            "first_start": first_start[j],
            "finish": finish[j],
            "n_preempt": n_preempt[j],
            "n_futile": n_futile[j],
            **{k: v[j] for k, v in spent.items()},
        }
        for j in range(n)
    ]


def simulate_shared(
    jobs: list[tuple[float, int, float]],
    n_gpus: int,
    capacity: int,
    xi: list[list[float]],
    kind: list[int],
    times: list[float],
    choose,
) -> tuple[list[tuple[float, int, list[int]]], list[dict], float]:
    """GPU sharing, event by event: ``jobs`` = [(submit s, n_gpus, work s), ...].

    The model (SJF-BSBF paper, eq. 5-6; docs/architecture.md, "GPU sharing"): a GPU holds up to
    ``capacity`` jobs; a job runs at rate 1 / x, where x is the largest
    ``xi[kind[j]][kind[p]]`` over the jobs p that share one of its GPUs (1 alone), and
    rates change the moment a partner starts or ends. At each time of ``times`` (after the
    completions up to it) ``choose(t, queued, jobs_on_gpu)`` returns starts
    ``[(job, gpus), ...]``, which are applied at once. No load or save phases.

    Returns the script of starts ``[(t, job, gpus)]``, one dict per job (``start``,
    ``finish``, ``shared`` = s run with a partner) and the GPU-seconds of GPUs holding two
    or more jobs.
    """
    n = len(jobs)
    remaining = [float(w) for (_, _, w) in jobs]
    on: list[list[int]] = [[] for _ in range(n_gpus)]
    held: dict[int, list[int]] = {}
    rate: dict[int, float] = {}
    start: list[float | None] = [None] * n
    finish: list[float | None] = [None] * n
    shared = [0.0] * n
    shared_gpu_s = 0.0
    script: list[tuple[float, int, list[int]]] = []
    queued: list[int] = []
    arrived = 0
    now = 0.0

    def rerate() -> None:
        for j, gpus in held.items():
            x = 1.0
            for gpu in gpus:
                for p in on[gpu]:
                    if p != j:
                        x = max(x, xi[kind[j]][kind[p]])
            rate[j] = 1.0 / x

    def partnered(j: int) -> bool:
        return any(len(on[gpu]) > 1 for gpu in held[j])

    pending_times = sorted(times)
    while True:
        next_done = min((now + remaining[j] / rate[j] for j in held), default=math.inf)
        next_time = pending_times[0] if pending_times else math.inf
        t = min(next_done, next_time)
        if t == math.inf:
            break
        dt = t - now
        shared_gpu_s += dt * sum(1 for g in on if len(g) > 1)
        for j in held:
            remaining[j] -= dt * rate[j]
            if partnered(j):
                shared[j] += dt
        now = t
        done = [j for j in held if remaining[j] <= 1e-9 * jobs[j][2]]
        for j in done:
            for gpu in held.pop(j):
                on[gpu].remove(j)
            del rate[j]
            finish[j] = now
        if done:
            rerate()
        if pending_times and pending_times[0] <= now + EPS_T:
            pending_times.pop(0)
            while arrived < n and jobs[arrived][0] <= now + EPS_T:
                queued.append(arrived)
                arrived += 1
            for j, gpus in choose(now, list(queued), [list(g) for g in on]):
                assert j in queued and len(gpus) == jobs[j][1]
                for gpu in gpus:
                    assert len(on[gpu]) < capacity
                    on[gpu].append(j)
                held[j] = list(gpus)
                queued.remove(j)
                start[j] = now
                script.append((now, j, list(gpus)))
            rerate()
    results = [{"start": start[j], "finish": finish[j], "shared": shared[j]} for j in range(n)]
    return script, results, shared_gpu_s


def simulate_roles(
    jobs: list[dict],
    capacity: list[list[float]],
    n_workers: int,
    horizon: float,
) -> dict[str, list]:
    """FIFO over parameter-server jobs placed by roles, from the PD-ORS paper's model.

    Written from the model only: at every whole second t (one slot) (1) running jobs train
    samples at eq. 1's speed (a job finishing inside the slot ends at the exact time), (2)
    jobs submitted by t join the queue, (3) in arrival order each job takes
    ``min(n_workers, F)`` workers and ``ceil(workers / gamma)`` parameter servers, placed
    one at a time on the next machine (cyclically, from where the last placement ended)
    with room for it; the first job that does not fit blocks the rest. The run ends at
    ``horizon``. Each job is a dict with ``submit``, ``V`` (samples), ``tau``, ``g``,
    ``F``, ``gamma``, ``b_int``, ``b_ext``, ``worker`` and ``ps`` (demand lists).
    Returns per job ``start`` and ``finish`` (None when it never started / finished).
    """
    h = len(capacity)
    free = [list(c) for c in capacity]
    start: list[float | None] = [None] * len(jobs)
    finish: list[float | None] = [None] * len(jobs)
    running: dict[int, tuple[list[int], list[int], float]] = {}  # j -> (w, s, samples left)
    queue: list[int] = []
    cursor = 0
    arrived = 0

    def speed(j: int, w: list[int], s: list[int]) -> float:
        job = jobs[j]
        machines = {m for m in range(h) if w[m] or s[m]}
        b = job["b_int"] if len(machines) == 1 else job["b_ext"]
        per_sample = job["tau"] + (2 * job["g"] / sum(s)) / b / (job["F"] / sum(w))
        return sum(w) / per_sample

    t = float(math.ceil(jobs[0]["submit"] - EPS_T)) if jobs else 0.0
    prev = t
    while t <= horizon + EPS_T:
        for j in sorted(running):
            w, s, left = running[j]
            v = speed(j, w, s)
            if left / v <= t - prev + EPS_T:
                finish[j] = prev + left / v
                for m in range(h):
                    for r in range(len(free[m])):
                        free[m][r] += w[m] * jobs[j]["worker"][r] + s[m] * jobs[j]["ps"][r]
                del running[j]
            else:
                running[j] = (w, s, left - v * (t - prev))
        while arrived < len(jobs) and jobs[arrived]["submit"] <= t + EPS_T:
            queue.append(arrived)
            arrived += 1
        while queue:
            j = queue[0]
            job = jobs[j]
            n_w = min(n_workers, job["F"])
            n_s = max(1, math.ceil(n_w / job["gamma"] - 1e-9))
            trial = [list(f) for f in free]
            w, s = [0] * h, [0] * h
            c = cursor
            ok = True
            for demand, count, out in ((job["worker"], n_w, w), (job["ps"], n_s, s)):
                for _ in range(count):
                    for k in range(h):
                        m = (c + k) % h
                        if all(trial[m][r] >= demand[r] - 1e-9 for r in range(len(demand))):
                            for r in range(len(demand)):
                                trial[m][r] -= demand[r]
                            out[m] += 1
                            c = (m + 1) % h
                            break
                    else:
                        ok = False
                        break
                if not ok:
                    break
            if not ok:
                break
            free, cursor = trial, c
            queue.pop(0)
            start[j] = t
            running[j] = (w, s, job["V"])
        prev = t
        t += 1.0
    return {"start": start, "finish": finish}


def chunk_speed(job: dict, zeta: int) -> float:
    """Eq. 1 of the edge-cloud paper: mini-batches a worker trains per second.

    n_j = 1 / (m_j + G_j + 2 q_j / b_j) with zeta_j = 0, 1 / (m_j + G_j) with zeta_j = 1;
    q_j MB over b_j Mbit/s is q_j * 8 / b_j seconds, over ``unit_s`` seconds per slot.
    """
    comm = 2.0 * job["grad_mb"] * 8.0 / job["bw_mbps"] / job["unit_s"]
    return 1.0 / (job["batch_time"] + job["update_time"] + (0.0 if zeta == 1 else comm))


def simulate_tasks(
    jobs: list[dict],
    servers: list[tuple[float, list[tuple[str, int]]]],
    cloud_delay: float | None,
    slot: float,
    *,
    preempt: bool = False,
    edge_queue: int = 1,
    per_job: int = 0,
    cloud_workers: list[tuple[str, int]] | None = None,
    serial: tuple[bool, ...] = (),
    migrate: bool = False,
) -> dict[str, list]:
    """Jobs made of data chunks on typed workers, from the edge-cloud paper's model.

    Written from the model only (Sec. III-A of the edge-cloud paper and docs/architecture.md,
    "Jobs made of tasks"), not from ``gpusched/core/tasks.py``. Each job (a dict with
    ``submit`` s, ``chunks``, ``type``, ``batches``, ``epochs``, ``batch_time``,
    ``update_time``, ``grad_mb``, ``bw_mbps``, ``unit_s``; sorted by ``submit``) has
    ``chunks`` data chunks of ``epochs * batches`` mini-batches each, trained one chunk
    per worker at eq. 1's speed (:func:`chunk_speed`), where zeta_j = 1 while every chunk
    of the job placed so far sits in the cloud and 0 from the moment one is placed on the
    edge (its chunks that hold a worker then slow down at once). ``servers`` are the edge
    servers as ``(delay s, [(worker type, count), ...])``: workers are numbered server by
    server, types in the order given. The cloud (``cloud_delay`` s, or None for none) is
    unbounded, giving chunk ``k`` (chunks numbered job by job) its own worker ``n_edge +
    k``, of every type; or, with ``cloud_workers`` (``[(type, count), ...]``), bounded:
    those typed workers only, numbered after the edge's, which never preempt.

    Shipping: a chunk placed on a server at time t is there ("ready") at t + its delay; on
    a server whose entry of ``serial`` is true (edge servers in order, then the cloud) a
    job's chunks travel one after another: ready at max(t, the job's previous chunk's
    ready time there) + delay.

    Decisions happen at multiples of ``slot`` (as :func:`simulate`: a chunk ends at its
    exact time inside a slot, the next decision is at the slot boundary of the earliest
    arrival, completion or ready time). At each one, after the chunks that ended and the
    arrivals:

    1. each arrived chunk not placed yet, in order, is placed for good on the worker of its
       type that has the fewest placed unfinished chunks (lowest index on ties), or in the
       cloud when there is one and that fewest is >= ``edge_queue`` (a bounded cloud: its
       worker of the chunk's type with the fewest placed unfinished chunks, if it has one);
       with ``per_job`` > 0, at most that many chunks of a job per decision (the others
       wait for the next slot, so that a job may reach the edge after the cloud). Its data
       ships from now; it starts at once, holding the worker while its data arrives, in
       the unbounded cloud or where no other chunk is placed, and otherwise waits there
       until its data has arrived ("ready") and the worker takes it;
    2. with ``preempt``, on each edge worker a ready waiting chunk with strictly less work
       (E_j B_j (m_j + G_j), the smallest, then the first) than the chunk holding it
       preempts that one (unless it started at this decision), which waits there again
       (it keeps its progress);
    3. each edge or bounded-cloud worker holding no chunk starts its ready waiting chunk
       that came first (with ``preempt``: the smallest by work, then the first);
    4. with ``migrate``, each edge worker still holding no chunk (in index order) takes
       the first (by the key of step 3) preempted chunk of its type waiting on a worker
       that another chunk holds: the chunk moves there, its data ships again (that
       server's delay, a load phase while it holds the worker), keeping its progress.

    Returns per chunk ``start`` (first time it held its worker), ``finish``, ``n_preempt``,
    ``worker``, ``train`` (s trained), ``transfer`` (s its data spent shipping, moves
    included) and ``n_migrations``; per job ``jct`` and ``zeta``; ``ps_held_s`` (a job holds
    one parameter server while a chunk of it holds a worker: the length of the union of
    those times, summed over jobs) and ``comm_s`` (training time beyond what the chunks
    would take at zeta_j = 1).
    """
    n_jobs = len(jobs)
    assert all(jobs[i]["submit"] <= jobs[i + 1]["submit"] for i in range(n_jobs - 1))
    w_type: list[str] = []
    w_delay: list[float] = []
    w_server: list[int] = []
    for s_i, (delay, workers) in enumerate(servers):
        for kind, count in workers:
            w_type += [kind] * count
            w_delay += [float(delay)] * count
            w_server += [s_i] * count
    n_edge = len(w_type)
    bounded = cloud_delay is not None and cloud_workers is not None
    for kind, count in cloud_workers or []:  # a bounded cloud's workers follow the edge's
        w_type += [kind] * count
        w_delay += [float(cloud_delay or 0.0)] * count
        w_server += [len(servers)] * count
    n_fixed = len(w_type)  # edge and bounded-cloud workers
    parent = [j for j, job in enumerate(jobs) for _ in range(int(job["chunks"]))]
    n = len(parent)
    batches = [jobs[j]["epochs"] * jobs[j]["batches"] for j in parent]
    work = [
        b * (jobs[j]["batch_time"] + jobs[j]["update_time"])
        for b, j in zip(batches, parent, strict=True)
    ]
    left = [float(b) for b in batches]  # mini-batches still to train
    zeta: list[int | None] = [None] * n_jobs
    worker: list[int | None] = [None] * n
    ready = [math.inf] * n
    transfer = [0.0] * n
    n_migr = [0] * n
    link: dict[tuple[int, int], float] = {}  # (job, server) -> its last chunk's arrival
    load_end = [0.0] * n  # a holder trains from here on
    start: list[float | None] = [None] * n
    finish: list[float | None] = [None] * n
    n_preempt = [0] * n
    train = [0.0] * n
    holds: list[list[float]] = [[] for _ in range(n_jobs)]  # per job: [begin, end] of holds
    span: dict[int, list[float]] = {}  # holder -> its entry of holds
    holder: dict[int, int] = {}  # worker -> chunk holding it
    waiting: list[int] = []  # placed chunks not holding a worker
    arrived = 0  # chunks admitted so far (chunks arrive job by job)
    unplaced: list[int] = []  # admitted chunks not placed yet

    def speed(k: int) -> float:
        return chunk_speed(jobs[parent[k]], 1 if zeta[parent[k]] == 1 else 0)

    def in_cloud(w: int) -> bool:
        return w >= n_edge

    def ship(k: int, w: int, t: float) -> float:
        """Chunk k's data leaves for worker w at t: when it is there."""
        server = w_server[w] if w < n_fixed else len(servers)
        delay = w_delay[w] if w < n_fixed else float(cloud_delay or 0.0)
        if server < len(serial) and serial[server]:
            at = max(t, link.get((parent[k], server), t)) + delay
            link[(parent[k], server)] = at
        else:
            at = t + delay
        transfer[k] += at - t
        return at

    def hold(k: int, w: int, t: float) -> None:
        holder[w] = k
        if start[k] is None:
            start[k] = t
        span[k] = [t, math.inf]
        holds[parent[k]].append(span[k])

    def release(k: int, t: float) -> None:
        del holder[worker[k]]
        span.pop(k)[1] = t

    def advance(k: int, t0: float, t1: float) -> bool:
        """Holder k from t0 to t1: data arrives, then it trains; True if it finished."""
        if load_end[k] > t1 + EPS_T:
            return False
        t0 = max(t0, load_end[k])
        v = speed(k)
        if left[k] / v <= t1 - t0 + EPS_T:
            finish[k] = t0 + left[k] / v
            train[k] += left[k] / v
            left[k] = 0.0
            release(k, finish[k])
            return True
        left[k] -= v * (t1 - t0)
        train[k] += t1 - t0
        return False

    def queued_on(w_list: list[int], k: int) -> dict[int, int]:
        """Placed unfinished chunks (other than k) per worker of ``w_list``."""
        queued = dict.fromkeys(w_list, 0)
        for c in range(arrived):
            if worker[c] in queued and finish[c] is None and c != k:
                queued[worker[c]] += 1
        return queued

    def place(k: int, t: float) -> None:
        kind = jobs[parent[k]]["type"]
        mine = [w for w in range(n_edge) if w_type[w] == kind]
        clouds = [w for w in range(n_edge, n_fixed) if w_type[w] == kind]
        queued = queued_on(mine + clouds, k)
        best = min(mine, key=lambda w: (queued[w], w))
        cloud = cloud_delay is not None and queued[best] >= edge_queue
        if bounded and cloud and not clouds:
            cloud = False  # the bounded cloud has no worker of this type
        if not cloud:
            w = best
        elif bounded:
            w = min(clouds, key=lambda c: (queued[c], c))
        else:
            w = n_edge + k
        worker[k] = w
        p = parent[k]
        if zeta[p] is None or not cloud:
            zeta[p] = 1 if cloud else 0
        ready[k] = ship(k, w, t)
        if (cloud and not bounded) or queued[w] == 0:
            load_end[k] = ready[k]
            hold(k, w, t)
        else:
            waiting.append(k)

    def key(k: int) -> tuple:
        return (work[k], k) if preempt else (k,)

    def decide(t: float) -> None:
        placed: dict[int, int] = {}  # chunks placed at this decision per job
        for k in list(unplaced):
            if per_job and placed.get(parent[k], 0) >= per_job:
                continue
            place(k, t)
            unplaced.remove(k)
            placed[parent[k]] = placed.get(parent[k], 0) + 1
        ready_on: dict[int, list[int]] = {}
        for k in waiting:
            if ready[k] <= t + EPS_T:
                ready_on.setdefault(worker[k], []).append(k)
        if preempt:
            for w in range(n_edge):
                if w in holder and w in ready_on and span[holder[w]][0] < t:
                    h = holder[w]
                    if work[min(ready_on[w], key=key)] < work[h]:
                        n_preempt[h] += 1
                        release(h, t)
                        waiting.append(h)
                        ready_on[w].append(h)
        for w in range(n_fixed):
            if w not in holder and w in ready_on:
                k = min(ready_on[w], key=key)
                waiting.remove(k)
                load_end[k] = t
                hold(k, w, t)
        if migrate:
            for w in range(n_edge):
                if w in holder:
                    continue
                movable = [
                    k
                    for k in waiting
                    if n_preempt[k] > 0
                    and w_type[worker[k]] == w_type[w]
                    and worker[k] in holder
                    and not in_cloud(worker[k])
                ]
                if not movable:
                    continue
                k = min(movable, key=key)
                waiting.remove(k)
                worker[k] = w
                n_migr[k] += 1
                ready[k] = ship(k, w, t)
                load_end[k] = ready[k]
                hold(k, w, t)

    def boundary(e: float) -> float:
        return math.ceil((e - EPS_T) / slot) * slot

    t = boundary(jobs[0]["submit"]) if n else 0.0
    t_prev = t
    done = 0
    while done < n:
        for k in sorted(holder.values()):
            if advance(k, t_prev, t):
                done += 1
        while arrived < n and jobs[parent[arrived]]["submit"] <= t + EPS_T:
            unplaced.append(arrived)
            arrived += 1
        decide(t)
        if done == n:
            break
        events = [ready[k] for k in waiting if ready[k] > t + EPS_T]
        events += [max(t, load_end[k]) + left[k] / speed(k) for k in holder.values()]
        if arrived < n:
            events.append(jobs[parent[arrived]]["submit"])
        if unplaced:
            events.append(t + slot)
        assert events, "stuck: chunks wait but nothing can happen"
        nxt = boundary(min(events))
        if nxt <= t:
            nxt = (math.floor(t / slot + 0.5) + 1) * slot
        t_prev, t = t, nxt
    first = [parent.index(j) for j in range(n_jobs)]
    ps_held = 0.0
    for spans in holds:
        spans.sort()
        end = -math.inf
        for a, b in spans:  # the union of the job's holds
            ps_held += max(0.0, b - max(a, end))
            end = max(end, b)
    return {
        "start": start,
        "finish": finish,
        "n_preempt": n_preempt,
        "worker": worker,
        "train": train,
        "transfer": transfer,
        "n_migrations": n_migr,
        "jct": [
            max(finish[first[j] : first[j] + int(jobs[j]["chunks"])]) - jobs[j]["submit"]
            for j in range(n_jobs)
        ],
        "zeta": zeta,
        "ps_held_s": ps_held,
        "comm_s": sum(train[k] - work[k] for k in range(n)),
    }


def simulate_lazer(
    jobs: list[tuple[float, int, float]],
    server_gpus: list[int],
    slot: float,
    deferral,
    load: list[float] | None = None,
    save: list[float] | None = None,
    loading_in_rq: bool = True,
) -> list[dict]:
    """Lazer (Go et al., DAC'26, Alg. 1-2) with deferrals from ``deferral(job, t, p)``.

    The lifecycle and the slotted clock are those of :func:`simulate`. The rule, from the
    paper and the choices policies/lazer.py states:

    * one decision point: (a) a job whose start waits for saves starts on its promised
      GPUs once they are all idle, in the order promised; (b) if a job finished since the
      last point, the waiting queue (queued jobs that did not arrive at this point, are
      not deferred and do not wait for saves) by (remaining, index) starts first fit into
      the free GPUs, placed as :func:`place` does, until none is left; (c) each arrival
      in order: Alg. 2, then X = ``deferral(j, t, p)`` (p: the largest save of J_r, 0 for a
      job that has not trained since its start; X below half a slot is 0), then preempt
      J_r and start j (X = 0) or defer it until t + X; (d) each deferral due, in order of
      (due time, creation): j and its J_r leave the deferred queues and Alg. 2 runs again,
      without X;
    * Alg. 2 for j: if the free GPUs fit it, it starts there at once; else the jobs that
      hold GPUs and train (and, with ``loading_in_rq``, those loading), are not deferred
      and were not started or preempted at this point, with more remaining work than j,
      by (remaining, index) descending, until the free GPUs plus theirs fit j; none: j
      waits;
    * a start by preemption takes every free GPU, then the GPUs of J_r in that order,
      each job's lowest-numbered first, up to j's gang; if a job of J_r saves, those GPUs
      are promised to j, else j starts at once. GPUs a preemption frees at once are not
      free for the rest of the point; "free" GPUs are idle and promised to no job.

    Returns what :func:`simulate` returns.
    """
    n = len(jobs)
    submit = [float(j[0]) for j in jobs]
    gpus = [int(j[1]) for j in jobs]
    remaining = [float(j[2]) for j in jobs]
    load_s = [float(x) for x in load] if load is not None else [0.0] * n
    save_s = [float(x) for x in save] if save is not None else [0.0] * n
    server_of = [s for s, count in enumerate(server_gpus) for _ in range(count)]
    phase: dict[int, str] = {}
    phase_end: dict[int, float] = {}
    last_start = [0.0] * n
    enqueued = list(submit)
    spent = {k: [0.0] * n for k in ("wait", "load", "train", "save", "futile")}
    n_futile = [0] * n
    first_start: list[float | None] = [None] * n
    finish: list[float | None] = [None] * n
    n_preempt = [0] * n
    owner = [-1] * len(server_of)
    held: dict[int, list[int]] = {}
    queued: list[int] = []
    dwq: set[int] = set()
    drq: dict[int, int] = {}  # job -> the deferred arrival it is kept for
    promised: dict[int, list[int]] = {}
    timers: list[tuple[float, int, int]] = []  # (due, creation, job)
    taken: set[int] = set()
    blocked: set[int] = set()
    created = [0]  # deferrals so far (the creation order of timers)
    next_arrival = 0

    def free(gpu: int) -> bool:
        return (
            owner[gpu] == -1 and gpu not in blocked and all(gpu not in g for g in promised.values())
        )

    def start_on(j: int, chosen: list[int], t: float) -> None:
        for gpu in chosen:
            owner[gpu] = j
        held[j] = list(chosen)
        queued.remove(j)
        if first_start[j] is None:
            first_start[j] = t
        spent["wait"][j] += t - enqueued[j]
        last_start[j] = t
        phase[j] = "load" if load_s[j] > 0 else "run"
        phase_end[j] = t + load_s[j]
        taken.add(j)

    def place_start(j: int, t: float) -> None:
        idle: list[list[int]] = [[] for _ in server_gpus]
        for gpu in range(len(owner)):
            if free(gpu):
                idle[server_of[gpu]].append(gpu)
        start_on(j, place(idle, gpus[j]), t)

    def requeue(j: int, t: float) -> None:
        for gpu in held.pop(j):
            owner[gpu] = -1
        del phase[j], phase_end[j]
        queued.append(j)
        enqueued[j] = t

    def trained(k: int, t: float) -> bool:
        return phase[k] == "run" and t > phase_end[k] + EPS_T

    def preempt(k: int, t: float) -> None:
        n_preempt[k] += 1
        if not trained(k, t):
            if load_s[k] > 0:
                n_futile[k] += 1
                spent["futile"][k] += t - last_start[k]
            requeue(k, t)
        elif save_s[k] > 0:
            phase[k] = "save"
            phase_end[k] = t + save_s[k]
        else:
            requeue(k, t)

    def orchestrate(j: int) -> list[int] | None:
        idle = sum(free(gpu) for gpu in range(len(owner)))
        if gpus[j] <= idle:
            return []
        cands = [
            k
            for k in held
            if (phase[k] == "run" or (phase[k] == "load" and loading_in_rq))
            and k not in drq
            and k not in taken
            and remaining[k] > remaining[j]
        ]
        cands.sort(key=lambda k: (-remaining[k], -k))
        jr, avail = [], idle
        for k in cands:
            if avail >= gpus[j]:
                break
            jr.append(k)
            avail += gpus[k]
        return jr if avail >= gpus[j] else None

    def preempt_and_start(j: int, jr: list[int], t: float) -> None:
        chosen = [gpu for gpu in range(len(owner)) if free(gpu)]
        for k in jr:
            chosen += sorted(held[k])
        chosen = sorted(chosen[: gpus[j]])
        saves = any(trained(k, t) and save_s[k] > 0 for k in jr)
        for k in jr:
            blocked.update(g for g in held[k] if g not in chosen)
            taken.add(k)
            preempt(k, t)
        if saves:
            promised[j] = chosen
        else:
            start_on(j, chosen, t)

    def decide(t: float, arrived: list[int], finished_any: bool) -> None:
        for j, chosen in list(promised.items()):  # (a)
            if all(owner[gpu] == -1 for gpu in chosen):
                del promised[j]
                start_on(j, chosen, t)
        if finished_any:  # (b)
            wq = [k for k in queued if k not in arrived and k not in dwq and k not in promised]
            secured = sum(free(gpu) for gpu in range(len(owner)))
            for k in sorted((k for k in wq if k not in taken), key=lambda k: (remaining[k], k)):
                if secured == 0:
                    break
                if gpus[k] <= secured:
                    place_start(k, t)
                    secured -= gpus[k]
        for j in arrived:  # (c)
            jr = orchestrate(j)
            if jr is None:
                continue
            if not jr:
                place_start(j, t)
                continue
            p = max(save_s[k] if trained(k, t) else 0.0 for k in jr)
            x = deferral(j, t, p)
            x = x if x >= 0.5 * slot else 0.0
            if x == 0.0:
                preempt_and_start(j, jr, t)
            else:
                dwq.add(j)
                for k in jr:
                    drq[k] = j
                created[0] += 1
                timers.append((t + x, created[0], j))
        timers.sort()
        while timers and timers[0][0] <= t + EPS_T:  # (d)
            _, _, j = timers.pop(0)
            dwq.discard(j)
            for k in [k for k, owner_j in drq.items() if owner_j == j]:
                del drq[k]
            jr = orchestrate(j)
            if jr == []:
                place_start(j, t)
            elif jr:
                preempt_and_start(j, jr, t)
        taken.clear()
        blocked.clear()

    def advance(j: int, t0: float, t1: float) -> bool:
        if phase[j] == "save":
            spent["save"][j] += min(phase_end[j], t1) - t0
            if phase_end[j] <= t1 + EPS_T:
                requeue(j, phase_end[j])
            return False
        if phase[j] == "load":
            spent["load"][j] += min(phase_end[j], t1) - t0
            if phase_end[j] > t1 + EPS_T:
                return False
            phase[j] = "run"
            t0 = phase_end[j]
        dt = max(t1 - t0, 0.0)
        if remaining[j] <= dt + EPS_T:
            finish[j] = t0 + remaining[j]
            spent["train"][j] += remaining[j]
            remaining[j] = 0.0
            for gpu in held.pop(j):
                owner[gpu] = -1
            del phase[j], phase_end[j]
            return True
        remaining[j] -= dt
        spent["train"][j] += dt
        return False

    def next_event(t: float) -> float:
        events = [
            phase_end[j] if phase[j] == "save" else max(t, phase_end[j]) + remaining[j]
            for j in held
        ]
        events += [due for due, _, _ in timers]
        if next_arrival < n:
            events.append(submit[next_arrival])
        return min(events) if events else math.inf

    t = math.ceil((submit[0] - EPS_T) / slot) * slot if n else 0.0
    t_prev = t
    done = 0
    while done < n:
        finished_any = False
        for j in sorted(held):
            if advance(j, t_prev, t):
                done += 1
                finished_any = True
        arrived = []
        while next_arrival < n and submit[next_arrival] <= t + EPS_T:
            queued.append(next_arrival)
            arrived.append(next_arrival)
            next_arrival += 1
        decide(t, arrived, finished_any)
        if done == n:
            break
        e = next_event(t)
        assert e < math.inf, "stuck: jobs wait but nothing can happen"
        nxt = math.ceil((e - EPS_T) / slot) * slot
        if nxt <= t:
            nxt = (math.floor(t / slot + 0.5) + 1) * slot
        t_prev, t = t, nxt
    return [
        {
            "first_start": first_start[j],
            "finish": finish[j],
            "n_preempt": n_preempt[j],
            "n_futile": n_futile[j],
            **{k: v[j] for k, v in spent.items()},
        }
        for j in range(n)
    ]


def simulate_elastic(
    jobs: list[tuple[float, float]],
    n_gpus: int,
    hi: list[int],
    speed: list[list[float]],
    load: list[float],
    slot: float,
    interval: float,
) -> list[dict]:
    """Elastic gangs with rates that change with progress, under a scripted re-allocation.

    ``jobs`` = [(submit s, work s), ...] (sorted by submit) on ``n_gpus`` GPUs. Job ``j``
    may hold 1 to ``hi[j]`` GPUs; on ``K`` GPUs in stage ``q`` it trains at rate
    ``K * speed[j][q]``; stage ``q`` lasts while its remaining work is above
    ``work * (1 - (q + 1) / S)`` (``S = len(speed[j])``): when a decision point finds the
    remaining work at or below that level (within 1e-6 s), the job takes the next stage's
    rate from then on (so it overshoots by less than a slot). Every start loads for
    ``load[j]`` s holding its GPUs; a job preempted while loading releases at once (futile).

    The scripted policy, at every multiple of ``interval`` (at the first decision point at
    or after it): over the jobs that have arrived and not finished, in index order, hand
    out the GPUs one at a time round-robin, each job up to its ``hi``; every job whose
    count changes is preempted (if it holds GPUs) and started again on the lowest-numbered
    free GPUs, in index order; no other decision changes anything.

    Returns one dict per job: ``first_start``, ``finish``, ``n_preempt``, ``n_futile``,
    ``load`` (s spent loading), ``futile`` (s of load wasted), ``gpus`` (counts of its
    starts, in order).
    """
    n = len(jobs)
    submit = [float(j[0]) for j in jobs]
    work = [float(j[1]) for j in jobs]
    remaining = list(work)
    stage = [0] * n
    k_of = [0] * n  # GPUs held now (0: none)
    phase: dict[int, str] = {}
    phase_end: dict[int, float] = {}
    last_start = [0.0] * n
    first_start: list[float | None] = [None] * n
    finish: list[float | None] = [None] * n
    n_preempt = [0] * n
    n_futile = [0] * n
    spent_load = [0.0] * n
    futile = [0.0] * n
    starts: list[list[int]] = [[] for _ in range(n)]
    arrived = 0
    next_cycle: float | None = None

    def rate(j: int) -> float:
        return k_of[j] * speed[j][stage[j]]

    def level(j: int) -> float:
        s = len(speed[j])
        return work[j] * (1 - (stage[j] + 1) / s) if stage[j] + 1 < s else -math.inf

    def advance(j: int, t0: float, t1: float) -> bool:
        if phase[j] == "load":
            end = min(phase_end[j], t1)
            spent_load[j] += end - t0
            if phase_end[j] > t1 + EPS_T:
                return False
            phase[j] = "run"
            t0 = phase_end[j]
        dt = max(t1 - t0, 0.0)
        v = rate(j)
        if remaining[j] <= v * dt + EPS_T * v:
            finish[j] = t0 + remaining[j] / v
            remaining[j] = 0.0
            del phase[j], phase_end[j]
            k_of[j] = 0
            return True
        remaining[j] -= v * dt
        return False

    def start(j: int, k: int, t: float) -> None:
        k_of[j] = k
        starts[j].append(k)
        if first_start[j] is None:
            first_start[j] = t
        last_start[j] = t
        phase[j] = "load" if load[j] > 0 else "run"
        phase_end[j] = t + load[j]

    def preempt(j: int, t: float) -> None:
        n_preempt[j] += 1
        if phase[j] == "load" or t <= phase_end[j] + EPS_T:
            if load[j] > 0:
                n_futile[j] += 1
                futile[j] += t - last_start[j]
        del phase[j], phase_end[j]
        k_of[j] = 0

    def cycle(t: float) -> None:
        active = [j for j in range(arrived) if finish[j] is None]
        want = dict.fromkeys(active, 0)
        left = n_gpus
        grew = True
        while left > 0 and grew:
            grew = False
            for j in active:
                if left > 0 and want[j] < hi[j]:
                    want[j] += 1
                    left -= 1
                    grew = True
        changed = [j for j in active if want[j] != k_of[j]]
        for j in changed:
            if k_of[j]:
                preempt(j, t)
        for j in changed:
            if want[j]:
                start(j, want[j], t)

    def boundary(e: float) -> float:
        return math.ceil((e - EPS_T) / slot) * slot

    t = boundary(submit[0]) if n else 0.0
    t_prev = t
    done = 0
    while done < n:
        for j in range(n):
            if k_of[j] and advance(j, t_prev, t):
                done += 1
        while arrived < n and submit[arrived] <= t + EPS_T:
            arrived += 1
        for j in range(n):  # milestones reached: the next stage's rate from now on
            if k_of[j] and remaining[j] <= level(j) + 1e-6:
                while remaining[j] <= level(j) + 1e-6:
                    stage[j] += 1
        if next_cycle is None:
            next_cycle = math.ceil(t / interval - 1e-9) * interval
        if t >= next_cycle - 1e-9:
            cycle(t)
            next_cycle = (math.floor(t / interval + 1e-9) + 1.0) * interval
        if done == n:
            break
        events = [next_cycle]
        if arrived < n:
            events.append(submit[arrived])
        for j in range(n):
            if k_of[j]:
                begin = max(t, phase_end[j])
                events.append(begin + remaining[j] / rate(j))
                if level(j) > -math.inf:
                    events.append(begin + (remaining[j] - level(j)) / rate(j))
        nxt = boundary(min(events))
        if nxt <= t:
            nxt = (math.floor(t / slot + 0.5) + 1) * slot
        t_prev, t = t, nxt
    return [
        {
            "first_start": first_start[j],
            "finish": finish[j],
            "n_preempt": n_preempt[j],
            "n_futile": n_futile[j],
            "load": spent_load[j],
            "futile": futile[j],
            "gpus": starts[j],
        }
        for j in range(n)
    ]
