"""One statement that calls several targets, taken apart so each call can be cut on its own.

`down = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))` calls three targets
when every Linear is one. A subgraph boundary can only fall between statements, so the
statement is rewritten in Python's own evaluation order: every value it computes up to its last
target call becomes a temporary of its own statement, in the order Python computes it, and what
is left computes the rest from the temporaries:

    lin__0 = self.gate_proj(x)          # target
    lin__1 = self.act_fn(lin__0)
    lin__2 = self.up_proj(x)            # target
    lin__3 = lin__1 * lin__2
    lin__4 = self.down_proj(lin__3)     # target
    down = lin__4

The calls taken out need not be targets: a call of a module that holds targets, or of a function
that reaches one, is taken out the same way and inlined by emission (apart.py). A statement with one
such call is taken apart too when Python computes something else before it (`evaluated_before`):
the inlined body runs where the call stands, and the rest of the statement after it, so
`h = self.config.scale * self.block(h)` would otherwise read `self.config.scale` after the block ran.

Names and constants are read where they were; the callee of a call (`self.act_fn`, `self.layers[i]`,
`t.view`) stays with its call, and only what a method is read from is computed before. An expression whose parts Python may skip or run later (`and` / `or`, a conditional
expression, a comprehension, a lambda, `:=`) around a target call can't be taken apart in order,
and is refused by the caller.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


class CannotLinearize(Exception):
    """The statement has a form whose evaluation order can't be kept when taken apart."""


@dataclass(frozen=True)
class Piece:
    """One statement of the rewritten code; `target` is the callee of the target call it makes, if any."""

    code: str
    target: str | None = None


_LAZY = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
         ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def _lookup(node: ast.AST) -> bool:
    """Whether an expression only reads names, attributes and items by names or constants (`self.layers[i]`)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _lookup(node.value)
    return isinstance(node, ast.Subscript) and _lookup(node.value) and _lookup(node.slice)


def _stays(func: ast.AST) -> bool:
    """Whether a callee stays with its call: a lookup (`self.layers[i]`) or a method of a value (`t.view`)."""
    return _lookup(func) or isinstance(func, ast.Attribute)


def _children(node: ast.AST) -> list[ast.AST]:
    """A node's sub-expressions in the order Python evaluates them; a callee that stays with its call gives
    only what it is read from, and a lookup nothing."""
    if isinstance(node, ast.Call):
        func = node.func
        first = [] if _lookup(func) else [func.value] if isinstance(func, ast.Attribute) else [func]
        return [*first, *node.args, *(k.value for k in node.keywords)]
    if isinstance(node, ast.Dict):
        out: list[ast.AST] = []
        for k, v in zip(node.keys, node.values):
            out += ([k] if k is not None else []) + [v]
        return out
    if isinstance(node, ast.JoinedStr):
        return [v for v in node.values if isinstance(v, ast.FormattedValue)]
    if isinstance(node, ast.FormattedValue):
        return [node.value] + ([node.format_spec] if node.format_spec is not None else [])
    return [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]


def _post_order(node: ast.AST, out: list[ast.AST], is_target) -> None:
    """Every sub-expression after the ones it evaluates first. A lazily evaluated one (`and`, a conditional
    expression, a comprehension, ...) is one value as a whole, unless a target call is inside it."""
    if isinstance(node, _LAZY):
        if any(isinstance(n, ast.Call) and is_target(n) for n in ast.walk(node)):
            raise CannotLinearize("a target call inside `and` / `or`, a conditional expression, a comprehension, "
                                  "a lambda or `:=`, which Python may skip or run later")
        out.append(node)
        return
    for child in _children(node):
        _post_order(child, out, is_target)
    out.append(node)


class _Replace(ast.NodeTransformer):
    """Puts each taken-out value's temporary where the value was (children first)."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def visit(self, node: ast.AST) -> ast.AST:
        name = self.names.get(id(node))
        if name is not None:
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        if isinstance(node, _LAZY):
            return node
        return self.generic_visit(node)


def _read_in_place(node: ast.AST, callees: set[int]) -> bool:
    """Whether a value is read where it stands, not taken out: a name, a constant (`-1` too), a starred or
    formatted part (its value is taken out on its own), a callee that stays with its call."""
    return (isinstance(node, (ast.Name, ast.Constant, ast.Starred, ast.FormattedValue)) or id(node) in callees
            or isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def linearize(code: str, target_funcs: list[str], prefix: str) -> list[Piece]:
    """Take apart a simple statement that calls the targets whose callees read `target_funcs`, each once.
    Temporaries are named `{prefix}{n}`."""
    tree = ast.parse(code)
    if len(tree.body) != 1:
        raise CannotLinearize("more than one statement on the line")
    stmt = tree.body[0]
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)) or stmt.value is None:
        raise CannotLinearize(f"a target call in a {type(stmt).__name__} statement")
    wanted = set(target_funcs)
    order: list[ast.AST] = []
    _post_order(stmt.value, order, lambda call: ast.unparse(call.func) in wanted)
    calls = [n for n in order if isinstance(n, ast.Call) and ast.unparse(n.func) in wanted]
    if sorted(ast.unparse(c.func) for c in calls) != sorted(target_funcs):
        raise CannotLinearize("a target is called more than once, or through a callee it can't tell apart")
    last = order.index(calls[-1])
    callees = {id(n.func) for n in order if isinstance(n, ast.Call) and _stays(n.func)}
    callee_code = {id(c): ast.unparse(c.func) for c in calls}
    names: dict[int, str] = {}
    pieces: list[Piece] = []
    for node in order[: last + 1]:
        if _read_in_place(node, callees):
            continue
        value = _Replace(names).generic_visit(node) if not isinstance(node, _LAZY) else node
        name = f"{prefix}{len(names)}"
        pieces.append(Piece(f"{name} = {ast.unparse(value)}\n", callee_code.get(id(node))))
        names[id(node)] = name
    pieces.append(Piece(ast.unparse(_Replace(names).visit(stmt)) + "\n"))
    return pieces


def evaluated_before(code: str, target_func: str) -> str | None:
    """What a simple statement computes before its one call of `target_func`, outside that call (`self.config.scale`
    in `h = self.config.scale * self.block(h)`), shown as written; None when that is only names and constants.

    An inlined call's body runs where the call stands, and what the statement computes around it runs after: a
    value Python computes before the call must be taken out first (`linearize`), as the body may change it."""
    tree = ast.parse(code)
    if len(tree.body) != 1 or getattr(tree.body[0], "value", None) is None:
        return None
    wanted = ast.unparse(ast.parse(target_func.strip(), mode="eval"))
    order: list[ast.AST] = []
    try:
        _post_order(tree.body[0].value, order, lambda call: ast.unparse(call.func) == wanted)
    except CannotLinearize:  # the call inside an expression Python may skip: not taken apart (the caller decides it)
        return None
    call = next((n for n in order if isinstance(n, ast.Call) and ast.unparse(n.func) == wanted), None)
    if call is None:
        return None
    inside = {id(n) for n in ast.walk(call)}
    callees = {id(n.func) for n in order if isinstance(n, ast.Call) and _stays(n.func)}
    for node in order[: order.index(call)]:
        if id(node) not in inside and not _read_in_place(node, callees):
            return ast.unparse(node)
    return None
