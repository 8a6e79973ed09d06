"""Code the analysis never enters: torch, numpy and the standard library, whose modules hold no targets.

A name that stands for such code (`torch.arange`, `np.zeros`, `OrderedDict` imported from
`collections`) is looked up in the imported module itself, not by jedi. jedi would parse that
library's sources and stubs to answer (torch's `_VariableFunctions.pyi` alone is a megabyte, numpy's
stubs and `typing_extensions` a few hundred kilobytes each), seconds on a machine whose caches are
empty, only to learn that the name is one of theirs. These libraries are installed beside the
analyser and imported already (torch) or cheaply; a model's own code is never imported here.

The answer has the fields of jedi's (names.py makes it a `Definition`), so everything after the
lookup is the same.
A module-level name is looked up this way only where the file binds it exactly once, by an
import from such a module, and nothing else can rebind it (no `global` statement names it, no
`import *`); anything else is jedi's to answer.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any

from staticexec.analysis.session import current
from staticexec.analysis.source import SourceFile, run_in_block

ROOTS = ("torch", "numpy", "builtins", "typing", "typing_extensions", "functools", "collections", "math")
"""Top-level packages whose code the analysis never enters."""

MISSING = object()


def is_external(module: str) -> bool:
    """Whether a module is code the analysis never enters."""
    return module.split(".")[0] in ROOTS


def imported_from(sf: SourceFile, name: str) -> tuple[str, str | None] | None:
    """(module, member) when the file's only binding of a module-level name is an import from an
    external module: `import numpy as np` gives ("numpy", None), `from collections import OrderedDict`
    gives ("collections", "OrderedDict"), `import torch.nn` binds `torch`, ("torch", None)."""
    found = only_import(sf, name)
    return found if found is not None and is_external(found[0]) else None


def only_import(sf: SourceFile, name: str) -> tuple[str, str | None] | None:
    """(module, member) when the file's only binding of a module-level name is an absolute import,
    from whatever module, and nothing else can rebind it."""
    return _imports(sf).get(name)


@dataclass(frozen=True)
class Binding:
    """One statement that binds a module-level name: an import of `module` (of its `member`, `level` dots
    up for a relative import; `import a.b` binds `a`, as module "a"), or another statement (`node`)."""

    module: str | None = None
    member: str | None = None
    level: int = 0
    node: ast.AST | None = None


def bindings(sf: SourceFile) -> dict[str, list[Binding]]:
    """Every statement run at a file's module level that binds each name, in order; names a `global`
    statement declares (which may rebind them elsewhere) left out. Each `import *` is kept under the name
    "*" (member "*"): it binds names no statement of the file spells."""
    table = current().table("external.bindings")  # by content hash
    if sf.hash not in table:
        table[sf.hash] = _bindings(sf.tree, sf.text)
    return table[sf.hash]


_DECLARES = re.compile(r"(?:^|[;:])[ \t]*(?:global|nonlocal)[ \t]+\w", re.MULTILINE)  # a line that may be such a statement


def _bindings(tree: ast.Module, text: str) -> dict[str, list[Binding]]:
    out: dict[str, list[Binding]] = {}
    for node in run_in_block(tree.body):  # the statements run at module level
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out.setdefault(bound, []).append(Binding(alias.name if alias.asname else bound, node=node))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out.setdefault(alias.asname or alias.name, []).append(
                    Binding(node.module or "", alias.name, node.level, node))
        else:
            for bound in statement_binds(node):
                out.setdefault(bound, []).append(Binding(node=node))
    rebound = {n for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names} \
        if _DECLARES.search(text) else ()  # (a walk of the whole tree, for the few files that may hold one)
    return {name: found for name, found in out.items() if name not in rebound}


def _imports(sf: SourceFile) -> dict[str, tuple[str, str | None]]:
    table = current().table("external.imports")  # by content hash
    found = table.get(sf.hash)
    if found is None:
        bound = bindings(sf)
        found = table[sf.hash] = {} if "*" in bound else {
            name: (only[0].module, only[0].member) for name, only in bound.items()
            if len(only) == 1 and only[0].module is not None and only[0].level == 0}
    return found


def statement_binds(node: ast.AST) -> set[str]:
    """The names a module-level statement binds, other than by import (its own, not its nested blocks'):
    its targets (`a = x`, `a, *b = x`; not `a.b = x` or `a[k] = x`, which write into what `a` holds), a
    function's or class's name, an except clause's name, a match statement's captures, and each name an
    assignment expression (`:=`) among its own expressions binds. A `del` counts as binding what it deletes."""
    out: set[str] = set()
    targets: list[ast.AST] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(node.name)
    elif isinstance(node, ast.ExceptHandler):
        out |= {node.name} if node.name else set()
    elif isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign):  # an annotation alone binds nothing
        targets = [node.target] if node.value is not None else []
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    elif type(node).__name__ == "TypeAlias":  # `type X = ...` (Python 3.12)
        targets = [node.name]
    elif isinstance(node, ast.Match):
        for n in (n for case in node.cases for n in ast.walk(case.pattern)):
            captured = n.name if isinstance(n, (ast.MatchAs, ast.MatchStar)) else \
                n.rest if isinstance(n, ast.MatchMapping) else None
            out |= {captured} if captured else set()
    for target in targets:
        out |= _target_names(target)
    for expr in _own_expressions(node):
        out |= _walrus_names(expr)
    return out


def _target_names(target: ast.AST) -> set[str]:
    """The names an assignment target binds: a name, or those of a tuple, list or starred target."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for element in target.elts for name in _target_names(element)}
    return set()


def _own_expressions(node: ast.AST) -> list[ast.AST]:
    """What a statement evaluates itself: its expressions (a function's or class's decorators, defaults and
    bases among them), a match case's pattern and guard; not the statements it holds, nor its except
    clauses (each a statement of its own to `run_in_block`)."""
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.match_case):
            out += [child.pattern] + ([child.guard] if child.guard is not None else [])
        elif not isinstance(child, (ast.stmt, ast.ExceptHandler)):
            out.append(child)
    return out


def _walrus_names(expr: ast.AST) -> set[str]:
    """The names assignment expressions bind in the scope that evaluates `expr`: those in a comprehension
    too, not those in a lambda's body (its own scope; its defaults are evaluated here)."""
    out: set[str] = set()
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.NamedExpr):
            out.add(n.target.id)
        if isinstance(n, ast.Lambda):
            stack += n.args.defaults + [d for d in n.args.kw_defaults if d is not None]
        else:
            stack += ast.iter_child_nodes(n)
    return out


def definition(module: str, member: str | None = None) -> tuple[str, str, str, str | None] | None:
    """What `module` (or `module.member`) is, as the imported module holds it: (module, qualified name,
    kind, file), the fields of jedi's answer; None when it can't be looked up (then jedi answers)."""
    if not is_external(module):
        return None
    obj = held(module, member)
    if obj is MISSING:
        return None
    if inspect.ismodule(obj):
        return obj.__name__, "", "module", getattr(obj, "__file__", None)
    if isinstance(obj, type):
        return obj.__module__, obj.__qualname__, "class", None
    if member is None:
        return None
    if callable(obj):
        defined = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if inspect.isfunction(obj) and defined and qualname and is_external(defined):
            return defined, qualname, "function", None
        return module, member, "function", None
    return module, member, "statement", None


def held(module: str, member: str | None = None) -> Any:
    """`module` imported, or its `member` (a submodule imported when it is not an attribute yet);
    `MISSING` when either can't be had."""
    try:
        owner = importlib.import_module(module)
    except Exception:
        return MISSING
    try:
        obj = owner if member is None else getattr(owner, member, MISSING)
    except Exception:  # a lazy module raises what importing the member raised
        return MISSING
    if obj is MISSING:  # a submodule not imported yet
        try:
            obj = importlib.import_module(f"{module}.{member}")
        except Exception:
            return MISSING
    return obj


def bases(module: str, qualname: str) -> list[tuple[str, str]] | None:
    """The direct bases of an external class as (module, qualified name), `object` left out as a class
    statement leaves it out; None when the class can't be looked up (then its source is read)."""
    if not is_external(module):
        return None
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    if not isinstance(obj, type):
        return None
    return [(b.__module__, b.__qualname__) for b in obj.__bases__ if b is not object]
