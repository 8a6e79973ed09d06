"""Sequential targets as llm-compressor gives them; targets_per_subgraph; recursive submodules."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

import staticexec
from staticexec.check.models import build_tiny_model
from staticexec.check.samples import sample_inputs
from staticexec.messages import UsageError
from staticexec.emit.targets import select_targets


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(2, 2)


class SpecialBlock(Block):
    pass


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(4, 2)
        self.layers = nn.ModuleList([Block(), Block(), SpecialBlock()])
        self.head = nn.Linear(2, 4)


@pytest.mark.parametrize(
    "targets, classes, modules",
    [
        (["Block"], ("Block", "SpecialBlock"), ("layers.0", "layers.1", "layers.2")),  # MRO, as compressed-tensors
        ("SpecialBlock", ("SpecialBlock",), ("layers.2",)),
        (["layers.0", "layers.1"], ("Block",), ("layers.0", "layers.1")),
        (["re:layers\\.\\d+$"], ("Block", "SpecialBlock"), ("layers.0", "layers.1", "layers.2")),
        (["Block", "Linear"], ("Block", "Linear", "SpecialBlock"), ("layers.0", "layers.1", "layers.2", "head")),
        (["layers"], ("ModuleList",), ("layers",)),
    ],
)
def test_selection(targets, classes, modules):
    selection = select_targets(Net(), targets)
    assert selection.classes == classes
    assert selection.modules == modules


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_absent_targets_are_skipped_with_one_warning_line():
    records, logger = _Records(), logging.getLogger("staticexec")
    logger.addHandler(records)
    try:
        selection = select_targets(Net(), ["Block", "NoSuchLayer", "OtherLayer"])
    finally:
        logger.removeHandler(records)
    assert selection.unmatched == ("NoSuchLayer", "OtherLayer")
    assert len(records.records) == 1 and "\n" not in records.records[0].getMessage()


@pytest.mark.parametrize(
    "targets",
    [
        ["NoSuchLayer"],  # nothing matches
        ["layers.0"],  # some, not all, modules of Block: staticexec would split at all of them
        ["re:layers\\.[02]$"],  # the same, through a pattern
        ["re:.*"],  # the model itself
    ],
)
def test_refused(targets):
    with pytest.raises(UsageError):
        select_targets(Net(), targets)


@pytest.fixture(scope="module")
def llama():
    model = build_tiny_model("LlamaForCausalLM")
    return model, sample_inputs(model)


@pytest.mark.parametrize(
    "targets",
    [["model.layers.0", "model.layers.1"], ["re:model\\.layers\\.\\d+$"], ["LlamaDecoderLayer", "BartEncoderLayer"]],
)
def test_subgraphs_take_llmcompressor_targets(llama, targets):
    model, sample = llama
    subgraphs = staticexec.subgraphs(model, sample, targets)
    assert [sg.targets for sg in subgraphs] == [[], ["model.layers.0"], ["model.layers.1"]]


def test_subgraphs_refuse_a_partial_selection(llama):
    model, sample = llama
    with pytest.raises(UsageError):
        staticexec.subgraphs(model, sample, ["model.layers.0"])


@pytest.mark.parametrize("per", [2, 3])
def test_targets_per_subgraph(llama, per):
    model, sample = llama
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], None, per)
    assert [sg.targets for sg in subgraphs] == [[], ["model.layers.0", "model.layers.1"]]
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, subgraphs, sample).logits, model(**sample).logits)
    with pytest.raises(ValueError):
        staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"], None, 0)


def test_submodules_are_recursive_by_default(llama):
    model, sample = llama
    layer = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"])[1]
    direct = layer.submodules(model, recurse=False)
    assert model.model.layers[0] in direct
    assert model.model.layers[0].self_attn.q_proj not in direct
    every = layer.submodules(model)
    assert set(map(id, model.model.layers[0].modules())) <= set(map(id, every))
    assert len(every) == len(set(map(id, every)))


@pytest.mark.parametrize("targets, per", [(["LlamaAttention", "LlamaMLP"], 2), (["LlamaAttention", "LlamaMLP"], 3),
                                          (["Linear"], 7), (["Linear"], 4)])
def test_targets_per_subgraph_below_the_layer(llama, targets, per):
    """llm-compressor's grouping of N targets per subgraph, with targets below the decoder layer: every target once,
    in order, N to a subgraph (the last may hold fewer), and the chain exact under the pipeline's double run."""
    from staticexec.emit.run import run_chain

    model, sample = llama
    one = staticexec.subgraphs(model, sample, targets)
    each = [t for sg in one for t in sg.targets]
    assert [len(sg.targets) for sg in one] == [0] + [1] * len(each)
    grouped = staticexec.subgraphs(model, sample, targets, None, per)
    assert [sg.targets for sg in grouped] == [[]] + [each[i:i + per] for i in range(0, len(each), per)]
    with torch.no_grad():
        ours = run_chain(model, grouped, dict(sample), twice=True)["forward_output"]
        assert torch.equal(ours.logits, model(**sample).logits)


class _NestingLayer(nn.Module):
    """A layer that holds a layer of its own class, which a pattern of targets leaves unselected."""

    def __init__(self, inner: bool = True):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.inner = _NestingLayer(inner=False) if inner else None

    def forward(self, h):
        h = torch.tanh(self.proj(h))
        if self.inner is not None:
            h = self.inner(h)
        return h


class _NestingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 8)
        self.layers = nn.ModuleList([_NestingLayer() for _ in range(3)])

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return h


def test_a_nested_module_of_a_target_class_left_unselected_runs_inside_its_layer():
    """The check for target modules added after emission looks only at modules that were not in the model."""
    torch.manual_seed(0)
    model, sample = _NestingModel(), {"x": torch.randn(2, 5, 8)}
    chain = staticexec.subgraphs(model, sample, [r"re:layers\.\d+$"])
    assert [sg.targets for sg in chain] == [[], ["layers.0"], ["layers.1"], ["layers.2"]]
    with torch.no_grad():
        out = staticexec.emit.run.run_chain(model, chain, sample, twice=True)["forward_output"]
        assert torch.equal(out, model(**sample))
