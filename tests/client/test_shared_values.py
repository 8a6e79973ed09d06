"""One list under two names, through llm-compressor's own cache: the subgraphs give it on held, as one object
(staticexec/emit/shared.py), and the chain gives what the model's forward gives."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import soundness  # noqa: E402

pytestmark = pytest.mark.client

CASES = ["list_appended_through_callee_parameter_in_each_layer", "dict_alias_written_after_a_cut",
         "cached_dict_bound_again_after_a_cut"]


def pipeline_chain(model, subgraphs, batch, held: list):
    """The chain as llm-compressor's sequential pipeline runs it: its cache, each subgraph twice (calibration,
    then propagation), the consumed names deleted; the last subgraph's outputs. `held` gets the names each
    subgraph gave on held."""
    from llmcompressor.pipelines.cache import IntermediatesCache

    from staticexec.emit.shared import Held

    cache = IntermediatesCache.empty(1, torch.device("cpu"))
    cache.update(0, batch)
    for index, subgraph in enumerate(subgraphs):
        subgraph.forward(model, **cache.fetch(0, subgraph.input_names))
        outputs = subgraph.forward(model, **cache.fetch(0, subgraph.input_names))
        if index == len(subgraphs) - 1:
            return outputs
        held += [(index, k) for k, v in outputs.items() if isinstance(v, Held)]
        cache.update(0, outputs)
        cache.delete(0, subgraph.consumed_names)


@pytest.mark.parametrize("name", CASES)
def test_one_object_under_two_names_survives_llmcompressor_cache(name):
    import staticexec

    path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "soundness", f"{name}.py")
    with open(path, encoding="utf-8") as handle:
        case = soundness.parse(name, handle.read(), path)
    module = case.load()
    model, sample = module.build()
    reference, ref_sample = module.build()
    chain = staticexec.subgraphs(model, sample, case.targets)
    held: list = []
    with torch.no_grad():
        got = pipeline_chain(model, chain, sample, held)["forward_output"]
        expected = reference(**ref_sample)
    assert torch.equal(got, expected)
    assert held and all(sum(1 for i, _ in held if i == index) >= 2 for index, _ in held), held
