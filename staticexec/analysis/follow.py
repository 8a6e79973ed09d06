"""Module-level names followed through the files' own statements, without jedi.

Most names a model file reads at its top level are bound once, plainly: `class LlamaModel(...)`,
`def rotate_half(...)`, `from ...modeling_utils import PreTrainedModel`, `from .configuration_llama
import LlamaConfig`. Where such a name is defined follows from the statements themselves: a class, a
function or an assignment is defined where it stands, and an import leads to the module it names,
found on the import path without running it (source.py), where the same rule applies again to the
imported name. Asking jedi instead makes it parse every module on the way with parso, several times
slower than the standard library's parser the analysis reads files with, and seconds on a machine whose
caches are empty (`transformers/modeling_utils.py`, `generation/utils.py` and jedi's own `builtins`
stub for a Llama).

A name is followed only where that is the whole answer, and jedi answers any other:

- the file binds the name by exactly one statement run at module level (external.py's `bindings`:
  no `global` statement names it, and the file has no `import *`), a class or function statement, an
  assignment of the name alone, or an import;
- an import names a module found on the import path as a `.py` file; `from m import X` follows `X` in
  m, or, where m binds no `X` at all, takes m's submodule `X`, as Python does;
- a name the file does not bind at all is a builtin where `builtins` holds it, as Python reads it, but
  for the names the import system sets in every module (`__name__`, `__file__`).

The answer has the fields of jedi's (names.py makes it a `Definition`), so everything after the
lookup is the same.
"""

from __future__ import annotations

import ast
import builtins

from staticexec.analysis import external
from staticexec.analysis.source import SourceFile, known_module, load_module, module_path

DEPTH = 16
"""How many imports one name is followed through before jedi is asked instead (a cycle of imports)."""


def definition(sf: SourceFile, name: str) -> tuple[str, str, str, str | None, int | None] | None:
    """Where a module-level name of a file is defined: (module, qualified name, kind, file, line), the
    fields of jedi's answer; None where the statements alone don't say (then jedi answers)."""
    return _follow(sf, name, DEPTH)


def _follow(sf: SourceFile, name: str, depth: int) -> tuple | None:
    found = external.bindings(sf)
    if found is None or depth <= 0:
        return None
    binders = found.get(name, [])
    if not binders:
        if hasattr(builtins, name) and not (name.startswith("__") and name.endswith("__")):
            return _external("builtins", name)  # not `__name__`: the import system sets the module's own
        return None
    if len(binders) > 1:
        return None
    binding = binders[0]
    node = binding.node
    if binding.module is None:
        if isinstance(node, ast.ClassDef):
            return sf.module, name, "class", sf.path, node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return sf.module, name, "function", sf.path, node.lineno
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 or isinstance(node, ast.AnnAssign)) \
                and isinstance(node.targets[0] if isinstance(node, ast.Assign) else node.target, ast.Name):
            return sf.module, name, "statement", sf.path, node.lineno
        return None
    module = _absolute(sf, binding.module, binding.level)
    if module is None:
        return None
    if binding.member is None:  # `import a.b` binds the module `a`; `import a.b as c`, the module `a.b`
        return _module(module)
    return member(module, binding.member, depth - 1)


def member(module: str, name: str, depth: int = DEPTH) -> tuple | None:
    """Where `module.name` is defined, `module` a module found on the import path: the module's own
    binding of the name followed, else its submodule of that name; None where that does not say."""
    if external.is_external(module):
        return _external(module, name)
    sf = _source(module)
    if sf is None:
        return None
    found = external.bindings(sf)
    if found is None:
        return None
    if name in found:
        return _follow(sf, name, depth)
    return _module(f"{module}.{name}")  # `from pkg import sub`: not bound in pkg, its submodule


def _absolute(sf: SourceFile, module: str, level: int) -> str | None:
    """The module an import names, a relative one (`level` dots) read from the file's own package."""
    if not level:
        return module
    package = sf.module if sf.path.endswith("__init__.py") else sf.module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _source(module: str) -> SourceFile | None:
    """The file of a module, read under that name; None where it has none, or where the analysis has read
    the same file under another name (a folder of remote code: then jedi names it)."""
    path = module_path(module)
    if path is None or known_module(path) not in (None, module):
        return None
    return load_module(module)


def _module(module: str) -> tuple | None:
    if external.is_external(module):
        return _external(module, None)
    path = module_path(module)
    if path is None or known_module(path) not in (None, module):
        return None
    return module, "", "module", path, None


def _external(module: str, name: str | None) -> tuple | None:
    found = external.definition(module, name)
    return (*found, None) if found is not None else None
