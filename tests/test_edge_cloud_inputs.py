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


@pytest.mark.parametrize(
    ("column", "value", "needles"),
    [
        ("chunks", "1_0", ["column 'chunks'", "'1_0'"]),
        ("chunks", "\uff11\uff10", ["column 'chunks'"]),  # full-width "10"
        ("epochs", "\uff12", ["column 'epochs'"]),
        ("batches", "2 ", []),  # (surrounding blanks are fine: a control)
        ("grad_mb", "6_2.5", ["column 'grad_mb'"]),
        ("bw_mbps", "1e-300", ["'grad_mb', 'bw_mbps', 'unit_s'", "1e+303 slots"]),
        ("batch_time", "1e-300", ["'batch_time'", "even in the cloud"]),
        ("batch_time", "1e300", ["'batch_time'", "even in the cloud"]),
        ("epochs", "1000000000", []),  # a control: E B (m + G + comm) = 5e9 slots is fine
        ("chunks", "100000", ["column 'chunks'", "one after another"]),
    ],
)
def test_bad_chunk_values_are_one_line_errors(tmp_path, column, value, needles):
    row = dict(GOOD, job_id="y", **{column: value})
    if column == "chunks" and value == "100000":
        row["epochs"] = "100000"  # 1e5 chunks of 4e5 (+ comm) slots back to back: 4e10
    trace, cluster = write(tmp_path, [GOOD, row], EDGE + CLOUD.format(d=15))
    args = ["replay", trace, "-c", cluster, "-P", "a-online", "--json"]
    if not needles:
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        return
    one_line_error(args, "t.csv:3:", *needles)


def test_a_chunk_rate_the_engine_cannot_use_names_the_row():
    """A job model whose rate is 0 (a division by zero in any policy) is refused when the
    task book is built, naming the job's row, not when a policy divides by it."""
    from types import SimpleNamespace

    import numpy as np

    from gpusched.core.tasks import TaskBook, worker_layout
    from gpusched.errors import TraceError
    from gpusched.io.cluster import load_cluster

    parents = SimpleNamespace(job_id=np.array(["a", "b"]), row=np.array([0, 1]), source="t.csv")
    tasks = SimpleNamespace(
        parent=np.array([0, 1]),
        first=np.array([0, 1, 2]),
        parents=parents,
        gang=np.array([1, 1]),
        type_name=np.array(["a", "a"], dtype=object),
        rate=lambda job, zeta: 0.0 if job == 1 and zeta == 0 else 1.0,
    )
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.toml"
        path.write_text(EDGE + CLOUD.format(d=15))
        layout = worker_layout(load_cluster(path), 2)
    with pytest.raises(TraceError, match=r"t\.csv:3: job 'b'.*rate of 0\.0 at zeta = 0"):
        TaskBook(tasks, layout, None, None)
