"""Tiny models: built from config defaults alone, small, runnable, and still exercising
what verification needs (every layer kind, windows shorter than the sample, special
ids inside the vocab)."""

from __future__ import annotations

import functools

import pytest
import torch
import transformers

from staticexec.messages import UsageError
from staticexec.check.configs import MAX_MODEL_MB, TinyBuildError, UnknownArchitecture, config_class_for, model_class_for, role, special_token_ids, tiny_config
from staticexec.check.models import OverLimit, build_tiny_model, built_within, model_mb, param_mb
from staticexec.check.samples import default_targets, sample_inputs

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


def require(arch: str) -> None:
    """Skip, saying so, a test about an architecture the installed transformers does not have."""
    try:
        config_class_for(arch)
    except UnknownArchitecture:
        pytest.skip(f"{arch} is not in the installed transformers {transformers.__version__}")


@functools.cache
def full(arch: str) -> transformers.PretrainedConfig:
    return config_class_for(arch)()


def tiny(arch: str) -> transformers.PretrainedConfig:
    require(arch)
    return _tiny(arch)


@functools.cache
def _tiny(arch: str) -> transformers.PretrainedConfig:
    return tiny_config(arch, sample_len=SAMPLE_LEN)


@functools.cache
def model(arch: str, attn: str = "eager") -> torch.nn.Module:
    return build_tiny_model(arch, attn_implementation=attn)


def layer_count(config: transformers.PretrainedConfig) -> int:
    return next(v for k, v in config.to_dict().items() if role(k) == "layers")


@pytest.mark.parametrize("attn", ["eager", pytest.param("sdpa", marks=pytest.mark.slow)])
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
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, KeyError)
    assert "NoSuchModelForCausalLM" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(UnknownArchitecture):
        build_tiny_model("NoSuchModelForCausalLM")


# -- rules for composite and non-text configs ----------------------------------------------


def rotary_frequencies(text: transformers.PretrainedConfig) -> int:
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    factor = text.rope_parameters.get("partial_rotary_factor", getattr(text, "partial_rotary_factor", None)) or 1.0
    return int(head_dim * factor) // 2


@pytest.mark.parametrize("arch, default", [
    ("Qwen2VLForConditionalGeneration", [16, 24, 24]),
    ("Glm4vForConditionalGeneration", [8, 12, 12]),
    ("Glm4vMoeForConditionalGeneration", [8, 12, 12]),
    ("PaddleOCRVLForConditionalGeneration", [16, 24, 24]),
    ("Ernie4_5_VLMoeForConditionalGeneration", [22, 22, 20]),
])
def test_missing_mrope_section_sized_to_tiny_rotary(arch: str, default: list[int]) -> None:
    """The modeling code falls back to a section sized for the full head dim; the tiny config names its own."""
    assert "mrope_section" not in (full(arch).get_text_config().rope_parameters or {})
    text = tiny(arch).get_text_config()
    section = text.rope_parameters["mrope_section"]
    assert len(section) == len(default)
    assert sum(section) == rotary_frequencies(text)
    assert all(part >= 1 for part in section)
    if default[0] == default[1]:
        assert section[0] == section[1]  # Ernie stacks the first two axes


def test_mrope_section_left_out_of_vision_towers() -> None:
    vision = tiny("Qwen2VLForConditionalGeneration").vision_config
    assert "mrope_section" not in (getattr(vision, "rope_parameters", None) or {})


def test_counts_of_sibling_lists_are_not_thresholds() -> None:
    """`num_conv_layers` counts `conv_kernel_sizes`, not leading layers of the encoder stack."""
    speech = tiny("Speech2TextForConditionalGeneration")
    assert speech.num_conv_layers == len(speech.conv_kernel_sizes)
    wav2vec = tiny("SpeechEncoderDecoderModel").encoder
    assert wav2vec.num_feat_extract_layers == len(wav2vec.conv_dim) == len(wav2vec.conv_stride) == len(wav2vec.conv_kernel)


@pytest.mark.parametrize("arch, encoder, decoder", [
    ("SpeechEncoderDecoderModel", "wav2vec2", "bert"),
    ("VisionEncoderDecoderModel", "vit", "bert"),
    ("EncoderDecoderModel", "bert", "bert"),
])
def test_encoder_decoder_composites_get_default_sub_configs(arch: str, encoder: str, decoder: str) -> None:
    """Releases whose composite has no defaults get the sub-configs the others default to, joined by
    the class's own from_encoder_decoder_configs; where the defaults exist, they are the same."""
    config = tiny(arch)
    assert (config.encoder.model_type, config.decoder.model_type) == (encoder, decoder)
    assert config.decoder.is_decoder and config.decoder.add_cross_attention
    assert tiny_mb(arch) <= MAX_MODEL_MB


def test_stage_widths_and_codebooks_shrink() -> None:
    janus = tiny("JanusForConditionalGeneration")
    assert janus.vision_config.projection_dim <= 64 and janus.vq_config.projection_dim <= 64
    assert janus.vq_config.num_embeddings <= 256
    assert janus.vq_config.base_channels * max(janus.vq_config.channel_multiplier) <= 64
    audio = tiny("VibeVoiceForConditionalGeneration").audio_config
    assert audio.num_filters * 2 ** len(audio.downsampling_ratios) <= 64
    assert max(audio.depths) <= 2 and audio.ffn_expansion <= 2
    codec = tiny("KyutaiSpeechToTextForConditionalGeneration").codec_config
    assert codec.upsample_groups == codec.hidden_size  # depthwise stays depthwise


@pytest.mark.parametrize("arch", ["JanusForConditionalGeneration", "VibeVoiceForConditionalGeneration",
                                  "KyutaiSpeechToTextForConditionalGeneration"])
def test_formerly_huge_models_build_small(arch: str) -> None:
    assert tiny_mb(arch) < 16


def tiny_mb(arch: str) -> float:
    require(arch)
    with torch.device("meta"):
        m = model_class_for(arch)._from_config(tiny(arch), dtype=torch.float32)
    return model_mb(m)


def test_indices_into_another_sub_config_follow_its_layers() -> None:
    """Molmo2's adapter taps vision layers [24, 18]: both are kept, as distinct layers, and renumbered."""
    config = tiny("Molmo2ForConditionalGeneration")
    taps = config.adapter_config.vision_feature_layer
    assert len(taps) == 2 and len(set(taps)) == 2
    assert all(0 <= i < config.vision_config.num_hidden_layers for i in taps)
    assert config.vision_config.num_hidden_layers <= 4


def test_divisor_of_a_window_still_divides_it() -> None:
    text = tiny("Glm5NextForConditionalGeneration").text_config
    assert text.index_topk < SAMPLE_LEN
    assert text.index_topk % text.index_kpool == 0 and text.index_kpool < text.index_topk


def test_tied_sub_config_sizes() -> None:
    config = tiny("FunAsrNanoForConditionalGeneration")
    assert config.adaptor_config.intermediate_size == config.text_config.hidden_size // 4


def test_per_layer_overrides_compared_after_shrinking() -> None:
    """Dots3Note's vision overrides differ in expert counts (4..60) that all shrink to 4: one kind of sparse layer."""
    vision = tiny("Dots3NoteForConditionalGeneration").vision_config
    assert sorted(set(vision.mlp_layer_types)) == ["dense", "sparse"]
    assert vision.num_hidden_layers == 2


# repairs written against the config classes of transformers 5.23; older releases define these differently
# (their configs' defaults break elsewhere, see docs/compatibility.md)
REPAIRS_FROM = (5, 23)
repairs_release = pytest.mark.skipif(
    tuple(int(p) for p in transformers.__version__.split(".")[:2]) < REPAIRS_FROM,
    reason=f"tiny-config repairs for these classes are written for transformers >= 5.23, "
           f"not {transformers.__version__}",
)


@pytest.mark.parametrize("arch", [
    "ChameleonForConditionalGeneration", "Emu3ForConditionalGeneration", "DeepseekOcr2ForConditionalGeneration",
    pytest.param("DiffusionGemmaForBlockDiffusion", marks=repairs_release),
    pytest.param("Granite4VisionForConditionalGeneration", marks=repairs_release),
    "MoonshineStreamingForConditionalGeneration",
    pytest.param("Qwen3OmniMoeForConditionalGeneration", marks=repairs_release),
])
def test_repaired_defaults_build(arch: str) -> None:
    assert tiny_mb(arch) < 16


def test_repairs_set_what_the_forward_reads() -> None:
    for arch in ("Qwen2_5OmniThinkerForConditionalGeneration", "Qwen3OmniMoeThinkerForConditionalGeneration"):
        thinker = tiny(arch)
        assert 0 <= thinker.vision_start_token_id < thinker.text_config.vocab_size
        assert thinker.seconds_per_chunk == 2
    assert tiny("Step3p7ForConditionalGeneration").text_config.sliding_window < SAMPLE_LEN
    text = tiny("HunYuanVLForConditionalGeneration").text_config
    section = text.rope_parameters["mrope_section"]
    assert len(section) == 4 and sum(section) == (text.head_dim or text.hidden_size // text.num_attention_heads) // 2


@repairs_release
def test_repairs_reach_sub_configs() -> None:
    """Repairs are keyed by any level's model_type: the thinker's apply inside the Omni composite too."""
    config = tiny("Qwen3OmniMoeForConditionalGeneration")
    assert 0 <= config.thinker_config.vision_start_token_id < config.thinker_config.text_config.vocab_size
    assert config.talker_config.text_config.shared_expert_intermediate_size <= 128


def test_input_vocab_when_input_embeddings_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    m = build_tiny_model("GPT2LMHeadModel")

    def unknown() -> None:
        raise NotImplementedError("`get_input_embeddings` not auto-handled")

    monkeypatch.setattr(m, "get_input_embeddings", unknown)
    inputs = sample_inputs(m, seq_len=SAMPLE_LEN)
    assert int(inputs["input_ids"].max()) < m.config.get_text_config().vocab_size


def test_missing_library_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    from staticexec.analysis import session
    from staticexec.check import models as tiny_module

    def fails(*args: object, **kwargs: object) -> None:
        try:
            raise ModuleNotFoundError("No module named 'scipy'")
        except ImportError as e:
            raise TinyBuildError(f"ModuleNotFoundError: {e}") from e

    monkeypatch.setattr(tiny_module, "_build", fails)
    with session.isolated():  # nothing noted by builds earlier in this process
        with pytest.raises(TinyBuildError) as caught:
            build_tiny_model("LlamaForCausalLM")
        assert tiny_module.upstream_note("LlamaForCausalLM") == "needs a library: "
        assert tiny_module.upstream_note("MistralForCausalLM", error=caught.value) == "needs a library: "
        assert tiny_module.upstream_note("MistralForCausalLM") == ""


class _Unmeasurable(torch.nn.Module):
    """Can't be made on the meta device (it reads a number back from a tensor); `n` Linear layers of 4 MB."""

    def __init__(self, n: int, catch: bool = False) -> None:
        super().__init__()
        float(torch.ones(1).sum().item())
        self.layers = torch.nn.ModuleList()
        for _ in range(n):
            try:
                self.layers.append(torch.nn.Linear(1000, 1000, bias=False))
            except OverLimit:
                if not catch:
                    raise


def test_a_model_that_cant_be_made_on_meta_is_counted_while_built_and_stopped_past_the_limit() -> None:
    with pytest.raises(OverLimit) as over:
        built_within(_Unmeasurable, 10, limit_mb=10)
    assert over.value.while_building and over.value.mb == 12.0  # stopped at the first parameter past the limit
    assert "passed 12.0 MB of parameters and buffers while it was built, over the 10 MB limit" in over.value.said()
    with pytest.raises(OverLimit):  # its own code caught the error and went on: still refused
        built_within(lambda n: _Unmeasurable(n, catch=True), 10, limit_mb=10)
    assert len(built_within(_Unmeasurable, 2, limit_mb=10).layers) == 2


def test_parameters_counted_while_built_count_a_tied_one_once_and_a_replaced_one_not_at_all() -> None:
    class Tied(_Unmeasurable):
        def __init__(self, n: int) -> None:
            super().__init__(n)
            for _ in range(5):
                self.register_parameter("again", self.layers[0].weight)  # 4 MB, already counted
                self.layers[1].weight = torch.nn.Parameter(torch.zeros(1000, 1000))  # the one it replaces is freed

    # alive at once: two layers and the new weight before it replaces the old one, 12 MB; counted twice or
    # never taken off, the replacements would pass 13 MB
    assert built_within(Tied, 2, limit_mb=13).again is not None
    with pytest.raises(OverLimit):
        built_within(Tied, 2, limit_mb=11)


def test_a_model_made_on_meta_is_measured_there_before_it_is_built() -> None:
    made = []

    def build(n: int) -> torch.nn.Module:
        made.append(torch.empty(0).device.type)
        return torch.nn.Sequential(*[torch.nn.Linear(1000, 1000, bias=False) for _ in range(n)])

    with pytest.raises(OverLimit) as over:
        built_within(build, 3, limit_mb=10)
    assert made == ["meta"] and not over.value.while_building and over.value.mb == 12.0
    assert over.value.said(" of X") == "has 12.0 MB of parameters and buffers, over the 10 MB limit of X"


class _Buffered(torch.nn.Module):
    """One 4 MB Linear layer and a buffer of `mb` MB (float32), made on meta unless `unmeasurable`."""

    def __init__(self, mb: int, unmeasurable: bool = False) -> None:
        super().__init__()
        if unmeasurable:
            float(torch.ones(1).sum().item())
        self.linear = torch.nn.Linear(1000, 1000, bias=False)
        self.register_buffer("table", torch.zeros(mb * 250_000), persistent=False)
        self.register_buffer("absent", None)


@pytest.mark.parametrize("unmeasurable", [False, True])
def test_buffers_count_toward_the_limit(unmeasurable: bool) -> None:
    with pytest.raises(OverLimit) as over:  # 4 MB of parameters alone would pass
        built_within(lambda mb: _Buffered(mb, unmeasurable), 8, limit_mb=10)
    assert over.value.mb == 12.0 and over.value.while_building == unmeasurable
    built = built_within(lambda mb: _Buffered(mb, unmeasurable), 4, limit_mb=10)
    assert model_mb(built) == 8.0 and param_mb(built) == 4.0


@pytest.mark.parametrize("unmeasurable", [False, True])
def test_a_view_counts_the_memory_it_holds_not_its_elements(unmeasurable: bool) -> None:
    def build(n: int) -> torch.nn.Module:
        model = _Buffered(4, unmeasurable)  # 4 MB of weights, 4 MB of table
        model.register_buffer("wide", torch.ones(1, 1).expand(n, n))  # 36 MB of elements on 4 bytes
        model.register_buffer("front", model.table[: len(model.table) // 2])  # on the table's memory
        return model

    assert model_mb(built_within(build, 3000, limit_mb=10)) == pytest.approx(8.000004)
