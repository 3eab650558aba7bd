"""Bad inputs of the edge-cloud family: one line ``error:`` naming file, line and field, exit 2.

Each case was accepted before (issue 31): a cluster with two unbounded clouds ran on the last
one; ``chunks`` written ``1_0`` or with full-width digits read as 10; ``bw_mbps=1e-300``
ran with an average JCT of 1e300 s; values whose chunk time underflows or overflows made a
policy divide by zero (reported as the policy's failure, not the trace row's).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpusched.cli import app

runner = CliRunner()

COLUMNS = [
    "job_id",
    "submit_time",
    "num_gpus",
    "chunks",
    "batches",
    "epochs",
    "worker_type",
    "batch_time",
    "update_time",
    "grad_mb",
    "bw_mbps",
]
GOOD = {
    "job_id": "x",
    "submit_time": "0",
    "num_gpus": "1",
    "chunks": "2",
    "batches": "1",
    "epochs": "1",
    "worker_type": "a",
    "batch_time": "4",
    "update_time": "0",
    "grad_mb": "62.5",
    "bw_mbps": "1000",
}
EDGE = (
    '[cluster]\nname = "ec"\n'
    '[[servers]]\ncount = 1\ngpus = 1\ngpu_type = "g"\ntier = "edge"\ndelay_s = 1\n'
    "workers = { a = 1 }\nps = 1\n"
)
CLOUD = '[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\ndelay_s = {d}\nunbounded = true\n'


def write(tmp: Path, rows: list[dict], toml: str) -> tuple[str, str]:
    trace = tmp / "t.csv"
    with trace.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    cluster = tmp / "c.toml"
    cluster.write_text(toml, encoding="utf-8")
    return str(trace), str(cluster)


def one_line_error(args: list[str], *needles: str) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert line.startswith("error: ") and len(line.splitlines()) == 1, line
    for needle in needles:
        assert needle in line, line
    return line


def test_two_unbounded_clouds_are_refused(tmp_path):
    toml = EDGE + CLOUD.format(d=15) + CLOUD.format(d=1)
    trace, cluster = write(tmp_path, [GOOD], toml)
    one_line_error(
        ["replay", trace, "-c", cluster, "-P", "a-online"],
        "c.toml",
        "servers[2].unbounded",
        "at most one unbounded cloud",
        "servers[1]",
    )
