"""llm-compressor's `oneshot` on the remote-code corpus (fixtures/remote_code), loaded with trust_remote_code.

Each folder's model runs GPTQ W4A16 (every Linear, the LM head ignored) through the sequential
pipeline twice: with staticexec's subgraphs (`patch()`) and with llm-compressor's own tracer.
Where the own tracer completes, the weights are identical; where it fails, staticexec's run
completes with every targeted Linear quantized. What each tracer does on each folder, with
llmcompressor 0.14.0.1 and transformers 5.17.0, is an expectation below.
"""

from __future__ import annotations

import os

import pytest
import torch

from .cases import IMAGE_TOKENS, SAMPLES, SEQ, Case, Record, oneshot_run
from .test_oneshot import assert_same_weights, own_run, staticexec_run

pytestmark = pytest.mark.client

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "fixtures", "remote_code")
REMOTE = {"trust_remote_code_model": True}  # oneshot reads the saved folder's config with its own code


def _tokens(vocab: int, seq: int = SEQ, seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab - 1, (seq,), generator=g).tolist() for _ in range(SAMPLES)]


def _text(vocab: int):
    return lambda: {"input_ids": _tokens(vocab)}


def _image(vocab: int, image_token: int, side: int, patches: int):
    def data() -> dict[str, list]:
        g = torch.Generator().manual_seed(4)
        ids = [[image_token] * patches + row[:8] for row in _tokens(vocab)]
        return {"input_ids": ids, "pixel_values": [torch.randn(3, side, side, generator=g).tolist() for _ in ids]}

    return data


def _case(folder: str, vocab: int, head: str = "lm_head", data=None, **kwargs) -> Case:
    return Case(folder, lambda: None, "AutoModelForCausalLM", data or _text(vocab), None, ignore=[head],
                remote_code=os.path.join(CORPUS, folder), **kwargs)


# sequential targets: the pipeline's default, the model's _no_split_modules
REMOTE_CASES = {c.name: c for c in [
    _case("tiny_causal", 64, head="head"),
    _case("sparse_moe", 96),
    _case("mla_moe", 128),
    # _no_split_modules holds the vision and the text layers: calibrated on images, both run
    _case("vlm_tower", 96, data=_image(96, 95, 16, 16), input_names=["input_ids", "attention_mask", "pixel_values"]),
    _case("hybrid_layers", 80),
    _case("dual_auto", 112, head="output"),
    _case("glm_blocks", 64, head="re:.*output_layer$"),
]}
assert IMAGE_TOKENS == 16  # the VLM's 16 px image in 4 px patches gives as many

GROUP = 8  # W4A16's group of 128 columns is wider than these models' Linear inputs (8 to 64): groups of 8


def w4a16(case: Case):
    """GPTQ W4A16 (4-bit symmetric int weights in groups, 16-bit activations) on the case's targets."""
    from compressed_tensors.quantization import preset_name_to_scheme
    from llmcompressor.modifiers.quantization import GPTQModifier

    scheme = preset_name_to_scheme("W4A16", case.quant_targets)
    scheme = scheme.model_copy(update={"weights": scheme.weights.model_copy(update={"group_size": GROUP})})
    return GPTQModifier(config_groups={"group_0": scheme}, ignore=case.ignore)


EQUAL = ["tiny_causal", "sparse_moe", "mla_moe", "hybrid_layers", "dual_auto", "glm_blocks"]  # weights torch.equal
OWN_TRACER_FAILS = {  # own tracer stops in oneshot; staticexec quantizes every targeted Linear
    # as for Llava with images (test_oneshot.py): the tower runs from the root's `_image_features`
    # helper, inside code the autowrapper wrapped, in a first subgraph that lists none of its
    # modules ("Expected 5 subgraphs, but only traced 3"); oneshot stops after its calibration pass
    "vlm_tower": (AssertionError, "No statistics available"),
}
assert sorted(EQUAL + list(OWN_TRACER_FAILS)) == sorted(REMOTE_CASES)


@pytest.mark.parametrize("name", EQUAL)
def test_gptq_w4a16_on_remote_code_equals_llmcompressor_tracer(name):
    case = REMOTE_CASES[name]
    ours = staticexec_run(case, recipe=w4a16(case), **REMOTE)
    theirs = own_run(case, recipe=w4a16(case), **REMOTE)
    assert len(ours.record.subgraph_runs) == len(theirs.record.subgraph_runs) == len(ours.record.target_calls) + 1
    assert_same_weights(ours, theirs, case)


@pytest.mark.parametrize("name", sorted(OWN_TRACER_FAILS))
def test_gptq_w4a16_on_remote_code_quantizes_every_target_where_llmcompressor_tracer_fails(name):
    case = REMOTE_CASES[name]
    ours = staticexec_run(case, recipe=w4a16(case), **REMOTE)
    assert len(ours.record.subgraph_runs) == len(ours.record.target_calls) + 1  # vision and text layers, one each
    error, message = OWN_TRACER_FAILS[name]
    record = Record()
    with pytest.raises(error, match=message):
        oneshot_run(case, staticexec=False, record=record, recipe=w4a16(case), **REMOTE)
    assert (record.trace_calls, record.own_tracer_calls, record.staticexec_calls) == (1, 1, 0)
    assert record.subgraph_runs == [SAMPLES, 0, 0]  # 3 subgraphs; the first one's calibration pass ran


def test_the_remote_code_corpus_is_the_folders_on_disk():
    assert sorted(REMOTE_CASES) == sorted(d for d in os.listdir(CORPUS) if os.path.isfile(os.path.join(CORPUS, d, "config.json")))
