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


def test_tensors_count_by_their_memory_among_the_names_a_later_writer_takes():
    """Two names for one tensor, or a view and its base, come back from a cache offloaded to another device as
    tensors of their own: where a later subgraph writes one of them in place, they travel held."""
    x, other = torch.zeros(4), torch.zeros(4)
    keep = frozenset({"alias", "extra", "row", "pair"})
    assert shared_names({"alias": x, "extra": x, "h": other}, {}, set(), keep) == {"alias", "extra"}
    assert shared_names({"alias": x, "row": x[:2]}, {}, set(), keep) == {"alias", "row"}  # a view: its base's memory
    assert shared_names({"pair": (x, x)}, {}, set(), keep) == {"pair"}
    assert shared_names({"alias": x}, {"extra": x}, set(), keep) == {"alias", "extra"}  # one left in the cache
    assert shared_names({"alias": x, "h": x}, {}, set(), keep) == set()  # `h`: no later writer takes it
    assert shared_names({"alias": x, "extra": other}, {}, set(), keep) == set()


def test_keep_identity_names_what_each_later_writer_takes():
    from types import SimpleNamespace

    from staticexec.emit.shared import keep_identity

    chain = [SimpleNamespace(written_inputs=set(), input_names=set(names)) for names in ("x", "h", "ha", "h")]
    chain[2].written_inputs = {"a"}
    chain[2].input_names = {"h", "a", "e"}
    keep_identity(chain)
    assert [sg.keeps_identity for sg in chain] == [{"h", "a", "e"}, {"h", "a", "e"}, set(), set()]


def test_an_offloaded_cache_gives_each_name_copies_of_its_own_and_a_held_value_as_it_is():
    """`run_chain(offloaded=True)`: what llm-compressor's cache gives back when it offloads to another device."""
    from staticexec.emit.run import Subgraph, run_chain

    x = torch.ones(3)
    seen = []

    def looks(sg_index):
        source = (f"def subgraph_{sg_index}(self, *, a, b, held):\n"
                  "    seen.append((a is b, a.data_ptr() == b.data_ptr(), held is KEPT))\n"
                  "    return {'y': a + b}\n")
        return Subgraph(index=sg_index, source=source, input_names={"a", "b", "held"}, output_names={"y"},
                        consumed_names={"a", "b", "held"}, filename=f"<offloaded {sg_index}>",
                        gives_on=False, _globals={"seen": seen, "KEPT": x})

    run_chain(None, [looks(0)], {"a": x, "b": x, "held": Held(x)}, twice=True, offloaded=True)
    assert seen == [(False, False, True)] * 2
    seen.clear()
    run_chain(None, [looks(1)], {"a": x, "b": x, "held": Held(x)}, twice=True)
    assert seen == [(True, True, True)] * 2


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
