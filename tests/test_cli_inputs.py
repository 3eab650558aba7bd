"""Inputs the commands treat alike: policy specs with spaces, output files' folders, and
a sweep's dry run reading its traces and clusters."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpusched.experiments.run import PolicySpec
from gpusched.experiments.sweep import parse_spec
from tests.helpers import invoke, one_line_error

# --- policy specs: the whitespace around name, keys and values is not part of the label ---


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        (" fifo", "fifo"),
        ("fifo ", "fifo"),
        ("fifo:", "fifo"),
        (" tiresias : thresholds = 100 ", "tiresias:thresholds=100"),
        ("tiresias:thresholds=3250, 7200", "tiresias:thresholds=3250,7200"),
        ("tiresias:thresholds=3250,7200", "tiresias:thresholds=3250,7200"),
    ],
)
def test_policy_spec_drops_surrounding_whitespace(text: str, normal: str) -> None:
    spec = PolicySpec.parse(text)
    assert spec.text == normal
    assert spec.label(spec.name) == normal
    assert spec.name == normal.partition(":")[0]


def test_replay_label_and_manifest_without_spaces(tmp_path: Path) -> None:
    r = invoke("replay", "tiny", "-P", " tiresias : thresholds=100 ", "-o", tmp_path / "r")
    assert r.exit_code == 0, r.output
    assert "\ntiresias:thresholds=100 " in r.output
    assert " tiresias : " not in r.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["policy"] == "tiresias"


def test_compare_labels_and_run_folders_without_spaces(tmp_path: Path) -> None:
    r = invoke("compare", "tiny", "-P", " fifo", "-P", "sjf ", "-o", tmp_path / "c")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "00-fifo",
        "01-sjf",
        "comparison.csv",
    ]
    with open(tmp_path / "c" / "comparison.csv", newline="") as f:
        assert [row["policy"] for row in csv.DictReader(f)] == ["fifo", "sjf"]


def test_sweep_policies_are_named_as_replay_names_them() -> None:
    spec = parse_spec('traces = ["tiny"]\npolicies = [" tiresias : thresholds = 100 ", "sjf:"]')
    assert spec.policies == ("tiresias:thresholds=100", "sjf")
    with pytest.raises(Exception, match="lists 'fifo' twice"):
        parse_spec('traces = ["tiny"]\npolicies = [" fifo", "fifo:"]')


# --- output files: a missing folder is made, as workload -o and replay -o make theirs ---


def _trace_outputs(tmp_path: Path, out: Path) -> dict[str, list[object]]:
    src = tmp_path / "src.csv"
    if not src.exists():
        assert invoke("trace", "synth", "-n", "5", "-o", src).exit_code == 0
    fixture = Path(__file__).parent / "fixtures" / "philly_pollux.csv"
    return {
        "trace synth": ["trace", "synth", "-n", "5", "-o", out],
        "trace annotate": ["trace", "annotate", src, "-o", out],
        "trace convert": ["trace", "convert", src, out],
        "trace import": ["trace", "import", "philly-pollux", fixture, "-o", out],
        "workload": ["workload", "synth-default", "--jobs", "5", "-o", out],
    }


@pytest.mark.parametrize(
    "command", ["trace synth", "trace annotate", "trace convert", "trace import", "workload"]
)
def test_trace_outputs_make_a_missing_folder(tmp_path: Path, command: str) -> None:
    out = tmp_path / "new" / "deeper" / "t.csv"
    r = invoke(*_trace_outputs(tmp_path, out)[command])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("job_id,") or "job_id" in out.read_text().splitlines()[0]


@pytest.mark.parametrize(
    "command", ["trace synth", "trace annotate", "trace convert", "trace import", "workload"]
)
def test_trace_outputs_refuse_a_folder_or_a_path_under_a_file(tmp_path: Path, command: str) -> None:
    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "file").write_text("")
    option = "OUTPUT" if command == "trace convert" else "--output"
    one_line_error(
        invoke(*_trace_outputs(tmp_path, tmp_path / "dir.csv")[command]),
        f"{option} {tmp_path / 'dir.csv'}: is a folder; expected a trace file",
    )
    one_line_error(
        invoke(*_trace_outputs(tmp_path, tmp_path / "file" / "t.csv")[command]),
        f"{option} {tmp_path / 'file' / 't.csv'} is under {tmp_path / 'file'}, which is a file",
    )


def test_write_trace_makes_the_folder(tmp_path: Path) -> None:
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace, write_trace

    trace = read_trace(resolve_trace("tiny"))
    for name in ("t.csv", "t.csv.gz", "t.parquet"):
        write_trace(trace, tmp_path / name.replace(".", "_") / "x" / name)
        assert len(read_trace(tmp_path / name.replace(".", "_") / "x" / name)) == len(trace)


# --- sweep --dry-run reads each distinct trace once, and reports its first problem ---


def _spec(tmp_path: Path, traces: list[str], extra: str = "") -> Path:
    spec = tmp_path / "s.toml"
    spec.write_text(
        f"traces = {json.dumps(traces)}\npolicies = ['fifo', 'sjf']\nseeds = [0, 1]\n{extra}"
    )
    return spec


def test_dry_run_reports_a_malformed_trace(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text(
        "job_id,submit_time,num_gpus,duration\na,0,1,10\nb,x,1,10\nc,0,-1,10\n"
    )
    spec = _spec(tmp_path, ["tiny", "bad.csv"])
    r = invoke("sweep", spec, "--dry-run", "-o", tmp_path / "out")
    one_line_error(
        r,
        f"{spec}: 'traces' entry 'bad.csv': {tmp_path / 'bad.csv'}:3: column 'submit_time'",
    )
    assert not (tmp_path / "out").exists()


def test_dry_run_reports_jobs_too_big_for_a_cluster(tmp_path: Path) -> None:
    (tmp_path / "big.csv").write_text("job_id,submit_time,num_gpus,duration\na,0,100,10\n")
    spec = _spec(tmp_path, ["big.csv"], "clusters = ['default', 'testbed-4x4']\n")
    one_line_error(
        invoke("sweep", spec, "--dry-run", "-o", tmp_path / "out"),
        f"{spec}: 'traces' entry 'big.csv' on 'clusters' entry 'default': ",
        "need more GPUs than the cluster has",
    )
    spec = _spec(tmp_path, ["big.csv"], "drop_oversized = true\n")
    r = invoke("sweep", spec, "--dry-run", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "4 cells, 0 finished, 4 to run" in r.output


def test_dry_run_reads_each_trace_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpusched.io.trace as trace_io

    assert invoke("trace", "synth", "-n", "20", "-o", tmp_path / "t.csv").exit_code == 0
    calls: list[str] = []
    real = trace_io.read_trace

    def counted(path: object, *args: object, **kwargs: object) -> object:
        calls.append(Path(str(path)).name)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(trace_io, "read_trace", counted)
    # each trace on two clusters, under two policies and two seeds: 8 cells per trace
    spec = _spec(tmp_path, ["t.csv", "tiny"], "clusters = ['default', 'testbed-4x4']\n")
    r = invoke("sweep", spec, "--dry-run", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "16 cells, 0 finished, 16 to run" in r.output
    assert sorted(calls) == ["t.csv", "tiny.csv"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("second", ["fifo", " fifo", "fifo:"])
def test_compare_refuses_a_policy_given_twice(tmp_path: Path, second: str) -> None:
    r = invoke("compare", "tiny", "-P", "fifo", "-P", "sjf", "-P", second, "-o", tmp_path / "c")
    assert r.exit_code == 2
    assert one_line_error(r) == (
        "error: --policy 1 and 3 are both labelled 'fifo' (their rows could not be told "
        "apart): give each policy once"
    )
    assert not (tmp_path / "c").exists()


# --- empty names (an unset shell variable) and byte-order marks ---------------------------


@pytest.mark.parametrize("command", [["replay"], ["compare", "-P", "fifo"]])
@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_trace_name_is_refused(command: list[str], name: str) -> None:
    """``gpusched replay "$TRACE"`` with TRACE unset replayed the bundled philly-2000
    without a word (only a missing TRACE means the default)."""
    r = invoke(command[0], name, *command[1:])
    one_line_error(r, f"trace: an empty name {name!r}", "leave TRACE out for the default")


@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_cluster_name_is_refused(name: str) -> None:
    """``-c ''`` was read as the path '.', and refused as 'error: .: is a folder'."""
    r = invoke("replay", "tiny", "-c", name)
    one_line_error(r, f"cluster: an empty name {name!r}", "bundled name (")


def test_an_empty_sweep_spec_name_is_refused() -> None:
    """``gpusched sweep ''`` was read as the path '.', and refused as '.: is a folder'."""
    one_line_error(invoke("sweep", "", "--dry-run"), "sweep spec: an empty name ''")


def test_toml_files_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    """A cluster file or sweep spec saved with a UTF-8 BOM (as the trace reader accepts
    one) was refused as 'invalid TOML: Invalid statement (at line 1, column 1)'."""
    from gpusched.experiments.sweep import load_spec
    from gpusched.io.cluster import load_cluster

    cluster = tmp_path / "c.toml"
    text = '[cluster]\nname = "c"\n[[servers]]\ncount = 2\ngpus = 4\ngpu_type = "V100"\n'
    cluster.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_cluster(cluster).n_gpus == 8
    spec = tmp_path / "s.toml"
    spec.write_bytes(b'\xef\xbb\xbftraces = ["tiny"]\npolicies = ["fifo"]\n')
    assert load_spec(spec).policies == ("fifo",)
    r = invoke("replay", "tiny", "-c", cluster)
    assert r.exit_code == 0, r.output
    # a byte that is not UTF-8 after the mark: its offset in the file as it is
    cluster.write_bytes(b"\xef\xbb\xbf\xff")
    r = invoke("replay", "tiny", "-c", cluster)
    one_line_error(r, "not UTF-8 text (byte 0xff at offset 3)")


def test_sweep_refuses_a_results_csv_it_did_not_write(tmp_path: Path) -> None:
    """The sweep replaces OUT/results.csv at its end: a file of that name that is not a
    sweep's results (a user's own table) was overwritten without a word."""
    from gpusched.experiments.sweep import _SWEEP_HEADER
    from gpusched.results.metrics import FIXED_COLUMNS

    assert FIXED_COLUMNS[: len(_SWEEP_HEADER)] == _SWEEP_HEADER
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["tiny"]\npolicies = ["fifo"]\n')
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.csv").write_text("my,own,numbers\n1,2,3\n")
    for extra in ([], ["--dry-run"]):
        r = invoke("sweep", spec, "-o", out, "-j", "1", *extra)
        one_line_error(r, f"output folder {out} holds results.csv, which is not a sweep's")
    assert (out / "results.csv").read_text() == "my,own,numbers\n1,2,3\n"
    assert sorted(p.name for p in out.iterdir()) == ["results.csv"]
    # the sweep's own folder is still taken up again
    sweep = tmp_path / "sweep"
    assert invoke("sweep", spec, "-o", sweep, "-j", "1").exit_code == 0
    r = invoke("sweep", spec, "-o", sweep, "-j", "1")
    assert r.exit_code == 0, r.output


def test_an_output_file_never_replaces_a_runs_results(tmp_path: Path) -> None:
    """``diff A B -o A/jobs.csv`` replaced run A's jobs.csv with the diff (after reading
    it), and every reader then refused run A; ``trace synth -o A/timeline.csv`` or
    ``workload -o CMP/comparison.csv`` did the same to a run or a comparison."""
    a, b, cmp = tmp_path / "a", tmp_path / "b", tmp_path / "cmp"
    assert invoke("replay", "tiny", "-P", "fifo", "-o", a).exit_code == 0
    assert invoke("replay", "tiny", "-P", "srtf", "-o", b).exit_code == 0
    assert invoke("compare", "tiny", "-P", "fifo", "-o", cmp).exit_code == 0
    before = {p: p.read_bytes() for p in [*a.iterdir(), cmp / "comparison.csv"]}
    cases = [
        (["diff", a, b, "-o", a / "jobs.csv"], "--out", a / "jobs.csv", a, "manifest.json"),
        (["trace", "synth", "-n", "3", "-o", a / "timeline.csv"], "--output",
         a / "timeline.csv", a, "manifest.json"),
        (["workload", "synth-default", "-n", "3", "-o", cmp / "comparison.csv"], "--output",
         cmp / "comparison.csv", cmp, "comparison.csv"),
    ]  # fmt: skip
    for args, option, path, folder, marker in cases:
        one_line_error(
            invoke(*args),
            f"{option} {path} would replace a file of the results in {folder} "
            f"(a folder gpusched wrote: it holds {marker})",
        )
    assert {p: p.read_bytes() for p in before} == before
    assert invoke("explain", a).exit_code == 0
    # a file of the user's own there (a diff, a plot saved before) is written as ever
    for _ in range(2):
        r = invoke("diff", a, b, "-o", a / "diff.csv")
        assert r.exit_code == 0, r.output
    assert (a / "diff.csv").read_text().startswith("job_id,")


@pytest.mark.parametrize(
    ("args", "param"),
    [
        (["explain", ""], "'run'"),
        (["plot", ""], "'runs'"),
        (["plot", "RUN", " "], "'runs'"),
        (["trace", "import", "philly-pollux", "", "-o", "x.csv"], "'src'"),
        (["trace", "convert", "tiny", ""], "'output'"),
        (["trace", "synth", "-n", "3", "-o", ""], "'--output' / '-o'"),
        (["trace", "annotate", "tiny", "-o", ""], "'--output' / '-o'"),
        (["workload", "synth-default", "-n", "3", "-o", ""], "'--output' / '-o'"),
        (["workload", "edge-cloud-testbed", "-o", "w.csv", "--cluster-out", ""], "'--cluster-out'"),
        (["workload", "a-srpt", "-n", "9", "--source", "", "-o", "w.csv"], "'--source'"),
        (["plot", "RUN", "--save", ""], "'--save' / '-s'"),
    ],
)  # fmt: skip
def test_an_empty_path_is_refused(
    args: list[str], param: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Path("") is ".", the current folder: ``plot "$RUN"`` with RUN unset plotted the
    runs found in it, and an empty -o was refused as '--output .: is a folder'."""
    monkeypatch.chdir(tmp_path)
    assert invoke("replay", "tiny", "-o", "RUN").exit_code == 0  # a run here, in "."
    r = invoke(*args)
    one_line_error(r, f"Invalid value for {param}: an empty name", "expected a path")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["RUN"]


def test_trace_stats_refuses_an_empty_cluster() -> None:
    """``trace stats T -c ''`` printed the stats without the offered load, exit 0."""
    one_line_error(invoke("trace", "stats", "tiny", "-c", ""), "cluster: an empty name ''")


@pytest.mark.parametrize(
    "rows", ["", "a,0,1,10\nb,0,2,20\n"], ids=["no-job", "all-at-once"]
)  # fmt: skip
def test_trace_stats_json_is_json_without_a_span(rows: str, tmp_path: Path) -> None:
    """Offered load over a span of 0 is undefined: --json printed NaN or Infinity, which
    JSON has no words for (jq and every strict parser refuse the output)."""
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n" + rows)
    r = invoke("trace", "stats", trace, "-c", "default", "--json")
    assert r.exit_code == 0, r.output

    def strict(word: str) -> None:
        raise ValueError(f"not JSON: {word}")

    assert json.loads(r.output, parse_constant=strict)["offered_load"] is None
    r = invoke("trace", "stats", trace, "-c", "default")
    assert r.exit_code == 0, r.output
    assert "offered_load  -  (no span: no job, or all submitted at once)" in r.output


def test_a_policy_file_that_is_a_folder(tmp_path: Path) -> None:
    """-P mine.py naming a folder said 'policy file not found' (it is there, a folder)."""
    (tmp_path / "mine.py").mkdir()
    r = invoke("replay", "tiny", "-P", tmp_path / "mine.py")
    one_line_error(r, f"policy file {tmp_path / 'mine.py'} is a folder, expected a .py file")


def test_a_pipe_for_a_trace_or_policy_file(tmp_path: Path) -> None:
    """A named pipe (or <(zcat ...), /dev/null) given as TRACE or -P FILE.py: it is there,
    but not a file gpusched reads; the error said 'not found'."""
    import os

    pipe = tmp_path / "t.csv"
    os.mkfifo(pipe)
    one_line_error(invoke("replay", pipe), f"trace {pipe} is not a regular file (a pipe")
    policy = tmp_path / "mine.py"
    os.mkfifo(policy)
    r = invoke("replay", "tiny", "-P", policy)
    one_line_error(r, f"policy file {policy} is not a regular file, expected a .py file")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_write_that_fails_names_the_output(tmp_path: Path) -> None:
    """/proc takes no new file (ENOENT even for root): diff -o named its hidden temporary
    file ('file not found: /proc/.x.csv.<pid>.tmp'), workload --cluster-out said 'file
    not found' for a file it was asked to write."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke("replay", "tiny", "-o", a).exit_code == 0
    assert invoke("replay", "tiny", "-P", "srtf", "-o", b).exit_code == 0
    for args, needle in [
        (["diff", a, b, "-o", "/proc/x.csv"], "error: --out /proc/x.csv: cannot write (no such"),
        (["workload", "edge-cloud-testbed", "-o", tmp_path / "w.csv", "--cluster-out",
          "/proc/x.toml"], "error: --cluster-out /proc/x.toml: cannot write (no such"),
    ]:  # fmt: skip
        r = invoke(*args)  # (diff prints its summary first: the error is the last line)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        last = r.output.strip().splitlines()[-1]
        assert last.startswith(needle) and ".tmp" not in last, r.output


def test_sweep_dry_run_refuses_plot(tmp_path: Path) -> None:
    """sweep --dry-run --plot listed the cells and drew nothing, without a word."""
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["tiny"]\npolicies = ["fifo"]\n')
    r = invoke("sweep", spec, "--dry-run", "--plot", "-o", tmp_path / "o")
    one_line_error(r, "--plot draws a sweep's results, and --dry-run runs nothing")


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        (["--tight-spread", "0.01"], "--tight-spread shapes"),
        (["--group-spread", "1", "--tight-groups", "0.5"], "--group-spread, --tight-groups shape"),
    ],
)
def test_a_srpt_synthesised_groups_refuse_the_recurring_options(
    options: list[str], flags: str, tmp_path: Path
) -> None:
    """--groups synthesised with --group-spread/--tight-groups/--tight-spread (options of
    the recurring groups) wrote the same trace as without them, exit 0."""
    r = invoke("workload", "a-srpt", "-n", "50", "--groups", "synthesised", *options,
               "-o", tmp_path / "w.csv")  # fmt: skip
    one_line_error(r, f"{flags} the recurring groups (--groups recurring)")
    assert not (tmp_path / "w.csv").exists()


def test_a_srpt_load_basis_needs_a_load(tmp_path: Path) -> None:
    """--load 0 (the source's own arrival times) with --load-basis wrote the same trace as
    without it, exit 0."""
    r = invoke("workload", "a-srpt", "-n", "50", "--load", "0", "--load-basis", "all",
               "-o", tmp_path / "w.csv")  # fmt: skip
    one_line_error(r, "--load-basis sets the jobs --load counts; --load 0 keeps the source's")


def test_a_comparison_or_sweep_folder_given_for_one_run(tmp_path: Path) -> None:
    """explain/diff/plot --gantt on a comparison's or a sweep's folder said 'no
    manifest.json (a run folder gets it when its run is complete)', as if a run were
    half-written; they name what the folder is and one of its runs now."""
    cmp = tmp_path / "cmp"
    assert invoke("compare", "tiny", "-P", "fifo", "-P", "srtf", "-o", cmp).exit_code == 0
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["tiny"]\npolicies = ["fifo"]\n')
    sweep = tmp_path / "sweep"
    assert invoke("sweep", spec, "-o", sweep, "-j", "1").exit_code == 0
    cell = next((sweep / "cells").iterdir())
    for args in (["explain", cmp], ["plot", cmp, "--gantt"], ["diff", cmp, cmp]):
        one_line_error(
            invoke(*args),
            f"{cmp} holds a comparison (comparison.csv), not one run: give one of its run "
            f"folders, e.g. {cmp / '00-fifo'}",
        )
    one_line_error(invoke("explain", sweep), f"{sweep} holds a sweep (results.csv)", str(cell))


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["trace", "import", "philly-pollux", "{fifo}", "-o", "i.csv"], ["SRC", "p.csv"]),
        (["workload", "a-srpt", "-n", "5", "--source", "{fifo}", "-o", "w.csv"], ["--source"]),
        (
            ["workload", "lazer-philly", "-n", "5", "--source", "{fifo}", "-o", "w.csv"],
            ["--source"],
        ),
    ],
    ids=["trace-import", "a-srpt-source", "lazer-philly-source"],
)
def test_a_pipe_as_an_input_is_refused_not_waited_on(tmp_path: Path, monkeypatch, args, needles):
    """These read a named pipe until something wrote to it: the command hung."""
    import os

    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "p.csv")
    r = invoke(*[a.replace("{fifo}", "p.csv") for a in args])
    one_line_error(r, *needles, "p.csv: not a regular file (a pipe or a device)")
    assert not (tmp_path / args[-1]).exists()
