"""llm-compressor's `oneshot`, sequential pipeline, with staticexec's subgraphs (`make client`)."""

from __future__ import annotations

import pytest
import torch

from .cases import CASES, SAMPLES, Case, Record, Run, oneshot_run, quantizable, target_modules, unquantized

pytestmark = pytest.mark.client


def test_patch_rebinds_the_pipeline_tracer_and_restores_it():
    from llmcompressor.pipelines.sequential import helpers, pipeline

    import staticexec.llmcompressor as integration

    with integration.patch():
        assert pipeline.trace_subgraphs is integration.trace_subgraphs
    assert pipeline.trace_subgraphs is helpers.trace_subgraphs
    plain = integration.patch()
    assert pipeline.trace_subgraphs is integration.trace_subgraphs
    plain.undo()
    assert pipeline.trace_subgraphs is helpers.trace_subgraphs


# Every case runs oneshot twice: through staticexec's subgraphs (`patch()`) and through
# llm-compressor's own tracer. What the own tracer does on each case, with llmcompressor 0.14.0.1
# and transformers 5.17.0, is an expectation below: a change in it fails the test that states it.
EQUAL = ["llama", "gpt2", "llava_text"]  # weights torch.equal
OWN_TRACER_FAILS = {  # own tracer stops in oneshot; staticexec quantizes every targeted Linear
    # its trace warns "Expected 4 subgraphs, but only traced 3": the encoder (Llava: the vision tower)
    # runs inside code its autowrapper wrapped, in a first subgraph that lists none of its modules,
    # and oneshot stops after that subgraph's calibration pass
    "bart": (AssertionError, "No statistics available"),
    "whisper": (AssertionError, "No statistics available"),
    "llava_image": (AssertionError, "No statistics available"),
    # the vision tower runs in the first subgraph, which lists none of its modules either
    "llava_image_text_targets": (AssertionError, "No statistics available"),
    # as Llava's: the SigLIP tower runs inside wrapped code in a first subgraph listing none of its modules
    "gemma3_image": (AssertionError, "No statistics available"),
}
EXPLAINED = ["qwen3_moe", "t5"]  # own tracer completes with other weights: a test of each says why
assert sorted(EQUAL + list(OWN_TRACER_FAILS) + EXPLAINED) == sorted(CASES)


def staticexec_run(case: Case, **kwargs) -> Run:
    """oneshot through `patch()`: staticexec's tracer was the one the pipeline called, the pipeline ran,
    and every targeted Linear is quantized."""
    run = oneshot_run(case, staticexec=True, **kwargs)
    assert_staticexec_traced(run.record)
    assert list(quantizable(run.model, case))
    assert unquantized(run.model, case) == []
    return run


def assert_staticexec_traced(record: Record) -> None:
    import staticexec.llmcompressor as integration

    # the pipeline called the patched name once, and it was staticexec's, which called staticexec.subgraphs
    assert record.traced_by is integration.trace_subgraphs
    assert (record.trace_calls, record.staticexec_calls, record.own_tracer_calls) == (1, 1, 0)
    assert_pipeline_ran_every_subgraph_twice(record)
    # each target module is entered by its subgraph, once per batch in each pass, and never else (but once, in the
    # model's own forward on the sample, while staticexec emitted, where it read a branch off that run)
    assert set(record.calls_while_tracing.values()) <= {0, 1}, record.calls_while_tracing
    pipeline = {k: v - record.calls_while_tracing.get(k, 0) for k, v in record.target_calls.items()}
    assert pipeline and set(pipeline.values()) == {2 * SAMPLES}, record.target_calls


def own_run(case: Case, **kwargs) -> Run:
    """oneshot through llm-compressor's own tracer (no patch), which the pipeline called."""
    record = Record()
    run = oneshot_run(case, staticexec=False, record=record, **kwargs)
    assert (record.trace_calls, record.own_tracer_calls, record.staticexec_calls) == (1, 1, 0)
    assert_pipeline_ran_every_subgraph_twice(record)
    return run


def assert_pipeline_ran_every_subgraph_twice(record: Record) -> None:
    # SequentialPipeline: for each subgraph, a calibration pass and a propagation pass over every batch
    assert record.subgraph_runs and set(record.subgraph_runs) == {2 * SAMPLES}, record.subgraph_runs


def assert_same_weights(ours: Run, theirs: Run, case: Case) -> None:
    a, b = ours.model.state_dict(), theirs.model.state_dict()
    assert a.keys() == b.keys()
    targeted = [name for name, _ in quantizable(ours.model, case)]
    assert targeted
    assert [n for n in targeted if not torch.equal(a[f"{n}.weight"], b[f"{n}.weight"])] == []
    assert [k for k in a if not torch.equal(a[k], b[k])] == []  # scales, zero points, everything else too


@pytest.mark.parametrize("name", EQUAL)
def test_gptq_w4a16_equals_llmcompressor_tracer(name):
    case = CASES[name]
    ours, theirs = staticexec_run(case), own_run(case)
    assert len(ours.record.subgraph_runs) == len(theirs.record.subgraph_runs)
    assert_same_weights(ours, theirs, case)


def test_llama_two_targets_per_subgraph_equals_llmcompressor_tracer():
    case = CASES["llama"]
    ours = staticexec_run(case, sequential_targets_per_subgraph=2)
    theirs = own_run(case, sequential_targets_per_subgraph=2)
    assert len(ours.record.subgraph_runs) == len(theirs.record.subgraph_runs) == 2
    assert_same_weights(ours, theirs, case)


@pytest.mark.parametrize("name", sorted(OWN_TRACER_FAILS))
def test_gptq_w4a16_quantizes_every_target_where_llmcompressor_tracer_fails(name):
    case = CASES[name]
    staticexec_run(case)
    error, message = OWN_TRACER_FAILS[name]
    record = Record()
    with pytest.raises(error, match=message):
        oneshot_run(case, staticexec=False, record=record)
    assert (record.trace_calls, record.own_tracer_calls, record.staticexec_calls) == (1, 1, 0)
    assert record.subgraph_runs == [SAMPLES, 0, 0]  # 3 subgraphs; the first one's calibration pass ran


def test_qwen3_moe_differs_from_llmcompressor_tracer_whose_calibration_attention_has_no_mask():
    """The weights differ from layer 0's o_proj on, because llm-compressor's tracer calibrates
    Qwen3-MoE with attention that is not causal.

    Qwen3MoeModel.forward calls its mask function through a local
    (`mask_function = create_causal_mask if ... else ...`). llm-compressor's tracer makes
    `create_causal_mask` a leaf of the graph and bakes its `config=self.config` argument in as a
    config rebuilt from `config.to_dict()` (SequentialTracer.create_arg). That drops the attention
    implementation the pipeline forces ("eager"), so on an unpadded batch `create_causal_mask`
    returns None, as for sdpa, and the eager attention then adds no mask: every token sees the
    later ones. (For Llama, on these batches of input_ids alone, the autowrapper wraps the whole
    `create_causal_mask(config=self.config, ...)` statement, which reads the live config, and the
    weights are equal.)
    So the first layer's q, k and v projections, which read only the embeddings, get equal
    weights, and every targeted Linear after the first attention does not. staticexec's
    subgraphs give layer 0 the causal mask and o_proj the inputs of the model's own forward.
    """
    from llmcompressor.utils.helpers import calibration_forward_context

    case = CASES["qwen3_moe"]
    first = "model.layers.0"
    sample = torch.tensor([case.data()["input_ids"][0]])
    seen: dict[str, list] = {}

    def watch(model):
        seen.clear()
        model.get_submodule(f"{first}.self_attn.o_proj").register_forward_pre_hook(
            lambda _, args: seen.setdefault("o_proj", []).append(args[0].detach().clone()))
        model.get_submodule(first).register_forward_pre_hook(
            lambda _, args, kwargs: seen.setdefault("mask", []).append(kwargs.get("attention_mask")), with_kwargs=True)
        with calibration_forward_context(model):  # the model's own forward, as the pipeline calibrates
            model(input_ids=sample)
        seen["reference"] = seen.pop("o_proj")[0]
        seen.pop("mask")

    ours = staticexec_run(case, on_load=watch)
    assert torch.equal(seen["o_proj"][0], seen["reference"])
    assert len(seen["mask"]) == 2 * SAMPLES and all(torch.is_tensor(mask) for mask in seen["mask"])
    theirs = own_run(case, on_load=watch)
    assert not torch.equal(seen["o_proj"][0], seen["reference"])
    # the tracer enters layer 0 once while tracing, with the mask it computes then; then the pipeline's runs
    assert len(seen["mask"]) == 2 * SAMPLES + 1
    assert all(mask is None for mask in seen["mask"][1:])

    a, b = ours.model.state_dict(), theirs.model.state_dict()
    assert a.keys() == b.keys()
    equal = [n for n, _ in quantizable(ours.model, case) if torch.equal(a[f"{n}.weight"], b[f"{n}.weight"])]
    assert equal == [f"{first}.self_attn.{p}_proj" for p in "qkv"]


def test_t5_llmcompressor_tracer_completes_without_calibrating_any_linear():
    """llm-compressor's tracer traces T5 into one subgraph (it warns "Expected 4 subgraphs, but only
    traced 1"), whose code calls no T5Block: the pipeline runs it, but no targeted Linear sees an
    activation. oneshot completes, and every targeted Linear keeps the weight it was loaded with
    (it gets a weight_scale, and the weight is off that scale's grid).
    staticexec splits at each of the 4 T5Blocks and quantizes every targeted Linear."""
    case = CASES["t5"]
    ours = staticexec_run(case)
    assert len(ours.record.subgraph_runs) == 5
    theirs = own_run(case)
    assert len(theirs.record.subgraph_runs) == 1
    assert all(calls <= 1 for calls in theirs.record.target_calls.values())  # at most the trace's own call
    loaded, weights = theirs.record.loaded, theirs.model.state_dict()
    targeted = [name for name, _ in quantizable(theirs.model, case)]
    assert targeted and [n for n in targeted if not torch.equal(weights[f"{n}.weight"], loaded[f"{n}.weight"])] == []
    assert sorted(unquantized(theirs.model, case)) == sorted(targeted)


def test_sparsegpt_on_llama_prunes_every_target_linear_as_llmcompressor_tracer_does():
    # AWQ in llmcompressor 0.14 needs an accelerator (RuntimeError on CPU, with either tracer)
    from llmcompressor.modifiers.pruning import SparseGPTModifier

    case = CASES["llama"]

    def recipe():
        return SparseGPTModifier(sparsity=0.5, mask_structure="0:0", targets=["Linear"], ignore=["lm_head"])

    ours = oneshot_run(case, staticexec=True, recipe=recipe())
    assert_staticexec_traced(ours.record)
    theirs = own_run(case, recipe=recipe())
    model = ours.model
    theirs = theirs.model.state_dict()
    assert [k for k, v in model.state_dict().items() if not torch.equal(v, theirs[k])] == []
    for prefix in target_modules(model, case):
        for name, module in model.get_submodule(prefix).named_modules():
            if isinstance(module, torch.nn.Linear):
                zeros = (module.weight == 0).float().mean().item()
                assert zeros >= 0.49, f"{prefix}.{name}: {zeros:.2f} zeros"
