"""Class decorators that wrap a method: what a plan's `class_decorators` stand for when subgraphs are emitted.

A class decorator can replace a method with a wrapper around it when the class is made: kernels'
`use_kernelized_func` wraps `forward` so that, for the length of the call, calls of kernel functions go to
the instance's own. The analysis records such decorators of a method's class (analysis/decorators.py,
`CLASS_WRAPPERS`). Here each one is checked against the class's source as it is now, evaluated as the module
did on import, and made into a function decorator (`runtime.method_wrapper`), which the emitter runs in
parts as it runs the method's own wrapper decorators, outside them. One that leaves the method as it is
(kernels not installed: transformers' fallback returns the class unchanged) is left out.
"""

from __future__ import annotations

from typing import Any, Callable

from staticexec.analysis.decorators import class_wrapper_names
from staticexec.analysis.plan import Function
from staticexec.analysis.source import FunctionRef, load_module
from staticexec.emit import runtime
from staticexec.messages import DecoratorMismatch, Refused


def class_wrappers(planned: Function, module_globals: dict) -> list[tuple[str, Callable]]:
    """(expression, function decorator) for each of the plan's class decorators that wraps the method,
    outermost first. The class's source must have the decorators the plan has, no more and no fewer."""
    ref = FunctionRef.parse(planned.function)
    owner = ref.owner
    if owner is None:
        return []
    sf = load_module(ref.module)
    node = sf.find_class(owner.name) if sf is not None else None
    now = [name for name, _ in class_wrapper_names(node, ref.name)] if node is not None else []
    where = (planned.path, planned.lines[0])
    if now != list(planned.class_decorators):
        have = ", ".join(f"@{d}" for d in planned.class_decorators) or "none"
        has = ", ".join(f"@{d}" for d in now) or "none"
        raise Refused([DecoratorMismatch(*where, f"the plan has {have} on the class of {ref.qualname} where its "
                                                 f"source now has {has}: make the plan again")])
    out = []
    for expression in planned.class_decorators:
        try:
            as_function = runtime.method_wrapper(decorator_object(expression, planned.path, module_globals), ref.name)
            wraps = as_function(_bare) is not _bare
        except Exception as exc:
            raise Refused([DecoratorMismatch(*where, f"@{expression} on the class of {ref.qualname} could not be "
                                                     f"applied again: {type(exc).__name__}: {exc}")]) from exc
        if wraps:
            out.append((expression, as_function))
    return out


def decorator_object(expression: str, path: str, module_globals: dict) -> Any:
    """A decorator's expression evaluated in its module's namespace, as the module did on import."""
    return eval(compile(expression, path, "eval"), module_globals)  # noqa: S307


def _bare(*args: Any, **kwargs: Any) -> None:
    """A method to apply a class decorator to, to see whether it wraps it."""
