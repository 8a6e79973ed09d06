"""What a model instance holds, for the analysis of that instance: modules put in after construction.

A tool such as llm-compressor's `linearize_moe(model)` replaces a module the source built (fused
experts, one module for all of them) with one of its own (`LinearExperts2D`, a ModuleList of one
`ExpertMLP` per expert, with a forward that calls each). The source of the model can't know; the
instance does. `staticexec.subgraphs(model, ...)` analyses the model it is given, so it gives the
resolver what the instance holds: the class at each attribute of each module class, and the classes
in each container of a class of its own. The resolver adds them to what the source says
(resolve.py), and the classes are analysed from their own source like any other. Plans made from
source alone (`staticexec plan`) have none of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from staticexec.analysis.source import ClassRef, FunctionRef


def _ref(obj: Any) -> ClassRef:
    cls = type(obj)
    return ClassRef(cls.__module__, cls.__qualname__)


_TORCH_CONTAINERS = {("torch.nn.modules.container", n) for n in ("ModuleList", "Sequential", "ModuleDict")}


@dataclass(frozen=True)
class Observed:
    """(module class, attribute name, class held there) for every child of every module of an instance,
    (container class, class of an item) for every container whose class is not one of torch's own, and
    (module class, attribute name, function, class of its self) for a method of a module stored on another
    (`expert._apply_gate = experts._apply_gate`)."""

    attributes: frozenset[tuple[ClassRef, str, ClassRef]]
    elements: frozenset[tuple[ClassRef, ClassRef]]
    methods: frozenset[tuple[ClassRef, str, FunctionRef, ClassRef]] = frozenset()

    def held(self, cls: ClassRef, attr: str) -> set[ClassRef]:
        """The classes instances of `cls` hold at `attr`."""
        return {held for owner, name, held in self.attributes if owner == cls and name == attr}

    def bound(self, cls: ClassRef, attr: str) -> set[tuple[FunctionRef, ClassRef]]:
        """The methods of modules that instances of `cls` hold at `attr`, with the class each is bound to."""
        return {(fn, self_cls) for owner, name, fn, self_cls in self.methods if owner == cls and name == attr}

    def items(self, cls: ClassRef) -> set[ClassRef]:
        """The classes of the items of containers of class `cls` (a ModuleList subclass of a tool's own)."""
        return {item for owner, item in self.elements if owner == cls}


def observe(model: Any) -> Observed:
    """The structure of an instance (an nn.Module), as class references only."""
    attributes, elements, methods = set(), set(), set()
    for module in model.modules():
        owner = _ref(module)
        for name, value in vars(module).items():
            func, held_by = getattr(value, "__func__", None), getattr(value, "__self__", None)
            if func is not None and hasattr(held_by, "_modules") and hasattr(func, "__code__"):
                methods.add((owner, name, FunctionRef(func.__module__, func.__qualname__), _ref(held_by)))
        bases = {(c.__module__, c.__qualname__) for c in type(module).__mro__}
        own = (owner.module, owner.name) not in _TORCH_CONTAINERS
        keyed = ("torch.nn.modules.container", "ModuleDict") in bases
        listed = bool(bases & _TORCH_CONTAINERS) and not keyed
        for name, child in module.named_children():
            if child is None:
                continue
            attributes.add((owner, name, _ref(child)))
            if own and (keyed or (listed and name.isdigit())):  # its items, not other attributes it holds
                elements.add((owner, _ref(child)))
    return Observed(frozenset(attributes), frozenset(elements), frozenset(methods))
