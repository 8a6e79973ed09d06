"""The counter of target-class module registrations that makes a subgraph record its run again
(emit/registrations.py)."""

import torch
from torch import nn

from staticexec.emit.registrations import registrations
from staticexec.emit.run import install_tripwires


class Part(nn.Module):  # a class no chain targets, with nothing of its own (others may target Linear)
    pass


class CountedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.part = Part()


class CountedSubBlock(CountedBlock):
    pass


class BareBlock(nn.Module):  # no submodules, parameters or buffers: nothing registers as it is made
    pass


class WeightBlock(nn.Module):  # no submodules, a parameter of its own
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2))


class BufferBlock(nn.Module):  # no submodules, a buffer of its own
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(2))


class Untargeted(nn.Module):  # a class no chain in the process targets
    def __init__(self):
        super().__init__()
        self.inner = BareInner()
        self.weight = nn.Parameter(torch.ones(1))


class BareInner(nn.Module):
    pass


def _counted(action) -> int:
    counter = registrations()
    before = counter.count
    action()
    return counter.count - before


def test_every_way_a_target_module_comes_into_the_model_or_into_being_is_counted():
    counter = registrations()
    assert registrations() is counter  # one counter, one hook, per process
    counter.watch(frozenset({"CountedBlock", "BareBlock"}))
    holder, layers = nn.Module(), nn.ModuleList()
    assert _counted(CountedBlock) == 1  # made: its own `part` registered under it
    assert _counted(CountedSubBlock) == 1  # a subclass of a watched class
    block = BareBlock()
    for register in (lambda: setattr(holder, "a", block), lambda: holder.add_module("b", block),
                     lambda: holder.register_module("c", block), lambda: layers.append(block)):
        assert _counted(register) == 1


def test_armed_modules_and_other_classes_are_not_counted():
    registrations().watch(frozenset({"CountedBlock"}))
    blocks = nn.ModuleList([CountedBlock(), CountedBlock()])
    install_tripwires(list(blocks))
    assert _counted(lambda: blocks[:1]) == 0  # a slice registers its armed blocks anew
    holder = nn.Module()
    assert _counted(lambda: setattr(holder, "other", Untargeted())) == 0  # made (its `inner` and weight), then registered
    assert _counted(lambda: blocks.append(CountedBlock())) == 2  # made, then registered without a tripwire


def test_a_leaf_module_with_a_parameter_or_buffer_is_counted_as_it_is_made_wherever_it_is_kept():
    registrations().watch(frozenset({"WeightBlock", "BufferBlock"}))
    holder, kept = nn.Module(), []
    assert _counted(lambda: kept.append(WeightBlock())) == 1  # its weight registered on it
    assert _counted(lambda: holder._modules.__setitem__("direct", BufferBlock())) == 1  # its buffer, as it was made
    armed = WeightBlock()
    install_tripwires([armed])
    assert _counted(lambda: armed.register_parameter("scale", nn.Parameter(torch.ones(1)))) == 0  # a quantizer's
    unarmed = WeightBlock()
    assert _counted(lambda: unarmed.register_buffer("zero", torch.zeros(1))) == 1


def test_a_module_with_nothing_of_its_own_written_straight_into_modules_passes_no_hook():
    registrations().watch(frozenset({"BareBlock"}))
    holder = nn.Module()
    assert _counted(lambda: holder._modules.__setitem__("direct", BareBlock())) == 0  # docs/soundness.md
