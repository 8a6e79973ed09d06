"""Multimodal samples: image sizes from the config, and a sample the model's own forward accepts."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest
import torch

from staticexec.check.multimodal import _sizes, multimodal_inputs, multimodal_samples
from staticexec.check.models import build_tiny_model
from staticexec.check.verify import _CallLog, _own_forward


def test_pixel_shuffle_sizes():
    """The config's size, the largest one the shuffle divides, then the smallest square grid whose
    token count is a multiple of the patch size (a merger that groups image states in such blocks)."""
    vision = SimpleNamespace(image_size=224, patch_size=32)
    assert _sizes(SimpleNamespace(scale_factor=2), vision) == [(224, 224), (192, 192), (512, 512)]
    assert _sizes(SimpleNamespace(scale_factor=None), vision) == [(224, 224)]
    vision = SimpleNamespace(image_size=512, patch_size=16)  # SmolVLM's checkpoint: 8 x 8 = 64 tokens
    assert _sizes(SimpleNamespace(scale_factor=4), vision) == [(512, 512)]


@pytest.fixture(scope="module")
def smolvlm():
    return build_tiny_model("SmolVLMForConditionalGeneration")


def test_the_sample_is_one_the_forward_accepts(smolvlm, monkeypatch):
    """A forward that takes image tokens only in blocks of the vision patch size (SmolVLM's merger in
    5.20) runs on a later sample, one whose token count fits, not on the first get_image_features takes."""
    config = smolvlm.config
    patch, token = config.vision_config.patch_size, config.image_token_id
    forward = type(smolvlm).forward.__get__(smolvlm)
    counts = [int((s["input_ids"] == token).sum()) for s in multimodal_samples(smolvlm)]
    assert any(n % patch for n in counts) and any(n % patch == 0 for n in counts)

    @functools.wraps(forward)
    def blocked(*args, **kwargs):
        count = int((kwargs["input_ids"] == token).sum())
        if count % patch:
            raise RuntimeError(f"{count} image tokens are not in blocks of {patch}")
        return forward(*args, **kwargs)

    monkeypatch.setattr(smolvlm, "forward", blocked)
    samples = multimodal_samples(smolvlm)
    first = next(samples)
    log = _CallLog(smolvlm, set())
    try:
        _, sample = _own_forward(smolvlm, first, log, samples)
    finally:
        log.close()
    assert int((sample["input_ids"] == token).sum()) % patch == 0
    assert torch.equal(multimodal_inputs(smolvlm)["input_ids"], first["input_ids"])  # whatever the forward takes
