"""Samples as a model's users build them: the architecture's own processor turns a random image into inputs.

Which processor, image processor or feature extractor an architecture has is read
from transformers' auto mappings by the config's `model_type` (the mapping names only, so every
release from 5.15 on answers the same way). Nothing comes from the hub: each part is built from its
class defaults, made consistent with the tiny config (image size, patch size, merge size, token
ids: `fitted_kwargs`), and the tokenizer is a word-level one built here (`word_level_tokenizer`)
whose special tokens carry the config's own ids. The processor then does what it does for a user:
resizes and packs the image (grids, tiles, patches, `image_sizes`, `image_grid_thw`) and expands the
placeholder in the text into as many image tokens as it computes. An audio-language model's processor
gets a second of noise through its feature extractor instead.

A processor's own count of image tokens follows its checkpoint's settings, which a tiny config need
not share; the model's forward is the judge (verify tries the samples in order until it accepts
one), and where the model has get_image_features a second sample has the placeholder run resized to
the number of feature vectors it returns. When no processor applies, the reason says why
(`ProcessorUnavailable`), so the hand-built layouts of multimodal.py can answer instead.

Like samples.py and multimodal.py it builds inputs around the pipeline, for verify and
`staticexec emit --sample multimodal`; the analysis never runs a processor.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

import torch
from transformers.utils import is_torchvision_available

from staticexec.check.configs import TinyBuildError, special_token_ids
from staticexec.check.features import error_line, feature_count, image_features_fn, image_token

__all__ = ["ProcessorUnavailable", "audio_kwargs", "build_processor", "fitted_kwargs", "processor_names",
           "processor_samples", "word_level_tokenizer"]

# No image edge is longer: a size setting beyond it is a pixel budget.
MAX_EDGE = 16384
# How many patches a processor that flattens an image into a fixed number of patches gives.
MAX_PATCHES = 64
# The length of an audio sample.
AUDIO_SECONDS = 1
# How many words of ordinary text follow the placeholder.
TEXT_WORDS = 8
UNKNOWN = "[UNK]"
# Inputs of the text side, never passed to get_image_features.
TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids", "position_ids")


class ProcessorUnavailable(TinyBuildError):
    """No processor-built sample: the reason a user can act on (a missing library, no processor class)."""


def _names(value: Any) -> list[str]:
    """Class names in one auto-mapping value: a name, a (slow, fast) pair, or a {backend: name} dict."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        order = ("pil", "torchvision")  # the PIL backend needs only pillow
        return [v for k in sorted(value, key=lambda k: order.index(k) if k in order else len(order))
                for v in _names(value[k])]
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _names(item)]
    return []


def processor_names(model_type: str) -> dict[str, list[str]]:
    """The processor, image processor and feature extractor classes transformers maps a model_type to."""
    from transformers.models.auto import feature_extraction_auto, image_processing_auto, processing_auto

    return {
        "processor": _names(processing_auto.PROCESSOR_MAPPING_NAMES.get(model_type)),
        "image_processor": _names(image_processing_auto.IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type)),
        "feature_extractor": _names(feature_extraction_auto.FEATURE_EXTRACTOR_MAPPING_NAMES.get(model_type)),
    }


def _sibling_image_processors(processor: str) -> list[str]:
    """The image processors of the model_types that map to the same processor class (Qwen3-VL-MoE's
    processor is Qwen3-VL's, and so is its image processor)."""
    from transformers.models.auto import image_processing_auto, processing_auto

    types = [t for t, v in processing_auto.PROCESSOR_MAPPING_NAMES.items() if processor in _names(v)]
    return [n for t in types for n in _names(image_processing_auto.IMAGE_PROCESSOR_MAPPING_NAMES.get(t))]


def _class(name: str) -> type:
    """A transformers class by name; ProcessorUnavailable with the library it needs when it can't be had."""
    import transformers

    try:
        cls = getattr(transformers, name)
        inspect.signature(cls)  # a dummy object for a missing backend raises on use, not on lookup
        if getattr(cls, "_backends", None):
            cls()  # the dummy's constructor names what is missing
        return cls
    except ImportError as exc:
        raise ProcessorUnavailable(f"{name} needs a library that is not installed: {_missing(exc)}") from exc
    except AttributeError as exc:
        raise ProcessorUnavailable(f"no class {name} in transformers {transformers.__version__}") from exc


def _missing(exc: BaseException) -> str:
    found = re.findall(r"requires the (\w+) library", str(exc))
    return ", ".join(dict.fromkeys(found)) or error_line(exc)


def _first_class(names: list[str], kind: str, model_type: str) -> type:
    if not names:
        raise ProcessorUnavailable(f"transformers maps model_type {model_type!r} to no {kind.replace('_', ' ')}")
    problems: list[str] = []
    for name in names:
        try:
            return _class(name)
        except ProcessorUnavailable as exc:
            problems.append(str(exc))
    raise ProcessorUnavailable("; ".join(dict.fromkeys(problems)))


# --- the tiny config's sizes, as an image processor's settings -------------------------------------------

def _configs(config: Any) -> list[Any]:
    """Every config of the tree, breadth first: vision configs first, then the model's, then the others."""
    order, level = [], [config]
    while level:
        order.extend(level)
        level = [v for cfg in level for v in vars(cfg).values() if hasattr(v, "to_dict") and all(v is not o for o in order)]
    vision = [c for c in order if any(getattr(p, "vision_config", None) is c for p in order)]
    return vision + [c for c in order if all(c is not v for v in vision)]


def _lookup(configs: list[Any], *names: str) -> Any:
    for cfg in configs:
        for name in names:
            value = getattr(cfg, name, None)
            if value is not None:
                return value
    return None


def _pair(value: Any) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    if isinstance(value, dict) and "height" in value and "width" in value:
        return int(value["height"]), int(value["width"])
    return None


def _size_keys(default: Any) -> dict[str, Any]:
    """The settings a size default gives (a dict, or transformers' SizeDict), without the unset ones."""
    items = default.items() if isinstance(default, dict) else vars(default).items() if hasattr(default, "__dict__") else ()
    return {k: v for k, v in items if v is not None}


def _counts_pixels(default: Any) -> bool:
    """Whether a size's edges are pixel budgets (Qwen2-VL's shortest_edge 56 * 56, longest_edge 28 * 28 * 1280)."""
    edges = _size_keys(default)
    return isinstance(edges.get("longest_edge"), int) and edges["longest_edge"] > MAX_EDGE


def _square(default: Any, side: int) -> Any:
    """A height x width setting of the default's own type (a dict, or a SizeDict a strict class wants)."""
    kind = dict if default is None or isinstance(default, dict) else type(default)
    return kind(height=side, width=side)


def _size_like(default: Any, height: int, width: int) -> Any:
    """A size setting with the keys of the processor's default, for an image of height x width."""
    keys = set(_size_keys(default))
    if {"height", "width"} <= keys:
        return {"height": height, "width": width}
    out = {}
    if "shortest_edge" in keys:
        out["shortest_edge"] = min(height, width)
    if "longest_edge" in keys:
        out["longest_edge"] = max(height, width)
    if out:
        return out
    if isinstance(default, int):
        return height
    return None


def fitted_kwargs(cls: type, config: Any) -> dict[str, Any]:
    """Settings of an image processor class made consistent with the tiny config.

    The image size is the vision config's (position embeddings are fixed to it), or a small image's
    (`_small_side`) where it gives none; patch, merge and temporal patch sizes are the vision config's;
    a processor that sizes images by a pixel budget (min/max pixels, or a size whose edges are pixel
    counts) gets the small image's. Only settings the class defaults have are set; splitting an image
    into many crops is turned off, to keep the sample small.
    """
    configs = _configs(config)
    try:
        defaults = cls()
    except Exception:
        defaults = None
    attrs = dict(vars(defaults)) if defaults is not None else {}
    out: dict[str, Any] = {}
    small = _small_side(configs)
    side = _pair(_lookup(configs, "image_size")) or (small, small)
    for name in ("patch_size", "temporal_patch_size"):
        value = _lookup(configs, name)
        if name in attrs and isinstance(value, int):
            out[name] = value if isinstance(attrs[name], int) else _square(attrs[name], value)
    merge = _lookup(configs, "spatial_merge_size", "merge_size")
    if "merge_size" in attrs and isinstance(merge, int):
        out["merge_size"] = merge
    for name in ("size", "crop_size"):
        if attrs.get(name) is not None:
            value = _size_like(attrs[name], *side)
            if value is not None:
                out[name] = value
    if "min_pixels" in attrs or "max_pixels" in attrs or _counts_pixels(attrs.get("size")):
        pixels = small * small
        out.update({k: pixels for k in ("min_pixels", "max_pixels") if k in attrs})
        if "size" in attrs:
            out["size"] = {"shortest_edge": pixels, "longest_edge": pixels}
    if isinstance(attrs.get("max_image_size"), dict):
        out["max_image_size"] = {"longest_edge": max(side)}
    elif isinstance(attrs.get("max_image_size"), int):
        out["max_image_size"] = max(side)
    if "image_seq_length" in attrs:  # placeholders per image, where the processor reads them from here
        seq = _lookup(configs, "image_seq_length", "num_image_tokens", "mm_tokens_per_image")
        out["image_seq_length"] = seq if isinstance(seq, int) else 1
    if isinstance(attrs.get("max_patches"), int):  # flattened-patch processors (Pix2Struct): a few patches
        out["max_patches"] = MAX_PATCHES
    for name in ("do_image_splitting", "do_pan_and_scan", "apply_ocr", "do_tile", "crop_to_patches"):
        if attrs.get(name):
            out[name] = False
    return out


def audio_kwargs(cls: type, config: Any) -> dict[str, Any]:
    """Settings of a feature extractor class made consistent with the tiny config: its feature size (mel
    bins) is the audio encoder's."""
    from staticexec.check.audio import feature_width

    params = inspect.signature(cls.__init__).parameters
    mels = feature_width(config)
    out: dict[str, Any] = {}
    for name in ("feature_size", "num_mel_bins", "n_mels"):
        if name in params and mels is not None:
            out[name] = mels
    return out


# --- a word-level tokenizer with the config's special ids ---------------------------------------------------

_TOKEN_ATTR = re.compile(r"\btokenizer\.(\w+_token)\b")
# ... or sets as its own: `self.boi_token = "<image>"`.
_TOKEN_SET = re.compile(r"""\bself\.(\w+_token)\s*=\s*["']([^"'\s]+)["']""")
# Tokens a processor looks up by their text: `tokenizer.vocab["|SPEAKER|"]`, `convert_tokens_to_ids("<image>")`.
_LOOKED_UP = re.compile(r"""(?:\bvocab\[|convert_tokens_to_ids\()\s*["']([^"'\s]+)["']""")


def _token_names(processor_cls: type) -> dict[str, str]:
    """The special tokens a processor class uses, by attribute name, with its default strings."""
    out: dict[str, str] = {}
    try:
        params = inspect.signature(processor_cls.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    for name, param in params.items():
        if name.endswith("_token") and isinstance(param.default, str):
            out[name] = param.default
    try:
        source = inspect.getsource(processor_cls)
    except (OSError, TypeError):
        source = ""
    for name, text in _TOKEN_SET.findall(source):
        out.setdefault(name, text)
    for name in _TOKEN_ATTR.findall(source):
        out.setdefault(name, f"<|{name}|>")
    for text in _LOOKED_UP.findall(_module_source(processor_cls)):
        out.setdefault(f"looked_up:{text}", text)
    return out


def _module_source(cls: type) -> str:
    try:
        return inspect.getsource(inspect.getmodule(cls))
    except (OSError, TypeError):
        return ""


def _token_id(config: Any, name: str) -> int | None:
    """The config's id for a processor's `<name>` token (image_token -> image_token_id or image_token_index);
    None for a token looked up by its text alone."""
    if not name.endswith("_token"):
        return None
    base = name[: -len("_token")]
    configs = [config] + [v for v in vars(config).values() if hasattr(v, "to_dict")]
    for cfg in configs:
        for field in (f"{name}_id", f"{name}_index", f"{base}_id", f"{base}_index", f"{base}_token_id"):
            value = getattr(cfg, field, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return None


def word_level_tokenizer(config: Any, special: dict[str, str], vocab_size: int) -> Any:
    """A fast tokenizer built offline: ordinary words `w<id>`, and each special token with the config's id.

    `special` maps attribute names (`image_token`, `boi_token`, `bos_token`, ...) to the strings the
    processor writes; a name the config gives an id keeps that id, so the processor's placeholders
    become exactly the ids the model looks for. Other special strings get ordinary unused ids.
    """
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    reserved = special_token_ids(config)
    ids: dict[str, int] = {}
    for name, text in special.items():
        value = _token_id(config, name)
        if value is not None and value < vocab_size and text not in ids:
            ids[text] = value
    taken = set(ids.values()) | reserved
    free = [i for i in range(vocab_size) if i not in taken]
    # the unknown token first, at the lowest free id: some processors number their image tokens from
    # unk_token_id + 1 (Kosmos-2), as a checkpoint's low unk id allows
    for text in [UNKNOWN, *dict.fromkeys(special.values())]:
        if text not in ids:
            if not free:
                raise TinyBuildError(f"no free id for the special token {text!r} in a {vocab_size}-token vocab")
            ids[text] = free.pop(0)
    vocab = {f"w{i}": i for i in range(vocab_size) if i not in reserved and i not in ids.values()}
    vocab.update(ids)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNKNOWN))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ids])
    named = {n: t for n, t in special.items() if n in ("bos_token", "eos_token", "pad_token")}
    extra = {n: t for n, t in special.items() if n not in named and n != "unk_token" and ":" not in n}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=UNKNOWN, extra_special_tokens=extra,
                                        **named)
    tokenizer.pad_token = tokenizer.pad_token or UNKNOWN
    return tokenizer


# --- the processor, and the samples -----------------------------------------------------------------------

def _small_side(configs: list[Any]) -> int:
    """The side of a small image: two blocks of patch x merge pixels (a 2 x 2 grid of tokens after merging)."""
    patch = _pair(_lookup(configs, "patch_size")) or (16, 16)
    merge = _lookup(configs, "spatial_merge_size", "merge_size")
    return 2 * patch[0] * (merge if isinstance(merge, int) else 1)


def _image(config: Any, generator: torch.Generator) -> Any:
    """A small random RGB image (`_small_side`): a processor with a fixed input size resizes it to the vision
    config's, one that keeps an image's own resolution keeps it small."""
    from PIL import Image

    side = _small_side(_configs(config))
    pixels = torch.randint(0, 256, (side, side, 3), generator=generator, dtype=torch.uint8)
    return Image.fromarray(pixels.numpy(), mode="RGB")


def _init_kwargs(cls: type, config: Any) -> dict[str, Any]:
    """Processor settings the config also holds (patch_size, vision_feature_select_strategy, ...)."""
    configs = _configs(config)
    out = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name in ("self", "image_processor", "tokenizer", "chat_template") or param.kind in (
                param.VAR_POSITIONAL, param.VAR_KEYWORD) or name.endswith("_token"):
            continue
        value = _lookup(configs, name)
        if value is not None and not hasattr(value, "to_dict"):
            out[name] = value
    return out


def _package_processor(model: Any) -> list[str]:
    """Processor classes of the model's own package (processing_<name>.py), for a model_type the auto
    mapping leaves out (Kosmos-2's "kosmos-2")."""
    from transformers.processing_utils import ProcessorMixin

    package = type(model).__module__.rpartition(".")[0]
    name = type(model).__module__.rpartition(".")[2].replace("modeling_", "processing_", 1)
    try:
        module = importlib.import_module(f"{package}.{name}")
    except ImportError:
        return []
    return [n for n, v in sorted(vars(module).items())
            if isinstance(v, type) and issubclass(v, ProcessorMixin) and v.__module__ == module.__name__]


def build_processor(model: Any) -> tuple[Any, dict[str, Any]]:
    """The architecture's own processor for a tiny model, with the settings to call it with.

    Its image processor and feature extractor are fitted to the config (`fitted_kwargs`,
    `audio_kwargs`), its tokenizer is a word-level one with the config's special ids. A processor
    that also holds a video processor can't be built without torchvision."""
    config = model.config
    names = processor_names(config.model_type)
    cls = _first_class(names["processor"] or _package_processor(model), "processor", config.model_type)
    attributes = list(cls.get_attributes()) if hasattr(cls, "get_attributes") else list(getattr(cls, "attributes", []))
    parts: dict[str, Any] = {}
    for attribute in attributes:
        if attribute == "image_processor":
            image_cls = _first_class(names["image_processor"] or _sibling_image_processors(cls.__name__),
                                     "image processor", config.model_type)
            fitted = fitted_kwargs(image_cls, config)
            parts[attribute] = image_cls(**fitted)
        elif attribute == "feature_extractor":
            audio_cls = _first_class(names["feature_extractor"], "feature extractor", config.model_type)
            try:
                parts[attribute] = audio_cls(**audio_kwargs(audio_cls, config))
            except Exception as exc:
                raise ProcessorUnavailable(f"{audio_cls.__name__} can't be built from its defaults: "
                                           f"{error_line(exc)}") from exc
        elif attribute == "video_processor" and not is_torchvision_available():
            raise ProcessorUnavailable(f"{cls.__name__} holds a video processor, which needs torchvision")
        elif not attribute.endswith("tokenizer"):
            parts[attribute] = None
    special = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", **_token_names(cls), "unk_token": UNKNOWN}
    vocab = _vocab_size(model)
    for attribute in attributes:
        if attribute.endswith("tokenizer"):
            parts[attribute] = word_level_tokenizer(config, special, vocab)
    try:
        processor = cls(**parts, **_init_kwargs(cls, config))
    except Exception as exc:
        raise ProcessorUnavailable(f"{cls.__name__} can't be built from its defaults: {error_line(exc)}") from exc
    # the image settings again at call time: a processor's own call defaults (Aria's max_image_size) win
    # over its image processor's
    if "image_processor" in parts:
        return processor, {"images": None, **fitted}
    if "feature_extractor" in parts:
        return processor, {"audio": None, "sampling_rate": parts["feature_extractor"].sampling_rate}
    raise ProcessorUnavailable(f"{cls.__name__} holds no image processor or feature extractor")


def _vocab_size(model: Any) -> int:
    from staticexec.check.samples import input_vocab

    return input_vocab(model)


def _text(processor: Any, words: list[str], placeholder: str = "image_token") -> list[str]:
    """Texts to try: the image (or audio) placeholder before the words, then the words alone."""
    token = getattr(processor, placeholder, None)
    plain = " ".join(words)
    return ([f"{token} {plain}"] if isinstance(token, str) else []) + [plain]


def processor_samples(model: Any, *, seed: int = 0) -> Iterator[dict]:
    """Samples the architecture's own processor makes from one random image and a few words (batch of one).

    Each holds only inputs the forward takes. After the processor's own sample comes, where the model has
    get_image_features and an image token, the same with the placeholder run resized to the number of
    feature vectors the model returns. When the processor itself can't be built (it also holds a video
    processor, which needs torchvision) the architecture's image processor alone packs the image, and the
    placeholder run is as long as get_image_features' output. Raises ProcessorUnavailable when neither applies.
    """
    generator = torch.Generator().manual_seed(seed)
    image = _image(model.config, generator)
    words = _words(model, generator)
    try:
        processor, settings = build_processor(model)
        if "audio" in settings:  # an audio-language model's processor: a second of noise
            settings["audio"] = torch.randn(settings["sampling_rate"] * AUDIO_SECONDS, generator=generator).numpy()
        else:
            settings["images"] = image
    except ProcessorUnavailable as exc:
        try:
            yield _image_processor_sample(model, image, words)
        except ProcessorUnavailable as second:
            reasons = dict.fromkeys(r for e in (exc, second) for r in str(e).split("; "))
            raise ProcessorUnavailable("; ".join(reasons)) from second
        return
    failures: list[str] = []
    made = 0
    for text in _text(processor, words, "audio_token" if "audio" in settings else "image_token"):
        try:
            raw = processor(text=text, return_tensors="pt", **settings)
        except Exception as exc:
            failures.append(error_line(exc))
            continue
        sample = _forward_inputs(model, dict(raw))
        made += 1
        yield sample
        resized = _resized(model, sample)
        if resized is not None:
            yield resized
    if not made:
        raise ProcessorUnavailable(f"{type(processor).__name__} made no sample: {'; '.join(failures)}")


def _words(model: Any, generator: torch.Generator) -> list[str]:
    """A few ordinary words of the word-level tokenizer (no special id among them)."""
    reserved = special_token_ids(model.config)
    ordinary = [i for i in range(_vocab_size(model)) if i not in reserved]
    return [f"w{ordinary[int(i)]}" for i in torch.randint(len(ordinary), (TEXT_WORDS,), generator=generator)]


def _image_processor_sample(model: Any, image: Any, words: list[str]) -> dict:
    """The image as the architecture's image processor packs it, with as many placeholder tokens as
    get_image_features returns feature vectors, after the first word."""
    config = model.config
    if "vision_config" in vars(config) and config.vision_config is None:
        raise ProcessorUnavailable(f"{type(config).__name__}() has no vision_config, so the model built from its "
                                   "defaults has no vision tower; verify with a config that has one (--config)")
    token = image_token(config)
    if token is None or image_features_fn(model) is None:
        raise ProcessorUnavailable(f"{type(model).__name__} has no image token id or get_image_features to count "
                                   "placeholders without its processor")
    names = processor_names(config.model_type)
    image_cls = _first_class(names["image_processor"], "image processor", config.model_type)
    try:
        raw = dict(image_cls(**fitted_kwargs(image_cls, config))(images=image, return_tensors="pt"))
    except Exception as exc:
        raise ProcessorUnavailable(f"{image_cls.__name__} can't pack an image: {error_line(exc)}") from exc
    try:
        count = _feature_count(model, raw)
    except Exception as exc:
        raise ProcessorUnavailable(f"get_image_features rejects {image_cls.__name__}'s output: {error_line(exc)}") from exc
    ids = [int(w[1:]) for w in words]
    row = torch.tensor(ids[:1] + [token] * count + ids[1:]).unsqueeze(0)
    return _forward_inputs(model, {**raw, "input_ids": row})


def _forward_inputs(model: Any, raw: dict) -> dict:
    """The processor's tensors that the forward takes, an all-ones attention mask where it gave none,
    decoder ids for an encoder-decoder (the processor makes the encoder's side only), and no sampling."""
    from staticexec.check.audio import without_sampling
    from staticexec.check.samples import sample_inputs

    params = inspect.signature(model.forward).parameters
    out = {k: v for k, v in raw.items() if k in params and isinstance(v, torch.Tensor)}
    out.update(without_sampling(params))
    if "attention_mask" in params and "input_ids" in out and "attention_mask" not in out:
        out["attention_mask"] = torch.ones_like(out["input_ids"])
    if getattr(model.config, "is_encoder_decoder", False) and "decoder_input_ids" in params \
            and "decoder_input_ids" not in out:
        text = sample_inputs(model, batch=1, provided=out)
        out["decoder_input_ids"] = text.get("decoder_input_ids", text["input_ids"])
    return out


def _feature_count(model: Any, inputs: dict) -> int:
    """Feature vectors get_image_features returns for the image inputs (those it names, or, when it takes
    **kwargs, every image input the forward takes too)."""
    fn = image_features_fn(model)
    accepted = inspect.signature(fn).parameters
    loose = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    forward = inspect.signature(model.forward).parameters
    call = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor) and k not in TEXT_INPUTS
            and (k in accepted or (loose and k in forward))}
    with torch.no_grad():
        return feature_count(fn(**call))


def _resized(model: Any, sample: dict) -> dict | None:
    """The sample with its run of image tokens as long as get_image_features' output, when they differ."""
    token = image_token(model.config)
    ids = sample.get("input_ids")
    if token is None or ids is None or image_features_fn(model) is None:
        return None
    try:
        count = _feature_count(model, sample)
    except Exception:
        return None
    row = ids[0]
    where = (row == token).nonzero().flatten()
    if len(where) == 0 or len(where) == count:
        return None
    first = int(where[0])
    kept = row[row != token]
    new = torch.cat([kept[:first], torch.full((count,), token, dtype=row.dtype), kept[first:]]).unsqueeze(0)
    out = dict(sample, input_ids=new)
    for name, value in sample.items():
        if name != "input_ids" and isinstance(value, torch.Tensor) and value.shape[:2] == ids.shape:
            out[name] = torch.ones_like(new) if name == "attention_mask" else None
    return {k: v for k, v in out.items() if v is not None}
