"""State the forward changes while it runs, where that state decides which targets run.

The emitter decides static conditions and unrolls loops from the instance as it is before
the call. When the forward itself (or a helper it calls) re-assigns `self.layers`, reverses
or pops a list of layers, sets a flag a branch reads, or changes a module-level value a loop
iterates, the model's own run takes another path than the emitted chain. Such writes are
refused with the line that makes them.

It runs in the plan stage (plan.py), over the call graph, so such a forward is refused before
anything is emitted.
"""

from __future__ import annotations

import builtins

import libcst as cst

from staticexec.analysis.callgraph import CallGraph, CallGraphBuilder, FunctionAnalysis, calls_in
from staticexec.messages import MutatedState
from staticexec.analysis.scopes import walk
from staticexec.analysis.values import Container, Instance, Items, Mapping

MUTATING_METHODS = {
    "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "update", "popitem", "setdefault",
    "add_module", "register_module", "__setitem__", "__delitem__", "add", "discard",
}


def _path(node: cst.BaseExpression, self_name: str | None) -> tuple[str, tuple[str, ...]] | None:
    """`self.a.b[0]` -> ('self', ('a', 'b')); `NAME.x` -> ('NAME', ('x',)); None for anything else."""
    parts: list[str] = []
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
        else:
            parts.clear()  # an item of `self.a.b` changes `self.a.b`
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    return node.value, tuple(reversed(parts))


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


class _Reads:
    """`self.<path>` and global names read where they decide target calls: conditions, loop headers, callees.

    An attribute read is kept with the class of the `self` it is read from: a write to `self.layers`
    in a cache class says nothing about the `self.layers` a model class loops over."""

    def __init__(self) -> None:
        self.attrs: set[tuple[object, tuple[str, ...]]] = set()
        self.globals: set[str] = set()

    def add(self, node: cst.CSTNode, analysis: FunctionAnalysis, self_name: str | None) -> None:
        """Record the `self.<path>` attributes and the global names a node reads."""
        ctx = analysis.ctx
        declared = _declared_global(ctx.node)
        for sub in walk(node, only=(cst.Attribute, cst.Subscript, cst.Name)):
            path = _path(sub, self_name)
            if path is None:
                continue
            base, attrs = path
            if base == self_name and attrs:
                self.attrs.add((analysis.self_class, attrs))
            elif base in declared or (base not in ctx.locals and base not in ctx.params and not hasattr(builtins, base)):
                self.globals.add(base)


def _deciding_nodes(analysis: FunctionAnalysis, reaching: set[str]) -> list[cst.CSTNode]:
    """What the emitter decides from the instance: the headers of compound statements around reaching
    calls (or that may leave early), and the callee expressions of the reaching calls themselves."""

    def reaches(node: cst.CSTNode) -> bool:
        for call in calls_in(node):
            site = analysis.calls.get(call)
            if site is not None and (site.targets or any(c in reaching for c in site.callees)):
                return True
        return False

    out: list[cst.CSTNode] = []
    for node in walk(analysis.ctx.node.body, only=(cst.If, cst.While, cst.For, cst.IfExp)):
        if isinstance(node, (cst.If, cst.While)) and (reaches(node.body) or _leaves(node)):
            out.append(node.test)
        elif isinstance(node, cst.For) and reaches(node.body):
            out.append(node.iter)
        elif isinstance(node, cst.IfExp) and (reaches(node.body) or reaches(node.orelse)):
            out.append(node.test)
    for call in calls_in(analysis.ctx.node.body):
        site = analysis.calls.get(call)
        if site is not None and (site.targets or any(c in reaching for c in site.callees)):
            out.append(call.func)
    return out


def _leaves(node: cst.CSTNode) -> bool:
    return any(True for _ in walk(node, only=(cst.Return, cst.Break, cst.Continue)))


def _writes(analysis: FunctionAnalysis):
    """(node, base name, attribute path, how) for every write in a function's body."""
    for node in walk(analysis.ctx.node.body, only=(cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del, cst.Call)):
        targets: list[cst.BaseExpression] = []
        how = "assigns"
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, cst.Del):
            targets, how = [node.target], "deletes"
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATING_METHODS:
            yield node, node.func.value, f"calls .{node.func.attr.value}() on"
            continue
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("setattr", "delattr") and node.args:
            yield node, node.args[0].value, f"{node.func.value}s an attribute of"
            continue
        flat: list[cst.BaseExpression] = []
        while targets:
            t = targets.pop()
            if isinstance(t, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in t.elements)
            else:
                flat.append(t)
        for t in flat:
            if isinstance(t, (cst.Attribute, cst.Subscript)) or (isinstance(t, cst.Name) and how == "deletes"):
                yield node, t, how
            elif isinstance(t, cst.Name):
                yield node, t, "rebinds"


def mutation_refusals(graph: CallGraph, builder: CallGraphBuilder, reaching: set[str]) -> list[MutatedState]:
    """A MutatedState for each write, in any analysed function, to state that decides which targets run."""
    reads = _Reads()
    for nid in reaching:
        analysis = graph.functions.get(nid)
        if analysis is None:
            continue
        self_name = analysis.ctx.params[0] if analysis.self_class is not None and analysis.ctx.params else None
        for node in _deciding_nodes(analysis, reaching):
            reads.add(node, analysis, self_name)
    out: list[MutatedState] = []
    for nid, analysis in sorted(graph.functions.items()):
        ctx = analysis.ctx
        self_name = ctx.params[0] if analysis.self_class is not None and ctx.params else None
        env = builder._full_env(ctx, analysis.self_class, analysis.env)
        declared_global = _declared_global(ctx.node)
        for node, target, how in _writes(analysis):
            path = _path(target, self_name)
            if path is None:
                continue
            base, attrs = path
            why = ""
            if base == self_name:
                whole = how.startswith(("setattr", "delattr"))
                if whole or not attrs:
                    why = "an attribute of the module, by a name"
                else:
                    related = _related(builder, graph, analysis.self_class)
                    hit = next((r for c, r in sorted(reads.attrs, key=str) if c in related and _overlaps(r, attrs)), None)
                    if hit is not None:
                        why = f"`{self_name}.{'.'.join(attrs)}`, read at a target call or in a condition or loop"
                    elif builder._reaches_target(builder.resolver.attribute(analysis.self_class, attrs[0])):
                        why = f"`{self_name}.{attrs[0]}`, which holds target modules"
            elif how == "rebinds":
                if base in declared_global and base in reads.globals:
                    why = f"the global `{base}`, read in a condition or loop around target calls"
            elif (base in declared_global or (base not in ctx.locals and base not in ctx.params)) and base in reads.globals:
                why = f"the module-level `{base}`, read in a condition or loop around target calls"
            elif base in ctx.locals or base in ctx.params:
                value = builder.resolver.eval(_root(target), ctx, env) if _root(target) is not None else frozenset()
                if any(isinstance(a, (Container, Items, Mapping)) for a in value) and builder._reaches_target(_elements(value)):
                    why = f"`{base}`, a list that holds target modules"
            if why:
                code = " ".join(ctx.code(node).split())[:120]
                out.append(MutatedState(ctx.sf.relpath, ctx.line(node), f"`{code}` {how} {why}"))
    return out


def _related(builder: CallGraphBuilder, graph: CallGraph, cls: object) -> set:
    """The classes whose `self` may be the same object as `cls`'s: itself, its bases and its subclasses
    among the analysed ones (a method of a base class reads the attributes of a subclass's instance)."""
    if cls is None:
        return {None}
    mro = set(builder.resolver.mro(cls))
    analysed = {a.self_class for a in graph.functions.values()}
    return mro | {c for c in analysed if c is not None and cls in builder.resolver.mro(c)}


def _declared_global(fn: cst.FunctionDef) -> set[str]:
    return {item.name.value for g in walk(fn.body, only=(cst.Global,)) for item in g.names}


def _root(node: cst.BaseExpression) -> cst.Name | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def _elements(value):
    out = set()
    for atom in value:
        if isinstance(atom, Container):
            out |= set(atom.elem)
        elif isinstance(atom, Items):
            for v in atom.items:
                out |= set(v)
        elif isinstance(atom, Mapping):
            out |= set(atom.values)
        elif isinstance(atom, Instance):
            out.add(atom)
    return frozenset(out)
