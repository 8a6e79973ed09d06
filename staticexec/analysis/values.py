"""The abstract values the resolver computes for expressions.

A value is a frozenset of atoms (a union): each atom is one thing the
expression may evaluate to. Only what matters for finding target calls is
distinguished: module instances, containers of modules, functions, classes,
short strings (attribute names such as `base_model_prefix`), tuples (for
`zip` / `enumerate` items), data that can hold no module, and the unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from staticexec.analysis.source import ClassRef, FunctionRef


@dataclass(frozen=True)
class Instance:
    """An instance of a class (a module, usually)."""

    cls: ClassRef


@dataclass(frozen=True)
class Container:
    """A ModuleList / Sequential / ModuleDict / list of modules: indexing or iterating gives `elem`."""

    elem: "Value"


@dataclass(frozen=True)
class Function:
    """A function, or a method bound to `self` of the given classes."""

    ref: FunctionRef
    bound: "Value | None" = None


@dataclass(frozen=True)
class ClassObject:
    """A class itself, before it is called."""

    cls: ClassRef


@dataclass(frozen=True)
class Constant:
    """A literal string, number, bool or None."""

    value: object


@dataclass(frozen=True)
class Items:
    """A tuple of values, e.g. one item of `zip(...)` or `enumerate(...)`."""

    items: tuple["Value", ...]


@dataclass(frozen=True)
class Mapping:
    """A dict literal: lookups give any of its values."""

    values: "Value"


@dataclass(frozen=True)
class Data:
    """A value that holds no module (tensors, config values, numbers)."""


@dataclass(frozen=True)
class Unknown:
    """The resolver could not tell; `reason` says why, `line` where."""

    reason: str
    line: int = 0


@dataclass(frozen=True)
class ConfigRef:
    """A config object the resolver holds (the root config or a sub-config), by its access path."""

    path: str


Atom = Union[Instance, Container, Function, ClassObject, Constant, Items, Mapping, Data, Unknown, ConfigRef]
Value = frozenset  # frozenset[Atom]

DATA: Value = frozenset({Data()})
EMPTY: Value = frozenset()


def one(atom: Atom) -> Value:
    """The value of a single atom."""
    return frozenset({atom})


def join(*values: Value) -> Value:
    """The union of values."""
    out: set = set()
    for v in values:
        out |= v
    return frozenset(out)


def unknown(reason: str, line: int = 0) -> Value:
    """The unknown value, with why it is unknown and where."""
    return one(Unknown(reason, line))


def instances(value: Value) -> set[ClassRef]:
    """The classes of the module instances a value may be."""
    return {a.cls for a in value if isinstance(a, Instance)}


def may_hold_module(value: Value) -> bool:
    """Whether a value may be (or contain) a module instance: anything but data, constants, classes and configs."""
    return any(not isinstance(a, (Data, Constant, ClassObject, ConfigRef)) for a in value)
