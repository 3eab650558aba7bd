"""registry: a policy's summary is its module docstring's first line, read without
importing the module and without parsing more than the module's first statement."""

from __future__ import annotations

import ast

import pytest

from gpusched.core import registry
from gpusched.io.resources import bundled_dir


def full_parse_summary(text):
    """The summary as parsing the whole module gives it: its docstring's first paragraph,
    on one line (pollux's, over two lines, was cut mid-sentence)."""
    try:
        doc = ast.get_docstring(ast.parse(text))
    except SyntaxError:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else ""


def test_bundled_policy_summaries_are_their_docstrings_first_paragraphs():
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


def test_a_bundled_name_loads_without_listing_installed_packages(monkeypatch):
    """A bundled policy comes first, so its file is loaded without a scan of every
    installed package's entry points (about 20 ms); other names still get the scan."""

    def scan():
        raise AssertionError("entry points scanned")

    monkeypatch.setattr(registry, "available_policies", scan)
    assert registry.load_policy_class("srtf-periodic").name == "srtf-periodic"
    assert registry.load_policy_class("fifo").name == "fifo"
    for name in ("srtf_periodic", "no-such-policy"):
        with pytest.raises(AssertionError, match="entry points scanned"):
            registry.load_policy_class(name)
    monkeypatch.undo()
    from gpusched.errors import PolicyError

    with pytest.raises(PolicyError, match="unknown policy 'srtf_periodic'"):
        registry.load_policy_class("srtf_periodic")


def test_a_policys_lazy_generator_draws_default_rngs_stream():
    import pickle

    import numpy as np

    lazy, real = registry.LazyGenerator(7), np.random.default_rng(7)
    assert lazy.integers(0, 10**9, 5).tolist() == real.integers(0, 10**9, 5).tolist()
    again = pickle.loads(pickle.dumps(lazy))  # a used one goes on where it stood
    assert again.random(3).tolist() == real.random(3).tolist()
    fresh = pickle.loads(pickle.dumps(registry.LazyGenerator(7)))
    assert fresh.random() == np.random.default_rng(7).random()
    pol = registry.make_policy(registry.load_policy_class("fifo-ps"), {}, 3)
    assert (
        pol.rng.integers(1, 31, 4).tolist() == np.random.default_rng(3).integers(1, 31, 4).tolist()
    )
