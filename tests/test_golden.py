"""Golden schedules: every small bundled trace x every policy, as a syrupy single-file snapshot.

The bytes of the event log are the contract: a change to any schedule shows up as a
snapshot diff. After an intended change of behaviour, review the diff and run
``python -m pytest tests/test_golden.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from gpusched.core.state import STATUS_NAMES
from gpusched.experiments.run import replay
from tests.helpers import GANG_POLICIES, MODEL_POLICIES, ROLE_POLICIES, TASK_POLICIES


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    _file_extension = "txt"  # syrupy 4 (pinned by pytest-textual-snapshot)
    file_extension = "txt"  # syrupy >= 5


def event_log(result) -> str:
    st = result.state
    lines = ["job_id,submit,first_start,finish,preemptions"]
    for i, jid in enumerate(result.jobs.job_id):
        submit, start, finish = (
            float(a[i]) for a in (st.job_submit, st.job_first_start, st.job_finish)
        )
        line = f"{jid},{submit!r},{start!r},{finish!r},{st.job_n_preempt[i]}"
        if "ledger" in result.extra:  # a run of jobs placed by roles: the status too
            line += f",{STATUS_NAMES[st.job_status[i]]}"
        if "tasks" in result.extra:  # a run of chunk jobs: the worker of each chunk too
            line += f",{int(result.extra['tasks']['worker'][i])}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("cluster", ["default", "testbed-4x4"])
@pytest.mark.parametrize("policy", GANG_POLICIES)
def test_golden_tiny(policy, cluster, snapshot):
    _, result = replay("tiny", policy, cluster=cluster)
    assert event_log(result) == snapshot(extension_class=TextSnapshot)


@pytest.mark.parametrize("policy", GANG_POLICIES)
def test_golden_synth_500(policy, snapshot):
    _, result = replay("synth-500", policy, slot_s=60.0)
    assert event_log(result) == snapshot(extension_class=TextSnapshot)


@pytest.mark.parametrize("policy", TASK_POLICIES)
def test_golden_ec_30(policy, snapshot):
    _, result = replay("ec-30", policy, cluster="edge-cloud-testbed")
    assert event_log(result) == snapshot(extension_class=TextSnapshot)


@pytest.mark.parametrize("policy", ROLE_POLICIES)
def test_golden_ps_20(policy, snapshot):
    _, result = replay("ps-20", policy, cluster="pd-ors-30")
    assert event_log(result) == snapshot(extension_class=TextSnapshot)


@pytest.fixture(scope="module")
def pollux_24(tmp_path_factory):
    """The first 24 jobs of the Pollux simulator's workload 1 (goodput jobs)."""
    import numpy as np

    from gpusched.io.trace import write_trace
    from gpusched.workloads.pollux import pollux_workload

    path = tmp_path_factory.mktemp("golden") / "pollux-24.csv"
    write_trace(pollux_workload(1).take(np.arange(24)), path)
    return str(path)


@pytest.mark.parametrize("policy", [*MODEL_POLICIES, "tiresias", "fifo"])
def test_golden_pollux_24(policy, pollux_24, snapshot):
    _, result = replay(pollux_24, policy, cluster="pollux-16x4")
    assert event_log(result) == snapshot(extension_class=TextSnapshot)
