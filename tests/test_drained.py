"""An unrolled generator expression is read to its end (emit/drained.py, emit/comprehension.py)."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from staticexec.api import subgraphs
from staticexec.emit.comprehension import unroll
from staticexec.emit.drained import Drained, GeneratorMismatch, expect_drained
from staticexec.emit.run import checks_off, run_subgraphs


def test_a_generator_expression_is_read_through_a_counting_iterator_a_list_comprehension_as_a_list():
    generator = unroll("h = sum((layer(h) for layer in self.layers))", "self.layers", 2, "comp__1_")
    assert generator.items == ("comp__1_0 = comp__1_v0(h)\n", "comp__1_1 = comp__1_v1(h)\n")
    assert generator.names == ("comp__1_0", "comp__1_1")
    assert generator.rest == "h = sum(comp__1_it)\n"
    assert (generator.reader, generator.generator) == ("comp__1_it", "(layer(h) for layer in self.layers)")
    listed = unroll("outs = [layer(h) for layer in self.layers]", "self.layers", 2, "comp__2_")
    assert listed.rest == "outs = [comp__2_0, comp__2_1]\n"
    assert (listed.reader, listed.generator) == ("", "")


@pytest.mark.parametrize("read, taken", [(sum, 3), (list, 3), (lambda it: next(it), 1), (any, 1),
                                         (lambda it: list(zip("ab", it)), 2), (lambda it: list(zip(it, "ab")), 3), (lambda it: list(itertools.islice(it, 3)), 3)])
def test_the_check_passes_only_where_every_item_was_taken(read, taken):
    reader = Drained([1, 2, 3])
    read(reader)
    assert reader.taken == taken
    if taken == 3:
        expect_drained(reader, "m.py:1", "(f(x) for f in fs)")
    else:
        with pytest.raises(GeneratorMismatch, match=rf"m.py:1: the generator expression `\(f\(x\) for f in fs\)` was read "
                                                    rf"for {taken} of its 3 items"):
            expect_drained(reader, "m.py:1", "(f(x) for f in fs)")


class Model(nn.Module):
    """Every head a target: `any` stops at the first head whose output has a positive sum."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, stop):
        h = self.proj(x)
        found = any((head(h).sum() > stop) for head in self.heads)
        return h * found


def test_a_reader_that_stops_early_stops_the_chain():
    """Emitted for a sample where `any` reads every head, run where it stops at the first: the forward runs one head
    there, the subgraphs ran three."""
    torch.manual_seed(0)
    model = Model().eval()
    sample = {"x": torch.randn(2, 4), "stop": torch.tensor(1e9)}
    chain = subgraphs(model, sample, ["Linear"])
    assert [sg.targets for sg in chain if sg.targets] == [["proj"], ["heads.0"], ["heads.1"], ["heads.2"]]
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
        early = dict(sample, stop=torch.tensor(-1e9))
        with pytest.raises(GeneratorMismatch, match="was read for 1 of its 3 items"):
            run_subgraphs(model, chain, early)
        with checks_off(model):
            assert torch.equal(run_subgraphs(model, chain, early), model(**early))
