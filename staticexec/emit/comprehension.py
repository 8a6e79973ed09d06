"""A comprehension over modules that hold targets, unrolled as the loop it is.

`torch.stack([head(h) for head in self.lm_heads], dim=1)` calls every head, one after the other:
when the heads are targets, each call must start a subgraph of its own, which a comprehension can't
give. Emission evaluates the iterable (`self.lm_heads`) and writes one statement per item, the
comprehension's element with the loop variable bound to that item, and the statement itself with the
comprehension replaced by the list of their values:

    comp__1_v0 = self.lm_heads[0]        # bound at emit time, as a loop's variable is
    comp__1_0 = comp__1_v0(h)            # target
    comp__1_v1 = ...
    comp__1_1 = comp__1_v1(h)            # target
    lm_logits = torch.stack([comp__1_0, comp__1_1], dim=1)

Where the comprehension stood, the subgraphs check that the iterable gives the same items again
(as an unrolled loop does). Only a list comprehension or a generator expression with one `for`, no
`if` and a plain name as its variable is unrolled. A generator expression's elements are computed
before the call that reads them (each element still in order), and given to it through an iterator
over them, `{prefix}it` (`Unrolled.reader`), which the subgraphs check was read to its end
(emit/drained.py): a reader that stops early would have left later elements uncomputed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


class CannotUnroll(Exception):
    """The comprehension has a form this module does not unroll."""


@dataclass(frozen=True)
class Unrolled:
    """The item statements (`{prefix}{i} = element`, the variable named `{prefix}v{i}`), the names they bind
    (`{prefix}{i}`) and what is left; for a generator expression, the name its reader takes the items through
    (`{prefix}it`) and its code, else ''."""

    items: tuple[str, ...]
    names: tuple[str, ...]
    variables: tuple[str, ...]
    rest: str
    reader: str = ""
    generator: str = ""


def comprehension_iterables(code: str) -> list[str]:
    """The iterables of the list comprehensions and generator expressions of a statement, outermost first."""
    tree = ast.parse(code)
    return [ast.unparse(node.generators[0].iter) for node in ast.walk(tree)
            if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and node.generators]


class _Bind(ast.NodeTransformer):
    def __init__(self, name: str, new: str) -> None:
        self.name, self.new = name, new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node) if node.id == self.name else node


def unroll(code: str, iterable: str, count: int, prefix: str) -> Unrolled:
    """Unroll the comprehension over `iterable` (its code as `comprehension_iterables` gives it) in a simple
    statement, for `count` items. Raises CannotUnroll."""
    tree = ast.parse(code)
    found = [node for node in ast.walk(tree) if isinstance(node, (ast.ListComp, ast.GeneratorExp))
             and node.generators and ast.unparse(node.generators[0].iter) == iterable]
    if len(tree.body) != 1 or len(found) != 1:
        raise CannotUnroll("not one comprehension over it in one statement")
    comp = found[0]
    (gen, *more) = comp.generators
    if more or gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
        raise CannotUnroll("a comprehension with several `for`, an `if` or an unpacked variable")
    if any(isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr))
           for n in ast.walk(comp.elt)):
        raise CannotUnroll("a comprehension whose element holds a lambda, another comprehension or `:=`")
    names = tuple(f"{prefix}{i}" for i in range(count))
    items, variables = [], []
    for i, name in enumerate(names):
        var = f"{prefix}v{i}"
        elt = _Bind(gen.target.id, var).visit(ast.parse(ast.unparse(comp.elt), mode="eval").body)
        items.append(f"{name} = {ast.unparse(elt)}\n")
        variables.append(var)

    generator = isinstance(comp, ast.GeneratorExp)
    reader = f"{prefix}it" if generator else ""
    code_of = ast.unparse(comp) if generator else ""

    class _Replace(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if node is comp:
                made = (ast.Name(id=reader, ctx=ast.Load()) if generator else
                        ast.List(elts=[ast.Name(id=name, ctx=ast.Load()) for name in names], ctx=ast.Load()))
                return ast.copy_location(made, node)
            return self.generic_visit(node)

    rest = ast.unparse(_Replace().visit(tree)) + "\n"
    return Unrolled(tuple(items), names, tuple(variables), rest, reader, code_of)
