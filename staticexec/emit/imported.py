"""The analysed source is the running source: compare each planned function with the imported code.

The analysis reads files from disk; the model runs what Python imported. When a file changed after
its module was imported (an edit during a session, a reinstall under a running process), the plan
describes code that is not running. Each planned function is compiled from the file as it is now
and compared with the imported function's code object (bytecode, names and constants, line
numbers aside); any difference is refused with the function's file and line.

It runs before emit, with the instance checks of instance.py (`check_instance`).

The same comparison answers a second question while emitting: is the function that will run the one
analysed? A class's `forward` can be replaced after the class was defined (`Model.forward =
scaled(Model.forward)`, a class decorator, a patch on an ancestor); `functools.wraps` gives the
replacement the original's name, so names prove nothing. `running_code_refusal` looks at the code
object that runs, under exactly the wrapper decorators the source declares.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import types
from functools import lru_cache
from typing import Any

from staticexec.messages import Message, ReplacedForward, StaleSource
from staticexec.analysis.plan import Function, Plan
from staticexec.analysis.source import FunctionRef
from staticexec.emit.validate import relative


def stale_source_refusals(plan: Plan) -> list[Message]:
    """A StaleSource for each planned function whose file on disk no longer compiles to the imported code."""
    out: list[Message] = []
    for fn in plan.functions.values():
        ref = FunctionRef.parse(fn.function)
        live = _imported_function(ref)
        if live is None:
            continue
        path = getattr(sys.modules.get(ref.module), "__file__", None)
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        on_disk = _compiled(path, text).get(live.__code__.co_qualname)
        if on_disk is None or _shape(on_disk) != _shape(live.__code__):
            out.append(StaleSource(fn.path, fn.lines[0],
                                   f"{ref.qualname} in {fn.path} changed since {ref.module} was imported; "
                                   "restart Python (or reload the module) so the plan and the model agree"))
    return out


def _imported_function(ref: FunctionRef) -> types.FunctionType | None:
    module = sys.modules.get(ref.module)
    if module is None:
        try:
            module = importlib.import_module(ref.module)
        except Exception:  # not importable here: nothing runs it either
            return None
    obj: Any = module
    for part in ref.qualname.split("."):
        obj = inspect.getattr_static(obj, part, None) if not isinstance(obj, types.ModuleType) else getattr(obj, part, None)
        if obj is None:
            return None
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    obj = inspect.unwrap(obj) if callable(obj) else obj
    return obj if isinstance(obj, types.FunctionType) else None


@lru_cache(maxsize=64)
def _compiled(path: str, text: str) -> dict[str, types.CodeType]:
    """Every function's code object in a file's current text, by qualified name."""
    try:
        top = compile(text, path, "exec", dont_inherit=True)
    except SyntaxError:
        return {}
    out: dict[str, types.CodeType] = {}
    stack = [top]
    while stack:
        code = stack.pop()
        out.setdefault(code.co_qualname, code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return out


def _shape(code: types.CodeType) -> tuple:
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, consts)


def running_code_refusal(planned: Function, running: Any, layers: list, owner: Any = None) -> Message | None:
    """A ReplacedForward when `running` is not the analysed function under its declared wrappers, naming the
    file and line of the code that runs.

    `layers` holds, outermost first, the wrapper each declared wrapper decorator makes (as staticexec will
    run it): the running function must be exactly such a wrapper at each layer, each linked to the next by
    `__wrapped__`, down to the analysed code. A layer is compared by its code object, which every wrapper
    one decorator makes shares, so a different wrapper in its place (`functools.wraps` copies the names)
    is refused, not run as the declared one.

    One wrapper that no source line declares is modelled (docs/decorators.md): transformers'
    `GradientCheckpointingLayer` wraps every subclass's `forward` when the class is made, and the
    wrapper calls the forward unchanged unless the layer is training with gradient checkpointing on."""
    ref = FunctionRef.parse(planned.function)
    fn = running
    while _checkpointing_wrapper_passes_through(fn, owner):
        fn = fn.__wrapped__
    odd = None  # the first layer that is not the wrapper its decorator makes
    for made in layers:
        if fn is None:
            break
        if odd is None and not _same_code(getattr(fn, "__code__", None), getattr(made, "__code__", None)):
            odd = fn
        fn = getattr(fn, "__wrapped__", None)
    code = getattr(fn, "__code__", None)
    expected = _analysed_code(ref)
    if expected is None:  # the analysed source can't be compiled here: nothing to compare with
        return None
    if odd is None and _same_code(code, expected):
        return None
    shown = odd if odd is not None else running
    where = getattr(getattr(shown, "__func__", shown), "__code__", None)
    path, line = (relative(where.co_filename), where.co_firstlineno) if where is not None else (planned.path, planned.lines[0])
    what = where.co_qualname if where is not None else getattr(shown, "__qualname__", type(shown).__name__)
    wrappers = len(layers)
    under = f" (under {wrappers} declared wrapper(s))" if wrappers else ""
    if odd is not None:
        return ReplacedForward(path, line, f"{ref.qualname} ({planned.path}:{planned.lines[0]}) is analysed{under}, "
                                           f"but a wrapper that runs is {what} defined here, not one its "
                                           "decorators make")
    return ReplacedForward(path, line, f"{ref.qualname} ({planned.path}:{planned.lines[0]}) is analysed, but the code "
                                       f"that runs is {what} defined here{under}")


def _same_code(code: types.CodeType | None, expected: types.CodeType | None) -> bool:
    """The same code: one object, or compiled alike from the same function of the same file."""
    if code is None or expected is None:
        return False
    return code is expected or (_shape(code) == _shape(expected) and code.co_qualname == expected.co_qualname
                                and _same_file(code.co_filename, expected.co_filename))


def _checkpointing_wrapper_passes_through(fn: Any, owner: Any) -> bool:
    if not hasattr(fn, "__wrapped__"):
        return False
    return _checkpointing_passes_through(fn, owner, "forward_with_checkpointing")


def _checkpointing_passes_through(fn: Any, owner: Any, qualname_end: str) -> bool:
    """Whether `fn` is code of transformers' `GradientCheckpointingLayer` (its `__call__` before transformers 5.23,
    the wrapper it puts on each subclass's forward since), which calls the forward unchanged unless `owner`
    trains with gradient checkpointing on."""
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_qualname.endswith(qualname_end):
        return False
    if not code.co_filename.replace("\\", "/").endswith("transformers/modeling_layers.py"):
        return False
    if not any(cls.__name__ == "GradientCheckpointingLayer" for cls in type(owner).__mro__):
        return False
    return not (getattr(owner, "gradient_checkpointing", False) and owner.training)


def own_call_refusal(module: Any, planned: Function) -> Message | None:
    """A ReplacedForward when calling `module` runs code of its class around the forward: a `__call__` other than
    torch's own (or `GradientCheckpointingLayer`'s while it passes the call through), or a `_call_impl` other than
    torch's, which torch's `__call__` runs. Emission inlines a module call as its forward, and would not run it."""
    import torch

    cls = type(module)
    call = cls.__call__
    if call is torch.nn.Module.__call__ or _checkpointing_passes_through(call, module, "GradientCheckpointingLayer.__call__"):
        call = cls._call_impl
        if call is torch.nn.Module._call_impl:
            return None
    code = getattr(inspect.unwrap(call), "__code__", None)  # a decorated one is shown where it is defined
    path, line = (relative(code.co_filename), code.co_firstlineno) if code is not None else (planned.path, planned.lines[0])
    what = code.co_qualname if code is not None else getattr(call, "__qualname__", repr(call))
    return ReplacedForward(path, line, f"calling a {type(module).__name__} runs {what}, defined here, around "
                                       f"{FunctionRef.parse(planned.function).qualname} ({planned.path}:{planned.lines[0]}); "
                                       "staticexec inlines the call as the forward alone and would not run it")


def _analysed_code(ref: FunctionRef) -> types.CodeType | None:
    module = sys.modules.get(ref.module)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    return _compiled(path, text).get(ref.qualname)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)
