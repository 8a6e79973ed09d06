"""The instance runs the planned code: hooks, replaced forwards and a changed file on disk are refused."""

from __future__ import annotations

import importlib.util
import shutil
import sys

import pytest
import torch

from soundness import cases
from staticexec.api import subgraphs
from staticexec.messages import Refused
from staticexec.emit.run import run_subgraphs
from staticexec.analysis.source import load_file


def _load_copy(tmp_path, name: str, module: str):
    case = next(c for c in cases() if c.name == name)
    path = tmp_path / f"{module}.py"
    shutil.copy(case.path, path)
    load_file(str(path), module, f"{module}.py")
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return path, mod


def test_a_file_changed_after_import_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, mod = _load_copy(tmp_path, "ok_loop_over_layers", "staticexec_stale_copy")
    model, sample = mod.build()
    path.write_text(path.read_text().replace("h = layer(h)", "h = layer(h) * 2"))
    with pytest.raises(Refused) as info:
        subgraphs(model, sample, ["Layer"])
    kinds = {m.kind for m in info.value.messages}
    assert "stale-source" in kinds
    assert all(m.line > 0 for m in info.value.messages)


def test_an_unchanged_copy_is_not_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, mod = _load_copy(tmp_path, "ok_loop_over_layers", "staticexec_fresh_copy")
    model, sample = mod.build()
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, subgraphs(model, sample, ["Layer"]), sample), model(**sample))


@pytest.mark.parametrize("name", ["hook_on_root", "pre_hook_with_kwargs_on_root", "pre_hook_on_ancestor",
                                  "forward_replaced_on_instance", "accelerate_like_hook_on_root"])
def test_refusals_name_the_hook_or_function(name):
    case = next(c for c in cases() if c.name == name)
    model, sample = case.load().build()
    with pytest.raises(Refused) as info:
        subgraphs(model, sample, case.targets)
    first = info.value.first
    assert first.path.endswith(f"{name}.py") and first.line > 0


def test_accelerate_cpu_offload_is_honoured():
    """cpu_offload: weights on meta, loaded by hooks on the leaf modules; the root's hook only aligns devices."""
    accelerate = pytest.importorskip("accelerate")
    case = next(c for c in cases() if c.name == "ok_loop_over_layers")
    model, sample = case.load().build()
    reference, _ = case.load().build()
    accelerate.cpu_offload(model, execution_device=torch.device("cpu"))
    assert any(p.device.type == "meta" for p in model.parameters())
    chain = subgraphs(model, sample, ["Layer"])
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), reference(**sample))


def test_accelerate_hook_that_moves_the_model_is_refused():
    accelerate = pytest.importorskip("accelerate")
    case = next(c for c in cases() if c.name == "ok_loop_over_layers")
    model, sample = case.load().build()
    accelerate.cpu_offload_with_hook(model, execution_device=torch.device("cpu"))
    with pytest.raises(Refused, match="CpuOffload"):
        subgraphs(model, sample, ["Layer"])


def test_accelerate_cpu_offload_of_a_tiny_llama():
    accelerate = pytest.importorskip("accelerate")
    import copy

    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs
    from staticexec.check.verify import _CallLog, _check_calls

    model = build_tiny_model("LlamaForCausalLM")
    sample = dict(sample_inputs(model), use_cache=False)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        expected = reference(**sample).logits
    accelerate.cpu_offload(model, execution_device=torch.device("cpu"))
    chain = subgraphs(model, sample, ["LlamaDecoderLayer"])
    log = _CallLog(model, {"LlamaDecoderLayer"})
    try:
        from staticexec.emit.run import run_chain

        with torch.no_grad():
            out = run_chain(model, chain, sample, before=lambda sg: setattr(log, "current", sg.index))
    finally:
        log.close()
    assert torch.equal(out["forward_output"].logits, expected)
    layers = [f"model.layers.{i}" for i in range(model.config.num_hidden_layers)]
    assert _check_calls([(n, -1) for n in layers], log.calls, len(chain)) == ""


def test_a_forward_hook_on_a_tiny_qwen3_root_is_refused():
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs

    model = build_tiny_model("Qwen3ForCausalLM")
    sample = sample_inputs(model)
    model.register_forward_hook(lambda module, args, out: out)
    with pytest.raises(Refused) as info:
        subgraphs(model, sample, ["Qwen3DecoderLayer"])
    assert info.value.first.kind == "instance-hook" and info.value.first.line > 0


def test_a_plan_made_from_source_refuses_an_instance_whose_blocks_were_linearized(tmp_path):
    """ok_targets_subclass_selected_by_base_name: from its source, each MoE holds fused experts and no target. A plan
    made from the class alone, given an instance whose experts were linearized into modules of a target class, is
    refused where the MoE is called; the same instance with no plan given is analysed where it holds them and split."""
    import staticexec
    from staticexec.analysis.source import ClassRef

    module = "linearized_after_plan"
    _, mod = _load_copy(tmp_path, "ok_targets_subclass_selected_by_base_name", module)
    targets = ["Attention", "ExpertMLP"]
    plan = tmp_path / "plan.json"
    plan.write_text(staticexec.analyse(ClassRef(module, "Model"), targets).to_json())
    model, sample = mod.build()
    with pytest.raises(Refused, match=r"linearized_after_plan.py:\d+: the model instance does not match the plan: MoE "
                                      r"holds targets, and the plan has no analysis of linearized_after_plan:MoE.forward"):
        subgraphs(model, sample, targets, plan=str(plan))
    chain = subgraphs(model, sample, targets)
    assert [sg.targets for sg in chain if sg.targets] == [
        ["attn.0"], ["moe.0.experts.experts.0"], ["moe.0.experts.experts.1"],
        ["attn.1"], ["moe.1.experts.experts.0"], ["moe.1.experts.experts.1"]]
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
