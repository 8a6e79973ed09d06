"""Audio samples: a log-mel spectrogram or a waveform, and what the forward needs with it, built from the config.

Which audio tensor to build is read from the forward signature (`input_features`,
`input_values`, ...; an encoder-decoder wrapper such as SpeechEncoderDecoderModel
says it through its encoder's `main_input_name`). The feature width comes from the
audio config (num_mel_bins, feature_size, input_feat_per_channel, ...). How long
the audio must be is not written down uniformly (Whisper wants exactly
2 * max_source_positions frames, convolution stacks want a minimum, chunked
encoders want whole chunks), so candidate lengths and layouts are tried, shortest
first, until the model's own forward accepts one. For audio-LLMs the number of
placeholder tokens is the number of feature vectors the model's own
`get_audio_features` (or, lacking one, its audio tower) returns, so the count is
right for every subsampling and projector. Verification may run the model;
analysis never does.

Like multimodal.py, which calls it for audio models, it builds samples around the pipeline,
for verify and `staticexec emit`: emit decides a forward's input conditions from them.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from staticexec.check.features import error_line, feature_count
from staticexec.check.configs import TinyBuildError
from staticexec.check.samples import sample_inputs

TOKEN_FIELDS = ("audio_token_id", "audio_token_index")
# The audio tensor a forward takes, in order of preference.
AUDIO_INPUTS = ("input_features", "input_values", "audio_input_features")
# Where the audio encoder's config lives in a composite config (the config itself last).
AUDIO_CONFIGS = ("audio_config", "encoder_config", "encoder", "speech_config", "audio_encoder_config")
# Fields that give the channels of one spectrogram frame.
FEATURE_FIELDS = ("num_mel_bins", "n_mels", "num_mels", "mel_bins", "input_feat_per_channel", "feature_size",
                  "feature_projection_input_dim", "input_dim", "num_mel_filters")
STACK_FIELDS = ("num_stacked_frames", "lfr_m", "stacked_frames", "frame_stacking")
# Masks over the audio frames (or samples), when forward takes them.
AUDIO_MASKS = ("input_features_mask", "feature_attention_mask", "input_values_mask", "padding_mask",
               "audio_attention_mask")
# Frame counts to try for a spectrogram, and sample counts for a waveform; lengths the
# config implies (2 * max_source_positions, chunk sizes) are added between them.
FRAMES = (64, 128, 200, 256, 400, 512, 1000)
SAMPLES = (3200, 16000, 32000)
MAX_FRAMES = 12000


def _sub_configs(config: Any) -> list[Any]:
    """Every config of the tree, breadth first, an audio encoder's before the others at each level."""
    order, level = [], [config]
    while level:
        order.extend(level)
        nxt = []
        for cfg in level:
            subs = [(k, v) for k, v in vars(cfg).items() if hasattr(v, "to_dict") and all(v is not o for o in order)]
            subs.sort(key=lambda kv: (kv[0] not in AUDIO_CONFIGS, not any(w in kv[0] for w in ("audio", "speech", "asr", "encoder"))))
            nxt.extend(v for _, v in subs)
        level = nxt
    # the model's own config answers after its audio encoder's
    return order[1:2] + order[:1] + order[2:] if len(order) > 1 and _is_audio(order[1]) else order


def _is_audio(cfg: Any) -> bool:
    return any(hasattr(cfg, f) for f in FEATURE_FIELDS)


def _first_int(configs: list[Any], fields: tuple[str, ...]) -> int | None:
    for cfg in configs:
        for field in fields:
            value = getattr(cfg, field, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def without_sampling(params: Any) -> dict:
    """`sample=False` where forward takes it: samplers of acoustic latents (VibeVoice) draw noise unless told
    not to, and a forward that draws noise can't be compared with its subgraphs."""
    return {"sample": False} if "sample" in params else {}


def feature_width(config: Any) -> int | None:
    """The channels of one spectrogram frame the audio encoder takes (num_mel_bins, feature_size, ...)."""
    return _first_int(_sub_configs(config), FEATURE_FIELDS)


def _audio_input(model: nn.Module) -> str:
    """The name of the audio tensor forward takes."""
    params = inspect.signature(model.forward).parameters
    encoder = model.get_encoder() if hasattr(model, "get_encoder") else None
    main = getattr(encoder, "main_input_name", None)
    if main in AUDIO_INPUTS and main in params:  # wrappers that take either (SpeechEncoderDecoderModel)
        return main
    name = next((n for n in AUDIO_INPUTS if n in params), None)
    if name is None:
        raise TinyBuildError(f"{type(model).__name__}.forward takes no audio tensor ({', '.join(AUDIO_INPUTS)})")
    return name


def _lengths(configs: list[Any], waveform: bool) -> list[int]:
    """Candidate lengths, shortest first: the fixed ones and those the config implies."""
    implied: set[int] = set()
    for cfg in configs:
        for key, value in cfg.to_dict().items():
            if waveform and isinstance(value, list) and value and all(isinstance(v, int) and v > 0 for v in value) \
                    and any(w in key for w in ("patch_sizes", "strides", "ratios", "downsampl")):
                hop = math.prod(value)  # a strided waveform encoder takes whole hops (MuseSpark: 16*6*5*4)
                implied.update({hop, 4 * hop, 10 * hop})
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
                continue
            if key == "max_source_positions":  # Whisper-style encoders: two stride-2 convs... or one
                implied.update({value, 2 * value})
            elif waveform and any(w in key for w in ("frame_size", "hop_length", "chunk_size", "samples")):
                implied.update({value, 4 * value})
            elif not waveform and any(w in key for w in ("n_window", "chunk_size", "chunk_length")):
                implied.update({2 * value, 4 * value, 8 * value})
    base = SAMPLES if waveform else FRAMES
    limit = 10 * max(SAMPLES) if waveform else MAX_FRAMES
    return sorted(set(base) | {n for n in implied if n <= limit})


def _audio_tensors(name: str, configs: list[Any], generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Candidate audio tensors: (1, samples) for a waveform, (1, mels, frames) or (1, frames, mels) otherwise."""
    if name == "input_values":
        for n in _lengths(configs, waveform=True):
            wave = torch.randn(1, n, generator=generator)
            yield wave
            yield wave.unsqueeze(1)  # (1, channels, samples) for codec-style encoders (VibeVoice)
        return
    mels = _first_int(configs, FEATURE_FIELDS)
    if mels is None:
        # encoders that take embeddings-wide features (Pop2Piano feeds them to a T5 encoder)
        mels = _first_int(configs, ("d_model", "hidden_size"))
    if mels is None:
        raise TinyBuildError("no feature width (num_mel_bins, feature_size, ...) in the config")
    # low-frame-rate encoders take several frames stacked into one (FunASR's num_stacked_frames = 7)
    stacked = _first_int(configs, STACK_FIELDS) or 1
    for n in _lengths(configs, waveform=False):
        for width in dict.fromkeys((mels, mels * stacked)):
            features = torch.randn(1, width, n, generator=generator)
            yield features
            yield features.transpose(1, 2).contiguous()


def _signature(fn: Any) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn).parameters)


def _audio_features_fn(model: nn.Module) -> Any:
    """The model's get_audio_features, looking through `(*args, **kwargs)` forwarders to the inner model's."""
    fn = getattr(model, "get_audio_features", None)
    inner = getattr(model, "model", None)
    while fn is not None and set(_signature(fn)) <= {"args", "kwargs"} and inner is not None:
        fn, inner = getattr(inner, "get_audio_features", fn), getattr(inner, "model", None)
    if fn is not None:
        return fn
    # no get_audio_features (Qwen2Audio): the audio tower's own forward, whose output the projector keeps in count
    for attr in ("audio_tower", "audio_model", "audio_encoder", "speech_encoder"):
        for holder in (model, getattr(model, "model", None)):
            tower = getattr(holder, attr, None)
            if isinstance(tower, nn.Module):
                return tower
    raise TinyBuildError(f"{type(model).__name__} has an audio token but no get_audio_features or audio tower")


def _with_masks(params: Any, name: str, audio: torch.Tensor, frames: int, dtype: torch.dtype | None,
                encoder_mask: bool) -> dict:
    """The audio tensor plus an all-ones mask over its frames for every audio mask `params` takes."""
    inputs = {name: audio, **without_sampling(params)}
    if dtype is None:
        return inputs
    masks = AUDIO_MASKS + (("attention_mask",) if encoder_mask else ())
    for mask in masks:
        if mask in params:
            inputs[mask] = torch.ones(1, frames, dtype=dtype)
    return inputs


def _frames(audio: torch.Tensor, configs: list[Any]) -> int:
    """The length of the time axis: the last one of a waveform or (1, mels, frames), else the middle one."""
    mels = _first_int(configs, FEATURE_FIELDS) or _first_int(configs, ("d_model", "hidden_size"))
    widths = {mels, mels * (_first_int(configs, STACK_FIELDS) or 1)}
    return audio.shape[-1] if audio.dim() == 2 or audio.shape[-1] not in widths else audio.shape[1]


def audio_inputs(model: Any, *, seed: int = 0) -> dict:
    """The audio inputs of a speech model's forward, plus decoder ids or placeholder-bearing input ids (batch of one).

    Encoder-decoders get `decoder_input_ids` (and an all-ones `attention_mask` over the
    frames); audio-LLMs get `input_ids` with one placeholder per audio feature vector
    and an all-ones text `attention_mask`. The first candidate layout the model runs on
    is returned, so the result always runs.
    """
    config = model.config
    params = _signature(model.forward)
    name = _audio_input(model)
    configs = _sub_configs(config)
    token = next((getattr(config, f) for f in TOKEN_FIELDS if isinstance(getattr(config, f, None), int)), None)
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False)) or "decoder_input_ids" in params
    text = sample_inputs(model, batch=1, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    failure = "no audio layout to try"
    for audio in _audio_tensors(name, configs, generator):
        frames = _frames(audio, configs)
        masked = any(m in params for m in AUDIO_MASKS) or (encoder_decoder and "attention_mask" in params)
        # all-ones masks over the frames as a processor gives them, long or bool; then none, for the
        # models whose "feature" mask is over the encoder's output instead (GraniteSpeech)
        for dtype in (torch.long, torch.bool, None) if masked else (None,):
            inputs = _with_masks(params, name, audio, frames, dtype, encoder_mask=encoder_decoder and token is None)
            try:
                if token is not None:
                    fn = _audio_features_fn(model)
                    accepted = _signature(fn)
                    call = {k: v for k, v in inputs.items() if k in accepted or "kwargs" in accepted}
                    with torch.no_grad():
                        count = feature_count(fn(**call))
                    if count == 0:
                        raise TinyBuildError("the audio encoder returned no feature vectors")
                    ids = text["input_ids"]
                    ids = torch.cat([ids[:, :4], torch.full((1, count), token, dtype=ids.dtype), ids[:, 4:]], dim=1)
                    inputs.update(input_ids=ids, attention_mask=torch.ones_like(ids))
                elif encoder_decoder:
                    inputs.update({k: v for k, v in text.items() if k.startswith("decoder_")})
                elif "input_ids" in params:  # audio added to the text stream without placeholders
                    inputs.update(input_ids=text["input_ids"], attention_mask=torch.ones_like(text["input_ids"]))
                with torch.no_grad():  # the model's own forward decides whether the layout is right
                    model(**inputs)
            except Exception as exc:  # the model wants another length, layout or mask
                failure = error_line(exc)
                continue
            return inputs
    raise TinyBuildError(f"{type(model).__name__} accepts no audio layout tried: {failure}")
