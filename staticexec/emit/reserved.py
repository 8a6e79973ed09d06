"""The names emitted code gives its own values, and which names of a model's source would be taken for them.

Emission renames an inlined function's locals (`h` becomes `h__1`) and names the values it adds
itself (`kw__0`, `ret__3`, `loop__5`, `module__g2`, `default__1_x`, ...): each such name holds two
underscores followed by a number, or by `g` and a number. The subgraphs also reach a few values by
fixed names (`_sx` for runtime.py, `Unbound`, ...) and are themselves named `subgraph_<n>`. A name of
the model's own source in either form would share its variable with one of those, and the split would
read or overwrite the wrong value: emission refuses such a name rather than guess which is meant.
"""

from __future__ import annotations

import re

from staticexec.emit.cut import RUNTIME
from staticexec.emit.run import BUILTINS

OUTPUT = "forward_output"
"""The name the root forward's result is bound to, the last subgraph's output."""

NO_GRAD = "no_grad__"
"""The name emitted code reaches `torch.no_grad` by."""

FIXED = frozenset({RUNTIME, OUTPUT, NO_GRAD, "_MISSING", "Unbound", "UNBOUND", "_locals", "_out", *BUILTINS})
"""The names the subgraphs' code reads or binds for itself (emitter.py, cut.py, run.py)."""

_GENERATED = re.compile(r"__g?\d|^subgraph_\d+$")


def reserved(name: str) -> bool:
    """Whether a name of the model's source has a form emitted code uses for its own values."""
    return name in FIXED or _GENERATED.search(name) is not None
