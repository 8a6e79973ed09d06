"""Stage 4, plan: classify every statement of every reaching function.

Each statement is `target` (calls a target), `ancestor` (calls a reaching
function), `control` (an `if` / `for` / `with` that contains reaching
statements, or an `if` whose early `return` decides whether they run) or
`opaque` (everything else, copied verbatim when emitting). The plan is a
deterministic JSON document, specified in docs/plan-format.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import libcst as cst

from . import __version__
from .callgraph import CallGraph, CallGraphBuilder, CallSite, FunctionAnalysis, calls_in
from .conditions import ConditionClassifier
from .decorators import decorator_names, unsupported_decorators
from .messages import (
    DynamicCondition,
    DynamicLoop,
    Message,
    Refused,
    UnresolvedCall,
    UnsupportedDecorator,
    UnsupportedStatement,
)
from .resolve import Resolver
from .source import ClassRef

SCHEMA_VERSION = 1
COMPOUND = (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar) if hasattr(cst, "TryStar") else (
    cst.If, cst.For, cst.While, cst.With, cst.Try,
)


@dataclass
class Plan:
    """A wrap plan: the JSON document as a dict, plus helpers to read it."""

    doc: dict

    @property
    def architecture(self) -> str:
        return self.doc["architecture"]

    @property
    def targets(self) -> list[str]:
        return sorted(self.doc["targets"])

    @property
    def root(self) -> str:
        return self.doc["root"]

    def function(self, node: str) -> dict | None:
        return self.doc["functions"].get(node)

    def to_json(self) -> str:
        return json.dumps(self.doc, indent=1, sort_keys=True) + "\n"


def transformers_version() -> str:
    try:
        import transformers
    except ImportError:  # pragma: no cover
        return ""
    return transformers.__version__


def _header(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions a compound statement evaluates itself (not its body)."""
    if isinstance(stmt, cst.If):
        return [stmt.test]
    if isinstance(stmt, (cst.For,)):
        return [stmt.iter]
    if isinstance(stmt, cst.While):
        return [stmt.test]
    if isinstance(stmt, cst.With):
        return [item.item for item in stmt.items]
    return []


def _blocks(stmt: cst.CSTNode) -> list[tuple[str, list[cst.CSTNode]]]:
    if isinstance(stmt, cst.If):
        orelse = []
        if isinstance(stmt.orelse, cst.If):
            orelse = [stmt.orelse]
        elif isinstance(stmt.orelse, cst.Else):
            orelse = list(stmt.orelse.body.body)
        return [("body", list(stmt.body.body)), ("orelse", orelse)]
    if isinstance(stmt, (cst.For, cst.While)):
        orelse = list(stmt.orelse.body.body) if stmt.orelse else []
        return [("body", list(stmt.body.body)), ("orelse", orelse)]
    if isinstance(stmt, cst.With):
        return [("body", list(stmt.body.body))]
    if isinstance(stmt, cst.Try):
        blocks = [("body", list(stmt.body.body))]
        for h in stmt.handlers:
            blocks.append(("handler", list(h.body.body)))
        if stmt.orelse:
            blocks.append(("orelse", list(stmt.orelse.body.body)))
        if stmt.finalbody:
            blocks.append(("finally", list(stmt.finalbody.body.body)))
        return blocks
    return []


class _Exits(cst.CSTVisitor):
    """Whether a statement may `return`, or `break` / `continue` the loop it is in."""

    def __init__(self) -> None:
        self.found = False
        self.loop_exit = False
        self._loops = 0

    def visit_Return(self, node: cst.Return) -> None:
        self.found = True

    def visit_Break(self, node: cst.Break) -> None:
        self.loop_exit |= self._loops == 0

    def visit_Continue(self, node: cst.Continue) -> None:
        self.loop_exit |= self._loops == 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> None:
        self._loops += 1

    def leave_For(self, node: cst.For) -> None:
        self._loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self._loops += 1

    def leave_While(self, node: cst.While) -> None:
        self._loops -= 1


def exits(stmt: cst.CSTNode) -> _Exits:
    v = _Exits()
    stmt.visit(v)
    return v


class FunctionPlanner:
    """Classifies the statements of one reaching function."""

    def __init__(self, graph: CallGraph, analysis: FunctionAnalysis, reaching: set[str], refusals: list[Message]):
        self.graph = graph
        self.root = graph.root
        self.a = analysis
        self.ctx = analysis.ctx
        self.reaching = reaching
        self.refusals = refusals
        self_name = self.ctx.params[0] if analysis.self_class is not None and self.ctx.params else None
        self.guards = 0
        self.conditions = ConditionClassifier(self_name, self.ctx.params[1:] if self_name else self.ctx.params, self.ctx.locals)

    def refuse(self, cls: type[Message], node: cst.CSTNode, detail: str) -> None:
        self.refusals.append(cls(self.ctx.sf.relpath, self.ctx.line(node), detail))

    def reaching_sites(self, node: cst.CSTNode) -> tuple[list[CallSite], list[CallSite]]:
        targets, ancestors = [], []
        for index, call in enumerate(calls_in(node)):
            site = self.a.calls.get(id(call))
            if site is None:
                continue
            if site.targets:
                targets.append((site, index))
            elif any(c in self.reaching for c in site.callees):
                ancestors.append((site, index))
            if site.args_hold_targets and site.unresolved and not site.targets:
                self.refuse(UnresolvedCall, call, f"`{site.code}` passes target modules to a callee that is not resolved ({site.unresolved or 'unknown callee'})")
        return targets, ancestors

    def block(self, stmts: list[cst.CSTNode], in_loop: bool = False) -> list[dict]:
        entries = [self.statement(s, in_loop=in_loop) for s in stmts]
        # an `if` that may return (or leave an unrolled loop) decides whether later reaching code runs
        for i, (stmt, entry) in enumerate(zip(stmts, entries)):
            if entry["kind"] != "opaque":
                continue
            probe = exits(stmt)
            later = any(e["kind"] != "opaque" for e in entries[i + 1 :])
            if not ((probe.found and later) or (probe.loop_exit and in_loop)):
                continue
            if isinstance(stmt, cst.If):
                entries[i] = self.statement(stmt, early_exit=True, in_loop=in_loop)
            elif isinstance(stmt, cst.SimpleStatementLine) and probe.loop_exit:
                entries[i] = {"kind": "control", "lines": list(self.ctx.span(stmt)), "statement": "exit"}
            else:
                self.refuse(UnsupportedStatement, stmt, "a `return`, `break` or `continue` inside this statement may skip target calls")
        return _merge_opaque(entries)

    def statement(self, stmt: cst.CSTNode, early_exit: bool = False, in_loop: bool = False) -> dict:
        lines = list(self.ctx.span(stmt))
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return {"kind": "opaque", "lines": lines, "count": 1}
        header = _header(stmt) if isinstance(stmt, COMPOUND) else [stmt]
        targets: list[CallSite] = []
        ancestors: list[CallSite] = []
        for h in header:
            t, a = self.reaching_sites(h)
            targets += t
            ancestors += a
        if not isinstance(stmt, COMPOUND):
            if not targets and not ancestors:
                return {"kind": "opaque", "lines": lines, "count": 1}
            if len(targets) + len(ancestors) > 1:
                self.refuse(UnsupportedStatement, stmt, "one statement makes several reaching calls; it can't be cut between them")
            kind = "target" if targets else "ancestor"
            site, index = (targets or ancestors)[0]
            call = _site_json(site, self.reaching)
            call["index"] = index
            return {"kind": kind, "lines": lines, "call": call}
        if targets or ancestors:
            self.refuse(UnsupportedStatement, stmt, "a reaching call in the header of a compound statement")
        cls = self.conditions.classify(stmt.test) if isinstance(stmt, cst.If) else None
        decided = cls in ("static", "input")
        self.guards += decided
        try:
            blocks = {name: self.block(body, in_loop=in_loop) for name, body in _blocks(stmt)}
            if isinstance(stmt, cst.For) and any(e["kind"] != "opaque" for b in blocks.values() for e in b):
                # a loop that is unrolled: its `break` / `continue` must be decided too
                blocks = {name: self.block(body, in_loop=True) for name, body in _blocks(stmt)}
        finally:
            self.guards -= decided
        inner = any(e["kind"] != "opaque" for b in blocks.values() for e in b)
        if not inner and not early_exit:
            return {"kind": "opaque", "lines": lines, "count": 1}
        entry: dict = {"kind": "control", "lines": lines, "statement": type(stmt).__name__.lower()}
        if isinstance(stmt, cst.If):
            entry["condition"] = {"code": " ".join(self.ctx.code(stmt.test).split()), "class": cls}
            if cls == "dynamic" and not self.guards and self.a.node == self.root:
                # elsewhere (a function reached through a branch decided per input) the refusal waits
                # for emission, which refuses only if it reaches the condition and can't decide it
                self.refuse(DynamicCondition, stmt, f"`{self.ctx.code(stmt.test)}`")
        elif isinstance(stmt, cst.For):
            entry["iter"] = {"code": self.ctx.code(stmt.iter), "class": self.conditions._iterable(stmt.iter)}
            if stmt.orelse is not None:
                self.refuse(UnsupportedStatement, stmt, "a `for ... else` around target calls")
            for body_stmt in stmt.body.body:
                if exits(body_stmt).found:
                    self.refuse(UnsupportedStatement, body_stmt, "a `return` inside a loop over targets")
                    break
        elif isinstance(stmt, cst.While):
            self.refuse(DynamicLoop, stmt, f"`while {self.ctx.code(stmt.test)}`")
        elif isinstance(stmt, cst.Try):
            self.refuse(UnsupportedStatement, stmt, "a `try` around target calls")
        elif isinstance(stmt, cst.With):
            entry["items"] = [self.ctx.code(item) for item in stmt.items]
        entry.update({k: v for k, v in blocks.items() if v or k == "body"})
        return entry


def _merge_opaque(entries: list[dict]) -> list[dict]:
    out: list[dict] = []
    for e in entries:
        if e["kind"] == "opaque" and out and out[-1]["kind"] == "opaque":
            out[-1]["lines"][1] = e["lines"][1]
            out[-1]["count"] += e["count"]
        else:
            out.append(e)
    return out


def _site_json(site: CallSite, reaching: set[str]) -> dict:
    out: dict = {"line": site.line, "code": " ".join(site.code.split())}
    if site.targets:
        out["targets"] = list(site.targets)
    callees = [c for c in site.callees if c in reaching]
    if callees:
        out["callees"] = callees
    return out


def build_plan(
    resolver: Resolver,
    root: ClassRef,
    targets: list[str],
    architecture: str,
    *,
    model_types: list[str] | None = None,
) -> Plan:
    """Analyse from `root`'s forward down to the target classes; refuse with reasons when unsure."""
    builder = CallGraphBuilder(resolver, set(targets))
    graph = builder.build(root)
    reaching = graph.reaching()
    refusals: list[Message] = []
    functions: dict[str, dict] = {}
    for nid in sorted(reaching):
        analysis = graph.functions.get(nid)
        if analysis is None:
            continue
        ctx = analysis.ctx
        planner = FunctionPlanner(graph, analysis, reaching, refusals)
        statements = planner.block(list(ctx.node.body.body))
        decorators = decorator_names(ctx.node)
        for name in unsupported_decorators(decorators):
            refusals.append(UnsupportedDecorator(ctx.sf.relpath, ctx.line(ctx.node), f"@{name} on {analysis.ref.qualname}"))
        start, end = ctx.span(ctx.node)
        entry = {
            "function": str(analysis.ref),
            "self_class": str(analysis.self_class) if analysis.self_class else None,
            "path": ctx.sf.relpath,
            "lines": [start, end],
            "source_hash": ctx.source_hash,
            "decorators": decorators,
            "params": ctx.params,
            "statements": statements,
        }
        functions[nid] = entry
    unresolved = []
    for nid, analysis in sorted(graph.functions.items()):
        for site in sorted(analysis.calls.values(), key=lambda s: (s.line, s.column)):
            if site.unresolved:
                unresolved.append(
                    {
                        "function": nid,
                        "path": analysis.ctx.sf.relpath,
                        "line": site.line,
                        "call": site.code,
                        "reason": site.unresolved,
                        "receiver_is_self": site.receiver_is_self,
                        "reaching_function": nid in reaching,
                    }
                )
    if not refusals:
        for analysis in graph.functions.values():
            for site in analysis.calls.values():
                if site.args_hold_targets and site.unresolved and not site.targets:
                    refusals.append(UnresolvedCall(analysis.ctx.sf.relpath, site.line, f"`{site.code}`: {site.unresolved}"))
    if refusals:
        raise Refused(sorted(set(refusals), key=lambda m: (m.path, m.line, m.kind, m.detail)))
    if graph.root not in reaching:
        found = ", ".join(sorted(targets))
        raise Refused([UnresolvedCall(root.module, 0, f"no call path from {root.name}.forward to any of: {found}")])
    def step(caller: str, callee: str, site: CallSite) -> str:
        text = f"{graph.functions[caller].ctx.sf.relpath}:{site.line} {' '.join(site.code.split())[:100]}"
        return text + (f" -> {callee[len('target:'):]}" if callee.startswith("target:") else "")

    chains = {nid: [step(a, b, s) for a, b, s in graph.chain(nid)] for nid in functions}
    for nid, entry in functions.items():
        entry["chain"] = chains[nid]
    doc = {
        "schema": SCHEMA_VERSION,
        "staticexec": __version__,
        "transformers": transformers_version(),
        "architecture": architecture,
        "root": graph.root,
        "targets": {name: str(ref) for name, ref in sorted(graph.targets.items())},
        "model_types": sorted(set(model_types or []) | resolver.model_types),
        "functions": functions,
        "unresolved": unresolved,
        "not_analysed": sorted(str(c) for c in graph.pruned),
    }
    return Plan(doc)
