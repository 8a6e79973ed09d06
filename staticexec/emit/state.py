"""Writes that outlive a subgraph's run: state the pipeline's second run of it would change again.

llm-compressor runs every subgraph twice on the same inputs (calibrate, then propagate). A
subgraph's inputs are copied or checked (run.py), and its locals start afresh each run, but
the objects it reaches by no input and no local are shared by both runs: the model and its
modules (`self`, `self__1 = self.layers[0]`), module-level values and whatever hangs off them.
A write to those that gives another result when it runs again (`self.seen.append(h)`,
`self.steps += 1`, `STATE.pop()`, `self.mean.mul_(0.9)`, `self.x = self.x + [h]`) would be
applied twice, silently. Such a write in the code a subgraph runs is refused (`mutated-state`),
with the model file and line it was emitted from. Writes that a second run repeats to the same
effect (`self.flag = True`, `self.cache[k] = v`, `d.clear()`, `t.copy_(v)`) are kept.

It runs in cut.py, which knows for each statement which names are the subgraph's own, and on the
helpers that emitted code calls as opaque code (`self.remember(h)`): their bodies are read too,
and a repeating write there to `self` or to a module-level value is refused at the helper's line.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
import types
from typing import Any, Callable

from staticexec.analysis.session import current
from staticexec.messages import MutatedState
from staticexec.emit.validate import relative

# methods that change their object in place with another result each time they run
REPEATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "appendleft", "extendleft",
                               "popleft", "rotate"})
# in-place tensor methods that give the same result when they run again on the same inputs
IDEMPOTENT_INPLACE = frozenset({"copy_", "fill_", "zero_", "requires_grad_", "set_", "share_memory_", "detach_",
                                "clamp_", "clamp_min_", "clamp_max_", "clip_"})
# conversions: `self.x = self.x.to(device)` run again converts what is already converted, to the same value
CONVERSIONS = frozenset({"to", "type", "float", "half", "bfloat16", "double", "contiguous", "cpu", "cuda", "detach",
                         "clone", "type_as"})


def _root(node: ast.AST) -> str | None:
    """The name an attribute or subscript chain starts from: `self` in `self.a[i].b`, in `getattr(self, "a")`, and
    in `type(self).n`, the class being reached from its instance; none through another call, whose result the code
    does not name (`torch.zeros(n).scatter_add_(...)` writes a fresh tensor)."""
    while True:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("type", "getattr")
                and node.args and not node.keywords and len(node.args) == (1 if node.func.id == "type" else 2)):
            node = node.args[0]
            continue
        return node.id if isinstance(node, ast.Name) else None


@functools.lru_cache(maxsize=65536)
def state_aliases(code: str) -> tuple[tuple[str, str], ...]:
    """(name, root) for each name the code binds to an object reached from another name: `hist = self.history`,
    `hist = getattr(self, "history")`, `h2 = hist`, each item of `a, b = self.x, self.y`, and `(hist := self.history)`
    anywhere in it. A write through the name is a write to what the root reaches."""
    out = []
    pairs: list[tuple[ast.AST, ast.AST]] = []
    tree = ast.parse(code)
    for top in tree.body:
        if isinstance(top, (ast.Assign, ast.AnnAssign)) and top.value is not None:
            pairs += [(t, top.value) for t in (top.targets if isinstance(top, ast.Assign) else [top.target])]
    pairs += [(node.target, node.value) for node in ast.walk(tree) if isinstance(node, ast.NamedExpr)]
    while pairs:
        target, value = pairs.pop()
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(
                target.elts) == len(value.elts):
            pairs += list(zip(target.elts, value.elts))
        elif isinstance(target, ast.Name) and isinstance(value, (ast.Attribute, ast.Subscript, ast.Name, ast.Call)):
            root = _root(value)
            if root is not None:
                out.append((target.id, root))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def repeating_writes(code: str) -> tuple[tuple[str, str], ...]:
    """(root name, the write as written) for each write in `code` that a second run would apply again."""
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(code)):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            tensor_inplace = method.endswith("_") and not method.startswith("_") and method not in IDEMPOTENT_INPLACE
            if method in REPEATING_METHODS or tensor_inplace:
                target = node.func.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, (ast.Attribute, ast.Subscript)):
            target = node.target
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Attribute, ast.Subscript)) and _reads(node.value, t):
                    target = t
        if target is None:
            continue
        root = _root(target)
        if root is not None and not root.startswith("_sx"):
            out.append((root, ast.unparse(node).split("\n")[0][:80]))
    return tuple(out)


_IN_PLACE = {ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__", ast.MatMult: "__imatmul__",
             ast.Div: "__itruediv__", ast.FloorDiv: "__ifloordiv__", ast.Mod: "__imod__", ast.Pow: "__ipow__",
             ast.LShift: "__ilshift__", ast.RShift: "__irshift__", ast.BitXor: "__ixor__"}
# (`|=` and `&=` give the same result when run again: a dict or set updated, a mask combined)


@functools.lru_cache(maxsize=65536)
def augmented_name(code: str) -> tuple[str, str] | None:
    """(name, the operator's in-place method) when the code is one augmented assignment to a plain name (`acc += 1`).

    On a name bound to state (`acc = self.acc`) it changes that state in place when the value has the in-place
    method (a tensor, a list), and only rebinds the name otherwise (an int): which one is known when it runs, so
    the emitted code checks it there (`runtime.expect_rebinding`)."""
    tree = ast.parse(code)
    stmt = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.target, ast.Name) or type(stmt.op) not in _IN_PLACE:
        return None
    return stmt.target.id, _IN_PLACE[type(stmt.op)]


def _reads(value: ast.AST, target: ast.AST) -> bool:
    """Whether `value` reads what `target` writes into: `self.saved` or below it for `self.saved['k'] = ...`."""
    chain = []
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        chain.append(ast.unparse(node))
        node = node.value
    if not chain:
        return False
    outer = chain[-1]  # the outermost container below the root, e.g. `self.saved`
    converted = {id(n.func.value) for n in ast.walk(value) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in CONVERSIONS}
    return any(text == outer or text.startswith((outer + ".", outer + "["))
               for text in (ast.unparse(n) for n in ast.walk(value)
                            if isinstance(n, (ast.Attribute, ast.Subscript)) and id(n) not in converted
                            and not (isinstance(n, ast.Attribute) and n.attr in CONVERSIONS)))


def refusal(origin: str, write: str) -> MutatedState:
    """The message for a repeating write to shared state, at the model line it was emitted from."""
    path, _, line = origin.rpartition(":")
    return MutatedState(path, int(line) if line.isdigit() else 0,
                        f"`{write}` changes state that outlives the subgraph (the model, a module or a module-level "
                        "value); the pipeline runs each subgraph twice, so the change would be applied twice")


def helper_refusals(callee: Any, depth: int = 3) -> list[MutatedState]:
    """Repeating writes to state shared by both runs (`self`, module-level values) in a Python helper that
    opaque code calls (a method or a function, not a module call), and in the helpers of `self` it calls."""
    fn = getattr(callee, "__func__", callee)
    if not isinstance(fn, types.FunctionType) or fn.__module__.split(".")[0] == "torch":
        return []
    owner = getattr(callee, "__self__", None)
    out = [refusal(f"{relative(fn.__code__.co_filename)}:{line}", write) for line, write in _helper_writes(fn, owner is not None)]
    if depth > 1 and owner is not None:
        for name in _self_calls(fn):
            inner = inspect.getattr_static(type(owner), name, None)
            if isinstance(inner, types.FunctionType):
                out += helper_refusals(types.MethodType(inner, owner), depth - 1)
    return out


def _per_code(compute: Callable) -> Callable:
    """Keep what `compute` gives for a helper (and more hashable arguments) in the analysis session's table
    `state.<compute's name>`, by the helper's code object, which the functions made again from one definition
    (closures) share."""
    name = "state." + compute.__name__.lstrip("_")

    @functools.wraps(compute)
    def cached(fn: types.FunctionType, *rest: Any) -> Any:
        table = current().table(name)
        key = (fn.__code__, *rest)
        if key not in table:
            table[key] = compute(fn, *rest)
        return table[key]

    return cached


def _source_of(fn: types.FunctionType) -> Any:
    """What inspect is asked for a helper's source lines: the function itself where inspect finds its module by
    name (that module's file is the code's, and no `__wrapped__` leads inspect to another function), else its
    code object, whose module inspect finds by reading the file of every module loaded (tens of ms, the first
    time in a process). Both give the same lines."""
    module = sys.modules.get(fn.__module__) if isinstance(fn.__module__, str) else None
    if (module is not None and getattr(module, "__file__", None) == fn.__code__.co_filename
            and not hasattr(fn, "__wrapped__")):
        return fn
    return fn.__code__


@_per_code
def _parsed(fn: types.FunctionType) -> ast.FunctionDef | None:
    try:
        lines, start = inspect.getsourcelines(_source_of(fn))
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    tree_fn = tree.body[0] if tree.body else None
    if not isinstance(tree_fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    ast.increment_lineno(tree, start - 1)
    return tree_fn


@_per_code
def _helper_writes(fn: types.FunctionType, bound: bool) -> tuple[tuple[int, str], ...]:
    """(line, write) for each repeating write in a helper to a name that is not its own: its `self` (when
    bound) or a module-level value. Its other parameters are the caller's values, judged in the caller."""
    tree = _parsed(fn)
    if tree is None:
        return ()
    params = [a.arg for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs]
    params += [a.arg for a in (tree.args.vararg, tree.args.kwarg) if a is not None]
    shared = {params[0]} if bound and params else set()
    own = (set(params) - shared) | set(fn.__code__.co_varnames) - shared
    out = []
    for stmt in tree.body:
        for root, write in repeating_writes(ast.unparse(stmt)):
            if root not in own:
                out.append((stmt.lineno, write))
    return tuple(out)


@_per_code
def _self_calls(fn: types.FunctionType) -> tuple[str, ...]:
    """Names of the methods a helper calls on its `self`: `self.name(...)`."""
    tree = _parsed(fn)
    if tree is None or not tree.args.args:
        return ()
    me = tree.args.args[0].arg
    return tuple(sorted({n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and isinstance(n.func.value, ast.Name) and n.func.value.id == me}))
