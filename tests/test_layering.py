"""The package's layout: imports go down the pipeline, never up; no cycle between modules; no
module reaches into another's private names; every module, public function and class says what it is
for. Imports inside functions count too: they hide a cycle or an upward edge, they don't remove it.

    .venv/bin/pytest -q tests/test_layering.py
"""

from __future__ import annotations

import ast
import functools
import os
import re

import networkx as nx

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "staticexec")

# bottom to top: a module may import from its own layer (without a cycle) and the layers below it
LAYERS = [
    {"version", "messages", "files", "sweep"},  # what every stage uses
    {"analysis"},  # stages 1-4: source, names/resolve, callgraph, plan
    {"emit"},  # stages 5-6: emit, cut, run
    {"api"},  # the public entry points
    {"check"},  # tiny models, samples, verify, coverage, the release matrix
    {"plans", "drift", "explain", "graph", "llmcompressor", "cli", "__init__"},  # the plan store and the CLI
    {"__main__"},  # `python -m staticexec`: the CLI
]


def _layer(module: str) -> int:
    head = module.split(".")[0]
    found = [i for i, names in enumerate(LAYERS) if head in names]
    assert found, f"staticexec.{module} is in no layer of tests/test_layering.py"
    return found[0]


@functools.cache
def _modules() -> dict[str, ast.Module]:
    """Every module of the package by its dotted name below `staticexec` (a package by its folder's name)."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            parts = os.path.relpath(os.path.join(folder, name), PACKAGE)[:-3].split(os.sep)
            if parts[-1] == "__init__" and len(parts) > 1:
                parts = parts[:-1]
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                out[".".join(parts)] = ast.parse(handle.read())
    return out


def _imports(module: str, tree: ast.Module, modules: dict):
    """(imported staticexec module, names taken from it) for every import in a module, nested ones included."""
    package = module.rpartition(".")[0] if module in modules and not _is_package(module) else module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: max(0, len(package.split(".")) - node.level + 1)] if package else [])
                dotted = ".".join(p for p in (base, node.module or "") if p)
            elif (node.module or "").split(".")[0] == "staticexec":
                dotted = node.module.partition(".")[2]
            else:
                continue
            for alias in node.names:  # `from staticexec.check import models`: the module models
                sub = ".".join(p for p in (dotted, alias.name) if p)
                if sub in modules:
                    yield sub, []
                else:
                    yield dotted or "__init__", [alias.name]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "staticexec":
                    yield alias.name.partition(".")[2] or "__init__", []


def _is_package(module: str) -> bool:
    return os.path.isdir(os.path.join(PACKAGE, *module.split(".")))


def _edges():
    modules = _modules()
    for name, tree in modules.items():
        for imported, names in _imports(name, tree, modules):
            yield name, imported, names


def test_every_module_has_a_layer():
    for name in _modules():
        _layer(name)


def test_imports_only_go_down_the_pipeline():
    upward = sorted(f"{a} imports {b}" for a, b, _ in _edges() if _layer(b) > _layer(a))
    assert upward == []


def test_no_import_cycle():
    graph = nx.DiGraph()
    for a, b, _ in _edges():
        # a subpackage's own __init__ re-exports its modules: that is not a cycle through them
        if a != b and not (b.startswith(a + ".") and _is_package(a)):
            graph.add_edge(a, b)
    cycles = sorted(sorted(c) for c in nx.simple_cycles(graph))
    assert cycles == [], f"import cycles: {cycles}"


def test_no_private_name_is_imported_from_another_module():
    private = sorted(
        f"{a} imports {b}.{n}" for a, b, names in _edges() for n in names if n.startswith("_") and not n.startswith("__")
    )
    assert private == []


def test_the_layering_check_sees_an_upward_import():
    tree = ast.parse("def f():\n    from staticexec.check import models\n")
    found = list(_imports("analysis.plan", tree, _modules()))
    assert found == [("check.models", [])] and _layer("check.models") > _layer("analysis.plan")


def test_the_readme_layout_names_every_module():
    with open(os.path.join(os.path.dirname(PACKAGE), "README.md"), encoding="utf-8") as handle:
        layout = handle.read().partition("## Layout")[2]
    named = set(re.findall(r"([a-z_]+)(?:\.py|/)", layout))
    missing = sorted(m for m in _modules() if m != "__init__" and m.rpartition(".")[2] not in named)
    assert missing == [], f"README.md's Layout does not name {missing}"


def test_every_module_public_function_and_class_has_a_docstring():
    undocumented = []
    for name, tree in _modules().items():
        if not ast.get_docstring(tree):
            undocumented.append(f"staticexec.{name}")
        scopes = [("", tree.body)]
        while scopes:
            prefix, body = scopes.pop()
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                    if not ast.get_docstring(node):
                        undocumented.append(f"staticexec.{name}:{prefix}{node.name}")
                    if isinstance(node, ast.ClassDef):
                        scopes.append((f"{node.name}.", node.body))
    assert undocumented == []


def test_no_module_keeps_a_cache_of_its_own():
    """Caches belong to the analysis session (staticexec/analysis/session.py), never to a module: no
    module-level dict, list or set starts empty to be filled later."""
    found = []
    for name, tree in _modules().items():
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            empty_display = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
                getattr(value, "keys", None) or getattr(value, "elts", None))
            empty_call = isinstance(value, ast.Call) and getattr(value.func, "id", None) in ("dict", "list", "set") \
                and not value.args
            if empty_display or empty_call:
                found.append(f"staticexec.{name}:{node.lineno}")
    assert found == []
