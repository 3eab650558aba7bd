"""Whole-process speed against the research simulators, on the same workload, in pairs.

Run from the repository root with checkouts of the peers you want (none is part of this
repository, and nothing of theirs is copied here; see docs/benchmarks.md, "Comparing with
the research simulators", for the commits and their set-up)::

    python -m bench.peers --workload 10k --policy fifo --policy las \\
        --tiresias ~/src/Tiresias --tiresias-python python2.7 \\
        --lucid ~/src/Lucid --lucid-python ~/venvs/lucid/bin/python \\
        --gavel ~/src/gavel --gavel-python ~/venvs/gavel/bin/python

For each workload it makes a seeded synthetic trace with ``gpusched trace synth`` on the
cluster of that size, converts it to each named peer's input format (below), runs each
side once untimed (so both start with their byte code, and gpusched with its compiled
kernels, cached, and the files in the page cache), then runs ``--pairs`` pairs per peer and
policy, each a whole peer process followed at once by the matching whole
``gpusched replay TRACE -c CLUSTER -P POLICY -o DIR`` process. Each process is measured from the
outside (:func:`os.wait4`): wall time, CPU time (user + system, its children included),
maximum resident memory, and the peak of its private (anonymous) resident memory, sampled
every 10 ms from ``/proc`` (Linux; the process itself, not its children), with the
machine's load average before it. Maximum resident memory also counts the pages of the
shared libraries a process maps, and how many of those are resident moves by tens of MB
with the page cache (docs/benchmarks.md, "What max RSS counts on this machine"); private
memory does not. The table gives each pair's ratio (peer / gpusched) and their median;
``--json FILE`` keeps every run.

Workloads (``gpusched trace synth -n N -c CLUSTER``, seed 1, load 0.8)::

    1k    1,000 jobs on default (4 x 8 = 32 GPUs)
    10k   10,000 jobs on tiresias-n32g4 (32 x 4 = 128 GPUs)
    100k  100,000 jobs on philly-64x8 (64 x 8 = 512 GPUs)

Policies, as each simulator names them (``-`` where it has none)::

    gpusched   fifo   srtf       tiresias (las)
    Tiresias   fifo   shortest   dlas-gpu          (placement: yarn)
    Lucid      fifo   srtf       tiresias          (placement: consolidate)
    Gavel      fifo   -          max_min_fairness  (Gavel's LAS)

What each conversion keeps and changes (the workload is the same otherwise):

- Tiresias simulator (``simulator/run_sim.py``, Python 2.7 with NumPy): submit times and
  durations rounded to whole seconds (it reads integers); every job is given the model
  ``resnet50`` (its models only size parameter servers, which these placements ignore).
- Lucid (``simulation/simulator.py``): its "Pollux" trace format, one virtual cluster of
  all the servers; whole seconds (it steps one simulated second at a time). Its
  consolidated placement knows 8-GPU servers only, so 32 x 4 GPUs (10k) run as 16 x 8. Its start-up
  reads estimator files named after the experiment (``./estimator/lgb/<name>_lgb.csv``,
  a training log in the trace folder) that only its own QSSF and Lucid policies use, so it
  runs in a scratch folder holding empty ones and a link to its ``data/colocate_info.csv``.
- Gavel (``scheduler/scripts/drivers/simulate_scheduler_with_trace.py``, after its own
  ``make`` in ``scheduler/``): V100s only, every job a "ResNet-50 (batch size 64)" whose
  step count makes it last its duration alone on V100s (Gavel's own throughput table);
  Gavel knows gangs of 1, 2, 4 and 8 GPUs only, so larger jobs are given 8 (said in the
  table). Gavel schedules in rounds of 360 s.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: workload -> (jobs, bundled cluster, servers, GPUs per server)
WORKLOADS = {
    "1k": (1_000, "default", 4, 8),
    "10k": (10_000, "tiresias-n32g4", 32, 4),
    "100k": (100_000, "philly-64x8", 64, 8),
}
#: gpusched policy -> each peer's
POLICIES = {
    "fifo": {"gpusched": "fifo", "tiresias": "fifo", "lucid": "fifo", "gavel": "fifo"},
    "srtf": {"gpusched": "srtf", "tiresias": "shortest", "lucid": "srtf", "gavel": None},
    "las": {
        "gpusched": "tiresias",
        "tiresias": "dlas-gpu",
        "lucid": "tiresias",
        "gavel": "max_min_fairness",
    },
}
GAVEL_JOB = "ResNet-50 (batch size 64)"
GAVEL_GANGS = (1, 2, 4, 8)


@dataclass
class Run:
    """One whole process."""

    who: str  #: the peer, or "gpusched"
    peer: str  #: the peer of the pair
    workload: str
    policy: str
    pair: int
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    load: float
    ok: bool
    note: str = ""
    private_mb: float = 0.0  #: peak private (anonymous) resident memory, sampled


def read_jobs(path: Path) -> list[dict[str, Any]]:
    """The jobs of a gpusched CSV trace (``trace synth`` output), in submission order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    jobs = [
        {
            "id": r["job_id"],
            "submit": float(r["submit_time"]),
            "gpus": int(r["num_gpus"]),
            "duration": float(r["duration"]),
        }
        for r in rows
    ]
    jobs.sort(key=lambda j: j["submit"])
    return jobs


def whole(x: float) -> int:
    """A time in whole seconds, for the simulators that read integers (at least 1 s)."""
    return max(int(round(x)), 0)


# --- conversions ---------------------------------------------------------------------


def to_tiresias(jobs: list[dict[str, Any]], servers: int, gpus: int, out: Path) -> list[str]:
    """Trace and cluster files of the Tiresias simulator; returns its arguments."""
    out.mkdir(parents=True, exist_ok=True)
    trace, spec = out / "trace.csv", out / "cluster.csv"
    with open(trace, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]
        )
        subs = [whole(j["submit"]) for j in jobs]
        for i, j in enumerate(jobs):
            d = max(whole(j["duration"]), 1)
            gap = subs[i + 1] - subs[i] if i + 1 < len(jobs) else 0
            w.writerow([i, j["gpus"], subs[i], d, "resnet50", d, gap])
    with open(spec, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node"]
        )
        w.writerow([1, servers, gpus, 64 * gpus, 256])
    return [f"--cluster_spec={spec}", "--scheme=yarn", f"--trace_file={trace}"]


LUCID_COLUMNS = (
    "job_id user vc jobname gpu_num cpu_num state submit_time duration dataset model "
    "batchsize amp speed gpu_util gmem_util gmem"
).split()


def to_lucid(jobs: list[dict[str, Any]], servers: int, checkout: Path, out: Path) -> Path:
    """Lucid's trace folder and scratch working folder; returns the working folder."""
    data = out / "trace"
    work = out / "work"
    (work / "estimator" / "lgb").mkdir(parents=True, exist_ok=True)
    (work / "data").mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "cluster_full_log_0.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(LUCID_COLUMNS)
        for i, j in enumerate(jobs):
            w.writerow(
                [
                    i,
                    "u0",
                    "vc0",
                    f"job{i}",
                    j["gpus"],
                    4 * j["gpus"],
                    "COMPLETED",
                    whole(j["submit"]),
                ]
                + [max(whole(j["duration"]), 1), "none", "resnet50", 64, 0, 1.0, 50, 50, 1000]
            )
    with open(data / "vc_config.csv", "w", newline="") as f:
        f.write(",num\n")
        f.write(f"vc0,{servers}\n")
    # read at start-up for the estimator of QSSF and Lucid (not the policies run here)
    with open(data / "cluster_full_log.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(LUCID_COLUMNS)
        w.writerow(
            [0, "u0", "vc0", "job0", 1, 4, "COMPLETED", "2020-04-02 00:00:00", 60]
            + ["none", "resnet50", 64, 0, 1.0, 50, 50, 1000]
        )
    (work / "estimator" / "lgb" / f"{LUCID_EXPERIMENT}_lgb.csv").write_text("job_id,priority\n")
    link = work / "data" / "colocate_info.csv"
    if not link.exists():
        link.symlink_to(checkout / "simulation" / "data" / "colocate_info.csv")
    return work


LUCID_EXPERIMENT = "Venus_Sept_Pollux"  # "Pollux": its plain trace format; "Sept": estimator


def to_gavel(jobs: list[dict[str, Any]], checkout: Path, out: Path) -> tuple[Path, int]:
    """Gavel's trace file; returns it and the number of jobs given 8 GPUs for more."""
    out.mkdir(parents=True, exist_ok=True)
    table = json.loads((checkout / "scheduler" / "simulation_throughputs.json").read_text())
    rate = {g: table["v100"][str((GAVEL_JOB, g))]["null"] for g in GAVEL_GANGS}
    trace = out / "trace.txt"
    capped = 0
    with open(trace, "w") as f:
        for j in jobs:
            g = j["gpus"]
            if g not in GAVEL_GANGS:
                capped += g > GAVEL_GANGS[-1]
                g = min((x for x in GAVEL_GANGS if x >= g), default=GAVEL_GANGS[-1])
            steps = max(math.ceil(j["duration"] * rate[g]), 1)
            f.write(f"{GAVEL_JOB}\tnone\tnone\t-n\t0\t{steps}\t{g}\t1\t-1\t{j['submit']}\n")
    return trace, capped


# --- running -------------------------------------------------------------------------


def private_mb(pid: int) -> float:
    """Process ``pid``'s private (anonymous) resident memory now, MB (0 where ``/proc``
    does not say: another system, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def measure(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, logs: Path
) -> tuple[float, float, float, bool, str, float]:
    """Run ``cmd`` to its end: (wall s, CPU s with its children, max RSS MB, ok, note, peak
    private MB sampled every 10 ms); its output goes to ``logs``/stdout.log and stderr.log."""
    t0 = time.perf_counter()
    peak = 0.0
    with open(logs / "stdout.log", "wb") as out, open(logs / "stderr.log", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            peak = max(peak, private_mb(proc.pid))
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, ru = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - t0
                return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, False, "timeout", peak
            time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    ok = proc.returncode == 0
    note = "" if ok else f"exit {proc.returncode}: see {logs / 'stderr.log'}"
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, ok, note, peak


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n")[0])
    p.add_argument(
        "--workload", action="append", choices=list(WORKLOADS), help="(repeat) default 1k"
    )
    p.add_argument("--policy", action="append", choices=list(POLICIES), help="(repeat) default all")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument(
        "--no-warm", dest="warm", action="store_false", help="no untimed first run of each side"
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="s per process")
    p.add_argument("--tiresias", type=Path, help="checkout of SymbioticLab/Tiresias")
    p.add_argument("--tiresias-python", default="python2.7")
    p.add_argument("--lucid", type=Path, help="checkout of S-Lab-System-Group/Lucid")
    p.add_argument("--lucid-python", default=sys.executable)
    p.add_argument("--gavel", type=Path, help="checkout of stanford-futuredata/gavel (made)")
    p.add_argument("--gavel-python", default=sys.executable)
    p.add_argument("--gpusched", default=str(Path(sys.executable).parent / "gpusched"))
    p.add_argument("--work", type=Path, default=Path("peer-runs"), help="scratch folder")
    p.add_argument("--json", type=Path, help="append every run to this JSON-lines file")
    a = p.parse_args(argv)
    peers = {
        k: v for k, v in (("tiresias", a.tiresias), ("lucid", a.lucid), ("gavel", a.gavel)) if v
    }
    if not peers:
        p.error("name at least one peer checkout (--tiresias, --lucid, --gavel)")
    for name, path in peers.items():
        if not path.is_dir():
            p.error(f"--{name}: no such folder: {path}")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # each side's byte code cached, as usually
    runs: list[Run] = []
    for wl in a.workload or ["1k"]:
        n, cluster, servers, gpus = WORKLOADS[wl]
        base = (a.work / wl).resolve()
        base.mkdir(parents=True, exist_ok=True)
        trace = base / "trace.csv"
        if not trace.is_file():
            subprocess.run(
                [a.gpusched, "trace", "synth", "-n", str(n), "-c", cluster, "-o", str(trace)],
                check=True,
            )
        jobs = read_jobs(trace)
        notes: dict[str, str] = {}
        for pol in a.policy or list(POLICIES):
            for peer, checkout in peers.items():
                name = POLICIES[pol][peer]
                if name is None:
                    continue
                run_dir = base / peer / pol
                run_dir.mkdir(parents=True, exist_ok=True)
                penv = dict(env)
                if peer == "tiresias":
                    args = to_tiresias(jobs, servers, gpus, base / peer)
                    cmd = [a.tiresias_python, str(checkout / "simulator" / "run_sim.py"), *args]
                    cmd += [f"--schedule={name}", f"--log_path={run_dir / 'log'}"]
                    cwd = checkout / "simulator"
                elif peer == "lucid":
                    # its consolidated placement knows 8-GPU servers only: as many GPUs in all
                    nodes, per_node = (servers * gpus // 8, 8) if gpus != 8 else (servers, gpus)
                    if gpus != 8:
                        notes["lucid"] = f"{servers} x {gpus} GPUs run as {nodes} x 8"
                    cwd = to_lucid(jobs, nodes, checkout, base / peer)
                    cmd = [a.lucid_python, str(checkout / "simulation" / "simulator.py")]
                    cmd += [
                        "-e",
                        LUCID_EXPERIMENT,
                        "--pollux-idx",
                        "0",
                        "-t",
                        str(base / peer / "trace"),
                    ]
                    cmd += ["-l", str(run_dir / "log"), "-s", name, "-p", "consolidate"]
                    cmd += ["--num_gpus_per_node", str(per_node), "-j", "1"]
                else:
                    gtrace, capped = to_gavel(jobs, checkout, base / peer)
                    if capped:
                        notes["gavel"] = f"{capped} jobs of more than 8 GPUs given 8"
                    drv = (
                        checkout
                        / "scheduler"
                        / "scripts"
                        / "drivers"
                        / "simulate_scheduler_with_trace.py"
                    )
                    cmd = [a.gavel_python, str(drv), "-t", str(gtrace), "-p", name]
                    cmd += [
                        "--throughputs_file",
                        str(checkout / "scheduler" / "simulation_throughputs.json"),
                    ]
                    cmd += [
                        "-c",
                        f"{servers * gpus}:0:0",
                        "--num_gpus_per_server",
                        f"{gpus}:1:1",
                        "--seed",
                        "0",
                    ]
                    cwd = checkout / "scheduler"
                ours = [
                    a.gpusched,
                    "replay",
                    str(trace),
                    "-c",
                    cluster,
                    "-P",
                    POLICIES[pol]["gpusched"],
                ]
                sides = ((peer, cmd, cwd, penv), ("gpusched", ours, run_dir, env))
                for i in range(-1 if a.warm else 0, a.pairs):  # pair -1: untimed warm-up
                    for who, c, d, e in sides:
                        out_dir = run_dir / f"out-{who}"
                        shutil.rmtree(out_dir, ignore_errors=True)
                        out_dir.mkdir()
                        full = c + (["-o", str(out_dir / "run")] if who == "gpusched" else [])
                        load = os.getloadavg()[0]
                        wall, cpu, rss, ok, note, priv = measure(full, d, e, a.timeout, out_dir)
                        r = Run(who, peer, wl, pol, i, wall, cpu, rss, load, ok, note, priv)
                        print(
                            f"{wl:>4} {pol:<5} {who:<9} pair {i:2d}: wall {wall:8.2f} s  cpu {cpu:8.2f} s"
                            f"  rss {rss:6.0f} MB  private {priv:6.0f} MB  load {load:4.1f} {note}",
                            file=sys.stderr,
                            flush=True,
                        )
                        if i < 0:
                            continue
                        runs.append(r)
                        if a.json:
                            with open(a.json, "a") as f:
                                f.write(json.dumps(asdict(r)) + "\n")
        for k, v in notes.items():
            print(f"note: {k}: {v}", file=sys.stderr)
    print_table(runs)
    return 0


def print_table(runs: list[Run]) -> None:
    """Per workload, policy and peer: each side's range and the median ratio of the pairs."""
    rows = []
    keys = sorted({(r.workload, r.policy, r.peer) for r in runs})
    for wl, pol, peer in keys:
        mine = [r for r in runs if (r.workload, r.policy, r.peer) == (wl, pol, peer)]
        pr = [r for r in mine if r.who == peer]
        ours = [r for r in mine if r.who == "gpusched"]
        pairs = [(x, y) for x in pr for y in ours if x.pair == y.pair]
        ok = [(x, y) for x, y in pairs if x.ok and y.ok]
        rw = [x.wall_s / y.wall_s for x, y in ok]
        rc = [x.cpu_s / y.cpu_s for x, y in ok]
        rows.append(
            (
                wl,
                pol,
                peer,
                _span([x.wall_s for x in pr], [x.ok for x in pr]),
                _span([y.wall_s for y in ours], [y.ok for y in ours]),
                _span([x.cpu_s for x in pr], [x.ok for x in pr]),
                _span([y.cpu_s for y in ours], [y.ok for y in ours]),
                f"{statistics.median(rw):.1f}x" if rw else "-",
                f"{statistics.median(rc):.1f}x" if rc else "-",
                f"{max(x.max_rss_mb for x in pr):.0f} / {max(y.max_rss_mb for y in ours):.0f}",
                f"{max(x.private_mb for x in pr):.0f} / {max(y.private_mb for y in ours):.0f}",
                _span([r.load for r in pr + ours], [True] * (len(pr) + len(ours)), "", 1),
            )
        )
    head = (
        "workload policy peer peer_wall_s gpusched_wall_s peer_cpu_s gpusched_cpu_s "
        "wall_ratio cpu_ratio max_rss_MB private_MB load"
    ).split()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _span(values: list[float], ok: list[bool], unit: str = "", digits: int = 2) -> str:
    good = [v for v, o in zip(values, ok, strict=True) if o]
    if not good:
        return "failed" if values else "-"
    lo, hi = min(good), max(good)
    text = f"{lo:.{digits}f}" if lo == hi else f"{lo:.{digits}f}-{hi:.{digits}f}"
    return (
        text + unit + ("" if len(good) == len(values) else f" ({len(values) - len(good)} failed)")
    )


if __name__ == "__main__":
    sys.exit(main())
