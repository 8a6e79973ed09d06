"""The default sequential targets: one rule, for a class read from source and for a built model.

When a user names no targets, staticexec takes the classes transformers will not split across
devices: the `_no_split_modules` declared by any class the model holds, kept where the model
really holds them. Where nothing declared is held, the element class of the model's first layer
stack (a container of one class, breadth-first from the root, attributes in name order) stands
in. A target is dropped when every path to it passes through another target, so no target call
hides inside another.

The rule sees a model through a `Holdings` view. Planning without a model (api.analyse) gives it
`source_holdings`, the classes the resolver finds in the source; verify gives it the modules of a
built model (check/samples.py). Both ask the same question, so both answer the same way where the
source decides what the model holds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Iterable, TypeVar

from staticexec.analysis.architectures import no_split_modules
from staticexec.analysis.source import ClassRef
from staticexec.analysis.values import Container, Instance, Value

__all__ = ["Holdings", "default_targets", "source_holdings"]

Node = TypeVar("Node", bound=Hashable)


@dataclass(frozen=True)
class Holdings(Generic[Node]):
    """What a model holds, as the default-target rule reads it.

    `children(node)` are the nodes a node holds, ordered by the attribute names that hold them;
    `name(node)` its class name; `declared(node)` the class names it declares in
    `_no_split_modules`; `stack(node)` the element class name when the node is a layer stack of
    one class, else None.
    """

    root: Node
    children: Callable[[Node], Iterable[Node]]
    name: Callable[[Node], str]
    declared: Callable[[Node], Iterable[str]]
    stack: Callable[[Node], "str | None"]


def default_targets(model: Holdings) -> list[str]:
    """The default targets of a model: its declared unsplittable classes that it holds, outermost only."""
    order = _breadth_first(model, stop=frozenset())
    held = {model.name(n) for n in order}
    declared = {d for n in order for d in model.declared(n)}
    targets = declared & held
    if not targets:
        stacks = [s for s in map(model.stack, order) if s is not None]
        targets = set(stacks[:1])
    reached = _breadth_first(model, stop=frozenset(targets))
    return sorted(targets & {model.name(n) for n in reached})


def _breadth_first(model: Holdings, stop: frozenset[str]) -> list:
    """Every node reachable from the root, breadth-first; a node named in `stop` is reached, not entered."""
    order, seen, queue = [], {model.root}, deque([model.root])
    while queue:
        node = queue.popleft()
        order.append(node)
        if model.name(node) in stop:
            continue
        for child in model.children(node):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return order


@dataclass(frozen=True)
class _Stack:
    """A container attribute of a class read from source: the value of its elements."""

    elem: Value


def source_holdings(resolver, root: ClassRef) -> Holdings:
    """The classes a root class may hold, as the resolver reads them from source (containers as stacks)."""

    def children(node: ClassRef | _Stack) -> list[ClassRef | _Stack]:
        if isinstance(node, _Stack):
            return _held(node.elem)
        if resolver.is_external(node.module):
            return []
        return [child for attr in sorted(resolver.attribute_names(node)) for child in _held(resolver.attribute(node, attr))]

    def name(node: ClassRef | _Stack) -> str:
        return "ModuleList" if isinstance(node, _Stack) else node.name.rpartition(".")[2]

    def declared(node: ClassRef | _Stack) -> list[str]:
        return [] if isinstance(node, _Stack) or resolver.is_external(node.module) else no_split_modules(resolver, node)

    def stack(node: ClassRef | _Stack) -> str | None:
        if not isinstance(node, _Stack):
            return None
        elems = _held(node.elem)
        return name(elems[0]) if len(elems) == 1 and isinstance(elems[0], ClassRef) else None

    return Holdings(root, children, name, declared, stack)


def _held(value: Value) -> list[ClassRef | _Stack]:
    """The modules a value may be, in a stable order: instances by class, containers as stacks."""
    classes = sorted({a.cls for a in value if isinstance(a, Instance)}, key=_class_key)
    stacks = sorted({_Stack(a.elem) for a in value if isinstance(a, Container)},
                    key=lambda s: sorted(_class_key(a.cls) for a in s.elem if isinstance(a, Instance)))
    return [*classes, *stacks]


def _class_key(cls: ClassRef) -> tuple[str, str]:
    return cls.module, cls.name
