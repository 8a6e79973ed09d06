"""The analysis session: the one owner of what staticexec keeps between analyses in a process.

Like jedi's InferenceState, one object holds the caches the stages fill: files read and their
top-level index (source), parsed functions (source), jedi's scripts and answers (names), function
contexts (resolve), facts about parsed nodes (emit) and plans already made (api). Each cache is a
named table, made on first use, that lives as long as its session: `reset()` starts a new session
and drops them all, `isolated()` runs a block in a session of its own. Keys are paths, content
hashes, qualified names or the libcst nodes themselves (they hash by identity and keep the node
alive), never an `id()`.

It sits under every stage that caches, and imports nothing of staticexec.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any


class Session:
    """The caches of one analysis session, by name: `table(name)` for a dict, `value(name, make)` for one object."""

    def __init__(self) -> None:
        self._tables: dict[str, dict] = {}
        self._values: dict[str, Any] = {}

    def table(self, name: str) -> dict:
        """The dict named `name`, empty when this session first asks for it."""
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = {}
        return found

    def value(self, name: str, make: Callable[[], Any]) -> Any:
        """The object named `name`, made by `make()` the first time this session asks for it."""
        found = self._values.get(name)
        if found is None:
            found = self._values[name] = make()
        return found

    def sizes(self) -> dict[str, int]:
        """How many entries each table holds: what the session keeps."""
        return {name: len(t) for name, t in sorted(self._tables.items())}


_current = Session()


def current() -> Session:
    """The session the analysis uses now."""
    return _current


def reset() -> Session:
    """Start a new session: every cache of the old one is dropped."""
    global _current
    _current = Session()
    return _current


@contextlib.contextmanager
def isolated() -> Iterator[Session]:
    """Run a block in a new session, then go back to the one before (its caches untouched)."""
    global _current
    before, _current = _current, Session()
    try:
        yield _current
    finally:
        _current = before
