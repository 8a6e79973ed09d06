"""One list, dict or dataclass reached twice where a subgraph ends travels held, as one object.

llm-compressor's cache keeps each value it holds on its own and rebuilds every list, tuple, dict and
dataclass in it as it stores and fetches the value. An object that two names (or two places in the values
a subgraph gives on) held as one when the subgraph ended would be two objects in the subgraphs after it: a
change made through one would not show through the other, where the model's own forward changes one object.

So a subgraph looks, after each run, at the values later subgraphs read from the cache: what it gives on,
and the inputs it leaves there (those it does not consume). When a list, dict or dataclass instance that can
be changed is reached twice among them, every value that reaches it is given on inside a `Held`: an object
the cache keeps as it is (it rebuilds only containers and dataclasses), so the later subgraph that takes
those values unwraps them and finds one object again, as the forward has it. Tuples and frozen dataclasses
are looked into but not counted (nothing can be changed through them). The values that carry a forward
wrapper between subgraphs (`WrapperState`, `WrapperScope`) are made to travel as they do and are not looked
into.

Tensors keep their identity through the cache only on the device they are on: a cache that offloads to
another device moves each value back on its own, and two names for one tensor come back as two tensors.
That changes what the forward computes only where a later subgraph writes a tensor in place and reads it,
or another name for it, after (`alias.mul_(3); return extra + alias`). So the tensors reached by the names
such a subgraph takes (`keeps_identity`, set on each subgraph for the chain after it) are counted too, by
the memory they use (a view counts as its base), and travel held where two of those names reach the same.

A held value is not moved to the cache's offload device: its tensors stay where the subgraph left them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from staticexec.emit.heldstate import memory_of
from staticexec.emit.runtime import WrapperScope, WrapperState


class Held:
    """A value given on as it is: the pipeline's cache keeps an object of a class of its own without rebuilding
    it, so the values held together keep the objects they share."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_LEAF, _LOOKED_INTO, _COUNTED = 0, 1, 2
_SHAPES_KEPT = 4096  # types whose shape is kept; a program that makes types without end starts the dict again


class _Shapes(dict):
    """How the check treats values of each exact type, decided at its first value: counted (a list, a dict, a
    dataclass one can change), looked into only (a tuple, a frozen dataclass), or neither."""

    def __missing__(self, cls: type) -> int:
        if cls in (WrapperState, WrapperScope):
            shape = _LEAF
        elif cls is Held:
            shape = _LOOKED_INTO
        elif issubclass(cls, (list, dict)):
            shape = _COUNTED
        elif issubclass(cls, tuple):
            shape = _LOOKED_INTO
        elif dataclasses.is_dataclass(cls):
            shape = _LOOKED_INTO if cls.__dataclass_params__.frozen else _COUNTED
        else:
            shape = _LEAF
        if len(self) >= _SHAPES_KEPT:
            self.clear()
        self[cls] = shape
        return shape


_shape = _Shapes().__getitem__


def _walk(value: Any, name: str, seen: dict, twice: set[str], tensors: bool = False) -> None:
    """Record each counted object under `value` with the name whose value reaches it (with `tensors`, each
    tensor too, by its memory); a name whose value reaches one recorded before goes into `twice`, with the
    name that reached it first."""
    shape = _shape(type(value))
    if shape == _LEAF:
        if tensors and isinstance(value, _tensor()):
            memory = memory_of(value)
            if memory:
                _count(("memory", memory), value, name, seen, twice)
        return
    if shape == _COUNTED and not _count(id(value), value, name, seen, twice):
        return
    for item in _items(value):
        _walk(item, name, seen, twice, tensors)


def _count(key: Any, value: Any, name: str, seen: dict, twice: set[str]) -> bool:
    """Record `value` under `key` with `name`; False when a name recorded it before (both go into `twice`)."""
    first = seen.get(key)
    if first is not None:
        twice.update((first[0], name))
        return False
    seen[key] = (name, value)  # the object kept alive with it: ids are not reused while it runs
    return True


@functools.lru_cache(maxsize=1)
def _tensor() -> type:
    import torch

    return torch.Tensor


def _items(value: Any) -> Any:
    """The items of a value the walk looks into: a held value's value, a container's items, a dataclass's fields."""
    if type(value) is Held:
        return (value.value,)
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, (list, tuple)):
        return value
    return [getattr(value, f.name) for f in dataclasses.fields(value)]


def shared_names(given_on: dict[str, Any], inputs: dict[str, Any], consumed: set[str],
                 keeps_identity: frozenset = frozenset()) -> set[str]:
    """The names whose values reach a list, dict or dataclass that some other name, or another place in the
    same value, also reaches: among the values a subgraph gives on (`given_on`) and the inputs it was given
    that stay in the cache for later ones (those not in `consumed`, nor given on in their place). Among the
    names in `keeps_identity`, tensors count too."""
    seen: dict = {}
    twice: set[str] = set()
    for name, value in given_on.items():
        _walk(value, name, seen, twice, name in keeps_identity)
    if seen:  # else nothing it gives on can share an object with what it leaves: that is as the cache gave it
        for name, value in inputs.items():
            if name not in consumed and name not in given_on:
                _walk(value, name, seen, twice, name in keeps_identity)
    return twice


def keep_identity(chain: list) -> None:
    """Set on each subgraph of a chain the names whose tensors must come back from the cache as the objects
    they are: those a later subgraph takes that writes an input in place (it, or a name it reads after,
    may hold the tensor it writes)."""
    later: frozenset = frozenset()
    for sg in reversed(chain):
        sg.keeps_identity = later
        if sg.written_inputs:
            later = later | frozenset(sg.input_names)
