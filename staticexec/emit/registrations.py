"""Whether a target module may have come into being since a given moment.

A subgraph's first run records every module it enters, and the target check asks of each one of a
target class whether it was armed with a tripwire (run.py). A target module made later and run there
by opaque code (a hook, a helper the analysis left as it is) would go unseen by later runs, which
enter only tripwires. torch calls its global registration hooks whenever a module is registered
under another (`setattr`, `add_module`, `register_module`, a `ModuleList` appended to), and whenever
a module registers a parameter or a buffer; a module registers its submodules, parameters and
buffers as it is made. So a target module comes into being through such a hook wherever it is kept
afterwards (a plain list, or written straight into another module's `_modules`), as long as it has
a submodule, a parameter or a buffer of its own. A counter, advanced by these hooks when the module
(or, for a registered module, the one it is registered under) is of a class some chain targets and
carries no tripwire, tells a subgraph when to record its run again. Registrations of armed modules
(a `ModuleList` sliced in a forward registers its layers anew, a quantizer adds parameters to its
target) and of modules of other classes leave it as it is.

Not seen: a target module with no submodules, parameters or buffers of its own that is never
registered under another module (kept in a plain list), or that is written straight into a module's
`_modules` dict.
"""

from __future__ import annotations

import functools
from typing import Any

from staticexec.emit.runtime import has_tripwire

_KINDS_KEPT = 4096  # classes whose answer is kept; a program that makes classes without end starts again


class Registrations:
    """The registrations, since the counter was installed, that involved a module of a watched class
    without a tripwire."""

    __slots__ = ("count", "classes", "_kinds")

    def __init__(self) -> None:
        self.count = 0
        self.classes: frozenset = frozenset()  # the target class names of every chain armed in the process
        self._kinds: dict = {}  # class -> whether a class of its MRO is among them

    def watch(self, classes: frozenset) -> None:
        """Count registrations of modules of these classes (or subclasses) too."""
        if not classes <= self.classes:
            self.classes = self.classes | classes
            self._kinds.clear()

    def module_registered(self, module: Any, name: str, submodule: Any) -> None:
        """`submodule` registered under `module` (as `module` is made, or later)."""
        if self._unarmed(submodule) or self._unarmed(module):
            self.count += 1  # returns None: the submodule is registered as it is

    def tensor_registered(self, module: Any, name: str, tensor: Any) -> None:
        """A parameter or buffer registered on `module` (as it is made, or later)."""
        if self._unarmed(module):
            self.count += 1  # returns None: the tensor is registered as it is

    def _unarmed(self, module: Any) -> bool:
        cls = type(module)
        watched = self._kinds.get(cls)
        if watched is None:
            if len(self._kinds) >= _KINDS_KEPT:
                self._kinds.clear()
            watched = self._kinds[cls] = any(c.__name__ in self.classes for c in cls.__mro__)
        return watched and not has_tripwire(module)


@functools.lru_cache(maxsize=None)
def registrations() -> Registrations:
    """The process's counter, installed as global module, parameter and buffer registration hooks on first use."""
    from torch.nn.modules.module import (register_module_buffer_registration_hook,
                                         register_module_module_registration_hook,
                                         register_module_parameter_registration_hook)

    counter = Registrations()
    register_module_module_registration_hook(counter.module_registered)
    register_module_parameter_registration_hook(counter.tensor_registered)
    register_module_buffer_registration_hook(counter.tensor_registered)
    return counter
