"""Stage 1, source: find classes and functions in files and parse them once.

Whole files are indexed with the stdlib `ast` (fast); single functions are
parsed with libcst when a later stage analyses their statements. Parses are
cached by content hash, so a file shared by many architectures is read once.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import os
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from functools import lru_cache

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider

from staticexec.analysis.session import current


def sha256(text: str) -> str:
    """The hex SHA-256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ClassRef:
    """A class by the module that defines it and its (dotted) name in that module."""

    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "ClassRef":
        """The class of a `module:Class` string."""
        module, _, name = text.partition(":")
        return cls(module, name)


@dataclass(frozen=True)
class FunctionRef:
    """A function or method: `module:function` or `module:Class.method` (a call-graph node)."""

    module: str
    qualname: str

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}"

    @classmethod
    def parse(cls, text: str) -> "FunctionRef":
        """The function of a `module:qualname` string."""
        module, _, name = text.partition(":")
        return cls(module, name)

    @property
    def owner(self) -> ClassRef | None:
        """The class a method is defined in; None for a module-level function."""
        head, dot, _ = self.qualname.rpartition(".")
        return ClassRef(self.module, head) if dot else None

    @property
    def name(self) -> str:
        """The function's own name, the last part of its qualname."""
        return self.qualname.rpartition(".")[2]


@dataclass
class SourceFile:
    """One parsed file: its text, hash and a stdlib-ast index of top-level definitions."""

    path: str
    module: str
    relpath: str
    text: str
    hash: str
    tree: ast.Module
    lines: list[str] = field(repr=False)

    def top_level(self, name: str) -> ast.AST | None:
        """The top-level class, function or assignment that binds a name, if any."""
        return _top_level_index(self)[0].get(name)

    def find_class(self, dotted: str) -> ast.ClassDef | None:
        """The class of a dotted name (nested classes too), if the file defines it."""
        node: ast.AST | None = None
        scope: list[ast.stmt] = self.tree.body
        for part in dotted.split("."):
            node = next(
                (n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None
            )
            if node is None:
                return None
            scope = node.body
        return node if isinstance(node, ast.ClassDef) else None

    def segment(self, node: ast.AST) -> str:
        """Source text of a node, dedented so that it parses on its own."""
        return textwrap.dedent("\n".join(self.lines[first_line(node) - 1 : node.end_lineno])) + "\n"


def first_line(node: ast.AST) -> int:
    """A definition's first line: its first decorator's, as `inspect` gives, else its own."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _top_level_index(sf: SourceFile) -> tuple[dict[str, ast.AST], None]:
    index = current().table("source.index")  # by content hash
    cached = index.get(sf.hash)
    if cached is None:
        names: dict[str, ast.AST] = {}
        for node in sf.tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        names[t.id] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names[node.target.id] = node
        cached = (names, None)
        index[sf.hash] = cached
    return cached


def real_path(path: str) -> str:
    """`os.path.realpath`, asked of the file system once per path and session (every jedi answer and
    every file read names a path, the same few hundred again and again)."""
    known = current().table("source.real_paths")
    found = known.get(path)
    if found is None:
        found = known[path] = os.path.realpath(path)
    return found


def module_for_path(path: str) -> tuple[str, str]:
    """The importable module name of a file and its path relative to its sys.path root."""
    path = real_path(path)
    best = None
    for entry in sys.path:
        root = real_path(entry or os.getcwd())
        if path.startswith(root + os.sep) and (best is None or len(root) > len(best)):
            best = root
    if best is None:
        best = os.path.dirname(path)
    rel = os.path.relpath(path, best)
    parts = rel[: -len(".py")].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts), rel.replace(os.sep, "/")


def accessed() -> set[str]:
    """Every file read in this session since the caller last cleared this set: what an analysis depended on."""
    return current().value("source.accessed", set)


def load_file(path: str, module: str | None = None, relpath: str | None = None) -> SourceFile:
    """Read and index a file, once per (path, content); `module` / `relpath` name files outside sys.path."""
    path = real_path(path)
    stat = os.stat(path)
    stamp = (stat.st_mtime_ns, stat.st_size)
    session = current()
    files, stamps = session.table("source.files"), session.table("source.stamps")  # by real path
    cached = files.get(path)
    if cached is not None and stamps.get(path) == stamp and (module is None or module == cached.module):
        accessed().add(path)
        return cached
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    digest = sha256(text)
    stamps[path] = stamp
    accessed().add(path)
    if cached is not None and cached.hash == digest and (module is None or module == cached.module):
        return cached
    mod, rel = module_for_path(path)
    if cached is not None and module is None and relpath is None:
        mod, rel = cached.module, cached.relpath
    sf = SourceFile(
        path=path,
        module=module or mod,
        relpath=relpath or rel,
        text=text,
        hash=digest,
        tree=ast.parse(text, filename=path),
        lines=text.splitlines(),
    )
    files[path] = sf
    session.table("source.by_module")[sf.module] = path
    return sf


def known_module(path: str | None) -> str | None:
    """The module name a file was loaded under (fixture files get explicit names)."""
    if not path:
        return None
    sf = current().table("source.files").get(real_path(path))
    return sf.module if sf is not None else None


def loaded(path: str) -> SourceFile | None:
    """The file already loaded from a path, if any; never reads it."""
    return current().table("source.files").get(real_path(path))


def module_path(module: str) -> str | None:
    """The file of a module, found without importing it."""
    known = current().table("source.by_module").get(module)
    if known is not None:
        return known
    return _spec_path(module)


@lru_cache(maxsize=4096)
def _spec_path(module: str) -> str | None:
    """The module's file as the import system would find it, without running any package's `__init__`
    (`importlib.util.find_spec` imports the parents of a dotted name): each level is asked of the
    finders in turn, in the search path of the level above, or of that package if it is imported. A
    namespace package is imported: it has no code to run."""
    parts = module.split(".")
    spec, path = None, None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        if spec is None:
            spec = _find_spec(name, path)
        if spec is None:
            return None
        if i < len(parts) - 1:
            if loaded is None and spec.origin is None and spec.submodule_search_locations is not None:
                # a namespace package (no __init__, nothing runs), imported for its subpackages' search paths
                loaded = importlib.import_module(name)
            locations = getattr(loaded, "__path__", None) if loaded is not None else spec.submodule_search_locations
            if locations is None:
                return None
            path = list(locations)
    if not spec.origin or not spec.origin.endswith(".py"):
        return None
    return spec.origin


def _find_spec(name: str, path: list[str] | None):
    """What the finders on sys.meta_path give for a module, its parent's search path given."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except (ImportError, ValueError, KeyError):  # KeyError: a namespace package whose parent isn't imported
            return None
        if spec is not None:
            return spec
    return None


def load_module(module: str) -> SourceFile | None:
    """Load the file of a module found without importing it; None when it has no `.py` file."""
    path = module_path(module)
    return load_file(path, module) if path else None


@dataclass(frozen=True)
class ParsedFunction:
    """A function's libcst tree, plus the offset from its lines to the file's lines."""

    ref: FunctionRef
    sf_path: str
    node: cst.FunctionDef
    line_offset: int
    source_hash: str
    module: cst.Module


def function_node(sf: SourceFile, qualname: str) -> ast.FunctionDef | None:
    """Find `func` or `Class.method` (nested classes too) in a file's ast, or a function defined in
    another's body (`Class.__init__.build_layer`, as jedi names it)."""
    owner, dot, name = qualname.rpartition(".")
    scope: list[ast.stmt]
    if dot:
        cls = sf.find_class(owner)
        if cls is not None:
            scope = cls.body
        else:
            outer = function_node(sf, owner)
            if outer is None:
                return None
            scope = list(run_in_block(outer.body))
    else:
        scope = sf.tree.body
    found = None
    for node in scope:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in node.decorator_list):
                continue  # a property's setter is not what reading the attribute runs
            found = node  # the last definition wins, as at run time
    return found


def run_in_block(body: list[ast.stmt]):
    """The statements a block runs: its own and those of the blocks they hold (`if`, `try` and its
    `except` clauses, `with`, loops, `match` cases), not those of the functions and classes it
    defines. An `except` clause comes as a node of its own: it binds its name."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from run_in_block(inner)
        for handler in getattr(node, "handlers", ()):
            yield handler
            yield from run_in_block(handler.body)
        for case in getattr(node, "cases", ()):
            yield from run_in_block(case.body)


def is_nested_function(sf: SourceFile, qualname: str) -> bool:
    """Whether a function is defined in another function's body (its free names may be the outer one's locals)."""
    owner = qualname.rpartition(".")[0]
    return bool(owner) and sf.find_class(owner) is None


def parse_function(sf: SourceFile, qualname: str) -> ParsedFunction | None:
    """Parse one function with libcst; cached by the function's own source hash."""
    node = function_node(sf, qualname)
    if node is None:
        return None
    text = sf.segment(node)
    digest = sha256(text)
    key = (digest, node.lineno)
    parsed_functions = current().table("source.parsed")  # by the function's source hash and line
    hit = parsed_functions.get(key)
    if hit is not None and hit.ref == FunctionRef(sf.module, qualname):
        return hit
    module = cst.parse_module(text)
    fn = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    start = first_line(node)
    parsed = ParsedFunction(
        ref=FunctionRef(sf.module, qualname),
        sf_path=sf.path,
        node=fn,
        line_offset=start - 1,
        source_hash=digest,
        module=module,
    )
    parsed_functions[key] = parsed
    return parsed


class _PositionsOnly(cst.MetadataWrapper):
    """A metadata wrapper asked for positions alone. libcst's resolution runs a batched visit of the
    whole tree even when no batchable provider is asked, rebuilding every node for nothing; this
    wrapper skips a visit with no visitors."""

    def visit_batched(self, visitors, before_visit=None, after_leave=None):
        """libcst's batched visit, skipped when there is no visitor to run."""
        visitors = list(visitors)
        if not visitors:
            return self.module
        return super().visit_batched(visitors, before_visit, after_leave)


def positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Where each node of a parsed function's module starts and ends (lines from 1, columns from 0),
    computed once per session for each module."""
    table = current().table("source.positions")  # by the module node
    found = table.get(module)
    if found is None:
        found = table[module] = _PositionsOnly(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return found


def function_source_hash(sf: SourceFile, qualname: str) -> str | None:
    """The hash of a function's source, decorators included; None when the file doesn't define it."""
    node = function_node(sf, qualname)
    return sha256(sf.segment(node)) if node is not None else None


def _indexed_class(obj: Any) -> tuple[str, int] | None:
    """A class's file and first line (its first decorator's, as `inspect` gives) from the source index,
    without inspect re-reading and re-parsing the file; None when the index doesn't have it."""
    if not isinstance(obj, type) or "<locals>" in obj.__qualname__:
        return None
    sf = load_module(obj.__module__)
    node = sf.find_class(obj.__qualname__) if sf is not None else None
    if node is None:
        return None
    return sf.path, first_line(node)


def location(obj: Any) -> tuple[str, int]:
    """The file and line where a class or function is defined: relative to the working folder when
    below it, else to its package's root (`transformers/models/...`, as plans name files); an installed
    package's file always to its package's root, wherever the environment lies."""
    import inspect

    target = inspect.unwrap(obj)
    indexed = _indexed_class(target)
    if indexed is not None:
        path, line = indexed
    else:
        try:
            path = inspect.getsourcefile(target) or inspect.getfile(target)
            _, line = inspect.getsourcelines(target)
        except (TypeError, OSError):
            return getattr(obj, "__qualname__", repr(obj)), 0
    rel = os.path.relpath(path)
    if not rel.startswith("..") and f"{os.sep}site-packages{os.sep}" not in path:  # (a venv below it is not)
        return rel, line
    module = getattr(target, "__module__", None) or ""
    for suffix in (module.replace(".", os.sep) + ".py", os.path.join(module.replace(".", os.sep), "__init__.py")):
        if module and path.endswith(os.sep + suffix):
            return suffix.replace(os.sep, "/"), line
    return path, line
