"""Stage 5, emit: a `with` item that is a manager made before (`ctx = torch.autocast(...)`, then `with ctx:`),
which each subgraph of the body enters again (the `_sx.reentered` the emitted code calls).

Python enters the object once, where the `with` starts. Each subgraph of the body enters it again, which is
exact only for a manager that sets a mode when entered, from what it was made with, and sets the one it saved
back when left: `REENTERABLE` names those of torch and the standard library. The analysis admits a name item by
the calls it is bound to (by their names); a manager of another class (a generator's; one of the model's own,
which may count its entries) stops the run where a subgraph enters it.

The body may also change the object after it was entered (`ctx._enabled = True`): that changes nothing in
Python, where the mode is set already, but a later subgraph would enter the changed object. So the first entry
records the manager's class and the plain values (bools, numbers, strings, dtypes, devices: what these managers
set their mode from) its attributes hold as its `__enter__` left them (`EnteredState`, made where the `with`
starts and given on to later subgraphs with the other values); each later entry checks that the class is the
same and that those values its `__enter__` did not write are the same still. Other attributes (the object a
`nullcontext` gives for `as`, which the emitter refuses) set no mode, and a subgraph may be given copies of them.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from staticexec.emit.checks import CHECKS

_ABSENT = object()


class ManagerMismatch(RuntimeError):
    """A `with` item entered again by a later subgraph is not the manager the `with` entered."""


class EnteredState:
    """What the first entry of a `with` item left in its manager (None before it)."""

    __slots__ = ("after", "written", "cls")

    def __init__(self) -> None:
        self.after: dict | None = None  # the manager's attributes that hold plain values, after its first `__enter__`
        self.written: frozenset = frozenset()  # those that `__enter__` set or changed
        self.cls: type | None = None  # the manager's class then


class reentered:
    """The manager a `with` item gives, entered by a subgraph of the body: checked to be of a class that is
    entered again exactly, and, after the first entry, to hold what it held then."""

    __slots__ = ("manager", "state", "where", "shown")

    def __init__(self, manager: Any, state: EnteredState, where: str, shown: str) -> None:
        self.manager, self.state, self.where, self.shown = manager, state, where, shown

    def __enter__(self) -> Any:
        manager, state = self.manager, self.state
        if not CHECKS.get():
            return manager.__enter__()
        why = not_reenterable(manager, self.shown)
        if why:
            raise ManagerMismatch(f"{self.where}: {why}")
        attrs = own_attributes(manager)
        if state.after is None:
            before = dict(attrs) if attrs is not None else {}
            result = manager.__enter__()
            after = {k: v for k, v in attrs.items() if _plain(v)} if attrs is not None else {}
            state.written = frozenset(k for k, v in after.items() if before.get(k, _ABSENT) is not v)
            state.after, state.cls = after, type(manager)
            return result
        changed = "__class__" if type(manager) is not state.cls else _changed(state, attrs)
        if changed:
            raise ManagerMismatch(
                f"{self.where}: the attribute `{changed}` of the `with` item `{self.shown}` (of class "
                f"{type(manager).__qualname__}) changed after the `with` entered it: Python enters the manager once, "
                "where the `with` starts, but each subgraph of its body enters it again, and this one would enter it "
                "as changed")
        return manager.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self.manager.__exit__(*exc)


def _changed(state: EnteredState, attrs: dict | None) -> str | None:
    """The first attribute the manager was entered with (not one its `__enter__` writes) that holds another value
    now, or is gone; None when none."""
    now = attrs if attrs is not None else {}
    for key, value in state.after.items():
        if key in state.written:
            continue
        current = now.get(key, _ABSENT)
        if current is not value and not (type(current) is type(value) and current == value):
            return key
    return None


def _plain(value: Any) -> bool:
    """A value these managers set their mode from: compared by equality."""
    return isinstance(value, _plain_types())


@functools.lru_cache(maxsize=1)
def _plain_types() -> tuple:
    import torch

    return type(None), bool, int, float, str, torch.dtype, torch.device


def own_attributes(obj: Any) -> dict | None:
    """An object's own attribute dict, read past any `__getattribute__` of its class (a config's); None if it has none."""
    try:
        return object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return None


def not_reenterable(manager: Any, shown: str) -> str | None:
    """Why a `with` item's manager (`shown` its code) can't be entered again by each subgraph of the body; None
    when it can."""
    if type(manager) in _reenterable():
        return None
    return (f"the `with` item `{shown}` is of class {type(manager).__qualname__}, and each subgraph of the `with` "
            "body enters it again; only the context managers known to set a mode from what they were made with when "
            "entered, and set it back when left (grad, inference mode, autocast, the default device, none), are "
            "entered again exactly")


REENTERABLE = ("contextlib.nullcontext", "torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled",
               "torch.inference_mode", "torch.autocast", "torch.cpu.amp.autocast", "torch.cuda.amp.autocast",
               "torch.device", "torch.cuda.device")
"""The classes of the managers entered again exactly: each sets its mode when entered from what it was made with
(`torch.set_grad_enabled` sets it when made too, and sets back the mode it found then), and sets back a saved one
when left."""


@functools.lru_cache(maxsize=1)
def _reenterable() -> frozenset:
    return frozenset(objects_at(REENTERABLE))


def objects_at(paths: tuple[str, ...]) -> list:
    """The objects at these dotted paths (`torch.no_grad`), those the installed packages have."""
    found = []
    for path in paths:
        module, _, name = path.rpartition(".")
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return found
