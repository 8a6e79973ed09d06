"""The pruned search for the name at a position finds what parso's own search finds, everywhere."""

from __future__ import annotations

import os

import parso
import pytest
from parso.python.tree import PythonMixin

from staticexec.analysis.parsosearch import _parso_search, name_of_position

SOURCES = [
    os.path.join(os.path.dirname(parso.__file__), "python", "tree.py"),
    os.path.join(os.path.dirname(__file__), os.pardir, "staticexec", "analysis", "resolve.py"),
]
BROKEN = "def f(x:\n    return x +\nclass C(:\n  y = [1, 2\nz = y.w\n"


def _head(path: str, lines: int = 200) -> str:
    """The first lines of a file: long enough for nesting, cut anywhere (a cut body is parsed with errors)."""
    with open(path, encoding="utf-8") as handle:
        return "".join(handle.readlines()[:lines])


def _parsos_own(module, position):
    """parso's own search, with parso's own method on every node it recurses into (importing parsosearch puts
    the pruned search in its place)."""
    PythonMixin.get_name_of_position = _parso_search
    try:
        return _parso_search(module, position)
    finally:
        PythonMixin.get_name_of_position = name_of_position


@pytest.mark.parametrize("text", [_head(p) for p in SOURCES] + [BROKEN])
def test_the_same_leaf_as_parso_at_every_position(text):
    module = parso.parse(text)
    lines = text.splitlines() + [""]
    found = 0
    for line, body in enumerate(lines, 1):
        for column in range(len(body) + 2):
            expected = _parsos_own(module, (line, column))
            assert name_of_position(module, (line, column)) is expected
            found += expected is not None
    assert found > len(lines)  # names at many positions: the comparison is not of two Nones
