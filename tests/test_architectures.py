"""The foundation's claim: 14 decoder-only architectures verified exactly, eager and sdpa."""

from __future__ import annotations

import pytest

from staticexec import tiny
from staticexec.verify import verify

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


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_verify(arch, attn):
    verdict = verify(arch, attn_implementation=attn)
    if verdict.status == "n/a":
        # only where transformers itself refuses this attention implementation for the model
        assert attn != "eager"
        assert not getattr(tiny.model_class_for(arch), "_supports_sdpa", True)
        return
    assert verdict.status == "ok", verdict.line()
    assert verdict.subgraphs == verdict.targets_called + 1
    assert verdict.targets_called >= 2


def test_mistral_sliding_window_is_exercised():
    model = tiny.build_tiny_model("MistralForCausalLM")
    sample = tiny.sample_inputs(model)
    assert model.config.sliding_window < sample["input_ids"].shape[1]
