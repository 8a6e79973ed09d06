"""A reaching statement with several reaching calls: which of them run, and the statement taken apart.

The plan names one call of a statement that reaches a target. Emission looks at every call of it:
`logits = self.lm_head(self.predictions(h))` calls a target (`lm_head`, a Linear) and a module that
holds one (`predictions`); `h = self.mlp(h) if not flexible else self.mlp(h, idx)` calls the same
module on either side of a conditional expression decided at emit time. The conditions that guard
the calls are decided once each (`decide_guards`), and when more than one call runs, the statement
is taken apart in Python's evaluation order (linearize.py): each reaching call becomes a statement
`lin__k = call(...)` of its own, so a target starts a subgraph and an inlined call cuts where its
own targets are. So is a statement whose one inlined call Python computes something else before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

import libcst as cst

from staticexec.analysis.callgraph import calls_in
from staticexec.analysis.planner import expression_guards
from staticexec.emit.linearize import CannotLinearize, linearize


def reaching_calls(stmt: cst.CSTNode, planned: cst.Call, planned_is_target: bool,
                   kind_of: Callable[[cst.Call], bool | None]) -> list[tuple[cst.Call, bool]]:
    """The calls of a statement that reach, in source order (outermost first), each with whether it
    calls a target (True) or code that reaches one (False). `kind_of` tells a call's kind at emit time
    (None: it does not reach, or can't be told); the call the plan names counts whatever it says."""
    out = []
    for call in calls_in(stmt):
        kind = kind_of(call)
        if call is planned:
            out.append((call, planned_is_target if kind is None else kind))
        elif kind is not None:
            out.append((call, kind))
    return out


def decide_guards(stmt: cst.CSTNode, calls: list[cst.Call], decide: Callable[[cst.BaseExpression], bool],
                  refuse: Callable[[str], None]) -> tuple[list[cst.Call], tuple]:
    """The calls that run, and the side kept of each conditional expression or `and` / `or` decided on
    the way (the `choose` of a rewrite). Each guard is decided once, outermost first; a call inside a
    comprehension or a lambda, which has no condition to decide, is refused through `refuse`."""
    chosen: dict[cst.CSTNode, str] = {}
    running = []
    for call in calls:
        runs = True
        for guard in expression_guards(stmt, call):
            if guard.test is None:
                refuse(guard.label)
            if guard.owner not in chosen:
                chosen[guard.owner] = guard.side if guard.runs(decide(guard.test)) else guard.other()
            if chosen[guard.owner] != guard.side:
                runs = False
                break
        if runs:
            running.append(call)
    return running, tuple(chosen.items())


@dataclass(frozen=True)
class ApartPiece:
    """One statement of a statement taken apart; `call` is its reaching call (`target`: of a target), if any."""

    stmt: cst.SimpleStatementLine
    call: cst.Call | None = None
    target: bool = False


def _normal(code: str) -> str:
    return ast.unparse(ast.parse(code.strip(), mode="eval"))


def take_apart(code: str, callees: list[tuple[str, bool]], prefix: str) -> list[ApartPiece]:
    """Take apart one simple statement whose reaching calls have the callees `callees` (code, whether a
    target), each called once; temporaries are named `{prefix}{n}`. Raises CannotLinearize."""
    funcs = [_normal(func) for func, _ in callees]
    target = dict(zip(funcs, (kind for _, kind in callees)))
    out = []
    for piece in linearize(code, funcs, prefix):
        stmt = cst.parse_statement(piece.code)
        if not isinstance(stmt, cst.SimpleStatementLine):
            raise CannotLinearize(f"a piece that is not a simple statement: {piece.code.strip()}")
        if piece.target is None:
            out.append(ApartPiece(stmt))
            continue
        call = stmt.body[0].value
        assert isinstance(call, cst.Call), piece.code
        out.append(ApartPiece(stmt, call, target[piece.target]))
    return out
