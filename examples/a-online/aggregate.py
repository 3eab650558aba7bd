"""Tables of docs/a-online.md from the run folders of examples/a-online/run.sh.

Usage: python examples/a-online/aggregate.py OUT_DIR

For each experiment (testbed, fig7-jobsN, fig8-serversM) and policy: the mean over seeds
(and the range) of the JCT rate (total JCT over SRTF's on the same workload), the average
JCT and waiting (slots), the edge workers' utilisation, the preemptions, the jobs sent
wholly to the cloud and the communication time.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

KEYS = (
    ("jct_rate", "JCT rate", "{:.3f}"),
    ("avg_jct_s", "avg JCT", "{:,.0f}"),
    ("avg_wait_s", "avg wait", "{:,.0f}"),
    ("gpu_utilization", "edge util", "{:.2f}"),
    ("n_preemptions", "preemptions", "{:,.0f}"),
    ("n_cloud_jobs", "cloud jobs", "{:.0f}"),
    ("total_comm_s", "comm", "{:,.0f}"),
)


def main(out: Path) -> None:
    runs: dict[str, dict[str, list[dict[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for comp in sorted(out.glob("*-s*/comparison.csv")):
        exp = re.sub(r"-s\d+$", "", comp.parent.name)
        with comp.open() as fh:
            for row in csv.DictReader(fh):
                runs[exp][row["policy"]].append(row)

    def order(name: str) -> tuple[str, int]:
        m = re.match(r"(\D+?)(\d+)$", name)
        return (m.group(1), int(m.group(2))) if m else (name, 0)

    for exp in sorted(runs, key=order):
        seeds = len(next(iter(runs[exp].values())))
        print(f"\n### {exp} ({seeds} seeds: mean, [min, max])\n")
        print("| policy | " + " | ".join(label for _, label, _ in KEYS) + " |")
        print("| --- " * (len(KEYS) + 1) + "|")
        for pol, rows in runs[exp].items():
            cells = []
            for key, _, fmt in KEYS:
                vals = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
                if not vals:
                    cells.append("-")
                    continue
                mean = sum(vals) / len(vals)
                cells.append(
                    fmt.format(mean)
                    + (f" [{fmt.format(min(vals))}, {fmt.format(max(vals))}]" if len(vals) > 1 else "")
                )
            print(f"| {pol} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
