"""Whether any module gained a submodule since a given moment.

A subgraph's first run records every module it enters, and the target check asks of each one of a
target class whether it was armed with a tripwire (run.py). A target module added later and run
there by opaque code (a hook, a helper the analysis left as it is) would go unseen by later runs,
which enter only tripwires. torch calls its global module registration hooks whenever a module is
registered under another (`setattr`, `add_module`, `register_module`, a `ModuleList` appended to),
so a counter advanced by such a hook tells a subgraph when to record its run again. A submodule
written straight into another module's `_modules` dict passes no hook and is not counted.
"""

from __future__ import annotations

import functools
from typing import Any


class Registrations:
    """The number of submodules registered anywhere in the process since the counter was installed."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, module: Any, name: str, submodule: Any) -> None:
        self.count += 1  # returns None: the submodule is registered as it is


@functools.lru_cache(maxsize=None)
def registrations() -> Registrations:
    """The process's counter, installed as a global module registration hook on first use."""
    from torch.nn.modules.module import register_module_module_registration_hook

    counter = Registrations()
    register_module_module_registration_hook(counter)
    return counter
