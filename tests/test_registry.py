"""registry: a policy's summary is its module docstring's first line, read without
importing the module and without parsing more than the module's first statement."""

from __future__ import annotations

import ast

import pytest

from gpusched.core import registry
from gpusched.io.resources import bundled_dir


def full_parse_summary(text):
    """The summary as parsing the whole module gives it."""
    try:
        doc = ast.get_docstring(ast.parse(text))
    except SyntaxError:
        return ""
    return doc.strip().splitlines()[0] if doc else ""


def test_bundled_policy_summaries_are_their_docstrings_first_lines():
    infos = registry.available_policies()
    files = [p for p in bundled_dir("policies").glob("*.py") if not p.name.startswith("_")]
    assert len(files) > 10
    for path in files:
        info = infos[path.stem.replace("_", "-")]
        want = full_parse_summary(path.read_text(encoding="utf-8"))
        assert want, path  # every bundled policy has one
        assert info.summary == want


MODULES = [
    '"""One line."""\nx = 1\n',
    '#!/usr/bin/env python\n# a comment\n\n"""After comments.\n\nMore."""\n',
    "'''Single quotes, many\nlines.'''\nimport os\n",
    '"""Implicitly" " joined."""\n',
    '"Joined over lines" \\\n    " by a backslash"\n',
    '("In brackets"\n "over two lines")\n',
    '"""Then a statement on its line."""; x = 1\n',
    'r"""Raw \\d."""\n',
    "x = 1\n'''Not a docstring.'''\n",
    "import os\n",
    "",
    "\n\n",
    '"""Unterminated\n',
    "def f(:\n",
    '"""Fine."""\nthen a syntax error (\n',
    "   '''Indented.'''\n",
    "f'''An f-string is no docstring.'''\n",
    "b'''Bytes are no docstring.'''\n",
    '"""Doc."""  # a comment\n',
    "\ufeff'''After a byte-order mark.'''\n",
]


@pytest.mark.parametrize("text", MODULES)
def test_summaries_of_awkward_modules_match_parsing_the_whole_module(tmp_path, text):
    """Where the module parses, as parsing all of it gives; where it does not, its first
    statement alone decides: a summary despite a later error, else none."""
    path = tmp_path / "mine.py"
    path.write_text(text, encoding="utf-8")
    got = registry._file_summary(path)
    try:
        ast.parse(text)
    except SyntaxError:
        assert got == ("Fine." if text.startswith('"""Fine."""') else "")
    else:
        assert got == full_parse_summary(text)
