"""Emit-time evaluation of static and input expressions against a model instance.

Conditions classified `static` or `input`, and the iterables of loops over
target containers, are evaluated when subgraphs are emitted: `self` is the
real module, config values are real, and each input is its sample value
(tensors are only known to be present). Only a safe subset of Python is
evaluated (no calls but a few builtins), so nothing of the model runs.
"""

from __future__ import annotations

import ast
import builtins


class Undecidable(Exception):
    """The expression depends on a value only known at run time."""


class _Present:
    """An input that is present (not None) but whose value is only known at run time."""

    def __bool__(self) -> bool:
        raise Undecidable("the truth value of a tensor input")

    def __getattr__(self, name: str):
        raise Undecidable(f"an attribute of a run-time value (.{name})")

    def __repr__(self) -> str:
        return "<present at run time>"


class _Unknown:
    """A value computed by opaque code: nothing about it is known."""

    def __repr__(self) -> str:
        return "<computed at run time>"


PRESENT = _Present()
UNKNOWN = _Unknown()

SAFE_CALLS = {
    "enumerate", "zip", "range", "len", "list", "tuple", "reversed", "getattr", "hasattr", "isinstance",
    "iter", "int", "bool", "str", "min", "max", "sorted", "callable", "type", "float", "dict", "set", "any", "all",
}
SAFE_METHODS = {"values", "items", "keys", "get", "index", "count", "startswith", "endswith"}


def sample_value(value: object) -> object:
    """What emission may know about a sample input: its value if it is a plain Python scalar."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return value
    return PRESENT


def evaluate(source: str, names: dict[str, object], module_globals: dict) -> object:
    """Evaluate `source` with `names`; raise Undecidable when it needs a run-time value."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise Undecidable(f"can't parse {source!r}") from exc
    if isinstance(tree.body, ast.BoolOp):
        return _bool_op(tree.body, names, module_globals)
    _check(tree, names, module_globals)
    scope = dict(module_globals)
    scope.update(names)
    try:
        return eval(compile(tree, "<staticexec>", "eval"), {"__builtins__": builtins}, scope)
    except Undecidable:
        raise
    except Exception as exc:  # an error here means the expression needs what only running knows
        raise Undecidable(f"{type(exc).__name__}: {exc}") from exc


def _bool_op(node: ast.BoolOp, names: dict, module_globals: dict) -> object:
    """`a and b`: decided by any operand that is known and falsy (truthy for `or`).

    `x is not None and <tensor test>` is decided when x is None; an operand that
    can't be evaluated is skipped only when a later one decides the result.
    """
    deciding = (lambda v: not v) if isinstance(node.op, ast.And) else (lambda v: bool(v))
    undecided: Undecidable | None = None
    result: object = None
    for operand in node.values:
        try:
            result = evaluate(ast.unparse(operand), names, module_globals)
            decided = deciding(result)
        except Undecidable as exc:
            undecided = undecided or exc
            continue
        if decided:
            return result
    if undecided is not None:
        raise undecided
    return result


def is_accessor(method: object) -> bool:
    """A method whose body only returns an expression without calls, like `get_layers()`."""
    import inspect
    import textwrap

    func = getattr(method, "__func__", None)
    if func is None:
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    fn = tree.body[0]
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    return not any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(body[0].value))


def _check(tree: ast.AST, names: dict[str, object], module_globals: dict) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            value = names.get(node.id, module_globals.get(node.id, getattr(builtins, node.id, UNKNOWN)))
            if value is UNKNOWN:
                raise Undecidable(f"`{node.id}` is computed at run time")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in SAFE_CALLS and f.id not in names:
                continue
            if isinstance(f, ast.Attribute) and f.attr in SAFE_METHODS:
                continue
            if isinstance(f, ast.Attribute) and not node.args and not node.keywords:
                owner = evaluate(ast.unparse(f.value), names, module_globals)
                if is_accessor(getattr(owner, f.attr, None)):
                    continue
            raise Undecidable(f"a call (`{ast.unparse(node)[:60]}`)")
        elif isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            raise Undecidable("a construct that is not evaluated statically")
