"""Stage 5-6, cut and run: names of the sample for one tensor, where the forward writes one of them in place.

The model's own forward, given one tensor under two names (`labels=input_ids`) or a tensor and a view
of it, sees a write through one name in the other. A subgraph copies an input its code writes, so that
the pipeline's second run of it starts from the same value, and llm-compressor's cache gives each name
a copy of its own when it offloads to another device. The analysis sees aliases the forward binds
(`a = h`), not those its caller passes in. So emission reads them off the sample, for each sample name
the forward writes in place, directly or through a name it binds to it (`s = x; ...; s.add_(h)`):

- names for the very same tensor are carried together as names the code binds to one object are
  (cut.py): the writer's copy goes on under each of them; and each subgraph that takes two of them
  checks, as it runs, that they are still one tensor (`Subgraph.forward` raises `ContractError`
  otherwise: a cache that offloads, or a later batch, gave them apart, and the write would not show in
  the other);
- a name that holds a view of another's memory, not the tensor itself, is refused where the write is:
  a copy of the one can't stay a view of the other;
- every other tensor name of the sample is carried along too, since a later batch may give it as the
  same tensor: given one object, the writer's copy goes on under both names, and given a view of the
  written tensor, the writer shares the tensor rather than copy it, and its version counter stops the run.

A later batch's names for one tensor where the sample's were two, which a cache that offloads gives
apart before the first subgraph runs, are not seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from staticexec.emit.heldstate import memory_of
from staticexec.emit.shared import Held
from staticexec.messages import MutatedState, Refused


@dataclass(frozen=True)
class SampleTensors:
    """The sample's tensor names, in its order, and the groups of two or more of them that share memory, each with
    whether its names hold the very same tensor."""

    names: tuple[str, ...]
    groups: tuple[tuple[tuple[str, ...], bool], ...]


def sample_aliases(sample: dict) -> SampleTensors:
    """The sample's tensor names and those that share memory."""
    import torch

    by_memory: dict[int, list[str]] = {}
    names = []
    for name, value in sample.items():
        if isinstance(value, torch.Tensor):
            names.append(name)
            where = memory_of(value)
            if where:
                by_memory.setdefault(where, []).append(name)
    return SampleTensors(tuple(names), tuple((tuple(group), all(sample[n] is sample[group[0]] for n in group))
                                             for group in by_memory.values() if len(group) > 1))


def written_names(sample: SampleTensors, written_at: dict[str, str], together: dict[str, set[str]]) -> dict[str, str]:
    """The sample's tensor names some subgraph writes in place, directly or through a name the code binds to one
    (`together`: name -> the names that may hold the same object), each with the model line of a first write
    (`written_at`: a subgraph's input -> the line where it is first written)."""
    out = {}
    for name in sample.names:
        found = next((w for w in (name, *sorted(together.get(name, ()))) if w in written_at), None)
        if found is not None:
            out[name] = written_at[found]
    return out


def may_be_one(sample: SampleTensors, written: dict[str, str]) -> list[tuple[str, ...]]:
    """The names to carry together with those written in place (`written_names`), since a later batch may give
    them as one tensor: every tensor name of the sample, when it writes any."""
    return [sample.names] if written and len(sample.names) > 1 else []


def written_aliases(sample: SampleTensors, written: dict[str, str]) -> list[tuple[str, ...]]:
    """The groups of names for one tensor one of which a subgraph writes in place (`written_names`); refused where
    one of them holds a view rather than the tensor itself."""
    kept = []
    for names, identical in sample.groups:
        name = next((n for n in names if n in written), None)
        if name is None:
            continue
        if not identical:
            path, _, line = written[name].rpartition(":")
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
