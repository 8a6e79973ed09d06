"""Multimodal samples: an image and the matching placeholder tokens, built from the config.

The image comes from the vision config (channels and image size, or patches and
a grid for models that take flattened patches). How many
placeholder tokens an image needs is the number of feature vectors the model's
own `get_image_features` returns for it, so the count is right for every
projector and feature-selection strategy. Verification may run the model;
analysis never does.
"""

from __future__ import annotations

from typing import Any

import torch

from .tiny import TinyBuildError, sample_inputs

TOKEN_FIELDS = ("image_token_id", "image_token_index")


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


def _feature_count(features: Any) -> int:
    """Feature vectors in what get_image_features returns (a tensor, a list of them, or an output object)."""
    if hasattr(features, "pooler_output") and features.pooler_output is not None:
        features = features.pooler_output
    elif hasattr(features, "last_hidden_state"):
        features = features.last_hidden_state
    if isinstance(features, torch.Tensor):
        return int(features.shape[:-1].numel())
    if isinstance(features, (list, tuple)) and all(isinstance(f, torch.Tensor) for f in features):
        return sum(int(f.shape[:-1].numel()) for f in features)
    raise TinyBuildError(f"can't count image features in a {type(features).__name__}")


def _layouts(model: Any, vision: Any, generator: torch.Generator):
    """Candidate image inputs, from the plain (1, C, H, W) to the layouts some families need.

    Tried in order until the model's get_image_features accepts one: an image
    list axis (1, 1, C, H, W); `image_sizes` with n crops (1, n, C, H, W) or a
    plain image; flattened patches with an `image_grid_thw` grid.
    """
    import inspect

    params = inspect.signature(model.get_image_features).parameters
    channels = getattr(vision, "num_channels", None) or getattr(vision, "in_channels", None) or 3
    size = getattr(vision, "image_size", None)
    if size is not None:
        height, width = _side(size)
        image = torch.randn(1, channels, height, width, generator=generator)
        if "image_sizes" in params:
            sizes = torch.tensor([[height, width]])
            yield {"pixel_values": image, "image_sizes": sizes}
            for crops in range(1, 6):
                yield {"pixel_values": image.unsqueeze(1).expand(1, crops, -1, -1, -1).clone(), "image_sizes": sizes}
        else:
            yield {"pixel_values": image}
            yield {"pixel_values": image.unsqueeze(1)}
    if "image_grid_thw" in params and getattr(vision, "patch_size", None):
        patch, merge = vision.patch_size, getattr(vision, "spatial_merge_size", 1) or 1
        temporal = getattr(vision, "temporal_patch_size", 1) or 1
        side = 2 * merge
        grid = torch.tensor([[1, side, side]])
        patches = torch.randn(side * side, channels * temporal * patch * patch, generator=generator)
        yield {"pixel_values": patches, "image_grid_thw": grid}


def multimodal_inputs(model: Any, *, seed: int = 0) -> dict:
    """input_ids with one image's placeholder tokens, attention_mask and the image inputs (batch of one)."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    token = next((getattr(config, f) for f in TOKEN_FIELDS if isinstance(getattr(config, f, None), int)), None)
    if vision is None or token is None or not hasattr(model, "get_image_features"):
        raise TinyBuildError(f"{type(model).__name__} has no vision config, image token or get_image_features")
    generator = torch.Generator().manual_seed(seed)
    failure = "no image layout to try"
    for image in _layouts(model, vision, generator):
        try:
            with torch.no_grad():
                count = _feature_count(model.get_image_features(**image))
        except Exception as exc:  # the model wants another layout
            failure = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
            continue
        text = sample_inputs(model, batch=1, seed=seed)["input_ids"]
        ids = torch.cat([text[:, :4], torch.full((1, count), token, dtype=text.dtype), text[:, 4:]], dim=1)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), **image}
    raise TinyBuildError(f"get_image_features accepts no image layout tried: {failure}")
