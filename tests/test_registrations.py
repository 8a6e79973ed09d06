"""The counter of module registrations that makes a subgraph record its run again (emit/registrations.py)."""

from torch import nn

from staticexec.emit.registrations import registrations


def test_every_way_torch_registers_a_submodule_advances_the_counter():
    counter = registrations()
    assert registrations() is counter  # one counter, one hook, per process
    holder, layers = nn.Module(), nn.ModuleList()
    ways = [lambda: setattr(holder, "a", nn.Identity()), lambda: holder.add_module("b", nn.Identity()),
            lambda: holder.register_module("c", nn.Identity()), lambda: layers.append(nn.Identity()),
            lambda: setattr(holder, "a", nn.Identity())]  # replaced under a name it had
    for register in ways:
        before = counter.count
        register()
        assert counter.count == before + 1


def test_a_module_made_with_submodules_counts_them_and_a_plain_attribute_does_not():
    counter = registrations()
    before = counter.count
    nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert counter.count == before + 2
    holder = nn.Module()
    before = counter.count
    holder.scale = 2.0
    holder._modules["direct"] = nn.Identity()  # past every hook: not counted (docs/soundness.md)
    assert counter.count == before
