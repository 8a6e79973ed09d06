"""Processor-built samples: the architecture's own processor, its tokenizer built offline, fitted to the tiny config."""

from __future__ import annotations

import pytest
import torch

from staticexec.check.features import image_token
from staticexec.check.models import build_tiny_model
from staticexec.check.processors import (ProcessorUnavailable, build_processor, fitted_kwargs, processor_names,
                                         processor_samples, word_level_tokenizer)


def test_names_come_from_the_auto_mappings():
    """A model_type's processor and image processor, the PIL backend first (it needs only pillow)."""
    names = processor_names("llava")
    assert names["processor"] == ["LlavaProcessor"]
    assert names["image_processor"][0].endswith("Pil")
    assert processor_names("no-such-model-type") == {"processor": [], "image_processor": [], "feature_extractor": []}


def test_word_level_tokenizer_gives_the_configs_ids():
    """Each special token carries the config's id, ordinary words theirs, and a run of placeholders
    with no space between them is one id each."""
    from transformers import LlavaConfig

    config = LlavaConfig(image_token_id=250)
    tokenizer = word_level_tokenizer(config, {"image_token": "<image>"}, 256)
    ids = tokenizer("<image><image><image> w7 w9", add_special_tokens=False)["input_ids"]
    assert ids == [250, 250, 250, 7, 9]
    assert tokenizer.image_token == "<image>"
    assert tokenizer.convert_tokens_to_ids("nonsense") == tokenizer.unk_token_id != 250


def test_word_level_tokenizer_unknown_id_is_low():
    """The unknown token takes the lowest free id (processors number image tokens from unk_token_id + 1)."""
    from transformers import LlavaConfig

    config = LlavaConfig(image_token_id=250, pad_token_id=0)
    tokenizer = word_level_tokenizer(config, {"image_token": "<image>", "pad_token": "<pad>"}, 256)
    assert tokenizer.pad_token_id == 0
    assert tokenizer.unk_token_id < 8


def test_fitted_kwargs_follow_the_tiny_config():
    """A pixel-count processor (Qwen2-VL) gets the vision config's patch and merge sizes and a small grid."""
    from transformers import Qwen2VLConfig

    from staticexec.check.processors import _class

    cls = _class(processor_names("qwen2_vl")["image_processor"][0])
    config = Qwen2VLConfig(vision_config={"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2})
    kwargs = fitted_kwargs(cls, config)
    assert kwargs["patch_size"] == 14 and kwargs["merge_size"] == 2 and kwargs["temporal_patch_size"] == 2
    assert kwargs["size"] == {"shortest_edge": (2 * 14 * 2) ** 2, "longest_edge": (2 * 14 * 2) ** 2}


@pytest.fixture(scope="module")
def llava():
    return build_tiny_model("LlavaForConditionalGeneration")


def test_llava_sample_runs_with_one_token_per_feature(llava):
    """The processor packs the image at the vision config's size; the sample the forward accepts has one
    placeholder per image feature vector."""
    token = image_token(llava.config)
    side = llava.config.vision_config.image_size
    accepted = None
    for sample in processor_samples(llava):
        assert sample["pixel_values"].shape[-2:] == (side, side)
        try:
            with torch.no_grad():
                llava(**sample)
        except ValueError:
            continue
        accepted = sample
        break
    assert accepted is not None
    features = llava.model.get_image_features(pixel_values=accepted["pixel_values"])
    count = features.pooler_output[0].shape[0] if hasattr(features, "pooler_output") else features[0].shape[0]
    assert int((accepted["input_ids"] == token).sum()) == count


def test_a_model_without_placeholders_gets_the_processors_inputs():
    """BLIP reads the image beside the text (no placeholder tokens): the processor's sample runs as it is."""
    blip = build_tiny_model("BlipForConditionalGeneration")
    sample = next(processor_samples(blip))
    assert set(sample) >= {"pixel_values", "input_ids"}
    with torch.no_grad():
        blip(**sample)


def test_no_processor_is_a_reason():
    """A text-only model has no processor: the error names the model_type."""
    gpt2 = build_tiny_model("GPT2LMHeadModel")
    with pytest.raises(ProcessorUnavailable, match="'gpt2'"):
        build_processor(gpt2)
