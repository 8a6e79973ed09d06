"""The counter of target-class module registrations that makes a subgraph record its run again
(emit/registrations.py)."""

from torch import nn

from staticexec.emit.registrations import registrations
from staticexec.emit.run import install_tripwires


class CountedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)


class CountedSubBlock(CountedBlock):
    pass


class BareBlock(nn.Module):  # no submodules: nothing registers as it is made
    pass


class Untargeted(nn.Module):  # a class no chain in the process targets (others may target Linear)
    def __init__(self):
        super().__init__()
        self.inner = BareInner()


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
    assert _counted(CountedBlock) == 1  # made: its own `proj` registered under it
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
    assert _counted(lambda: setattr(holder, "other", Untargeted())) == 0  # made (its `inner`), then registered
    assert _counted(lambda: blocks.append(CountedBlock())) == 2  # made, then registered without a tripwire


def test_a_module_written_straight_into_modules_passes_no_hook():
    registrations().watch(frozenset({"BareBlock"}))
    holder = nn.Module()
    assert _counted(lambda: holder._modules.__setitem__("direct", BareBlock())) == 0  # docs/soundness.md
