"""How the stages look below a parsed node: `scopes.children` and `scopes.walk`, and what is read
with them, `functions.local_bindings` (the locals a body binds) and `planner.exits` (whether a
statement may return, or leave the loop around it).

Each case is a short function body; the tables give what is found in it.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from staticexec.analysis.functions import local_bindings
from staticexec.analysis.planner import exits
from staticexec.analysis.scopes import children, walk
from staticexec.analysis.session import isolated


def body(source: str) -> cst.IndentedBlock:
    module = cst.parse_module("def f(x):\n" + textwrap.indent(textwrap.dedent(source), "    "))
    return module.body[0].body


def names_in(node: cst.CSTNode, skip=()) -> list[str]:
    return [n.value for n in walk(node, skip=skip) if isinstance(n, cst.Name)]


def test_walk_gives_outermost_first_in_source_order():
    block = body("""
        a = b(c, d=e) if f else g
        for h in i:
            j.k(l)
    """)
    # the conditional expression reads body, test, orelse in the order they are written
    assert names_in(block) == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
    kinds = [type(n).__name__ for n in walk(block) if isinstance(n, (cst.BaseStatement, cst.Call))]
    assert kinds == ["SimpleStatementLine", "Call", "For", "SimpleStatementLine", "Call"]


def test_walk_neither_gives_nor_enters_a_skipped_type():
    block = body("""
        a = 1
        def inner(b):
            return c
        class K:
            d = 2
        e = lambda f: g
    """)
    assert names_in(block, skip=(cst.FunctionDef, cst.ClassDef)) == ["a", "e", "f", "g"]
    assert not any(isinstance(n, cst.FunctionDef) for n in walk(block, skip=(cst.FunctionDef,)))
    assert names_in(block.body[1], skip=(cst.FunctionDef,)) == []  # the root itself is skipped


def test_walk_gives_only_the_types_asked_yet_enters_every_other():
    block = body("""
        a = f(g(1), h)
        def inner():
            return k(2)
    """)
    calls = [n.func.value for n in walk(block, only=(cst.Call,))]
    assert calls == ["f", "g", "k"]  # g inside f's arguments, k inside a nested function
    assert [n.func.value for n in walk(block, skip=(cst.FunctionDef,), only=(cst.Call,))] == ["f", "g"]
    assert [type(n).__name__ for n in walk(block, only=(cst.BaseSmallStatement,))] == ["Assign", "Return"]


def test_walk_gives_tokens_but_not_what_lies_inside_them():
    block = body("""
        a = (b) + c[1]  # note
    """)
    given = list(walk(block))
    # the names, the operator and the brackets are given ...
    assert names_in(block) == ["a", "b", "c"]
    kinds = (cst.Add, cst.LeftSquareBracket, cst.RightSquareBracket)
    assert [type(n).__name__ for n in given if isinstance(n, kinds)] == ["Add", "LeftSquareBracket", "RightSquareBracket"]
    # ... but not the parentheses around `b`, the spaces around `+` or the comment: those lie inside tokens
    everything = list(_every_node(block))
    b = next(n for n in given if isinstance(n, cst.Name) and n.value == "b")
    plus = next(n for n in given if isinstance(n, cst.Add))
    comment = next(n for n in everything if isinstance(n, cst.Comment))
    inside = [b.lpar[0], plus.whitespace_before, comment]
    assert not any(n is m for n in given for m in inside)
    # every node that is not whitespace or inside a token is given, in the order libcst lists them
    assert [n for n in everything if not _inside_token(n, block)] == given


def _every_node(node):
    yield node
    for child in node.children:
        yield from _every_node(child)


def _inside_token(node, root) -> bool:
    """Whether a node lies strictly inside one of scopes.TOKENS below root."""
    from staticexec.analysis.scopes import TOKENS

    def path(cur, trail):
        if cur is node:
            return trail
        for child in cur.children:
            found = path(child, trail + [cur])
            if found is not None:
                return found
        return None

    return any(isinstance(a, TOKENS) for a in path(root, []))


def test_children_are_libcsts_and_kept_by_the_session():
    block = body("y = x.a(1, 2)\n")
    call = block.body[0].body[0].value
    with isolated() as own:
        first = children(call)
        assert list(first) == list(call.children)  # the same nodes, in the same order
        assert children(call) is first and own.sizes()["scopes.children"] == 1
    with isolated():
        assert children(call) is not first  # a new session lists them again


BINDINGS = [
    ("a = 1", {"a": ["expr"]}),
    ("a = b = 1", {"a": ["expr"], "b": ["expr"]}),
    ("a, *b = t", {"a": ["item"], "b": ["unknown"]}),
    ("a: int = 1\nc: int", {"a": ["expr"]}),
    ("a += 1", {"a": ["expr"]}),
    ("if (a := f()):\n    pass", {"a": ["expr"]}),
    ("for a, b in t:\n    pass", {"a": ["item"], "b": ["item"]}),
    ("with f() as a:\n    pass", {"a": ["unknown"]}),
    ("xs = []\nxs.append(1)\nxs.extend(t)\nxs.insert(0, 2)", {"xs": ["expr", "append", "extend", "extend"]}),
    ("a = 1\ndef g():\n    b = 2\nclass K:\n    c = 3\na = 4", {"a": ["expr", "expr"]}),
]


@pytest.mark.parametrize("source, expected", BINDINGS, ids=[s.split("\n")[0] for s, _ in BINDINGS])
def test_local_bindings(source, expected):
    found = local_bindings(body(source))
    assert {name: [kind for kind, _, _ in binds] for name, binds in found.items()} == expected


EXITS = [
    # (statement, may return, leaves the loop around it)
    ("return x", True, False),
    ("if x:\n    return 1", True, False),
    ("if x:\n    break", False, True),
    ("if x:\n    continue", False, True),
    ("for i in x:\n    break", False, False),  # leaves its own loop only
    ("while x:\n    if i:\n        continue", False, False),
    ("for i in x:\n    return i", True, False),
    ("def g():\n    return 1", False, False),  # a nested function exits itself
    ("y = lambda: x", False, False),
    ("with x:\n    for i in x:\n        pass\n    break", False, True),
]


@pytest.mark.parametrize("source, returns, leaves", EXITS, ids=[s.split("\n")[0] for s, _, _ in EXITS])
def test_exits(source, returns, leaves):
    found = exits(body(source).body[0])
    assert (found.found, found.loop_exit) == (returns, leaves)
