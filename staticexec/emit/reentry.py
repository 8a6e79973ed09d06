"""Stage 5, emit: a `with` item that is an object made before (`with ctx:`, `with self.amp_ctx:`), which each
subgraph of the body enters again (the `_sx.reentered` the emitted code calls).

Python enters the object once, where the `with` starts. Each subgraph of the body enters it again, which is
exact only for a manager that sets a mode when entered, from what it was made with, and sets the old one back
when left: `REENTERABLE` names those of torch and the standard library. A manager of another class (one that
sets its mode when it is made, as `torch.set_grad_enabled(False)`; a generator's; one of the model's own,
which may count its entries) is refused when emission finds it, and stops the run where it is entered otherwise.

The body may also change the object after it was entered (`ctx._enabled = True`): that changes nothing in
Python, where the mode is set already, but a later subgraph would enter the changed object. So the first entry
records the object's attributes as its `__enter__` left them (`EnteredState`, made where the `with` starts and
given on to later subgraphs with the other values), and each later entry checks that those the `__enter__` did
not write (what the manager was made with, not the mode it saved to set back) still hold the same values.
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
    """What the first entry of a `with` item left in its manager's attributes (None before it)."""

    __slots__ = ("after", "written")

    def __init__(self) -> None:
        self.after: dict | None = None  # the manager's attributes after its first `__enter__`
        self.written: frozenset = frozenset()  # those that `__enter__` set or changed


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
        attrs = _attributes(manager)
        if state.after is None:
            before = dict(attrs) if attrs is not None else {}
            result = manager.__enter__()
            after = dict(attrs) if attrs is not None else {}
            state.written = frozenset(k for k, v in after.items() if before.get(k, _ABSENT) is not v)
            state.after = after
            return result
        changed = _changed(state, attrs)
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
        if current is not value and not (type(current) is type(value) and _atom(value) and current == value):
            return key
    return None


def _atom(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _attributes(obj: Any) -> dict | None:
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


REENTERABLE = ("contextlib.nullcontext", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
               "torch.autocast", "torch.cpu.amp.autocast", "torch.cuda.amp.autocast", "torch.device",
               "torch.cuda.device")
"""The classes of the managers entered again exactly (`torch.set_grad_enabled` is not one: it sets its mode when
made, and only sets the old one back when left)."""


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
