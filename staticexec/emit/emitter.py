"""Stage 5, emit: turn a plan, a model instance and a sample input into subgraphs.

Static and input conditions are decided, loops over target containers are
unrolled (their length comes from the instance), reaching calls are inlined
(parameters bound from the call's keyword dict, locals renamed `name__k`,
`return` turned into an assignment, decorators modelled by the helpers in
runtime.py), and the resulting straight-line program is cut before each
target call. Opaque statements are copied from the model's source.

Emission reads function sources through the plan's paths and hashes; it
does not run jedi or the resolver.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import keyword
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from staticexec.analysis import decorators as deco
from staticexec.emit import liveloop, runtime, state, withitems
from staticexec.analysis.callgraph import RUNS_FIRST_ARGUMENT, calls_in, node_id
from staticexec.analysis.scopes import bound_names, children, walk
from staticexec.emit.modules import named_modules, outermost
from staticexec.emit.evaluate import PRESENT, UNKNOWN, Undecidable, evaluate, evaluate_condition, is_present, sample_value, truth
from staticexec.messages import (DecoratorMismatch, DynamicCondition, InstanceMismatch, Message, Refused, ReservedName,
                                 UndecidedCondition, UndecidedLoop, UnresolvedCall, UnsupportedStatement)
from staticexec.emit.observe import IfLines, SampleRun
from staticexec.analysis.plan import Control, Decided, Function, Kind, Plan, Statement
from staticexec.analysis.planner import statement_blocks, exits, expression_guards
from staticexec.analysis.functions import local_bindings, param_names
from staticexec.analysis.session import current
from staticexec.analysis.source import ClassRef, FunctionRef, ParsedFunction, load_file, location, parse_function, positions
from staticexec.emit.classwrap import class_wrappers, decorator_object
from staticexec.emit.cut import RUNTIME, Step, build_subgraphs, expect_module_code
from staticexec.emit.samplealias import sample_aliases
from staticexec.emit.reserved import FIXED as FIXED_NAMES, NO_GRAD, OUTPUT, reserved
from staticexec.emit.imported import own_call_refusal, running_code_refusal
from staticexec.emit.apart import decide_guards, reaching_calls, take_apart
from staticexec.emit.comprehension import CannotUnroll, comprehension_iterables, unroll
from staticexec.emit.linearize import CannotLinearize, evaluated_before
from staticexec.emit.run import arm_target_check

# tensor methods whose result is a tensor, never None
TENSOR_RESULTS = {"reshape", "view", "transpose", "permute", "contiguous", "flatten", "unsqueeze", "squeeze", "expand",
                  "to"}


class _LoopExit(Exception):
    """A decided `break` / `continue` ends the current unrolled iteration."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass
class Frame:
    """One function being emitted: the root forward or an inlined callee."""

    index: int
    node: str
    planned: Function  # the plan's analysis of the function
    fn: cst.FunctionDef
    module_globals: dict
    self_obj: Any
    rename: dict[str, str]
    values: dict[str, object]
    result: str
    origin_path: str
    line_offset: int
    tree: cst.Module  # the parsed module that holds `fn`, for positions
    file: str = ""  # the source file, as imported
    scopes: tuple[str, ...] = ()
    returned: bool = False
    defined: set = field(default_factory=set)  # names of the frame assigned so far
    exits: list = field(default_factory=list)  # decorator exits to run on the result, innermost first
    running: Any = None  # the function object that runs for this call (None: not checked)
    recheck: tuple | None = None  # how the subgraphs check it again: (runtime check, object, name, what runs)

    def local(self, name: str) -> str:
        """The emitted name of one of the frame's locals (itself when not renamed)."""
        return self.rename.get(name, name)


class _Rewrite(cst.CSTTransformer):
    """Rename names of one frame, replace one call by a variable, and keep one side of the
    conditional expressions and boolean operations decided at emit time (`choose`: node -> side)."""

    def __init__(self, rename: dict[str, str], replace: dict[cst.Call, str] | None = None,
                 choose: dict[cst.CSTNode, str] | None = None, target: cst.Call | None = None) -> None:
        self.rename = rename
        self.replace = replace or {}
        self.choose = choose or {}
        self.target = target

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        """Rename a name of the frame (a module-level name read through its module becomes an attribute)."""
        new = self.rename.get(original.value)
        if new and "." in new:
            module, _, attr = new.partition(".")
            return cst.Attribute(value=cst.Name(module), attr=cst.Name(attr))
        return updated.with_changes(value=new) if new else updated

    def leave_Global(self, original: cst.Global, updated: cst.Global) -> cst.BaseSmallStatement:
        """Names read through their module (renamed to `module__gN.NAME`) need no declaration."""
        kept = [item for item in original.names if item.name.value not in self.rename]
        if not kept:
            return cst.Pass()
        return updated.with_changes(names=[item.with_changes(comma=cst.MaybeSentinel.DEFAULT) for item in kept])

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        """Keep the attribute's name as written: only the object it is read from is renamed."""
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        """Keep a keyword argument's keyword as written."""
        return updated.with_changes(keyword=original.keyword)

    def leave_Call(self, original: cst.Call, updated: cst.BaseExpression) -> cst.BaseExpression:
        """Replace the chosen call by its variable; a target module's call goes through `call_target`."""
        var = self.replace.get(original)
        if var:
            return cst.Name(var)
        if original is self.target and isinstance(updated, cst.Call):
            return updated.with_changes(func=cst.Attribute(value=cst.Name(RUNTIME), attr=cst.Name("call_target")),
                                        args=[cst.Arg(value=updated.func), *updated.args])
        return updated

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        """Keep the side decided at emit time, if any."""
        return self._kept(original, updated)

    def leave_BooleanOperation(self, original: cst.BooleanOperation, updated: cst.BooleanOperation) -> cst.BaseExpression:
        """Keep the side decided at emit time, if any."""
        return self._kept(original, updated)

    def _kept(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        side = self.choose.get(original)
        if side is None:
            return updated
        kept = getattr(updated, side)
        return kept.with_changes(lpar=[cst.LeftParen(), *kept.lpar], rpar=[*kept.rpar, cst.RightParen()])


@functools.lru_cache(maxsize=4096)
def _code(node: cst.CSTNode) -> str:
    """A node's source. libcst nodes are immutable and hash by identity: an unrolled loop's body gives the same
    nodes for every layer, and a second emission the same again (the cache holds the nodes it keys, so an id
    is never reused while cached)."""
    return cst.Module(body=[]).code_for_node(node)


def _loop_iterable(node: cst.BaseExpression, rename: dict[str, str]) -> str:
    """The code that evaluates an unrolled loop's iterable again for its check (`expect_loop`): the expression
    as the forward wrote it, but a slice (`self.layers[: n]`) through `loop_slice`, which reads a torch
    ModuleList's items without building the new ModuleList its slicing makes."""
    if (isinstance(node, cst.Subscript) and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Slice)):
        part = node.slice[0].slice
        bounds = [_code(b.visit(_Rewrite(rename))).strip() if b is not None else "None"
                  for b in (part.lower, part.upper, part.step)]
        value = _code(node.value.visit(_Rewrite(rename))).strip()
        return f"{RUNTIME}.loop_slice({value}, {', '.join(bounds)})"
    return _code(node.visit(_Rewrite(rename))).strip()


def _facts(name: str) -> dict:
    """Facts about the nodes of parsed functions, kept by the analysis session (as the parsed functions
    themselves are) and keyed by the nodes (libcst nodes hash and compare by identity), so a key keeps
    its node alive and can't stand for another. They make a second emission of the same plan cheap."""
    return current().table(f"emit.{name}")


def rewritten(stmt: cst.CSTNode, rename: dict[str, str], replace: tuple[cst.Call, str] | None = None,
              choose: tuple[tuple[cst.CSTNode, str], ...] = (), target: cst.Call | None = None) -> str:
    """A statement's code with a frame's names renamed (one call replaced, decided sides kept, the target
    call made through runtime.call_target), cached."""
    key = (stmt, tuple(sorted(rename.items())), replace, choose, target)
    code = _facts("rewritten").get(key)
    if code is None:
        node = stmt.visit(_Rewrite(rename, dict([replace]) if replace else None, dict(choose), target))
        code = _stmt_code(node)
        _facts("rewritten")[key] = code
    return code


# in-place container methods: `d.m(...)` may change `d`
_MUTATING_METHODS = {"pop", "popitem", "update", "setdefault", "clear", "append", "extend", "insert", "remove"}


def _mutated(stmt: cst.CSTNode) -> set[str]:
    """Names whose value a statement may change in place: `d.pop(...)`, `d[k] = v`, `del d[k]`."""
    names: set[str] = set()
    for node in walk(stmt, only=(cst.Call, cst.AssignTarget, cst.Del)):
        if isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value in _MUTATING_METHODS and isinstance(f.value, cst.Name):
                names.add(f.value.value)
        elif isinstance(node, (cst.AssignTarget, cst.Del)):
            if isinstance(node.target, cst.Subscript) and isinstance(node.target.value, cst.Name):
                names.add(node.target.value.value)
    return names


def stored_names(stmt: cst.CSTNode) -> tuple[str, ...]:
    """Names a statement binds, deletes or changes in place: afterwards their emit-time value is unknown."""
    names = _facts("stored").get(stmt)
    if names is None:
        names = _facts("stored")[stmt] = tuple(sorted(set(local_bindings(stmt)) | _declared_names(stmt)[0]
                                                      | _mutated(stmt)))
    return names


def _declared_names(node: cst.CSTNode) -> tuple[set[str], set[str]]:
    """The names a statement or body binds other than by an assignment (`local_bindings`): a nested def's or
    class's name, an import's, an `except ... as` name, a `del`; and the names it declares `global`."""
    names: set[str] = set()
    declared: set[str] = set()
    stack: list[cst.CSTNode] = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):  # a nested definition binds its name
            names.add(node.name.value)
            continue
        if isinstance(node, cst.ImportAlias):  # `import a.b` binds `a`
            target = node.asname.name if node.asname else node.name
            while isinstance(target, cst.Attribute):
                target = target.value
            if isinstance(target, cst.Name):
                names.add(target.value)
        elif isinstance(node, cst.ExceptHandler) and node.name is not None and isinstance(node.name.name, cst.Name):
            names.add(node.name.name.value)
        elif isinstance(node, cst.Del):
            names |= set(bound_names(node.target))
        elif isinstance(node, cst.Global):
            declared |= {item.name.value for item in node.names}
        stack.extend(children(node))
    return names, declared


def cached_calls(stmt: cst.CSTNode) -> list:
    """The calls in a statement (`calls_in`), cached by the statement node."""
    calls = _facts("calls").get(stmt)
    if calls is None:
        calls = _facts("calls")[stmt] = calls_in(stmt)
    return calls


def nodes_of(stmt: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> tuple[cst.CSTNode, ...]:
    """The nodes of the given types in a statement (`walk`, outermost first), cached by the statement node:
    emission asks this of every statement around target calls, at every depth it emits."""
    key = (stmt, kinds)
    nodes = _facts("nodes").get(key)
    if nodes is None:
        nodes = _facts("nodes")[key] = tuple(walk(stmt, only=kinds))
    return nodes


def _stmt_code(stmt: cst.CSTNode) -> str:
    code = cst.Module(body=[stmt]).code if isinstance(stmt, cst.BaseStatement) else _code(stmt)
    return code.rstrip("\n") + "\n"


def _bound_names(fn: cst.FunctionDef) -> frozenset[str]:
    names = _facts("bound").get(fn)
    if names is None:
        names = _facts("bound")[fn] = frozenset(_collect_bound_names(fn))
    return names


def _rebound_globals(tree: ast.Module) -> frozenset[str]:
    """Module-level names that a function of the module rebinds at run time (`global NAME`)."""
    names = _facts("rebound").get(tree)
    if names is None:
        names = _facts("rebound")[tree] = frozenset(
            name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names)
    return names


def _name_nodes(*roots: cst.CSTNode) -> list[cst.Name]:
    """The names written in code (attribute and keyword names aside), in no particular order."""
    out: list[cst.Name] = []
    stack: list[cst.CSTNode] = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.append(node)
        elif isinstance(node, (cst.Attribute, cst.Arg)):  # not the attribute's or the keyword's name
            stack.append(node.value)
            continue
        stack.extend(children(node))
    return out


def _loaded_in(fn: cst.FunctionDef) -> frozenset[str]:
    """Every name a function reads (attribute and keyword names aside)."""
    names = _facts("loaded").get(fn)
    if names is None:
        names = _facts("loaded")[fn] = frozenset(node.value for node in _name_nodes(fn.params, fn.body))
    return names


def _collect_bound_names(fn: cst.FunctionDef) -> set[str]:
    """The function's local names; a name declared `global` stays the module's."""
    return (_rebound_in(fn.body) | set(param_names(fn))) - _declared_names(fn.body)[1]


def _rebound_in(body: cst.CSTNode) -> set[str]:
    """The names code binds, in any way. `x.append(v)` adds to `x` without binding it (the resolver's
    bindings list it, for what `x` holds)."""
    names = {name for name, ways in local_bindings(body).items() if any(kind not in ("append", "extend") for kind, _, _ in ways)}
    return names | _declared_names(body)[0]


def _loaded_names(code: str) -> set[str]:
    tree = ast.parse(code)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _literal(value: object) -> str | None:
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    if isinstance(value, (tuple, list)) and all(_literal(v) is not None for v in value):
        return repr(value)
    return None


def _import_object(ref: FunctionRef) -> Any:
    obj: Any = importlib.import_module(ref.module)
    for part in ref.qualname.split("."):
        obj = inspect.getattr_static(obj, part) if isinstance(obj, type) else getattr(obj, part)
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return inspect.unwrap(obj) if callable(obj) else obj


def _is_module(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)


def _assignment(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """The name and value of a plain `name = value` (or `name: T = value`) statement line."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    small = stmt.body[0]
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        target, value = small.target, small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    else:
        return None
    return (target.value, value) if isinstance(target, cst.Name) else None


def _tensor_result(stmt: cst.CSTNode) -> str | None:
    """The name a plain `name = <...>.reshape(...)` binds: a tensor, so `name is None` is decided."""
    assigned = _assignment(stmt)
    if assigned is None or not isinstance(stmt.body[0], cst.Assign):
        return None
    name, value = assigned
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in TENSOR_RESULTS:
        return name
    return None


def _is_autograd_function(cls: type) -> bool:
    import torch

    return issubclass(cls, torch.autograd.Function)


def _function_ref(fn: Any) -> FunctionRef:
    fn = inspect.unwrap(fn)
    return FunctionRef(fn.__module__, fn.__qualname__)


def _class_ref(cls: type) -> ClassRef:
    return ClassRef(cls.__module__, cls.__qualname__)


class Emitter:
    """Emits the subgraphs of one model instance for one sample input signature."""

    def __init__(self, plan: Plan, model: Any, sample_input: dict, watched: tuple[str, ...] | None = None) -> None:
        """`watched`: every module the caller's targets select (nested ones too), which the subgraphs' target
        check watches; by default the modules of the plan's target classes."""
        self.plan = plan
        self.watched = watched
        self.model = model
        self.sample = sample_input
        self.targets = set(plan.targets)
        self.steps: list[Step] = []
        self.frames = 0
        self.globals: dict[str, Any] = {RUNTIME: runtime}
        self.paths: dict[int, str] = {}  # a module held under several names goes by the first, as named_modules() names it
        for name, m in named_modules(model):
            self.paths.setdefault(id(m), name)
        self._parsed: dict[str, tuple[cst.FunctionDef, int]] = {}
        self.called_targets: list[str] = []
        self.where: tuple[str, int] = location(type(model))  # the plan statement being emitted, for refusals
        self.module_bindings: dict[str, str] = {}
        self.sample_run = SampleRun(model, sample_input)  # read only for a test emission can't compute
        self.decisions: dict[tuple[str, int], int] = {}  # how often each `if` was decided so far
        self._code_checked: dict[tuple[int, str], Message | None] = {}
        self._selected: set[int] | None = None  # ids of the modules `watched` names
        self.temps = 0  # statements taken apart so far (their temporaries' names)
        self.live: dict[str, tuple[dict, str]] = {}  # global of the subgraphs -> (module namespace, name) it reads

    # ----- entry point ---------------------------------------------------------------------

    def emit(self, targets_per_subgraph: int = 1) -> list:
        """Check the model is the plan's root, inline its forward for the sample, cut it, arm the targets' tripwires."""
        root = self.plan.function(self.plan.root)
        if root is None:
            raise Refused([InstanceMismatch(*location(type(self.model)), f"the plan has no analysis of its root {self.plan.root}")])
        expected = ClassRef.parse(root.self_class)
        actual = _class_ref(type(self.model))
        if actual != expected:
            raise Refused([InstanceMismatch(*location(type(self.model)), f"the plan is for {expected}, the model is {actual}")])
        self._check_unresolved()
        self._check_containment()
        refusal = own_call_refusal(self.model, root)  # the chain stands for `model(...)`: its forward alone
        if refusal is not None:
            raise Refused([refusal])
        frame = self._frame(self.plan.root, root, self.model, rename=False, result=OUTPUT)
        frame.running = type(self.model).forward  # a forward set on the instance is instance.py's to judge
        frame.recheck = ("expect_forward", "self", None, runtime.running_forward(self.model))
        kw_values = {name: sample_value(value) for name, value in self.sample.items()}
        self._bind(frame, kw_code="{" + ", ".join(f"{k!r}: {k}" for k in self.sample) + "}", kw_values=kw_values, open_kw=False)
        self._body(frame)
        self._finish(frame)
        chain = build_subgraphs(
            self.steps,
            input_names=list(self.sample),
            output_name=OUTPUT,
            globals_=self.globals,
            title=self.plan.architecture,
            targets_per_subgraph=targets_per_subgraph,
            live=self.live,
            keywords=tuple(name for name, p in inspect.signature(type(self.model).forward).parameters.items()
                           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)),
            sample=sample_aliases(self.sample),
        )
        arm_target_check(self.model, chain, self.targets, self.watched)
        return chain

    # ----- frames --------------------------------------------------------------------------

    def _parse(self, planned: Function) -> tuple[ParsedFunction, str, frozenset[str]]:
        key = planned.function
        hit = self._parsed.get(key)
        if hit is None:
            ref = FunctionRef.parse(planned.function)
            module = importlib.import_module(ref.module)
            sf = load_file(module.__file__, ref.module)
            parsed = parse_function(sf, ref.qualname)
            if parsed is None or parsed.source_hash != planned.source_hash:
                raise Refused([InstanceMismatch(planned.path, planned.lines[0], f"the source of {ref.qualname} changed since the plan was made")])
            hit = (parsed, sf.path, _rebound_globals(sf.tree))
            self._parsed[key] = hit
        return hit

    def _frame(self, node: str, planned: Function, self_obj: Any, rename: bool, result: str) -> Frame:
        parsed, path, rebound = self._parse(planned)
        fn = parsed.node
        ref = FunctionRef.parse(planned.function)
        module = importlib.import_module(ref.module)
        index = self.frames
        self.frames += 1
        names = _bound_names(fn)
        mapping = {n: f"{n}__{index}" for n in names} if rename else {}
        frame = Frame(
            index=index,
            node=node,
            planned=planned,
            fn=fn,
            module_globals=vars(module),
            self_obj=self_obj,
            rename=mapping,
            values={},
            result=result,
            origin_path=planned.path,
            line_offset=parsed.line_offset,
            tree=parsed.module,
            file=path,
        )
        self._refuse_reserved(frame, names)
        self._import_globals(frame, names, rebound)
        if planned.self_class is not None:
            self_name = fn.params.params[0].name.value
            frame.values[self_name] = self_obj
            self.module_bindings[frame.local(self_name)] = self._path_expr(self_obj)
        return frame

    def _refuse_reserved(self, frame: Frame, local_names: frozenset[str]) -> None:
        """A name of the function's source that has the form of a name emitted code gives its own values
        (reserved.py) is refused where it first stands."""
        clashing = sorted(n for n in _loaded_in(frame.fn) | local_names if reserved(n))
        if not clashing:
            return
        line = min((self._line_of(frame, node) for node in _name_nodes(frame.fn.params, frame.fn.body) if node.value == clashing[0]),
                   default=frame.planned.lines[0])
        raise Refused([ReservedName(frame.planned.path, line, (
            f"`{clashing[0]}` (emitted code names the locals it renames and the values it adds with two underscores "
            f"and a number, as `h__1`, its functions `subgraph_<n>`, and uses {', '.join(sorted(FIXED_NAMES))}); the one "
            "would be taken for the other"))])

    def _import_globals(self, frame: Frame, local_names: set[str], rebound: frozenset[str]) -> None:
        """Make the frame's module-level names available; rename those that clash across modules.

        A name that some function of the module rebinds (`global NAME`) is read and written through
        the module itself (`module__g3.NAME`), so the subgraphs see it exactly as the model's module
        holds it when they run, not as it was at emission."""
        for name in sorted(_loaded_in(frame.fn) - local_names):
            if name in rebound:
                module = f"module__g{frame.index}"
                self.globals[module] = importlib.import_module(FunctionRef.parse(frame.planned.function).module)
                frame.rename[name] = f"{module}.{name}"
                continue
            if name in frame.module_globals:
                obj = frame.module_globals[name]
            elif hasattr(builtins, name):
                continue
            else:
                continue
            current = self.globals.get(name, obj)
            if current is obj:
                self.globals[name] = obj
                self.live.setdefault(name, (frame.module_globals, name))
            else:
                alias = f"{name}__g{frame.index}"
                self.globals[alias] = obj
                self.live[alias] = (frame.module_globals, name)
                frame.rename[name] = alias

    def _path_expr(self, module: Any) -> str:
        """The expression of a module's path: its attribute names as the source reads them (`self.model.norm`),
        an item of a container (`layers.3`, a ModuleDict key, any name that is not an attribute name) as
        registered (`._modules['3']`, what `named_modules` walks), not through the container's `__getitem__`."""
        path = self.paths.get(id(module))
        if path is None:
            raise Refused([InstanceMismatch(*self.where, f"a {type(module).__name__} called by the forward is not a submodule of the model")])
        expr = "self"
        for part in path.split(".") if path else []:
            expr += f".{part}" if part.isidentifier() and not keyword.iskeyword(part) else f"._modules[{part!r}]"
        return expr

    def _origin(self, frame: Frame, line: int) -> str:
        return f"{frame.origin_path}:{line}"

    def _add(self, frame: Frame, code: str, line: int, *, target: str | None = None, reads: tuple[str, ...] = ()) -> None:
        self.steps.append(Step(code=code, origin=self._origin(frame, line), target=target, scopes=frame.scopes,
                               modules=dict(self.module_bindings), reads=reads))

    # ----- binding a call ------------------------------------------------------------------

    def _bind(self, frame: Frame, kw_code: str, kw_values: dict[str, object], open_kw: bool,
              hooks: tuple[str, str, int] | None = None) -> None:
        """Bind the frame's parameters from a keyword dict, running decorator models around it.

        With `hooks` (the name to hold them, the call's file:line, how many arguments it passed by
        position), the module call's arguments are kept for its forward hooks first."""
        fn = frame.fn
        kw = f"kw__{frame.index}"
        start = frame.planned.lines[0]
        self._add(frame, f"{kw} = {kw_code}\n", start)
        decorators = frame.planned.decorators
        self_name = fn.params.params[0].name.value if frame.planned.self_class is not None else None
        self_var = frame.local(self_name) if self_name else "None"
        if hooks is not None:
            held, where, n_positional = hooks
            self._add(frame, f"{held} = {RUNTIME}.hooks_enter({self_var}, {kw}, {n_positional}, {where!r})\n", start)
        kinds = [deco.MODELS[deco.base_name(name)] for name in decorators]
        outer = class_wrappers(frame.planned, frame.module_globals)  # the class's, outside the method's own
        objects = {i: decorator_object(_code(frame.fn.decorators[i].decorator).strip(), frame.planned.path,
                                       frame.module_globals) for i, kind in enumerate(kinds) if kind != deco.INERT}
        function = None
        if outer or objects:  # the undecorated function, which each wrapper is made around again
            function = _import_object(FunctionRef.parse(frame.planned.function))
        contexts = [self._context_decorator(frame, i, objects[i]) for i, kind in enumerate(kinds) if kind == deco.CONTEXT]
        # every wrapping decorator, outermost first, as staticexec runs it (a context decorator wraps too)
        layers = [decorator for _, decorator in outer] + [objects[i] for i in sorted(objects)]
        self._check_code(frame, [runtime.made_wrapper(decorator, function) for decorator in layers])
        frame.scopes = frame.scopes + tuple(contexts)  # inside the wrappers' scopes: for no_grad the order is moot
        runs = []  # (expression, decorator object, state, scope, decorator's global), outermost first
        for i, (expression, decorator) in enumerate(outer):
            runs.append((expression, decorator, f"cdec{i}__{frame.index}", f"cscope{i}__{frame.index}",
                         f"class_decorator__{frame.index}_{i}"))
        for i, kind in enumerate(kinds):
            if kind == deco.WRAPPER:
                runs.append((decorators[i], objects[i], f"dec{i}__{frame.index}", f"scope{i}__{frame.index}",
                             f"decorator__{frame.index}_{i}"))
        f_alias = f"function__{frame.index}"
        if runs:
            self.globals[f_alias] = function
        for expression, decorator, state, scope, d_alias in runs:
            self.globals[d_alias] = decorator
            where = self._origin(frame, start)
            try:
                predicted = runtime.predict_keywords(frame.self_obj, dict(kw_values), decorator, function, where)
            except Exception as exc:  # the wrapper refused what emission knows of the call
                raise Refused([DecoratorMismatch(frame.planned.path, start, f"@{expression} could not run on "
                                                    f"the call's keywords: {type(exc).__name__}: {exc}")]) from exc
            kw_values.clear()
            kw_values.update(predicted)
            self._add(frame, f"{state}, {scope} = {RUNTIME}.wrapper_enter({self_var}, {kw}, {d_alias}, {f_alias}, "
                             f"{where!r})\n", start)
            frame.exits.insert(0, (state, scope, self_var, d_alias, f_alias))
            frame.scopes = frame.scopes + (f"{RUNTIME}.wrapper_scope({scope})",)
        params = fn.params
        plain = list(params.posonly_params) + list(params.params)
        if self_name:
            plain = plain[1:]
        lines = []
        for p in plain + list(params.kwonly_params):
            pname = p.name.value
            local = frame.local(pname)
            if p.default is None:
                lines.append(f"{local} = {kw}.pop({pname!r})")
                frame.values[pname] = kw_values.get(pname, UNKNOWN)
                continue
            default_code, default_value = self._default(frame, p)
            lines.append(f"{local} = {kw}.pop({pname!r}, {default_code})")
            if pname in kw_values:
                frame.values[pname] = kw_values.pop(pname)
            elif open_kw:
                frame.values[pname] = UNKNOWN
            else:
                frame.values[pname] = default_value
        if isinstance(params.star_arg, cst.Param):
            star = params.star_arg.name.value
            lines.append(f"{frame.local(star)} = {kw}.pop({star!r}, ())")
            frame.values[star] = kw_values.pop(star, ())
        if params.star_kwarg is not None:
            lines.append(f"{frame.local(params.star_kwarg.name.value)} = {kw}")
            # what is left of the call's keywords, when all of them are known at emit time
            frame.values[params.star_kwarg.name.value] = UNKNOWN if open_kw else dict(kw_values)
        self._add(frame, "\n".join(lines) + "\n", start)
        frame.defined |= {p.name.value for p in plain + list(params.kwonly_params)}
        if self_name:
            frame.defined.add(self_name)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                frame.defined.add(star.name.value)

    def _context_decorator(self, frame: Frame, index: int, obj: Any) -> str:
        """The `with` item that enters what a context decorator (`@torch.no_grad()`, evaluated as `obj`)
        enters, afresh each time."""
        import torch

        if type(obj) is not torch.no_grad and obj is not torch.no_grad:
            expression = _code(frame.fn.decorators[index].decorator).strip()
            raise Refused([DecoratorMismatch(frame.planned.path, frame.planned.lines[0],
                                             f"@{expression} is not torch's no_grad")])
        self.globals[NO_GRAD] = torch.no_grad
        return f"{NO_GRAD}()"

    def _check_code(self, frame: Frame, layers: list) -> None:
        """The function that runs must be the analysed one under exactly its wrapper decorators, each
        layer the wrapper its decorator makes (`layers`, outermost first; imported.py compares code
        objects, not names), and the subgraph where the call starts
        checks again that it still is (runtime.expect_forward / expect_method / expect_global)."""
        if frame.running is None:
            return
        key = (id(frame.running), frame.planned.function)
        if key not in self._code_checked:
            self._code_checked[key] = running_code_refusal(frame.planned, frame.running, layers, frame.self_obj)
        refusal = self._code_checked[key]
        if refusal is not None:
            raise Refused([refusal])
        if frame.recheck is None:
            return
        check, obj, name, expected = frame.recheck
        alias = f"running__{frame.index}"
        self.globals[alias] = expected
        where = self._origin(frame, frame.planned.lines[0])
        if isinstance(name, tuple):  # expect_super: the class the lookup starts past, and the name
            args = f"{obj}, {name[0]}, {name[1]!r}, {alias}"
        else:
            args = f"{obj}, {name!r}, {alias}" if name is not None else f"{obj}, {alias}"
        self._add(frame, f"{RUNTIME}.{check}({args}, {where!r})\n", frame.planned.lines[0])

    def _default(self, frame: Frame, param: cst.Param) -> tuple[str, object]:
        code = _code(param.default).strip()
        try:
            value = ast.literal_eval(code)
            return code, value
        except (ValueError, SyntaxError):
            pass
        ref = FunctionRef.parse(frame.planned.function)
        fn = _import_object(ref)
        value = inspect.signature(fn).parameters[param.name.value].default
        alias = f"default__{frame.index}_{param.name.value}"
        self.globals[alias] = value
        return alias, value

    def _finish(self, frame: Frame) -> None:
        line = frame.planned.lines[1]
        if not frame.returned:
            self._add(frame, f"{frame.result} = None\n", line)
        for state, scope, self_var, d_alias, f_alias in frame.exits:
            self._add(frame, f"{frame.result} = {RUNTIME}.wrapper_exit({self_var}, {state}, {scope}, {frame.result}, "
                             f"{d_alias}, {f_alias})\n", line)

    # ----- statements ----------------------------------------------------------------------

    def _body(self, frame: Frame) -> None:
        self._block(frame, list(frame.fn.body.body), frame.planned.statements, top=True)

    def _block(self, frame: Frame, stmts: list, entries: tuple[Statement, ...], top: bool = False) -> None:
        i = 0
        for n, entry in enumerate(entries):
            if frame.returned:
                return
            kind = entry.kind
            if kind is Kind.OPAQUE:
                chunk = stmts[i : i + entry.count]
                i += entry.count
                later = any(e.reaching for e in entries[n + 1 :])
                self._opaque(frame, chunk, top=top, rest=stmts[i:] if top and not later else None, later=later)
                if frame.returned:
                    return
                continue
            stmt = stmts[i]
            i += 1
            self.where = (frame.planned.path, entry.first)
            if kind is Kind.TARGET or kind is Kind.ANCESTOR:
                self._reaching(frame, stmt, entry)
            elif entry.statement is Control.EXIT:
                self._opaque(frame, [stmt], top=False, rest=None, later=True)
            else:
                self._control(frame, stmt, entry)

    def _opaque(self, frame: Frame, chunk: list, top: bool, rest: list | None, later: bool) -> None:
        for k, stmt in enumerate(chunk):
            line = self._line_of(frame, stmt)
            if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body):
                if self._comprehension_over_targets(frame, stmt, line):
                    return
                self._check_opaque_calls(frame, stmt, line)
                ret = next(s for s in stmt.body if isinstance(s, cst.Return))
                before = [s for s in stmt.body if s is not ret][: stmt.body.index(ret)]
                for small in before:
                    self._emit_small(frame, small, line)
                rewritten = _code(ret.value.visit(_Rewrite(frame.rename))) if ret.value is not None else "None"
                self._add(frame, f"{frame.result} = {rewritten}\n", line)
                frame.returned = True
                return
            if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Continue, cst.Break)) for s in stmt.body):
                raise _LoopExit("break" if any(isinstance(s, cst.Break) for s in stmt.body) else "continue")
            probe = _facts("exits").get(stmt)
            if probe is None:
                probe = _facts("exits")[stmt] = exits(stmt)
            if probe.loop_exit:
                raise Refused([UnsupportedStatement(frame.planned.path, line, "`break` / `continue` in code that runs around target calls")])
            if probe.found:
                if later or rest is None:
                    raise Refused([UnsupportedStatement(frame.planned.path, line, "a `return` nested in code that is followed by target calls")])
                self._tail(frame, chunk[k:] + [s for s in rest], line)
                return
            if self._comprehension_over_targets(frame, stmt, line):
                continue
            self._check_opaque_calls(frame, stmt, line)
            self._emit_stmt(frame, stmt, line)
            learned = self._learn(frame, stmt)
            self._forget_stores(frame, stmt)
            if learned is not None:
                self._remember(frame, *learned)

    def _check_opaque_calls(self, frame: Frame, stmt: cst.CSTNode, line: int) -> None:
        """Opaque code must not call a module that holds targets: that would hide target calls.

        This is also where a plan edited against its source shows: a loop over target modules
        that calls its loop variable, marked as opaque code."""
        if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name):
            try:
                items = evaluate(_code(stmt.iter), frame.values, frame.module_globals)
            except Undecidable:
                items = None
            called = {_code(c.func).strip() for c in cached_calls(stmt)}
            name = stmt.target.value
            if _is_module(items) and self._holds_target(items) and (name in called or f"{name}.forward" in called):
                raise Refused([InstanceMismatch(frame.planned.path, line, f"the plan marks this loop as code with no target call, but it "
                                                f"calls each of `{_code(stmt.iter).strip()}`, which holds targets")])
        for comp in nodes_of(stmt, (cst.CompFor,)):  # `[head(h) for head in self.lm_heads]`
            try:
                items = evaluate(_code(comp.iter), frame.values, frame.module_globals)
            except Undecidable:
                continue
            if _is_module(items) and self._holds_target(items):
                raise Refused([UnsupportedStatement(frame.planned.path, line, f"a comprehension over "
                                                    f"`{_code(comp.iter).strip()}`, which holds targets, in code "
                                                    "with no target call the plan knows of")])
        for call in cached_calls(stmt):
            func = call.func
            root = func
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value
            if not isinstance(root, cst.Name):
                continue
            if func is root and root.value not in frame.rename and inspect.isfunction(frame.module_globals.get(root.value)):
                callee = frame.module_globals[root.value]  # a module-level helper
            elif not _is_module(frame.values.get(root.value)):
                continue
            else:
                try:
                    callee = evaluate(_code(func), frame.values, frame.module_globals)
                except Undecidable:
                    continue
            if _is_module(callee) and self._holds_target(callee):
                raise Refused([UnresolvedCall(frame.planned.path, line,
                                              f"`{_code(func).strip()}` holds targets but is called by opaque code")])
            if not _is_module(callee):
                writes = state.helper_refusals(callee)
                if writes:
                    raise Refused(writes)

    def _remember(self, frame: Frame, name: str, known: object) -> None:
        frame.values[name] = known
        if _is_module(known) and id(known) in self.paths:
            self.module_bindings[frame.local(name)] = self._path_expr(known)

    def _learn(self, frame: Frame, stmt: cst.CSTNode) -> tuple[str, object] | None:
        """A plain `name = <static expression>` is known at emit time (a config value, a submodule).

        The value is computed from the names as they were before the statement ran."""
        assigned = _assignment(stmt)
        if assigned is None:
            return None
        name, value = assigned
        try:
            return name, evaluate(_code(value), frame.values, frame.module_globals)
        except Undecidable:
            return None

    def _line_of(self, frame: Frame, stmt: cst.CSTNode) -> int:
        pos = positions(frame.tree).get(stmt)
        return pos.start.line + frame.line_offset if pos is not None else frame.planned.lines[0]

    def _emit_stmt(self, frame: Frame, stmt: cst.CSTNode, line: int) -> None:
        self._add(frame, rewritten(stmt, frame.rename), line)

    def _emit_small(self, frame: Frame, small: cst.BaseSmallStatement, line: int) -> None:
        code = _code(small.visit(_Rewrite(frame.rename))).strip() + "\n"
        self._add(frame, code, line)

    def _forget_stores(self, frame: Frame, stmt: cst.CSTNode) -> None:
        """Names an opaque statement assigns are no longer known at emit time.

        For an `if` whose test is decided here, only the branch that runs counts.
        """
        if isinstance(stmt, cst.If):
            try:
                taken = bool(evaluate(_code(stmt.test), frame.values, frame.module_globals))
            except Undecidable:
                taken = None
            if taken is not None:
                branch = stmt.body if taken else stmt.orelse
                if isinstance(branch, cst.Else):
                    branch = branch.body
                if isinstance(branch, cst.If):  # elif
                    self._forget_stores(frame, branch)
                elif branch is not None:
                    for inner in branch.body:
                        self._forget_stores(frame, inner)
                return
        for name in stored_names(stmt):
            frame.values[name] = UNKNOWN
            frame.defined.add(name)
            self.module_bindings.pop(frame.local(name), None)
        present = _tensor_result(stmt)
        if present is not None:
            frame.values[present] = PRESENT

    def _tail(self, frame: Frame, stmts: list, line: int) -> None:
        """Opaque statements with nested returns that end the function run as a local function."""
        body = "".join(_stmt_code(s.visit(_Rewrite(frame.rename))) for s in stmts)
        loads = _loaded_names(body)
        known = {frame.local(n) for n in frame.defined}
        params = sorted(n for n in loads if n in known)
        name = f"tail__{frame.index}"
        indented = "".join("    " + l if l.strip() else l for l in body.splitlines(True))
        # a name assigned only on some paths is passed when bound, and stays unbound in the tail otherwise
        unbind = "".join(f"    if {p} is _MISSING:\n        del {p}\n" for p in params)
        signature = f"*, {', '.join(f'{p}=_MISSING' for p in params)}" if params else ""
        code = (f"def {name}({signature}):\n{unbind}{indented}"
                f"{name}_locals = _sx_locals()\n"
                f"{frame.result} = {name}(**{{_n: {name}_locals[_n] for _n in {tuple(params)!r} if _n in {name}_locals}})\n")
        self._add(frame, code, line, reads=tuple(params))
        frame.returned = True

    # target, ancestor, control ------------------------------------------------------------

    def _call_node(self, stmt: cst.CSTNode, entry: Statement) -> cst.Call:
        calls = cached_calls(stmt)
        index = entry.call.index
        if index >= len(calls):
            raise Refused([InstanceMismatch(self.where[0], entry.first, "the plan's call site is not in the source")])
        return calls[index]

    def _callee(self, frame: Frame, func: cst.BaseExpression, line: int) -> Any:
        """The object a reaching call calls; `super().name` is looked up past the class that defines
        the frame's function, as Python's zero-argument `super()` does."""
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and not func.value.args
                and isinstance(func.value.func, cst.Name) and func.value.func.value == "super"
                and frame.self_obj is not None and "super" not in frame.rename):
            ref = FunctionRef.parse(frame.planned.function).owner
            if ref is not None:
                owner = _import_object(FunctionRef(ref.module, ref.name))
                if isinstance(owner, type) and isinstance(frame.self_obj, owner):
                    return getattr(super(owner, frame.self_obj), func.attr.value)
        return self._concrete(frame, func, line)

    def _concrete(self, frame: Frame, expr: cst.BaseExpression, line: int,
                  refusal: type[Message] = UnresolvedCall) -> Any:
        """The object an expression gives at emission: a reaching call's callee, or (`refusal` UndecidedLoop) the
        iterable of a loop around target calls; refused as `refusal` when it can't be computed."""
        try:
            return evaluate(_code(expr), frame.values, frame.module_globals)
        except Undecidable as exc:
            raise Refused([refusal(frame.planned.path, line, f"`{_code(expr).strip()}`: {exc}")]) from exc

    def _expression_guards(self, frame: Frame, stmt: cst.CSTNode, call: cst.Call, line: int) -> tuple[bool, tuple]:
        """Decide the conditional expressions and `and` / `or` operands that guard a reaching call.

        Each test is decided like an `if` (and re-checked when the subgraphs run); the decided
        side is kept in the emitted statement. Returns whether the call runs, and the sides kept.
        """
        choose = []
        guards = _facts("guards").get((stmt, call))
        if guards is None:  # the same statement unrolled for every layer: found once
            guards = _facts("guards")[(stmt, call)] = expression_guards(stmt, call)
        for guard in guards:
            if guard.test is None:
                raise Refused([UnsupportedStatement(frame.planned.path, line, f"a reaching call inside a {guard.label}")])
            runs = guard.runs(self._decide(frame, guard.test, line))
            choose.append((guard.owner, guard.side if runs else guard.other()))
            if not runs:
                return False, tuple(choose)
        return True, tuple(choose)

    def _skipped(self, frame: Frame, stmt: cst.CSTNode, line: int, choose: tuple) -> None:
        """A reaching statement whose call does not run for the sample: the rest of it is opaque code."""
        self._add(frame, self._returning(frame, stmt, choose=choose), line)
        self._forget_stores(frame, stmt)

    def _reaching(self, frame: Frame, stmt: cst.CSTNode, entry: Statement) -> None:
        """A statement that calls a target or code that reaches one. Every call in it that reaches at emit
        time (a target module, a module that holds targets, a function the plan analyses) counts, not only
        the one the plan names: the expressions that guard them are decided, and several that run are
        taken apart (apart.py), each a statement of its own."""
        line = entry.first
        if self._comprehension_over_targets(frame, stmt, line):
            return
        planned = self._call_node(stmt, entry)
        calls = reaching_calls(stmt, planned, entry.kind is Kind.TARGET, lambda call: self._call_kind(frame, call))
        if len(calls) == 1:
            runs, choose = self._expression_guards(frame, stmt, planned, line)
            if not runs:
                self._skipped(frame, stmt, line, choose)
            elif calls[0][1]:
                self._target_call(frame, stmt, planned, line, choose)
            else:
                self._ancestor_call(frame, stmt, planned, line, choose)
            return
        self._calls_that_run(frame, stmt, calls, line)

    def _calls_that_run(self, frame: Frame, stmt: cst.CSTNode, calls: list[tuple[cst.Call, bool]], line: int) -> None:
        """Decide the guards of a statement's reaching calls; emit it as its one call that runs, or taken apart."""
        running, choose = decide_guards(stmt, [call for call, _ in calls], lambda test: self._decide(frame, test, line),
                                        lambda label: self._refuse_guard(frame, line, label))
        kinds = dict(calls)
        if not running:
            self._skipped(frame, stmt, line, choose)
        elif len(running) == 1:
            call = running[0]
            (self._target_call if kinds[call] else self._ancestor_call)(frame, stmt, call, line, choose)
        else:
            self._apart(frame, stmt, [(call, kinds[call]) for call in running], line, choose)

    def _reaching_code(self, frame: Frame, stmt: cst.SimpleStatementLine, line: int) -> None:
        """A statement emission made (a comprehension's element for one item): its reaching calls, found at
        emit time, emitted as the plan's reaching statements are; with none, opaque code, checked as such."""
        calls = [(call, kind) for call in calls_in(stmt) if (kind := self._call_kind(frame, call, made=True)) is not None]
        if not calls:
            self._check_opaque_calls(frame, stmt, line)
            self._add(frame, self._returning(frame, stmt), line)
            learned = self._learn(frame, stmt)
            self._forget_stores(frame, stmt)
            if learned is not None:
                self._remember(frame, *learned)
            return
        self._calls_that_run(frame, stmt, calls, line)

    def _comprehension_over_targets(self, frame: Frame, stmt: cst.CSTNode, line: int) -> bool:
        """A statement with a comprehension over modules that hold targets (`[head(h) for head in
        self.lm_heads]`), opaque or one the plan knows calls them: unrolled (comprehension.py), one statement
        per item, checked where it stood like an unrolled loop. False when the statement has none; refused
        when it can't be unrolled."""
        if (not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1
                or not nodes_of(stmt, (cst.ListComp, cst.GeneratorExp))):
            return False
        code = rewritten(stmt, {}).strip()
        for iterable in comprehension_iterables(code):
            try:
                items = evaluate(iterable, frame.values, frame.module_globals)
            except Undecidable:
                continue
            if not (_is_module(items) and self._holds_target(items)):
                continue
            items = list(items)
            self.temps += 1
            try:
                unrolled = unroll(code, iterable, len(items), f"comp__{self.temps}_")
            except CannotUnroll as exc:
                raise Refused([UnsupportedStatement(frame.planned.path, line, f"a comprehension over `{iterable}`, "
                                                    f"which holds targets: {exc}")]) from exc
            expected = runtime.LoopItems(tuple(items), tuple(self._item_label(i) for i in items), True)
            alias = f"loop__{len(self.globals)}"
            self.globals[alias] = expected
            check = _loop_iterable(cst.parse_expression(iterable), frame.rename)
            self._add(frame, f"{RUNTIME}.expect_loop({check}, {alias}, {self._origin(frame, line)!r}, {iterable!r})\n", line)
            rest = cst.parse_statement(unrolled.rest)
            if unrolled.reader and any(self._call_kind(frame, call, made=True) is not None for call in calls_in(rest)):
                raise Refused([UnsupportedStatement(frame.planned.path, line, f"a generator expression over `{iterable}`, "
                                                    "which holds targets, read by a call that reaches targets too")])
            for var, item, piece in zip(unrolled.variables, items, unrolled.items):
                self._bind_loop_target(frame, cst.Name(var), item, line)
                self._reaching_code(frame, cst.parse_statement(piece), line)
            if unrolled.reader:  # read through an iterator that counts what it gives (drained.py)
                self._add(frame, f"{unrolled.reader} = {RUNTIME}.Drained([{', '.join(unrolled.names)}])\n", line)
            self._reaching_code(frame, rest, line)
            if unrolled.reader:
                self._add(frame, f"{RUNTIME}.expect_drained({unrolled.reader}, {self._origin(frame, line)!r}, "
                                 f"{unrolled.generator!r})\n", line)
            return True
        return False

    def _refuse_guard(self, frame: Frame, line: int, label: str) -> None:
        raise Refused([UnsupportedStatement(frame.planned.path, line, f"a reaching call inside a {label}")])

    def _call_kind(self, frame: Frame, call: cst.Call, made: bool = False) -> bool | None:
        """True: the call's callee is a target module at emit time; False: a module that holds targets, or a
        function the plan analyses; None: neither, or not known before running. In a statement emission `made`
        (a comprehension's element for one item), which has no call site of the plan's to name its reaching
        calls, a module whose forward the plan analyses counts too (`self.runner(layer, h)`: given targets)."""
        try:
            callee = evaluate(_code(call.func), frame.values, frame.module_globals)
        except Undecidable:
            return None
        if _is_module(callee):
            if type(callee).__name__ in self.targets:
                return True
            if self._holds_target(callee):
                return False
            if not made:
                return None
            fn, self_obj = getattr(type(callee), "forward", None), callee
        else:
            fn, self_obj = getattr(callee, "__func__", callee), getattr(callee, "__self__", None)
        if not inspect.isfunction(fn):
            return None
        if _function_ref(fn) in RUNS_FIRST_ARGUMENT:  # the analysis followed it into its first argument
            raise Refused([UnsupportedStatement(frame.planned.path, self._line_of(frame, call), (
                f"`{_code(call.func)}` runs the module given to it, which is or holds a target (gradient "
                "checkpointing, on while training): subgraphs are cut at module calls; split the model in eval mode, or "
                "with gradient checkpointing off"))])
        nid = node_id(_function_ref(fn), _class_ref(type(self_obj)) if _is_module(self_obj) else None)
        return False if self.plan.function(nid) is not None else None

    def _target_call(self, frame: Frame, stmt: cst.CSTNode, call: cst.Call, line: int, choose: tuple) -> None:
        module = self._concrete(frame, call.func, line)
        name = type(module).__name__
        if name not in self.targets:
            self._not_a_target(frame, stmt, module, line)
            return
        path = self._path_expr(module)
        if path in self.called_targets:
            raise Refused([UnsupportedStatement(frame.planned.path, line, f"{path} would be called twice")])
        self.called_targets.append(path)
        # through call_target where torch's own `__call__` would dispatch hooks for it; a class with a `__call__`
        # of its own is called as written (call_target would call it so too)
        code = self._returning(frame, stmt, choose=choose, target=call if runtime.called_by_torch(module) else None)
        self._add(frame, code, line, target=self.paths[id(module)])
        self._forget_stores(frame, stmt)

    def _apart(self, frame: Frame, stmt: cst.CSTNode, calls: list[tuple[cst.Call, bool]], line: int, choose: tuple) -> None:
        """A statement with several reaching calls that run (every Linear of an MLP line, a head of a Linear
        and a module that holds one), or with one inlined call that Python computes something before (`h =
        self.config.scale * self.block(h)`): taken apart in Python's evaluation order (apart.py), each reaching
        call a statement of its own, emitted as a target or an inlined call; the rest is opaque code."""
        self.temps += 1
        try:
            pieces = take_apart(rewritten(stmt, {}, None, choose).strip(), [(_code(c.func), kind) for c, kind in calls],
                                f"lin__{self.temps}_")
        except CannotLinearize as exc:
            raise Refused([UnsupportedStatement(frame.planned.path, line, f"several reaching calls in one statement: {exc}")]) from exc
        for piece in pieces:
            if piece.call is None:  # opaque code (`lin__3 = i + 1`, known at emit time as there), or the rest
                self._reaching_code(frame, piece.stmt, line)
            elif piece.target:
                self._target_call(frame, piece.stmt, piece.call, line, ())
            else:
                self._ancestor_call(frame, piece.stmt, piece.call, line, ())

    def _returning(self, frame: Frame, stmt: cst.CSTNode, replace: tuple[cst.Call, str] | None = None, choose: tuple = (),
                   target: cst.Call | None = None) -> str:
        """A reaching statement's code; `return X` becomes an assignment of the frame's result."""
        code = rewritten(stmt, frame.rename, replace, choose, target)
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
            lines = code.splitlines()
            first = next(i for i, l in enumerate(lines) if l.lstrip().startswith("return"))
            body = "\n".join(lines[first:]).lstrip()[len("return"):].strip() or "None"
            frame.returned = True
            return "\n".join(lines[:first] + [f"{frame.result} = {body}"]) + "\n"
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body):
            raise Refused([UnsupportedStatement(frame.planned.path, self._line_of(frame, stmt),
                                                "a `return` sharing its line with other statements")])
        return code

    def _not_a_target(self, frame: Frame, stmt: cst.CSTNode, module: Any, line: int) -> None:
        if self._holds_target(module):
            raise Refused([InstanceMismatch(frame.planned.path, line, f"{type(module).__name__} holds targets but the plan does not analyse it")])
        self._emit_stmt(frame, stmt, line)
        self._forget_stores(frame, stmt)

    def _planned_method(self, obj: Any, name: str) -> Function | None:
        """The plan's analysis of `obj.name` as the source defines it, along the class's MRO: what a call
        analysed there runs, when the running function (another name) replaced it after the class was made."""
        for cls in type(obj).__mro__:
            planned = self.plan.function(node_id(FunctionRef(cls.__module__, f"{cls.__qualname__}.{name}"), _class_ref(type(obj))))
            if planned is not None:
                return planned
        return None

    def _holds_target(self, module: Any) -> bool:
        """Whether a module is, or holds, a module of a target class or one the caller's targets select."""
        if not hasattr(module, "modules"):
            return False
        if self._selected is None:
            self._selected = {id(m) for m in (self.model.get_submodule(n) for n in self.watched or ())}
        return any(type(m).__name__ in self.targets or id(m) in self._selected for m in module.modules())

    def _ancestor_call(self, frame: Frame, stmt: cst.CSTNode, call: cst.Call, line: int, choose: tuple) -> None:
        if isinstance(stmt, cst.SimpleStatementLine) and evaluated_before(rewritten(stmt, {}, None, choose).strip(),
                                                                           _code(call.func)) is not None:
            # the body runs where the call stands: what Python computes before it (`self.config.scale * ...`) first
            self._apart(frame, stmt, [(call, False)], line, choose)
            return
        callee = self._callee(frame, call.func, line)
        bound = getattr(callee, "__self__", None)
        autograd = False
        recheck = None
        if hasattr(callee, "forward") and _is_module(callee):
            fn = type(callee).forward
            self_obj = callee
            recheck = ("expect_forward", None, None, runtime.running_forward(callee))
        elif bound is not None and _is_module(bound):
            fn = callee.__func__
            self_obj = bound
            if isinstance(call.func, cst.Attribute) and not isinstance(call.func.value, cst.Call):
                recheck = ("expect_method", None, call.func.attr.value, fn)
            elif isinstance(call.func, cst.Attribute):  # super().name: looked up past the caller's class
                owner = FunctionRef.parse(frame.planned.function).owner
                alias = f"owner__{frame.index}"
                self.globals[alias] = _import_object(FunctionRef(owner.module, owner.name)) if owner else None
                recheck = ("expect_super", None, (alias, call.func.attr.value), fn) if owner else None
        elif isinstance(bound, type) and _is_autograd_function(bound) and callee.__name__ == "apply":
            fn = inspect.unwrap(bound.forward)
            self_obj = None
            autograd = True
        elif inspect.isfunction(callee):
            fn = callee
            self_obj = None
            if isinstance(call.func, cst.Name) and call.func.value not in frame.rename and frame.module_globals.get(call.func.value) is fn:
                alias = f"namespace__{frame.index}"
                self.globals[alias] = frame.module_globals
                recheck = ("expect_global", alias, call.func.value, fn)
        else:
            raise Refused([UnresolvedCall(frame.planned.path, line, f"`{_code(call.func).strip()}` is a {type(callee).__name__} at emit time")])
        nid = node_id(_function_ref(fn), _class_ref(type(self_obj)) if self_obj is not None else None)
        planned = self.plan.function(nid)
        if planned is None and self_obj is not None and isinstance(call.func, cst.Attribute):
            planned = self._planned_method(self_obj, call.func.attr.value)  # replaced by a function of another name
        if planned is None:
            if self_obj is not None and not self._holds_target(self_obj):
                self._emit_stmt(frame, stmt, line)
                self._forget_stores(frame, stmt)
                return
            held = f"{type(self_obj).__name__} holds targets, and " if self_obj is not None else ""
            raise Refused([InstanceMismatch(frame.planned.path, line, f"{held}the plan has no analysis of {nid}")])
        if callee is self_obj:  # `module(...)`: inlined as its forward, which must be all that the call runs
            refusal = own_call_refusal(self_obj, planned)
            if refusal is not None:
                raise Refused([refusal])
        self._check_callee(frame, call, callee, self_obj, line)
        result = f"ret__{self.frames}"
        inner = self._frame(nid, planned, self_obj, rename=True, result=result)
        inner.scopes = frame.scopes
        inner.running = None if autograd else fn
        if recheck is not None and recheck[1] is None:  # checked on the callee's `self`, bound in its frame
            recheck = (recheck[0], inner.local(inner.fn.params.params[0].name.value), *recheck[2:])
        inner.recheck = recheck
        kw_code, kw_values, open_kw = self._call_kwargs(frame, inner, call, self_obj is not None or autograd, line)
        if autograd:  # `Fn.apply(...)` gives the forward a fresh context as its first argument
            ctx_name = inner.fn.params.params[0].name.value
            kw_code = "{" + f"{ctx_name!r}: {RUNTIME}.AutogradContext(), " + kw_code[1:]
        hooks = None
        if callee is self_obj:  # `module(...)`: torch runs the module's forward hooks after its forward
            positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
            hooks = (f"hk__{inner.index}", self._origin(frame, line), len(positional))
        self._bind(inner, kw_code, kw_values, open_kw, hooks)
        self._body(inner)
        self._finish(inner)
        if hooks is not None:
            held, where, _ = hooks
            self_var = inner.local(inner.fn.params.params[0].name.value)
            self._add(frame, f"{result} = {RUNTIME}.hooks_exit({self_var}, {held}, {result}, {where!r})\n", line)
        self._add(frame, self._returning(frame, stmt, (call, result), choose), line)
        self._forget_stores(frame, stmt)

    def _check_callee(self, frame: Frame, call: cst.Call, callee: Any, self_obj: Any, line: int) -> None:
        """An inlined module call never evaluates its callee: the callee's frame binds `self` from the module's path.
        Where the callee is written other than as that path (`self.blocks[i](h)`, `self.blocks[i].run(h)`), the
        subgraph evaluates it where the call stood, once, as Python would, and checks it is that module. A callee
        with a call or a condition in it is left to the checks of those (a `super()` call, `a if c else b`)."""
        if self_obj is None:
            return
        written = call.func if callee is self_obj else call.func.value if isinstance(call.func, cst.Attribute) else None
        if written is None or any(True for _ in walk(written, only=(cst.Call, cst.IfExp, cst.BooleanOperation))):
            return
        code = _code(written.visit(_Rewrite(frame.rename))).strip()
        path = self._path_expr(self_obj)
        if code != path:
            shown = " ".join(_code(written).split())
            self._add(frame, expect_module_code(code, path, self._origin(frame, line), shown) + "\n", line)

    def _call_kwargs(self, frame: Frame, inner: Frame, call: cst.Call, bound: bool, line: int):
        params = inner.fn.params
        positional = [p.name.value for p in list(params.posonly_params) + list(params.params)]
        if bound:
            positional = positional[1:]
        items: list[str] = []
        values: dict[str, object] = {}
        open_kw = False
        extra_positional: list[tuple[str, object]] = []
        pos_index = 0
        for arg, code, value in self._positional_args(frame, call, line):
            if arg.star == "**":
                items.append(f"**{code}")
                splat = self._arg_value(frame, arg.value)
                if isinstance(splat, dict):
                    values.update(splat)
                else:
                    open_kw = True
                continue
            if arg.keyword is None:
                if pos_index < len(positional):
                    name = positional[pos_index]
                    pos_index += 1
                    items.append(f"{name!r}: {code}")
                    values[name] = value
                else:
                    extra_positional.append((code, value))
                continue
            items.append(f"{arg.keyword.value!r}: {code}")
            values[arg.keyword.value] = value
        if extra_positional:
            star = params.star_arg
            if not isinstance(star, cst.Param):
                raise Refused([UnsupportedStatement(frame.planned.path, line, "more positional arguments than parameters in an inlined call")])
            items.append(f"{star.name.value!r}: ({''.join(c + ', ' for c, _ in extra_positional)})")
            values[star.name.value] = tuple(v for _, v in extra_positional)
        return "{" + ", ".join(items) + "}", values, open_kw

    def _positional_args(self, frame: Frame, call: cst.Call, line: int) -> list[tuple[cst.Arg, str, object]]:
        """A call's arguments with their emitted code and emit-time value; `*xs` of a tuple whose length
        emission knows (an inlined function's own `*args`) is spread into one argument per item."""
        out = []
        for arg in call.args:
            code = _code(arg.value.visit(_Rewrite(frame.rename))).strip()
            if arg.star == "*":
                spread = self._arg_value(frame, arg.value)
                if not isinstance(spread, tuple):
                    raise Refused([UnsupportedStatement(frame.planned.path, line, "`*args` passed to an inlined call, "
                                                        "of a length not known when emitting")])
                out += [(arg.with_changes(star=""), f"{code}[{i}]", item) for i, item in enumerate(spread)]
                continue
            out.append((arg, code, None if arg.star == "**" else self._arg_value(frame, arg.value)))
        return out

    def _arg_value(self, frame: Frame, expr: cst.BaseExpression) -> object:
        try:
            return evaluate(_code(expr), frame.values, frame.module_globals)
        except Undecidable:
            if isinstance(expr, cst.Name) and is_present(frame.values.get(expr.value)):
                return PRESENT
            return UNKNOWN

    def _control(self, frame: Frame, stmt: cst.CSTNode, entry: Statement) -> None:
        line = entry.first
        kind = entry.statement
        if kind is Control.IF:
            taken = self._decide(frame, stmt.test, line, dynamic=entry.condition.decided is Decided.DYNAMIC, stmt=stmt)
            blocks = dict(statement_blocks(stmt))
            if taken:
                self._block(frame, blocks["body"], entry.block("body"))
            else:
                self._block(frame, blocks.get("orelse", []), entry.block("orelse"))
        elif kind is Control.FOR:
            self._unroll(frame, stmt, entry, line)
        elif kind is Control.WITH:
            if any(i.asname is not None for i in stmt.items):
                raise Refused([UnsupportedStatement(frame.planned.path, line, "`with ... as` around target calls")])
            # each subgraph of the body enters the `with` again: its items' arguments are evaluated once (withitems.py)
            saved = frame.scopes
            body_binds = _rebound_in(stmt.body)
            for i, item in enumerate(stmt.items):  # `with a, b:` as `with a:` around `with b:`
                item = item.with_changes(item=self._chosen(frame, item.item, line))
                bindings, entered, again = withitems.split_item(item, f"with__{frame.index}_{line}_{i}")
                rebound = sorted({n.value for n in _name_nodes(*again)} & body_binds)
                rebound += withitems.written_again(again, stmt.body)
                if rebound:
                    raise Refused([UnsupportedStatement(frame.planned.path, line, (
                        f"the `with` item reads `{rebound[0]}`, which its body binds or writes again: Python evaluates the item "
                        "once, where the `with` starts, but each subgraph of the body enters the `with` again and evaluates "
                        "it anew"))])
                for name, value in bindings:
                    self._add(frame, f"{name} = {_code(value.visit(_Rewrite(frame.rename))).strip()}\n", line)
                frame.scopes = frame.scopes + (self._entered_again(frame, entered, again, line,
                                                                   f"with__{frame.index}_{line}_{i}_entered"),)
            self._block(frame, list(stmt.body.body), entry.block("body"))
            frame.scopes = saved
        else:
            raise Refused([UnsupportedStatement(frame.planned.path, line, f"`{kind.value}` around target calls")])

    def _chosen(self, frame: Frame, item: cst.BaseExpression, line: int) -> cst.BaseExpression:
        """A `with` item written as `a if c else b`: the side the sample takes, its test decided now and checked where
        the `with` starts (as Python evaluates it, once), so that the subgraphs of the body enter that side."""
        while isinstance(item, cst.IfExp):
            item = item.body if self._decide(frame, item.test, line) else item.orelse
        return item

    def _entered_again(self, frame: Frame, entered: cst.WithItem, again: list, line: int, state: str) -> str:
        """The code of a `with` item as each subgraph of its body enters it: a call with its callee checked
        (withitems.py); any other item (a name the analysis found bound to a mode setter's call) through `reentered`,
        with the `state` its first entry records, checked where it is entered (reentry.py)."""
        rewritten = entered.visit(_Rewrite(frame.rename))
        callee = withitems.checked_callee(entered, again)
        if callee is None:
            self._add(frame, f"{state} = {RUNTIME}.EnteredState()\n", line)
            return withitems.entered_through(rewritten, RUNTIME, state, self._origin(frame, line))
        shown = _code(callee).strip()
        try:
            found = evaluate(shown, frame.values, frame.module_globals)
        except Undecidable:
            found = UNKNOWN
        why = withitems.not_a_mode_setter(shown, found, found is UNKNOWN)
        if why:
            raise Refused([UnsupportedStatement(frame.planned.path, line, why)])
        alias = f"context__{len(self.globals)}"
        self.globals[alias] = found
        return withitems.entered_checked(rewritten, RUNTIME, alias, self._origin(frame, line), shown)

    def _decide(self, frame: Frame, test: cst.BaseExpression, line: int, dynamic: bool = False, stmt: cst.If | None = None) -> bool:
        """Which branch of an `if` around target calls runs for the sample.

        A decision holds for inputs like the sample only (`x is None`, `len(...)`, the shape
        of a sample tensor, a config flag): the test runs again in the subgraphs where it
        stood, and a run on inputs that would take the other branch stops with
        `BranchMismatch` there. A test that can't be computed before running (not one on
        tensor values) is read off the model's own forward on the sample (observe.py).
        """
        code = _code(test).strip()
        key = (frame.file, line)
        occurrence = self.decisions[key] = self.decisions.get(key, -1) + 1
        try:
            value, _ = evaluate_condition(code, frame.values, frame.module_globals)
            taken = truth(value)
        except Undecidable as exc:
            if dynamic:
                raise Refused([DynamicCondition(frame.planned.path, line, f"`{code}`")]) from exc
            taken = self._observed(frame, stmt, line, occurrence) if stmt is not None else None
            if taken is None:
                why = f"; {self.sample_run.failure}" if self.sample_run.failure else ""
                raise Refused([UndecidedCondition(frame.planned.path, line, f"`{code}`: {exc}{why}")]) from exc
        check = _code(test.visit(_Rewrite(frame.rename))).strip()
        where = self._origin(frame, line)
        self._add(frame, f"{RUNTIME}.expect_branch(bool({check}), {taken!r}, {where!r}, {code!r})\n", line)
        return taken

    def _observed(self, frame: Frame, stmt: cst.If, line: int, occurrence: int) -> bool | None:
        """The branch the model's own forward took at this `if`, its `occurrence`-th time."""
        if not frame.file:
            return None
        test_end = line + _code(stmt.test).strip().count("\n")
        body = self._line_of(frame, stmt.body.body[0])
        orelse = stmt.orelse
        if orelse is None:
            end = positions(frame.tree).get(stmt)  # the code of the node would count the blank lines before it
            after = (end.end.line + frame.line_offset if end is not None else self._line_of(frame, stmt)
                     + _code(stmt).strip().count("\n")) + 1
        else:
            after = self._line_of(frame, orelse if isinstance(orelse, cst.If) else orelse.body.body[0])
        return self.sample_run.branch(IfLines(frame.file, (line, test_end), body, after), occurrence)

    def _unroll(self, frame: Frame, stmt: cst.For, entry: Statement, line: int) -> None:
        """One copy of the body per item the iterable gives at emission. Where the loop stood, the
        subgraphs evaluate the iterable again and check that it gives the same items (`expect_loop`):
        its length and order may come from anything (an input, module-level state, a list the
        forward reorders), and only the items themselves say what the loop runs over."""
        items = list(self._concrete(frame, stmt.iter, line, UndecidedLoop))
        # an iterable that can change as Python reads it is checked again where each later item is taken (liveloop.py)
        live = liveloop.read_as_it_goes(stmt.iter, lambda node: evaluate(_code(node), frame.values, frame.module_globals))
        check = len(self.steps)
        self._add(frame, "", line)  # the check, once it is known how many items the loop took
        later: list[tuple[int, int]] = []  # (step, item) of the checks where the loop takes a later item
        taken = 0
        for item in items:
            if frame.returned:
                break
            if live and taken:
                later.append((len(self.steps), taken))
                self._add(frame, "", line)
            taken += 1
            self._bind_loop_target(frame, stmt.target, item, line)
            try:
                self._block(frame, list(stmt.body.body), entry.block("body"))
            except _LoopExit as exit_:
                if exit_.kind == "break":
                    break
        complete = taken == len(items) and not frame.returned
        if live and complete:  # and where it would take one more
            later.append((len(self.steps), taken))
            self._add(frame, "", line)
        expected = runtime.LoopItems(tuple(items[:taken]), tuple(self._item_label(i) for i in items[:taken]), complete)
        alias = f"loop__{len(self.globals)}"
        self.globals[alias] = expected
        iterable = _loop_iterable(stmt.iter, frame.rename)
        code = _code(stmt.iter).strip()
        where = self._origin(frame, line)
        for at, call in [(check, f"expect_loop({iterable}, "), *((at, f"expect_loop_item({iterable}, {index}, ")
                                                                 for at, index in later)]:
            step = self.steps[at]
            self.steps[at] = Step(code=f"{RUNTIME}.{call}{alias}, {where!r}, {code!r})\n", origin=step.origin, target=None,
                                  scopes=step.scopes, modules=step.modules, reads=step.reads)

    def _item_label(self, item: Any) -> str:
        """How a loop item is named in a LoopMismatch: a module by its path."""
        if type(item) in (tuple, list):
            return "(" + ", ".join(self._item_label(i) for i in item) + ")"
        if _is_module(item) and id(item) in self.paths:
            return self.paths[id(item)] or "the model"
        return runtime.describe_item(item)

    def _bind_loop_target(self, frame: Frame, target: cst.BaseExpression, value: Any, line: int) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            parts = list(value)
            if len(parts) != len(target.elements):
                raise Refused([UnsupportedStatement(frame.planned.path, line, "loop target does not unpack")])
            for el, part in zip(target.elements, parts):
                self._bind_loop_target(frame, el.value, part, line)
            return
        if not isinstance(target, cst.Name):
            raise Refused([UnsupportedStatement(frame.planned.path, line, "a loop target that is not a name")])
        name = target.value
        local = frame.local(name)
        frame.values[name] = value
        frame.defined.add(name)
        if _is_module(value):
            path = self._path_expr(value)
            self.module_bindings[local] = path
            self._add(frame, f"{local} = {path}\n", line)
            return
        literal = _literal(value)
        if literal is None:
            alias = f"const__{len(self.globals)}"
            self.globals[alias] = value
            literal = alias
        self.module_bindings.pop(local, None)
        self._add(frame, f"{local} = {literal}\n", line)

    # ----- soundness checks ----------------------------------------------------------------

    def _check_unresolved(self) -> None:
        """An unresolved call in a function whose instances hold targets could hide a target call."""
        classes = {}
        for _, m in named_modules(self.model):
            classes.setdefault(_class_ref(type(m)), []).append(m)
        problems: list[Message] = []
        for item in self.plan.unresolved:
            if not item.receiver_is_self:
                continue
            node = item.function
            self_class = node.partition("[")[2].rstrip("]") or None
            planned = self.plan.function(node)
            cls = None
            if planned is not None and planned.self_class:
                cls = ClassRef.parse(planned.self_class)
            elif self_class:
                cls = ClassRef.parse(self_class) if ":" in self_class else ClassRef(node.partition(":")[0], self_class)
            else:
                owner = FunctionRef.parse(node).owner
                cls = owner
            if cls is None:
                continue
            for m in classes.get(cls, []):
                expr = item.call.partition("(")[0]
                obj = self._receiver(m, expr)
                if obj is not None and self._holds_target(obj):
                    problems.append(UnresolvedCall(item.path, item.line, f"`{item.call}`: {item.reason}"))
                    break
        if problems:
            raise Refused(problems)

    def _check_containment(self) -> None:
        """No target may sit below a module whose forward the analysis skipped as unable to hold one."""
        skipped = set(self.plan.not_analysed)
        if not skipped:
            return
        for name, module in outermost(named_modules(self.model), lambda m: type(m).__name__ in self.targets):
            parts = name.split(".")
            for depth in range(1, len(parts)):
                prefix = ".".join(parts[:depth])
                holder = self.model.get_submodule(prefix)
                if str(_class_ref(type(holder))) in skipped:
                    raise Refused([InstanceMismatch(*location(type(holder)), f"{prefix} ({type(holder).__name__}) holds target {name} "
                                                          "but the analysis did not resolve a target below it")])

    def _receiver(self, module: Any, expr: str) -> Any:
        """What `self.a.b` is on an instance, without calling anything."""
        parts = expr.split(".")
        if not parts or parts[0] != "self":
            return None
        obj = module
        for part in parts[1:]:
            if not part.isidentifier():
                return None
            try:
                obj = inspect.getattr_static(obj, part)
            except AttributeError:
                sub = getattr(obj, "_modules", {}).get(part) if _is_module(obj) else None
                if sub is None:
                    return None
                obj = sub
            if isinstance(obj, property):
                return None
        bound = getattr(obj, "__self__", None)
        return bound if bound is not None else obj
