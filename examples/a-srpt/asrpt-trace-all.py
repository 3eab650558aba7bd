"""The "where A-SRPT's waiting and slowdowns come from" table of docs/a-srpt-results.md.

Usage (from the folder holding wl/): python examples/a-srpt/asrpt-trace-all.py [WL_DIR]

Runs asrpt-trace.py on every default a-srpt workload (seeds 1-3) and prints, per workload,
the mean over seeds of A-SRPT's waiting split into its parts and its running time beyond
trace duration, in 10^6 job-seconds. About 2 minutes on 2 cores.
"""

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # examples/, for _inputs
from _inputs import need_file, need_folder  # noqa: E402

WL = sys.argv[1] if len(sys.argv) > 1 else "wl"
need_folder(WL, "the workloads' folder (gen-workloads.sh's wl/)")
FAMILIES = (
    ["jobs500", "jobs1000", "jobs2000", "jobs4000", "load0.128", "load0.256", "load1.024"]
    + [f"single{x}" for x in ("0.8", "0.6", "0.4", "0.2", "0.0")]
    + [f"single{x}-load1" for x in ("0.8", "0.6", "0.4", "0.2", "0.0")]
)
runs = [(f, HERE / "a-srpt-32x8.toml") for f in FAMILIES]
runs += [("nic-single0", HERE / f"a-srpt-250x8-nic{n}.toml") for n in (1, 5, 10, 25, 50)]

for family, _ in runs:  # every input before the first replay
    for seed in (1, 2, 3):
        need_file(f"{WL}/{family}-s{seed}.csv", "a workload of gen-workloads.sh")

print(
    "| workloads | cluster | A-SRPT wait | held in Ã1 | behind a delayed job | head did not fit"
    " | beyond | beyond in predicted-0 jobs | beyond in delayed jobs started spread |"
)
print("|---" * 9 + "|")
for family, cluster in runs:
    acc = [0.0] * 7
    for seed in (1, 2, 3):
        proc = subprocess.run(
            [sys.executable, str(HERE / "asrpt-trace.py"), f"{WL}/{family}-s{seed}.csv", str(cluster)],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:  # its own one-line error (a malformed workload), not a traceback here
            sys.stderr.write(proc.stderr.strip().splitlines()[-1] + "\n" if proc.stderr.strip() else
                             f"error: asrpt-trace.py on {WL}/{family}-s{seed}.csv failed (exit {proc.returncode})\n")
            raise SystemExit(2)
        out = proc.stdout
        w = re.search(r"waiting: total ([\d.]+); held in A~1 \(submit->release\) ([\d.]+)", out)
        d = re.search(r"others pending meanwhile ([\d.]+).*job-s pending ([\d.]+)", out)
        rows = re.findall(r"^\| ([^|]+) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", out, re.M)
        beyond = sum(float(r[3]) for r in rows)
        p0 = sum(float(r[3]) for r in rows if r[0].startswith("comm-heavy, window 0"))
        late = sum(float(r[3]) for r in rows if r[0].startswith("delayed"))
        values = [float(w[1]), float(w[2]), float(d[1]), float(d[2]), beyond, p0, late]
        acc = [a + v / 3 for a, v in zip(acc, values, strict=True)]
    print(f"| {family} | {cluster.name} | " + " | ".join(f"{v:.2f}" for v in acc) + " |")
