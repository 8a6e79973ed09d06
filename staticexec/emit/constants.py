"""Stage 6, run: the values a chain keeps out of the pipeline's cache.

A value one subgraph binds and the later ones only pass along (a wrapper's scope that set nothing,
an inlined call's `use_cache=False`, an empty `**kwargs`) costs every subgraph that reads it a fetch from
llm-compressor's cache, once per layer. The chain learns such a value where it is bound: the first time
that subgraph runs, each such name holding an immutable atom (None, a bool, a number, a string), an empty
dict, list or tuple, or a wrapper's scope that publishes only those (a collector nothing was added to yet)
becomes the chain's constant for the name. From then on the subgraph leaves the name
out of its outputs whenever it holds that very object again (for a container: an empty one of its type),
and a subgraph that reads the name and is not given it binds the constant (an empty container afresh, as
the cache would rebuild it). Any other value goes through the cache as before, so a batch whose value
differs from the first is carried exactly. Once a subgraph's constants are all learned, its code takes
those it can as keyword defaults (`keyword_defaults`), so a run given only the other inputs binds nothing.

A name qualifies when exactly one subgraph binds it, it is not a name a batch may hold (the sample's keys,
the model forward's keyword parameters), and neither that subgraph nor an earlier one takes it as an input
(so the cache holds no older value under it), and no subgraph but the last consumes it: the
pipeline's cache fetches only the names it holds, deletes every name a subgraph consumes (a missing one
is an error), and deletes nothing after the last subgraph.
"""

from __future__ import annotations

from typing import Any

from staticexec.emit.runtime import WrapperScope

_ATOMS = (type(None), bool, int, float, str)
_EMPTY = (dict, list, tuple)
_NONE = object()
_VARIES = object()  # a name whose value at the binding subgraph's first run was no constant


class ChainConstants:
    """The constants of one chain: the name -> value its binding subgraph gave at its first run."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def leave_out(self, names: frozenset, out: dict) -> None:
        """After a run of the subgraph that binds `names`: at its first run, learn each one's constant (a name
        holding anything else then never has one); then take out of `out` each one that holds its constant."""
        values = self.values
        for name in names:
            value = out.get(name, _NONE)
            if value is _NONE:
                continue
            known = values.get(name, _NONE)
            if known is _NONE:
                values[name] = known = _afresh(value) if _constant(value) else _VARIES
            if known is not _VARIES and _same(value, known):
                del out[name]

    def holds(self, name: str) -> bool:
        """Whether the name has a constant."""
        return self.values.get(name, _VARIES) is not _VARIES

    def given(self, inputs: dict, missing: set) -> dict | None:
        """The inputs with the constant bound for each missing name; None when one of them has none."""
        values = self.values
        out = dict(inputs)
        for name in missing:
            value = values.get(name, _VARIES)
            if value is _VARIES:
                return None
            out[name] = _afresh(value)
        return out


def keyword_defaults(sg: Any) -> tuple[dict, list] | None:
    """The constants a subgraph's code can take as keyword defaults, so that its runs are not given them at all:
    (name -> default, the (name, scope) pairs among them), or None while the chain has not learned them all.
    An atom; an empty container its code only spreads (`**kwargs`) or never reads; a scope, one for all
    runs, which `Subgraph.forward` empties again after each (as it does a scope it is given)."""
    values = sg.constants.values
    defaults: dict = {}
    scopes: list = []
    for name in sorted(sg.constant_inputs):
        value = values.get(name, _NONE)
        if value is _NONE:
            return None
        if value is _VARIES or name in sg.written_inputs:
            continue
        kind = type(value)
        if kind in _ATOMS:
            defaults[name] = value
        elif kind in _EMPTY:
            if kind is tuple or name in sg.spread_inputs or name in sg.carried_inputs:
                defaults[name] = kind()
        elif kind is WrapperScope:
            defaults[name] = scope = _afresh(value)
            scopes.append((name, scope))
    return defaults, scopes


def _constant(value: Any, scope: bool = True) -> bool:
    """An immutable atom, an empty container, or a wrapper's scope that sets no attribute and publishes only
    those (a collector nothing was added to)."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind in _EMPTY:
        return not value
    return (scope and kind is WrapperScope and not value.attributes
            and all(_constant(v, False) for v in value.context.values()))


def _same(value: Any, known: Any) -> bool:
    """The constant again: the very object for an atom (the cache hands on that object), an empty container
    of its type (the cache rebuilds containers), a scope that publishes the same in each context variable."""
    kind = type(value)
    if kind is not type(known):
        return False
    if kind in _EMPTY:
        return not value
    if kind is WrapperScope:
        context = known.context
        return (not value.attributes and len(value.context) == len(context)
                and all(var in context and _same(v, context[var]) for var, v in value.context.items()))
    return value is known


def _afresh(value: Any) -> Any:
    """The constant as a subgraph is given it: containers new, as the cache rebuilds them."""
    kind = type(value)
    if kind in _EMPTY:
        return kind()
    if kind is WrapperScope:
        return WrapperScope({var: _afresh(v) for var, v in value.context.items()}, [])
    return value


def share_constants(chain: list, given: list[str]) -> None:
    """Give a chain's subgraphs one `ChainConstants`, and each the names it may leave out (`omits`) and the
    inputs it may find missing (`constant_inputs`), by the rule in this module's docstring; `given` are the
    names the pipeline's cache may hold before the chain runs (the sample's keys, and every name the model's
    forward takes by keyword: a batch that holds one the sample did not would keep it there)."""
    if not chain:
        return
    last = len(chain) - 1
    binders: dict[str, list[int]] = {}
    for i, sg in enumerate(chain):
        for name in sg.output_names - sg.passed_through:
            binders.setdefault(name, []).append(i)
    names: dict[str, int] = {}
    for name, where in binders.items():
        if len(where) != 1:
            continue
        at = where[0]
        if name in given or any(name in sg.input_names for sg in chain[: at + 1]):
            continue
        if any(name in sg.consumed_names for sg in chain[:last]):
            continue
        if not any(name in sg.input_names for sg in chain[at + 1 :]):
            continue
        names[name] = at
    shared = ChainConstants()
    for i, sg in enumerate(chain):
        sg.constants = shared
        sg.omits = frozenset(n for n, at in names.items() if at == i)
        sg.constant_inputs = frozenset(n for n in sg.input_names if n in names)
