"""emit/liveloop.py and runtime.expect_loop_item: a loop whose iterable can change while Python reads it."""

from __future__ import annotations

import libcst as cst
import pytest
import torch
from torch import nn

from staticexec.emit.evaluate import Undecidable
from staticexec.emit.liveloop import read_as_it_goes
from staticexec.emit.run import checks_off
from staticexec.emit.runtime import LoopItems, LoopMismatch, expect_loop_item

NAMES = {"layers": nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]), "scales": [1.0, 2.0, 3.0],
         "kinds": ("a", "b", "c"), "table": {"a": 1}, "zip": zip, "enumerate": enumerate, "n": 2}


def _value_of(node: cst.BaseExpression):
    try:
        return eval(cst.Module(body=[]).code_for_node(node), dict(NAMES))
    except NameError as exc:
        raise Undecidable(str(exc)) from exc


@pytest.mark.parametrize("code, live", [
    ("layers", False), ("layers[:n]", False), ("enumerate(layers)", False), ("zip(layers, kinds)", False),
    ("range(3)", False), ("scales[:n]", False),  # a slice of a list is a copy
    ("scales", True), ("zip(layers, scales)", True), ("enumerate(scales)", True), ("table.items()", True),
    ("reversed(scales)", True), ("unknown", True),  # one emission can't evaluate is checked
])
def test_which_iterables_can_change_while_the_loop_reads_them(code, live):
    assert read_as_it_goes(cst.parse_expression(code), _value_of) is live


def test_a_later_item_is_checked_where_the_loop_takes_it():
    scales = [1.0, 2.0, 3.0]
    expected = LoopItems((1.0, 2.0, 3.0), ("1.0", "2.0", "3.0"), True)
    for index in (1, 2, 3):  # unchanged: the items, and none after the last
        expect_loop_item(scales, index, expected, "m.py:4", "scales")
    del scales[1:]
    with pytest.raises(LoopMismatch, match="where the loop takes item 1, `scales` evaluated again gives no item"):
        expect_loop_item(scales, 1, expected, "m.py:4", "scales")
    scales[:] = [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(LoopMismatch, match="after the 3 items .* gives one more \\(4.0\\)"):
        expect_loop_item(scales, 3, expected, "m.py:4", "scales")
    with checks_off():
        expect_loop_item([], 1, expected, "m.py:4", "scales")


def test_a_loop_that_stopped_at_a_break_is_not_checked_past_its_items():
    expected = LoopItems((1.0,), ("1.0",), False)
    expect_loop_item([1.0, 2.0], 1, expected, "m.py:4", "scales")  # the forward left the loop there
