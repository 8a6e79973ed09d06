"""Tiny random models built from an architecture's own config class.

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
import inspect
import math
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from transformers import PretrainedConfig

__all__ = [
    "TinyBuildError",
    "UnknownArchitecture",
    "build_tiny_model",
    "config_class_for",
    "default_targets",
    "model_class_for",
    "param_mb",
    "role",
    "sample_inputs",
    "special_token_ids",
    "tiny_config",
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
MAX_PARAM_MB = 32.0

# Repairs for class defaults that are broken upstream, by model_type; applied before
# shrinking, nested dicts go to sub-configs. Each is a fix a correct default would not
# need, so keep the list short and say why.
REPAIRS: dict[str, dict[str, Any]] = {
    # DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig() never sets,
    # and clamps with clip_qkv even when it is None, the default (real checkpoints set both).
    "dbrx": {"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}},
    # Dots1Config() leaves the expert counts and top-k unset, yet every layer past
    # first_k_dense_replace builds a routed MoE block with shared experts from them.
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    # Lfm2MoeConfig() leaves layer_types unset, yet every decoder layer indexes it.
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 8},
}


class TinyBuildError(Exception):
    """The tiny model for an architecture can't be built; str() is a one-line reason."""


class UnknownArchitecture(TinyBuildError, KeyError):
    """No auto mapping of this transformers version names the architecture."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _roles(*pairs: tuple[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((role, re.compile(pattern)) for role, pattern in pairs)


# A field's role, from its whole name; the first match wins, so order matters.
_ROLES = _roles(
    ("token", r".*_token_(id|ids|index)|(unk|mask|pad|bos|eos)_index"),
    ("vocab", r".*vocab_size|.*_vocab|vocab_size_.*|.*codebook_size"),
    ("layers", r"num_hidden_layers|num_layers|n_layers?|(num_)?(encoder|decoder)_layers|depth|num_blocks"
               r"|.*_num_hidden_layers"),
    # Token spans a sample must exceed for their code path to run.
    ("window", r"sliding_window(_size)?|attention_window(_size)?|local_attention(_window_len)?"
               r"|local_window_size|attention_chunk_size|keep_window_size|index_topk"),
    ("experts", r"num_experts|n_routed_experts|num_local_experts|moe_num_experts|num_routed_experts"
                r"|(.*_)?expert_num"),
    ("experts_per_token", r"num_experts_per_tok(en)?|moe_k|moe_top_?k|top_k|num_selected_experts"),
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
    ("width", r".*hidden_size.*|d_model|n_embd|n_embed|.*embed_dim|.*embedding_dim|.*hidden_dim|model_dim"
              r"|dim|.*embedding_size|emb_dim|.*width|.*proj_dim|.*_output_dim|.*_input_dim|out_dim|.*_d_ssm"
              r"|.*_channels?"),
    ("expand", r"(.*_)?expand"),
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
}
# Sizes that other sizes are computed from; a class may recompute them itself.
_DERIVABLE = {"expert_width", "head_dim", "kv_heads", "heads", "intermediate", "rank", "width", None}
_SIZES = _DERIVABLE - {None} | {"vocab", "window", "experts", "experts_per_token", "shared_experts",
                                "expert_groups", "topk_group", "rotary_dim", "groups", "period", "offset"}
_INDEX_LIST = re.compile(r".*(layers|idxs|indexes|indices|_ids)")


@functools.lru_cache(maxsize=None)
def role(key: str) -> str | None:
    """The role a config field plays, read from its name alone."""
    return next((name for name, pattern in _ROLES if pattern.fullmatch(key)), None)


def _all_mapping_names() -> Iterator[dict[str, Any]]:
    from transformers.models.auto import modeling_auto

    for name in sorted(dir(modeling_auto)):
        mapping = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
            yield mapping


def _model_types_for(arch: str) -> list[str]:
    found = set()
    for mapping in _all_mapping_names():
        for model_type, names in mapping.items():
            if arch == names or (isinstance(names, (tuple, list)) and arch in names):
                found.add(model_type)
    return sorted(found)


def _is_causal_lm(arch: str) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return any(arch == v or (isinstance(v, (tuple, list)) and arch in v)
               for v in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())


def config_class_for(arch: str) -> type[PretrainedConfig]:
    """The config class of a model class name, found through the auto mapping names.

    The mapping says which model types serve the class; the class's own
    `config_class` then decides, because a causal-LM head of a composite model
    (`MllamaForCausalLM`) takes the text config, not the composite one the model type
    names, and `LlamaForCausalLM` serves `llama`, `internlm3`, ... alike.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_types = [t for t in _model_types_for(arch) if t in CONFIG_MAPPING_NAMES]
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


def _is_threshold(key: str, value: Any, length: int) -> bool:
    """A count of leading layers (`first_k_dense_replace`) or trailing ones (KV-sharing layers)."""
    return role(key) in ("threshold", "tail") and _is_int(value) and 0 < value < length


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
        return self.kept.index(old_index) if old_index in self.kept else None

    def threshold(self, key: str, value: int) -> int:
        """Every kept layer stays on its side of the cut, so the cut counts the kept layers."""
        before = sum(1 for i in self.kept if _before_threshold(key, value, self.old, i))
        return before if role(key) == "threshold" else len(self.kept) - before


def _layer_plans(level: dict[str, Any], per_kind: int = 1) -> list[_LayerPlan]:
    """One plan per stack length, keeping the first layer of every layer kind.

    A layer's kind is everything the config says about it: its entry in every
    per-layer field, whether an index list names it, which side of each threshold it
    sits on, its per-layer overrides. A repeating cycle of kinds can only be kept as a
    prefix of the stack. `per_kind=2` keeps a second layer of each kind, for models
    that share weights between the layers of a kind.
    """
    plans = []
    for length in sorted({v for k, v in level.items() if role(k) == "layers" and _is_int(v)}):
        if length <= MIN_LAYERS:
            continue
        seen: dict[tuple, list[int]] = {}
        for i in range(length):
            layers = seen.setdefault(_layer_kind(level, length, i), [])
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


def _layer_kind(level: dict[str, Any], length: int, i: int) -> tuple:
    kind: list[Any] = []
    for key, value in sorted(level.items()):
        entries = _per_layer(key, value, length) or _cycle(key, value, length)
        if entries is not None:
            kind.append((key, repr(entries[i])))
        elif _is_index_list(key, value, length):
            kind.append((key, i in value))
        elif _is_threshold(key, value, length):
            kind.append((key, _before_threshold(key, value, length, i)))
        elif key == "per_layer_config" and isinstance(value, dict):
            kind.append((key, repr(next((v for k, v in value.items() if int(k) == i), None))))
    return tuple(kind)


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
        elif _is_threshold(key, value, plan.old):
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

    def plan_tokens(self, config: PretrainedConfig) -> None:
        """Special ids at or above the tiny vocab move to its top, keeping their order
        and staying clear of the special ids already inside it."""
        ids = {i for _, key, value in _walk(config.to_dict()) if role(key) == "token" for i in _ints(value)}
        free = (i for i in range(VOCAB - 1, -1, -1) if i not in ids)
        for old in sorted((i for i in ids if i >= VOCAB), reverse=True):
            self.token_map[old] = next(free)

    def shrink(self, config: PretrainedConfig, overrides: dict[str, Any]) -> PretrainedConfig:
        """The tiny copy of one level, its sub-configs shrunk first; the class validates it."""
        cls = type(config)
        old = config.to_dict()
        subs = _sub_configs(config)
        new = dict(old)
        for key, sub in subs.items():
            new[key] = self.shrink(sub, {})
        unset, computed = _derived_fields(cls, old, subs)
        for key in unset:
            new[key] = None
        for key, value in old.items():
            if key not in subs and new.get(key) is not None:
                new[key] = self.value(key, value)
        self.fix_heads(old, new)
        _fix_head_dim_sums(old, new)
        self.fix_expert_groups(old, new)
        self.fix_rope(old, new)
        _complete(old, new)
        if isinstance(old.get("per_layer_config"), dict):
            new["per_layer_config"] = {
                k: self.overrides(old, new, v) if isinstance(v, dict) else v
                for k, v in old["per_layer_config"].items()
            }
        self.fix_width_splits(old, new)
        for plan in _layer_plans(old, self.per_kind):
            _apply_layer_plan(plan, old, new)
        new.update(overrides)
        for key in computed:
            new.pop(key, None)
        try:
            return cls(**new)
        except Exception as e:
            raise TinyBuildError(f"{cls.__name__} rejects the tiny config: {_one_line(e)}") from e

    def value(self, key: str, value: Any) -> Any:
        """The tiny value of one field by its role; lists of sizes shrink element-wise."""
        if role(key) == "token":
            return _map_ints(value, lambda i: self.token_map.get(i, i))
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

    def fix_rope(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Rotary sections and per-frequency factors follow the head dim's shrink."""
        full, tiny = _rope_dim(old), _rope_dim(new)
        ratio = tiny / full if full and tiny else 1.0
        for key, value in old.items():
            if new.get(key) is None:
                continue
            if role(key) == "rope" and isinstance(value, dict):
                new[key] = _scale_rope(value, ratio)
            elif "section" in key and isinstance(value, list):
                new[key] = _scale_section(value, ratio)
            elif role(key) == "rotary_dim" and _is_int(value):
                new[key] = max(2, 2 * round(value * ratio / 2))


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
    total = max(len(section), round(sum(section) * ratio))
    shares = [v * total / sum(section) for v in section]
    out = [max(1, math.floor(s)) for s in shares]
    by_remainder = sorted(range(len(section)), key=lambda i: shares[i] - math.floor(shares[i]), reverse=True)
    for i in by_remainder[: max(0, total - sum(out))]:
        out[i] += 1
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


def _one_line(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_config(cls: type[PretrainedConfig]) -> PretrainedConfig:
    try:
        return cls(**REPAIRS.get(getattr(cls, "model_type", ""), {}))
    except Exception as e:
        raise TinyBuildError(f"{cls.__name__}() fails with its own defaults: {_one_line(e)}") from e


def tiny_config(arch: str, config: PretrainedConfig | None = None, *, sample_len: int = 16) -> PretrainedConfig:
    """A consistent tiny config for `arch`, from its defaults or from `config`.

    The model's use_cache default is kept, so caches are threaded across cuts when
    verifying, and a causal-LM head runs its model as a decoder.
    Raises TinyBuildError when the result would not exercise what a verification
    needs: a special id outside the vocab, a window the sample can't exceed, a layer
    kind of the full stack missing from the tiny one.
    """
    return _tiny_config(arch, config, sample_len, per_kind=1)


def _tiny_config(arch: str, config: PretrainedConfig | None, sample_len: int, per_kind: int) -> PretrainedConfig:
    cls = config_class_for(arch)
    full = copy.deepcopy(config) if config is not None else _default_config(cls)
    shrinker = _Shrinker(sample_len, per_kind)
    shrinker.plan_tokens(full)
    overrides = {"is_decoder": True} if _is_causal_lm(arch) and "is_decoder" in full.to_dict() else {}
    tiny = shrinker.shrink(full, overrides)
    problem = next(_problems(full.to_dict(), tiny.to_dict(), sample_len), None)
    if problem is not None:
        raise TinyBuildError(problem)
    return tiny


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


def build_tiny_model(
    arch: str,
    *,
    attn_implementation: str = "eager",
    config: PretrainedConfig | None = None,
    seed: int = 0,
) -> nn.Module:
    """A tiny float32 model in eval mode, seeded so two builds have the same weights.

    Its size is measured on the meta device first, so a config that failed to shrink
    never allocates a full-size model on a shared machine. When the model class
    rejects a stack with one layer of each kind (weights shared between the layers
    of a kind need two), it is built again with two of each.
    """
    model_class = model_class_for(arch)
    cfg = tiny_config(arch, config)
    try:
        return _build(model_class, cfg, attn_implementation, seed)
    except TinyBuildError as first:
        try:
            return _build(model_class, _tiny_config(arch, config, 16, per_kind=2), attn_implementation, seed)
        except TinyBuildError:
            raise first from None


def _build(model_class: type, cfg: PretrainedConfig, attn_implementation: str, seed: int) -> nn.Module:
    mb = _meta_size_mb(model_class, cfg, attn_implementation)
    if mb is not None and mb > MAX_PARAM_MB:
        raise TinyBuildError(f"the tiny model still has {mb:.1f} MB of parameters")
    torch.manual_seed(seed)
    try:
        cfg._attn_implementation = attn_implementation
        model = model_class._from_config(cfg, attn_implementation=attn_implementation, dtype=torch.float32)
    except Exception as e:
        raise TinyBuildError(f"{type(e).__name__}: {_one_line(e)}") from e
    return model.float().eval()


def _meta_size_mb(model_class: type, cfg: PretrainedConfig, attn_implementation: str) -> float | None:
    try:
        with torch.device("meta"):
            model = model_class._from_config(
                copy.deepcopy(cfg), attn_implementation=attn_implementation, dtype=torch.float32
            )
    except Exception:
        return None
    return param_mb(model)


def param_mb(model: nn.Module) -> float:
    """Parameter size in MB (10**6 bytes), counting tied weights once."""
    unique = {id(p): p for p in model.parameters()}
    return sum(p.numel() * p.element_size() for p in unique.values()) / 1e6


def special_token_ids(config: PretrainedConfig) -> set[int]:
    """Every special id a config names, at any level, so samples can avoid them."""
    return {i for _, key, value in _walk(config.to_dict()) if role(key) == "token" for i in _ints(value) if i >= 0}


def sample_inputs(model: nn.Module, *, batch: int = 2, seq_len: int = 16, seed: int = 0,
                  codebook_rows: bool = False) -> dict:
    """Random ordinary token ids with a left-padded second row, plus what forward requires.

    The padding makes masking code run on every verification; special ids are avoided
    so no image/audio placeholder logic fires without its inputs.
    """
    vocab = _input_vocab(model)
    allowed = torch.tensor(sorted(set(range(vocab)) - special_token_ids(model.config)), dtype=torch.long)
    if len(allowed) == 0:
        raise TinyBuildError(f"every id of the {vocab}-token vocab is special")
    generator = torch.Generator().manual_seed(seed)

    def ids() -> torch.Tensor:
        return allowed[torch.randint(len(allowed), (batch, seq_len), generator=generator)]

    params = inspect.signature(model.forward).parameters
    inputs: dict[str, Any] = {"input_ids": ids()}
    codebooks = getattr(model.config, "num_codebooks", None)
    if codebook_rows and isinstance(codebooks, int) and codebooks > 1:
        # some audio-token decoders take one row of ids per codebook: (batch * num_codebooks, seq)
        inputs["input_ids"] = allowed[torch.randint(len(allowed), (batch * codebooks, seq_len), generator=generator)]
    if "lang_ids" in params:
        # language-adapter models need a language; the first one serves
        inputs["lang_ids"] = torch.zeros(batch, dtype=torch.long)
    if "attention_mask" in params:
        mask = torch.ones(batch, seq_len, dtype=torch.long)
        if batch > 1:
            mask[1, : min(2, seq_len - 1)] = 0
        inputs["attention_mask"] = mask
    if getattr(model.config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        inputs["decoder_input_ids"] = ids()
    for name, param in params.items():
        required = param.default is inspect.Parameter.empty and param.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
        if required and name not in inputs:
            if not name.endswith("input_ids"):
                raise TinyBuildError(f"{type(model).__name__}.forward requires {name!r}")
            inputs[name] = ids()
    return inputs


def _input_vocab(model: nn.Module) -> int:
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if isinstance(embeddings, nn.Embedding):
        return embeddings.num_embeddings
    return int(model.config.get_text_config().vocab_size)


def default_targets(model: nn.Module) -> list[str]:
    """The sequential targets a user would pick: the classes transformers won't split.

    Falls back to the element class of the model's layer stack when nothing declared
    is held; nested targets are dropped so no target call hides inside another.
    """
    declared: set[str] = set()
    for module in model.modules():
        declared.update(getattr(module, "_no_split_modules", None) or ())
    held = {type(m).__name__ for m in model.modules()}
    targets = declared & held or _layer_stack_class(model)
    return sorted(_outermost(model, targets))


def _layer_stack_class(model: nn.Module) -> set[str]:
    best: tuple[int, str] | None = None
    for _, module in sorted(model.named_modules(), key=lambda item: item[0]):
        if isinstance(module, nn.ModuleList) and len(module) > 0:
            classes = {type(m).__name__ for m in module}
            if len(classes) == 1 and (best is None or len(module) > best[0]):
                best = (len(module), classes.pop())
    return {best[1]} if best else set()


def _outermost(model: nn.Module, targets: set[str]) -> set[str]:
    """Drop a target class only when every instance of it sits inside another target's instance."""
    nested, outside = set(), set()

    def visit(module: nn.Module, inside: str | None) -> None:
        name = type(module).__name__
        if name in targets:
            (nested if inside is not None and inside != name else outside).add(name)
        for child in module.children():
            visit(child, inside if inside is not None else (name if name in targets else None))

    visit(model, None)
    return targets - (nested - outside)


def alternative_samples(model: nn.Module) -> list[dict]:
    """Other input layouts to try when the model's own forward rejects the default sample."""
    out = []
    codebooks = getattr(model.config, "num_codebooks", None)
    if isinstance(codebooks, int) and codebooks > 1:
        out.append(sample_inputs(model, codebook_rows=True))
    return out


def upstream_note(arch: str, attn_implementation: str = "eager") -> str:
    """Why a build failed, when the class's own default config can't build the model either (tried on meta)."""
    import torch

    try:
        config = config_class_for(arch)()
        with torch.device("meta"):
            model_class_for(arch)._from_config(config, attn_implementation=attn_implementation)
    except ImportError:
        return "needs a library: "
    except Exception:
        return "defaults broken upstream: "
    return ""
