"""Stage 4, planner: classify every statement of every reaching function.

Each statement is `target` (calls a target), `ancestor` (calls a reaching
function), `control` (an `if` / `for` / `with` that contains reaching
statements, or an `if` whose early `return` decides whether they run) or
`opaque` (everything else, copied verbatim when emitting). What it gives is a
`Plan` (plan.py), written as the JSON document of docs/plan-format.md.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

import libcst as cst

from staticexec.version import __version__, transformers_version
from staticexec.analysis.callgraph import CallGraph, CallGraphBuilder, CallSite, FunctionAnalysis, calls_in
from staticexec.analysis.conditions import ConditionClassifier
from staticexec.analysis.decorators import class_wrapper_names, decorator_names, unsupported_decorators
from staticexec.messages import (
    DynamicCondition,
    Message,
    NoCallPath,
    Refused,
    ShadowedName,
    UnresolvedCall,
    UnsupportedDecorator,
    UnsupportedStatement,
)
from staticexec.analysis.mutations import mutation_refusals
from staticexec.analysis.plan import SCHEMA_VERSION, Call, Condition, Control, Decided, Function, Kind, Plan, Statement, Unresolved
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.scopes import COMPREHENSIONS, children, walk
from staticexec.analysis.classes import is_framework
from staticexec.analysis.source import ClassRef, load_module

TRY = (cst.Try, cst.TryStar) if hasattr(cst, "TryStar") else (cst.Try,)
COMPOUND = (cst.If, cst.For, cst.While, cst.With, *TRY)


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


def statement_blocks(stmt: cst.CSTNode) -> list[tuple[str, list[cst.CSTNode]]]:
    """The blocks of a compound statement by the plan's names for them (`body`, `orelse`, `handlers`, ...)."""
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
    if isinstance(stmt, TRY):
        blocks = [("body", list(stmt.body.body))]
        for h in stmt.handlers:
            blocks.append(("handler", list(h.body.body)))
        if stmt.orelse:
            blocks.append(("orelse", list(stmt.orelse.body.body)))
        if stmt.finalbody:
            blocks.append(("finally", list(stmt.finalbody.body.body)))
        return blocks
    return []


@dataclass(frozen=True)
class Exits:
    """Whether a statement may `return` (`found`), or `break` / `continue` the loop around it (`loop_exit`)."""

    found: bool
    loop_exit: bool


def exits(stmt: cst.CSTNode) -> Exits:
    """Whether a statement may `return`, or `break` / `continue` the loop around it. Nested functions
    and lambdas exit only themselves; a `break` or `continue` inside a loop of the statement leaves
    that loop."""
    found = loop_exit = False
    stack = [(stmt, 0)]  # a node, and how many loops of the statement hold it
    while stack:
        node, loops = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            found = True
        elif isinstance(node, (cst.Break, cst.Continue)):
            loop_exit |= loops == 0
        inner = loops + isinstance(node, (cst.For, cst.While))
        stack.extend((child, inner) for child in children(node))
    return Exits(found, loop_exit)


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
        self.branches = 0  # enclosing `if`s emission decides (a dynamic one outside the root is tried there too)
        self.conditions = ConditionClassifier(self_name, self.ctx.params[1:] if self_name else self.ctx.params, self.ctx.locals)

    def refuse(self, cls: type[Message], node: cst.CSTNode, detail: str) -> None:
        """Record a refusal of the given kind at a node's line."""
        self.refusals.append(cls(self.ctx.sf.relpath, self.ctx.line(node), detail))

    def reaching_sites(self, node: cst.CSTNode) -> tuple[list[CallSite], list[CallSite]]:
        """The target calls and reaching-function calls in a node, each with its index among the node's calls."""
        targets, ancestors = [], []
        for index, call in enumerate(calls_in(node)):
            site = self.a.calls.get(call)
            if site is None:
                continue
            if site.targets:
                targets.append((site, index))
            elif any(c in self.reaching for c in site.callees):
                ancestors.append((site, index))
            if site.args_hold_targets and site.unresolved and not site.targets:
                self.refuse(UnresolvedCall, call, f"`{site.code}` passes target modules to a call the analysis can't follow ({site.unresolved or 'unknown callee'})")
        return targets, ancestors

    def refuse_guarded_call(self, stmt: cst.CSTNode, site: CallSite) -> None:
        """A reaching call inside `a if c else b` or `c and f()` is decided when emitting, like an `if`,
        when `c` is a config value or an input; on a tensor value it is refused. Inside a comprehension it is
        refused unless the comprehension has the form emission unrolls (`unrolled_comprehension`); under an `if`
        decided when emitting, only if that branch runs: emission refuses it there."""
        for call, guards in _calls_with_guards(stmt):
            if self.ctx.line(call) != site.line or self.ctx.column(call) != site.column:
                continue
            for guard in guards:
                test = guard.test
                if test is not None:
                    self.refuse_binding_header(test, "a test that decides whether target calls run")
                if test is None and (self.branches or unrolled_comprehension(stmt, guard.owner, call)):
                    # under a condition decided when emitting: refused there if this branch runs; or a comprehension
                    # emission unrolls over the modules it runs over (emit/comprehension.py), refused there if not
                    continue
                if test is None:
                    self.refuse(UnsupportedStatement, call, f"a reaching call inside a {guard.label}: `{site.code}`")
                elif self.conditions.classify(test) == "dynamic":
                    self.refuse(DynamicCondition, call, f"`{' '.join(self.ctx.code(test).split())}` decides whether `{site.code}` runs ({guard.label})")

    def refuse_binding_header(self, expr: cst.BaseExpression, where: str) -> None:
        """What emission decides or re-enters around target calls must not bind a name (`if (layer :=
        self.layers[i]) is not None`, `with (ctx := ...)`): emission does not run it there, and would read the
        name as it was before."""
        walrus = next(iter(walk(expr, only=(cst.NamedExpr,))), None)
        if walrus is not None:
            self.refuse(UnsupportedStatement, expr, f"`{self.ctx.code(walrus)}` binds a name in {where}")

    def block(self, stmts: list[cst.CSTNode], in_loop: bool = False) -> tuple[Statement, ...]:
        """Plan a block; an opaque statement that may exit before later reaching code is made control or refused."""
        entries = [self.statement(s, in_loop=in_loop) for s in stmts]
        # an `if` that may return (or leave an unrolled loop) decides whether later reaching code runs
        for i, (stmt, entry) in enumerate(zip(stmts, entries)):
            if entry.reaching:
                continue
            probe = exits(stmt)
            later = any(e.reaching for e in entries[i + 1 :])
            if not ((probe.found and later) or (probe.loop_exit and in_loop)):
                continue
            if isinstance(stmt, cst.If):
                entries[i] = self.statement(stmt, early_exit=True, in_loop=in_loop)
            elif isinstance(stmt, cst.SimpleStatementLine) and probe.loop_exit:
                entries[i] = Statement(Kind.CONTROL, self.ctx.span(stmt), statement=Control.EXIT)
            else:
                self.refuse(UnsupportedStatement, stmt, "a `return`, `break` or `continue` inside this statement may skip target calls")
        return _merge_opaque(entries)

    def statement(self, stmt: cst.CSTNode, early_exit: bool = False, in_loop: bool = False) -> Statement:
        """A statement's entry: opaque, target, ancestor or control (with its blocks); refuses what can't be cut."""
        lines = tuple(self.ctx.span(stmt))
        opaque = Statement(Kind.OPAQUE, lines, count=1)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return opaque
        if isinstance(stmt, cst.Match):  # its cases are not cut into subgraphs
            targets, ancestors = self.reaching_sites(stmt)
            if targets or ancestors:
                self.refuse(UnsupportedStatement, stmt, "a `match` around target calls")
            return opaque
        header = _header(stmt) if isinstance(stmt, COMPOUND) else [stmt]
        targets: list[CallSite] = []
        ancestors: list[CallSite] = []
        for h in header:
            t, a = self.reaching_sites(h)
            targets += t
            ancestors += a
        if not isinstance(stmt, COMPOUND):
            if not targets and not ancestors:
                return opaque
            # several reaching calls: emission decides which run and takes the statement apart (emit/apart.py)
            for site, _ in targets + ancestors:
                self.refuse_guarded_call(stmt, site)
            site, index = (targets or ancestors)[0]
            return Statement(Kind.TARGET if targets else Kind.ANCESTOR, lines, call=_site_call(site, self.reaching, index))
        if targets or ancestors:
            self.refuse(UnsupportedStatement, stmt, "a reaching call in the header of a compound statement")
        cls = self.conditions.classify(stmt.test) if isinstance(stmt, cst.If) else None
        decided = cls in ("static", "input")
        self.guards += decided
        branch = cls is not None and (decided or self.a.node != self.root)
        self.branches += branch
        try:
            blocks = {name: self.block(body, in_loop=in_loop) for name, body in statement_blocks(stmt)}
            if isinstance(stmt, cst.For) and any(e.reaching for b in blocks.values() for e in b):
                # a loop that is unrolled: its `break` / `continue` must be decided too
                blocks = {name: self.block(body, in_loop=True) for name, body in statement_blocks(stmt)}
        finally:
            self.guards -= decided
            self.branches -= branch
        inner = any(e.reaching for b in blocks.values() for e in b)
        if not inner and not early_exit:
            return opaque
        fields: dict = {"statement": Control.TRY if isinstance(stmt, TRY) else Control(type(stmt).__name__.lower())}
        if isinstance(stmt, cst.If):
            fields["condition"] = Condition(" ".join(self.ctx.code(stmt.test).split()), Decided(cls))
            self.refuse_binding_header(stmt.test, "a test that decides whether target calls run")
            if cls == "dynamic" and not self.guards and self.a.node == self.root:
                # elsewhere (a function reached through a branch decided per input) the refusal waits
                # for emission, which refuses only if it reaches the condition and can't decide it
                self.refuse(DynamicCondition, stmt, f"`{self.ctx.code(stmt.test)}`")
        elif isinstance(stmt, cst.For):
            fields["iter"] = Condition(self.ctx.code(stmt.iter), Decided(self.conditions.iterable(stmt.iter)))
            self.refuse_binding_header(stmt.iter, "the iterable of a loop around target calls")
            if stmt.orelse is not None:
                self.refuse(UnsupportedStatement, stmt, "a `for ... else` around target calls")
            for body_stmt in stmt.body.body:
                if exits(body_stmt).found:
                    self.refuse(UnsupportedStatement, body_stmt, "a `return` inside a loop over targets")
                    break
        elif isinstance(stmt, cst.While):
            self.refuse(UnsupportedStatement, stmt, f"`while {self.ctx.code(stmt.test)}`: only a `for` loop is unrolled")
        elif isinstance(stmt, TRY):
            self.refuse(UnsupportedStatement, stmt, "a `try` around target calls")
        elif isinstance(stmt, cst.With):
            fields["items"] = tuple(self.ctx.code(item) for item in stmt.items)
            for item in stmt.items:
                self.refuse_binding_header(item.item, "a `with` item around target calls")
                if not self.reenterable(item.item):
                    self.refuse(UnsupportedStatement, stmt, f"`with {self.ctx.code(item.item)}` around target calls is re-entered by every subgraph, and it is not known to be safe to re-enter")
        return Statement(Kind.CONTROL, lines, blocks=tuple((k, v) for k, v in blocks.items() if v or k == "body"), **fields)


    def reenterable(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A context manager that only sets a mode (grad, autocast): entering it once per subgraph is exact."""
        if isinstance(node, cst.Call):
            return _dotted(node.func).rpartition(".")[2] in REENTERABLE_CONTEXTS
        if isinstance(node, cst.IfExp):
            return self.reenterable(node.body, depth) and self.reenterable(node.orelse, depth)
        if isinstance(node, cst.NamedExpr):  # (the binding is refused on its own)
            return self.reenterable(node.value, depth)
        if isinstance(node, cst.Name) and depth < 3:
            bound = self.ctx.locals.get(node.value) or []
            return bool(bound) and all(kind == "expr" and self.reenterable(value, depth + 1) for kind, value, _ in bound)
        return False


# context managers that set a mode and restore it: re-entering one per subgraph changes nothing
REENTERABLE_CONTEXTS = {
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast", "nullcontext",
    "sdpa_kernel", "disable", "device",
}


def _dotted(node: cst.BaseExpression) -> str:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
    return ".".join(reversed(parts))


def unrolled_comprehension(stmt: cst.CSTNode, comp: cst.CSTNode, call: cst.Call) -> bool:
    """Whether a reaching call in a comprehension has the form emission unrolls, one statement per item, when what
    the comprehension runs over holds targets (emit/comprehension.py): a statement of its own, a list comprehension or
    generator expression with one `for`, no `if` and a plain name as its variable, the call in its element, and no
    lambda, comprehension or `:=` inside that element."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(comp, (cst.ListComp, cst.GeneratorExp))):
        return False
    for_in = comp.for_in
    if for_in.inner_for_in is not None or for_in.ifs or for_in.asynchronous is not None \
            or not isinstance(for_in.target, cst.Name):
        return False
    inside = list(walk(comp.elt, only=(cst.Call, cst.Lambda, cst.NamedExpr, *COMPREHENSIONS)))
    return any(node is call for node in inside) and not any(
        isinstance(node, (cst.Lambda, cst.NamedExpr, *COMPREHENSIONS)) for node in inside)


@dataclass(frozen=True, eq=False)
class ExpressionGuard:
    """A condition inside a statement that decides whether a call in it runs.

    `owner` is the `a if c else b` or `a and b` / `a or b` node, `side` the part that holds the
    call (`body` / `orelse` of a conditional expression, `right` of a boolean operation), `test`
    the expression that decides it (None for the element of a comprehension)."""

    label: str
    owner: cst.CSTNode
    side: str
    test: cst.BaseExpression | None

    def runs(self, truth: bool) -> bool:
        """Whether the side holding the call runs when `test` has this truth value."""
        if isinstance(self.owner, cst.IfExp):
            return truth if self.side == "body" else not truth
        return truth if isinstance(self.owner.operator, cst.And) else not truth

    def other(self) -> str:
        """The side whose value the expression takes when the call's side does not run."""
        return {"body": "orelse", "orelse": "body", "right": "left"}[self.side]


def expression_guards(stmt: cst.CSTNode, call: cst.Call) -> list[ExpressionGuard]:
    """The guards around one call of a statement, outermost first."""
    for node, guards in _calls_with_guards(stmt):
        if node is call:
            return guards
    return []


def _calls_with_guards(stmt: cst.CSTNode) -> list[tuple[cst.Call, list[ExpressionGuard]]]:
    out = []

    def visit(node: cst.CSTNode, guards: list) -> None:
        if isinstance(node, cst.Call):
            out.append((node, list(guards)))
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return
        if isinstance(node, cst.IfExp):
            visit(node.test, guards)
            visit(node.body, guards + [ExpressionGuard("conditional expression", node, "body", node.test)])
            visit(node.orelse, guards + [ExpressionGuard("conditional expression", node, "orelse", node.test)])
            return
        if isinstance(node, cst.BooleanOperation):
            visit(node.left, guards)
            label = f"`{'and' if isinstance(node.operator, cst.And) else 'or'}` expression"
            visit(node.right, guards + [ExpressionGuard(label, node, "right", node.left)])
            return
        if isinstance(node, COMPREHENSIONS):
            for child in children(node):
                visit(child, guards + [ExpressionGuard("comprehension", node, "element", None)])
            return
        for child in children(node):
            visit(child, guards)

    visit(stmt, [])
    return out


def _is_generator(fn: cst.FunctionDef) -> bool:
    return any(True for _ in walk(fn.body, skip=(cst.FunctionDef, cst.Lambda, cst.ClassDef), only=(cst.Yield,)))


def _user_decorators(ctx, names: list[str]) -> list[str]:
    """Decorators named like a modelled one but defined outside transformers (matched by name, they'd be wrong);
    a class wrapper may come from kernels too, which defines it."""
    from staticexec.analysis.decorators import CLASS_WRAPPERS, MODELS, base_name

    sf = ctx.sf
    in_transformers = sf.module.split(".")[0] == "transformers"
    out = []
    for name in names:
        base = base_name(name)
        if (base not in MODELS and base not in CLASS_WRAPPERS) or base == "staticmethod":
            continue
        origin = _binding_module(sf.tree, base)
        homes = ("transformers", "kernels") if base in CLASS_WRAPPERS else ("transformers",)
        if origin == "<local>" and not in_transformers:
            out.append(name)
        elif origin not in (None, "<local>") and not (origin.split(".")[0] in homes or (origin.startswith(".") and in_transformers)):
            out.append(name)
    return out


def _binding_module(tree, name: str) -> str | None:
    """Where a module-level name comes from: '<local>' (defined here), an imported module, or None."""
    import ast

    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = "<local>"
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = "<local>"
        elif isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            found = "." * node.level + (node.module or "")
    return found


def _free_names(ctx) -> set[str]:
    """Names a function reads that it does not bind: its module's globals and builtins."""
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(ctx.code(ctx.node)))
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not tree.body[0]:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return loaded - bound


def _shadowed_names(graph: CallGraph, reaching: set[str]) -> list[Message]:
    """An inlined callee reading a module-level name that the (not renamed) root forward binds locally."""
    root = graph.functions.get(graph.root)
    if root is None:
        return []
    root_names = (set(root.ctx.locals) | set(root.ctx.params)) - {root.ctx.params[0] if root.ctx.params else ""}
    out: list[Message] = []
    for nid in sorted(reaching - {graph.root}):
        analysis = graph.functions.get(nid)
        if analysis is None:
            continue
        for name in sorted(_free_names(analysis.ctx) & root_names):
            out.append(ShadowedName(root.ctx.sf.relpath, root.ctx.line(root.ctx.node),
                                    f"{graph.root.partition(':')[2]} binds `{name}`, and the inlined "
                                    f"{analysis.ref.qualname} ({analysis.ctx.sf.relpath}:{analysis.ctx.line(analysis.ctx.node)}) "
                                    f"reads the module-level `{name}`"))
    return out


def _merge_opaque(entries: list[Statement]) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for e in entries:
        if not e.reaching and out and not out[-1].reaching:
            out[-1] = replace(out[-1], lines=(out[-1].lines[0], e.lines[1]), count=out[-1].count + e.count)
        else:
            out.append(e)
    return tuple(out)


def _site_call(site: CallSite, reaching: set[str], index: int) -> Call:
    return Call(line=site.line, code=" ".join(site.code.split()), index=index, targets=tuple(site.targets),
                callees=tuple(c for c in site.callees if c in reaching))


# files beside the root's that are searched for a target class (a model folder holds a few)
MAX_FOLDER_FILES = 200


def _path_doubts(graph: CallGraph, resolver: Resolver, root: ClassRef, targets: list[str]) -> list[Message]:
    """Why "no call path" can't be said when the root reaches no target along the calls the analysis
    followed: the calls it could not resolve, and the called classes it did not analyse (no target
    was found below them) whose attributes did not all resolve. Each could be the path. Asked only
    when a target class is defined where the analysis looked (a name defined nowhere it looked, such
    as a misspelt one, leaves "no call path" true)."""
    modules = {root.module} | {a.ref.module for a in graph.functions.values()} | {c.module for c in graph.pruned}
    if not _defined_in(targets, modules, root):
        return []
    out: list[Message] = []
    for analysis in graph.functions.values():
        if is_framework(analysis.ref.module):
            continue  # transformers' utilities construct no modules and call only what they are given
        for site in analysis.calls.values():
            if site.unresolved or site.doubt:
                out.append(UnresolvedCall(analysis.ctx.sf.relpath, site.line,
                                          f"`{site.code}`: {site.unresolved or site.doubt}; no call the analysis "
                                          "followed reaches a target, so this one might"))
            for name in site.pruned:
                why = resolver.unknowns_below(ClassRef.parse(name))
                if why:
                    out.append(UnresolvedCall(analysis.ctx.sf.relpath, site.line,
                                              f"`{site.code}` calls {name.rpartition(':')[2]}, not analysed as no target "
                                              f"was found below it, but {why}"))
    return sorted(set(out), key=lambda m: (m.path, m.line, m.kind, m.detail))


def _defined_in(targets: list[str], modules: set[str], root: ClassRef) -> bool:
    """Whether a class named like a target is defined in one of `modules` or in a file beside the root's."""
    names = {t.rpartition(".")[2] for t in targets}
    for module in sorted(modules):
        sf = load_module(module)
        if sf is not None and any(sf.find_class(n) is not None for n in names):
            return True
    sf = load_module(root.module)
    if sf is None or is_framework(root.module):
        return False
    folder = os.path.dirname(sf.path)
    pattern = re.compile(r"^\s*class\s+(" + "|".join(re.escape(n) for n in sorted(names)) + r")\b", re.M)
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".py"))[:MAX_FOLDER_FILES]:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                if pattern.search(handle.read()):
                    return True
        except (OSError, UnicodeDecodeError):
            continue
    return False


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
    functions: dict[str, Function] = {}
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
        for name in _user_decorators(ctx, decorators):
            refusals.append(UnsupportedDecorator(ctx.sf.relpath, ctx.line(ctx.node),
                                                 f"@{name} on {analysis.ref.qualname} is not transformers' {name.partition('(')[0]}, only named like it"))
        for declared in walk(ctx.node.body, only=(cst.Nonlocal,)):  # in a function nested in it
            names = ", ".join(f"`{item.name.value}`" for item in declared.names)
            refusals.append(UnsupportedStatement(ctx.sf.relpath, ctx.line(declared), (
                f"a nested function declares {names} nonlocal: calling it rebinds a local of {analysis.ref.qualname}, "
                "which emission does not follow")))
        if _is_generator(ctx.node):
            refusals.append(UnsupportedStatement(ctx.sf.relpath, ctx.line(ctx.node),
                                                 f"{analysis.ref.qualname} is a generator (`yield`): its target calls run when it is iterated"))
        start, end = ctx.span(ctx.node)
        owner = analysis.ref.owner
        owner_node = ctx.sf.find_class(owner.name) if owner is not None else None
        class_wrappers = class_wrapper_names(owner_node, analysis.ref.name) if owner_node is not None else []
        class_decorators = [name for name, _ in class_wrappers]
        for name in _user_decorators(ctx, class_decorators):
            line = next(line for n, line in class_wrappers if n == name)
            refusal = UnsupportedDecorator(ctx.sf.relpath, line, f"@{name} on {owner.name} is not the "
                                           f"{name.partition('(')[0]} of transformers or kernels, only named like it")
            if refusal not in refusals:
                refusals.append(refusal)
        functions[nid] = Function(
            function=str(analysis.ref),
            self_class=str(analysis.self_class) if analysis.self_class else None,
            path=ctx.sf.relpath,
            lines=(start, end),
            source_hash=ctx.source_hash,
            decorators=tuple(decorators),
            class_decorators=tuple(class_decorators),
            params=tuple(ctx.params),
            statements=statements,
        )
    unresolved = []
    for nid, analysis in sorted(graph.functions.items()):
        for site in sorted(analysis.calls.values(), key=lambda s: (s.line, s.column)):
            if site.unresolved:
                unresolved.append(Unresolved(
                    function=nid,
                    path=analysis.ctx.sf.relpath,
                    line=site.line,
                    call=site.code,
                    reason=site.unresolved,
                    receiver_is_self=site.receiver_is_self,
                    reaching_function=nid in reaching,
                ))
    for analysis in graph.functions.values():
        for site in analysis.calls.values():
            if site.hides_target:
                refusals.append(UnresolvedCall(analysis.ctx.sf.relpath, site.line, f"`{site.code}`: {site.unresolved or site.hides_target}"))
    refusals += mutation_refusals(graph, builder, reaching)
    refusals += _shadowed_names(graph, reaching)
    if not refusals:
        for analysis in graph.functions.values():
            for site in analysis.calls.values():
                if site.args_hold_targets and site.unresolved and not site.targets:
                    refusals.append(UnresolvedCall(analysis.ctx.sf.relpath, site.line, f"`{site.code}`: {site.unresolved}"))
    if refusals:
        raise Refused(sorted(set(refusals), key=lambda m: (m.path, m.line, m.kind, m.detail)))
    if graph.root not in reaching:
        doubts = _path_doubts(graph, resolver, root, targets)
        if doubts:
            raise Refused(doubts)
        found = ", ".join(sorted(targets))
        ctx = graph.functions[graph.root].ctx if graph.root in graph.functions else None
        where = (ctx.sf.relpath, ctx.line(ctx.node)) if ctx is not None else (root.module, 1)
        raise Refused([NoCallPath(*where, f"{root.name}.forward calls none of: {found}")])
    def step(caller: str, callee: str, site: CallSite) -> str:
        text = f"{graph.functions[caller].ctx.sf.relpath}:{site.line} {' '.join(site.code.split())[:100]}"
        return text + (f" -> {callee[len('target:'):]}" if callee.startswith("target:") else "")

    return Plan(
        schema=SCHEMA_VERSION,
        staticexec=__version__,
        transformers=transformers_version(),
        architecture=architecture,
        root=graph.root,
        targets={name: str(ref) for name, ref in sorted(graph.targets.items())},
        model_types=tuple(sorted(set(model_types or []) | resolver.model_types)),
        functions={nid: replace(fn, chain=tuple(step(a, b, s) for a, b, s in graph.chain(nid))) for nid, fn in functions.items()},
        unresolved=tuple(unresolved),
        not_analysed=tuple(sorted(str(c) for c in graph.pruned)),
    ).sealed()
