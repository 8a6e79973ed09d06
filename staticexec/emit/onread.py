"""Stage 6, run: a list copied item by item, each item when the subgraph's code first reads it.

A subgraph copies what its inputs hold in objects before it runs, so that a second run on the same
inputs starts from the same state. A cache holds one object per layer in a list (`DynamicCache.layers`),
and a subgraph reads one or two of them: copying every item every time makes the copying grow with
the depth, and a chain with the square of it. `CopiedOnRead` stands in for such a list while the
subgraph runs. It holds the original items; an item read from it (by index, slice, iteration, `pop`,
`in`, a comparison, `+`) is copied then, by the copy function the run gives it (which shares one memo
with the rest of the run, so an object reached another way is one copy), and the copy takes its slot.
Any change that could move an item to another slot first copies every item still original. An item
nothing reads stays the original, shared by the input and the output: no run changed it.

Only lists of plain Python objects get one (`eligible`): CPython's own fast paths (`list(x)`, unpacking,
`sorted`, `extend`) take a list subclass through its iterator, but a C function that reads the slots
directly could write a tensor item in place (`torch._foreach_*`); a Python object it can only hand back.
In the standard library, `heapq` and `operator.concat` read the slots that way and hand back an original
item: a list of cache layers is neither a heap nor concatenated through `operator`.

After the run (`staticexec.emit.run`), a list the code kept elsewhere copies every item and stays where
it is, so both names still hold one list; then each list puts each copy made through another name into
its item's slot (`close`), and the owner of a list not kept gets a plain list with the same items.
"""

from __future__ import annotations

import operator
from typing import Any, Callable


class CopiedOnRead(list):
    """A list whose original items are copied when first read (see the module's docstring)."""

    __slots__ = ("source", "_copy", "_open")

    def __init__(self, source: list, copy: Callable[[Any], Any]) -> None:
        list.__init__(self)
        list.extend(self, source)  # an exact list: its slots, not its iterator
        self.source = source  # the list it stands in for
        self._copy = copy
        self._open = True

    def _item(self, index: int) -> Any:
        item = list.__getitem__(self, index)
        if self._open:
            if index < 0:
                index += list.__len__(self)
            source = self.source
            if index < len(source) and source[index] is item:  # still the original: copied now
                item = self._copy(item)
                list.__setitem__(self, index, item)
        return item

    def copy_all(self) -> None:
        """Copy every item still original (before a change that could move one to another slot)."""
        if self._open:
            for index in range(list.__len__(self)):
                self._item(index)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(list.__len__(self)))]
        return self._item(operator.index(index))

    def __iter__(self) -> Any:
        index = 0
        while index < list.__len__(self):  # as a list's iterator: items appended meanwhile come too
            yield self._item(index)
            index += 1

    def __reversed__(self) -> Any:
        index = list.__len__(self) - 1
        while index >= 0:
            if index < list.__len__(self):
                yield self._item(index)
            index -= 1

    def __add__(self, other: Any) -> Any:  # a list's own `+` would read the slots of both
        if not isinstance(other, list):
            return NotImplemented
        self.copy_all()
        return list.copy(self) + list(other)

    def __radd__(self, other: Any) -> Any:  # `[...] + this`, `plain += this`: a list's own, on the copies
        self.copy_all()
        return NotImplemented

    def __reduce_ex__(self, protocol: Any) -> Any:  # copy and pickle: a plain list of the copies
        self.copy_all()
        return list, (list.copy(self),)

    def close(self, copies: dict) -> list:
        """Stop copying; a plain list of the items as they are now.

        `copies` maps the id of each object copied in the run to its copy: an item copied through another
        name (a layer bound to a local before the cut) takes its copy's slot, as one eager copy would have
        put it there. A list the code kept elsewhere copies every item first (`copy_all`): it outlives the
        run, and nothing would copy on a later read."""
        self._open = False
        self._copy = self.source = None  # (the run's memo and the input's list: not kept alive by one that outlives it)
        for index, item in enumerate(list.copy(self)):
            copied = copies.get(id(item))
            if copied is not None and copied is not item:
                list.__setitem__(self, index, copied)
        return list.copy(self)


def _copying_all_first(name: str) -> Callable:
    method = getattr(list, name)

    def wrapper(self: CopiedOnRead, *args: Any, **kwargs: Any) -> Any:
        self.copy_all()
        return method(self, *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


# every other method that reads the slots themselves (items given out, compared, shown) or could move an
# item to another slot (`append` and the length can't)
for _name in ("__setitem__", "__delitem__", "__iadd__", "__mul__", "__rmul__", "__imul__", "copy", "extend", "insert",
              "pop", "remove", "reverse", "sort", "__contains__", "count", "index", "__eq__", "__ne__", "__lt__",
              "__le__", "__gt__", "__ge__", "__repr__"):
    setattr(CopiedOnRead, _name, _copying_all_first(_name))
del _name


def eligible(value: list, plain: Callable[[type], bool]) -> bool:
    """Whether a list gets a `CopiedOnRead`: it holds items, and only of classes `plain` accepts."""
    return bool(value) and all(map(plain, set(map(type, value))))
