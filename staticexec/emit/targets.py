"""Sequential targets as llm-compressor names them, mapped to the classes staticexec splits at.

llm-compressor selects target modules with compressed-tensors' `match_named_modules`:
a target is a class name (matched against every class in the module's MRO), a module
name (`model.layers.0`, matched exactly) or a `re:` pattern (matched with `re.match`
against the module name). A target nested inside another selected module is never
called on its own, so the modules a run splits at are the outermost selected ones.

staticexec's analysis and emitter split at every call of a module of a target *class*.
So the selection is mapped to the exact classes of the outermost selected modules, and
that is accepted only when those classes select the same modules again: a module name
or pattern that picks some, not all, modules of a class is refused, never split wrongly.

It sits in front of the pipeline: api.py and verify map a caller's targets to the classes
the call graph ends at.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from staticexec.emit.modules import named_modules
from staticexec.messages import UsageError

__all__ = ["TargetSelection", "pipeline_targets", "select_targets"]

log = logging.getLogger("staticexec")


@dataclass(frozen=True)
class TargetSelection:
    """What a list of sequential targets selects in one model instance."""

    classes: tuple[str, ...]  # exact class names staticexec analyses and splits at
    modules: tuple[str, ...]  # the outermost selected modules, in `named_modules` order
    unmatched: tuple[str, ...]  # targets that selected no module (skipped)
    selected: tuple[str, ...] = ()  # every selected module, nested ones too: the run-time target check watches them all


def pipeline_targets(model: Any) -> list[str]:
    """The targets llm-compressor's sequential pipeline passes when the user names none.

    As its `get_no_split_params`: the model's `_get_no_split_modules("auto")` where the model has
    one, else `_no_split_modules` (in transformers 5 the root's set, which gathers its submodels').
    """
    gather = getattr(model, "_get_no_split_modules", None)
    names = gather("auto") if callable(gather) else getattr(model, "_no_split_modules", None)
    return sorted(names or [])


def select_targets(model: Any, targets: str | Iterable[str], *, warn: bool = True) -> TargetSelection:
    """Map llm-compressor targets to target classes; skip unmatched ones with one warning line.

    Raises UsageError when no target matches, or when a module name or pattern selects only
    some of the modules of a class (staticexec would split at all of them).
    """
    wanted = [targets] if isinstance(targets, str) else list(targets)
    named = [(name, module) for name, module in named_modules(model) if not _internal(module)]
    matched: list[str] = []
    hit: set[str] = set()
    for name, module in named:
        for target in wanted:
            if _match(name, module, target):
                hit.add(target)
                matched.append(name)
                break
    unmatched = tuple(t for t in wanted if t not in hit)
    root = type(model).__name__
    if not matched:
        raise UsageError(f"no module of {root} matches the sequential targets {', '.join(wanted) or '(none)'}")
    selected = _outermost(matched)
    if selected == [""]:
        raise UsageError(f"the sequential targets {', '.join(wanted)} select {root} itself; name its layers instead")
    by_name = dict(named)
    classes = sorted({type(by_name[name]).__name__ for name in selected})
    same_class = _outermost([name for name, module in named if type(module).__name__ in classes])
    if same_class != selected:
        extra = [n for n in same_class if n not in set(selected)]
        missing = [n for n in selected if n not in set(same_class)]
        example = extra[0] if extra else missing[0]
        cls = type(by_name[example]).__name__
        raise UsageError(
            f"the sequential targets select {len(selected)} modules of {root} but not {example} ({cls}); "
            f"staticexec splits at every module of a target class: target {cls} itself, or all of its modules"
        )
    if unmatched and warn:
        log.warning("staticexec: sequential targets %s match no module of %s; skipped", ", ".join(unmatched), root)
    return TargetSelection(tuple(classes), tuple(selected), unmatched, tuple(matched))


def _match(name: str, module: Any, target: str) -> bool:
    if target.startswith("re:"):
        return re.match(target[3:], name) is not None
    if target == name:
        return True
    return target in _module_class_names(type(module))


@functools.lru_cache(maxsize=4096)
def _module_class_names(cls: type) -> frozenset[str]:
    """The names of the module classes a module of this type is an instance of (its MRO, as llm-compressor matches)."""
    import torch

    return frozenset(c.__name__ for c in cls.__mro__ if isinstance(c, type) and issubclass(c, torch.nn.Module))


def _internal(module: Any) -> bool:
    """compressed-tensors' internal modules (observers, transforms) are never targets."""
    return any(cls.__name__ == "InternalModule" for cls in type(module).__mro__)


def _outermost(names: list[str]) -> list[str]:
    """Names with no selected ancestor, in their order (the root, "", contains everything)."""
    chosen = set(names)
    out = []
    for name in names:
        parts = name.split(".") if name else []
        ancestors = [""] + [".".join(parts[:i]) for i in range(1, len(parts))] if name else []
        if not any(a in chosen for a in ancestors):
            out.append(name)
    return out
