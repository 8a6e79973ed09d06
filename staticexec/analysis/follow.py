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
  no `global` statement names it), a class or function statement, an assignment of the name alone, or
  an import; read from another module, once the file has run, by several statements of the file's own
  body (`AutoModel = auto_class_update(AutoModel)` after its class), where the last one holds;
- an `import *` binds the name where the imported module's `__all__` (a list of strings) names it,
  or, without one, where that module binds it and it is public; the name bound both by it and by
  another statement, or by two of them, is jedi's;
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
    return _follow(sf, name, DEPTH, ran=False)


def member(module: str, name: str, depth: int = DEPTH) -> tuple | None:
    """Where `module.name` is defined, `module` a module found on the import path, as it stands once the
    module has run: the module's own binding of the name followed, else its submodule of that name; None
    where that does not say."""
    if external.is_external(module):
        return _external(module, name)
    sf = _source(module)
    if sf is None:
        return None
    found = external.bindings(sf)
    if name in found or "*" in found:
        return _follow(sf, name, depth, ran=True)
    return _module(f"{module}.{name}")  # `from pkg import sub`: not bound in pkg, its submodule


def _follow(sf: SourceFile, name: str, depth: int, ran: bool) -> tuple | None:
    """`ran`: the name as the module leaves it once it has run (read from another module), where the
    last of several bindings in the module's own body, each run in turn, is the one that holds."""
    found = external.bindings(sf)
    if depth <= 0:
        return None
    binders = found.get(name, [])
    stars = found.get("*", [])
    if stars:  # `from .modeling_auto import *` binds what modeling_auto's `__all__` names
        exports = [_exports(sf, star, name) for star in stars]
        if None in exports:
            return None
        starred = [star for star, exported in zip(stars, exports) if exported]
        if starred:
            if binders or len(starred) > 1:  # which binding holds depends on the order they run in
                return None
            module = _absolute(sf, starred[0].module, starred[0].level)
            return member(module, name, depth - 1) if module is not None else None
    if not binders:
        if hasattr(builtins, name) and not (name.startswith("__") and name.endswith("__")):
            return _external("builtins", name)  # not `__name__`: the import system sets the module's own
        return None
    if len(binders) > 1 and not (ran and all(b.node in sf.tree.body for b in binders)):
        return None
    binding = binders[-1]
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


def _exports(sf: SourceFile, star: external.Binding, name: str) -> bool | None:
    """Whether `from m import *` binds a name: m's `__all__`, a list or tuple of strings bound once, names
    it; without one, m binds it and it is public. None where that can't be read."""
    module = _absolute(sf, star.module, star.level)
    source = _source(module) if module is not None and not external.is_external(module) else None
    if source is None:
        return None
    found = external.bindings(source)
    listed = found.get("__all__", [])
    if len(listed) == 1:
        value = getattr(listed[0].node, "value", None)
        if isinstance(value, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
            return name in {e.value for e in value.elts}
        return None
    if listed or "*" in found:
        return None
    return name in found and not name.startswith("_")


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


def _path(module: str) -> str | None:
    """The file of a module; None where it has none, or where the analysis has read the same file under
    another name (a folder of remote code: then jedi names it)."""
    path = module_path(module)
    return path if path is not None and known_module(path) in (None, module) else None


def _source(module: str) -> SourceFile | None:
    """The file of a module, read under that name (`_path`)."""
    return load_module(module) if _path(module) is not None else None


def _module(module: str) -> tuple | None:
    if external.is_external(module):
        return _external(module, None)
    path = _path(module)
    return (module, "", "module", path, None) if path is not None else None


def _external(module: str, name: str | None) -> tuple | None:
    found = external.definition(module, name)
    return (*found, None) if found is not None else None
