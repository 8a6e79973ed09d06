"""A list of objects copied item by item as a subgraph reads it (staticexec.emit.onread), alone and in a run."""

from __future__ import annotations

import copy

import pytest
import torch

from staticexec.emit.onread import CopiedOnRead, eligible
from staticexec.emit.run import ContractError, Subgraph, run_chain


class _Item:
    def __init__(self, value) -> None:
        self.value = value


def _list(n: int = 4):
    source = [_Item(i) for i in range(n)]
    copies = []

    def copy_item(item):
        copies.append(item)
        return _Item(item.value)

    return source, copies, CopiedOnRead(source, copy_item)


def test_an_item_is_copied_when_first_read_and_once():
    source, copies, lazy = _list()
    first = lazy[2]
    assert first is not source[2] and first.value == 2
    assert lazy[2] is first and lazy[-2] is first and copies == [source[2]]
    assert list.__getitem__(lazy, 0) is source[0]  # nothing read it: still the original


def test_every_way_of_reading_items_gives_copies():
    for read in (list, tuple, iter, reversed, lambda l: l[1:3], lambda l: [0] + l, lambda l: l + [0],
                 lambda l: l * 2, copy.copy, copy.deepcopy, lambda l: l.copy(), lambda l: [l.pop()],
                 lambda l: sorted(l, key=lambda item: item.value)):
        source, _, lazy = _list()
        items = [item for item in read(lazy) if isinstance(item, _Item)]
        assert items and not any(item is original for item in items for original in source), read


def test_a_change_that_moves_items_copies_every_item_first():
    source, copies, lazy = _list()
    lazy.insert(0, _Item(9))
    assert len(copies) == 4 and not any(list.__getitem__(lazy, i) is source[i - 1] for i in range(1, 5))
    source, copies, lazy = _list()
    lazy += lazy
    assert len(copies) == 4 and not set(map(id, list.copy(lazy))) & set(map(id, source))


def test_items_appended_are_not_copied_and_close_stops_copying():
    source, copies, lazy = _list()
    added = _Item(7)
    lazy.append(added)
    assert lazy[4] is added and not copies
    plain = lazy.close({})
    assert type(plain) is list and plain[0] is source[0] and lazy[1] is source[1] and not copies


def test_close_puts_copies_made_through_another_name_in_their_slots():
    source, copies, lazy = _list()
    elsewhere = _Item(1)
    plain = lazy.close({id(source[1]): elsewhere})
    assert plain[1] is elsewhere and plain[0] is source[0] and not copies


def test_both_sides_of_a_concatenation_and_a_membership_test_see_copies():
    (source, _, left), (other, _, right) = _list(), _list()
    assert not set(map(id, left + right)) & set(map(id, source + other))
    source, _, lazy = _list()
    assert source[1] not in lazy and lazy.count(source[1]) == 0  # compared with the copies, which are others
    with pytest.raises(TypeError):
        (0,) + lazy
    source, _, lazy = _list()
    plain = [0]
    same = plain
    plain += lazy  # in place, as on a plain list, and with copies
    assert same is plain and len(plain) == 5 and not set(map(id, plain)) & set(map(id, source))


def test_only_lists_of_accepted_classes_are_eligible():
    assert eligible([_Item(1), _Item(2)], lambda cls: cls is _Item)
    assert not eligible([_Item(1), torch.ones(1)], lambda cls: cls is _Item)
    assert not eligible([], lambda cls: True)


def _subgraph(body: str, inputs=("cache",), outputs=("y", "cache"), **kw) -> Subgraph:
    source = f"def subgraph_1(model, {', '.join(sorted(inputs))}):\n" + "".join(
        f"    {line}\n" for line in body.splitlines())
    return Subgraph(index=1, source=source, input_names=set(inputs), output_names=set(outputs), consumed_names=set(),
                    targets=[], filename="<test onread subgraph>", **kw)


def _dynamic_cache(layers: int):
    from transformers import DynamicCache

    cache = DynamicCache()
    for i in range(layers):
        cache.update(torch.full((1, 1, 2, 4), float(i + 1)), torch.full((1, 1, 2, 4), -float(i)), i)
    return cache


def test_a_subgraph_copies_only_the_cache_layers_it_reads():
    """transformers' DynamicCache: the subgraph writes layer 1; that layer is copied (twice: the pipeline runs it
    twice), the input cache is left as it was, and the other layers are the input's own objects, unchanged."""
    cache = _dynamic_cache(4)
    before = [(layer, layer.keys.clone()) for layer in cache.layers]
    sg = _subgraph("k, v = cache.update(x, x, 1)\nreturn {'y': k, 'cache': cache}", inputs=("cache", "x"),
                   passed_through={"cache"})
    out = run_chain(torch.nn.Module(), [sg], {"cache": cache, "x": torch.ones(1, 1, 3, 4)}, twice=True)
    after = out["cache"]
    assert type(after.layers) is list and after is not cache
    assert after.layers[1] is not cache.layers[1] and after.layers[1].keys.shape[-2] == 5
    assert all(after.layers[i] is cache.layers[i] for i in (0, 2, 3))
    assert all(layer is cache.layers[i] and torch.equal(layer.keys, keys) for i, (layer, keys) in enumerate(before))
    assert out["y"].shape[-2] == 5


def test_a_tensor_shared_as_an_input_and_held_by_a_layer_read_later_stays_one_tensor():
    """A tensor given both as an input and inside a layer the run reads is not cloned for the layer: a write
    through the layer is a write to the shared input, which the version check reports."""
    cache = _dynamic_cache(3)
    keys = cache.layers[2].keys
    sg = _subgraph("cache.layers[2].keys.mul_(2)\nreturn {'y': keys + 0, 'cache': cache}", inputs=("cache", "keys"),
                   passed_through={"cache"})
    with pytest.raises(ContractError, match="changed its input 'keys' in place"):
        sg.forward(torch.nn.Module(), keys=keys, cache=cache)


def test_an_input_carried_past_the_code_takes_the_copy_of_a_tensor_a_layer_read_while_it_ran_holds():
    """A carried input (never read by the code) that is a tensor a layer holds is given, after the run, as the
    copy the run wrote through the layer: the model would see the write through both names."""
    cache = _dynamic_cache(3)
    keys = cache.layers[0].keys
    sg = _subgraph("cache.layers[0].keys.mul_(2)\nreturn {'y': 1, 'cache': cache}", inputs=("cache", "held"),
                   outputs=("y", "cache", "held"), passed_through={"cache", "held"}, carried_inputs={"held"})
    out = sg.forward(torch.nn.Module(), cache=cache, held=keys)
    assert out["held"] is out["cache"].layers[0].keys and out["held"] is not keys
    assert torch.equal(out["held"], torch.full((1, 1, 2, 4), 2.0)) and torch.equal(keys, torch.ones(1, 1, 2, 4))


def test_a_layer_written_through_another_name_is_the_one_the_output_cache_holds():
    """A layer bound to a name of its own before a cut (`cache_layer = past_key_values.layers[i]`, written in a
    later subgraph that never reads the list): the output cache holds the copy the code wrote."""
    cache = _dynamic_cache(3)
    sg = _subgraph("layer.keys = layer.keys * 2\nreturn {'y': 1, 'cache': cache, 'layer': layer}",
                   inputs=("cache", "layer"), outputs=("y", "cache", "layer"), passed_through={"cache", "layer"})
    for order in (("cache", "layer"), ("layer", "cache")):
        given = {"cache": cache, "layer": cache.layers[0]}
        out = sg.forward(torch.nn.Module(), **{k: given[k] for k in order})
        assert out["cache"].layers[0] is out["layer"] is not cache.layers[0]
        assert torch.equal(out["layer"].keys, torch.full((1, 1, 2, 4), 2.0)) and torch.equal(cache.layers[0].keys,
                                                                                             torch.ones(1, 1, 2, 4))
        assert out["cache"].layers[1] is cache.layers[1]


def test_a_list_the_code_keeps_elsewhere_stays_one_list_and_a_later_subgraph_copies_what_it_writes():
    """Subgraph 1 keeps the cache's list under a second object; subgraph 2 writes a layer through that one. Both
    names hold one list after subgraph 1, and neither run changes subgraph 1's input."""
    cache = _dynamic_cache(3)
    layer2 = cache.layers[2]
    first = _subgraph("alias = cache.__class__.__new__(cache.__class__)\nalias.__dict__.update(vars(cache))\n"
                      "cache.update(x, x, 0)\nreturn {'cache': cache, 'alias': alias, 'x': x}",
                      inputs=("cache", "x"), outputs=("cache", "alias", "x"), passed_through={"cache", "x"})
    out = first.forward(torch.nn.Module(), cache=cache, x=torch.ones(1, 1, 1, 4))
    assert out["alias"].layers is out["cache"].layers and out["cache"].layers[2] is not layer2
    second = Subgraph(index=2, source="def subgraph_2(model, alias, x):\n    k, v = alias.update(x, x, 2)\n"
                      "    return {'y': k.shape[-2]}\n", input_names={"alias", "x"}, output_names={"y"},
                      consumed_names=set(), targets=[], filename="<test onread subgraph 2>")
    result = run_chain(torch.nn.Module(), [first, second], {"cache": cache, "x": torch.ones(1, 1, 1, 4)}, twice=True)
    assert result["y"] == 3 and layer2.keys.shape[-2] == 2 and cache.layers[2] is layer2


def test_an_item_two_lists_hold_is_one_copy_in_both_whichever_list_the_code_kept():
    """Two caches share a layer object, and the code keeps one cache's list: both output caches hold one copy
    of the shared layer, in either order of the inputs."""
    from transformers import DynamicCache

    base = _dynamic_cache(3)
    x, y = DynamicCache(), DynamicCache()
    x.layers, y.layers = [base.layers[0], base.layers[1]], [base.layers[1], base.layers[2]]
    sg = _subgraph("kept = y.layers\nreturn {'x': x, 'y': y, 'kept': kept}", inputs=("x", "y"),
                   outputs=("x", "y", "kept"), passed_through={"x", "y"})
    for order in (("y", "x"), ("x", "y")):
        out = sg.forward(torch.nn.Module(), **{k: {"x": x, "y": y}[k] for k in order})
        assert out["x"].layers[1] is out["y"].layers[0] is not base.layers[1]
        assert type(out["x"].layers) is list and type(out["y"].layers) is not list  # x's list given back plain



class _Holder:
    def __init__(self, items) -> None:
        self.items = items


def test_what_a_kept_list_reaches_is_copied_whole_and_a_list_its_copies_reach_is_kept_too():
    """The code keeps an iterator over the cache's list. Its layers hold lists of their own, and one holds
    (through a dict) the list another input holds: after the run, every object the iterator can reach is a
    copy, and the other input's list and the one the layer reaches are one list."""
    cache = _dynamic_cache(2)
    for layer in cache.layers:
        layer.inner = [_Item(0)]
    shared = [_Item(1), _Item(2)]
    cache.layers[0].extra = {"s": shared}
    holder = _Holder(shared)
    sg = _subgraph("it = iter(cache.layers)\nreturn {'y': it, 'cache': cache, 'holder': holder}",
                   inputs=("cache", "holder"), outputs=("y", "cache", "holder"), passed_through={"cache", "holder"})
    for order in (("holder", "cache"), ("cache", "holder")):
        out = sg.forward(torch.nn.Module(), **{k: {"cache": cache, "holder": holder}[k] for k in order})
        first = next(out["y"])  # as a later subgraph would, through the generator passed along as it is
        assert first is not cache.layers[0] and type(first.inner) is list
        assert first.inner[0] is not cache.layers[0].inner[0]
        first.inner[0].value = 99
        assert cache.layers[0].inner[0].value == 0
        assert first.extra["s"] is out["holder"].items and not set(map(id, first.extra["s"])) & set(map(id, shared))
