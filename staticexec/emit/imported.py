"""The analysed source is the running source: compare each planned function with the imported code.

The analysis reads files from disk; the model runs what Python imported. When a file changed after
its module was imported (an edit during a session, a reinstall under a running process), the plan
describes code that is not running. Each planned function is compiled from the file as it is now
and compared with the imported function's code object (bytecode, names and constants, line
numbers aside); any difference is refused with the function's file and line.

It runs before emit, with the instance checks of instance.py (`check_instance`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from functools import lru_cache
from typing import Any

from staticexec.messages import Message, StaleSource
from staticexec.analysis.plan import Plan
from staticexec.analysis.source import FunctionRef


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
