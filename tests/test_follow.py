"""Module-level names followed through the files' own statements (follow.py): where it answers, it gives
jedi's answer; where the statements don't say, it leaves the name to jedi.

    .venv/bin/pytest -q tests/test_follow.py
"""

from __future__ import annotations

import ast
import symtable
import textwrap

import pytest

FILES = {
    "__init__.py": "from .blocks import Block as Exported\n",
    "blocks.py": """
        import torch.nn as nn
        from torch import nn as torch_nn

        from . import helpers, sub


        class Block(nn.Module):
            pass


        def make():
            return Block()


        SIZE = 4
        PAIR = (1, 2)
        first, second = PAIR
        """,
    "helpers.py": """
        try:
            from .blocks import Block
        except ImportError:
            Block = None

        from .blocks import *


        def helper():
            pass
        """,
    "exports.py": """
        from .blocks import make, SIZE

        __all__ = ["make"]
        """,
    "reexport.py": """
        from .exports import *
        from .decorated import Late
        """,
    "dynamic.py": "__all__ = sorted(['b', 'a'])\n",
    "stardynamic.py": "from .dynamic import *\n",
    "decorated.py": """
        def wrap(cls):
            return cls


        class Late:
            pass


        Late = wrap(Late)
        Early = Late
        """,
    "oneline.py": "COUNT = 1\ndef bump(): global COUNT; COUNT += 1\n",
    "sub/__init__.py": "",
    "sub/deep.py": """
        from ..blocks import make as build
        from .. import Exported
        from ...elsewhere import Thing
        import follow_pkg.blocks
        import follow_pkg.sub.deep as me


        def rebinds():
            global Exported
            Exported = None
        """,
}


@pytest.fixture
def package(tmp_path, monkeypatch):
    for name, text in FILES.items():
        path = tmp_path / "follow_pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    from staticexec.analysis.session import isolated

    with isolated():
        yield tmp_path / "follow_pkg"


def _follow(package, module: str, name: str):
    from staticexec.analysis import follow
    from staticexec.analysis.source import load_module

    found = follow.definition(load_module(f"follow_pkg{module}"), name)
    return found[:3] if found is not None else None


@pytest.mark.parametrize("module, name, expected", [
    (".blocks", "Block", ("follow_pkg.blocks", "Block", "class")),
    (".blocks", "make", ("follow_pkg.blocks", "make", "function")),
    (".blocks", "SIZE", ("follow_pkg.blocks", "SIZE", "statement")),
    (".blocks", "nn", ("torch.nn", "", "module")),  # `import torch.nn as nn`: the module, looked up in torch
    (".blocks", "torch_nn", ("torch.nn", "", "module")),
    (".blocks", "sub", ("follow_pkg.sub", "", "module")),  # `from . import sub`: not bound in the package, its submodule
    (".blocks", "len", ("builtins", "len", "function")),  # bound nowhere in the file: a builtin
    ("", "Exported", ("follow_pkg.blocks", "Block", "class")),  # through the import, to the class statement
    (".sub.deep", "build", ("follow_pkg.blocks", "make", "function")),  # two dots up
    (".sub.deep", "follow_pkg", ("follow_pkg", "", "module")),  # `import a.b` binds `a`
    (".sub.deep", "me", ("follow_pkg.sub.deep", "", "module")),
    # an `import *` of a module without `__all__` binds only its public names: not `helper`
    (".helpers", "helper", ("follow_pkg.helpers", "helper", "function")),
    (".helpers", "make", ("follow_pkg.blocks", "make", "function")),
    (".reexport", "make", ("follow_pkg.blocks", "make", "function")),  # named by exports.py's `__all__`
    # read from another module once decorated.py has run: the last of its two bindings holds
    (".reexport", "Late", ("follow_pkg.decorated", "Late", "statement")),
])
def test_a_name_bound_once_plainly_is_followed_to_its_definition(package, module, name, expected):
    assert _follow(package, module, name) == expected


@pytest.mark.parametrize("module, name, why", [
    (".blocks", "first", "bound by a tuple target"),
    (".blocks", "__name__", "set by the import system, not a builtin"),
    (".blocks", "undefined_anywhere", "bound nowhere, and not a builtin"),
    (".helpers", "Block", "bound by a `try`, its `except`, and the `import *` of blocks.py"),
    (".reexport", "SIZE", "exports.py binds it, but its `__all__` does not name it"),
    (".stardynamic", "a", "an `__all__` that is not a list of strings"),
    (".decorated", "Late", "read in its own file, where which binding holds depends on where it is read"),
    (".sub.deep", "Exported", "a function declares it global"),
    (".oneline", "COUNT", "a function declares it global, on the line of its `def`"),
    (".sub.deep", "Thing", "a relative import above the top-level package"),
])
def test_what_the_statements_do_not_say_is_left_to_jedi(package, module, name, why):
    assert _follow(package, module, name) is None, why


def test_a_name_bound_twice_is_left_to_jedi(package, tmp_path):
    (package / "twice.py").write_text("try:\n    from .blocks import Block\nexcept ImportError:\n    Block = None\n")
    assert _follow(package, ".twice", "Block") is None


def _module_names_read(sf) -> list[tuple[str, int, int]]:
    """The first place each module-level name is read, at module level or in a top-level function or
    method (by the symbol table: a name no local binds), outside nested scopes."""
    table = symtable.symtable(sf.text, sf.path, "exec")
    out: dict[str, tuple[str, int, int]] = {}

    def scan(node, wanted) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if n is not node and isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                                                ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and wanted(n.id):
                out.setdefault(n.id, (n.id, n.lineno, n.col_offset))
            stack += list(ast.iter_child_nodes(n))

    for node in sf.tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scan(node, lambda name: True)
            continue
        scan(node, lambda name: True) if isinstance(node, ast.ClassDef) else None
        scope = next(t for t in table.get_children() if t.get_name() == node.name and t.get_lineno() == node.lineno)
        methods = [(node, scope)] if not isinstance(node, ast.ClassDef) else [
            (m, next(t for t in scope.get_children() if t.get_name() == m.name and t.get_lineno() == m.lineno))
            for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for function, symbols in methods:
            implicit = {s.get_name() for s in symbols.get_symbols() if s.is_global() and not s.is_declared_global()}
            for statement in function.body:
                scan(statement, implicit.__contains__)
    return list(out.values())


def test_wherever_it_answers_on_a_model_file_it_gives_jedi_s_answer():
    """Every module-level name modeling_llama.py reads: follow.py's answer is jedi's (module, qualified name,
    kind), and it answers for most of them. A name imported from code never entered is looked up in the
    imported module, as external.py did before: `Callable` from `collections.abc` is that class, where jedi
    names the `typing` statement that collections.abc's stub takes it from."""
    from transformers.models.llama import modeling_llama

    from staticexec.analysis import follow
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated
    from staticexec.analysis.source import load_file

    with isolated():
        sf = load_file(modeling_llama.__file__)
        names = NameResolver()
        answered, left = [], []
        for name, line, column in _module_names_read(sf):
            ours = follow.definition(sf, name)
            if ours is None:
                left.append(name)
                continue
            answered.append(name)
            if ours[:3] == ("collections.abc", "Callable", "class"):
                continue
            jedi = names.goto(sf, line, column)
            assert jedi is not None and (jedi.module, jedi.qualname, jedi.kind) == ours[:3], (name, line, ours, jedi)
    assert len(answered) >= 30 and len(left) <= len(answered) // 10, (answered, left)
    assert "PreTrainedModel" in answered and "LlamaConfig" in answered and "getattr" in answered
