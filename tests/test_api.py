"""The Python API: subgraphs(), run_subgraphs(), plans from files, refusals of bad plans."""

from __future__ import annotations

import json

import pytest
import torch

import staticexec
from staticexec.check.models import build_tiny_model
from staticexec.check.samples import sample_inputs
from staticexec.messages import MalformedPlan, StalePlan, UsageError
from staticexec.analysis.plan import seal


@pytest.fixture(scope="module")
def llama():
    model = build_tiny_model("LlamaForCausalLM")
    return model, sample_inputs(model)


def test_run_subgraphs_returns_what_the_model_returns(llama):
    model, sample = llama
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], ignore=["anything"])
    with torch.no_grad():
        expected = model(**sample)
        got = staticexec.run_subgraphs(model, subgraphs, sample)
    assert type(got) is type(expected)
    assert torch.equal(got.logits, expected.logits)
    assert len(subgraphs) == model.config.num_hidden_layers + 1


def test_subgraph_interface(llama):
    model, sample = llama
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"])
    assert subgraphs[0].input_names <= set(sample)
    for sg in subgraphs[1:]:
        mods = sg.submodules(model)
        assert any(type(m).__name__ == "LlamaDecoderLayer" for m in mods)
    # every input is consumed exactly once, by the last subgraph that reads it
    consumed = [n for sg in subgraphs for n in sg.consumed_names]
    assert len(consumed) == len(set(consumed))
    for i, sg in enumerate(subgraphs):
        for name in sg.consumed_names:
            assert all(name not in later.input_names for later in subgraphs[i + 1 :])
    assert "forward_output" in subgraphs[-1].output_names


def test_return_dict_false_and_use_cache_false(llama):
    model, sample = llama
    inputs = dict(sample, return_dict=False, use_cache=False)
    subgraphs = staticexec.subgraphs(model, inputs, ["LlamaDecoderLayer"])
    with torch.no_grad():
        expected = model(**inputs)
        got = staticexec.run_subgraphs(model, subgraphs, inputs)
    assert isinstance(got, tuple) and torch.equal(got[0], expected[0])


def test_plan_file_round_trip(llama, tmp_path):
    model, sample = llama
    plan = staticexec.analyse_architecture("LlamaForCausalLM", ["LlamaDecoderLayer"], config=model.config)
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], plan=str(path))
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, subgraphs, sample).logits, model(**sample).logits)


def test_stale_and_malformed_plans_are_refused(llama, tmp_path):
    model, sample = llama
    plan = staticexec.analyse_architecture("LlamaForCausalLM", ["LlamaDecoderLayer"], config=model.config)
    doc = json.loads(plan.to_json())
    next(iter(doc["functions"].values()))["source_hash"] = "0" * 64
    doc["seal"] = seal(doc)  # sealed as the analysis would have: only the source differs
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(doc))
    with pytest.raises(StalePlan):
        staticexec.subgraphs(model, sample, None, plan=str(stale))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MalformedPlan):
        staticexec.subgraphs(model, sample, None, plan=str(bad))
    wrong = tmp_path / "wrong.json"
    doc = json.loads(plan.to_json())
    doc["schema"] = 99
    doc["seal"] = seal(doc)  # a well-formed plan of another schema: refused for its schema, before its seal
    wrong.write_text(json.dumps(doc))
    with pytest.raises(MalformedPlan, match="plan schema 99 is not the supported"):
        staticexec.load_plan(str(wrong))


def test_unknown_target_is_bad_input(llama):
    model, sample = llama
    with pytest.raises(UsageError):
        staticexec.subgraphs(model, sample, ["NoSuchLayer"])


def test_errors_name_the_model_source(llama):
    model, sample = llama
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"])
    with pytest.raises(Exception) as info:
        subgraphs[0].forward(model, input_ids=torch.zeros(1, 4, dtype=torch.long).fill_(10**6),
                             attention_mask=torch.ones(1, 4, dtype=torch.long))
    notes = getattr(info.value, "__notes__", [])
    assert any("modeling_llama.py:" in n for n in notes), notes


def test_emission_from_a_plan_runs_no_analysis(llama, tmp_path, monkeypatch):
    model, sample = llama
    plan = staticexec.analyse_architecture("LlamaForCausalLM", ["LlamaDecoderLayer"], config=model.config)
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    import jedi
    import libcst

    def forbidden(*args, **kwargs):
        raise AssertionError("analysis ran while emitting from a plan")

    monkeypatch.setattr(jedi, "Script", forbidden)
    monkeypatch.setattr(libcst, "MetadataWrapper", forbidden)
    import staticexec.api as api_module
    monkeypatch.setattr(api_module, "build_plan", forbidden)
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], plan=str(path))
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, subgraphs, sample).logits, model(**sample).logits)


def test_a_folder_of_plans_is_used_when_current(llama, tmp_path, monkeypatch):
    model, sample = llama
    plan = staticexec.analyse_architecture("LlamaForCausalLM", ["LlamaDecoderLayer"], config=model.config)
    (tmp_path / "LlamaForCausalLM.json").write_text(plan.to_json())
    import staticexec.api as api
    from staticexec.analysis import session

    monkeypatch.setattr(api, "analyse", lambda *a, **k: (_ for _ in ()).throw(AssertionError("analysed")))
    with session.isolated():  # no plan analysed earlier in this process
        assert len(staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], plan=str(tmp_path))) == 3
        doc = json.loads(plan.to_json())
        next(iter(doc["functions"].values()))["source_hash"] = "0" * 64
        doc["seal"] = seal(doc)  # sealed as the analysis would have: only the source differs
        (tmp_path / "LlamaForCausalLM.json").write_text(json.dumps(doc))
        with pytest.raises(AssertionError, match="analysed"):  # stale: falls back to the analysis
            staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], plan=str(tmp_path))


@pytest.mark.parametrize("extra", [{}, {"output_hidden_states": True},
                                   {"output_hidden_states": True, "output_attentions": True, "return_dict": False}])
def test_decorators_run_for_real_around_the_chain(extra):
    """capture_outputs, merge_with_config_defaults and can_return_tuple are the installed release's own
    wrappers: collected hidden states and attentions, and the tuple form, equal the model's."""
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs
    from staticexec.check.verify import compare

    model = build_tiny_model("LlamaForCausalLM", attn_implementation="eager")
    sample = dict(sample_inputs(model), **extra)
    with torch.no_grad():
        expected = model(**sample)
        out = staticexec.run_subgraphs(model, staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"]), sample)
    assert compare(expected, out) == ""


USER_LLAMA = '''
import torch
from torch import nn


class LlamaDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, h):
        return torch.tanh(self.proj(h))


class LlamaForCausalLM(nn.Module):
    """A user's own class that has the name of one of transformers' classes."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([LlamaDecoderLayer() for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


def test_a_shipped_plan_is_used_only_for_the_class_it_was_made_for(tmp_path, monkeypatch):
    """A user's class named like transformers' LlamaForCausalLM, split with no targets given: its own
    source is analysed (the shipped plan of transformers' class is not taken for it), and it splits exactly."""
    import sys

    (tmp_path / "user_llama_model.py").write_text(USER_LLAMA)
    monkeypatch.syspath_prepend(str(tmp_path))
    import user_llama_model

    assert staticexec.api.shipped_plans() is not None
    model = user_llama_model.LlamaForCausalLM()
    sample = {"x": torch.randn(2, 3, 8)}
    chain = staticexec.subgraphs(model, sample)
    assert [sg.targets for sg in chain] == [[], ["layers.0"], ["layers.1"], ["layers.2"]]
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))
    sys.modules.pop("user_llama_model", None)


class _Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x)


class _Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, h):
        return torch.tanh(self.proj(h))


class _TowerThroughHelper(torch.nn.Module):
    """A tower called from a helper method: opaque code, which the subgraph's own source does not name."""

    def __init__(self):
        super().__init__()
        self.tower = _Tower()
        self.layers = torch.nn.ModuleList([_Layer() for _ in range(2)])

    def _features(self, x):
        return self.tower(x) * 2

    def forward(self, x):
        h = self._features(x)
        for layer in self.layers:
            h = layer(h)
        return h


def test_submodules_list_the_modules_opaque_code_calls_once_the_subgraph_ran():
    """llm-compressor asks a subgraph for its submodules after its calibration run, to finish calibrating
    them: the tower the helper calls must be there, with the modules below it, in call order."""
    model = _TowerThroughHelper()
    sample = {"x": torch.randn(2, 3, 8)}
    chain = staticexec.subgraphs(model, sample, ["_Layer"])
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))
    first = chain[0].submodules(model)
    assert model.tower in first and model.tower.proj in first
    assert first.index(model.tower) < first.index(model.tower.proj)
    assert chain[0].submodules(model, recurse=False) == [model.tower]
    assert chain[1].submodules(model) == [model.layers[0], model.layers[0].proj]
    assert all(model.tower not in sg.submodules(model) for sg in chain[1:])


class _OwnCallLayer(_Layer):
    """A layer whose class has a `__call__` of its own (as transformers' GradientCheckpointingLayer)."""

    def __call__(self, *args, **kwargs):
        return super().__call__(*args, **kwargs)


class _Keyed(torch.nn.Module):
    """Layers registered in a ModuleDict under keys that are digits."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleDict({"0": _Layer(), "1": _Layer()})

    def forward(self, x):
        h = x
        for block in self.blocks.values():
            h = block(h)
        return h


class _KeyedOwnCall(_Keyed):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleDict({"0": _OwnCallLayer(), "1": _OwnCallLayer()})


@pytest.mark.parametrize("cls, target", [(_Keyed, "_Layer"), (_KeyedOwnCall, "_OwnCallLayer")])
def test_a_target_is_reached_by_the_key_it_is_registered_under(cls, target):
    """The subgraph finds each target at its path as `named_modules` walks it (`blocks._modules['0']`), not
    through the container's `__getitem__` (a ModuleDict's is by string key), and calls it through
    call_target only where torch's own `__call__` would run for it: a class with its own is called as written."""
    model = cls()
    sample = {"x": torch.randn(2, 8)}
    chain = staticexec.subgraphs(model, sample, [target])
    assert [sg.targets for sg in chain] == [[], ["blocks.0"], ["blocks.1"]]
    assert "self.blocks._modules['1']" in chain[2].source
    assert ("_sx.call_target(" in chain[2].source) is (target == "_Layer")
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))
    assert chain[1].submodules(model, recurse=False) == [model.blocks["0"]]


class _Normed(_Tower):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)


class _OddKeys(_Keyed):
    """Layers registered under keys that are no attribute names: a keyword, one holding brackets."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleDict({"class": _Normed(), "a]b": _Normed()})

    def forward(self, x):
        h = x
        for block in self.blocks.values():
            h = block.norm(h)
            h = block(h)
        return h


def test_keys_that_are_no_attribute_names_are_reached_and_listed_as_registered():
    """`self.blocks.class` would not compile, and a key holding `]` must still give the module's own path: the
    modules a subgraph calls are listed before it ever ran (llm-compressor asks for them to calibrate)."""
    model = _OddKeys()
    sample = {"x": torch.randn(2, 8)}
    chain = staticexec.subgraphs(model, sample, ["_Normed"])
    assert [sg.targets for sg in chain] == [[], ["blocks.class"], ["blocks.a]b"]]
    listed = [path for sg in chain for path in sg.module_paths]
    assert "blocks.class.norm" in listed and "blocks.a]b.norm" in listed
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))


def test_a_config_of_another_model_type_is_refused_before_the_analysis():
    """A plan records the model types it was made for: a config of another is turned away."""
    from transformers import GPT2Config

    from staticexec.api import analyse_architecture

    with pytest.raises(UsageError, match=r"the config: model_type 'gpt2' is not LlamaForCausalLM's \(.*llama\)"):
        analyse_architecture("LlamaForCausalLM", config=GPT2Config())


def test_a_subgraph_split_of_a_users_subclass_of_a_class_transformers_exports_lazily(monkeypatch):
    """The subclass's base is named as `from transformers import LlamaForCausalLM`: read from source
    (lazy.py), the split is Llama's, exact."""
    import os
    import sys

    from transformers import LlamaConfig

    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.delitem(sys.modules, "fixtures.userclass.derived_llama", raising=False)
    from fixtures.userclass.derived_llama import MyLlama

    torch.manual_seed(0)
    model = MyLlama(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                num_key_value_heads=2, vocab_size=128)).eval()
    sample = sample_inputs(model)
    chain = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"])
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample).logits, model(**sample).logits)
    assert len(chain) == 3


def test_a_config_of_the_model_classs_own_config_class_is_the_architectures():
    """A causal-LM head of a composite model takes its text config (the class's `config_class`), whose
    model type no auto mapping names for it."""
    from transformers import Emu3TextConfig, GPT2Config

    from staticexec.analysis.architectures import check_model_type

    check_model_type("Emu3ForCausalLM", Emu3TextConfig())
    with pytest.raises(UsageError, match=r"model_type 'gpt2' is not Emu3ForCausalLM's \(emu3, emu3_text_model\)"):
        check_model_type("Emu3ForCausalLM", GPT2Config())
