"""Stage resolve (staticexec/analysis/resolve.py), through `Resolver.attribute`, `submodule_classes`, `returns`,
`mro` and `find_method`.

Each case is a small model source, written to a file and loaded under its own module name
the way the pattern fixtures are (`import_fixture`, tests/patterns.py), so that jedi resolves
its names as it does in real model files.
Abstract values are shown as sets: a class name for an instance of it (`module:Class` when
the class is not the snippet's own), `[...]` for a container, `(a, b)` for a tuple of values,
`?` for the unknown, `data` for what holds no module, `'s'` for a constant, `function f` for
a function or method.
"""

from __future__ import annotations

import textwrap

import pytest

from patterns import import_fixture
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.source import ClassRef, FunctionRef
from staticexec.analysis.values import (
    ClassObject, Constant, Container, Data, Function, Instance, Items, Mapping, Unknown, one,
)

HEADER = textwrap.dedent("""
    import torch
    from torch import nn


    class Layer(nn.Module):
        pass


    class Other(nn.Module):
        pass
    """)


def load(tmp_path, name: str, source: str) -> str:
    """Write a snippet (after the shared header) to a file and load it as module `stage_resolve_<name>`."""
    module = f"stage_resolve_{name.replace('-', '_')}"
    path = tmp_path / f"{module}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    import_fixture(str(path), module, path.name)
    return module


def show(value: frozenset, module: str) -> set[str]:
    """An abstract value in the notation of the module docstring."""
    out = set()
    for atom in value:
        if isinstance(atom, Instance):
            out.add(_cls(atom.cls, module))
        elif isinstance(atom, Container):
            out.add("[" + ", ".join(sorted(show(atom.elem, module))) + "]")
        elif isinstance(atom, Unknown):
            out.add("?")
        elif isinstance(atom, Data):
            out.add("data")
        elif isinstance(atom, Constant):
            out.add(repr(atom.value))
        elif isinstance(atom, Function):
            out.add(f"function {atom.ref.qualname}")
        elif isinstance(atom, ClassObject):
            out.add(f"class {_cls(atom.cls, module)}")
        elif isinstance(atom, Mapping):
            out.add("{" + ", ".join(sorted(show(atom.values, module))) + "}")
        elif isinstance(atom, Items):
            out.add("(" + ", ".join("|".join(sorted(show(i, module))) for i in atom.items) + ")")
        else:
            out.add(type(atom).__name__)
    return out


def _cls(cls: ClassRef, module: str) -> str:
    return cls.name if cls.module == module else str(cls)


ATTRIBUTES = [
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(config.n)])
        """, "layers", {"[Layer]"}, id="modulelist-comprehension"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Other(), Layer()])
        """, "layers", {"[Layer, Other]"}, id="modulelist-literal"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                layers = []
                for i in range(config.n):
                    layers.append(Layer() if i % 2 else Other())
                self.layers = nn.ModuleList(layers)
        """, "layers", {"[Layer, Other]"}, id="list-built-with-append"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList()
                for _ in range(config.n):
                    self.layers.append(Layer())
                self.layers.extend([Other()])
        """, "layers", {"[]", "[Layer]", "[Other]"}, id="self-append-and-extend"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.Sequential(*[Layer() for _ in range(2)])
                self.pair = nn.Sequential(Layer(), Other())
        """, "pair", {"[Layer, Other]"}, id="sequential"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.Sequential(*[Layer() for _ in range(2)])
        """, "layers", {"[Layer]"}, id="sequential-starred"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.blocks = nn.ModuleDict({"a": Layer(), "b": Other()})
        """, "blocks", {"[Layer, Other]"}, id="moduledict"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.block = Layer() if config.deep else Other()
        """, "block", {"Layer", "Other"}, id="conditional-constructor"),
    pytest.param("""
        LAYER_CLASSES = {"full": Layer, "other": Other}


        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([LAYER_CLASSES[t](config) for t in config.layer_types])
        """, "layers", {"[Layer, Other]"}, id="module-level-dict-of-classes"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList(self._make_layers(config))

            def _make_layers(self, config):
                return [Layer() for _ in range(config.n)]
        """, "layers", {"[Layer]"}, id="helper-method-returns-the-list"),
    pytest.param("""
        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])


        class Model(Base):
            def __init__(self, config):
                super().__init__(config)
                self.norm = nn.LayerNorm(4)
        """, "layers", {"[Layer]"}, id="set-in-a-parent-init"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.norm = nn.LayerNorm(4)
        """, "norm", {"torch.nn.modules.normalization:LayerNorm"}, id="torch-module"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layer = Layer._from_config(config)
        """, "layer", {"Layer"}, id="from-config-factory"),
    pytest.param("""
        class Model(nn.Module):
            base_model_prefix = "model"
        """, "base_model_prefix", {"'model'"}, id="class-constant"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.a, self.b = Layer(), Other()
        """, "a", {"?"}, id="assigned-by-unpacking"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.inner = nn.ModuleList([Layer()])

            @property
            def layers(self):
                return self.inner
        """, "layers", {"[Layer]"}, id="property"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()

            def helper(self, x):
                return x
        """, "helper", {"function Model.helper"}, id="method"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])
        """, "missing", set(), id="never-set"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                setattr(self, "layers", nn.ModuleList([Layer()]))
        """, "layers", set(), id="setattr-is-not-followed"),  # the call site reports it (unknown attribute)
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList(list((Layer(), Other())))
        """, "layers", {"[Layer, Other]"}, id="list-of-a-tuple"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.heads = nn.ModuleList([Layer()] * config.n)
        """, "heads", {"[Layer]"}, id="list-repetition"),
    pytest.param("""
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)] + [Other()])
        """, "layers", {"[Layer, Other]"}, id="list-concatenation"),
]


@pytest.mark.parametrize("source, attr, expected", ATTRIBUTES)
def test_attribute(tmp_path, request, source, attr, expected):
    module = load(tmp_path, request.node.callspec.id, source)
    assert show(Resolver().attribute(ClassRef(module, "Model"), attr), module) == expected


def test_a_module_passed_to_a_constructor_is_held_by_its_parameter(tmp_path):
    module = load(tmp_path, "passed", """
        class Wrapper(nn.Module):
            def __init__(self, config, inner=None):
                super().__init__()
                self.inner = inner if inner is not None else Other()


        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.wrapper = Wrapper(config, Layer())
        """)
    resolver = Resolver()
    classes = {_cls(c, module) for c in resolver.submodule_classes(ClassRef(module, "Model"))}
    assert classes == {"Wrapper", "Layer", "Other"}
    assert show(resolver.attribute(ClassRef(module, "Wrapper"), "inner"), module) == {"Layer", "Other", "data"}


def test_submodule_classes_follow_attributes_down(tmp_path):
    module = load(tmp_path, "below", """
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])


        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.block = Block()
                self.norm = nn.LayerNorm(4)
        """)
    found = {_cls(c, module) for c in Resolver().submodule_classes(ClassRef(module, "Model"))}
    assert found == {"Block", "Layer", "torch.nn.modules.normalization:LayerNorm"}
    assert {_cls(c, module) for c in Resolver().submodule_classes(ClassRef(module, "Model"), depth=1)} == {
        "Block", "torch.nn.modules.normalization:LayerNorm"}


RETURNS = [
    pytest.param("""
        def get_decoder(self):
            return getattr(self, self.base_model_prefix)
        """, {"Inner"}, id="getattr-base-model-prefix"),
    pytest.param("""
        def get_layers(self):
            return self.model.layers
        """, {"[Layer]"}, id="helper-returns-layers"),
    pytest.param("""
        def pick(self, deep):
            if deep:
                return self.model
            return None
        """, {"Inner", "None"}, id="joins-every-return"),
    pytest.param("""
        def layer_pairs(self):
            return zip(self.model.layers, self.model.layers)
        """, {"[(Layer, Layer)]"}, id="zip-of-layers"),
    pytest.param("""
        def by_name(self, name):
            return getattr(self, name)
        """, {"?"}, id="getattr-with-a-computed-name"),
    pytest.param("""
        def build(self):
            def inner():
                return self.model
            return 3
        """, {"3"}, id="nested-function-returns-are-its-own"),
    pytest.param("""
        def towers(self):
            return list({"text": self.model}.values())
        """, {"[Inner]"}, id="values-of-a-dict"),
]


@pytest.mark.parametrize("method, expected", RETURNS)
def test_returns(tmp_path, request, method, expected):
    source = """
        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer()])


        class Model(nn.Module):
            base_model_prefix = "model"

            def __init__(self, config):
                super().__init__()
                self.model = Inner()
        """
    source = textwrap.dedent(source) + textwrap.indent(textwrap.dedent(method), "    ")
    module = load(tmp_path, "returns_" + request.node.callspec.id, source)
    name = textwrap.dedent(method).split("(")[0].split()[-1]
    model = ClassRef(module, "Model")
    value = Resolver().returns(FunctionRef(module, f"Model.{name}"), one(Instance(model)))
    assert show(value, module) == expected


def test_mro_is_c3_over_resolved_bases(tmp_path):
    module = load(tmp_path, "diamond", """
        class A(nn.Module):
            pass


        class B(A):
            pass


        class C(A):
            pass


        class D(B, C):
            pass
        """)
    mro = [_cls(c, module) for c in Resolver().mro(ClassRef(module, "D"))]
    assert mro == ["D", "B", "C", "A", "torch.nn.modules.module:Module"]


def test_find_method_follows_the_mro_and_stops_at_a_class_attribute(tmp_path):
    module = load(tmp_path, "methods", """
        class Base(nn.Module):
            def forward(self, x):
                return x

            def helper(self):
                return 1


        class Model(Base):
            helper = None
        """)
    resolver = Resolver()
    assert resolver.find_method(ClassRef(module, "Model"), "forward") == FunctionRef(module, "Base.forward")
    assert resolver.find_method(ClassRef(module, "Model"), "helper") is None
    assert resolver.find_method(ClassRef(module, "Model"), "missing") is None


def test_a_class_imported_from_a_sibling_module(tmp_path, monkeypatch):
    """Model files import layers from sibling files of their package (modular-generated code)."""
    package = tmp_path / "stage_resolve_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(HEADER)
    (package / "modeling.py").write_text(textwrap.dedent("""
        from torch import nn

        from stage_resolve_pkg.layers import Layer as DecoderLayer


        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = nn.ModuleList([DecoderLayer() for _ in range(2)])
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = "stage_resolve_pkg.modeling"
    import_fixture(str(package / "modeling.py"), module, "stage_resolve_pkg/modeling.py")
    value = Resolver().attribute(ClassRef(module, "Model"), "layers")
    assert show(value, module) == {"[stage_resolve_pkg.layers:Layer]"}


AUTO = """
    from transformers.models.auto.modeling_auto import AutoModel


    class Model(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.language_model = AutoModel.from_config(config.text_config)
    """


def _sub_config(kind: str):
    from transformers import PretrainedConfig
    from transformers.models.gpt2.configuration_gpt2 import GPT2Config
    from transformers.models.llama.configuration_llama import LlamaConfig

    if kind == "gpt2":
        return GPT2Config()
    if kind == "derived":  # made from another's dict: it carries the other's model_type
        sub = LlamaConfig(model_type="gpt2")
        assert sub.model_type == "gpt2"
        return sub
    return PretrainedConfig(model_type="gpt2")  # a model folder's config.json, read as plain configs (userclass.py)


@pytest.mark.parametrize("kind, expected, model_type", [
    # resolved through transformers' auto mapping names; nothing is built
    ("gpt2", "transformers.models.gpt2.modeling_gpt2:GPT2Model", "gpt2"),
    # AutoModel maps the config's class, as transformers does: LlamaModel, not GPT2Model
    ("derived", "transformers.models.llama.modeling_llama:LlamaModel", "llama"),
    # a plain config stands for the config class of the model_type it carries
    ("plain", "transformers.models.gpt2.modeling_gpt2:GPT2Model", "gpt2"),
])
def test_auto_model_from_a_sub_config_is_the_class_transformers_maps_its_config_to(tmp_path, kind, expected, model_type):
    from transformers import PretrainedConfig

    config = PretrainedConfig()
    config.text_config = _sub_config(kind)
    module = load(tmp_path, f"auto_{kind}", AUTO)
    resolver = Resolver(config)
    value = resolver.attribute(ClassRef(module, "Model"), "language_model")
    assert show(value, module) == {expected}
    if kind != "plain":
        assert resolver.model_types == {model_type}


def test_auto_model_without_a_config_is_unknown(tmp_path):
    module = load(tmp_path, "auto_unknown", AUTO)
    assert show(Resolver().attribute(ClassRef(module, "Model"), "language_model"), module) == {"?"}
