"""The package's imports: no cycle between staticexec's modules, and no module reaches into another's
private names. Imports inside functions count too: they hide a cycle, they don't remove it."""

from __future__ import annotations

import ast
import os

import networkx as nx

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "staticexec")


def _modules() -> dict[str, ast.Module]:
    out = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as handle:
                out[name[:-3]] = ast.parse(handle.read())
    return out


def _imports(tree: ast.Module):
    """(imported staticexec module, names taken from it) for every import in a module, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                yield node.module.split(".")[0], [a.name for a in node.names]
            else:  # from . import x
                for alias in node.names:
                    yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("staticexec."):
            yield node.module.split(".")[1], [a.name for a in node.names]


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    modules = _modules()
    for name, tree in modules.items():
        graph.add_node(name)
        for imported, _ in _imports(tree):
            if imported in modules and imported != name:
                graph.add_edge(name, imported)
    return graph


def test_no_import_cycle():
    cycles = sorted(sorted(c) for c in nx.simple_cycles(_graph()))
    assert cycles == [], f"import cycles: {cycles}"


def test_no_private_name_is_imported_from_another_module():
    private = sorted(
        f"{name} imports {imported}.{n}"
        for name, tree in _modules().items()
        for imported, names in _imports(tree)
        for n in names
        if n.startswith("_") and not n.startswith("__")
    )
    assert private == []
