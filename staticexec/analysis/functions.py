"""A function as the analysis reads it: parsed once, with positions, parameters and local bindings.

Part of stage 2 (names/resolve): the resolver (resolve.py) evaluates expressions inside a
`FunctionContext`, the call graph (callgraph.py) binds call arguments to parameters, and emit
reads the same bindings. Contexts are kept in the session (`resolve.contexts`), by function
and file content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from staticexec.analysis.session import current
from staticexec.analysis.source import FunctionRef, SourceFile, function_node, load_module, parse_function, positions


@dataclass
class FunctionContext:
    """A parsed function with positions, its local bindings and where it sits in its file."""

    ref: FunctionRef
    sf: SourceFile
    module: cst.Module
    node: cst.FunctionDef
    positions: object
    line_offset: int
    indent: int
    source_hash: str
    params: list[str]
    locals: dict[str, list[tuple[str, object, object]]] = field(default_factory=dict)

    def line(self, node: cst.CSTNode) -> int:
        """The file line where a node starts."""
        return self.positions[node].start.line + self.line_offset

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """The file lines where a node starts and ends."""
        pos = self.positions[node]
        return (pos.start.line + self.line_offset, pos.end.line + self.line_offset)

    def column(self, node: cst.CSTNode) -> int:
        """The file column where a node starts."""
        return self.positions[node].start.column + self.indent

    def code(self, node: cst.CSTNode) -> str:
        """A node's source text, stripped."""
        return self.module.code_for_node(node).strip()


def param_names(fn: cst.FunctionDef) -> list[str]:
    """A function's parameter names in order: positional, `*args`, keyword-only, `**kwargs`."""
    p = fn.params
    names = [a.name.value for a in (*p.posonly_params, *p.params)]
    if isinstance(p.star_arg, cst.Param):
        names.append(p.star_arg.name.value)
    names += [a.name.value for a in p.kwonly_params]
    if p.star_kwarg is not None:
        names.append(p.star_kwarg.name.value)
    return names


class LocalBindings(cst.CSTVisitor):
    """Every way a function binds a local name, flow-insensitively (the resolver joins them)."""

    def __init__(self) -> None:
        self.bindings: dict[str, list[tuple[str, object, object]]] = {}

    def _bind(self, target: cst.BaseExpression, kind: str, value: object, extra: object = None) -> None:
        if isinstance(target, cst.Name):
            self.bindings.setdefault(target.value, []).append((kind, value, extra))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, el in enumerate(target.elements):
                inner = el.value
                if isinstance(el, cst.StarredElement):
                    self._bind(inner, "unknown", None)
                else:
                    self._bind(inner, "item", (kind, value, extra), i)

    def visit_Assign(self, node: cst.Assign) -> None:
        """Bind each target of `a = b = value`."""
        for t in node.targets:
            self._bind(t.target, "expr", node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        """Bind the target of an annotated assignment with a value."""
        if node.value is not None:
            self._bind(node.target, "expr", node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """Bind the target of `x op= value`."""
        self._bind(node.target, "expr", node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        """Bind the target of `(x := value)`."""
        self._bind(node.target, "expr", node.value)

    def visit_For(self, node: cst.For) -> None:
        """Bind a loop's target to the items of its iterable."""
        self._bind(node.target, "iter", node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        """Bind the name of `with ... as name` to an unknown value."""
        if node.asname is not None:
            self._bind(node.asname.name, "unknown", None)

    def visit_Call(self, node: cst.Call) -> None:
        """Record what `x.append(v)`, `x.extend(v)` and `x.insert(i, v)` add to the list `x`."""
        f = node.func
        if (
            isinstance(f, cst.Attribute)
            and isinstance(f.value, cst.Name)
            and f.attr.value in ("append", "extend", "insert")
            and node.args
        ):
            kind = "append" if f.attr.value == "append" else "extend"
            arg = node.args[-1].value
            self.bindings.setdefault(f.value.value, []).append((kind, arg, None))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        """Skip nested functions: their locals are their own."""
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        """Skip nested classes."""
        return False


def bind_arguments(params: list[str], args: Sequence[cst.Arg]) -> list[tuple[str, int]]:
    """(parameter, index of its argument) for a call's plain positional and keyword arguments;
    `*args` and `**kwargs` bind no parameter the analysis can name."""
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    return list(zip(params, positional)) + [(a.keyword.value, i) for i, a in enumerate(args) if a.keyword is not None]


def function_context(ref: FunctionRef) -> FunctionContext | None:
    """A parsed function with positions and local bindings, shared by every analysis of the session."""
    sf = load_module(ref.module)
    if sf is None:
        return None
    contexts = current().table("resolve.contexts")  # by function and file content
    key = (ref, sf.hash)
    if key in contexts:
        return contexts[key]
    ctx = None
    parsed = parse_function(sf, ref.qualname)
    if parsed is not None:
        node = function_node(sf, ref.qualname)
        line = sf.lines[node.lineno - 1]
        indent = len(line) - len(line.lstrip())
        visitor = LocalBindings()
        parsed.node.body.visit(visitor)
        ctx = FunctionContext(
            ref=ref,
            sf=sf,
            module=parsed.module,
            node=parsed.node,
            positions=positions(parsed.module),
            line_offset=parsed.line_offset,
            indent=indent,
            source_hash=parsed.source_hash,
            params=param_names(parsed.node),
            locals=visitor.bindings,
        )
    contexts[key] = ctx
    return ctx
