"""Stage 3, call graph: functions are nodes, call sites are edges, target classes are sinks.

Calling `self.x(...)` where `x` holds a module is an edge to that class's
`forward`; calling a function or method is an edge to it, with the
argument values joined into its parameters (so a module-level helper that
receives `self.layers` is analysed with that container). A function
*reaches* when a path leads from it to a target.
"""

from __future__ import annotations

import sys

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

import libcst as cst

from staticexec.analysis import decorators as deco
from staticexec.analysis.scopes import COMPREHENSIONS, all_parameters, comprehension_scope, free_called_names, walk
from staticexec.analysis.session import current
from staticexec.analysis.functions import FunctionContext, bind_arguments
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.source import ClassRef, FunctionRef, is_nested_function
from staticexec.analysis.values import (
    DATA,
    ClassObject,
    Constant,
    Container,
    Data,
    Function,
    Instance,
    Items,
    Unknown,
    Value,
    join,
    may_hold_module,
    one,
)

MAX_ROUNDS = 12
# a call of an nn.Sequential runs this forward with the container as `self`
SEQUENTIAL_FORWARD = FunctionRef("torch.nn.modules.container", "Sequential.forward")
# builtins that never call what they are given
NON_CALLING_BUILTINS = {
    "enumerate", "zip", "list", "tuple", "reversed", "iter", "len", "isinstance", "issubclass", "hasattr",
    "getattr", "setattr", "id", "type", "range", "print", "repr", "str", "bool", "dict", "set", "values", "items",
    "callable", "super", "next",
}
# methods that enter a module without its `__call__` (hooks skipped) or fetch modules by a name
# the analysis can't follow: on a module that may hold a target, the call hides where targets run
HIDING_METHODS = {
    "forward", "__call__", "_call_impl", "_wrapped_call_impl", "get_submodule", "modules", "named_modules",
    "children", "named_children", "apply", "__getattr__", "__getattribute__",
}
HIDING_ATTRIBUTES = {"_modules", "__dict__"}
# builtins that run code the analysis never sees
CODE_RUNNING_BUILTINS = {"exec", "eval", "compile", "__import__"}
# torch functions that call their first argument with the other arguments, less their own keywords:
# `checkpoint(layer, h, mask, use_reentrant=False)` runs `layer(h, mask)` (gradient checkpointing)
RUNS_FIRST_ARGUMENT = {
    FunctionRef("torch.utils.checkpoint", "checkpoint"): {
        "use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug"},
}


def node_id(ref: FunctionRef, self_class: ClassRef | None) -> str:
    """`module:Class.method`; a method analysed for a subclass instance adds `[Subclass]`."""
    if self_class is None or self_class == ref.owner:
        return str(ref)
    return f"{ref}[{self_class.module}:{self_class.name}]" if self_class.module != ref.module else f"{ref}[{self_class.name}]"


def target_node(cls: ClassRef) -> str:
    """The graph node of a target class: `target:module:Class`, a sink."""
    return f"target:{cls}"


@dataclass(frozen=True)
class CallSite:
    """One call in a function: what it can call, and whether it is a target or could not be resolved."""

    line: int
    column: int
    code: str
    callees: tuple[str, ...]
    targets: tuple[str, ...]
    unresolved: str = ""
    args_hold_targets: bool = False
    receiver_is_self: bool = False
    hides_target: str = ""  # why this call may run a target where the analysis can't see it
    pruned: tuple[str, ...] = ()  # classes it calls that were not analysed: no target was found below them
    doubt: str = ""  # why it might reach a target by a path the analysis does not follow (said when none is found)


@dataclass
class FunctionAnalysis:
    """One analysed function: its node, source, `self` class, parsed context, parameter values and call sites."""
    node: str
    ref: FunctionRef
    self_class: ClassRef | None
    ctx: FunctionContext
    env: dict[str, Value]
    calls: dict[cst.CSTNode, CallSite] = field(default_factory=dict)  # keyed by the libcst node (by identity)


@dataclass
class CallGraph:
    """The call graph from the root forward: analysed functions, the targets seen, the classes pruned."""
    graph: nx.DiGraph
    root: str
    functions: dict[str, FunctionAnalysis]
    targets: dict[str, ClassRef]  # target class name -> where it is defined (for those seen)
    pruned: set[ClassRef] = field(default_factory=set)  # called, but can't hold a target: not analysed

    def reaching(self) -> set[str]:
        """The nodes from which a path leads to a target node."""
        import networkx as nx  # imported where a graph is built or read: splitting from a shipped plan never does

        sinks = [n for n in self.graph if n.startswith("target:")]
        out: set[str] = set()
        for s in sinks:
            out |= nx.ancestors(self.graph, s)
        return out

    def chain(self, start: str) -> list[tuple[str, str, CallSite]]:
        """The shortest path from a function down to a target: (caller, callee, call site) per step."""
        import networkx as nx

        sinks = [n for n in self.graph if n.startswith("target:")]
        best = None
        for s in sinks:
            if nx.has_path(self.graph, start, s):
                path = nx.shortest_path(self.graph, start, s)
                if best is None or (len(path), path) < (len(best), best):
                    best = path
        if best is None:
            return []
        return [(a, b, self.graph.edges[a, b]["site"]) for a, b in zip(best, best[1:])]


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls inside a node, outermost first in source order, not inside nested functions, classes
    or lambdas (a node that is one of those holds none). Nodes never change, so each is walked once per
    session (emission asks again for every unrolled copy of a loop body)."""
    table = current().table("callgraph.calls_in")
    hit = table.get(id(node))
    if hit is None or hit[0] is not node:
        hit = table[id(node)] = (node, list(walk(node, skip=(cst.Lambda, cst.FunctionDef, cst.ClassDef), only=(cst.Call,))))
    return list(hit[1])


class CallGraphBuilder:
    """Analyses functions from the root forward outwards, to a fixed point of parameter values."""

    def __init__(self, resolver: Resolver, targets: set[str]) -> None:
        self.resolver = resolver
        self.targets = targets
        import networkx as nx

        self.graph = nx.DiGraph()
        self.functions: dict[str, FunctionAnalysis] = {}
        self.envs: dict[str, dict[str, Value]] = {}
        self.refs: dict[str, tuple[FunctionRef, ClassRef | None]] = {}
        self.seen_targets: dict[str, ClassRef] = {}
        self._holds: dict[ClassRef, bool] = {}
        self.pruned: set[ClassRef] = set()
        self.root: ClassRef | None = None  # the instance holds targets even where the source can't tell

    def is_target(self, cls: ClassRef) -> bool:
        """Whether a class is a target, by its unqualified name."""
        return cls.name.rpartition(".")[2] in self.targets

    def may_hold_target(self, cls: ClassRef) -> bool:
        """Whether an instance of `cls` may hold a target below it, by the classes its attributes resolve to."""
        hit = self._holds.get(cls)
        if hit is None:
            below = self.resolver.submodule_classes(cls, depth=8)
            hit = self._holds[cls] = any(self.is_target(c) for c in below)
        return hit

    def build(self, root: ClassRef) -> CallGraph:
        """Analyse from the root class's forward until parameter values stop changing (at most `MAX_ROUNDS`)."""
        self.root = root
        forward = self.resolver.find_method(root, "forward")
        if forward is None:
            from staticexec.messages import UsageError

            if self.resolver.find_method(root, "generate"):
                raise UsageError(f"{root.name} has no forward of its own to split (it only generates)")
            unread = self.resolver.unread_class(root)
            raise UsageError(f"{root.name} has no forward to split: no `def forward` in it or a base staticexec reads"
                             + (f" ({unread})" if unread else ""))
        root_id = self._enqueue(forward, root, {})
        for _ in range(MAX_ROUNDS):
            pending = [n for n in self.envs if n not in self.functions or self.functions[n].env != self.envs[n]]
            if not pending:
                break
            for n in sorted(pending):
                self._analyse(n)
        return CallGraph(self.graph, root_id, self.functions, self.seen_targets, self.pruned)

    def _param_names(self, nid: str) -> list[str] | None:
        """The named parameters of an enqueued function (None when its source is not found)."""
        ctx = self.resolver.function(self.refs[nid][0])
        return None if ctx is None else list(ctx.params)

    def _enqueue(self, ref: FunctionRef, self_class: ClassRef | None, args: dict[str, Value]) -> str:
        nid = node_id(ref, self_class)
        self.refs[nid] = (ref, self_class)
        env = self.envs.setdefault(nid, {})
        for k, v in args.items():
            env[k] = join(env.get(k, frozenset()), v)
        self.graph.add_node(nid)
        return nid

    def _analyse(self, nid: str) -> None:
        ref, self_class = self.refs[nid]
        ctx = self.resolver.function(ref)
        if ctx is None:
            return
        env = self._full_env(ctx, self_class, self.envs[nid])
        analysis = FunctionAnalysis(nid, ref, self_class, ctx, dict(self.envs[nid]))
        self.functions[nid] = analysis
        for old in list(self.graph.successors(nid)):
            self.graph.remove_edge(nid, old)
        inside = self._comprehension_envs(ctx, env)
        for call in calls_in(ctx.node.body):
            site, edges = self._call_site(call, ctx, inside.get(id(call), env), self_class)
            analysis.calls[call] = site
            for callee, args in edges:
                self.graph.add_edge(nid, callee, site=site)
                if not callee.startswith("target:"):
                    ref2, cls2 = self.refs[callee]
                    self._enqueue(ref2, cls2, args)
        for node, reason in self._hidden_uses(ctx, env):
            analysis.calls[node] = CallSite(
                line=ctx.line(node), column=ctx.column(node), code=_short(ctx.code(node)), callees=(), targets=(),
                unresolved=reason, hides_target=reason,
            )

    def _comprehension_envs(self, ctx: FunctionContext, env: dict[str, Value]) -> dict[int, dict[str, Value]]:
        """For each call inside a comprehension (its element, conditions or a later `for`'s iterable), by id: the
        environment it is evaluated in, with the comprehension's variables bound to the items of what they run over
        (`layer` in `[layer(h) for layer in self.layers]`); a comprehension inside another's element is evaluated in
        the outer one's. Calls outside any comprehension are not listed."""
        scoped: dict[int, dict[str, Value]] = {}
        skip = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
        for comp in walk(ctx.node.body, skip=skip, only=COMPREHENSIONS):  # outermost first
            inner = self.resolver.comprehension_env(comp.for_in, ctx, scoped.get(id(comp), env))
            for part in comprehension_scope(comp)[1]:
                for node in walk(part, skip=skip, only=(cst.Call, *COMPREHENSIONS)):
                    scoped[id(node)] = inner
        return scoped

    def _reaches_target(self, value: Value) -> bool:
        """Whether a value is, or may hold below it, a target module."""
        return _holds_target(value, self) or any(
            isinstance(a, Instance) and not self.resolver.is_external(a.cls.module)
            and (a.cls == self.root or self.may_hold_target(a.cls))
            for a in value
        )

    def _hidden_uses(self, ctx: FunctionContext, env: dict[str, Value]):
        """Nested functions and lambdas that use a target-holding name, and `x._modules` / `x.__dict__`."""
        out = []
        for node in walk(ctx.node.body, only=(cst.Attribute, cst.FunctionDef, cst.Lambda)):
            if isinstance(node, cst.Attribute) and node.attr.value in HIDING_ATTRIBUTES:
                if self._reaches_target(self.resolver.eval(node.value, ctx, env)):
                    out.append((node, f"`{_short(ctx.code(node))}` reads modules by name, which the analysis can't follow"))
            elif isinstance(node, (cst.FunctionDef, cst.Lambda)):
                kind = "a lambda" if isinstance(node, cst.Lambda) else f"the nested function {node.name.value}()"
                for name, use in sorted(free_called_names(node).items()):
                    if self._reaches_target(self.resolver.eval(use, ctx, env)):
                        out.append((node, f"{kind} uses `{name}`, which holds target modules: its calls are not analysed"))
                        break
                else:
                    default = self._default_reaching_target(node, ctx, env)
                    if default:
                        out.append((node, f"{kind} takes {default}, which is or may hold target modules: its calls "
                                          "are not analysed"))
        return out

    def _default_reaching_target(self, node: cst.FunctionDef | cst.Lambda, ctx: FunctionContext,
                                 env: dict[str, Value]) -> str:
        """A parameter of a nested function whose default, taken from around the definition, is or may hold target
        modules (`def run(h, layer=layer)`), said as "`layer` by default from `layer`"; '' when none is."""
        for param in all_parameters(node.params):
            if param.default is not None and self._reaches_target(self.resolver.eval(param.default, ctx, env)):
                return f"`{param.name.value}` by default from `{_short(ctx.code(param.default))}`"
        return ""

    def _full_env(self, ctx: FunctionContext, self_class: ClassRef | None, args: dict[str, Value]) -> dict[str, Value]:
        env: dict[str, Value] = {}
        params = ctx.params
        for i, name in enumerate(params):
            if i == 0 and self_class is not None:
                env[name] = args.get(name) or one(Instance(self_class))
            elif name in args:
                env[name] = args[name]
            else:
                env[name] = DATA
        return env

    def _call_site(self, call: cst.Call, ctx: FunctionContext, env: dict[str, Value], self_class: ClassRef | None):
        line, column, code = ctx.line(call), ctx.column(call), ctx.code(call)
        if len(code) > 160:
            code = code[:157] + "..."
        func_value = self._callee(call, ctx, env, self_class)
        runner = [a.ref for a in func_value if isinstance(a, Function) and a.ref in RUNS_FIRST_ARGUMENT]
        if runner and len(func_value) == 1 and call.args and call.args[0].keyword is None and not call.args[0].star:
            first = self.resolver.eval(call.args[0].value, ctx, env)
            if first and all(isinstance(a, Instance) for a in first):
                # a module given to it: analysed as the call it makes (the site keeps the code as written)
                own = RUNS_FIRST_ARGUMENT[runner[0]]
                call = call.with_changes(func=call.args[0].value, args=[
                    a for a in call.args[1:] if a.keyword is None or a.keyword.value not in own])
                func_value = first
        # a call the call graph does not enter (data such as a tensor's method, a builtin, torch's
        # functions) is only asked whether its arguments hold targets, which a module-level name
        # never does: those are not resolved
        enters = any(
            isinstance(a, (Instance, Container))
            or (isinstance(a, Function) and a.ref.module != "builtins" and not self.resolver.is_external(a.ref.module))
            for a in func_value
        )
        arg_values = [
            DATA if not enters and _module_level_reference(a.value, env, ctx.locals) else self.resolver.eval(a.value, ctx, env)
            for a in call.args
        ]
        hidden = self._hiding_reason(call, ctx, env, func_value, arg_values)
        callees: list[str] = []
        targets: list[str] = []
        edges: list[tuple[str, dict[str, Value]]] = []
        unresolved = []
        pruned: list[str] = []
        doubts: list[str] = []
        for atom in sorted(func_value, key=repr):
            if isinstance(atom, Instance):
                cls = atom.cls
                if self.is_target(cls):
                    self.seen_targets.setdefault(cls.name.rpartition(".")[2], cls)
                    targets.append(cls.name.rpartition(".")[2])
                    edges.append((target_node(cls), {}))
                    self.graph.add_node(target_node(cls))
                    continue
                if self.resolver.is_container(cls) and not self._own_forward(cls):
                    continue  # a container of torch's, or one whose forward is torch's
                if self.resolver.is_external(cls.module):
                    continue
                if not self.may_hold_target(cls) and not any(_holds_target(v, self) for v in arg_values):
                    self.pruned.add(cls)  # emission checks that no target sits below these
                    pruned.append(str(cls))
                    continue
                fwd = self.resolver.find_method(cls, "forward")
                if fwd is None or self.resolver.is_external(fwd.module):
                    continue
                nid = self._enqueue(fwd, cls, {})
                callees.append(nid)
                edges.append((nid, self._bind(fwd, call, arg_values, bound=True)))
            elif isinstance(atom, Container):
                if _holds_target(atom.elem, self):
                    # only nn.Sequential among the containers is callable: its own forward, a loop over its
                    # children, is analysed with `self` the container (emission checks the forward that runs)
                    nid = self._enqueue(SEQUENTIAL_FORWARD, SEQUENTIAL_FORWARD.owner, {})
                    callees.append(nid)
                    edges.append((nid, {"self": one(atom), **self._bind(SEQUENTIAL_FORWARD, call, arg_values, bound=True)}))
            elif isinstance(atom, Function):
                fref = atom.ref
                if fref.module == "builtins" and fref.qualname in NON_CALLING_BUILTINS:
                    continue
                if fref.module == "builtins" or self.resolver.is_external(fref.module):
                    if any(_holds_target(v, self) for v in arg_values):
                        unresolved.append(f"{fref.qualname}() outside the analysed code receives target modules")
                    continue
                fctx = self.resolver.function(fref)
                if fctx is not None and is_nested_function(fctx.sf, fref.qualname):
                    # a function defined in another's body is not entered by the call graph: the names it takes
                    # from around it are the outer function's locals (a nested def that calls a target-holding
                    # name is refused where it is defined, _hidden_uses); the resolver reads what it returns
                    doubts.append(self._nested_doubt(fref, ctx, call, arg_values))
                    continue
                # a static method looked up on an instance is a plain function: no self, no class;
                # `Fn.apply`'s forward (bound to the autograd context, Data) does take its context first
                autograd_context = atom.bound is not None and all(isinstance(b, Data) for b in atom.bound)
                bound = atom.bound is not None and (autograd_context or not self._is_static(fref))
                bound_cls = None
                if bound:
                    classes = [a.cls for a in atom.bound if isinstance(a, Instance)]
                    bound_cls = classes[0] if classes else None
                if bound_cls is None and not any(may_hold_module(v) for v in arg_values):
                    continue  # a plain function given no module can't reach one
                nid = self._enqueue(fref, bound_cls, {})
                callees.append(nid)
                edges.append((nid, self._bind(fref, call, arg_values, bound=bound)))
            elif isinstance(atom, Unknown):
                unresolved.append(atom.reason)
        args_hold_targets = any(_holds_target(v, self) for v in arg_values)
        if args_hold_targets and (callees or targets):
            unpacked = [a for a, v in zip(call.args, arg_values) if a.star and _holds_target(v, self)]
            if unpacked:  # `*layers` / `**{...}` bind no parameter the analysis can follow
                unresolved.append(f"target modules passed through `{unpacked[0].star}{_short(ctx.code(unpacked[0].value))}`,"
                                  " which the analysis can't follow into the callee")
            for callee in callees:
                params = self._param_names(callee)
                extra = [a.keyword.value for a, v in zip(call.args, arg_values)
                         if a.keyword is not None and params is not None and a.keyword.value not in params
                         and _holds_target(v, self)]
                if extra:
                    unresolved.append(f"target modules passed as `{extra[0]}=`, which lands in the callee's **kwargs")
        if args_hold_targets and func_value and all(isinstance(a, (Data, Constant)) for a in func_value):
            unresolved.append(f"`{ctx.code(call.func)}` is, to the analysis, a plain value (no module or function it "
                              "follows), and the call is given target modules")
        receiver_is_self = _rooted_at(call.func, ctx.params[0] if ctx.params and self_class else None)
        if receiver_is_self and func_value and all(isinstance(a, (Data, Constant)) for a in func_value):
            # `self.x(...)` where x resolves to no module or function: emission checks the instance
            unresolved.append(f"`{ctx.code(call.func)}` resolves to no module or function")
        reason = ""
        if unresolved:
            reason = sorted(set(unresolved))[0]
        reason = reason or hidden
        site = CallSite(
            line=line,
            column=column,
            code=code,
            callees=tuple(sorted(set(callees))),
            targets=tuple(sorted(set(targets))),
            unresolved=reason,
            args_hold_targets=args_hold_targets,
            receiver_is_self=receiver_is_self,
            hides_target=hidden,
            pruned=tuple(sorted(set(pruned))),
            doubt=next((d for d in doubts if d), ""),
        )
        return site, edges

    def _nested_doubt(self, fref: FunctionRef, ctx: FunctionContext, call: cst.Call, arg_values: list[Value]) -> str:
        """Why a call of a nested function (which the call graph does not enter) might reach a target: it is given a
        value that is or may hold target modules (`*layers` too); '' when it is given none."""
        given = next((arg for arg, value in zip(call.args, arg_values) if self._reaches_target(value)), None)
        if given is None:
            return ""
        return (f"the nested function {fref.qualname.rpartition('.')[2]}() is given "
                f"`{given.star}{_short(ctx.code(given.value))}`, which is or may hold target modules, and the analysis "
                "does not enter a nested function")

    def _hiding_reason(self, call: cst.Call, ctx: FunctionContext, env: dict[str, Value], func_value: Value,
                       arg_values: list[Value]) -> str:
        """Why a call may run a target where the analysis can't see it; '' when it can't."""
        f = call.func
        code = _short(ctx.code(f))
        if isinstance(f, cst.Name) and f.value in CODE_RUNNING_BUILTINS and f.value not in ctx.locals and f.value not in ctx.params:
            # the standard library evaluates strings it builds itself (annotations, generated classes);
            # only an argument that holds a target could bring a model's module into that code
            if ctx.ref.module.split(".")[0] not in sys.stdlib_module_names or any(
                self._reaches_target(v) for v in arg_values
            ):
                return f"`{code}()` runs code the analysis never sees"
        if isinstance(f, cst.Attribute) and f.attr.value in HIDING_METHODS:
            if self._reaches_target(self.resolver.eval(f.value, ctx, env)):
                return f"`{code}` enters a module that holds targets without calling it as a module"
        if isinstance(f, cst.Name) and f.value in ("getattr", "setattr", "delattr") and len(call.args) >= 2:
            name = self.resolver.eval(call.args[1].value, ctx, env)
            constant = bool(name) and all(isinstance(a, Constant) and isinstance(a.value, str) for a in name)
            if not constant and self._reaches_target(self.resolver.eval(call.args[0].value, ctx, env)):
                return f"`{_short(ctx.code(call))}` names an attribute of a module that holds targets at run time"
        for atom in func_value:
            if isinstance(atom, Unknown) and atom.reason.startswith("a lambda that"):
                return f"`{code}` is {atom.reason}"
            if isinstance(atom, Function) and atom.ref.qualname.rpartition(".")[2] in HIDING_METHODS:
                if atom.bound is not None and any(isinstance(b, Instance) and self.is_target(b.cls) for b in atom.bound):
                    return f"`{code}` enters a target without calling it as a module (its hooks are skipped)"
                if atom.bound is None and call.args and arg_values:  # `Layer.forward(layer, h)`: its first argument
                    arg, value = call.args[0], arg_values[0]          # is the module it runs as `self`
                    if arg.star:  # `*(layer, h)`: its first item; anything else that may hold a target
                        value = frozenset(x for a in value for x in (a.items[0] if isinstance(a, Items) and a.items
                                                                      else (a,)))
                    if any(isinstance(a, Instance) and self.is_target(a.cls) for a in value) or (
                            arg.star and self._reaches_target(value)):
                        return (f"`{code}` is given `{arg.star}{_short(ctx.code(arg.value))}`, which is or may hold a "
                                "target module, as the module it runs, without calling it as a module")
        if any(_holds_target(v, self) for v in arg_values) and (
            not func_value or any(isinstance(a, (Data, Constant, Unknown, ClassObject)) for a in func_value)
        ):
            return f"`{code}` is not resolved and receives target modules"
        return ""

    def _callee(self, call: cst.Call, ctx: FunctionContext, env: dict[str, Value], self_class: ClassRef | None) -> Value:
        f = call.func
        if (
            isinstance(f, cst.Attribute)
            and isinstance(f.value, cst.Call)
            and isinstance(f.value.func, cst.Name)
            and f.value.func.value == "super"
            and self_class is not None
        ):
            owner = ctx.ref.owner
            mro = self.resolver.mro(self_class)
            after = mro[mro.index(owner) + 1 :] if owner in mro else mro[1:]
            for cls in after:
                method = self.resolver.find_method(cls, f.attr.value)
                if method is not None:
                    return one(Function(method, one(Instance(self_class))))
            return frozenset()
        return self.resolver.eval(f, ctx, env)

    def _own_forward(self, cls: ClassRef) -> bool:
        """Whether a class has a forward of its own, outside torch (a tool's ModuleList of experts)."""
        fwd = self.resolver.find_method(cls, "forward")
        return fwd is not None and not self.resolver.is_external(fwd.module)

    def _is_static(self, callee: FunctionRef) -> bool:
        ctx = self.resolver.function(callee)
        return ctx is not None and any(deco.base_name(n) == "staticmethod" for n in deco.decorator_names(ctx.node))

    def _bind(self, callee: FunctionRef, call: cst.Call, values: list[Value], bound: bool) -> dict[str, Value]:
        ctx = self.resolver.function(callee)
        if ctx is None:
            return {}
        params = ctx.params[1:] if bound else ctx.params
        return {p: values[i] for p, i in bind_arguments(params, call.args)}


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 160 else code[:157] + "..."


def _holds_target(value: Value, builder: CallGraphBuilder, depth: int = 0) -> bool:
    if depth > 4:
        return False
    for atom in value:
        if isinstance(atom, Instance) and builder.is_target(atom.cls):
            return True
        if isinstance(atom, Container) and _holds_target(atom.elem, builder, depth + 1):
            return True
    return False


def _module_level_reference(node: cst.BaseExpression, params: dict[str, Value], local_names: dict[str, list]) -> bool:
    """Whether an expression is a module-level name (neither a parameter nor a local), a dotted name
    on one, or a tuple or list of those (`(torch.Tensor, BlockMask)` given to `isinstance`).

    Its value can't hold a target: a module-level name is a class, function, module, constant or
    a module-level display of those (the resolver evaluates no call at module level), and an
    attribute of any of those is again one of those, or data. Finding which one it is can cost
    jedi whole modules (the file `BlockMask` is imported from, and what that file imports)."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(not isinstance(e, cst.StarredElement) and _module_level_reference(e.value, params, local_names)
                   for e in node.elements)
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value not in params and node.value not in local_names


def _rooted_at(node: cst.BaseExpression, name: str | None) -> bool:
    """Whether an expression is `self.a.b[...]`: attribute and item lookups on `self` (no calls between)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return name is not None and isinstance(node, cst.Name) and node.value == name
