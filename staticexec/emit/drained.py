"""Stage 5, emit: a generator expression over modules that hold targets, unrolled into a list, is read to its end
(the `_sx.Drained` and `_sx.expect_drained` the emitted code calls).

Emission unrolls `sum(layer(h) for layer in self.layers)` as the loop it is (emit/comprehension.py): each item is
computed in order, as a statement of its own (a target call, in a subgraph of its own), before the call that reads
them. Python computes an item of a generator only when its reader takes it, so that is the forward's behaviour
only when the reader takes every item. One that stops early (`next`, `any`, `zip` with a shorter iterable,
`itertools.islice`) would leave later items uncomputed in the forward, and their target calls unrun, while the
subgraphs ran them all.

The reader is given the items through `Drained`, an iterator over the computed list that counts what it gave,
and the statement is followed by `expect_drained`, which raises `GeneratorMismatch` where fewer items were taken
than were computed.
"""

from __future__ import annotations

from typing import Any

from staticexec.emit.checks import CHECKS


class GeneratorMismatch(RuntimeError):
    """A generator expression emission unrolled into a list was not read to its end."""


class Drained:
    """The items of an unrolled generator expression, given to its reader one by one, counted."""

    __slots__ = ("items", "taken")

    def __init__(self, items: list) -> None:
        self.items = items
        self.taken = 0

    def __iter__(self) -> "Drained":
        return self

    def __next__(self) -> Any:
        if self.taken >= len(self.items):
            raise StopIteration
        item = self.items[self.taken]
        self.taken += 1
        return item


def expect_drained(reader: Drained, where: str, code: str) -> None:
    """Run-time check after the statement that reads an unrolled generator expression: it took every item."""
    if not CHECKS.get() or reader.taken == len(reader.items):
        return
    raise GeneratorMismatch(
        f"{where}: the generator expression `{code}` was read for {reader.taken} of its {len(reader.items)} items: "
        "the subgraphs computed every item (and ran its target calls) before the call that reads them, where the "
        "forward computes only the items its reader takes; write the loop out, or read every item")
