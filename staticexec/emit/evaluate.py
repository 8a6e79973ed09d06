"""Emit-time evaluation of static and input expressions against a model instance.

Conditions classified `static` or `input`, and the iterables of loops over
target containers, are evaluated when subgraphs are emitted: `self` is the
real module, config values are real, and each input is its sample value
(tensors are only known to be present; a condition may read their shape, see
`evaluate_condition`). A small interpreter covers the safe
subset of Python these expressions use, with short-circuit `and` / `or` and
conditional expressions, so `x is not None and <tensor test>` is decided when
x is None. Nothing of the model runs: the only calls are a few builtins,
plain dict/list methods, and accessor methods that just return an attribute.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
from functools import lru_cache

from staticexec.analysis.conditions import ENVIRONMENT_CALLS


class Undecidable(Exception):
    """The expression depends on a value only known at run time."""


class _Present:
    """An input that is present (not None) but whose value is only known at run time."""

    def __init__(self, cls: type | None = None) -> None:
        self.cls = cls  # the sample's type, when known: `isinstance` and `hasattr` are answered for it

    def __bool__(self) -> bool:
        raise Undecidable("the truth value of a tensor input")

    def __repr__(self) -> str:
        return "<present at run time>"


class _Unknown:
    """A value computed by opaque code: nothing about it is known."""

    def __repr__(self) -> str:
        return "<computed at run time>"


class _Shaped(_Present):
    """A present tensor input whose shape is known from the sample.

    Only a condition may read the shape (`pixel_values.size(0) > 0`), and the
    decision is then checked again when the subgraphs run (see `Emitter._decide`).
    """

    def __init__(self, shape: tuple[int, ...], cls: type | None = None) -> None:
        super().__init__(cls)
        self.shape = shape

    def __repr__(self) -> str:
        return f"<present at run time, shape {list(self.shape)}>"


PRESENT = _Present()
UNKNOWN = _Unknown()
SHAPE_ATTRIBUTES = {"shape", "ndim"}
SHAPE_METHODS = {"size", "dim", "numel"}


def is_present(value: object) -> bool:
    """Whether a value stands for a present tensor input (with or without a known shape)."""
    return isinstance(value, _Present)

SAFE_CALLS = {
    "enumerate", "zip", "range", "len", "list", "tuple", "reversed", "getattr", "hasattr", "isinstance",
    "iter", "int", "bool", "str", "min", "max", "sorted", "callable", "type", "float", "dict", "set", "any", "all",
    "sum", "abs", "issubclass",
}
SAFE_METHODS = {"values", "items", "keys", "get", "index", "count", "startswith", "endswith"}
BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def sample_value(value: object) -> object:
    """What emission may know about a sample input: its value if it is a plain Python scalar."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return value
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return _Shaped(tuple(shape), type(value))
    return _Present(type(value))


@lru_cache(maxsize=8192)
def _parse(source: str) -> ast.expr:
    try:
        return ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise Undecidable(f"can't parse {source!r}") from exc


def evaluate(source: str, names: dict[str, object], module_globals: dict) -> object:
    """Evaluate `source` with `names`; raise Undecidable when it needs a run-time value."""
    return _Interpreter(names, module_globals).eval(_parse(source))


def evaluate_condition(source: str, names: dict[str, object], module_globals: dict) -> tuple[object, bool]:
    """Like `evaluate`, but the shapes of sample tensors may be read; also says whether one was.

    A decision that read a shape holds for inputs of that shape only, so the caller
    must check it again at run time.
    """
    interpreter = _Interpreter(names, module_globals, shapes=True)
    value = interpreter.eval(_parse(source))
    return value, interpreter.read_shape


def truth(value: object) -> bool:
    """Python's truth of a value known at emit time; Undecidable for one computed at run time."""
    if value is UNKNOWN:
        raise Undecidable("a value computed at run time")
    try:
        return bool(value)
    except Undecidable:
        raise
    except Exception as exc:  # a tensor's truth value
        raise Undecidable(f"the truth value of a {type(value).__name__}") from exc


class _Interpreter:
    def __init__(self, names: dict[str, object], module_globals: dict, shapes: bool = False) -> None:
        self.names = names
        self.globals = module_globals
        self.shapes = shapes
        self.read_shape = False

    def _shaped(self, base: object) -> bool:
        if self.shapes and isinstance(base, _Shaped):
            self.read_shape = True
            return True
        return False

    def eval(self, node: ast.expr) -> object:
        """The value of an expression; raises Undecidable when it is not covered or only known at run time."""
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise Undecidable(f"`{ast.unparse(node)[:60]}` is not evaluated statically")
        value = method(node)
        if value is UNKNOWN:
            raise Undecidable(f"`{ast.unparse(node)[:60]}` is computed at run time")
        return value

    def _Constant(self, node: ast.Constant) -> object:
        return node.value

    def _Name(self, node: ast.Name) -> object:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in self.globals:
            return self.globals[node.id]
        if hasattr(builtins, node.id):
            return getattr(builtins, node.id)
        raise Undecidable(f"`{node.id}` is not known")

    def _Attribute(self, node: ast.Attribute) -> object:
        base = self.eval(node.value)
        if node.attr in SHAPE_ATTRIBUTES and self._shaped(base):
            return base.shape if node.attr == "shape" else len(base.shape)
        if is_present(base):
            raise Undecidable(f"an attribute of a run-time value (.{node.attr})")
        try:
            return getattr(base, node.attr)
        except Exception as exc:
            raise Undecidable(f"{type(exc).__name__}: {exc}") from exc

    def _Subscript(self, node: ast.Subscript) -> object:
        base = self.eval(node.value)
        if is_present(base):
            raise Undecidable("indexing a run-time value")
        index = self.eval(node.slice)
        try:
            return base[index]
        except Exception as exc:
            raise Undecidable(f"{type(exc).__name__}: {exc}") from exc

    def _Slice(self, node: ast.Slice) -> object:
        part = lambda n: self.eval(n) if n is not None else None  # noqa: E731
        return slice(part(node.lower), part(node.upper), part(node.step))

    def _Tuple(self, node: ast.Tuple) -> object:
        return tuple(self.eval(e) for e in node.elts)

    def _List(self, node: ast.List) -> object:
        return [self.eval(e) for e in node.elts]

    def _Dict(self, node: ast.Dict) -> object:
        if any(k is None for k in node.keys):
            raise Undecidable("a dict display with ** unpacking")
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def _BoolOp(self, node: ast.BoolOp) -> object:
        """Decided by any operand that is known and falsy (truthy for `or`); unknown ones are skipped
        only when a later operand decides, since the truth of the whole is then fixed."""
        deciding = (lambda v: not v) if isinstance(node.op, ast.And) else (lambda v: v)
        undecided: Undecidable | None = None
        result: object = None
        for operand in node.values:
            try:
                result = self.eval(operand)
                decided = deciding(truth(result))
            except Undecidable as exc:
                undecided = undecided or exc
                continue
            except Exception:
                if undecided is not None:  # Python may never reach this operand
                    raise undecided from None
                raise
            if decided:
                return result
        if undecided is not None:
            raise undecided
        return result

    def _UnaryOp(self, node: ast.UnaryOp) -> object:
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not truth(value)
        if isinstance(node.op, ast.USub) and isinstance(value, (int, float)):
            return -value
        raise Undecidable("an operator on a run-time value")

    def _IfExp(self, node: ast.IfExp) -> object:
        return self.eval(node.body) if truth(self.eval(node.test)) else self.eval(node.orelse)

    def _BinOp(self, node: ast.BinOp) -> object:
        left, right = self.eval(node.left), self.eval(node.right)
        op = BINARY.get(type(node.op))
        if op is None or not _plain(left) or not _plain(right):
            raise Undecidable("arithmetic on a run-time value")
        return op(left, right)

    def _Compare(self, node: ast.Compare) -> object:
        left = self.eval(node.left)
        for op_node, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator)
            op = COMPARE[type(op_node)]
            if not isinstance(op_node, (ast.Is, ast.IsNot)) and not (_plain(left) and _plain(right)):
                raise Undecidable("a comparison of run-time values")
            if not op(left, right):
                return False
            left = right
        return True

    def _Call(self, node: ast.Call) -> object:
        f = node.func
        if isinstance(f, ast.Name) and f.id in SAFE_CALLS and f.id not in self.names:
            func = getattr(builtins, f.id)
        elif isinstance(f, ast.Name) and f.id in ENVIRONMENT_CALLS and f.id not in self.names:
            func = self._Name(f)
            if not getattr(func, "__module__", "").startswith("transformers."):
                raise Undecidable(f"`{f.id}` is not transformers' own")
        elif isinstance(f, ast.Attribute) and f.attr in SAFE_METHODS:
            owner = self.eval(f.value)
            if not isinstance(owner, (dict, list, tuple, str)) and not hasattr(owner, "_modules"):
                raise Undecidable(f"a method of a {type(owner).__name__}")
            func = getattr(owner, f.attr)
        elif isinstance(f, ast.Attribute) and f.attr in SHAPE_METHODS and self._shaped(owner := self.eval(f.value)):
            func = getattr(_ShapeOf(owner.shape), f.attr)
        elif isinstance(f, ast.Attribute):
            method = getattr(self.eval(f.value), f.attr, None)
            if not is_accessor(method):
                raise Undecidable(f"a call (`{ast.unparse(node)[:60]}`)")
            if node.args or node.keywords:  # `self._get_layer(i)`: its return expression, read here
                return self._accessor_result(method, node)
            func = method
        else:
            raise Undecidable(f"a call (`{ast.unparse(node)[:60]}`)")
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords if k.arg}
        if func in (isinstance, hasattr, callable, type) and args and is_present(args[0]):
            try:
                return _type_question(func, args)
            except TypeError as exc:
                raise Undecidable(f"TypeError: {exc}") from exc
        if any(is_present(a) for a in args) and func is not getattr \
                and getattr(f, "id", None) not in ENVIRONMENT_CALLS:
            raise Undecidable("a run-time value passed to a call")
        try:
            return func(*args, **kwargs)
        except Undecidable:
            raise
        except Exception as exc:
            raise Undecidable(f"{type(exc).__name__}: {exc}") from exc


    def _accessor_result(self, method: object, node: ast.Call) -> object:
        """What an accessor method given arguments returns: its one return expression evaluated here, with
        its parameters bound to the arguments (nothing of the model runs)."""
        fn = _accessor_tree(method.__func__)
        params = fn.args
        if params.vararg or params.kwarg or params.posonlyargs or params.kwonlyargs or params.defaults \
                or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise Undecidable(f"a call (`{ast.unparse(node)[:60]}`)")
        names = [a.arg for a in params.args]
        given = dict(zip(names[1:], node.args))
        given.update((k.arg, k.value) for k in node.keywords)
        if len(node.args) > len(names) - 1 or set(given) != set(names[1:]):
            raise Undecidable(f"a call (`{ast.unparse(node)[:60]}`)")
        bound = {name: self.eval(value) for name, value in given.items()}
        if any(is_present(v) for v in bound.values()):
            raise Undecidable("a run-time value passed to a call")
        bound[names[0]] = method.__self__
        inner = _Interpreter(bound, method.__func__.__globals__, self.shapes)
        return inner.eval(_accessor_return(fn))


def _type_question(func: object, args: list) -> object:
    """`isinstance`, `hasattr`, `callable` or `type` of a present input, answered for the sample's type
    (a decision the subgraphs check again when they run); undecidable when that type is not known."""
    cls = getattr(args[0], "cls", None)
    if cls is None:
        raise Undecidable("the type of a run-time value")
    if func is type and len(args) == 1:
        return cls
    if func is isinstance and len(args) == 2:
        return issubclass(cls, args[1])
    if func is callable and len(args) == 1:
        return any("__call__" in vars(k) for k in cls.__mro__)
    if func is hasattr and len(args) == 2 and isinstance(args[1], str):
        if hasattr(cls, args[1]):
            return True
        raise Undecidable(f"whether a run-time value has `{args[1]}`")  # an instance attribute may exist
    raise Undecidable("a type question about a run-time value")


def _plain(value: object) -> bool:
    """Values that compare and compute without touching run-time data (anything but tensors)."""
    if is_present(value) or value is UNKNOWN:
        return False
    import torch

    return not isinstance(value, torch.Tensor)


class _ShapeOf:
    """The shape methods of a tensor, answered from its shape alone."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def size(self, dim: int | None = None) -> object:
        """The whole shape, or its size along one dimension."""
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def numel(self) -> int:
        """The number of elements: the product of the shape."""
        n = 1
        for d in self.shape:
            n *= d
        return n


def is_accessor(method: object) -> bool:
    """A method whose body only returns an expression without calls, like `get_layers()`."""
    func = getattr(method, "__func__", None)
    if func is None:
        return False
    return _accessor_source(func)


@lru_cache(maxsize=1024)
def _accessor_source(func: object) -> bool:
    fn = _accessor_tree(func)
    if fn is None:
        return False
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    return not any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(body[0].value))


@lru_cache(maxsize=1024)
def _accessor_tree(func: object) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    fn = tree.body[0]
    return fn if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _accessor_return(fn: ast.FunctionDef) -> ast.expr:
    """The expression an accessor returns (its one statement besides a docstring)."""
    return next(s.value for s in fn.body if isinstance(s, ast.Return))
