"""Walks of parsed code, and the names that nested functions and lambdas reach into from the scope
around them.

`children` and `walk` are how every stage looks below a libcst node: libcst rebuilds a node to list
its children, so the session keeps them. The call graph (callgraph.py) and the resolver
(resolve.py) use the free names to follow what nested scopes call.
"""

from __future__ import annotations

import libcst as cst

from staticexec.analysis.session import current


def children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """A node's children in source order, as libcst's `children` gives them.

    libcst builds a node's `children` anew on each access (it rebuilds the node to list them), and
    the stages look at the same function bodies more than once, so the session keeps them.
    """
    return _kept_children(current().table("scopes.children"), node)


def _kept_children(known: dict, node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    found = known.get(node)
    if found is None:
        found = known[node] = tuple(node.children)
    return found


# Nodes whose subtrees hold nothing but whitespace, comments and punctuation (a name's or a literal's
# parentheses, a comma's spaces): `walk` gives them but does not enter them.
TOKENS: tuple[type[cst.CSTNode], ...] = (
    cst.BaseParenthesizableWhitespace, cst.Newline, cst.TrailingWhitespace, cst.EmptyLine, cst.Comment,
    cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.ImportStar, cst.Asynchronous,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
    cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis,
)

_GIVE, _ENTER = 1, 2


def walk(node: cst.CSTNode, skip: tuple[type[cst.CSTNode], ...] = (), only: tuple[type[cst.CSTNode], ...] = ()):
    """Every node below `node` (itself included), outermost first, in source order, down to the
    `TOKENS`: those are given, but what lies inside them (whitespace and parentheses) is not.

    A node of a `skip` type is neither given nor entered; with `only`, just the nodes of those
    types are given, though every other node is still entered. libcst's node classes are abstract
    base classes, whose `isinstance` is slow, so each node type is tested once per walk.
    """
    known = current().table("scopes.children")
    verdicts: dict[type, int] = {}  # by node type: _GIVE and _ENTER bits
    stack = [node]
    while stack:
        cur = stack.pop()
        kind = type(cur)
        verdict = verdicts.get(kind)
        if verdict is None:
            if skip and issubclass(kind, skip):
                verdict = 0
            else:
                verdict = ((0 if only and not issubclass(kind, only) else _GIVE)
                           | (0 if issubclass(kind, TOKENS) else _ENTER))
            verdicts[kind] = verdict
        if verdict & _GIVE:
            yield cur
        if verdict & _ENTER:
            stack.extend(reversed(_kept_children(known, cur)))


def free_called_names(scope: cst.FunctionDef | cst.Lambda) -> dict[str, cst.Name]:
    """Names a nested function or lambda calls through or iterates over, other than its own parameters.

    Each name maps to its first use, a node of the enclosing function that the resolver can evaluate.
    """
    params = {p.name.value for p in all_parameters(scope.params)}
    used: dict[str, cst.Name] = {}
    for node in walk(scope.body, only=(cst.Call, cst.For, cst.CompFor)):
        root = None
        if isinstance(node, cst.Call):
            root = node.func
        elif isinstance(node, (cst.For, cst.CompFor)):
            root = node.iter
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if isinstance(root, cst.Name) and root.value not in params:
            used.setdefault(root.value, root)
    return used


COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def comprehension_variables(body: cst.CSTNode) -> frozenset[int]:
    """The ids of the names in `body` that stand for a comprehension's own variable (`p` in `[p.flatten(1) for p in
    patches]`): a name bound by a comprehension's `for`, in its element, its conditions or a later `for`'s
    iterable (an attribute's or a keyword's name of that spelling is among them too, but is never read as a
    name). Python gives a comprehension a scope of its own, so such a name is neither the function's local
    nor the module's name of that spelling. Kept per body for the session."""
    table = current().table("scopes.comprehension_variables")
    hit = table.get(id(body))
    if hit is not None and hit[0] is body:
        return hit[1]
    found: set[int] = set()
    for comp in walk(body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda), only=COMPREHENSIONS):
        bound, scoped = comprehension_scope(comp)
        for node in scoped:
            found.update(id(n) for n in walk(node, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda), only=(cst.Name,))
                         if n.value in bound)
    out = frozenset(found)
    table[id(body)] = (body, out)
    return out


def comprehension_scope(comp: cst.CSTNode) -> tuple[set[str], list[cst.CSTNode]]:
    """What a comprehension's own scope holds: the names its `for`s bind, and the parts read in that scope (its
    element, or key and value, its conditions, and the iterables of the `for`s after the first; the first
    iterable is read in the scope around the comprehension)."""
    bound: set[str] = set()
    scoped: list[cst.CSTNode] = [comp.key, comp.value] if isinstance(comp, cst.DictComp) else [comp.elt]
    for_in: cst.CompFor | None = comp.for_in
    while for_in is not None:
        bound.update(bound_names(for_in.target))
        scoped.extend(cond.test for cond in for_in.ifs)
        if for_in is not comp.for_in:
            scoped.append(for_in.iter)
        for_in = for_in.inner_for_in
    return bound, scoped


def bound_names(target: cst.BaseExpression) -> list[str]:
    """The names a `for` target binds: `x`, each of `(a, (b, *c))`; none for `obj.x` or `x[i]`, which bind none."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in bound_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


def all_parameters(params: cst.Parameters) -> list[cst.Param]:
    """A function's parameters, each once: positional-only, plain, keyword-only, then `*args` and `**kwargs`."""
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out
