"""Stage 5-6, cut and run: names of the sample for one tensor, where the forward writes one of them in place.

The model's own forward, given one tensor under two names (`labels=input_ids`) or a tensor and a view
of it, sees a write through one name in the other. A subgraph copies an input its code writes, so that
the pipeline's second run of it starts from the same value, and llm-compressor's cache gives each name
a copy of its own when it offloads to another device. The analysis sees aliases the forward binds
(`a = h`), not those its caller passes in. So emission reads them off the sample:

- names for the very same tensor, one of which some subgraph writes in place, are carried together
  as names the code binds to one object are (cut.py): the writer's copy goes on under each of them;
  and each subgraph that takes two of them checks, as it runs, that they are still one tensor
  (`Subgraph.forward` raises `ContractError` otherwise: a cache that offloads, or a later batch, gave
  them apart, and the write would not show in the other);
- a name that holds a view of another's memory, not the tensor itself, is refused where the write is:
  a copy of the one can't stay a view of the other.

A later batch whose names share a tensor where the sample's did not is not seen.
"""

from __future__ import annotations

from staticexec.emit.heldstate import memory_of
from staticexec.emit.shared import Held
from staticexec.messages import MutatedState, Refused


def sample_aliases(sample: dict) -> list[tuple[tuple[str, ...], bool]]:
    """The groups of two or more sample names whose tensors share memory, in the sample's order, each with
    whether its names hold the very same tensor."""
    import torch

    by_memory: dict[int, list[str]] = {}
    for name, value in sample.items():
        if isinstance(value, torch.Tensor):
            where = memory_of(value)
            if where:
                by_memory.setdefault(where, []).append(name)
    return [(tuple(names), all(sample[n] is sample[names[0]] for n in names))
            for names in by_memory.values() if len(names) > 1]


def written_aliases(groups: list[tuple[tuple[str, ...], bool]], written_at: dict[str, str]) -> list[tuple[str, ...]]:
    """The groups one of whose names a subgraph writes in place (`written_at`: name -> the model line of its
    first write); refused where one of them holds a view rather than the tensor itself."""
    kept = []
    for names, identical in groups:
        name = next((n for n in names if n in written_at), None)
        if name is None:
            continue
        if not identical:
            path, _, line = written_at[name].rpartition(":")
            others = ", ".join(f"`{n}`" for n in names if n != name)
            raise Refused([MutatedState(
                path, int(line) if line.isdigit() else 0,
                f"`{name}` is written in place here, and the sample's {others} holds part of its memory (a view, not "
                "the tensor itself): the subgraphs copy an input they write, so that the pipeline's second run of "
                "one starts from the same value, and a copy of the one can't stay a view of the other")])
        kept.append(names)
    return kept


def apart(groups: tuple, inputs: dict) -> tuple[str, str] | None:
    """The first two names of a group that the subgraph was given as two objects (a held one taken out of its
    `Held`), or None when each group is one tensor still."""
    for names in groups:
        given = [(n, _unheld(inputs[n])) for n in names if n in inputs]
        for name, value in given[1:]:
            if value is not given[0][1]:
                return given[0][0], name
    return None


def _unheld(value: object) -> object:
    return value.value if type(value) is Held else value
