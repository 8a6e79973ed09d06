"""Stage 5, emit: the items of a `with` statement around target calls, which each subgraph of its body enters.

Python evaluates a `with` item once, where it is entered; the subgraphs that run parts of the body each
enter the `with` again. An item that calls a context manager by its name or attribute path
(`torch.autocast("cpu", enabled=self.use_amp)`) has its arguments evaluated once, where it is entered
(`with a, b:` is `with a:` around `with b:`, so inside the items before it), into names of their own
(`with__3_17_0_2`), and every subgraph of the body calls it with those: what the body changes later (the
attribute, directly, through an alias or from a helper; a dict an argument was read from) does not reach
them, as in Python. What each subgraph still evaluates again (the callee; an item that is not such a call)
must not be bound or written by the body: `written_again` names what is, for the emitter to refuse.

An item written as `a if c else b` is the side the sample takes (the emitter decides the test, and checks it
where the `with` starts, once, as Python evaluates it).

A callee must be one of the context managers that only set a mode and set it back (`known_manager`:
grad, autocast, the attention kernel, the default device, none), found as the object it is when the
subgraphs are emitted, not by its name: entering one of them again in each subgraph is exact. Each
subgraph checks, where it enters the `with` again, that the callee is that very object still
(`runtime.expect_context`), so a body that replaces it where the emitter can't see (through an alias, in
a helper) stops the run rather than enter another manager. An item that is not such a call (`with ctx:`, a name
the analysis found bound to a mode setter's call) is the object it holds, checked where each subgraph enters it
(emit/reentry.py).
"""

from __future__ import annotations

import functools
from typing import Any

import libcst as cst

from staticexec.analysis.scopes import walk
from staticexec.emit.reentry import objects_at


def split_item(item: cst.WithItem, prefix: str) -> tuple[list[tuple[str, cst.BaseExpression]], cst.WithItem,
                                                          list[cst.BaseExpression]]:
    """(the (name, argument) pairs to bind before the item is entered, the item as each subgraph enters it (without
    a comma), what it evaluates again); the names are `prefix` and the argument's position."""
    item = item.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    call = item.item
    if not (isinstance(call, cst.Call) and _path(call.func) and all(arg.star == "" for arg in call.args)):
        return [], item, [call]
    bindings = [(f"{prefix}_{i}", arg.value) for i, arg in enumerate(call.args)]
    args = [arg.with_changes(value=cst.Name(name)) for arg, (name, _) in zip(call.args, bindings)]
    return bindings, item.with_changes(item=call.with_changes(args=args)), [call.func]


def _path(node: cst.BaseExpression) -> bool:
    """A name or a chain of attributes of one (`torch.autocast`): evaluating it again reads, and calls, nothing."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def written_again(anew: list[cst.BaseExpression], body: cst.CSTNode) -> list[str]:
    """The attributes and items the expressions read (`self.use_amp`, `flags["amp"]`) that an assignment or a
    `del` in the body writes, or writes below or above (`self.cfg` for `self.cfg.amp`). Any two items of one
    object count as the same (`flags[k]` for `flags["amp"]`)."""
    read = {chain: _code(node) for expr in anew
            for node in walk(expr, only=(cst.Attribute, cst.Subscript)) if (chain := _chain(node)) is not None}
    written = set()
    for node in walk(body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda),
                     only=(cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
        targets = [node.target]
        while targets:
            target = targets.pop()
            if isinstance(target, (cst.Tuple, cst.List)):
                targets += [element.value for element in target.elements]
            elif (chain := _chain(target)) is not None and len(chain) > 1:
                written.add(chain)
    return sorted({shown for r, shown in read.items() for w in written if r[:len(w)] == w or w[:len(r)] == r})


def _chain(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """`self.cfg["amp"]` as ("self", ".cfg", "[]"); None for a chain that does not start from a name."""
    parts: list[str] = []
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        parts.append(f".{node.attr.value}" if isinstance(node, cst.Attribute) else "[]")
        node = node.value
    return (node.value, *reversed(parts)) if isinstance(node, cst.Name) else None


def checked_callee(entered: cst.WithItem, again: list[cst.BaseExpression]) -> cst.BaseExpression | None:
    """The callee of an item (as `split_item` gives it) that each subgraph evaluates again, for the check where it
    enters the item; None for an item that is not a call of a name or an attribute path."""
    call = entered.item
    return call.func if isinstance(call, cst.Call) and again == [call.func] else None


def not_a_mode_setter(shown: str, callee: Any, unknown: bool) -> str | None:
    """Why each subgraph of a `with` body can't enter again an item whose callee (`shown`) is `callee` when the
    subgraphs are emitted (`unknown`: it can't be found then); None when it can."""
    if not unknown and known_manager(callee):
        return None
    found = "can't be found when emitting" if unknown else f"is {getattr(callee, '__qualname__', type(callee).__name__)}"
    return (f"the `with` item `{shown}(...)` is entered again by every subgraph of its body, and `{shown}` {found}, not "
            "one of the context managers known to only set a mode and set it back (grad, autocast, the attention "
            "kernel, the default device, none)")


def entered_checked(item: cst.WithItem, runtime: str, alias: str, where: str, shown: str) -> str:
    """The code of an item (its names as the subgraph has them) whose callee is first checked to be the object
    `alias` holds (`runtime.expect_context`)."""
    check = f"{runtime}.expect_context({_code(item.item.func)}, {alias}, {where!r}, {shown!r})"
    return _code(item.with_changes(item=item.item.with_changes(func=cst.parse_expression(check))))


def entered_through(item: cst.WithItem, runtime: str, state: str, where: str) -> str:
    """The code of an item that is not a checked call (its names as the subgraph has them), entered through
    `runtime.reentered` with the `EnteredState` named `state` (emit/reentry.py)."""
    shown = _code(item.item)
    entered = f"{runtime}.reentered({shown}, {state}, {where!r}, {shown!r})"
    return _code(item.with_changes(item=cst.parse_expression(entered)))


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def known_manager(value: Any) -> bool:
    """Whether a callee is one of torch's or the standard library's context managers that only set a mode and set it
    back when left: entering it again in each subgraph of a `with` body is what one `with` does."""
    return any(value is known for known in _mode_setters())


@functools.lru_cache(maxsize=1)
def _mode_setters() -> tuple:
    """The context managers `known_manager` knows, those of them the installed torch has."""
    return tuple(objects_at(("contextlib.nullcontext", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
                             "torch.set_grad_enabled", "torch.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast",
                             "torch.cuda.amp.autocast", "torch.nn.attention.sdpa_kernel", "torch.device",
                             "torch.cuda.device")))
