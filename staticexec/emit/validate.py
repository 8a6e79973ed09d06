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

from staticexec.emit.modules import named_modules
from staticexec.messages import InstanceMismatch, Refused, UsageError
from staticexec.analysis.plan import json_type
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
    for path, module in named_modules(model):
        for kind, own in (("parameter", module._parameters), ("buffer", module._buffers)):
            for key, tensor in own.items():
                name = f"{path}.{key}" if path else key
                if not getattr(tensor, "is_meta", False) or _offloaded(model, name):
                    continue
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


def writable_folder(path: str) -> list[str]:
    """Create an output folder, or say in one line why plans can't be written there; the folders it created,
    innermost first."""
    made = []
    at = os.path.abspath(path)
    while not os.path.exists(at) and os.path.dirname(at) != at:
        made.append(at)
        at = os.path.dirname(at)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{path}: a file, not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: can't create the output folder ({exc.strerror})") from exc
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: the output folder is not writable")
    return made


def check_index(index: Any, where: str) -> None:
    """An index.json as `staticexec plan --all` writes it: architectures -> rows with a status."""
    if not isinstance(index, dict):
        raise UsageError(f"{where}: malformed index: a JSON object is expected, not a {json_type(index)}")
    rows = index.get("architectures")
    if not isinstance(rows, dict):
        raise UsageError(f"{where}: malformed index: `architectures` is {'missing' if rows is None else 'a ' + json_type(rows)}, "
                         "not an object of architecture -> row")
    for arch, row in sorted(rows.items()):
        if not isinstance(row, dict):
            raise UsageError(f"{where}: malformed index: the row of {arch} is a {json_type(row)}, not an object")
        if not isinstance(row.get("status"), str):
            raise UsageError(f"{where}: malformed index: the row of {arch} has no status")
