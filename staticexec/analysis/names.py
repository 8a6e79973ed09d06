"""Name resolution across files with jedi's `goto`.

jedi answers "where is the name at this position defined?", following
imports (modular-generated model files import from sibling model folders).
We never ask jedi to infer types: the resolver evaluates right-hand sides
itself, which is faster and knows the rules jedi can't.

It is the names half of stage 2 (names/resolve): the resolver (resolve.py) asks it where
each name is defined.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
from dataclasses import dataclass

import jedi

_ENV = jedi.InterpreterEnvironment()
import parso.cache

from staticexec.analysis.session import current
from staticexec.analysis.source import SourceFile, known_module, load_file, module_for_path


def _save_atomically(hashed_grammar, path, item, cache_path=None) -> None:
    """parso's cache write, made whole-or-nothing: a temporary file renamed into place.

    parso pickles a parsed module straight into its cache file. A process
    reading that file while another writes it (parallel workers planning on a
    cold cache), or after a worker was killed mid-write, unpickles a cut file;
    jedi's `goto` then raises and the names of that module (every `torch.*`
    function, from torch's 30,000-line stub) come out unresolved. With the
    rename, a reader sees no file or a whole one.
    """
    target = parso.cache._get_hashed_path(hashed_grammar, path, cache_path=cache_path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(item, handle, pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_parso_load = parso.cache._load_from_file_system


def _load_or_miss(hashed_grammar, path, p_time, cache_path=None):
    """parso's cache read, where a cut or unreadable file (left by an older writer) is a miss, not an error."""
    try:
        return _parso_load(hashed_grammar, path, p_time, cache_path=cache_path)
    except (EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError, ValueError):
        return None


parso.cache._save_to_file_system = _save_atomically
parso.cache._load_from_file_system = _load_or_miss


@dataclass(frozen=True)
class Definition:
    """Where a name is defined: a module, the qualified name in it, and the kind jedi reports."""

    module: str
    qualname: str
    kind: str  # "class", "function", "module", "statement", "param", "instance"
    path: str | None
    line: int | None


class NameResolver:
    """jedi `goto`, one Script per file, answers cached by position."""

    def __init__(self) -> None:
        self._scripts: dict[str, jedi.Script] = {}
        self._answers: dict[tuple[str, str, int, int], Definition | None] = {}
        self._projects: dict[str, jedi.Project] = {}
        self._scripts_hash: dict[str, str] = {}

    def _script(self, sf: SourceFile) -> jedi.Script:
        script = self._scripts.get(sf.path)
        if script is None or self._scripts_hash.get(sf.path) != sf.hash:
            root = sf.path[: -len(sf.relpath)].rstrip(os.sep) or os.path.dirname(sf.path)
            project = self._projects.get(root)
            if project is None:
                # the running process's sys.path, not the interpreter's default: folders added at run
                # time (transformers' remote-code modules, a user's sys.path.insert) hold model code too
                extra = [p for p in dict.fromkeys(os.path.realpath(e or os.getcwd()) for e in sys.path)
                         if os.path.isdir(p)]
                project = self._projects[root] = jedi.Project(root, smart_sys_path=False, added_sys_path=extra)
            script = jedi.Script(sf.text, path=sf.path, project=project, environment=_ENV)
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
        self._answers[key] = answer
        return answer


def load_definition_file(defn: Definition) -> SourceFile | None:
    """Load the `.py` file a definition lies in, under its module name; None for other definitions."""
    if not defn.path or not defn.path.endswith(".py"):
        return None
    return load_file(defn.path, defn.module)


def shared_names() -> NameResolver:
    """The session's resolver: jedi's parsed scripts and answers serve every analysis of the session."""
    return current().value("names.resolver", NameResolver)
