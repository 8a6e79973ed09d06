"""Name resolution across files with jedi's `goto`.

jedi answers "where is the name at this position defined?", following
imports (modular-generated model files import from sibling model folders).
We never ask jedi to infer types: the resolver evaluates right-hand sides
itself, which is faster and knows the rules jedi can't.

It is the names half of stage 2 (names/resolve): the resolver (resolve.py) asks it where
each name is defined.
"""

from __future__ import annotations

import ast
import os
import sys
import sysconfig
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jedi

from staticexec.analysis import external, follow, lazy
from staticexec.analysis.session import current
from staticexec.analysis.source import SourceFile, known_module, load_file, module_for_path, real_path


def _jedi():
    """jedi, imported when a name is first looked up, with staticexec's changes to parso's disk cache
    (jedicache.py) and name search (parsosearch.py): splitting with a shipped plan never imports it."""
    import jedi

    from staticexec.analysis import jedicache  # noqa: F401  parso's disk cache: safe to share, quick to read
    from staticexec.analysis import parsosearch  # noqa: F401  the name at a position, found without walking the module

    return jedi


def _environment():
    """jedi's environment: this interpreter, made once per session."""
    return current().value("names.environment", lambda: _jedi().InterpreterEnvironment())


@dataclass(frozen=True)
class Definition:
    """Where a name is defined: a module, the qualified name in it, and the kind jedi reports."""

    module: str
    qualname: str
    kind: str  # "class", "function", "module", "statement", "param", "instance"
    path: str | None
    line: int | None


# where installed packages and the standard library lie: their modules do not change while a process runs
_INSTALLED = tuple(dict.fromkeys(os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")))


class NameResolver:
    """jedi `goto`, one Script per file, answers cached by position, by module-level name and by module member."""

    def __init__(self) -> None:
        self._scripts: dict[str, jedi.Script] = {}
        self._answers: dict[tuple[str, str, int, int], Definition | None] = {}
        self._globals: dict[tuple[str, str, str], Definition | None] = {}
        self._members: dict[tuple[str, str], Definition | None] = {}
        self._module_paths: dict[str, str] = {}  # module name -> its file, "" when two files claim the name
        self._projects: dict[str, jedi.Project] = {}
        self._scripts_hash: dict[str, str] = {}

    def _script(self, sf: SourceFile) -> jedi.Script:
        jedi = _jedi()
        script = self._scripts.get(sf.path)
        if script is None or self._scripts_hash.get(sf.path) != sf.hash:
            root = sf.path[: -len(sf.relpath)].rstrip(os.sep) or os.path.dirname(sf.path)
            project = self._projects.get(root)
            if project is None:
                # the running process's sys.path, not the interpreter's default: folders added at run
                # time (transformers' remote-code modules, a user's sys.path.insert) hold model code too
                extra = [p for p in dict.fromkeys(real_path(e or os.getcwd()) for e in sys.path)
                         if os.path.isdir(p)]
                project = self._projects[root] = jedi.Project(root, smart_sys_path=False, added_sys_path=extra)
            # jedi parses a script's own file anew (it keeps parso's disk cache for imported modules);
            # with the file in parso's memory cache first, read from its disk cache when there, that
            # parse finds the same lines and takes the tree it already has
            try:
                _environment().get_grammar().parse(path=sf.path, cache=True, diff_cache=True,
                                         cache_path=jedi.settings.cache_directory)
            except OSError:  # a file gone since it was read: jedi parses the text it is given
                pass
            script = jedi.Script(sf.text, path=sf.path, project=project, environment=_environment())
            self._scripts[sf.path] = script
            self._scripts_hash[sf.path] = sf.hash
        return script

    def goto(self, sf: SourceFile, line: int, column: int) -> Definition | None:
        """The definition of the name at (line, column) of a file (1-based line, 0-based column)."""
        key = (sf.path, sf.hash, line, column)
        if key in self._answers:
            return self._answers[key]
        answer = None
        try:
            names = self._script(sf).goto(line, column, follow_imports=True)
        except Exception:  # jedi can fail on exotic code; the caller reports it as unresolved
            names = []
        for name in names:
            full = name.full_name
            path = str(name.module_path) if name.module_path else None
            jedi_module = name.module_name
            if not full or not jedi_module:
                continue
            qual = full[len(jedi_module) + 1 :] if full.startswith(jedi_module + ".") else full
            # jedi names a module after the sys.path entry it found it through; one reached through a
            # symlinked folder (a virtual environment linked into place) gets a name relative to the
            # wrong root ("auto.modeling_auto"). A source file is named as source.py names it, by real path.
            known = known_module(path) or (module_for_path(path)[0] if path and path.endswith(".py") else None)
            if name.type == "module":
                module, qual = (known or full), ""
            else:
                module = known or jedi_module
            answer = Definition(module, qual, name.type, path, name.line)
            break
        self._note(answer)
        self._answers[key] = answer
        return answer

    def goto_global(self, sf: SourceFile, name: str, line: int, column: int) -> Definition | None:
        """The definition of a module-level name read at (line, column) of a file.

        The analysis takes a module-level name to mean one thing across its file, so jedi is asked
        once per file and name, at the first place it is read.
        """
        key = (sf.path, sf.hash, name)
        if key not in self._globals:
            found = self.followed(sf, name)
            if found is None:
                found = self.goto(sf, line, column)
            if found is None:  # jedi finds nothing: a name transformers exports lazily, perhaps
                imported = external.only_import(sf, name)
                if imported is not None and imported[1] is not None:
                    found = self.lazy(*imported)
            self._globals[key] = found
        return self._globals[key]

    def followed(self, sf: SourceFile, name: str) -> Definition | None:
        """A module-level name followed through the files' own statements (follow.py), a name imported from
        code the analysis never enters as the imported module holds it (external.py); None where they
        don't say, for jedi to answer."""
        return self._noted(follow.definition(sf, name))

    def _noted(self, found: tuple | None) -> Definition | None:
        """jedi's fields of a definition found without it, as a `Definition`, the file of a module noted."""
        defn = Definition(*found) if found is not None else None
        self._note(defn)
        return defn

    def _note(self, defn: Definition | None) -> None:
        """The file a module definition names, kept by module name ("" once two files claim the name)."""
        if defn is not None and defn.kind == "module" and defn.path:
            known_path = self._module_paths.setdefault(defn.module, defn.path)
            if known_path != defn.path:
                self._module_paths[defn.module] = ""

    def goto_member(self, sf: SourceFile, module: str, name: str, line: int, column: int) -> Definition | None:
        """The definition of `<module>.<name>`, read at (line, column) of a file where the name before
        the dot is known to be that module.

        What a module of an installed package or of the standard library holds (`torch.nn.Linear`)
        does not depend on the file that reads it, so jedi is asked once per module and name; for
        any other module (model code that may be edited) the answer is jedi's at this position.
        """
        key = (module, name)
        if key in self._members:
            return self._members[key]
        found = self._external(module, name)
        if found is not None:
            self._members[key] = found
            return found
        path = self._module_paths.get(module)
        found = self._noted(follow.member(module, name)) or self.goto(sf, line, column) or self.lazy(module, name)
        if path and real_path(path).startswith(_INSTALLED):
            self._members[key] = found
        return found

    def lazy(self, module: str, member: str) -> Definition | None:
        """A name one of transformers' packages exports lazily, which jedi can't follow (lazy.py)."""
        found = lazy.definition(module, member)
        return Definition(*found, None) if found is not None else None

    def _external(self, module: str, member: str | None) -> Definition | None:
        """A name of code the analysis never enters, as the imported module holds it (external.py)."""
        found = external.definition(module, member)
        if found is None:
            return None
        defined, qualname, kind, path = found
        if kind == "module" and path:
            self._module_paths.setdefault(defined, path)
        return Definition(defined, qualname, kind, path, None)

    def goto_module_scope(self, sf: SourceFile, expr: ast.expr) -> Definition | None:
        """The definition of an expression read at a file's module level (a class's base, the value of a
        module-level assignment): a name, a dotted name through modules, or what jedi finds at its start."""
        if isinstance(expr, ast.Name):
            return self.goto_global(sf, expr.id, expr.end_lineno, expr.col_offset)
        if isinstance(expr, ast.Attribute):
            line, column = expr.end_lineno, expr.end_col_offset - len(expr.attr)
            owner = self.goto_module_scope(sf, expr.value) if isinstance(expr.value, (ast.Name, ast.Attribute)) else None
            if owner is not None and owner.kind == "module":
                return self.goto_member(sf, owner.module, expr.attr, line, column)
            return self.goto(sf, line, column)
        return self.goto(sf, expr.end_lineno, expr.col_offset)


def load_definition_file(defn: Definition) -> SourceFile | None:
    """Load the `.py` file a definition lies in, under its module name; None for other definitions."""
    if not defn.path or not defn.path.endswith(".py"):
        return None
    return load_file(defn.path, defn.module)


def shared_names() -> NameResolver:
    """The session's resolver: jedi's parsed scripts and answers serve every analysis of the session."""
    return current().value("names.resolver", NameResolver)
