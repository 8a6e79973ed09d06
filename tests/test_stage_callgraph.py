"""Stage call graph (staticexec/analysis/callgraph.py), through `CallGraphBuilder(Resolver(), targets).build(root)`.

Each case is a small model source, written to a file and loaded under its own module name
the way the pattern fixtures are (`import_fixture`, tests/patterns.py). Every snippet has a
target class `Layer`, a class `Plain` that holds no target, and a root class `Model`. The
expectation is the graph's edges (caller -> callee, node names without the snippet's module),
the functions that reach a target, and the call sites the analysis could not resolve or that may
hide a target call, as `function:+k: unresolved` / `hides` (k a line of the snippet).
"""

from __future__ import annotations

import textwrap

import pytest

from patterns import import_fixture
from staticexec.analysis.callgraph import CallGraphBuilder
from staticexec.messages import UsageError
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.source import ClassRef
from staticexec.analysis.values import Container, Instance

HEADER = textwrap.dedent("""
    import torch
    from torch import nn


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, h):
            return self.proj(h)


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, h):
            return self.proj(h)
    """)


def build(tmp_path, name: str, source: str):
    """The call graph from `Model.forward` of a snippet (after the shared header), targets `Layer`."""
    module = f"stage_callgraph_{name.replace('-', '_')}"
    path = tmp_path / f"{module}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    import_fixture(str(path), module, path.name)
    return CallGraphBuilder(Resolver(), {"Layer"}).build(ClassRef(module, "Model")), module


def short(node: str, module: str) -> str:
    return node.replace(f"{module}:", "")


def edges(graph, module: str) -> set[str]:
    return {f"{short(a, module)} -> {short(b, module)}" for a, b in graph.graph.edges}


def problems(graph, module: str) -> set[str]:
    """`function:line: kind` for every call site that is unresolved (`unresolved`) or hides a target (`hides`)."""
    out = set()
    for analysis in graph.functions.values():
        for site in analysis.calls.values():
            if site.hides_target:
                out.add(f"{short(analysis.node, module)}:{site.line}: hides")
            elif site.unresolved:
                out.add(f"{short(analysis.node, module)}:{site.line}: unresolved")
    return out


LINE = HEADER.count("\n") + 1  # a snippet's line k is the file's line LINE + k (after its leading newline)

CASES = [
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """, {"Model.forward -> target:Layer"}, {"Model.forward"}, set(), id="loop-over-layers"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                return self._run(x)

            def _run(self, x):
                for i, layer in enumerate(self.layers):
                    x = layer(x)
                return x
        """, {"Model.forward -> Model._run", "Model._run -> target:Layer"}, {"Model.forward", "Model._run"}, set(),
        id="helper-method-runs-layers"),
    pytest.param("""
        def run_layers(layers, x):
            for layer in layers:
                x = layer(x)
            return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                return run_layers(self.layers, x)
        """, {"Model.forward -> run_layers", "run_layers -> target:Layer"}, {"Model.forward", "run_layers"}, set(),
        id="module-function-given-the-layers"),
    pytest.param("""
        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.decoder = Decoder()
                self.head = Plain()

            def forward(self, x):
                return self.head(self.decoder(x))
        """, {"Model.forward -> Decoder.forward", "Decoder.forward -> target:Layer"},
        {"Model.forward", "Decoder.forward"}, set(), id="nested-module-and-pruned-plain"),
    pytest.param("""
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                return self.layers[0](x)


        class Model(Base):
            def forward(self, x):
                return super().forward(x) * 2
        """, {"Model.forward -> Base.forward[Model]", "Base.forward[Model] -> target:Layer"},
        {"Model.forward", "Base.forward[Model]"}, set(), id="super-forward-for-a-subclass"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            @staticmethod
            def apply_all(layers, x):
                for layer in layers:
                    x = layer(x)
                return x

            def forward(self, x):
                return self.apply_all(self.layers, x)
        """, {"Model.forward -> Model.apply_all", "Model.apply_all -> target:Layer"},
        {"Model.forward", "Model.apply_all"}, set(), id="static-method-given-the-layers"),
    pytest.param("""
        def scale(x):
            return x * 2


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleDict({"a": Layer(), "b": Layer()})

            def forward(self, x):
                for name, block in self.blocks.items():
                    x = scale(block(x))
                return x
        """, {"Model.forward -> target:Layer"}, {"Model.forward"}, set(), id="moduledict-items-and-a-data-helper"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                return x
        """, set(), set(), set(), id="layers-never-called"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                for layer in self.layers:
                    x = layer.forward(x)
                return x
        """, set(), set(), {"Model.forward:+8: hides"}, id="forward-called-directly-skips-hooks"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x, name):
                return getattr(self, name)(x)
        """, set(), set(), {"Model.forward:+7: hides", "Model.forward:+7: unresolved"},
        id="getattr-with-a-run-time-name"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                run = lambda h: self.layers[0](h)
                return run(x)
        """, set(), set(), {"Model.forward:+7: hides", "Model.forward:+8: hides"}, id="lambda-calls-the-layers"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.stack = nn.Sequential(Layer(), Layer())

            def forward(self, x):
                return self.stack(x)
        """, {"Model.forward -> torch.nn.modules.container:Sequential.forward",
              "torch.nn.modules.container:Sequential.forward -> target:Layer"},
        {"Model.forward", "torch.nn.modules.container:Sequential.forward"}, set(),
        id="sequential-of-targets-called-whole"),  # torch's own forward, a loop over the children, is analysed
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                for layer in self.layers:
                    x = torch.utils.checkpoint.checkpoint(layer, x)
                return x
        """, {"Model.forward -> target:Layer"}, {"Model.forward"}, set(),
        id="layer-run-through-checkpoint"),  # checkpoint(layer, x) runs layer(x): emission refuses to cut it
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                x = torch.cat(list(self.layers), x)
                return x
        """, set(), set(), {"Model.forward:+7: unresolved"}, id="layers-passed-to-torch"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                for name, module in self.layers._modules.items():
                    x = module(x)
                return x
        """, set(), set(), {"Model.forward:+7: hides", "Model.forward:+7: unresolved"}, id="modules-by-name"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                return self.missing(x)
        """, set(), set(), {"Model.forward:+7: unresolved"}, id="attribute-never-set"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                return eval("self.layers[0](x)")
        """, set(), set(), {"Model.forward:+7: hides"}, id="eval"),
]


@pytest.mark.parametrize("source, expected_edges, reaching, unresolved", CASES)
def test_call_graph(tmp_path, request, source, expected_edges, reaching, unresolved):
    graph, module = build(tmp_path, request.node.callspec.id, source)
    assert short(graph.root, module) == "Model.forward"
    assert edges(graph, module) == expected_edges
    assert {short(n, module) for n in graph.reaching()} == reaching
    assert problems(graph, module) == {at(p) for p in unresolved}


def at(problem: str) -> str:
    """`function:+k: kind`, k counted from the snippet's first line, as `function:line: kind`."""
    where, kind = problem.split(": ")
    function, offset = where.split(":+")
    return f"{function}:{LINE + int(offset)}: {kind}"


# ----- a call that runs targets is followed or reported ----------------------------------

THROUGH_A_CALL = [
    pytest.param("""
        def run_layers(x, layers):
            for layer in layers:
                x = layer(x)
            return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                return run_layers(x, layers=self.layers)  # runs targets
        """, id="helper-given-the-layers-by-keyword"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                fns = {"first": self.layers[0]}
                return fns["first"](x)  # runs targets
        """, id="layer-looked-up-in-a-dict"),
    pytest.param("""
        import functools


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                step = functools.partial(self.layers[1])  # runs targets
                return step(x)
        """, id="partial-of-a-layer"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                def step(h):  # runs targets (reported where it is defined)
                    return self.layers[0](h)
                return step(x)
        """, id="nested-function"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = Layer()
                self.second = Layer()

            def forward(self, x):
                for layer in (self.first, self.second):
                    x = layer(x)  # runs targets
                return x
        """, id="loop-over-a-tuple-of-layers"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                x = self.layers[0](x)
                named = {"second": self.layers[1]}
                for name, layer in named.items():
                    x = layer(x)  # runs targets
                return x
        """, id="loop-over-a-dict-of-layers"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])
                self.extra = Layer()

            def forward(self, x):
                x = self.layers[0](x)
                for layer in [self.extra] + [self.layers[1]]:
                    x = layer(x)  # runs targets
                return x
        """, id="loop-over-concatenated-lists"),
    pytest.param("""
        def run_layers(x, *layers):
            for layer in layers:
                x = layer(x)
            return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])

            def forward(self, x):
                x = self.layers[0](x)
                return run_layers(x, *self.layers[1:])  # runs targets
        """, id="helper-given-the-layers-through-star-args"),
    pytest.param("""
        def run_layers(x, **kwargs):
            for layer in kwargs["layers"]:
                x = layer(x)
            return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])

            def forward(self, x):
                x = self.layers[0](x)
                return run_layers(x, layers=self.layers[1:])  # runs targets
        """, id="helper-given-the-layers-through-kwargs"),
    pytest.param("""
        class Runner(nn.Module):
            def forward(self, layers, x):
                for layer in layers:
                    x = layer(x)
                return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])
                self.runner = Runner()

            def forward(self, x):
                x = self.layers[0](x)
                return self.runner(self.layers[1:], x)  # runs targets
        """, id="module-given-the-layers"),
]


@pytest.mark.parametrize("source", THROUGH_A_CALL)
def test_a_call_that_runs_targets_is_followed_or_reported(tmp_path, request, source):
    """The line marked `# runs targets` calls targets when it runs: the graph must lead from a call
    there to a target, or report it, so that the plan never keeps it as opaque code."""
    graph, module = build(tmp_path, request.node.callspec.id, source)
    lines = textwrap.dedent(source).split("\n")
    line = LINE + next(i for i, text in enumerate(lines) if "# runs targets" in text)
    sites = [s for a in graph.functions.values() for s in a.calls.values() if s.line == line]
    reaching = graph.reaching()
    assert sites
    assert any(s.targets or set(s.callees) & reaching or s.unresolved or s.hides_target for s in sites)


# ----- the graph's other answers ----------------------------------------------------------

NESTED = """
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(2)])

        def forward(self, x):
            return self._run(x)

        def _run(self, x):
            for layer in self.layers:
                x = layer(x)
            return x


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = Decoder()
            self.head = Plain()

        def forward(self, x):
            return self.head(self.decoder(x))
    """


def test_chain_pruned_and_call_sites(tmp_path):
    graph, module = build(tmp_path, "nested", NESTED)
    assert [(short(a, module), short(b, module), site.code) for a, b, site in graph.chain(graph.root)] == [
        ("Model.forward", "Decoder.forward", "self.decoder(x)"),
        ("Decoder.forward", "Decoder._run", "self._run(x)"),
        ("Decoder._run", "target:Layer", "layer(x)"),
    ]
    assert graph.pruned == {ClassRef(module, "Plain")}  # called, holds no target: not analysed
    assert graph.targets == {"Layer": ClassRef(module, "Layer")}
    sites = {s.code: s for s in graph.functions[graph.root].calls.values()}
    assert (sites["self.decoder(x)"].callees, sites["self.decoder(x)"].receiver_is_self) == (
        (f"{module}:Decoder.forward",), True)
    assert sites["self.head(self.decoder(x))"].callees == ()


def test_parameter_values_are_joined_over_the_calls(tmp_path):
    graph, module = build(tmp_path, "joined", """
        def run(blocks, x):
            for block in blocks:
                x = block(x)
            return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])
                self.plain = nn.ModuleList([Plain()])

            def forward(self, x):
                x = run(self.plain, x)
                return run(self.layers, x)
        """)
    env = graph.functions[f"{module}:run"].env
    assert env["blocks"] == frozenset({Container(frozenset({Instance(ClassRef(module, "Plain"))})),
                                       Container(frozenset({Instance(ClassRef(module, "Layer"))}))})
    assert edges(graph, module) == {"Model.forward -> run", "run -> target:Layer"}


def test_an_inherited_forward_is_analysed_for_the_root(tmp_path):
    graph, module = build(tmp_path, "inherited", """
        class Base(nn.Module):
            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class Model(Base):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])
        """)
    assert short(graph.root, module) == "Base.forward[Model]"
    assert edges(graph, module) == {"Base.forward[Model] -> target:Layer"}


def test_a_root_without_a_forward_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no forward"):
        build(tmp_path, "no_forward", """
            class Model:
                pass
            """)


def test_module_level_names_given_to_a_call_not_entered_are_not_resolved(tmp_path, monkeypatch):
    """`isinstance(x, (torch.Tensor, SPECIAL))`, `x.to(dtype=torch.float32)`: what those names are can't
    make the call reach a target, so jedi is not asked; an attribute of self given to a builtin still
    is evaluated."""
    from staticexec.analysis.names import NameResolver

    asked = []

    def counting(method):
        def spy(self, sf, *args):
            asked.append((sf.module, args[-2]))  # each takes the line and column last
            return method(self, sf, *args)
        return spy

    for name in ("goto", "goto_global", "goto_member"):  # every way a name is resolved, jedi or not
        monkeypatch.setattr(NameResolver, name, counting(getattr(NameResolver, name)))
    graph, module = build(tmp_path, "builtin_args", """
        SPECIAL = (Plain,)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])

            def forward(self, x):
                if isinstance(x, (torch.Tensor, SPECIAL)) and callable(self.layers):
                    x = x + 1
                x = x.to(dtype=torch.float32)
                for layer in self.layers:
                    x = layer(x)
                return x
        """)
    text = (tmp_path / f"{module}.py").read_text().splitlines()
    for call in ("isinstance(", ".to(dtype"):
        line = next(i for i, code in enumerate(text, 1) if call in code)
        assert (module, line) not in asked
    asked_here = {line for m, line in asked if m == module}
    assert next(i for i, code in enumerate(text, 1) if "nn.ModuleList" in code) in asked_here  # the spies see names
    assert edges(graph, module) == {"Model.forward -> target:Layer"}
    site = next(s for s in graph.functions[graph.root].calls.values() if s.code.startswith("callable("))
    assert site.args_hold_targets and not site.callees
