"""The helpers that opaque code calls are read from their source (staticexec/emit/state.py): where inspect is
asked for a helper's lines, and that each way gives the helper's own lines, so its writes are judged."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import textwrap

import pytest

from staticexec.analysis.session import isolated
from staticexec.emit import state

HELPERS = '''
import functools

SEEN = []


def remember(x):
    SEEN.append(x)
    return x


def passes_through(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x)

    return wrapper


forgets = passes_through(remember)
'''


@pytest.fixture
def helpers(tmp_path):
    path = tmp_path / "sx_helpers_for_test.py"
    path.write_text(textwrap.dedent(HELPERS))
    spec = importlib.util.spec_from_file_location("sx_helpers_for_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_a_helper_in_its_module_file_is_read_through_the_function_with_its_code_objects_lines(helpers):
    fn = helpers.remember
    assert state._source_of(fn) is fn  # inspect finds the module by its name
    assert inspect.getsourcelines(fn) == inspect.getsourcelines(fn.__code__)
    (refusal,) = state.helper_refusals(fn)
    assert refusal.line == 8 and "SEEN.append(x)" in str(refusal)


def test_a_wrapper_is_read_through_its_code_so_its_own_body_is_judged(helpers):
    """inspect would follow `__wrapped__` from the function to `remember`: the wrapper's code object is asked
    instead, and the wrapper's own body writes nothing shared."""
    fn = helpers.forgets
    assert state._source_of(fn) is fn.__code__
    assert inspect.getsourcelines(fn)[1] == 7  # what asking with the function would read: `remember`
    assert state._parsed(fn).name == "wrapper"
    assert state.helper_refusals(fn) == []


def test_a_function_whose_module_file_is_not_its_code_file_is_read_through_its_code(helpers, tmp_path):
    other = tmp_path / "elsewhere.py"
    other.write_text("def noted(x):\n    LOG.append(x)\n")
    namespace = {"__name__": helpers.__name__}
    exec(compile(other.read_text(), str(other), "exec"), namespace)
    fn = namespace["noted"]
    assert fn.__module__ == helpers.__name__
    assert state._source_of(fn) is fn.__code__
    (refusal,) = state.helper_refusals(fn)
    assert refusal.line == 2 and "LOG.append(x)" in str(refusal)


def test_what_is_read_of_a_helper_is_kept_by_the_analysis_session_per_code_object(helpers):
    """Functions made again from one definition share one entry; a new session reads the helper again."""
    with isolated() as session:
        (refusal,) = state.helper_refusals(helpers.remember)
        again = type(helpers.remember)(helpers.remember.__code__, helpers.remember.__globals__)
        assert state._parsed(again) is state._parsed(helpers.remember)
        assert session.sizes()["state.parsed"] == 1 and session.sizes()["state.helper_writes"] == 1
        kept = state._parsed(helpers.remember)
    with isolated() as fresh:
        assert state._parsed(helpers.remember) is not kept
        assert fresh.sizes() == {"state.parsed": 1}
