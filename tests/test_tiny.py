"""Tiny models: built from config defaults alone, small, runnable, and still exercising
what verification needs (every layer kind, windows shorter than the sample, special
ids inside the vocab)."""

from __future__ import annotations

import functools

import pytest
import torch
import transformers

from staticexec.tiny import (
    TinyBuildError,
    UnknownArchitecture,
    build_tiny_model,
    config_class_for,
    default_targets,
    model_class_for,
    param_mb,
    role,
    sample_inputs,
    special_token_ids,
    tiny_config,
)

SAMPLE_LEN = 16

# The decoder layer class each architecture's calibration targets.
DECODER_LAYER = {
    "LlamaForCausalLM": "LlamaDecoderLayer",
    "MistralForCausalLM": "MistralDecoderLayer",
    "Qwen2ForCausalLM": "Qwen2DecoderLayer",
    "Qwen3ForCausalLM": "Qwen3DecoderLayer",
    "Gemma2ForCausalLM": "Gemma2DecoderLayer",
    "Gemma3ForCausalLM": "Gemma3DecoderLayer",
    "Phi3ForCausalLM": "Phi3DecoderLayer",
    "GPT2LMHeadModel": "GPT2Block",
    "OPTForCausalLM": "OPTDecoderLayer",
    "FalconForCausalLM": "FalconDecoderLayer",
    "MixtralForCausalLM": "MixtralDecoderLayer",
    "Qwen3MoeForCausalLM": "Qwen3MoeDecoderLayer",
    "DeepseekV3ForCausalLM": "DeepseekV3DecoderLayer",
    "GptOssForCausalLM": "GptOssDecoderLayer",
}
ARCHS = sorted(DECODER_LAYER)


@functools.cache
def full(arch: str) -> transformers.PretrainedConfig:
    return config_class_for(arch)()


@functools.cache
def tiny(arch: str) -> transformers.PretrainedConfig:
    return tiny_config(arch, sample_len=SAMPLE_LEN)


@functools.cache
def model(arch: str, attn: str = "eager") -> torch.nn.Module:
    return build_tiny_model(arch, attn_implementation=attn)


def layer_count(config: transformers.PretrainedConfig) -> int:
    return next(v for k, v in config.to_dict().items() if role(k) == "layers")


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("arch", ARCHS)
def test_builds_small_and_runs(arch: str, attn: str) -> None:
    if attn == "sdpa" and not model_class_for(arch)._supports_sdpa:
        with pytest.raises(TinyBuildError, match="scaled_dot_product_attention"):
            model(arch, attn)
        return
    m = model(arch, attn)
    assert not m.training
    assert all(p.dtype == torch.float32 for p in m.parameters())
    assert param_mb(m) < 5
    inputs = sample_inputs(m, seq_len=SAMPLE_LEN)
    with torch.no_grad():
        logits = m(**inputs).logits
    assert logits.shape == (2, SAMPLE_LEN, m.config.vocab_size)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_few_layers_every_layer_kind_kept(arch: str) -> None:
    config = tiny(arch)
    assert 2 <= layer_count(config) <= 4
    for key in ("layer_types", "mlp_layer_types"):
        before, after = getattr(full(arch), key, None), getattr(config, key, None)
        if before is not None:
            assert len(after) == layer_count(config)
            assert set(after) == set(before)


def test_cache_default_is_kept() -> None:
    """The model's own use_cache default is verified, so caches are threaded across cuts."""
    for arch in ARCHS:
        assert tiny(arch).use_cache == getattr(full(arch), "use_cache", None)


def test_dense_and_moe_layers_both_kept() -> None:
    config = tiny("DeepseekV3ForCausalLM")
    assert 0 < config.first_k_dense_replace < config.num_hidden_layers
    kinds = {type(layer.mlp).__name__ for layer in model("DeepseekV3ForCausalLM").model.layers}
    assert kinds == {"DeepseekV3MLP", "DeepseekV3MoE"}


@pytest.mark.parametrize("arch", ARCHS)
def test_sliding_windows_shorter_than_sample(arch: str) -> None:
    window = getattr(tiny(arch), "sliding_window", None)
    if getattr(full(arch), "sliding_window", None) is not None and "sliding_attention" in (
        getattr(full(arch), "layer_types", None) or ["sliding_attention"]
    ):
        assert window is not None
    if window is not None:
        assert window < SAMPLE_LEN


def test_window_follows_sample_len() -> None:
    assert tiny_config("MistralForCausalLM", sample_len=32).sliding_window == 16
    assert tiny_config("MistralForCausalLM", sample_len=6).sliding_window == 3


@pytest.mark.parametrize("arch", ARCHS)
def test_special_ids_inside_vocab_and_distinct(arch: str) -> None:
    config = tiny(arch)
    assert config.vocab_size <= 512
    names = [k for k, v in full(arch).to_dict().items() if role(k) == "token" and isinstance(v, int)]
    for name in names:
        assert 0 <= getattr(config, name) < config.vocab_size, name
    for a in names:
        for b in names:
            if getattr(full(arch), a) != getattr(full(arch), b):
                assert getattr(config, a) != getattr(config, b), (a, b)


def test_large_special_ids_stay_distinct() -> None:
    """Llama-3 style ids far above the tiny vocab move inside it without colliding."""
    config = transformers.LlamaConfig(bos_token_id=128000, eos_token_id=[128001, 128009], pad_token_id=128004)
    small = tiny_config("LlamaForCausalLM", config)
    ids = [small.bos_token_id, *small.eos_token_id, small.pad_token_id]
    assert all(0 <= i < small.vocab_size for i in ids)
    assert len(set(ids)) == 4
    assert small.bos_token_id < small.eos_token_id[0] < small.pad_token_id < small.eos_token_id[1]


@pytest.mark.parametrize("arch", ARCHS)
def test_heads_consistent_and_sharing_kept(arch: str) -> None:
    config, before = tiny(arch), full(arch)
    heads = config.num_attention_heads
    hidden = config.hidden_size
    assert hidden <= 64 and heads <= 4
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    if not hasattr(config, "qk_rope_head_dim"):
        assert heads * head_dim == hidden
    for key in ("num_key_value_heads", "num_kv_heads"):
        kv, kv_before = getattr(config, key, None), getattr(before, key, None)
        if kv is not None and kv_before is not None:
            assert heads % kv == 0
            assert (kv < heads) == (kv_before < before.num_attention_heads)


@pytest.mark.parametrize("arch", [a for a in ARCHS if "Moe" in a or a in ("MixtralForCausalLM", "GptOssForCausalLM", "DeepseekV3ForCausalLM")])
def test_experts_few(arch: str) -> None:
    config = tiny(arch)
    experts = getattr(config, "num_local_experts", None) or getattr(config, "n_routed_experts", None)
    assert 2 <= experts <= 4
    assert 1 <= config.num_experts_per_tok <= min(2, experts)


@pytest.mark.parametrize("arch", ARCHS)
def test_default_targets_are_decoder_layers(arch: str) -> None:
    assert default_targets(model(arch)) == [DECODER_LAYER[arch]]


def test_default_targets_fall_back_to_layer_stack() -> None:
    m = model("LlamaForCausalLM")
    m._no_split_modules = None
    m.model._no_split_modules = None
    try:
        assert default_targets(m) == ["LlamaDecoderLayer"]
    finally:
        del m._no_split_modules, m.model._no_split_modules
    assert default_targets(m) == ["LlamaDecoderLayer"]


def test_default_targets_keep_outermost() -> None:
    m = model("LlamaForCausalLM")
    m._no_split_modules = ["LlamaDecoderLayer", "LlamaMLP"]
    try:
        assert default_targets(m) == ["LlamaDecoderLayer"]
    finally:
        del m._no_split_modules


def test_sample_inputs_left_padded_and_ordinary() -> None:
    m = model("GPT2LMHeadModel")
    inputs = sample_inputs(m, batch=2, seq_len=SAMPLE_LEN, seed=1)
    assert inputs["attention_mask"][0].all()
    assert inputs["attention_mask"][1].tolist() == [0, 0] + [1] * (SAMPLE_LEN - 2)
    ids = inputs["input_ids"]
    assert ids.shape == (2, SAMPLE_LEN) and int(ids.max()) < m.config.vocab_size
    assert not set(ids.flatten().tolist()) & special_token_ids(m.config)
    assert torch.equal(ids, sample_inputs(m, seq_len=SAMPLE_LEN, seed=1)["input_ids"])
    assert set(inputs) == {"input_ids", "attention_mask"}


def test_same_seed_same_weights() -> None:
    a = build_tiny_model("LlamaForCausalLM", seed=3)
    b = build_tiny_model("LlamaForCausalLM", seed=3)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name


def test_user_config_pattern_kept() -> None:
    """A given config is shrunk too: Qwen2's sliding layers past max_window_layers survive."""
    config = transformers.Qwen2Config(num_hidden_layers=12, use_sliding_window=True, sliding_window=4096,
                                      max_window_layers=9)
    small = tiny_config("Qwen2ForCausalLM", config)
    assert set(small.layer_types) == {"full_attention", "sliding_attention"}
    assert small.sliding_window < SAMPLE_LEN
    assert config.num_hidden_layers == 12


def test_rope_sections_follow_head_dim() -> None:
    config = transformers.Qwen2VLConfig(
        text_config={"rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}}
    )
    text = tiny_config("Qwen2VLForConditionalGeneration", config).text_config
    head_dim = text.hidden_size // text.num_attention_heads
    assert sum(text.rope_parameters["mrope_section"]) == head_dim // 2


def test_unknown_architecture() -> None:
    with pytest.raises(UnknownArchitecture) as caught:
        config_class_for("NoSuchModelForCausalLM")
    assert isinstance(caught.value, TinyBuildError) and isinstance(caught.value, KeyError)
    assert "NoSuchModelForCausalLM" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(UnknownArchitecture):
        build_tiny_model("NoSuchModelForCausalLM")
