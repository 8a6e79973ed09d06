"""Stage 6, run: whether an input a subgraph writes in place is also the model's own state.

A subgraph whose code writes an input in place (`acc += 1`, `e.mul_(2)`, `history.append(h)`) is given a
copy of it, so that the pipeline's second run of the subgraph starts from the same value. That is right
only while nothing else holds the input: when a module of the model holds it too (a parameter, a buffer,
an attribute, or an item of a list, tuple or dict attribute; for a tensor, anything sharing its memory),
the write lands in the copy, and the module keeps the old value where the model's own forward changes it.
Writing the module's value itself would not do either, as the second run would write it again. So the
run stops, naming the input and where the model holds it (`Subgraph.forward`, with the other run-time
checks).
"""

from __future__ import annotations

import functools
from typing import Any


def held_by_model(model: Any, written: dict) -> tuple[str, str] | None:
    """(input name, where the model holds it) for the first input of `written` (name -> the object as given,
    before any copy) that a module of `model` holds, or None.

    An input is held when a module's parameter, buffer or attribute is that object, or, one level down, an
    item of a list, tuple or dict attribute is; an input that is a list, tuple or dict stands for its items
    too (`states = [self.buf]`). Tensors are compared by the memory they use, so a view counts as its base."""
    import torch

    ids: dict[int, str] = {}
    memory: dict[int, str] = {}
    for name, value in written.items():
        for item in _with_items(value):
            ids.setdefault(id(item), name)
            if isinstance(item, torch.Tensor):
                ptr = memory_of(item)
                if ptr:
                    memory.setdefault(ptr, name)
    if not ids:
        return None
    own = _torch_own()
    for path, module in model.named_modules():
        prefix = f"{path}." if path else ""
        for kind, items in (("parameter", module._parameters), ("buffer", module._buffers),
                            ("attribute", vars(module))):
            for attr, held in items.items():
                if kind == "attribute" and attr in own:
                    continue
                for item in _with_items(held):
                    name = ids.get(id(item))
                    if name is None and memory and isinstance(item, torch.Tensor):
                        name = memory.get(memory_of(item))
                    if name is not None:
                        article = "an" if kind == "attribute" else "a"
                        where = f"`{prefix}{attr}`, {article} {kind} of {'the model' if not path else 'module ' + repr(path)}"
                        return name, where
    return None


def _with_items(value: Any) -> list:
    """The value, and the items of a list, tuple or dict (one level)."""
    if isinstance(value, (list, tuple)):
        return [value, *value]
    if isinstance(value, dict):
        return [value, *value.values()]
    return [value]


def memory_of(tensor: Any) -> int:
    """Where a tensor's memory starts (its storage's, so shared by its views); 0 for one with none of its own
    (empty, meta, sparse, or a subclass without storage)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


@functools.lru_cache(maxsize=1)
def _torch_own() -> frozenset:
    """The attribute names torch's Module.__init__ gives every module: its own bookkeeping (hooks, flags)."""
    import torch

    return frozenset(vars(torch.nn.Module()))
