"""A comprehension's variable is a name of its own: neither the function's local nor the module's name of that spelling.

The call graph evaluates a call in a comprehension's element with the comprehension's variables bound to
the items of what they run over, so `[layer(h) for layer in self.layers]` calls the layers, not the
module-level function or the forward's own name of that spelling; emission unrolls it, one statement
and one subgraph per layer (emit/comprehension.py).
"""

from __future__ import annotations

import libcst as cst
import pytest
import torch

import staticexec
from staticexec.analysis.plan import Kind
from staticexec.analysis.scopes import comprehension_variables, walk
from staticexec.analysis.source import ClassRef
from staticexec.emit.emitter import Emitter
from staticexec.emit.run import run_subgraphs

MODEL = '''
import torch
from torch import nn


def layer(x):
    """A module-level function spelled like the comprehension's variable below."""
    return x


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(3)])

    def forward(self, h):
        outs = [layer(h) for layer in self.layers]
        return torch.stack(outs).sum(0)
'''


COMPREHENSION = "        outs = [layer(h) for layer in self.layers]"


def _split_exactly(module: str, source: str) -> None:
    """The plan calls the comprehension's statement a target call, and the chain emitted for a tiny instance calls
    each layer in a subgraph of its own and gives what the forward gives."""
    plan = staticexec.analyse(ClassRef(module, "Model"), ["Layer"])
    forward = plan.function(plan.root)
    line = source.splitlines().index(COMPREHENSION) + 1
    (statement,) = [s for s in forward.statements if s.lines[0] == line]
    assert statement.kind is Kind.TARGET
    model = __import__(module).Model().eval()
    sample = {"h": torch.randn(2, 4)}
    chain = Emitter(plan, model, sample).emit()
    assert [sg.targets for sg in chain if sg.targets] == [["layers.0"], ["layers.1"], ["layers.2"]]
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))


def test_a_call_through_a_comprehension_variable_calls_the_items_it_runs_over(tmp_path, monkeypatch):
    (tmp_path / "shadowing_comprehension_model.py").write_text(MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    _split_exactly("shadowing_comprehension_model", MODEL)


SHADOWED = {
    "a parameter": "    def forward(self, h, layer=None):\n        outs = [layer(h) for layer in self.layers]\n",
    "a local": "    def forward(self, h):\n        layer = self.norm\n        h = layer(h)\n        outs = [layer(h) for layer in self.layers]\n",
}


@pytest.mark.parametrize("shadowed", sorted(SHADOWED))
def test_a_comprehension_variable_spelled_like_a_name_of_the_function_is_not_that_name(shadowed, tmp_path, monkeypatch):
    """Read as the function's own `layer`, the calls in the comprehension looked like calls of no target (the
    forward's `layer` is None, or a norm). They call the layers the comprehension runs over."""
    model = MODEL.replace("    def forward(self, h):\n        outs = [layer(h) for layer in self.layers]\n", SHADOWED[shadowed])
    model = model.replace("        self.layers = nn.ModuleList", "        self.norm = nn.LayerNorm(4)\n        self.layers = nn.ModuleList")
    assert SHADOWED[shadowed] in model and "self.norm = nn.LayerNorm(4)" in model
    name = f"shadowed_by_{shadowed.split()[-1]}_model"
    (tmp_path / f"{name}.py").write_text(model)
    monkeypatch.syspath_prepend(str(tmp_path))
    _split_exactly(name, model)


def _read_names(code: str) -> list[str]:
    """The names `comprehension_variables` reports for a function's body, in source order."""
    body = cst.parse_module(code).body[0].body
    found = comprehension_variables(body)
    return [n.value for n in walk(body, only=(cst.Name,)) if id(n) in found]


def test_the_names_a_comprehension_binds_are_found_where_its_scope_reads_them():
    code = '''
def f(p, items, rows):
    a = [p.flatten(1) for p in items if p.numel()]
    b = {k: v(p) for k, v in p.items()}
    c = [q for row in rows for q in row]
    e = [(a, b, rest) for a, (b, *rest) in items]
    g = [p.x for p.x in items]
    d = [lambda p: p for p in items]
    return p
'''
    # `p` in `[... for p in items if p.numel()]`: the element and the condition, not the parameter read after
    # it; in `b`, the key and the value's callee, not `p`, which that comprehension does not bind (its first
    # iterable is read in the function's scope); `row` as the second `for`'s iterable; a lambda is a scope
    # of its own; an unpacked target binds each of its names, an attribute target none
    assert _read_names(code.strip() + "\n") == ["p", "p", "k", "v", "q", "row", "a", "b", "rest"]
