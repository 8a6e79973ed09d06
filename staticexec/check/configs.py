"""Tiny configs: an architecture's own config class, shrunk.

Every claim of support is checked by running a tiny model (DESIGN.md, "Soundness
over coverage"), and nothing can come from the hub, so the model is built from its
config class's defaults, shrunk. The shrinking is generic: a field's role (width,
head count, layer count, token id, window, ...) is read from its name and value,
never from a per-architecture table, and sub-configs are shrunk the same way. What
makes a tiny model useful for verification is kept: every distinct layer kind of the
full stack, sliding windows shorter than the sample, special ids inside the vocab.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import glob
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from transformers import PretrainedConfig

from staticexec.analysis.architectures import UnknownArchitecture, task_architectures, model_types as model_types_of

__all__ = [
    "MAX_MODEL_MB", "TinyBuildError", "UnknownArchitecture", "class_defaults", "config_class_for", "model_class_for",
    "one_line", "role", "special_token_ids", "tiny_config",
]

VOCAB = 256
HIDDEN = 64
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
INTERMEDIATE = 128
EXPERT_INTERMEDIATE = 32
EXPERTS = 4
EXPERTS_PER_TOKEN = 2
RANK = 16
MIN_LAYERS = 2
MAX_LAYERS = 8
MAX_MODEL_MB = 32.0

# Repairs for class defaults that are broken upstream, by the model_type of any level of a
# config; applied before shrinking, nested dicts go to sub-configs and are merged into dict
# values (rope_parameters). Each is a fix a correct default would not need, so keep the list
# short and say why.
REPAIRS: dict[str, dict[str, Any]] = {
    # DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig() never sets,
    # and clamps with clip_qkv even when it is None, the default (real checkpoints set both).
    "dbrx": {"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}},
    # Dots1Config() leaves the expert counts and top-k unset, yet every layer past
    # first_k_dense_replace builds a routed MoE block with shared experts from them.
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    # Lfm2MoeConfig() leaves layer_types unset, yet every decoder layer indexes it.
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 8},
    # The model maps image tokens through vocabulary_map, None by default; a checkpoint ships the
    # tokenizer's vocab there, and a text-only forward reads only its <image> entry.
    "chameleon": {"vocabulary_map": {"<image>": 8711}},
    "emu3": {"vocabulary_map": {"<image>": 151646}},
    # Every decoder layer indexes mlp_layer_types, None by default; the checkpoint's first layer is dense.
    "deepseek_ocr2_text": {"mlp_layer_types": ["dense"] + ["sparse"] * 31},
    # Every layer builds a routed MoE block from router sizes left None (Gemma 4 26B-A4B's values).
    "diffusion_gemma_text": {"num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704},
    # One projector is built per deepstack_layer_map pair, None by default (the checkpoint's map and rate).
    "granite4_vision": {"deepstack_layer_map": [[-19, 9], [-13, 6], [-7, 3], [-1, 0]], "downsample_rate": "4/8"},
    # The projector pools the patch grid down to mm_tokens_per_image (256: 16 x 16), but SigLIP's default
    # 224 px image in 16 px patches is a 14 x 14 grid (no pooling fits); the checkpoint's patches are 14 px.
    "t5gemma2_encoder": {"vision_config": {"patch_size": 14}},
    # The decoder's attention reads num_key_value_heads, which the config class lacks (MHA, as its encoder).
    "moonshine_streaming": {"num_key_value_heads": 8},
    # The talker's MoE block reads shared_expert_intermediate_size, which the config class lacks.
    "qwen3_omni_moe_talker_text": {"shared_expert_intermediate_size": 768},
    # ... and the talker reads spatial_merge_size, which its config class (no model_type) lacks.
    "qwen3_omni_moe": {"talker_config": {"spatial_merge_size": 2}},
    # The thinkers' rope index reads vision_start_token_id (and Qwen3's seconds_per_chunk), which
    # their config classes lack; the values are the composite configs' own.
    "qwen2_5_omni_thinker": {"vision_start_token_id": 151652},
    "qwen3_omni_moe_thinker": {"vision_start_token_id": 151652, "seconds_per_chunk": 2},
    # Step3p7's text model always builds a sliding-window mask, yet sliding_window defaults to None.
    "step3p5": {"sliding_window": 512},
    # The text rotary splits by rope_parameters["mrope_section"], None by default (HunyuanOCR's four axes).
    "hunyuan_vl_text": {"rope_parameters": {"mrope_section": [16, 16, 16, 16]}},
    # The projector avg-pools the (224 / 16)**2 patches of the default tower to mm_tokens_per_image with a
    # kernel of 14 // sqrt(256) = 0; the checkpoint pairs 64 patches a side with 256. 49 tokens: kernel 2.
    "gemma3": {"mm_tokens_per_image": 49},
    # Blip2Config() leaves image_token_index None, so the query outputs have no placeholder to go to
    # (the checkpoint's processor adds num_query_tokens image tokens; 50265 in blip2-opt).
    "blip-2": {"image_token_index": 50265},
    "instructblip": {"image_token_index": 50265},
    # VoxtralConfig() leaves audio_token_id None, so no placeholder could take the audio (the checkpoint's 24).
    "voxtral": {"audio_token_id": 24},
    # The projector pixel-shuffles the patch grid by 2, but the default 384 / 14 = 27 patches a side is
    # odd; the checkpoint's image_size is 364 (26 a side).
    "aya_vision": {"vision_config": {"image_size": 364}},
    # The projector only takes the patch counts projector_patch_to_query_dict names (1225 or 4900: the
    # checkpoint's 490 or 980 px at patch 14); the default Idefics3 tower gives 224 / 32 = 7 a side.
    "aria": {"vision_config": {"image_size": 490, "patch_size": 14}},
}


# Composite encoder-decoder configs that some releases can't build from their own defaults (no sub-config
# defaults: "not both `encoder` and `decoder` sub-configurations are passed"), by model_type: the encoder's and
# the decoder's model types that the releases which do have defaults use (their `sub_configs_defaults`). The
# composite is put together by the class's own `from_encoder_decoder_configs`, only when `cls()` fails.
ENCODER_DECODER_DEFAULTS: dict[str, tuple[str, str]] = {
    "encoder-decoder": ("bert", "bert"),
    "speech-encoder-decoder": ("wav2vec2", "bert"),
    "vision-encoder-decoder": ("vit", "bert"),
}


class TinyBuildError(Exception):
    """The tiny model for an architecture can't be built; str() is a one-line reason."""


def _roles(*pairs: tuple[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((role, re.compile(pattern)) for role, pattern in pairs)


# A field's role, from its whole name; the first match wins, so order matters.
_ROLES = _roles(
    ("token", r".*_token_(id|ids|index)|(unk|mask|pad|bos|eos)_index"),
    ("vocab", r".*vocab_size|.*_vocab|vocab_size_.*|.*codebook_size|num_embeddings"),
    ("vocab_map", r".*vocab(ulary)?_map"),
    ("layers", r"num_hidden_layers|num_layers|n_layers?|(num_)?(encoder|decoder)_layers|depth|num_blocks"
               r"|.*_num_hidden_layers"),
    # Token spans a sample must exceed for their code path to run.
    ("window", r"sliding_window(_size)?|attention_window(_size)?|local_attention(_window_len)?"
               r"|local_window_size|attention_chunk_size|keep_window_size|index_topk"),
    ("experts", r"num_experts|n_routed_experts|num_local_experts|moe_num_experts|num_routed_experts"
                r"|(.*_)?expert_num"),
    ("experts_per_token", r"num_experts_per_tok(en)?|moe_k|moe_top_?k|top_k|num_selected_experts|top_k_experts"),
    ("shared_experts", r"n_shared_experts|num_shared_experts|moe_num_shared_experts"),
    ("expert_groups", r"n_group|num_expert_group|n_expert_groups"),
    ("topk_group", r"topk_group"),
    ("expert_width", r".*(moe|expert)s?_.*(size|dim)|.*expert_ffn_.*"),
    ("rotary_dim", r"rotary_dim|rotary_emb_dim|rope_dim|rotary_ndims"),
    ("head_dim", r".*head_dim|d_head|dim_head|d_kv|kv_channels|.*head_size|.*headdim|.*_d_head"),
    ("kv_heads", r".*(kv|key_value|key|value)_heads|num_query_groups|kv_n_heads"),
    ("heads", r".*heads|n_head|.*heads_per_layer"),
    ("intermediate", r".*intermediate_size.*|.*ffn_dim|.*ffn_hidden_size|d_ff|d_inner|dff|n_inner|dim_ff"
                     r"|feed_forward_size|mlp_dim|inner_dim|ffn_size"),
    ("rank", r".*_rank|.*lowrank|.*state_size|.*d_state"),  # low-rank and SSM state widths
    ("groups", r"(.*_)?n_?groups|.*_ngroups"),
    ("base_filters", r"(.*_)?num_filters"),  # doubled at every (up/down)sampling stage
    ("base_channels", r"(.*_)?base_channels"),  # times channel_multiplier, GroupNorm(32) over them
    ("channel_multiplier", r"channel_multiplier|ch_mult"),
    # The width of one flattened image patch (patch_size^2 x channels, Pix2Struct, Kosmos-2.5): the image
    # processor's to give, so it stays as the class has it.
    ("patch_pixels", r"patch_embed_hidden_size"),
    ("width_alias", r"(.*_)?(in|out)_dim|.*_input_size|.*_output_size"),  # equal to a width of the config, at any level
    ("width", r".*hidden_size.*|d_model|n_embd|n_embed|.*embed_dim|.*embedding_dim|.*hidden_dim|model_dim"
              r"|dim|.*embedding_size|emb_dim|.*width|.*proj_dim|.*_output_dim|.*_input_dim|out_dim|.*_d_ssm"
              r"|.*_channels?|.*projection_dim|(en|de)coder_dim"),
    ("expand", r"(.*_)?expand"),
    ("expansion", r"(.*_)?expansion(_factor|_ratio)?"),
    ("stage_depths", r"depths"),  # blocks per stage
    ("period", r".*(period|_step|interval|every_n_layers|_freq|pattern|group_size|per_attn_res_block)"),
    ("offset", r".*_offset"),
    ("tail", r".*shared_layers"),
    ("threshold", r"(?!.*(nextn|mtp|predict)).*layers?(_.*)?|first_k_dense_replace"),
    ("rope", r"rope_parameters|rope_scaling"),
)
# The tiny value of each size role; heads, windows and layer counts have their own rules.
_TINY = {
    "vocab": VOCAB,
    "experts": EXPERTS,
    "experts_per_token": EXPERTS_PER_TOKEN,
    "shared_experts": 1,
    "expert_width": EXPERT_INTERMEDIATE,
    "head_dim": HEAD_DIM,
    "intermediate": INTERMEDIATE,
    "rank": RANK,
    "groups": 2,
    "width": HIDDEN,
    "period": 2,
    "offset": 1,
    "expansion": 2,
    "stage_depths": MIN_LAYERS,
    "base_channels": 32,
    "channel_multiplier": 2,
}
# Sizes that other sizes are computed from; a class may recompute them itself.
_DERIVABLE = {"expert_width", "head_dim", "kv_heads", "heads", "intermediate", "rank", "width", None}
_SIZES = _DERIVABLE - {None} | {"vocab", "window", "experts", "experts_per_token", "shared_experts",
                                "expert_groups", "topk_group", "rotary_dim", "groups", "period", "offset",
                                "base_filters", "expansion", "stage_depths", "base_channels",
                                "channel_multiplier", "width_alias"}
_INDEX_LIST = re.compile(r".*(layers|idxs|indexes|indices|_ids)")


@functools.lru_cache(maxsize=None)
def role(key: str) -> str | None:
    """The role a config field plays, read from its name alone."""
    return next((name for name, pattern in _ROLES if pattern.fullmatch(key)), None)


def _is_causal_lm(arch: str) -> bool:
    return arch in task_architectures("causal-lm")


def config_class_for(arch: str) -> type[PretrainedConfig]:
    """The config class of a model class name, found through the auto mapping names.

    The mapping says which model types serve the class; the class's own
    `config_class` then decides, because a causal-LM head of a composite model
    (`MllamaForCausalLM`) takes the text config, not the composite one the model type
    names, and `LlamaForCausalLM` serves `llama`, `internlm3`, ... alike.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_types = [t for t in model_types_of(arch) if t in CONFIG_MAPPING_NAMES]
    if not model_types:
        raise UnknownArchitecture(f"{arch}: no transformers auto mapping names this architecture")
    own = getattr(model_class_for(arch), "config_class", None)
    if isinstance(own, type) and issubclass(own, PretrainedConfig) and own is not PretrainedConfig:
        return own
    return getattr(transformers, CONFIG_MAPPING_NAMES[model_types[0]])


def model_class_for(arch: str) -> type:
    """The transformers model class; imported lazily so unknown names fail cleanly."""
    import transformers

    try:
        return getattr(transformers, arch)
    except AttributeError as e:
        raise UnknownArchitecture(f"{arch}: transformers has no such class") from e


# -- layer stacks ------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_index_list(key: str, value: Any, length: int) -> bool:
    """`[3, 8, 13]`-style lists that name layers by index (cross-attention layers, ...)."""
    return (
        isinstance(value, list)
        and bool(_INDEX_LIST.fullmatch(key))
        and all(_is_int(v) and 0 <= v < length for v in value)
        and all(a < b for a, b in zip(value, value[1:]))
    )


def _runs(value: Any) -> list[Any] | None:
    """Expand a run-length pattern such as `[[["global", "local"], 12]]`."""
    if not (isinstance(value, list) and value and all(
        isinstance(r, (list, tuple)) and len(r) == 2 and isinstance(r[0], list) and _is_int(r[1]) for r in value
    )):
        return None
    return [kind for pattern, repeat in value for _ in range(repeat) for kind in pattern]


def _per_layer(key: str, value: Any, length: int) -> list[Any] | None:
    """The entry of every layer, when a field describes a stack of `length` layers."""
    if role(key) in ("token", "layers", "rope"):
        return None
    if isinstance(value, str):
        return list(value) if "pattern" in key and len(value) == length else None
    if not isinstance(value, list) or _is_index_list(key, value, length):
        return None
    runs = _runs(value)
    if runs is not None and len(runs) == length:
        return runs
    return value if len(value) == length else None


def _cycle(key: str, value: Any, length: int) -> list[Any] | None:
    """A short list of layer kinds the stack repeats (`["recurrent", "recurrent", "attention"]`)."""
    if (isinstance(value, list) and 1 < len(value) < length and "type" in key
            and all(isinstance(v, str) for v in value)):
        return [value[i % len(value)] for i in range(length)]
    return None


def _is_threshold(key: str, value: Any, length: int, level: dict[str, Any]) -> bool:
    """A count of leading layers (`first_k_dense_replace`) or trailing ones (KV-sharing layers)."""
    return (role(key) in ("threshold", "tail") and _is_int(value) and 0 < value < length
            and not _counts_a_list(key, value, level))


def _counts_a_list(key: str, value: int, level: dict[str, Any]) -> bool:
    """`num_conv_layers = 2` next to `conv_kernel_sizes = [5, 5]`: the length of a stack of its own.

    A count equal to the length of two sibling lists, or of one that shares a word of its
    name, is those lists' stack length, not a cut of the main stack; both are kept.
    """
    words = set(key.split("_")) - {"num", "n", "layer", "layers"}
    lists = [k for k, v in level.items()
             if k != key and isinstance(v, (list, tuple)) and len(v) == value and role(k) not in ("token", "rope")]
    return len(lists) >= 2 or any(words & set(k.split("_")) for k in lists)


def _is_whole_stack(key: str, value: Any, length: int) -> bool:
    return role(key) in ("threshold", "tail") and _is_int(value) and value == length


def _before_threshold(key: str, value: int, length: int, i: int) -> bool:
    return i < value if role(key) == "threshold" else i < length - value


@dataclasses.dataclass(frozen=True)
class _LayerPlan:
    """Which layers of a stack of `old` layers the tiny stack keeps, in order."""

    old: int
    kept: tuple[int, ...]

    def new_index(self, old_index: int) -> int | None:
        """The index in the tiny stack of a layer of the full stack; None when it is not kept."""
        return self.kept.index(old_index) if old_index in self.kept else None

    def threshold(self, key: str, value: int) -> int:
        """Every kept layer stays on its side of the cut, so the cut counts the kept layers."""
        before = sum(1 for i in self.kept if _before_threshold(key, value, self.old, i))
        return before if role(key) == "threshold" else len(self.kept) - before


def _layer_plans(level: dict[str, Any], per_kind: int = 1, tiny: dict[str, Any] | None = None,
                 named: tuple[int, frozenset[int]] | None = None) -> list[_LayerPlan]:
    """One plan per stack length, keeping the first layer of every layer kind.

    A layer's kind is everything the config says about it: its entry in every
    per-layer field, whether an index list names it, which side of each threshold it
    sits on, its per-layer overrides as shrunk in `tiny`, and whether another sub-config
    names it by index (`named`: the stack length and the indices; each named layer is a
    kind of its own). A repeating cycle of kinds can only be kept as a prefix of the
    stack. `per_kind=2` keeps a second layer of each kind, for models that share weights
    between the layers of a kind.
    """
    plans = []
    for length in sorted({v for k, v in level.items() if role(k) == "layers" and _is_int(v)}):
        if length <= MIN_LAYERS:
            continue
        seen: dict[tuple, list[int]] = {}
        for i in range(length):
            kind = _layer_kind(level, length, i, tiny)
            if named is not None and named[0] == length:
                kind += (("<named by index>", i if i in named[1] else None),)
            layers = seen.setdefault(kind, [])
            if len(layers) < per_kind:
                layers.append(i)
        kept = {i for layers in seen.values() for i in layers}
        kept.update(sorted(set(range(length)) - kept)[: max(0, MIN_LAYERS - len(kept))])
        if any(_cycle(k, v, length) for k, v in level.items()):
            kept = set(range(max(kept) + 1))
        if len(kept) > MAX_LAYERS:
            raise TinyBuildError(
                f"the {length}-layer stack needs {len(kept)} layers to keep every layer kind (over {MAX_LAYERS})"
            )
        plans.append(_LayerPlan(length, tuple(sorted(kept))))
    return plans


def _layer_kind(level: dict[str, Any], length: int, i: int, tiny: dict[str, Any] | None = None) -> tuple:
    kind: list[Any] = []
    for key, value in sorted(level.items()):
        entries = _per_layer(key, value, length) or _cycle(key, value, length)
        if entries is not None:
            kind.append((key, repr(entries[i])))
        elif _is_index_list(key, value, length):
            kind.append((key, i in value))
        elif _is_threshold(key, value, length, level):
            kind.append((key, _before_threshold(key, value, length, i)))
        elif key == "per_layer_config" and isinstance(value, dict):
            kind.append((key, repr(_layer_overrides(value, i, tiny))))
    return tuple(kind)


def _layer_overrides(overrides: dict[str, Any], i: int, tiny: dict[str, Any] | None) -> Any:
    """Layer i's overrides; with `tiny`, as shrunk there, less what no longer differs from the tiny level.

    Overrides that differ only at full size (64 experts here, 60 there) make one kind of
    layer at the tiny size, where both become 4.
    """
    key = next((k for k in overrides if int(k) == i), None)
    if key is None:
        return None
    shrunk = (tiny or {}).get("per_layer_config")
    if tiny is None or not isinstance(shrunk, dict) or not isinstance(shrunk.get(key), dict):
        return overrides[key]
    return {k: v for k, v in shrunk[key].items() if v != tiny.get(k)} or None


def _apply_layer_plan(plan: _LayerPlan, old: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in old.items():
        current = new.get(key)
        if current is None:
            continue
        entries = _per_layer(key, current, plan.old)
        if role(key) == "layers" and value == plan.old:
            new[key] = len(plan.kept)
        elif entries is not None:
            picked = [entries[i] for i in plan.kept]
            if isinstance(current, str):
                new[key] = "".join(picked)
            elif _runs(current) is not None:
                new[key] = [[[kind], 1] for kind in picked]
            else:
                new[key] = picked
        elif _is_index_list(key, value, plan.old):
            new[key] = [plan.new_index(i) for i in value if plan.new_index(i) is not None]
        elif _is_threshold(key, value, plan.old, old):
            new[key] = plan.threshold(key, value)
        elif _is_whole_stack(key, value, plan.old):
            new[key] = len(plan.kept)
        elif key == "per_layer_config" and isinstance(current, dict):
            width = max((len(k) for k in current if isinstance(k, str)), default=1)
            new[key] = {
                str(plan.new_index(int(k))).zfill(width): v
                for k, v in current.items()
                if plan.new_index(int(k)) is not None
            }


# -- shrinking ---------------------------------------------------------------------------


class _Shrinker:
    """Shrinks one config tree; what must agree across levels (token ids) lives here."""

    def __init__(self, sample_len: int, per_kind: int = 1) -> None:
        self.window = max(1, sample_len // 2)
        self.per_kind = per_kind
        self.token_map: dict[int, int] = {}
        self.widths: dict[int, int] = {}
        self.kept_layers: dict[int, _LayerPlan] = {}

    def plan_tokens(self, config: PretrainedConfig) -> None:
        """Special ids at or above the tiny vocab move to its top, keeping their order
        and staying clear of the special ids already inside it. Also notes the tiny value
        of every width of the tree, for sizes that alias one (`adapter_out_dim`)."""
        ids = {i for _, key, value in _walk(config.to_dict()) if role(key) == "token" for i in _ints(value)}
        free = (i for i in range(VOCAB - 1, -1, -1) if i not in ids)
        for old in sorted((i for i in ids if i >= VOCAB), reverse=True):
            self.token_map[old] = next(free)
        for _, key, value in _walk(config.to_dict()):
            if role(key) == "width" and _is_int(value) and value > 0:
                self.widths[value] = min(value, HIDDEN)

    def shrink(self, config: PretrainedConfig, overrides: dict[str, Any],
               named: tuple[int, frozenset[int]] | None = None) -> PretrainedConfig:
        """The tiny copy of one level, its sub-configs shrunk first; the class validates it.

        `named` is a stack length and the layer indices another level names (a vision
        feature layer), kept as layers of their own. After the call, `kept_layers` holds
        this level's layer plans by stack length.
        """
        cls = type(config)
        old = config.to_dict()
        subs = _sub_configs(config)
        new = dict(old)
        refs = _layer_refs(config, subs)
        remapped: dict[str | None, dict[str, Any]] = {}
        for key in sorted(subs, key=lambda k: k not in refs):  # the named stacks first
            length, fields = refs.get(key, (0, {}))
            indices = frozenset(i for value in fields.values() for i in _ints(value))
            new[key] = self.shrink(subs[key], remapped.get(key, {}), (length, indices) if fields else None)
            plan = self.kept_layers.get(length)
            for (owner, field), value in fields.items():
                if plan is not None:
                    remapped.setdefault(owner, {})[field] = _map_ints(value, plan.new_index)
        _tie_sub_configs(getattr(config, "model_type", ""), new)
        unset, computed = _derived_fields(cls, old, subs)
        for key in unset:
            new[key] = None
        for key, value in old.items():
            if key not in subs and new.get(key) is not None:
                new[key] = self.value(key, value)
        self.fix_heads(old, new)
        _fix_head_dim_sums(old, new)
        self.fix_expert_groups(old, new)
        self.fix_rope(cls, old, new)
        _complete(old, new)
        if isinstance(old.get("per_layer_config"), dict):
            new["per_layer_config"] = {
                k: self.overrides(old, new, v) if isinstance(v, dict) else v
                for k, v in old["per_layer_config"].items()
            }
        self.fix_width_splits(old, new)
        _fix_stage_widths(old, new)
        _fix_depthwise_groups(old, new)
        _fix_window_divisors(old, new)
        new.update(remapped.get(None, {}))
        plans = _layer_plans(old, self.per_kind, new, named)
        for plan in plans:
            _apply_layer_plan(plan, old, new)
        _fix_concatenated_widths(old, new)
        new.update(overrides)
        for key in computed:
            new.pop(key, None)
        try:
            tiny = _construct(cls, new, subs)
        except Exception as e:
            raise TinyBuildError(f"{cls.__name__} rejects the tiny config: {one_line(e)}") from e
        self.kept_layers = {plan.old: plan for plan in plans}
        return tiny

    def value(self, key: str, value: Any) -> Any:
        """The tiny value of one field by its role; lists of sizes shrink element-wise."""
        if role(key) == "token":
            return _map_ints(value, lambda i: self.token_map.get(i, i))
        if role(key) == "width_alias":
            return _map_ints(value, lambda n: self.widths.get(n, n))
        if role(key) == "vocab_map" and isinstance(value, dict):
            moved = {name: self.token_map.get(i, i) if _is_int(i) else i for name, i in value.items()}
            return {name: i for name, i in moved.items() if not _is_int(i) or i < VOCAB}
        if isinstance(value, list) and (_INDEX_LIST.fullmatch(key) or "section" in key):
            return value
        return _map_ints(value, lambda n: self.scalar(key, n))

    def scalar(self, key: str, value: int) -> int:
        """Never grows a value: a default already below the tiny size is kept."""
        tiny = self.window if role(key) == "window" else _TINY.get(role(key))
        return value if tiny is None or value <= 0 else min(value, tiny)

    def fix_heads(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Query heads become HEADS; key/value heads keep their sharing (MHA, GQA or MQA).

        Where the full config ties a head count to a width (heads * head_dim equal to
        the hidden size, or to expand * hidden in a Mamba mixer), the tiny count is
        solved from the tiny width so the identity still holds.
        """
        reference = next((old[k] for k in old if role(k) == "heads" and _is_int(old[k]) and old[k] > 0), None)
        for key in old:
            if role(key) not in ("heads", "kv_heads") or new.get(key) is None:
                continue
            is_kv = role(key) == "kv_heads"
            new[key] = _map_ints(old[key], lambda n: _tiny_heads(n, reference if is_kv else None))
            if not is_kv and _is_int(old[key]):
                solved = _heads_from_width(key, old, new)
                if solved is not None:
                    new[key] = solved

    def overrides(self, level: dict[str, Any], tiny: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        """One layer's overrides, shrunk as if they were the whole level.

        A size the layer inherited may now have to differ from the tiny level's, to
        keep an identity with the sizes it overrides; it becomes an override too.
        """
        old = {**level, **overrides}
        new = {k: self.value(k, v) for k, v in old.items()}
        self.fix_heads(old, new)
        _fix_head_dim_sums(old, new)
        return {k: v for k, v in new.items() if k in overrides or (role(k) in _SIZES and v != tiny.get(k))}

    def fix_width_splits(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Lists that split a width into parts (axial position dims) still add up to it."""
        widths = {old[k]: new[k] for k in old if role(k) == "width" and _is_int(old[k]) and _is_int(new.get(k))}
        for key, value in old.items():
            if (isinstance(value, list) and len(value) > 1 and all(_is_int(v) for v in value)
                    and sum(value) in widths and role(key) not in ("token", "layers")):
                new[key] = _scale_section(value, widths[sum(value)] / sum(value))

    def fix_expert_groups(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Routing groups shrink with the experts, so each group still holds experts."""
        groups = next((k for k in old if role(k) == "expert_groups" and _is_int(old[k])), None)
        if groups is None or old[groups] <= 1:
            return
        experts = next((new[k] for k in new if role(k) == "experts" and _is_int(new[k])), EXPERTS)
        tiny = max(g for g in (1, 2) if experts % g == 0)
        new[groups] = tiny
        for key in old:
            if role(key) == "topk_group" and _is_int(old[key]):
                new[key] = max(1, min(tiny, round(old[key] * tiny / old[groups])))

    def fix_rope(self, cls: type, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Rotary sections and per-frequency factors follow the head dim's shrink.

        Multimodal rope sections (`mrope_section`) split the rotary frequencies, so they
        are sized to the tiny model's frequency count, and written where the model
        would otherwise fall back to a default sized for the full head dim.
        """
        full, tiny = _rope_dim(old), _rope_dim(new)
        ratio = tiny / full if full and tiny else 1.0
        for key, value in old.items():
            if new.get(key) is None:
                continue
            if role(key) == "rope" and isinstance(value, dict):
                new[key] = _scale_rope(value, ratio)
                for rope in _rope_dicts(new[key]):
                    _fix_mrope(cls, rope, new)
            elif "section" in key and isinstance(value, list):
                new[key] = _scale_section(value, ratio)
            elif role(key) == "rotary_dim" and _is_int(value):
                new[key] = max(2, 2 * round(value * ratio / 2))


def _construct(cls: type[PretrainedConfig], values: dict[str, Any], subs: dict[str, Any]) -> PretrainedConfig:
    """`cls(**values)`; a class that only takes its sub-configs as dicts (the encoder-decoder composites
    of releases with no sub-config defaults pop their `model_type`) gets them as dicts."""
    try:
        return cls(**values)
    except Exception as first:
        if not any(isinstance(values.get(key), PretrainedConfig) for key in subs):
            raise
        as_dicts = {k: v.to_dict() if k in subs and isinstance(v, PretrainedConfig) else v for k, v in values.items()}
        try:
            return cls(**as_dicts)
        except Exception:
            raise first from None


def _rope_dicts(rope: dict[str, Any]) -> list[dict[str, Any]]:
    """The rope parameter dicts of a level: itself, or one per layer type."""
    nested = [v for v in rope.values() if isinstance(v, dict)]
    if nested and len(nested) == len(rope):
        return nested
    return [rope] if rope else []


_MROPE_DEFAULT = re.compile(r"""["']mrope_section["']\s*,\s*\[([0-9,\s]+)\]""")


@functools.lru_cache(maxsize=None)
def _mrope_fallback(config_module: str) -> tuple[int, ...] | None:
    """The `mrope_section` the model folder's modeling code falls back to, when it has one.

    `config.rope_parameters.get("mrope_section", [16, 24, 24])` (Qwen2-VL) is sized for
    the full model's head dim; a tiny model needs its own.
    """
    module = sys.modules.get(config_module)
    folder = os.path.dirname(getattr(module, "__file__", None) or "")
    if not folder:
        return None
    for path in sorted(glob.glob(os.path.join(folder, "modeling_*.py"))):
        with open(path, encoding="utf-8") as f:
            found = _MROPE_DEFAULT.search(f.read())
        if found:
            return tuple(int(v) for v in found.group(1).split(",") if v.strip())
    return None


def _fix_mrope(cls: type, rope: dict[str, Any], level: dict[str, Any]) -> None:
    """Size `rope["mrope_section"]` to the tiny rotary frequency count, when the level uses multimodal rope.

    A level uses it when its rope parameters name a section or an "mrope" type, when
    its class keeps `mrope_section` out of rope validation, or when its modeling code
    falls back to a default section (vision towers' "axial" rope aside). The split
    keeps the proportions of the given section, else the code's default, else is even
    over three axes.
    """
    kind = str(rope.get("rope_type") or rope.get("type") or "")
    given = rope.get("mrope_section")
    fallback = _mrope_fallback(cls.__module__)
    declared = "mrope_section" in (getattr(cls, "ignore_keys_at_rope_validation", None) or ()) or "mrope" in kind
    if given is None and (kind == "axial" or not (fallback or declared)):
        return
    shares = list(given or fallback or (1, 1, 1))
    factor = rope.get("partial_rotary_factor", level.get("partial_rotary_factor"))
    frequencies = int(_rope_dim(level) * (factor if isinstance(factor, (int, float)) and factor else 1.0)) // 2
    if frequencies > 0 and all(_is_int(v) for v in shares):
        rope["mrope_section"] = _apportion(shares, frequencies)


def _heads_from_width(key: str, old: dict[str, Any], new: dict[str, Any]) -> int | None:
    widths: dict[int, int] = {}
    for w in old:
        if role(w) == "width" and _is_int(old[w]) and _is_int(new.get(w)):
            widths.setdefault(old[w], new[w])
            for e in old:
                if role(e) == "expand" and _is_int(old[e]) and _is_int(new.get(e)):
                    widths.setdefault(old[e] * old[w], new[e] * new[w])
    dims = [d for d in old if role(d) == "head_dim" and _is_int(old[d]) and _is_int(new.get(d))]
    for d in sorted(dims, key=lambda d: -len(os.path.commonprefix([d, key]))):
        width = widths.get(old[key] * old[d])
        if width is not None and width % new[d] == 0:
            return width // new[d]
    return None


def _fix_head_dim_sums(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A head dim that is the sum of two others (MLA's nope + rope parts) stays their sum."""
    dims = [d for d in old if role(d) == "head_dim" and _is_int(old[d]) and _is_int(new.get(d))]
    for total in dims:
        parts = [(a, b) for a in dims for b in dims if a < b and total not in (a, b)
                 and old[a] + old[b] == old[total]]
        if parts:
            a, b = parts[0]
            new[total] = new[a] + new[b]


def _fix_stage_widths(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A base filter count doubles at every (up/down)sampling stage (`upsampling_ratios`), so
    the tiny base keeps the widest stage within the tiny width."""
    stages = max((len(v) for k, v in old.items() if k.endswith("sampling_ratios") and isinstance(v, list)), default=0)
    for key, value in old.items():
        if role(key) == "base_filters" and _is_int(value) and value > 0 and new.get(key) is not None:
            new[key] = max(1, min(value, HIDDEN >> stages))


def _fix_depthwise_groups(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A group count equal to a width (a depthwise convolution, `upsample_groups`) follows that width."""
    widths: dict[int, int] = {}
    for key, value in old.items():
        if role(key) == "width" and _is_int(value) and _is_int(new.get(key)):
            widths.setdefault(value, new[key])
    for key, value in old.items():
        if key.endswith("groups") and role(key) is None and _is_int(value) and value > 1 and value in widths:
            new[key] = widths[value]


def _fix_concatenated_widths(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A width that concatenates the last hidden state with those of listed layers (Mllama's
    `vision_output_dim` = hidden_size * (len(intermediate_layers_indices) + 1)) keeps that product."""
    hidden, tiny = old.get("hidden_size"), new.get("hidden_size")
    if not (_is_int(hidden) and _is_int(tiny)) or hidden <= 0:
        return
    lists = [k for k, v in old.items() if isinstance(v, list) and v and all(_is_int(i) for i in v)
             and isinstance(new.get(k), list)]
    for key, value in old.items():
        if role(key) != "width" or not _is_int(value) or value == hidden or not _is_int(new.get(key)):
            continue
        for listed in lists:
            if value == hidden * (len(old[listed]) + 1):
                new[key] = tiny * (len(new[listed]) + 1)
                break


def _fix_window_divisors(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A size that divides a window and shares its name's first word (`index_kpool` of
    `index_topk`) still divides the tiny window, and is smaller than it where it can be."""
    for window, full in old.items():
        tiny = new.get(window)
        if role(window) != "window" or not (_is_int(full) and _is_int(tiny)) or tiny <= 0:
            continue
        prefix = window.split("_")[0] + "_"
        for key, value in old.items():
            if (key != window and key.startswith(prefix) and role(key) is None and _is_int(value)
                    and 1 < value <= full and full % value == 0 and _is_int(new.get(key)) and tiny % new[key]):
                new[key] = max(d for d in range(1, tiny + 1) if tiny % d == 0 and d <= value and (d < tiny or d == 1))


def _layer_refs(config: PretrainedConfig, subs: dict[str, PretrainedConfig]
                ) -> dict[str, tuple[int, dict[tuple[str | None, str], Any]]]:
    """Fields that name layers of a sibling sub-config by index, by that sub-config's key.

    `adapter_config.vision_feature_layer = [24, 18]` names layers of `vision_config`'s
    25-layer stack: the field's name starts with the sub-config's (less `_config`) and
    says `layer`, and every index is inside the stack. Returns the stack length and the
    fields, keyed by (owner sub-config key, or None for this level; field name).
    """
    out: dict[str, tuple[int, dict[tuple[str | None, str], Any]]] = {}
    owners: dict[str | None, dict[str, Any]] = {None: {k: v for k, v in vars(config).items() if k not in subs}}
    owners.update({k: sub.to_dict() for k, sub in subs.items()})
    for key, sub in subs.items():
        lengths = [v for k, v in sub.to_dict().items() if role(k) == "layers" and _is_int(v)]
        if not lengths or max(lengths) <= MIN_LAYERS:
            continue
        length, prefix = max(lengths), key.removesuffix("_config") + "_"
        fields = {
            (owner, field): value
            for owner, values in owners.items() if owner != key
            for field, value in values.items()
            if field.startswith(prefix) and "layer" in field and role(field) not in ("token", "layers")
            and _ints(value) and all(0 <= i < length for i in _ints(value))
            and not isinstance(value, bool)
        }
        if fields:
            out[key] = (length, fields)
    return out


# Sizes a composite config class ties across its sub-configs, which its own validation checks,
# by model_type: "sub.field" <- ("other_sub.field", divisor), set once the sub-configs are shrunk.
TIED: dict[str, dict[str, tuple[str, int | Fraction]]] = {
    # FunAsrNanoConfig requires adaptor_config.intermediate_size == text_config.hidden_size // 4.
    "fun_asr_nano": {"adaptor_config.intermediate_size": ("text_config.hidden_size", 4)},
    # The vision pixel shuffle turns hidden_size channels into hidden_size / 0.5**2, which the next
    # linear layer takes as intermediate_size (1408 * 4 = 5632 in the defaults).
    "llama4": {"vision_config.intermediate_size": ("vision_config.hidden_size", Fraction(1, 4))},
}


def _tie_sub_configs(model_type: str, new: dict[str, Any]) -> None:
    for target, (source, divisor) in TIED.get(model_type, {}).items():
        sub, field = target.split(".")
        source_sub, source_field = source.split(".")
        if isinstance(new.get(sub), PretrainedConfig) and isinstance(new.get(source_sub), PretrainedConfig):
            setattr(new[sub], field, int(getattr(new[source_sub], source_field) / divisor))


def _tiny_heads(n: int, query: int | None) -> int:
    if n <= 1:
        return n
    if query is None or n >= query:
        return min(n, HEADS)
    return min(n, HEADS // 2)


def _complete(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Fill a None the model can't run with, by the convention transformers itself uses.

    Some class defaults leave `head_dim` or `num_key_value_heads` unset where the model
    reads them unconditionally, or leave top-k unset next to a routed expert count.
    """
    heads = next((new[k] for k in new if role(k) == "heads" and _is_int(new[k])), None)
    width = next((new[k] for k in ("hidden_size", "d_model", "n_embd") if _is_int(new.get(k))), None)
    experts = next((new[k] for k in new if role(k) == "experts" and _is_int(new[k]) and new[k] > 0), None)
    for key in old:
        if old[key] is not None or key not in new:
            continue
        if key == "head_dim" and heads and width:
            new[key] = width // heads
        elif key == "num_key_value_heads" and heads:
            new[key] = heads
        elif role(key) == "experts_per_token" and experts:
            new[key] = min(EXPERTS_PER_TOKEN, experts)


def _map_ints(value: Any, fn: Callable[[int], int]) -> Any:
    if _is_int(value):
        return fn(value)
    if isinstance(value, list):
        return [_map_ints(v, fn) for v in value]
    return value


def _rope_dim(level: dict[str, Any]) -> float:
    for key in ("qk_rope_head_dim", "head_dim"):
        if _is_int(level.get(key)):
            return float(level[key])
    width = next((level[k] for k in ("hidden_size", "d_model", "n_embd") if _is_int(level.get(k))), None)
    heads = next((level[k] for k in level if role(k) == "heads" and _is_int(level[k]) and level[k] > 0), None)
    return width / heads if width and heads else 0.0


def _scale_rope(rope: dict[str, Any], ratio: float) -> dict[str, Any]:
    out = {}
    for key, value in rope.items():
        if isinstance(value, dict):
            out[key] = _scale_rope(value, ratio)
        elif isinstance(value, list) and value and "section" in key:
            out[key] = _scale_section(value, ratio)
        elif isinstance(value, list) and value and all(isinstance(v, float) for v in value) and ratio < 1:
            keep = max(1, round(len(value) * ratio))
            out[key] = [value[i * len(value) // keep] for i in range(keep)]
        else:
            out[key] = value
    return out


def _scale_section(section: list[Any], ratio: float) -> list[Any]:
    """Split the shrunk rotary width across the sections in their old proportions."""
    if not section or not all(_is_int(v) for v in section) or ratio >= 1 or sum(section) <= 0:
        return section
    return _apportion(section, max(len(section), round(sum(section) * ratio)))


def _apportion(section: list[int], total: int) -> list[int]:
    """`total` split in the proportions of `section` (largest remainders), each part at least 1 when it can be."""
    if sum(section) <= 0:
        section = [1] * len(section)
    shares = [v * total / sum(section) for v in section]
    out = [math.floor(s) for s in shares]
    by_remainder = sorted(range(len(section)), key=lambda i: shares[i] - math.floor(shares[i]), reverse=True)
    for i in by_remainder[: max(0, total - sum(out))]:
        out[i] += 1
    while total >= len(out) and 0 in out:
        out[out.index(max(out))] -= 1
        out[out.index(0)] += 1
    return out


def _sub_configs(config: PretrainedConfig) -> dict[str, PretrainedConfig]:
    """The nested configs of a composite config (text_config, vision_config, encoder...)."""
    return {k: v for k, v in vars(config).items() if isinstance(v, PretrainedConfig)}


def _derived_fields(cls: type, old: dict[str, Any], subs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Sizes the class computes itself (head_dim = hidden // heads, qk_head_dim, ...).

    Returns the fields to leave unset and the extra attributes to leave out, so the
    class recomputes them from the shrunk sizes instead of keeping a value that only
    fits the full-size model. A size counts as computed when a probe built without it
    gets the same value back.
    """
    if not dataclasses.is_dataclass(cls):
        return [], []
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unset = {
        name for name, f in fields.items()
        if f.default is None and name in old and name not in subs and _is_int(old[name]) and role(name) in _DERIVABLE
    }
    extra = {k for k in old if k not in fields and k not in subs and _is_int(old[k]) and role(k) in _DERIVABLE}
    if not unset and not extra:
        return [], []
    try:
        probe = cls(**{k: subs.get(k, v) for k, v in old.items() if k not in unset | extra}).to_dict()
    except Exception:
        return [], []
    same = {k for k in unset | extra if k in probe and probe[k] == old[k]}
    return sorted(same & unset), sorted(same & extra)


def _walk(tree: dict[str, Any], path: str = "") -> Iterator[tuple[str, str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict) and "model_type" in value:
            yield from _walk(value, f"{path}{key}.")
        else:
            yield path, key, value


def _ints(value: Any) -> list[int]:
    if _is_int(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _ints(v)]
    return []


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error's message on one line, cut to `limit` characters: what a failed build reports."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_config(cls: type[PretrainedConfig]) -> PretrainedConfig:
    """The class's defaults with the REPAIRS of every level's model_type.

    The defaults are built once to find the sub-configs' model types, then again with the
    repairs passed down as nested dicts, so each sub-config class validates its own. An
    encoder-decoder composite with no defaults is made of its ENCODER_DECODER_DEFAULTS.
    """
    try:
        probe, parts = class_defaults(cls, copy.deepcopy(REPAIRS.get(getattr(cls, "model_type", ""), {})))
        repairs = _repairs_for(probe)
        return cls(**{**parts, **repairs}) if repairs else probe
    except Exception as e:
        raise TinyBuildError(f"{cls.__name__}() fails with its own defaults: {one_line(e)}") from e


def class_defaults(cls: type[PretrainedConfig], kwargs: dict[str, Any]
                    ) -> tuple[PretrainedConfig, dict[str, Any]]:
    """`cls(**kwargs)`; for an encoder-decoder composite with no defaults, one made of default sub-configs.

    Returns the config and, when it was put together from sub-configs, those sub-configs as the
    dicts the class must be given again to rebuild it (such a class takes both or fails).
    """
    try:
        return cls(**kwargs), {}
    except Exception:
        pair = ENCODER_DECODER_DEFAULTS.get(getattr(cls, "model_type", ""))
        if pair is None or not hasattr(cls, "from_encoder_decoder_configs"):
            raise
    from transformers import AutoConfig

    encoder, decoder = (AutoConfig.for_model(model_type) for model_type in pair)
    config = cls.from_encoder_decoder_configs(encoder, decoder, **kwargs)
    return config, {key: sub.to_dict() for key, sub in _sub_configs(config).items()}


def _repairs_for(config: PretrainedConfig) -> dict[str, Any]:
    """The constructor arguments that repair `config` and its sub-configs, by model_type."""
    out: dict[str, Any] = {}
    for key, value in copy.deepcopy(REPAIRS.get(getattr(config, "model_type", ""), {})).items():
        current = getattr(config, key, None)
        if isinstance(value, dict) and isinstance(current, PretrainedConfig):
            value = {**current.to_dict(), **value}  # a repair of a sub-config keeps its other values
        elif isinstance(value, dict) and isinstance(current, dict):
            value = {**current, **value}
        out[key] = value
    for key, sub in _sub_configs(config).items():
        nested = _repairs_for(sub)
        if nested:
            given = out.get(key)
            out[key] = {**sub.to_dict(), **(given if isinstance(given, dict) else {}), **nested}
    return out


def tiny_config(arch: str, config: PretrainedConfig | None = None, *, sample_len: int = 16,
                per_kind: int = 1) -> PretrainedConfig:
    """A consistent tiny config for `arch`, from its defaults or from `config`, with `per_kind` layers
    of each distinct layer kind of the full stack (two where weights are shared between them).

    The model's use_cache default is kept, so caches are threaded across cuts when
    verifying, and a causal-LM head runs its model as a decoder.
    Raises TinyBuildError when the result would not exercise what a verification
    needs: a special id outside the vocab, a window the sample can't exceed, a layer
    kind of the full stack missing from the tiny one.
    """
    cls = config_class_for(arch)
    full = copy.deepcopy(config) if config is not None else _default_config(cls)
    shrinker = _Shrinker(sample_len, per_kind)
    shrinker.plan_tokens(full)
    overrides = {"is_decoder": True} if _is_causal_lm(arch) and "is_decoder" in full.to_dict() else {}
    tiny = shrinker.shrink(full, overrides)
    _fix_feature_layers(tiny)
    problem = next(_problems(full.to_dict(), tiny.to_dict(), sample_len), None)
    if problem is not None:
        raise TinyBuildError(problem)
    return tiny


FEATURE_LAYER_FIELDS = ("vision_feature_layer", "vision_feature_layers")


def _fix_feature_layers(config: PretrainedConfig) -> None:
    """Indices into the vision tower's hidden states stay inside the tiny tower.

    `vision_feature_layer = [-2, -5, -8, -11, 6]` (VipLlava) indexes the L + 1 hidden
    states of the vision stack; negative indices are not remapped with the layers, so
    each is clamped into [-(L + 1), L]. The list keeps its length: the projector is
    sized by it.
    """
    layers = getattr(getattr(config, "vision_config", None), "num_hidden_layers", None)
    if not _is_int(layers):
        return
    clamp = lambda i: max(-(layers + 1), min(layers, i))  # noqa: E731
    for name in FEATURE_LAYER_FIELDS:
        value = getattr(config, name, None)
        if _is_int(value):
            setattr(config, name, clamp(value))
        elif isinstance(value, list) and value and all(_is_int(i) for i in value):
            setattr(config, name, [clamp(i) for i in value])


def _problems(full: dict[str, Any], tiny: dict[str, Any], sample_len: int, path: str = "") -> Iterator[str]:
    """What the tiny config would fail to exercise that the full one has."""
    vocab = tiny.get("vocab_size")
    for key, value in tiny.items():
        name, before = f"{path}{key}", full.get(key)
        if isinstance(value, dict) and "model_type" in value and isinstance(before, dict):
            yield from _problems(before, value, sample_len, f"{name}.")
        elif role(key) == "token" and _is_int(vocab) and any(i >= vocab for i in _ints(value)):
            yield f"{name}={value} is outside the tiny vocab of {vocab}"
        elif role(key) == "window" and _is_int(value) and value >= sample_len:
            yield f"{name}={value} is not shorter than the {sample_len}-token sample"
        elif role(key) not in _SIZES:
            kinds = _layer_kinds(key, before, full)
            missing = kinds - (_layer_kinds(key, value, tiny) or set()) if kinds else None
            if missing:
                yield f"{name} lost layer kinds {sorted(missing)}"


def _layer_kinds(key: str, value: Any, level: dict[str, Any]) -> set[str] | None:
    for length in {v for k, v in level.items() if role(k) == "layers" and _is_int(v)}:
        entries = _per_layer(key, value, length)
        if entries is not None:
            return {repr(e) for e in entries}
    return None


# -- models and inputs -------------------------------------------------------------------


def special_token_ids(config: PretrainedConfig) -> set[int]:
    """Every special id a config names, at any level, so samples can avoid them."""
    return {i for _, key, value in _walk(config.to_dict()) if role(key) == "token" for i in _ints(value) if i >= 0}
