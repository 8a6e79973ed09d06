"""emit/withitems.py: which parts of a `with` statement around target calls are evaluated once, where it starts."""

from __future__ import annotations

import libcst as cst
import pytest

from staticexec.emit.withitems import split_items, written_again


def _with(code: str) -> cst.With:
    return cst.parse_statement(code)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def test_a_single_call_item_has_its_arguments_bound_once():
    stmt = _with('with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.use_amp):\n    pass\n')
    bindings, entered, anew = split_items(stmt, "with__0_3")
    assert [(name, _code(value)) for name, value in bindings] == [
        ("with__0_3_0", '"cpu"'), ("with__0_3_1", "torch.bfloat16"), ("with__0_3_2", "self.use_amp")]
    assert [_code(item) for item in entered] == ["torch.autocast(with__0_3_0, dtype=with__0_3_1, enabled=with__0_3_2)"]
    assert [_code(expr) for expr in anew] == ["torch.autocast"]


@pytest.mark.parametrize("code", [
    "with torch.no_grad(), torch.autocast('cpu', enabled=self.use_amp):\n    pass\n",  # two items: entered in order
    "with ctx:\n    pass\n",  # not a call
    "with torch.autocast(*args):\n    pass\n",  # a starred argument
    "with self.make()(flag):\n    pass\n",  # a callee that calls
    "with (a if self.flag else b):\n    pass\n",
])
def test_other_items_are_evaluated_again_as_written(code):
    stmt = _with(code)
    bindings, entered, anew = split_items(stmt, "with__0_1")
    assert bindings == []
    assert [_code(item) for item in entered] == [_code(item.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                                                 for item in stmt.items]
    assert not any(_code(item).endswith(",") for item in entered)
    assert [_code(expr) for expr in anew] == [_code(item.item) for item in stmt.items]


def test_what_is_evaluated_again_is_checked_against_the_body_writes():
    stmt = _with("with torch.no_grad(), torch.autocast('cpu', enabled=self.cfg.amp):\n"
                 "    self.cfg = other\n    flags['x'] = 1\n    del self.other\n")
    _, _, anew = split_items(stmt, "with__0_1")
    assert written_again(anew, stmt.body) == ["self.cfg", "self.cfg.amp"]
    single = _with("with torch.autocast('cpu', enabled=self.cfg.amp):\n    self.cfg = other\n")
    _, _, anew = split_items(single, "with__0_1")
    assert written_again(anew, single.body) == []  # its argument was read once, before the body
