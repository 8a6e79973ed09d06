"""`staticexec graph`: draw a plan's call graph (reaching functions, targets, the calls between them).

It reads a plan, the output of the plan stage, for the cli.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from staticexec.analysis.plan import Plan
from staticexec.files import write_atomic

# what `render` writes: DOT itself, or what Graphviz's `dot` makes of it
FORMATS = ("dot", "gv", "svg", "png", "pdf")


def _label(node: str) -> str:
    module, _, qual = node.partition(":")
    return f"{qual}\\n{module.rsplit('.', 1)[-1]}"


def to_dot(plan: Plan) -> str:
    """DOT text: reaching functions as boxes, targets as filled ellipses, edges labelled file:line."""
    lines = [
        f'digraph "{plan.architecture}" {{',
        "  rankdir=TB;",
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
        f'  label="{plan.architecture}: targets {", ".join(plan.target_names)}"; labelloc=t;',
    ]
    for name in plan.target_names:
        lines.append(f'  "target:{name}" [label="{name}", shape=ellipse, style=filled, fillcolor="#f4c7c3"];')
    for node in sorted(plan.functions):
        style = ', style=bold' if node == plan.root else ""
        lines.append(f'  "{node}" [label="{_label(node)}"{style}];')
    edges = set()
    for node, fn, s in plan.statements():
        if s.call is None:
            continue
        where = f"{fn.path.rsplit('/', 1)[-1]}:{s.call.line}"
        for callee in s.call.callees:
            edges.add((node, callee, where))
        for name in s.call.targets:
            edges.add((node, f"target:{name}", where))
    for a, b, where in sorted(edges):
        lines.append(f'  "{a}" -> "{b}" [label="{where}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def format_of(out: str) -> str:
    """The format a file name asks for, by its extension (one of FORMATS when `render` can write it)."""
    return os.path.splitext(out)[1].lower().lstrip(".")


def render(dot: str, out: str) -> str:
    """Write `out` (.dot or .gv, else .svg/.png/.pdf: FORMATS); a one-line note on what was written."""

    fmt = format_of(out)
    if fmt not in FORMATS:
        raise ValueError(f"{out}: not one of the formats {', '.join(FORMATS)}")
    if fmt in ("dot", "gv"):
        write_atomic(out, dot)
        return f"wrote {out}"
    exe = shutil.which("dot")
    if exe is None:
        dot_path = os.path.splitext(out)[0] + ".dot"
        write_atomic(dot_path, dot)
        return (f"Graphviz `dot` is not installed: wrote {dot_path}; render it with "
                f"`dot -T{fmt} {dot_path} -o {out}` (Debian package graphviz)")
    rendered = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, check=True).stdout
    write_atomic(out, rendered)
    return f"wrote {out}"
