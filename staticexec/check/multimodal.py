"""Multimodal samples: an image and the matching placeholder tokens, built from the config.

The image comes from the vision config (channels and image size, or patches and
a grid for models that take flattened patches). How many
placeholder tokens an image needs is the number of feature vectors the model's
own `get_image_features` returns for it, so the count is right for every
projector and feature-selection strategy. Verification may run the model;
analysis never does.

Pixel-shuffle connectors (Idefics3, SmolVLM, GraniteDocling) fold scale_factor x
scale_factor patches into one token, so an image is also tried at the largest size
the shuffle divides, with the `pixel_attention_mask` those models take.
Cross-attention models (Mllama) read the image through cross-attention rather than
placeholder embeddings: their tiled pixels, aspect ratio and text-to-tile mask are
built as the processor would, from the vision config.

Like samples.py it builds inputs around the pipeline, for verify and `staticexec emit --sample
multimodal`; emit decides the forward's input conditions from them.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import torch

from staticexec.check.features import error_line, feature_count, image_features_fn, image_token
from staticexec.check.configs import TinyBuildError
from staticexec.check.samples import sample_inputs

# Per-token modality ids a forward may take, as the processors build them (0 text, 1 image):
# M-RoPE models group positions by them, ERNIE-4.5-VL routes image tokens to its vision experts.
MODALITY_FIELDS = ("mm_token_type_ids", "moe_mm_token_type_ids")
IMAGE_MODALITY = 1


def _side(value: Any) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    if isinstance(value, dict):
        if "height" in value and "width" in value:
            return int(value["height"]), int(value["width"])
        if "shortest_edge" in value:
            return int(value["shortest_edge"]), int(value["shortest_edge"])
    raise TinyBuildError(f"no image size in the vision config ({value!r})")


def _sizes(config: Any, vision: Any) -> list[tuple[int, int]]:
    """The config's image size, then the largest one under it that a pixel-shuffle connector divides.

    A connector with an integer `scale_factor` (on the composite config, Idefics3 and SmolVLM, or
    on the vision config, GraniteDocling) views the patch grid as (side / scale, scale * width), so
    patches per side must be a multiple of scale_factor; the class defaults of Idefics3 and SmolVLM
    (224 px, 32 px patches: 7 per side, scale 2) are not. Models whose positions are fixed to the
    configured size take the first entry; variable-resolution encoders (Idefics3's bucketed
    positions) take the second, or the third where the merger wants the token count in blocks of
    the patch size.
    """
    height, width = _side(vision.image_size)
    sizes = [(height, width)]
    patch = getattr(vision, "patch_size", None)
    scale = getattr(config, "scale_factor", None) or getattr(vision, "scale_factor", None)
    if isinstance(patch, int) and isinstance(scale, int) and not isinstance(scale, bool) and scale > 1:
        step = patch * scale
        fitted = (max(step, height // step * step), max(step, width // step * step))
        if fitted != (height, width):
            sizes.append(fitted)
        # the smallest square grid of n x n tokens, n at least the fitted one's, whose token count is a
        # multiple of patch_size: a merger that groups the shuffled image states in blocks of
        # vision_config.patch_size (SmolVLM's inputs_merger in some releases) takes no other count
        side = next(n for n in range(max(1, min(fitted) // step), patch + 1) if n * n % patch == 0)
        if (side * step, side * step) not in sizes:
            sizes.append((side * step, side * step))
    return sizes


def _layouts(model: Any, vision: Any, generator: torch.Generator):
    """Candidate image inputs, from the plain (1, C, H, W) to the layouts some families need.

    Tried in order until the model's get_image_features accepts one: an image
    list axis (1, 1, C, H, W), with a pixel or tile `pixel_attention_mask` when the
    model takes one; `image_sizes` with n crops (1, n, C, H, W) or a plain image;
    each at the config's image size, then at a size a pixel shuffle divides;
    flattened patches with an `image_grid_thw` grid.
    """
    params = inspect.signature(image_features_fn(model)).parameters
    channels = getattr(vision, "num_channels", None) or getattr(vision, "in_channels", None) or 3
    if getattr(vision, "image_size", None) is not None:
        for height, width in _sizes(model.config, vision):  
            image = torch.randn(1, channels, height, width, generator=generator)
            if "image_sizes" in params:
                sizes = torch.tensor([[height, width]])
                yield {"pixel_values": image, "image_sizes": sizes}
                for crops in range(1, 6):
                    yield {"pixel_values": image.unsqueeze(1).expand(1, crops, -1, -1, -1).clone(), "image_sizes": sizes}
            else:
                yield {"pixel_values": image}
                if "pixel_attention_mask" in params:
                    # what the processor gives: real pixels of each image (Idefics3, SmolVLM),
                    # or real tiles of each sample (GraniteDocling, where the mask is required)
                    yield {"pixel_values": image.unsqueeze(1),
                           "pixel_attention_mask": torch.ones(1, 1, height, width, dtype=torch.bool)}
                    yield {"pixel_values": image.unsqueeze(1), "pixel_attention_mask": torch.ones(1, 1, dtype=torch.bool)}
                yield {"pixel_values": image.unsqueeze(1)}
    if "image_grid_thw" in params and getattr(vision, "patch_size", None):
        patch, merge = vision.patch_size, getattr(vision, "spatial_merge_size", 1) or 1
        temporal = getattr(vision, "temporal_patch_size", 1) or 1
        side = 2 * merge
        grid = torch.tensor([[1, side, side]])
        patches = torch.randn(side * side, channels * temporal * patch * patch, generator=generator)
        yield {"pixel_values": patches, "image_grid_thw": grid}
        if temporal == 1:  # the same patches unflattened, (N, C, p, p): PaddleOCR-VL's patch embedding
            yield {"pixel_values": patches.view(side * side, channels, patch, patch), "image_grid_thw": grid}


def _modality_ids(model: Any, ids: torch.Tensor, token: int) -> dict[str, torch.Tensor]:
    """The per-token modality ids forward takes: 1 on the image placeholder tokens, 0 elsewhere."""
    params = inspect.signature(model.forward).parameters
    types = torch.where(ids == token, IMAGE_MODALITY, 0).to(ids.dtype)
    return {name: types.clone() for name in MODALITY_FIELDS if name in params}


def _takes_cross_attention_images(model: Any) -> bool:
    """Mllama-style: the text model cross-attends to tiled image states selected by aspect ratio."""
    params = inspect.signature(model.forward).parameters
    vision = getattr(model.config, "vision_config", None)
    return ({"pixel_values", "aspect_ratio_ids", "cross_attention_mask"} <= set(params)
            and isinstance(getattr(vision, "max_num_tiles", None), int)
            and bool(getattr(vision, "supported_aspect_ratios", None)))


def _cross_attention_inputs(model: Any, token: int, seed: int) -> dict:
    """One tiled image, its aspect ratio, one image token and the text-to-tile cross-attention mask.

    As the processor builds them: pixel_values (batch, images, max_num_tiles, C, H, W) with the
    tiles past the image's own count zero, aspect_ratio_ids (batch, images) indexing
    supported_aspect_ratios from 1 (0 pads), aspect_ratio_mask (batch, images, max_num_tiles), and
    cross_attention_mask (batch, seq, images, max_num_tiles) that lets every token from the image
    token on attend to the image's real tiles. The aspect ratio is the first one with more than one
    tile but fewer than max_num_tiles, so real tiles, padding tiles and the masks between them all
    take part; the tokens before the image token attend to nothing (full_text_row_masked_out_mask).
    """
    vision = model.config.vision_config
    max_tiles, ratios = vision.max_num_tiles, vision.supported_aspect_ratios
    index = next((i for i, (h, w) in enumerate(ratios) if 1 < h * w < max_tiles), 0)
    tiles = ratios[index][0] * ratios[index][1]
    channels = getattr(vision, "num_channels", None) or 3
    height, width = _side(vision.image_size)
    generator = torch.Generator().manual_seed(seed)
    pixels = torch.zeros(1, 1, max_tiles, channels, height, width)
    pixels[:, :, :tiles] = torch.randn(1, 1, tiles, channels, height, width, generator=generator)
    tile_mask = torch.zeros(1, 1, max_tiles, dtype=torch.long)
    tile_mask[:, :, :tiles] = 1
    text = sample_inputs(model, batch=1, seed=seed)["input_ids"]
    start = min(4, text.shape[1])
    ids = torch.cat([text[:, :start], torch.full((1, 1), token, dtype=text.dtype), text[:, start:]], dim=1)
    cross = torch.zeros(1, ids.shape[1], 1, max_tiles, dtype=torch.long)
    cross[:, start:, :, :tiles] = 1
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": pixels,
            "aspect_ratio_ids": torch.tensor([[index + 1]]), "aspect_ratio_mask": tile_mask,
            "cross_attention_mask": cross}


def _instruction(model: Any, seed: int) -> dict:
    """The instruction text an InstructBLIP-style Q-Former reads with the image, when it takes one."""
    params = inspect.signature(image_features_fn(model)).parameters
    if "qformer_input_ids" not in params:
        return {}
    ids = sample_inputs(model, batch=1, seq_len=8, seed=seed + 1, provided=("pixel_values", "qformer_input_ids"))["input_ids"]
    return {"qformer_input_ids": ids, "qformer_attention_mask": torch.ones_like(ids)}


class NoMediaInput(TinyBuildError):
    """The forward takes no image or audio tensor: there is nothing for a multimodal sample to add."""


# Names of the image and audio tensors a forward may take (besides AUDIO_INPUTS).
IMAGE_INPUTS = ("pixel_values", "flattened_patches", "images", "image")


def takes_media(model: Any) -> bool:
    """Whether the model's forward takes an image or audio tensor."""
    from staticexec.check.audio import AUDIO_INPUTS

    params = inspect.signature(model.forward).parameters
    return any(name in params for name in IMAGE_INPUTS + AUDIO_INPUTS)


def takes_audio(model: Any) -> bool:
    """Whether the model's forward takes one of the audio inputs (`AUDIO_INPUTS`)."""
    from staticexec.check.audio import AUDIO_INPUTS

    return any(name in inspect.signature(model.forward).parameters for name in AUDIO_INPUTS)


def multimodal_inputs(model: Any, *, seed: int = 0) -> dict:
    """input_ids with one image's placeholder tokens, attention_mask, modality ids and the image inputs (batch of one).

    A model with no image path whose forward takes audio gets an audio sample instead (see audio.py).
    The first of `multimodal_samples`.
    """
    return next(multimodal_samples(model, seed=seed))


def multimodal_samples(model: Any, *, seed: int = 0) -> Iterator[dict]:
    """The samples to try, in order: the architecture's own processor's (processors.py), then one per
    hand-built image layout that the model's own get_image_features accepts.

    get_image_features can't tell whether the model takes that many image tokens, so the
    model's forward decides (verify runs it on the first and moves on only when it refuses):
    a merger that groups image states in blocks of the patch size (SmolVLM's in 5.20) takes
    only a later size. Cross-attention and audio samples are one, already checked. When no
    sample can be made, the error says why the processor could not make one and why no
    hand-built layout fits.
    """
    from staticexec.check.processors import processor_samples

    if not takes_media(model):
        raise NoMediaInput(f"{type(model).__name__}.forward takes no image or audio tensor "
                           f"({', '.join(IMAGE_INPUTS)}, ...): a multimodal sample has nothing to add")
    made = 0
    try:
        for sample in processor_samples(model, seed=seed):
            made += 1
            token = image_token(model.config)
            ids = sample.get("input_ids")
            missing = {} if token is None or ids is None else _modality_ids(model, ids, token)
            yield {**{k: v for k, v in missing.items() if k not in sample}, **sample}
        processor_problem = ""
    except TinyBuildError as exc:
        processor_problem = str(exc)
    try:
        yield from _layout_samples(model, seed)
    except TinyBuildError as exc:
        if made:
            return
        raise TinyBuildError(f"{processor_problem}; {exc}" if processor_problem else str(exc)) from exc


def _layout_samples(model: Any, seed: int) -> Iterator[dict]:
    """The hand-built samples: cross-attention tiles, audio, or each image layout get_image_features accepts."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    token = image_token(config)
    if vision is not None and token is not None and _takes_cross_attention_images(model):
        yield _cross_attention_inputs(model, token, seed)
        return
    features = image_features_fn(model)
    if vision is None or token is None or features is None:
        if takes_audio(model):
            from staticexec.check.audio import audio_inputs

            yield audio_inputs(model, seed=seed)
            return
        raise TinyBuildError(f"no hand-built layout: {type(model).__name__} has no vision config, image token id "
                             "or get_image_features")
    generator = torch.Generator().manual_seed(seed)
    failures: list[str] = []  # each distinct one: the last layout's error often hides the real cause
    accepted = 0
    for image in _layouts(model, vision, generator):
        image = {**image, **_instruction(model, seed)}
        try:
            with torch.no_grad():
                count = feature_count(features(**image))
        except Exception as exc:  # the model wants another layout
            failure = error_line(exc)
            if failure not in failures:
                failures.append(failure)
            continue
        text = sample_inputs(model, batch=1, seed=seed, provided=image)["input_ids"]
        ids = torch.cat([text[:, :4], torch.full((1, count), token, dtype=text.dtype), text[:, 4:]], dim=1)
        accepted += 1
        yield {"input_ids": ids, "attention_mask": torch.ones_like(ids), **_modality_ids(model, ids, token), **image}
    if not accepted:
        raise TinyBuildError("no hand-built layout: get_image_features rejects every image layout tried: "
                             f"{'; '.join(failures) or 'the vision config gives no image size or patch grid'}")
