"""Entry points found cheaply (gpusched.core.plugins): the same as importlib.metadata's, and
without importing it when no installed distribution declares the group."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points as metadata_entry_points

from gpusched.core import plugins

GROUP = "gpusched.jobmodels"


def test_a_declared_group_is_found_as_importlib_metadata_finds_it(tmp_path, monkeypatch):
    info = tmp_path / "gpusched_fake_model-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gpusched-fake-model\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nfake = json:dumps\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = plugins.entry_points(GROUP)
    assert [(e.name, e.value) for e in found] == [("fake", "json:dumps")]
    assert found == list(metadata_entry_points(group=GROUP))


def test_no_declaration_no_entry_points(tmp_path, monkeypatch):
    info = tmp_path / "other-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[console_scripts]\nother = json:dumps\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.entry_points(GROUP) == list(metadata_entry_points(group=GROUP)) == []


def test_what_a_glance_cannot_read_goes_to_importlib_metadata(tmp_path, monkeypatch):
    egg = tmp_path / "old.egg"
    egg.write_bytes(b"")
    monkeypatch.syspath_prepend(str(egg))  # a file on the path (a zip)
    assert plugins._maybe_declared(GROUP)


def test_a_plain_replay_does_not_import_importlib_metadata(tmp_path):
    code = (
        "import sys\n"
        "from gpusched.cli import app\n"
        "try:\n"
        "    app(['replay', 'tiny', '-P', 'fifo', '-o', 'out'])\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        "print(sorted(m for m in ('importlib.metadata', 'numpy.ma', 'numpy.random', 'pydantic')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"
