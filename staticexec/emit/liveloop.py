"""Stage 5, emit: whether an unrolled loop's iterable can give other items while the loop runs.

Python reads a loop's iterable one item at a time: a body that truncates or extends the list it iterates,
or puts another item in it (directly, through an alias, from a helper), changes what the loop runs over
next. Emission reads every item once, where the loop starts, and `expect_loop` checks them there. Where the
iterable can change as it is read, each later item is checked where Python reads it: the emitted code
evaluates the iterable again there and checks that it still gives that item, and after the last one that it
gives no more (`runtime.expect_loop_item`).

What can't change as it is read: torch's module containers (a forward that changes their modules while it
iterates them fails itself), tuples, ranges, strings and bytes, a slice of a list or tuple (a copy), and
`zip` or `enumerate` over those. Anything else, or an iterable emission can't evaluate, is checked.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import libcst as cst

from staticexec.emit.evaluate import Undecidable


def read_as_it_goes(node: cst.BaseExpression, value_of: Callable[[cst.BaseExpression], Any]) -> bool:
    """Whether the loop's iterable `node` can give other items while the loop reads it; `value_of` evaluates an
    expression as emission sees it (raising `Undecidable` when it can't)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("zip", "enumerate"):
        try:
            builtin = value_of(node.func) is getattr(builtins, node.func.value)
        except Undecidable:
            builtin = False
        positional = [arg for arg in node.args if arg.keyword is None]
        if builtin and all(arg.star == "" for arg in positional):
            parts = positional[:1] if node.func.value == "enumerate" else positional
            return any(read_as_it_goes(arg.value, value_of) for arg in parts)
        return True
    try:
        if (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice)
                and type(value_of(node.value)) in (list, tuple, str, bytes)):
            return False  # a copy of the items
        value = value_of(node)
    except Undecidable:
        return True
    return not isinstance(value, _fixed())


def _fixed() -> tuple:
    """The types whose items stay as they are while they are iterated."""
    import torch

    return (tuple, range, str, bytes, frozenset, torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)
