"""The foundation's claim: 14 decoder-only architectures verified exactly, eager and sdpa.

`make test` runs the 14 in eager attention; sdpa, the patterns below, the vision-and-text and the
encoder-decoder cases carry the slow mark and run with the sweeps (`make verify`, and CI).
"""

from __future__ import annotations

import pytest

from staticexec.check import matrix
from staticexec.check.configs import model_class_for
from staticexec.check.models import build_tiny_model
from staticexec.check.samples import sample_inputs
from staticexec.check.verify import verify

# every test here builds tiny models of transformers' own architectures: `pytest -m "not integration"` runs the rest
pytestmark = pytest.mark.integration

ARCHITECTURES = [
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Phi3ForCausalLM",
    "GPT2LMHeadModel",
    "OPTForCausalLM",
    "FalconForCausalLM",
    "MixtralForCausalLM",
    "Qwen3MoeForCausalLM",
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
]


@pytest.mark.parametrize("attn", ["eager", pytest.param("sdpa", marks=pytest.mark.slow)])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_verify(arch, attn):
    verdict = verify(arch, attn_implementation=attn)
    if verdict.status == "n/a":
        # only where transformers itself refuses this attention implementation for the model
        assert attn != "eager"
        assert not getattr(model_class_for(arch), "_supports_sdpa", True)
        return
    assert verdict.status == "ok", verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1
    assert verdict.targets_called >= 2


@pytest.mark.parametrize("targets_from", ["linear", "sublayer"])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_verify_below_the_layer(arch, targets_from):
    """Every Linear (and GPT-2's Conv1D), or the attention and MLP (or MoE) classes of the layers, as targets:
    one target call per subgraph, each exactly once, outputs exact under the pipeline's double run."""
    verdict = verify(arch, targets_from=targets_from)
    assert verdict.status == "ok", verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1
    # two layers: every Linear is at least an attention's and an MLP's; the parts, at least an attention
    assert verdict.targets_called >= (2 * 2 if targets_from == "linear" else 2), verdict.line()


# attention plus the expert class of each MoE architecture (the experts fused into one module per layer)
ATTENTION_AND_EXPERTS = [
    ("Qwen3MoeForCausalLM", ["Qwen3MoeAttention", "Qwen3MoeExperts"]),
    ("DeepseekV3ForCausalLM", ["DeepseekV3Attention", "DeepseekV3Experts"]),
    ("GptOssForCausalLM", ["GptOssAttention", "GptOssExperts"]),
    ("MixtralForCausalLM", ["MixtralAttention", "MixtralExperts"]),
]


@pytest.mark.parametrize("arch, targets", ATTENTION_AND_EXPERTS, ids=[a for a, _ in ATTENTION_AND_EXPERTS])
def test_attention_and_experts_as_targets(arch, targets):
    verdict = verify(arch, targets=targets)
    assert verdict.status == "ok", verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1
    assert set(verdict.calls) == set(targets), verdict.line()  # each class ran, every call in a subgraph of its own


def test_mistral_sliding_window_is_exercised():
    model = build_tiny_model("MistralForCausalLM")
    sample = sample_inputs(model)
    assert model.config.sliding_window < sample["input_ids"].shape[1]




def fast_first(cases: list, fast: set[str], ids: list[str] | None = None) -> list:
    """The cases as parameters: those named in `fast` run in `make test`; the others carry the slow mark,
    so `make verify` (and CI) runs them, while `make test` keeps to the foundation and one of each kind."""
    names = ids or [c if isinstance(c, str) else c[0] for c in cases]
    return [pytest.param(*(c if isinstance(c, tuple) else (c,)), id=name,
                         marks=() if name in fast else pytest.mark.slow) for c, name in zip(cases, names)]


# A representative subset of the causal-LM sweep (the whole sweep is `make verify`): hybrid and
# state-space stacks, shared blocks, per-layer inputs, encoder-style heads, legacy code, custom
# autograd functions, multi-codebook inputs, and composite models holding a vision tower. One, a
# state-space stack, runs in `make test`; the rest run with the slow sweeps.
PATTERNS = [
    "MambaForCausalLM",
    "JambaForCausalLM",
    "ZambaForCausalLM",
    "Zamba2ForCausalLM",
    "RwkvForCausalLM",
    "RecurrentGemmaForCausalLM",
    "Qwen3NextForCausalLM",
    "Gemma3nForCausalLM",
    "BertLMHeadModel",
    "CTRLLMHeadModel",
    "XLNetLMHeadModel",
    "ReformerModelWithLMHead",
    "ProphetNetForCausalLM",
    "MusicgenForCausalLM",
    "Gemma3ForConditionalGeneration",
]


FAST_PATTERNS = {"MambaForCausalLM"}


@pytest.mark.parametrize("arch", fast_first(PATTERNS, FAST_PATTERNS))
def test_verify_pattern_subset(arch):
    verdict = verify(arch)
    assert verdict.status == "ok", verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1


def test_a_layer_called_twice_by_design_is_reported():
    verdict = verify("HrmTextForCausalLM")
    assert verdict.status == "repeated-target"
    assert "by design" in verdict.reason


# Multimodal samples with the vision tower's layers and the text model's layers as targets together
# (the same list the release matrix runs on every release). Llava runs in `make test`; the others, among
# them Mistral3 (its tiny Pixtral tower takes a full-size image: about 80 s of eager attention on 2
# cores) and Mllama (tiled images), run with the slow sweeps (`make verify`) and in the release matrix.
VISION_AND_TEXT = matrix.VISION_AND_TEXT
FAST_VISION_AND_TEXT = {"LlavaForConditionalGeneration"}


@pytest.mark.parametrize("arch, vision, text", fast_first(VISION_AND_TEXT, FAST_VISION_AND_TEXT))
def test_vision_and_text_layers_as_targets_together(arch, vision, text):
    verdict = verify(arch, targets=vision + text, sample="multimodal")
    assert verdict.status == "ok", verdict.line()
    # every target class really ran, each call in a subgraph of its own
    assert set(verdict.calls) == set(vision + text), verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1


ENCODER_DECODER = [
    ("BartForConditionalGeneration", "BartEncoderLayer", "BartDecoderLayer", "text"),
    ("T5ForConditionalGeneration", "T5Block", "T5Block", "text"),
    ("WhisperForConditionalGeneration", "WhisperEncoderLayer", "WhisperDecoderLayer", "multimodal"),
    ("Speech2TextForConditionalGeneration", "Speech2TextEncoderLayer", "Speech2TextDecoderLayer", "multimodal"),
]


@pytest.mark.parametrize("arch, encoder, decoder, sample", fast_first(
    ENCODER_DECODER, {"T5ForConditionalGeneration"},
    ids=[f"{a}-{e}-{d}-{s}" for a, e, d, s in ENCODER_DECODER]))
def test_encoder_and_decoder_layers_as_targets(arch, encoder, decoder, sample):
    verdict = verify(arch, targets=sorted({encoder, decoder}), sample=sample)
    assert verdict.status == "ok", verdict.line()
    assert set(verdict.calls) == {encoder, decoder}
    # both stacks are cut: every layer of the tiny encoder and decoder has its own subgraph
    assert verdict.targets_called >= 4
    assert verdict.subgraphs == verdict.targets_called + 1
