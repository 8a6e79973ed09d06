"""A user's own model class as the root of an analysis: `module.path:Class`, or a model folder.

A model folder is laid out as transformers loads remote code (`trust_remote_code`): a `config.json`
whose `auto_map` names the model class (`"AutoModelForCausalLM": "modeling_x.XForCausalLM"`), and
its `modeling_*.py` and `configuration_*.py`, which may import each other relatively. The analysis
reads the folder as a package of its own: a link to it under a fresh package name, in a folder put
on `sys.path`, so `find_spec` and jedi find its files without running any of them (the package has
no `__init__` to run; one that has is refused rather than imported).

It sits in front of the pipeline, beside architectures.py: the cli names a root either way.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from staticexec.analysis import lazy
from staticexec.analysis.source import ClassRef
from staticexec.messages import UsageError

# auto classes in the order a folder's model class is chosen from its auto_map
AUTO_ORDER = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForVision2Seq", "AutoModelForSeq2SeqLM",
              "AutoModelForSpeechSeq2Seq", "AutoModelForMultimodalLM", "AutoModel")


@dataclass(frozen=True)
class UserClass:
    """A user's model class: where its source is, and for a folder the folder and its config.json."""

    spec: str  # as the user named it
    cls: ClassRef  # the class, under the module name the analysis reads it by
    folder: str | None = None
    auto_class: str | None = None  # the auto_map key it was chosen by (a folder)
    config: dict | None = None  # the folder's config.json


def is_user_class(spec: str) -> bool:
    """Whether a name given where an architecture is expected names a user's class or folder instead."""
    return ":" in spec or os.sep in spec or os.path.isdir(spec)


def find_user_class(spec: str) -> UserClass:
    """The class a `module.path:Class` or a model folder names; UsageError in one line when it names none."""
    if os.path.isdir(spec):
        return _from_folder(spec)
    module, _, qualname = spec.partition(":")
    if not module or not qualname or not all(p.isidentifier() for p in module.split(".") + qualname.split(".")):
        raise UsageError(f"{spec!r}: name a class as module.path:Class, or a model folder with a config.json")
    from staticexec.analysis.source import module_path

    if module_path(module) is None:
        raise UsageError(f"{spec!r}: no .py file for module {module!r}: it is not on sys.path, or has no source "
                         "(built in, frozen or compiled)")
    return UserClass(spec, _bound_class(spec, ClassRef(module, qualname)))


def _bound_class(spec: str, ref: ClassRef, seen: tuple[str, ...] = ()) -> ClassRef:
    """The class a module's name stands for, read from source: the one its last top-level binding of the
    name gives it, which is what the name holds once the module has run. That binding is a class statement,
    or leads to a class: an import, an assignment such as `Model = LlamaForCausalLM`, an `import *` of a
    module that exports the name. UsageError in one line, saying what the name is bound to, when that is
    no class staticexec finds, or when a binding inside a block (`if`, `try`) may come after it."""
    import ast

    from staticexec.analysis.names import shared_names
    from staticexec.analysis.source import load_module, run_in_block

    head, _, rest = ref.name.partition(".")
    names = shared_names()
    # transformers' packages bind their names at run time, by a lazy module, and in source only under
    # TYPE_CHECKING: the name is looked up in the imported package (lazy.py), and the class it holds is read
    # in the module that defines it, by the rules here
    found = names.lazy(ref.module, head) if _lazy_package(ref.module) else None
    if found is not None:
        where = f"as the imported {ref.module} holds it"
        code = f"{head} is the {found.kind} {found.module}:{found.qualname} ({where})"
        if found.kind == "class" and found.module != ref.module:
            return _follow(spec, found.module, found.qualname, rest, seen + (ref.module,), code)
        if found.kind != "class":
            return _found_class(spec, head, rest, found, where, code)
    sf = load_module(ref.module)
    statements = list(run_in_block(sf.tree.body))
    unbound = _unbinds(sf, head, statements)
    if unbound:
        raise UsageError(f"{spec!r}: {sf.relpath}:{unbound}; staticexec follows a name that is never unbound: "
                         "name the module that defines the class")
    # importing a package's submodule binds its name in the package, where the import statement runs
    submodule = [node for node in statements if _imports(sf, node, f"{ref.module}.{head}")] \
        if _is_submodule(sf, head) else []
    bindings = [node for node in statements if head in _binds(node) or node in submodule]
    seen = seen + (ref.module,)
    stars, others = _star_bindings(spec, sf, head, statements, bindings, seen)
    bindings = sorted(bindings + list(stars), key=_position)
    if not bindings:
        raise UsageError(f"{spec!r}: {sf.relpath} binds no {head} at module level"
                         + (f", and its `import *` of {', '.join(others)} binds none" if others else ""))
    # top-level statements run once each, in order: the last binding holds, unless it is inside a block,
    # which may not run (a block's statements all come before the next top-level statement)
    binding = bindings[-1]
    where = f"{sf.relpath}:{binding.lineno}"
    if binding not in sf.tree.body:
        said = "defines" if isinstance(binding, ast.ClassDef) and binding.name == head else "binds"
        raise UsageError(f"{spec!r}: {where} {said} {head} inside a block; staticexec reads a name bound at "
                         "the module's top level")
    if isinstance(binding, ast.ClassDef) and binding.name == head:
        problem = _class_path(sf, ref.name)
        if problem:
            raise UsageError(f"{spec!r}: {problem}; {_ONCE}")
        if sf.find_class(ref.name) is None:  # the dotted rest names none
            raise UsageError(f"{spec!r}: {sf.relpath} defines no class {ref.name}")
        return ref
    if binding in submodule and head not in _binds(binding):
        raise UsageError(f"{spec!r}: {where} imports the submodule {ref.module}.{head}, which binds {head} to the "
                         "submodule: name the module that defines the class")
    if binding in stars:
        return _bound_class(spec, ClassRef(stars[binding], ref.name), seen)
    if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)) and binding.name == head:
        raise UsageError(f"{spec!r}: {head} is a function ({where}), not a class")
    code = f"{where} binds {head} by `{' '.join(ast.unparse(binding).split())[:100]}`"
    taken: tuple[str | None, str] = (None, "")  # the module and name the binding takes (`from m import X`, `m.X`)
    if isinstance(binding, (ast.Import, ast.ImportFrom)):
        alias = [a for a in binding.names if (a.asname or a.name.split(".")[0]) == head][-1]
        column = alias.end_col_offset - 1 if alias.asname or isinstance(binding, ast.ImportFrom) else \
            alias.col_offset + len(head) - 1  # `import a.b` binds `a`: ask for `a`, not `a.b`
        if isinstance(binding, ast.ImportFrom):
            taken = (_from_module(sf, binding), alias.name)
        found = None if _lazy_package(taken[0]) else names.goto_global(sf, head, alias.lineno, column)
    elif isinstance(binding, (ast.Assign, ast.AnnAssign)) and isinstance(binding.value, (ast.Name, ast.Attribute)) \
            and head in _plain_targets(binding):
        value = binding.value
        owner = names.goto_module_scope(sf, value.value) \
            if isinstance(value, ast.Attribute) and isinstance(value.value, (ast.Name, ast.Attribute)) else None
        if owner is not None and owner.kind == "module":
            taken = (owner.module, value.attr)
        found = None if _lazy_package(taken[0]) else names.goto_module_scope(sf, value)
    else:
        found = None
    # jedi finds no class, or would read one of transformers' packages by its TYPE_CHECKING branch, which
    # binds its names lazily: the name taken from a module is read there, as any
    module, name = taken
    if module is not None and (found is None or found.kind not in ("class", "module")) \
            and load_module(module) is not None:
        return _follow(spec, module, name, rest, seen, code)
    return _found_class(spec, head, rest, found, where, code)


def _found_class(spec: str, head: str, rest: str, found, where: str, code: str) -> ClassRef:
    """The class a binding of `head` leads to (`found`, a names.Definition; `where` and `code` say where and
    how it binds), with the dotted `rest` below it; UsageError in one line when that is no class, or not the
    class statement the analysis reads by that name."""
    from staticexec.analysis.source import load_module

    if found is not None and found.kind == "module":
        raise UsageError(f"{spec!r}: {head} is the module {found.module} ({where}), not a class"
                         + ("; name the class by the module that defines it" if rest else ""))
    if found is None or found.kind != "class":
        raise UsageError(f"{spec!r}: {code}, which staticexec does not follow to a class")
    bound = ClassRef(found.module, ".".join(filter(None, (found.qualname, rest))))
    source = load_module(bound.module)
    if rest and (source is None or source.find_class(bound.name) is None):
        raise UsageError(f"{spec!r}: {head} is the class {found.module}:{found.qualname} ({where}), "
                         + (f"which defines no class {rest}" if source else "whose source staticexec can't read"))
    # the class statement the binding leads to (jedi reads the module's flow): the one the analysis reads?
    problem = _class_path(source, bound.name) if source is not None else None
    if problem:
        raise UsageError(f"{spec!r}: {head} is the class {found.module}:{found.qualname} ({where}), and "
                         f"{problem}; {_ONCE}")
    return bound


def _lazy_package(module: str | None) -> bool:
    """Whether a module is one of transformers' packages (an `__init__.py`), whose names are bound lazily."""
    from staticexec.analysis.source import module_path

    path = module_path(module) if module is not None and lazy.is_lazy(module) else None
    return path is not None and os.path.basename(path) == "__init__.py"


def _follow(spec: str, module: str, name: str, rest: str, seen: tuple[str, ...], code: str) -> ClassRef:
    """The class a binding (`code`, where and how) leads to: the name as its module binds it once it has run,
    read by the same rules there (`from m import X` binds m's X as m's last binding leaves it)."""
    visit = f"{module}:{name}"
    if visit in seen:
        raise UsageError(f"{spec!r}: {code}, which leads back to a name already followed")
    return _bound_class(spec, ClassRef(module, ".".join(filter(None, (name, rest)))), seen + (visit,))


_ONCE = "staticexec reads a class bound once, by its class statement: name the module that defines the class"


def _class_path(sf, dotted: str) -> str | None:
    """Why the class a dotted name leads to in a module may not be the class statement the analysis reads by
    that name (the first class statement of each name, at the top of its module or class body), or the class
    the name holds; None when it is. At the module's top level: the name defined by more than one class
    statement, or inside a block. In a class's body: the name bound other than by one class statement at the
    top of the body (a `del` counts), or declared global there; and an attribute of a nested name assigned
    anywhere in the module (`Outer.Inner = X`, `O.Inner = X`), which may rebind it."""
    import ast

    from staticexec.analysis.external import statement_binds
    from staticexec.analysis.source import run_in_block

    parts = dotted.split(".")
    scope: list = sf.tree.body
    for depth, part in enumerate(parts):
        outer = ".".join(parts[:depth])
        inside = f" in the class {outer}" if depth else ""
        statements = list(run_in_block(scope))
        declared = next((node for node in statements if isinstance(node, (ast.Global, ast.Nonlocal))
                         and part in node.names), None)
        if depth and declared is not None:  # the class statement binds the name outside the class
            return f"{sf.relpath}:{declared.lineno} declares {part} {type(declared).__name__.lower()}{inside}"
        binders = [node for node in statements if isinstance(node, ast.ClassDef) and node.name == part
                   or depth and part in (statement_binds(node) if isinstance(node, ast.Delete) else _binds(node))]
        if not binders:
            return None  # no such class: said by the caller
        if len(binders) > 1 or not isinstance(binders[0], ast.ClassDef):
            lines = ", ".join(str(node.lineno) for node in binders)
            if not depth:
                return f"{sf.relpath} defines {part} {len(binders)} times (lines {lines})"
            return (f"{sf.relpath} binds {part}{inside} other than by one class statement "
                    f"(line{'s' if len(binders) > 1 else ''} {lines})")
        if binders[0] not in scope:
            block = f"a block of the class {outer}" if depth else "a block"
            return f"{sf.relpath}:{binders[0].lineno} defines {part} inside {block}"
        scope = binders[0].body
    nested = set(parts[1:])
    for node in ast.walk(sf.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr in nested:
            said = "deletes" if isinstance(node.ctx, ast.Del) else "assigns"
            return f"{sf.relpath}:{node.lineno} {said} {ast.unparse(node)}, which may rebind the class {dotted}"
    return None


def _star_bindings(spec: str, sf, head: str, statements: list, bindings: list,
                   seen: tuple[str, ...]) -> tuple[dict, list[str]]:
    """The module's `import *` statements that bind `head` (each with the module it imports), and the
    modules of those that don't. One followed by a top-level statement binding the name is left out: that
    statement rebinds it. UsageError when staticexec can't tell what one exports."""
    top = [_position(node) for node in bindings if node in sf.tree.body]
    stars: dict = {}
    others: list[str] = []
    for node in statements:
        if not _is_star(node):
            continue
        if top and _position(node) < max(top):
            continue
        module = _from_module(sf, node)
        exports = (_exports(module, head, seen) if module is not None
                   else "it reaches above the top-level package")
        if isinstance(exports, str):
            code = f"from {'.' * node.level}{node.module or ''} import *"
            raise UsageError(f"{spec!r}: {sf.relpath}:{node.lineno} `{code}` may bind {head}, and staticexec "
                             f"can't tell whether it does: {exports}; name the module that defines the class")
        if exports:
            stars[node] = module
        else:
            others.append(module)
    return stars, others


def _plain_targets(node) -> set[str]:
    """The names an assignment binds as whole targets (`a = b = x`), not through a walrus in a target."""
    import ast

    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {target.id for target in targets if isinstance(target, ast.Name)}


def _position(node) -> tuple[int, int]:
    """Where a statement starts: statements on one line (`a = 1; b = 2`) in order too."""
    return node.lineno, node.col_offset


def _is_star(node) -> bool:
    """Whether a statement is `from m import *`."""
    import ast

    return isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)


def _from_module(sf, node) -> str | None:
    """The module a `from m import ...` statement of a file imports from (a relative one resolved); None when
    a relative one climbs above the top-level package."""
    if not node.level:
        return node.module
    package = sf.module.split(".")
    if os.path.basename(sf.path) != "__init__.py":
        package = package[:-1]
    if node.level - 1 >= len(package):
        return None
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _exports(module: str, name: str, seen: tuple[str, ...]) -> bool | str:
    """Whether `from module import *` binds `name`, read from the module's source: by its `__all__` when that
    is a list or tuple of names written out, else by a top-level binding of a public name (through the
    module's own `import *` too). Why staticexec can't tell, as a string, when it can't."""
    import ast

    from staticexec.analysis.source import load_module, run_in_block

    if module in seen:
        return f"{module} is star-imported in a cycle"
    sf = load_module(module)
    if sf is None:
        return f"{module} has no .py file staticexec reads"
    if _is_submodule(sf, name):
        return f"{name} is also a submodule of the package {module}, which its `import *` binds once it is imported"
    statements = list(run_in_block(sf.tree.body))
    for target in ("__all__", name):
        unbound = _unbinds(sf, target, statements)
        if unbound:
            return f"{sf.relpath}:{unbound}"
    uses = [n for n in ast.walk(sf.tree) if isinstance(n, ast.Name) and n.id == "__all__"]
    assigned = [n for n in statements if "__all__" in _binds(n)]
    if uses or assigned:
        value = assigned[0].value if len(assigned) == 1 and len(uses) == 1 and assigned[0] in sf.tree.body \
            and isinstance(assigned[0], (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, (ast.List, ast.Tuple))
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)):
            return f"{sf.relpath} makes its `__all__` in a way staticexec does not read (one list of names written out)"
        return name in {e.value for e in value.elts}
    if name.startswith("_"):
        return False
    if any(name in _binds(node) for node in statements):
        return True
    for node in statements:
        if _is_star(node):
            inner = _from_module(sf, node)
            found = _exports(inner, name, seen + (module,)) if inner is not None else \
                f"{sf.relpath}:{node.lineno} imports * from above the top-level package"
            if found is not False:
                return found
    return False


def _imports(sf, node, module: str) -> bool:
    """Whether a statement of a file imports a module (or one below it): `import a.b`, `from a.b import x`,
    `from .b import x` in package a, `from . import b`."""
    import ast

    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = _from_module(sf, node)
        names = [base] + [f"{base}.{alias.name}" for alias in node.names] if base is not None else []
    else:
        return False
    return any(name == module or name.startswith(module + ".") for name in names)


def _is_submodule(sf, name: str) -> bool:
    """Whether a package (its `__init__.py`) has a submodule of the name: importing it binds the name there."""
    folder = os.path.dirname(sf.path)
    return os.path.basename(sf.path) == "__init__.py" and (
        os.path.isdir(os.path.join(folder, name)) or os.path.isfile(os.path.join(folder, name + ".py")))


def _unbinds(sf, name: str, statements: list) -> str | None:
    """Where a module's name may be unbound or rebound other than by its own module-level bindings: a `del`
    of it at module level, a `global` statement naming it in a function or class body (which may rebind
    it); None when nowhere."""
    import ast

    from staticexec.analysis.external import statement_binds

    for node in statements:
        if isinstance(node, ast.Delete) and name in statement_binds(node):
            return f"{node.lineno} deletes {name}"
    bodies = [(node, None) for node in sf.tree.body]  # (node, the function or class whose body holds it)
    while bodies:
        node, owner = bodies.pop()
        if isinstance(node, ast.Global) and name in node.names and owner is not None:  # (at module level, none)
            kind = "class" if isinstance(owner, ast.ClassDef) else "function"
            return f"{node.lineno} declares {name} global in the {kind} {owner.name}, which may rebind it"
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else owner
        bodies += [(child, inner) for child in ast.iter_child_nodes(node)]
    return None


def _binds(node) -> set[str]:
    """The names a module-level statement binds: by import, class, function or assignment (an
    annotation alone binds nothing; `del` unbinds)."""
    import ast

    from staticexec.analysis.external import statement_binds

    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
    if isinstance(node, ast.Delete):
        return set()
    return statement_binds(node)


def _from_folder(folder: str) -> UserClass:
    path = os.path.join(folder, "config.json")
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError as exc:
        raise UsageError(f"{folder}: a model folder needs a config.json") from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON config ({exc})") from exc
    auto_map = config.get("auto_map") if isinstance(config, dict) else None
    if not isinstance(auto_map, dict):
        raise UsageError(f"{path}: no auto_map naming the model class (the layout transformers loads remote code from)")
    key = next((k for k in AUTO_ORDER if isinstance(auto_map.get(k), (str, list))), None)
    if key is None:
        raise UsageError(f"{path}: auto_map names no model class ({', '.join(sorted(auto_map)) or 'empty'})")
    value = auto_map[key]
    value = value[0] if isinstance(value, list) else value
    reference = value.split("--")[-1]  # "repo--modeling_x.Class" names another repository's file
    module, _, name = reference.rpartition(".")
    if not module or not os.path.exists(os.path.join(folder, *module.split(".")) + ".py"):
        raise UsageError(f"{path}: auto_map's {key} is {value!r}, but the folder has no {module or reference}.py")
    if os.path.exists(os.path.join(folder, "__init__.py")):
        raise UsageError(f"{folder}: has an __init__.py, which reading the folder as a package would run; "
                         "name the class as module.path:Class instead")
    package = _package(folder)
    return UserClass(folder, _bound_class(folder, ClassRef(f"{package}.{module}", name)), os.path.realpath(folder), key,
                     config)


def _package(folder: str) -> str:
    """A package name of the folder's own, linked in a folder of this process's on sys.path, so nothing
    shadows or is shadowed. It is named after the folder alone (`staticexec_remote_<name>`), so a plan of
    the folder is the same wherever it lies. Its files are read now, under their names in the package,
    so what one imports from a sibling (`from .layers import Block`) is found as the package's."""
    from staticexec.analysis.session import current
    from staticexec.analysis.source import load_file

    real = os.path.realpath(folder)
    links = current().value("userclass.links", list)  # the folder of links on sys.path, made on first use
    if not links:
        links.append(tempfile.mkdtemp(prefix="staticexec-remote-code-"))
        sys.path.append(links[0])
    stem = "staticexec_remote_" + (re.sub(r"\W", "_", os.path.basename(real)) or "model")
    package, n = stem, 1
    while os.path.lexists(os.path.join(links[0], package)) and os.path.realpath(os.path.join(links[0], package)) != real:
        n += 1
        package = f"{stem}_{n}"
    link = os.path.join(links[0], package)
    if not os.path.lexists(link):
        os.symlink(real, link)
    for name in sorted(os.listdir(real)):
        if name.endswith(".py") and name[:-3].isidentifier():
            load_file(os.path.join(real, name), f"{package}.{name[:-3]}", f"{os.path.basename(real)}/{name}")
    return package


def analysis_config(user: UserClass, given: Any = None) -> Any:
    """The config the resolver reads: the one given, else the folder's config.json as a plain config
    (its model type may be unknown to transformers; nested `*_config` dicts become configs too)."""
    if given is not None or user.config is None:
        return given
    from transformers import PretrainedConfig

    def build(data: dict) -> Any:
        return PretrainedConfig(**{k: build(v) if k.endswith("_config") and isinstance(v, dict) else v
                                   for k, v in data.items() if k != "auto_map"})

    return build(user.config)
