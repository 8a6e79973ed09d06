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

from staticexec.analysis.scopes import walk
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
    codes: dict[cst.CSTNode, str] = field(default_factory=dict, repr=False, compare=False)  # `code`'s answers

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
        """A node's source text, stripped; made once per node (libcst writes it out anew each time)."""
        found = self.codes.get(node)
        if found is None:
            found = self.codes[node] = self.module.code_for_node(node).strip()
        return found


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


Bindings = dict[str, list[tuple[str, object, object]]]


def local_bindings(body: cst.CSTNode) -> Bindings:
    """Every way the code under `body` binds a local name, in source order and flow-insensitively
    (the resolver joins them): `(kind, value, extra)` by name. Nested functions and classes bind
    names of their own and are not entered."""
    bindings: Bindings = {}
    for node in walk(body, skip=(cst.FunctionDef, cst.ClassDef),
                     only=(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.WithItem, cst.Call,
                           cst.MatchAs, cst.MatchStar, cst.MatchMapping)):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                _bind(bindings, t.target, "expr", node.value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                _bind(bindings, node.target, "expr", node.value)
        elif isinstance(node, (cst.AugAssign, cst.NamedExpr)):
            _bind(bindings, node.target, "expr", node.value)
        elif isinstance(node, cst.For):
            _bind(bindings, node.target, "iter", node.iter)
        elif isinstance(node, cst.WithItem):
            if node.asname is not None:
                _bind(bindings, node.asname.name, "unknown", None)
        elif isinstance(node, (cst.MatchAs, cst.MatchStar, cst.MatchMapping)):  # a `case` pattern's capture
            captured = node.rest if isinstance(node, cst.MatchMapping) else node.name
            if captured is not None:
                _bind(bindings, captured, "unknown", None)
        elif isinstance(node, cst.Call):
            # what `x.append(v)`, `x.extend(v)` and `x.insert(i, v)` add to the list `x`
            f = node.func
            if (
                isinstance(f, cst.Attribute)
                and isinstance(f.value, cst.Name)
                and f.attr.value in ("append", "extend", "insert")
                and node.args
            ):
                kind = "append" if f.attr.value == "append" else "extend"
                bindings.setdefault(f.value.value, []).append((kind, node.args[-1].value, None))
    return bindings


def _bind(bindings: Bindings, target: cst.BaseExpression, kind: str, value: object, extra: object = None) -> None:
    if isinstance(target, cst.Name):
        bindings.setdefault(target.value, []).append((kind, value, extra))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, el in enumerate(target.elements):
            inner = el.value
            if isinstance(el, cst.StarredElement):
                _bind(bindings, inner, "unknown", None)
            else:
                _bind(bindings, inner, "item", (kind, value, extra), i)


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
            locals=local_bindings(parsed.node.body),
        )
    contexts[key] = ctx
    return ctx
