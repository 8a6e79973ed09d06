"""Refusals that tell the truth: a message that states a fact about the code is never given where
the fact is false.

Three messages state facts: "X never sets self.y" (the reason of an unresolved call), "no call
path from the root forward to a target" (`no-call-path`) and "no class X in Y" (a UsageError).
Each case below is a small model where such a fact is false: the attribute is set (reassigned from
itself, set by name, set by a property's setter), a target is reached (through a call the analysis
can't follow), the class is there (below a module whose attributes are set by computed names).
The message must not appear: the model splits exactly where it can be split, and elsewhere the
refusal says what the analysis could not follow. Controls check that the messages still appear
where their facts are true.

Sources are written to a temporary folder and imported under their own module names, as
tests/test_stage_resolve.py does, so that jedi resolves their names as in real model files.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

import staticexec
from patterns import import_fixture
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.source import ClassRef
from staticexec.api import analyse
from staticexec.messages import Refused, UsageError

HEADER = textwrap.dedent("""
    import torch
    from torch import nn


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, h):
            return h + torch.tanh(self.proj(h))


    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(3)])

        def forward(self, h):
            for layer in self.layers:
                h = layer(h)
            return h
    """)

NEVER_SETS = "never sets"


def load(tmp_path, name: str, source: str) -> str:
    """Write a model source (after the shared header) to a file and import it as `true_refusals_<name>`."""
    module = f"true_refusals_{name}"
    path = tmp_path / f"{module}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    import_fixture(str(path), module, path.name)
    return module


def outcome(module: str, targets: list[str] | None = ("Layer",)):
    """The plan for `module.Model`, or the messages it was refused with (each as `kind: text`)."""
    try:
        return analyse(ClassRef(module, "Model"), list(targets) if targets else None), []
    except Refused as exc:
        return None, [f"{m.kind}: {m}" for m in exc.messages]


def reasons(plan) -> list[str]:
    """The reasons of the calls a plan records as not resolved."""
    return [u.reason for u in plan.unresolved]


def splits_exactly(module: str, targets: list[str] = ("Layer",)) -> list[list[str]]:
    """Split a fresh instance with staticexec.subgraphs and compare the chain with the model's own forward."""
    import sys

    torch.manual_seed(0)
    model = sys.modules[module].Model().eval()
    sample = {"x": torch.randn(2, 5, 8)}
    chain = staticexec.subgraphs(model, sample, list(targets))
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))
    return [list(sg.targets) for sg in chain]


LAYERS = [[], ["tower.layers.0"], ["tower.layers.1"], ["tower.layers.2"]]


# ----- "X never sets self.y": the attribute is set ------------------------------------------------

REASSIGNED = [
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.tower = self.tower.to(torch.float32)

            def forward(self, x):
                return self.tower(x)
        """, id="to-in-init"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.tower = self.tower.float().eval().requires_grad_(False)
                self.head = nn.Linear(8, 8)
                self.head = self.head.half().float()

            def forward(self, x):
                return self.head(self.tower(x))
        """, id="chained-module-methods"),
    pytest.param("""
        def keep(module):
            return module


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.tower = keep(self.tower)

            def forward(self, x):
                return self.tower(x)
        """, id="a-function-returning-its-argument"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                for dtype in (torch.float32, torch.float32):
                    self.tower = self.tower.to(dtype)

            def forward(self, x):
                return self.tower(x)
        """, id="reassigned-in-a-loop"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self._cast()

            def _cast(self):
                self.tower = self.tower.to(dtype=torch.float32)

            def forward(self, x):
                return self.tower(x)
        """, id="reassigned-in-another-method"),
    pytest.param("""
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()


        class Model(Base):
            def __init__(self):
                super().__init__()
                self.tower = self.tower.to(torch.float32)

            def forward(self, x):
                return self.tower(x)
        """, id="set-in-the-parent-reassigned-in-the-child"),
]


@pytest.mark.parametrize("source", REASSIGNED)
def test_a_reassigned_attribute_resolves_to_what_it_holds_and_splits(tmp_path, request, source):
    module = load(tmp_path, request.node.callspec.id.replace("-", "_"), source)
    plan, refused = outcome(module)
    assert not refused, refused
    assert not any(NEVER_SETS in r for r in reasons(plan)), reasons(plan)
    assert splits_exactly(module) == LAYERS


def test_the_resolver_gives_the_reassigned_attribute_the_earlier_binding(tmp_path):
    module = load(tmp_path, "resolver_view", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.tower = self.tower.to(torch.float32)
                self.linear = nn.Linear(8, 8)
                self.linear = self.linear.cuda() if torch.cuda.is_available() else self.linear.cpu()
        """)
    resolver = Resolver()
    model = ClassRef(module, "Model")
    assert {str(a.cls) for a in resolver.attribute(model, "tower")} == {f"{module}:Tower"}
    assert {str(a.cls) for a in resolver.attribute(model, "linear")} == {"torch.nn.modules.linear:Linear"}


def test_a_reassignment_through_code_not_followed_is_unknown_with_why(tmp_path):
    """`self.tower = torch.compile(self.tower)`: what it holds afterwards is not known, and the reason
    says so; emission, which sees the instance, refuses the call through it."""
    module = load(tmp_path, "compiled_in_init", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.tower = torch.compile(self.tower)

            def forward(self, x):
                return self.tower(x)
        """)
    plan, refused = outcome(module)
    assert not refused, refused
    assert any("computed from itself by `torch.compile(self.tower)`" in r for r in reasons(plan)), reasons(plan)
    assert not any(NEVER_SETS in r for r in reasons(plan))


STORED_OTHERWISE = [
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                setattr(self, "tower", Tower())

            def forward(self, x):
                return self.tower(x)
        """, "sets self.tower by name", id="setattr-with-a-constant-name"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.add_module("tower", Tower())

            def forward(self, x):
                return self.tower(x)
        """, "sets self.tower by name", id="add-module"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                for name in ("tower",):
                    setattr(self, name, Tower())

            def forward(self, x):
                return self.tower(x)
        """, "under a name computed at run time", id="setattr-with-a-computed-name"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.add_module("tower", Tower())
                self.tower = self.tower.float()

            def forward(self, x):
                return self.tower(x)
        """, "resolves to nothing the analysis follows", id="only-reassigned-from-itself"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = Tower()

            @property
            def blocks(self):
                return self._blocks

            @blocks.setter
            def blocks(self, value):
                self._blocks = value

            def forward(self, x):
                return self._blocks(x)
        """, "resolves to nothing the analysis follows", id="set-by-a-property-setter"),
]


@pytest.mark.parametrize("source, why", STORED_OTHERWISE)
def test_an_attribute_set_in_a_way_not_followed_is_not_said_never_set(tmp_path, request, source, why):
    """The analysis of the source does not follow these stores, and says so; the instance decides: split, the
    instance's modules are analysed where it holds them (observed.py) and the split is exact, or the call
    through the attribute is refused, truthfully."""
    module = load(tmp_path, request.node.callspec.id.replace("-", "_"), source)
    plan, refused = outcome(module)
    found = reasons(plan) if plan is not None else refused
    assert not any(NEVER_SETS in r for r in found), found
    assert any(why in r for r in found), found
    _split_exactly_or_refused(module)


def _split_exactly_or_refused(module: str) -> None:
    import sys

    model = sys.modules[module].Model().eval()
    sample = {"x": torch.randn(2, 5, 8)}
    try:
        chain = staticexec.subgraphs(model, sample, ["Layer"])
    except Refused as info:
        assert {m.kind for m in info.messages} == {"unresolved-call"}
        assert not any(NEVER_SETS in str(m) for m in info.messages)
        assert "no class" not in str(info)
        return
    assert [len(sg.targets) for sg in chain][1:] == [1] * (len(chain) - 1) and len(chain) > 1
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))


def test_never_sets_is_said_where_it_is_true(tmp_path):
    """The control: an attribute no code of the class stores, under any name."""
    module = load(tmp_path, "truly_never_set", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()

            def forward(self, x):
                h = self.tower(x)
                if h.dim() > 5:
                    h = self.missing(h)
                return h
        """)
    plan, refused = outcome(module)
    assert not refused, refused
    assert "Model never sets self.missing" in reasons(plan)


# ----- "no call path from the root forward to a target": a call the analysis can't follow reaches one

UNFOLLOWED_PATHS = [
    pytest.param("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = torch.compile(Tower())

            def forward(self, x):
                return self.tower(x)
        """, "`self.tower(x)`", id="a-module-wrapped-by-torch"),
    pytest.param("""
        class Holder(nn.Module):
            def __init__(self):
                super().__init__()
                for i in range(3):
                    setattr(self, f"layer{i}", Layer())

            def forward(self, h):
                for i in range(3):
                    h = getattr(self, f"layer{i}")(h)
                return h


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.holder = Holder()

            def forward(self, x):
                return self.holder(x)
        """, "`self.holder(x)` calls Holder", id="layers-set-by-computed-names-below"),
]


@pytest.mark.parametrize("source, call", UNFOLLOWED_PATHS)
def test_a_path_the_analysis_cant_follow_is_not_no_call_path(tmp_path, request, source, call):
    module = load(tmp_path, request.node.callspec.id.replace("-", "_"), source)
    plan, refused = outcome(module)
    assert plan is None
    assert refused and all(m.startswith("unresolved-call: ") for m in refused), refused
    assert any(call in m for m in refused), refused


def test_no_call_path_is_said_where_it_is_true(tmp_path):
    """The control: the model holds the layers but its forward calls none of them, and calls nothing the
    analysis can't follow."""
    module = load(tmp_path, "truly_no_path", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()
                self.proj = nn.Linear(8, 8)

            def forward(self, x):
                return self.proj(x)
        """)
    plan, refused = outcome(module)
    assert plan is None and refused and all(m.startswith("no-call-path: ") for m in refused), refused


# ----- "no class X in Y": the class is there ----------------------------------------------------------

def test_a_target_below_a_module_set_by_computed_names_is_not_no_class(tmp_path):
    """Holder sets its layers with setattr(self, f"layer{i}", ...): the class is held, so "no class
    Layer in Model" would be false; the refusal names the call the analysis could not look into."""
    module = load(tmp_path, "no_class_false", """
        class Holder(nn.Module):
            def __init__(self):
                super().__init__()
                for i in range(2):
                    setattr(self, f"layer{i}", Layer())

            def forward(self, h):
                return self.layer1(self.layer0(h))


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.holder = Holder()

            def forward(self, x):
                return self.holder(x)
        """)
    with pytest.raises(Refused) as info:
        analyse(ClassRef(module, "Model"), ["Layer"])
    assert {m.kind for m in info.value.messages} == {"unresolved-call"}
    _split_exactly_or_refused(module)


def test_no_class_is_said_for_a_name_defined_nowhere(tmp_path):
    """The control: a misspelt target is still bad input, though the forward has calls not resolved."""
    module = load(tmp_path, "no_class_true", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Tower()

            def forward(self, x):
                h = self.tower(x)
                if h.dim() > 5:
                    h = self.missing(h)
                return h
        """)
    with pytest.raises(UsageError, match="no class Lyer in Model"):
        analyse(ClassRef(module, "Model"), ["Lyer"], architecture="Model")


def test_an_attribute_a_torch_base_sets_is_not_said_never_set(tmp_path):
    """`self.weight` of a subclass of nn.Embedding is set by torch's Embedding, whose code is not
    followed: the reason says so (transformers' Gemma3TextScaledWordEmbedding reads it in its forward)."""
    from staticexec.analysis.source import FunctionRef
    from staticexec.analysis.values import Instance, Unknown, one

    module = load(tmp_path, "torch_base_sets", """
        class Embed(nn.Embedding):
            def weight_of(self):
                return self.weight

            def missing_of(self):
                return self.missing
        """)
    resolver = Resolver()
    embed = one(Instance(ClassRef(module, "Embed")))
    (weight,) = resolver.returns(FunctionRef(module, "Embed.weight_of"), embed)
    assert isinstance(weight, Unknown) and NEVER_SETS not in weight.reason
    assert "set by torch's Embedding" in weight.reason
    (missing,) = resolver.returns(FunctionRef(module, "Embed.missing_of"), embed)
    assert missing.reason == "Embed never sets self.missing"  # the control: no code of the class sets it


def test_an_attribute_of_a_class_whose_bases_are_not_read_is_not_said_never_set(tmp_path):
    """A base jedi can't resolve to a class may set anything: `self.helper` is not known, not "never set"."""
    module = load(tmp_path, "unread_base", """
        try:
            from a_package_not_installed_anywhere import Base
        except ImportError:
            Base = nn.Module


        class Model(Base):
            def __init__(self):
                super().__init__()
                self.tower = Tower()

            def forward(self, x):
                h = self.tower(x)
                if h.dim() > 5:
                    h = self.helper(h)
                return h
        """)
    plan, refused = outcome(module)
    assert not refused, refused
    assert not any(NEVER_SETS in r for r in reasons(plan)), reasons(plan)
    assert any("Model's base `Base` is not resolved" in r for r in reasons(plan)), reasons(plan)


# ----- state is keyed by class: a write to another class's attribute of the same name ----------------

def test_a_write_to_an_attribute_of_another_class_with_the_same_name_does_not_refuse(tmp_path):
    """A cache class appends to its own `self.layers` during the forward (as transformers' DynamicCache
    does in `__init__`); the model loops over its `self.layers` of targets. The write says nothing about
    the model's list, so the model splits exactly. The control writes to the model's own list."""
    module = load(tmp_path, "same_attribute_other_class", """
        class Cache:
            def __init__(self):
                self.layers = []

            def grow(self, n):
                for _ in range(n):
                    self.layers.append(None)
                return self


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])

            def forward(self, x):
                cache = Cache().grow(len(self.layers))
                for layer in self.layers:
                    x = layer(x)
                return x + len(cache.layers)
        """)
    plan, refused = outcome(module)
    assert refused == [] and plan is not None
    assert splits_exactly(module) == [[], ["layers.0"], ["layers.1"], ["layers.2"]]
    control = load(tmp_path, "same_attribute_own_class", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                self.layers.append(Layer())
                return x
        """)
    _, refused = outcome(control)
    assert any(m.startswith("mutated-state") for m in refused), refused
