"""The reference pages say what the command line does: every option of every command is
in docs/cli.md's "Options by command", and the files the front pages name exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from gpusched.cli import app

ROOT = Path(__file__).resolve().parents[1]
CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _commands() -> list[tuple[str, Any]]:
    """Every leaf command as ``("trace import", command)``."""
    out: list[tuple[str, Any]] = []

    def walk(prefix: str, cmd: Any) -> None:
        if hasattr(cmd, "commands"):  # a group (typer's own copy of click's)
            for name, sub in cmd.commands.items():
                walk(f"{prefix} {name}".strip(), sub)
        else:
            out.append((prefix, cmd))

    walk("", typer.main.get_command(app))
    return out


def _section(path: str) -> str:
    """The text of the "Options by command" subsection whose heading names ``path``'s
    first word (`gpusched trace ...` holds every trace command)."""
    part = CLI_MD.split("## Options by command", 1)[1].split("\n## ", 1)[0]
    first = path.split()[0]
    for block in part.split("\n### ")[1:]:
        heading = block.splitlines()[0]
        if re.search(rf"`gpusched {re.escape(first)}\b", heading):
            return block
    raise AssertionError(f"docs/cli.md has no section for gpusched {path}")


COMMANDS = _commands()


def test_every_command_is_found() -> None:
    names = {p for p, _ in COMMANDS}
    assert {"replay", "compare", "sweep", "warm-up", "workload", "trace import"} <= names


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_option_is_in_cli_md(path: str, cmd: Any) -> None:
    text = _section(path)
    missing = [
        opt
        for param in cmd.params
        if param.param_type_name == "option" and "--help" not in param.opts
        for opt in param.opts
        if opt.startswith("--") and f"`{opt}" not in text
    ]
    assert not missing, f"gpusched {path}: {missing} not in docs/cli.md's section"


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_files_the_commands_name_exist(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:bash|console)?\n(.*?)```", text, flags=re.S)
    named = {
        m.rstrip(".,;:)")
        for block in blocks
        for m in re.findall(r"\b(?:examples|traces|clusters)/[\w./-]+", block)
    }
    assert named, page
    assert not [p for p in sorted(named) if not (ROOT / p).exists()]


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_option_says_what_it_does(path: str, cmd: Any) -> None:
    bare = [
        param.opts[0]
        for param in cmd.params
        if param.param_type_name == "option" and not (param.help or "").strip()
    ]
    assert not bare, f"gpusched {path}: options without a --help text: {bare}"
