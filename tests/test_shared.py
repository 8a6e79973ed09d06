"""The names whose values share a list, dict or dataclass where a subgraph ends (staticexec/emit/shared.py)."""

from dataclasses import dataclass

import torch

from staticexec.emit.runtime import WrapperScope, WrapperState
from staticexec.emit.shared import Held, shared_names


@dataclass
class Box:
    n: int


@dataclass(frozen=True)
class Frozen:
    items: list


def test_one_list_under_two_names_and_inside_a_dict():
    seen = []
    assert shared_names({"a": seen, "b": seen, "c": [1]}, {}, set()) == {"a", "b"}
    assert shared_names({"seen": seen, "store": {"k": seen}}, {}, set()) == {"seen", "store"}
    assert shared_names({"pair": [seen, seen]}, {}, set()) == {"pair"}


def test_tuples_and_frozen_dataclasses_are_looked_into_not_counted():
    t = (1, 2)
    assert shared_names({"t": t, "u": t}, {}, set()) == set()
    inner = []
    assert shared_names({"t": (inner,), "u": Frozen(inner)}, {}, set()) == {"t", "u"}
    box = Box(1)
    assert shared_names({"a": box, "b": box}, {}, set()) == {"a", "b"}


def test_tensors_and_wrapper_values_are_not_counted():
    x = torch.zeros(2)
    scope = WrapperScope({}, [])
    state = WrapperState("m.py:1", {"k": []})
    assert shared_names({"a": x, "b": x, "s": scope, "t": scope, "u": state, "v": state}, {}, set()) == set()


def test_an_input_left_in_the_cache_counts_unless_consumed_or_given_on():
    d = {}
    assert shared_names({"e": d}, {"d": d}, set()) == {"d", "e"}
    assert shared_names({"e": d}, {"d": d}, {"d"}) == set()
    assert shared_names({"e": d, "d": {}}, {"d": d}, set()) == set()
    assert shared_names({"e": d}, {"d": Held({"k": d})}, set()) == {"d", "e"}


def test_reformer_attentions_appended_through_the_encoder_function_reach_its_output():
    """Reformer's encoder hands its `all_attentions` list to an autograd Function that appends to it, through
    its own parameter, after each layer; the list is read again after the last one."""
    import staticexec
    from staticexec.check.models import build_tiny_model
    from staticexec.emit.run import run_chain

    model, reference = build_tiny_model("ReformerModelWithLMHead"), build_tiny_model("ReformerModelWithLMHead")
    torch.manual_seed(0)
    sample = {"input_ids": torch.randint(3, 50, (1, 16)), "output_attentions": True}
    chain = staticexec.subgraphs(model, sample, ["ReformerLayer"])
    with torch.no_grad():
        expected = reference(**sample)
        got = run_chain(model, chain, sample, twice=True)["forward_output"]
    assert len(expected.attentions) == model.config.num_hidden_layers
    assert len(got.attentions) == len(expected.attentions)
    assert all(torch.equal(a, b) for a, b in zip(got.attentions, expected.attentions))
    assert torch.equal(got.logits, expected.logits)
