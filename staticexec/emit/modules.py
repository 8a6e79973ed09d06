"""The model's module tree as emission reads it: listed once per emission, not once per question.

Emission asks the tree several things (which modules the targets select, which forwards are
inlined, which hooks they carry, where the outermost targets are). Each walk of
`named_modules()` costs the same as the others, thousands of modules for a deep model, so
within `one_listing(model)` (one `subgraphs()` call) they share one list. Outside it, each
call walks the tree afresh.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_LISTING: contextvars.ContextVar = contextvars.ContextVar("staticexec_module_listing", default=None)


def named_modules(model: Any) -> list[tuple[str, Any]]:
    """`model.named_modules()` as a list: the one taken by the enclosing `one_listing(model)`, if any."""
    held = _LISTING.get()
    if held is not None and held[0] is model:
        return held[1]
    return list(model.named_modules())


@contextmanager
def one_listing(model: Any) -> Iterator[None]:
    """Within it, `named_modules(model)` gives one list, taken on entry."""
    if not callable(getattr(model, "named_modules", None)):  # not a module: the checks of the call say so
        yield
        return
    token = _LISTING.set((model, list(model.named_modules())))
    try:
        yield
    finally:
        _LISTING.reset(token)


def outermost(listing: list[tuple[str, Any]], is_target: Callable[[Any], bool]) -> list[tuple[str, Any]]:
    """The modules for which `is_target` holds that are not inside another such module, in tree order.

    `listing` is in `named_modules()` order, which lists the modules below one right after it."""
    out: list[tuple[str, Any]] = []
    below = None  # the name prefix of the modules inside the last one found
    for name, module in listing:
        if below is not None and name.startswith(below):
            continue
        below = None
        if is_target(module):
            out.append((name, module))
            if name:
                below = name + "."
    return out
