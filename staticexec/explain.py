"""`staticexec explain`: the analysed forwards, each statement's class, and call chains.

It reads a plan, the output of the plan stage, and marks the source with it for the cli.
"""

from __future__ import annotations

from staticexec.analysis.plan import Call, Function, Kind, Plan, walk
from staticexec.analysis.source import FunctionRef, load_module

MARK = {Kind.TARGET: "T", Kind.ANCESTOR: "A", Kind.CONTROL: "C", Kind.OPAQUE: " "}


def _chain(plan: Plan, call: Call, node_path: str, seen: set[str]) -> list[str]:
    """This call, then the callee's first reaching call, down to a target."""
    lines = [f"{node_path}:{call.line}  {call.code[:100]}"]
    if call.targets:
        lines[-1] += f"  -> target {', '.join(call.targets)}"
        return lines
    for callee in call.callees:
        if callee in seen:
            continue
        fn = plan.function(callee)
        if fn is None:
            continue
        first = next((s.call for s in walk(fn.statements) if s.call is not None), None)
        if first is not None:
            return lines + _chain(plan, first, fn.path, seen | {callee})
    return lines


def explain(plan: Plan) -> str:
    """The text of `staticexec explain`: each function's lines marked by class, with notes; the unresolved calls."""
    out: list[str] = []
    out.append(f"{plan.architecture}: targets {', '.join(plan.target_names)}; model types {', '.join(plan.model_types) or '-'}")
    out.append("statement classes: T target, A ancestor, C control, blank opaque\n")
    for node, fn in sorted(plan.functions.items()):
        ref = FunctionRef.parse(fn.function)
        sf = load_module(ref.module)
        out.append(f"== {node}  ({fn.path}:{fn.lines[0]})")
        if fn.decorators:
            out.append("   decorators: " + ", ".join(fn.decorators))
        marks: dict[int, str] = {}
        notes: list[str] = []
        _mark(plan, fn, marks, notes)
        start, end = fn.lines
        for n in range(start, end + 1):
            text = sf.lines[n - 1] if sf else ""
            out.append(f"{marks.get(n, ' ')} {n:5d}  {text}")
        if notes:
            out.append("")
            out.extend(notes)
        out.append("")
    if plan.unresolved:
        out.append("unresolved calls (checked against the instance when emitting):")
        for u in plan.unresolved:
            out.append(f"  {u.path}:{u.line}  {' '.join(u.call.split())[:80]}  ({u.reason})")
    return "\n".join(out) + "\n"


def _mark(plan: Plan, fn: Function, marks: dict[int, str], notes: list[str]) -> None:
    for s in walk(fn.statements):
        a, b = s.lines
        if s.kind is Kind.CONTROL:
            marks[a] = "C"
            cond = s.condition or s.iter
            if cond:
                notes.append(f"  {fn.path}:{a}  control {s.statement.value}: `{cond.code}` is {cond.decided.value}")
        elif s.call is not None:
            for n in range(a, b + 1):
                marks[n] = MARK[s.kind]
            chain = _chain(plan, s.call, fn.path, {fn.function})
            notes.append(f"  {fn.path}:{a}  {s.kind.value}, reaches through:")
            notes.extend(f"      {c}" for c in chain)
