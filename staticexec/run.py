"""Stage 6, run: a subgraph is a plain Python function over named values.

`Subgraph` matches the interface of llm-compressor's sequential pipeline:
`input_names`, `consumed_names`, `forward(model, **inputs) -> dict`, plus
`output_names` and `submodules(model, recurse=True)`. `run_subgraphs` runs a chain the
way a calibration pipeline does, keeping named values between subgraphs.
"""

from __future__ import annotations

import ast
import linecache
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

_MISSING = object()


@dataclass
class Subgraph:
    """One piece of the forward: its source, its named inputs and outputs, and the modules it calls."""

    index: int
    source: str
    input_names: set[str]
    output_names: set[str]
    consumed_names: set[str]
    targets: list[str] = field(default_factory=list)
    module_paths: list[str] = field(default_factory=list)
    origins: list[tuple[int, str]] = field(default_factory=list, repr=False)
    filename: str = ""
    _globals: dict = field(default_factory=dict, repr=False)
    _fn: Any = field(default=None, repr=False)

    @classmethod
    def from_piece(cls, index: int, count: int, piece, consumed: set[str], globals_: dict, title: str) -> "Subgraph":
        from .cut import generate

        source, origins = generate(index, piece)
        filename = f"<staticexec {title} subgraph {index} of {count}>"
        targets = [s.target for s in piece.steps if s.target is not None]
        sg = cls(
            index=index,
            source=source,
            input_names=set(piece.inputs),
            output_names=set(piece.outputs),
            consumed_names=set(consumed),
            targets=targets,
            module_paths=_module_paths(piece),
            origins=origins,
            filename=filename,
            _globals=globals_,
        )
        sg._compile()
        return sg

    def _compile(self) -> None:
        linecache.cache[self.filename] = (len(self.source), None, self.source.splitlines(True), self.filename)
        scope = dict(self._globals)
        scope["_MISSING"] = _MISSING
        exec(compile(self.source, self.filename, "exec"), scope)
        self._fn = scope[f"subgraph_{self.index}"]

    def forward(self, model: Any, *args: Any, **inputs: Any) -> dict:
        """Run this subgraph on named inputs; returns the named values later subgraphs need."""
        if args:
            raise TypeError("subgraph inputs are passed by name")
        if not inputs.keys() <= self.input_names:
            inputs = {k: v for k, v in inputs.items() if k in self.input_names}
        try:
            return self._fn(model, **inputs)
        except Exception as exc:
            origin = self._origin_of(exc)
            if origin and hasattr(exc, "add_note"):
                exc.add_note(f"staticexec: raised in subgraph {self.index}, in code emitted from {origin}")
            raise

    def _origin_of(self, exc: BaseException) -> str | None:
        line = None
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == self.filename:
                line = frame.lineno
        if line is None:
            return None
        best = None
        for start, origin in self.origins:
            if start <= line:
                best = origin
        return best

    def submodules(self, model: Any, recurse: bool = True) -> list:
        """The modules this subgraph calls (its targets and any module attribute it uses), in call order;
        with `recurse` (the default, as llm-compressor's Subgraph) each followed by all modules below it."""
        direct = []
        for path in self.module_paths:
            try:
                direct.append(model.get_submodule(path))
            except AttributeError:
                continue
        if not recurse:
            return direct
        out, seen = [], set()
        for module in direct:
            for sub in module.modules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
        return out


def _module_paths(piece) -> list[str]:
    """Dotted paths of modules a piece uses: targets, and `selfvar.attr` chains on module-bound names."""
    bound = dict(piece.prelude)
    for step in piece.steps:
        bound.update(step.modules)
    paths: list[str] = []
    for step in piece.steps:
        if step.target is not None and step.target not in paths:
            paths.append(step.target)
        for node in _calls(step.code):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                chain = []
                cur: ast.AST = node.func
                while isinstance(cur, ast.Attribute):
                    chain.append(cur.attr)
                    cur = cur.value
                if isinstance(cur, ast.Name) and (cur.id in bound or cur.id == "self"):
                    base = bound.get(cur.id, "self")
                    path = _expr_path(base)
                    if path is None:
                        continue
                    full = ".".join([p for p in [path] if p] + list(reversed(chain)))
                    if full not in paths:
                        paths.append(full)
    return paths


@lru_cache(maxsize=65536)
def _calls(code: str) -> tuple:
    return tuple(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call))


def _expr_path(expr: str) -> str | None:
    """`self.model.layers[3]` -> `model.layers.3`."""
    if not expr.startswith("self"):
        return None
    rest = expr[len("self") :]
    out = []
    while rest:
        if rest.startswith("."):
            rest = rest[1:]
            name = ""
            while rest and (rest[0].isalnum() or rest[0] == "_"):
                name += rest[0]
                rest = rest[1:]
            out.append(name)
        elif rest.startswith("["):
            end = rest.index("]")
            out.append(rest[1:end].strip("'\""))
            rest = rest[end + 1 :]
        else:
            return None
    return ".".join(out)


def run_chain(model: Any, subgraphs: list[Subgraph], inputs: dict,
              before: Callable[[Subgraph], None] | None = None) -> dict:
    """Run a chain as a calibration pipeline does, freeing consumed names; the last subgraph's outputs."""
    values = dict(inputs)
    out: dict = {}
    for sg in subgraphs:
        if before is not None:
            before(sg)
        out = sg.forward(model, **{k: values[k] for k in sg.input_names if k in values})
        for name in sg.consumed_names:
            values.pop(name, None)
        values.update(out)
    return out


def run_subgraphs(model: Any, subgraphs: list[Subgraph], inputs: dict) -> Any:
    """Run a chain; returns exactly what `model(**inputs)` returns."""
    return run_chain(model, subgraphs, inputs)["forward_output"]
