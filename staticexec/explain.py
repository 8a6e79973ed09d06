"""`staticexec explain`: the analysed forwards, each statement's class, and call chains.

It reads a plan, the output of the plan stage, and marks the source with it for the cli.
"""

from __future__ import annotations

from staticexec.analysis.plan import Plan
from staticexec.analysis.source import FunctionRef, load_module

MARK = {"target": "T", "ancestor": "A", "control": "C", "opaque": " "}


def _chain(plan: Plan, call: dict, node_path: str, seen: set[str]) -> list[str]:
    """This call, then the callee's first reaching call, down to a target."""
    lines = [f"{node_path}:{call['line']}  {call['code'][:100]}"]
    if call.get("targets"):
        lines[-1] += f"  -> target {', '.join(call['targets'])}"
        return lines
    for callee in call.get("callees", []):
        if callee in seen:
            continue
        entry = plan.function(callee)
        if entry is None:
            continue
        first = _first_reaching(entry["statements"])
        if first is not None:
            return lines + _chain(plan, first, entry["path"], seen | {callee})
    return lines


def _first_reaching(statements: list[dict]) -> dict | None:
    for s in statements:
        if s["kind"] in ("target", "ancestor"):
            return s["call"]
        for block in ("body", "orelse"):
            found = _first_reaching(s.get(block, []))
            if found is not None:
                return found
    return None


def explain(plan: Plan) -> str:
    """The text of `staticexec explain`: each function's lines marked by class, with notes; the unresolved calls."""
    out: list[str] = []
    doc = plan.doc
    out.append(f"{doc['architecture']}: targets {', '.join(plan.targets)}; model types {', '.join(doc['model_types']) or '-'}")
    out.append("statement classes: T target, A ancestor, C control, blank opaque\n")
    for node, entry in sorted(doc["functions"].items()):
        ref = FunctionRef.parse(entry["function"])
        sf = load_module(ref.module)
        out.append(f"== {node}  ({entry['path']}:{entry['lines'][0]})")
        if entry["decorators"]:
            out.append("   decorators: " + ", ".join(entry["decorators"]))
        marks: dict[int, str] = {}
        notes: list[str] = []
        _mark(plan, entry, entry["statements"], marks, notes)
        start, end = entry["lines"]
        for n in range(start, end + 1):
            text = sf.lines[n - 1] if sf else ""
            out.append(f"{marks.get(n, ' ')} {n:5d}  {text}")
        if notes:
            out.append("")
            out.extend(notes)
        out.append("")
    if doc.get("unresolved"):
        out.append("unresolved calls (checked against the instance when emitting):")
        for u in doc["unresolved"]:
            out.append(f"  {u['path']}:{u['line']}  {u['call'][:80]}  ({u['reason']})")
    return "\n".join(out) + "\n"


def _mark(plan: Plan, entry: dict, statements: list[dict], marks: dict[int, str], notes: list[str]) -> None:
    for s in statements:
        a, b = s["lines"]
        kind = s["kind"]
        if kind == "control":
            marks[a] = "C"
            cond = s.get("condition") or s.get("iter")
            if cond:
                notes.append(f"  {entry['path']}:{a}  control {s['statement']}: `{cond['code']}` is {cond['class']}")
            for block in ("body", "orelse"):
                _mark(plan, entry, s.get(block, []), marks, notes)
        elif kind in ("target", "ancestor"):
            for n in range(a, b + 1):
                marks[n] = MARK[kind]
            chain = _chain(plan, s["call"], entry["path"], {entry["function"]})
            notes.append(f"  {entry['path']}:{a}  {kind}, reaches through:")
            notes.extend(f"      {c}" for c in chain)
