"""Names of the sample for one tensor, one written in place (emit/samplealias.py), on the corpus's models."""

import sys

import pytest
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from soundness import cases  # noqa: E402

from staticexec.api import subgraphs  # noqa: E402
from staticexec.emit.run import ContractError, run_chain  # noqa: E402
from staticexec.emit.samplealias import SampleTensors, may_be_one, sample_aliases, written_names  # noqa: E402
from staticexec.messages import Refused  # noqa: E402


def _module(name: str):
    return next(c for c in cases() if c.name == name).load()


def test_sample_aliases_groups_names_by_memory_and_says_which_are_one_tensor():
    x, z = torch.randn(3, 4), torch.randn(2)
    found = sample_aliases({"x": x, "y": x, "v": x[0], "z": z, "n": None, "e": torch.empty(0), "f": torch.empty(0)})
    assert found == SampleTensors(("x", "y", "v", "z", "e", "f"), ((("x", "y", "v"), False),))
    assert sample_aliases({"x": x, "y": x, "z": z}).groups == ((("x", "y"), True),)


def test_a_sample_name_written_through_a_name_the_code_binds_to_it_counts_as_written():
    sample = SampleTensors(("x", "y", "z"), ())
    written = written_names(sample, {"s": "model.py:7", "z": "model.py:9"}, {"x": {"s"}, "s": {"x"}})
    assert written == {"x": "model.py:7", "z": "model.py:9"}
    assert may_be_one(sample, written) == [("x", "y", "z")]
    assert may_be_one(sample, {}) == [] and may_be_one(SampleTensors(("x",), ()), {"x": "model.py:7"}) == []


def test_one_tensor_written_later_is_carried_to_the_writer_and_given_on_under_both_names():
    module = _module("sample_names_one_tensor_written_in_later_subgraph")
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    assert "y" in chain[1].input_names  # carried with `x` through the subgraph that writes it
    assert [sg.one_tensor for sg in chain] == [(("x", "y"),), (("x", "y"),), ()]
    reference, ref_sample = module.build()
    with torch.no_grad():
        expected = reference(**ref_sample)
        out = run_chain(model, chain, sample, twice=True)["forward_output"]
    assert torch.equal(out, expected)
    _, again = module.build()
    with torch.no_grad(), pytest.raises(ContractError, match="'x' and 'y' as two tensors"):
        run_chain(model, chain, again, offloaded=True)


def test_one_tensor_written_through_an_alias_the_code_binds_is_carried_too():
    module = _module("sample_names_one_tensor_written_through_alias_in_later_subgraph")
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    assert "y" in chain[1].input_names and [sg.one_tensor for sg in chain] == [(("x", "y"),), (), ()]
    reference, ref_sample = module.build()
    with torch.no_grad():
        assert torch.equal(run_chain(model, chain, sample, twice=True)["forward_output"], reference(**ref_sample))


def test_names_of_two_tensors_are_carried_unchecked_for_a_later_batch_that_gives_one():
    module = _module("later_batch_names_one_tensor_written_in_later_subgraph")
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    assert "y" in chain[1].input_names and all(sg.one_tensor == () for sg in chain)
    reference, _ = module.build()
    torch.manual_seed(1)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        expected = reference(x=x.clone(), y=x.clone())  # (the model's forward writes into its `x`)
        shared = x.clone()
        expected_one = reference(x=shared, y=shared)
        assert not torch.equal(expected, expected_one)  # the write shows in `y`: one tensor gives another output
        given = x.clone()
        assert torch.equal(run_chain(model, chain, {"x": given, "y": given}, twice=True)["forward_output"], expected_one)
        wide = torch.randn(2, 2, 5, 8)  # `y` a view of `x` (another view of the same memory): not copied but shared,
        with pytest.raises(ContractError, match="changed its input 'x' in place"):  # and the write stops the run
            run_chain(model, chain, {"x": wide[0], "y": wide[0][:]}, twice=True)


def test_a_view_of_a_written_input_is_refused_at_the_write():
    module = _module("sample_name_view_of_written_input_later_subgraph")
    model, sample = module.build()
    with pytest.raises(Refused) as refused:
        subgraphs(model, sample, ["Layer"])
    message = refused.value.first
    assert message.kind == "mutated-state" and message.path.endswith("sample_name_view_of_written_input_later_subgraph.py")
    assert "`x` is written in place here, and the sample's `y` holds part of its memory" in str(message)
