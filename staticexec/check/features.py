"""What an encoder gives a multimodal sample builder: how many feature vectors, and why it failed.

Image samples (multimodal.py) and audio samples (audio.py) both find the number of placeholder
tokens by running the model's own get_image_features / get_audio_features on a candidate input
and counting what comes back; a rejected candidate is reported on one line.

Like them it serves verify and `staticexec emit`, around the pipeline; the analysis never runs an encoder.
"""

from __future__ import annotations

from typing import Any

import torch

from staticexec.check.configs import TinyBuildError


# Where a config gives the id of its image placeholder token.
IMAGE_TOKEN_FIELDS = ("image_token_id", "image_token_index")


def image_token(config: Any) -> int | None:
    """The id of the image placeholder token the model replaces with image features, if it has one."""
    return next((getattr(config, f) for f in IMAGE_TOKEN_FIELDS if isinstance(getattr(config, f, None), int)), None)


def image_features_fn(model: Any) -> Any:
    """The model's get_image_features, or its inner model's (DeepSeek-VL keeps it on `model.model`); None
    when neither has one."""
    holder = model
    for _ in range(3):
        fn = getattr(holder, "get_image_features", None)
        if fn is not None:
            return fn
        holder = getattr(holder, "model", None)
        if holder is None:
            return None
    return None


def feature_count(features: Any) -> int:
    """Feature vectors in what get_image_features (or get_audio_features) returns: a tensor, a
    list of them, an output object, or a tuple led by one."""
    if isinstance(features, (list, tuple)) and features and not isinstance(features[0], torch.Tensor):
        features = features[0]
    if hasattr(features, "pooler_output") and features.pooler_output is not None:
        features = features.pooler_output
    elif hasattr(features, "last_hidden_state"):
        features = features.last_hidden_state
    if isinstance(features, torch.Tensor):
        return int(features.shape[:-1].numel())
    if isinstance(features, (list, tuple)) and all(isinstance(f, torch.Tensor) for f in features):
        return sum(int(f.shape[:-1].numel()) for f in features)
    raise TinyBuildError(f"can't count image features in a {type(features).__name__}")


def error_line(exc: BaseException) -> str:
    """Why the model rejected a candidate sample, on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
