"""Samples and targets for a tiny model: token inputs its forward takes, and the layers a user picks.

Multimodal samples (an image, audio) are built on these in multimodal.py and audio.py.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from staticexec.analysis import defaults
from staticexec.check.configs import TinyBuildError, special_token_ids

__all__ = ["alternative_samples", "default_targets", "input_vocab", "sample_inputs"]


def sample_inputs(model: nn.Module, *, batch: int = 2, seq_len: int = 16, seed: int = 0,
                  codebook_rows: bool = False, provided: Iterable[str] = ()) -> dict:
    """Random ordinary token ids with a left-padded second row, plus what forward requires.

    The padding makes masking code run on every verification; special ids are avoided
    so no image/audio placeholder logic fires without its inputs.
    """
    vocab = input_vocab(model)
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
        if required and name not in inputs and name not in provided:
            if not name.endswith("input_ids"):
                raise TinyBuildError(f"{type(model).__name__}.forward requires {name!r}")
            inputs[name] = ids()
    return inputs


def input_vocab(model: nn.Module) -> int:
    """The number of ids input_ids may hold: the input embedding's rows, else the text config's vocab_size."""
    try:
        embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    except NotImplementedError:  # composite models that don't say which embedding takes input_ids
        embeddings = None
    if isinstance(embeddings, nn.Embedding):
        return embeddings.num_embeddings
    return int(model.config.get_text_config().vocab_size)


def default_targets(model: nn.Module) -> list[str]:
    """The sequential targets a user would pick for a built model: analysis/defaults.py's rule, read
    from the modules the model holds."""
    return defaults.default_targets(defaults.Holdings(
        root=model,
        children=lambda m: [child for _, child in sorted(m.named_children(), key=lambda item: item[0])],
        name=lambda m: type(m).__name__,
        declared=lambda m: getattr(m, "_no_split_modules", None) or (),
        stack=_stack,
    ))


def _stack(module: nn.Module) -> str | None:
    """The element class of a non-empty container of modules of one class (not containers themselves)."""
    if not isinstance(module, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
        return None
    classes = {type(m) for m in module.children()}
    if len(classes) != 1:
        return None
    (cls,) = classes
    return None if issubclass(cls, (nn.ModuleList, nn.Sequential, nn.ModuleDict)) else cls.__name__


def alternative_samples(model: nn.Module) -> list[dict]:
    """Other input layouts to try when the model's own forward rejects the default sample."""
    out = []
    codebooks = getattr(model.config, "num_codebooks", None)
    if isinstance(codebooks, int) and codebooks > 1:
        out.append(sample_inputs(model, codebook_rows=True))
    return out


# the parts of a decoder layer a finer split takes as targets: its attention and its MLP (or MoE block)
SUBLAYER = re.compile(r"(Attention|Attn|MLP|Mlp|MoE|Moe|MoeBlock|MoEBlock|FeedForward|FFN|Experts)$")


def linear_targets(model: nn.Module) -> list[str]:
    """Every Linear, as llm-compressor's users name them (`["Linear"]`, subclasses matched by their MRO),
    and transformers' Conv1D where the model has it (GPT-2's projections)."""
    names = {cls.__name__ for m in model.modules() for cls in type(m).__mro__}
    return ["Linear"] + (["Conv1D"] if "Conv1D" in names else [])


def sublayer_targets(model: nn.Module) -> list[str]:
    """The attention and MLP (or MoE) classes held directly by the model's default target layers: the
    targets of a split finer than one decoder layer. [] when the layers hold none by those names."""
    layers = set(default_targets(model))
    out = set()
    for module in model.modules():
        if type(module).__name__ in layers:
            out.update(type(child).__name__ for child in module.children() if SUBLAYER.search(type(child).__name__))
    return sorted(out)
