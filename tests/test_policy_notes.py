"""A policy says when a setting it was given changed nothing (its notes() hook, printed
under the run's header and kept in the manifest): the run is not silently another one."""

from __future__ import annotations

from pathlib import Path

from gpusched.experiments.run import replay
from gpusched.results.metrics import policy_notes


def test_srtf_chunk_settings_on_a_trace_without_chunks_are_noted():
    _, res = replay("tiny", "srtf:migrate=false,edge_only=false,workers=trace")
    (note,) = policy_notes(res)
    assert note == (
        "srtf: workers=trace, migrate=false, edge_only=false apply to jobs made of data "
        "chunks; this trace's jobs are not, so they changed nothing"
    )
    _, plain = replay("tiny", "srtf")
    assert policy_notes(plain) == []


def test_srtf_chunk_settings_on_chunk_jobs_are_not_noted(tmp_path: Path):
    _, res = replay("ec-30", "srtf:migrate=false", cluster="edge-cloud-testbed")
    assert policy_notes(res) == []
    # ... nor when the run stops before srtf decided anything (the note read decide()'s
    # state): every arrival 10 s later, the run cut at 5 s
    import csv

    from gpusched.io.resources import resolve_trace

    rows = list(csv.DictReader(resolve_trace("ec-30").open()))
    late = tmp_path / "late.csv"
    with late.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "submit_time": str(float(r["submit_time"]) + 10)} for r in rows)
    _, early = replay(str(late), "srtf:migrate=false", cluster="edge-cloud-testbed", until_s=5)
    assert early.state.job_first_start.size and policy_notes(early) == []
    _, one = replay("tiny", "srtf:migrate=false")
    assert policy_notes(one) == [
        "srtf: migrate=false applies to jobs made of data chunks; this trace's jobs are not, "
        "so it changed nothing"
    ]


def test_sharing_on_an_exclusive_cluster_is_noted(tmp_path: Path):
    excl = tmp_path / "excl.toml"
    excl.write_text('[cluster]\nname = "excl"\nservers = 4\ngpus_per_server = 4\n')
    for name in ("sjf-bsbf", "sjf-ffs"):
        _, res = replay("tiny", name, cluster=str(excl))
        (note,) = policy_notes(res)
        assert note.startswith(f"{name}: cluster 'excl' gives each GPU to one job")
        _, shared = replay("tiny", name, cluster="sjf-bsbf-16x4")
        assert policy_notes(shared) == []
