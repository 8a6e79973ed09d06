"""The analysis session owns every cache: an analysis fills it, a new session starts empty, and
`isolated()` gives the block its own and leaves the one before untouched."""

from __future__ import annotations

from patterns import fixtures
from staticexec.analysis import session
from staticexec.analysis.source import load_module
from staticexec.api import analyse


def test_an_analysis_fills_the_session_and_a_new_session_starts_empty():
    model = next(f for f in fixtures() if f.name == "causal_lm_wrapper")  # a model in a file of its own
    with session.isolated() as own:
        assert own.sizes() == {}
        analyse(model.root_ref, model.targets)
        sizes = own.sizes()
        for table in ("source.files", "source.parsed", "resolve.contexts"):
            assert sizes[table] > 0, table
        assert session.reset().sizes() == {} and session.current() is not own
    assert session.current() is not own


def test_isolated_leaves_the_session_before_it_untouched():
    outer = session.current()
    sf = load_module("staticexec.version")
    before = outer.sizes()
    with session.isolated() as inner:
        assert inner is session.current() and inner is not outer
        again = load_module("staticexec.version")
        assert again is not sf and again.hash == sf.hash  # read again: the new session had no copy
    assert session.current() is outer and outer.sizes() == before
    assert load_module("staticexec.version") is sf
