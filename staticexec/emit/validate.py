"""Check what a caller passes to `staticexec.subgraphs` before any analysis: one-line `UsageError`s.

A sample that is not a mapping, targets given as one string or as an empty list, a sample key the
root forward does not take, a model whose weights are on the `meta` device: each would otherwise
surface as a traceback deep in the emitter, or as subgraphs for a call the model itself rejects.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

from staticexec.messages import InstanceMismatch, Refused, UsageError
from staticexec.analysis.source import location


def check_call(model: Any, sample_input: Any, sequential_targets: Any) -> None:
    """Everything `subgraphs(model, sample_input, sequential_targets)` needs of its arguments."""
    check_targets(sequential_targets)
    check_module(model)
    check_sample(model, sample_input)
    check_device(model)


def check_module(model: Any) -> None:
    """An nn.Module of the model's own class (not a torch.compile wrapper)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"the model is a {type(model).__name__}, not a torch.nn.Module")
    original = getattr(model, "_orig_mod", None)
    if isinstance(original, torch.nn.Module):
        raise UsageError(f"the model is wrapped by torch.compile ({type(model).__name__}); pass the original "
                         f"{type(original).__name__} (model._orig_mod) to split it")


def check_sample(model: Any, sample_input: Any) -> None:
    """Raise a UsageError unless the sample is a mapping of argument names the root forward takes."""
    if not isinstance(sample_input, Mapping):
        raise UsageError(f"the sample input is a {type(sample_input).__name__}, not a mapping of "
                         f"{type(model).__name__}.forward's argument names to values (e.g. {{'input_ids': ids}})")
    bad = [k for k in sample_input if not isinstance(k, str)]
    if bad:
        raise UsageError(f"the sample input's keys must be argument names; {bad[0]!r} is a {type(bad[0]).__name__}")
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # no signature to check against
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = sorted(set(sample_input) - named)
    if unknown:
        raise UsageError(f"{type(model).__name__}.forward ({_where(type(model).forward)}) takes no argument "
                         f"{', '.join(map(repr, unknown))}; it takes {', '.join(sorted(named)) or 'none by name'}")


def check_targets(sequential_targets: Any) -> None:
    """None means the model's own defaults; otherwise a non-empty list of class names, module names
    or `re:` patterns (staticexec.emit.targets)."""
    if sequential_targets is None:
        return
    if isinstance(sequential_targets, str):
        raise UsageError(f"sequential_targets is the string {sequential_targets!r}; pass a list of class names, "
                         f"e.g. [{sequential_targets!r}]")
    if not isinstance(sequential_targets, (list, tuple, set, frozenset)):
        raise UsageError(f"sequential_targets is a {type(sequential_targets).__name__}; pass a list of class names")
    if not sequential_targets:
        raise UsageError("sequential_targets is empty; pass the class names of the layers to split at "
                         "(or None for the model's defaults)")
    bad = [t for t in sequential_targets if not isinstance(t, str) or not t]
    if bad:
        raise UsageError(f"sequential_targets holds {bad[0]!r}; each target is a class name, module name or `re:` pattern")


def check_device(model: Any) -> None:
    """No weights on `meta`, except those an accelerate hook loads when its module is called."""
    for kind, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, tensor in items:
            if getattr(tensor, "device", None) is not None and tensor.device.type == "meta" and not _offloaded(model, name):
                raise UsageError(f"the model's {kind} {name} is on the meta device (no weights are loaded); "
                                 "load or materialise the model before splitting it")


def _offloaded(model: Any, name: str) -> bool:
    owner = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
    hook = getattr(owner, "_hf_hook", None)
    hooks = getattr(hook, "hooks", None) or ([hook] if hook is not None else [])
    return any(getattr(h, "offload", False) and getattr(h, "weights_map", None) is not None for h in hooks)


def check_plan_is_for(plan_root_class: str, model: Any) -> None:
    """The plan's root class is the model's class; names are module-qualified when the short names coincide."""
    module, _, name = plan_root_class.partition(":")
    cls = type(model)
    if (module, name) == (cls.__module__, cls.__qualname__):
        return
    ours = f"{cls.__module__}:{cls.__qualname__}"
    if name.rpartition(".")[2] != cls.__qualname__.rpartition(".")[2]:
        theirs, ours = name, cls.__qualname__
    else:
        theirs = plan_root_class
    path, line = _where(cls).rsplit(":", 1) if ":" in _where(cls) else ("", "0")
    raise Refused([InstanceMismatch(path, int(line), f"the plan is for {theirs}, the model is {ours}")])


def _where(obj: Any) -> str:
    """`path:line` of a class or function's source, relative to the working folder when below it."""
    path, line = location(obj)
    return f"{path}:{line}" if line else path


def relative(path: str) -> str:
    """A path relative to the working folder when it lies below it; else the path as given."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def writable_folder(path: str) -> None:
    """Create an output folder, or say in one line why plans can't be written there."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: can't create the output folder ({exc.strerror})") from exc
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: the output folder is not writable")


def check_index(index: Any, where: str) -> None:
    """An index.json as `staticexec plan --all` writes it: architectures -> rows with a status."""
    if not isinstance(index, dict):
        raise UsageError(f"{where}: malformed index: a JSON object is expected, not a {_json_type(index)}")
    rows = index.get("architectures")
    if not isinstance(rows, dict):
        raise UsageError(f"{where}: malformed index: `architectures` is {'missing' if rows is None else 'a ' + _json_type(rows)}, "
                         "not an object of architecture -> row")
    for arch, row in sorted(rows.items()):
        if not isinstance(row, dict):
            raise UsageError(f"{where}: malformed index: the row of {arch} is a {_json_type(row)}, not an object")
        if not isinstance(row.get("status"), str):
            raise UsageError(f"{where}: malformed index: the row of {arch} has no status")


PLAN_KINDS = ("target", "ancestor", "control", "opaque")
CONTROL_STATEMENTS = ("if", "for", "while", "with", "try", "exit")


def plan_problem(doc: Any) -> str:
    """'' for a plan document every consumer can read; else the first malformed field, in words."""
    if not isinstance(doc, dict):
        return f"a plan is a JSON object, not a {_json_type(doc)}"
    missing = [k for k in ("schema", "architecture", "root", "targets", "functions") if k not in doc]
    if missing:
        return f"not a plan (missing {', '.join(missing)})"
    for key, kind in (("architecture", str), ("root", str), ("targets", dict), ("functions", dict)):
        if not isinstance(doc[key], kind):
            return f"`{key}` is a {_json_type(doc[key])}, not {'a string' if kind is str else 'an object'}"
    for key in ("model_types", "unresolved", "not_analysed"):
        if key in doc and not isinstance(doc[key], list):
            return f"`{key}` is a {_json_type(doc[key])}, not a list"
    if not all(isinstance(v, str) for v in doc["targets"].values()):
        return "`targets` maps class names to `module:Class` strings"
    if doc["root"] not in doc["functions"]:
        return f"the root {doc['root']} has no entry in `functions`"
    for node, entry in doc["functions"].items():
        problem = _function_problem(entry)
        if problem:
            return f"function {node}: {problem}"
    return ""


def _function_problem(entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"a {_json_type(entry)}, not an object"
    for key, kind in (("function", str), ("path", str), ("source_hash", str), ("lines", list), ("params", list),
                      ("statements", list)):
        if key not in entry:
            return f"no `{key}`"
        if not isinstance(entry[key], kind):
            return f"`{key}` is a {_json_type(entry[key])}"
    if "self_class" not in entry:
        return "no `self_class`"
    if entry["self_class"] is not None and not isinstance(entry["self_class"], str):
        return "`self_class` is not a string"
    if not isinstance(entry.get("decorators", []), list):
        return "`decorators` is not a list"
    return _statements_problem(entry["statements"])


def _statements_problem(statements: list, depth: int = 0) -> str:
    if depth > 50:
        return "statements nest too deep"
    for s in statements:
        if not isinstance(s, dict):
            return f"a statement is a {_json_type(s)}, not an object"
        kind, lines = s.get("kind"), s.get("lines")
        if kind not in PLAN_KINDS:
            return f"a statement of kind {kind!r} (expected one of {', '.join(PLAN_KINDS)})"
        if not (isinstance(lines, list) and len(lines) == 2 and all(isinstance(n, int) and n > 0 for n in lines)):
            return f"a {kind} statement without `lines` [first, last]"
        where = f"the {kind} statement at line {lines[0]}"
        if kind == "opaque" and not isinstance(s.get("count"), int):
            return f"{where} has no `count`"
        if kind in ("target", "ancestor"):
            call = s.get("call")
            if not isinstance(call, dict) or not isinstance(call.get("line"), int) or not isinstance(call.get("code"), str):
                return f"{where} has no `call` with a line and code"
            if kind == "target" and not isinstance(call.get("targets"), list):
                return f"{where} names no `targets`"
            if kind == "ancestor" and not isinstance(call.get("callees"), list):
                return f"{where} names no `callees`"
        if kind == "control":
            if s.get("statement") not in CONTROL_STATEMENTS:
                return f"{where} has `statement` {s.get('statement')!r}"
            if s["statement"] == "if" and not (isinstance(s.get("condition"), dict) and "code" in s["condition"]):
                return f"{where} has no `condition`"
            if s["statement"] != "exit" and not isinstance(s.get("body"), list):
                return f"{where} has no `body`"
            for block in ("body", "orelse", "handler", "finally"):
                if block in s:
                    if not isinstance(s[block], list):
                        return f"{where}: `{block}` is a {_json_type(s[block])}"
                    problem = _statements_problem(s[block], depth + 1)
                    if problem:
                        return problem
    return ""


def _json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)
