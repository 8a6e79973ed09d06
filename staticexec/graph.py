"""`staticexec graph`: draw a plan's call graph (reaching functions, targets, the calls between them).

It reads a plan, the output of the plan stage, for the cli.
"""

from __future__ import annotations

import shutil
import subprocess

from staticexec.analysis.plan import Plan
from staticexec.files import write_atomic


def _label(node: str) -> str:
    module, _, qual = node.partition(":")
    return f"{qual}\\n{module.rsplit('.', 1)[-1]}"


def _walk(statements: list[dict]):
    for s in statements:
        if s["kind"] in ("target", "ancestor"):
            yield s
        for block in ("body", "orelse"):
            yield from _walk(s.get(block, []))


def to_dot(plan: Plan) -> str:
    """DOT text: reaching functions as boxes, targets as filled ellipses, edges labelled file:line."""
    doc = plan.doc
    lines = [
        f'digraph "{doc["architecture"]}" {{',
        "  rankdir=TB;",
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
        f'  label="{doc["architecture"]}: targets {", ".join(plan.targets)}"; labelloc=t;',
    ]
    targets = doc["targets"]
    for name in sorted(targets):
        lines.append(f'  "target:{name}" [label="{name}", shape=ellipse, style=filled, fillcolor="#f4c7c3"];')
    for node, entry in sorted(doc["functions"].items()):
        style = ', style=bold' if node == doc["root"] else ""
        lines.append(f'  "{node}" [label="{_label(node)}"{style}];')
    edges = set()
    for node, entry in sorted(doc["functions"].items()):
        path = entry["path"].rsplit("/", 1)[-1]
        for s in _walk(entry["statements"]):
            call = s["call"]
            where = f"{path}:{call['line']}"
            for callee in call.get("callees", []):
                edges.add((node, callee, where))
            for name in call.get("targets", []):
                edges.add((node, f"target:{name}", where))
    for a, b, where in sorted(edges):
        lines.append(f'  "{a}" -> "{b}" [label="{where}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot: str, out: str) -> str:
    """Write `out` (.dot or .svg/.png/.pdf); a one-line note on what was written."""

    fmt = out.rsplit(".", 1)[-1].lower() if "." in out else "dot"
    if fmt in ("dot", "gv"):
        write_atomic(out, dot)
        return f"wrote {out}"
    exe = shutil.which("dot")
    if exe is None:
        dot_path = out.rsplit(".", 1)[0] + ".dot"
        write_atomic(dot_path, dot)
        return (f"Graphviz `dot` is not installed: wrote {dot_path}; render it with "
                f"`dot -T{fmt} {dot_path} -o {out}` (Debian package graphviz)")
    rendered = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, check=True).stdout
    write_atomic(out, rendered)
    return f"wrote {out}"
