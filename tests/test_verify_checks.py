"""The checks behind "ok" fail when they should: each test breaks one thing a check is there to catch
(an output, a cache entry, a tensor in a dict, a value that is not a tensor, a target entered twice, a
subgraph dropped, an input changed in place, a target entered by the wrong subgraph, a second batch)
and asserts the check reports it. A check that returned nothing would turn these red."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import types

import pytest
import torch
from torch import nn

from staticexec.emit.run import ContractError, Subgraph, TargetMismatch, install_tripwires, run_chain
from staticexec.emit import runtime
from staticexec.emit.runtime import BranchMismatch
from staticexec.messages import UsageError

V = importlib.import_module("staticexec.check.verify")  # `staticexec.check.verify` the name is the function


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama (hidden 16, 2 layers), its sample, its own output and its subgraphs."""
    import staticexec
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs

    model = build_tiny_model("LlamaForCausalLM")
    assert model.config.num_hidden_layers == 2
    sample = sample_inputs(model)
    with torch.no_grad():
        expected = model(**sample)
    subgraphs = staticexec.subgraphs(model, sample, ["LlamaDecoderLayer"])
    return model, sample, expected, subgraphs


# ----- compare: every value the output holds ---------------------------------------------------------


def test_equal_outputs_compare_equal(llama):
    _, _, expected, _ = llama
    assert V.compare(expected, copy.deepcopy(expected)) == ""


def test_a_changed_output_is_reported(llama):
    _, _, expected, _ = llama
    actual = copy.deepcopy(expected)
    actual.logits[1, 3, 0] += 1e-3
    assert "logits" in V.compare(expected, actual)


def _cache_field(output) -> str:
    """The output field holding the cache: `cache` from transformers 5.24 on (`past_key_values` stays an
    alias of it), `past_key_values` before."""
    return "cache" if "cache" in output.keys() else "past_key_values"


def test_a_changed_cache_entry_is_reported(llama):
    _, _, expected, _ = llama
    actual = copy.deepcopy(expected)
    actual.past_key_values.layers[1].values[0, 0, 5, 0] += 1  # the logits are untouched
    problem = V.compare(expected, actual)
    assert _cache_field(expected) in problem and "values" in problem
    actual = copy.deepcopy(expected)
    actual.past_key_values.layers[0].keys = actual.past_key_values.layers[0].keys[:, :, :-1]  # an entry shorter
    assert _cache_field(expected) in V.compare(expected, actual)


def test_a_tensor_inside_a_dict_is_compared():
    t = torch.arange(6.0).reshape(2, 3)
    expected = {"logits": t, "extra": {"state": t * 2, "steps": [t + 1]}}
    assert V.compare(expected, copy.deepcopy(expected)) == ""
    actual = copy.deepcopy(expected)
    actual["extra"]["state"][0, 0] = -1
    assert "state" in V.compare(expected, actual)
    actual = copy.deepcopy(expected)
    actual["extra"]["steps"][0][1, 2] = 0
    assert "steps" in V.compare(expected, actual)
    actual = copy.deepcopy(expected)
    del actual["extra"]["state"]
    assert "state" in V.compare(expected, actual)  # a key missing


@pytest.mark.parametrize("changed", [
    {"n": 2}, {"name": "other"}, {"flag": False}, {"none": 0}, {"n": True}, {"ratio": 0.5000001}, {"n": 1.0}])
def test_a_changed_value_that_is_not_a_tensor_is_reported(changed):
    expected = {"t": torch.ones(2), "n": 1, "name": "layer", "flag": True, "none": None, "ratio": 0.5}
    assert V.compare(expected, dict(expected)) == ""
    assert V.compare(expected, {**expected, **changed})


def test_same_values_in_another_dtype_or_shape_are_reported():
    t = torch.ones(2, 3)
    assert "dtype" in V.compare({"t": t}, {"t": t.double()})
    assert "shape" in V.compare({"t": t}, {"t": t.reshape(3, 2)})
    assert V.compare({"t": t}, {"t": [1.0] * 6})  # a tensor against a list


def test_dataclass_fields_and_object_attributes_are_compared():
    @dataclasses.dataclass
    class Out:
        hidden: torch.Tensor
        label: str

    class State:
        def __init__(self, value: torch.Tensor, step: int) -> None:
            self.value = value
            self.step = step

    t = torch.zeros(3)
    assert V.compare(Out(t, "a"), Out(t.clone(), "a")) == ""
    assert "label" in V.compare(Out(t, "a"), Out(t.clone(), "b"))
    assert "hidden" in V.compare(Out(t, "a"), Out(t + 1, "a"))
    assert V.compare((t, State(t, 1)), (t, State(t.clone(), 1))) == ""
    assert "step" in V.compare((t, State(t, 1)), (t, State(t.clone(), 2)))
    assert "value" in V.compare((t, State(t, 1)), (t, State(t + 1, 1)))


def test_cycles_end_and_modules_are_compared_by_identity():
    class Node:
        pass

    layer = nn.Linear(4, 4)

    def ring(value: torch.Tensor, module: nn.Module) -> Node:
        a, b = Node(), Node()
        a.next, b.next = b, a
        a.value, b.value = value, value
        a.module = module
        return a

    t = torch.ones(2)
    assert V.compare(ring(t, layer), ring(t.clone(), layer)) == ""
    assert "value" in V.compare(ring(t, layer), ring(t + 1, layer))
    assert "module" in V.compare(ring(t, layer), ring(t.clone(), nn.Linear(4, 4)))


def test_nan_in_the_same_place_is_equal_and_no_tensor_is_a_problem():
    t = torch.tensor([1.0, float("nan")])
    assert V.compare(t, t.clone()) == ""
    assert V.compare(t, torch.tensor([float("nan"), 1.0]))
    assert V.compare({"n": 1}, {"n": 1})  # nothing was compared that could show a wrong chain


def test_the_old_comparison_would_have_missed_these(llama):
    """What the first version of compare skipped: a cache, a tensor in a dict, a value held by an object."""
    _, _, expected, _ = llama
    actual = copy.deepcopy(expected)
    actual.past_key_values.layers[0].keys.add_(1)
    assert V.compare(expected, actual)
    assert V.compare({"a": {"b": torch.ones(1)}}, {"a": {"b": torch.zeros(1)}})


# ----- the per-subgraph call check ---------------------------------------------------------------------


OWN = [("model.layers.0", -1), ("model.layers.1", -1)]


def test_calls_as_the_model_makes_them_pass():
    assert V._check_calls(OWN, [("model.layers.0", 1), ("model.layers.1", 2)], 3) == ""


def test_a_target_entered_twice_is_reported():
    assert V._check_calls(OWN, [("model.layers.0", 1), ("model.layers.0", 1), ("model.layers.1", 2)], 3)
    assert V._check_calls(OWN, [("model.layers.0", 1), ("model.layers.0", 2)], 3)  # one for another
    assert V._check_calls(OWN, [("model.layers.0", 1), ("model.layers.1", 1)], 3)  # two in one subgraph


def test_a_subgraph_dropped_is_reported():
    assert V._check_calls(OWN, [("model.layers.0", 1), ("model.layers.1", 2)], 2)
    assert V._check_calls(OWN, [("model.layers.0", 1)], 2)


def test_a_target_in_subgraph_0_or_out_of_order_is_reported():
    assert V._check_calls(OWN, [("model.layers.0", 0), ("model.layers.1", 2)], 3)
    assert V._check_calls(OWN, [("model.layers.1", 1), ("model.layers.0", 2)], 3)


def test_no_target_call_is_not_a_split():
    assert V._check_calls([], [], 1)
    assert V.unsplit_reason(0, [])
    assert V.unsplit_reason(2, ["LlamaMLP"])
    assert V.unsplit_reason(2, []) == ""


# ----- chain_problem -----------------------------------------------------------------------------------


def _own_calls(model, sample):
    log = V._CallLog(model, {"LlamaDecoderLayer"})
    with torch.no_grad():
        model(**sample)
    return log, list(log.calls)


def test_chain_problem_passes_a_right_chain(llama):
    model, sample, expected, subgraphs = llama
    log, own = _own_calls(model, sample)
    try:
        assert V.chain_problem(model, subgraphs, sample, log, own, expected) == ""
    finally:
        log.close()


def test_chain_problem_reports_an_output_changed_after_the_reference_run(llama):
    model, sample, expected, subgraphs = llama
    log, own = _own_calls(model, sample)
    try:
        changed = copy.deepcopy(expected)
        changed.past_key_values.layers[1].keys[0, 0, 0, 0] += 1
        assert _cache_field(expected) in V.chain_problem(model, subgraphs, sample, log, own, changed)
        changed = copy.deepcopy(expected)
        changed.logits.mul_(2)
        assert "logits" in V.chain_problem(model, subgraphs, sample, log, own, changed)
    finally:
        log.close()


def test_chain_problem_reports_a_call_the_model_did_not_make(llama):
    model, sample, expected, subgraphs = llama
    log, own = _own_calls(model, sample)
    try:
        assert V.chain_problem(model, subgraphs, sample, log, own[:1], expected)  # the model called one target
        assert V.chain_problem(model, subgraphs, sample, log, own + own[:1], expected)
    finally:
        log.close()


def test_chain_problem_with_a_subgraph_dropped_fails(llama):
    model, sample, expected, subgraphs = llama
    log, own = _own_calls(model, sample)
    try:
        problem = V.chain_problem(model, [subgraphs[0], subgraphs[2]], sample, log, own, expected)
        assert "subgraphs" in problem  # 2 subgraphs for 2 target calls
    finally:
        log.close()


# ----- the run-time checks of run_chain and Subgraph -----------------------------------------------------


def _subgraph(index: int, body: str, inputs=("x",), outputs=("y",), targets=(), **kw) -> Subgraph:
    args = ", ".join(sorted(inputs))
    source = f"def subgraph_{index}(model, {args}):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return Subgraph(index=index, source=source, input_names=set(inputs), output_names=set(outputs),
                    consumed_names=set(), targets=list(targets), filename=f"<test subgraph {index}>", **kw)


class _Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.runs = 0


def test_an_input_changed_in_place_is_a_contract_error():
    sg = _subgraph(0, "x.mul_(2)\nreturn {'y': x + 1}")
    with pytest.raises(ContractError):
        run_chain(_Counter(), [sg], {"x": torch.ones(3)}, twice=True)


def test_an_input_changed_behind_its_version_counter_is_caught_by_the_second_run():
    """`.data` writes the storage without bumping the tensor's version, and the outputs do not show it:
    the comparison of the inputs after the first run does."""
    sg = _subgraph(0, "x.data.mul_(2)\nreturn {'y': torch.ones(3)}", _globals={"torch": torch})
    x = torch.ones(3)
    with pytest.raises(ContractError):
        run_chain(_Counter(), [sg], {"x": x}, twice=True)


def test_a_subgraph_giving_other_outputs_when_run_twice_is_a_contract_error():
    sg = _subgraph(0, "model.runs += 1\nreturn {'y': x * model.runs}")
    run_chain(_Counter(), [sg], {"x": torch.ones(3)})  # once: nothing to see
    with pytest.raises(ContractError):
        run_chain(_Counter(), [sg], {"x": torch.ones(3)}, twice=True)


class _Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(3))
        self.inner = nn.Module()
        self.inner.kept = [torch.ones(2)]


def _writer(index: int = 1) -> Subgraph:
    return _subgraph(index, "x += 1\nreturn {'y': x * 2}", written_inputs={"x"})


@pytest.mark.parametrize("given, where", [
    (lambda m: m.acc, "`acc`, a buffer of the model"),
    (lambda m: m.acc[1:], "`acc`, a buffer of the model"),  # a view: the same memory
    (lambda m: m.inner.kept[0], "`inner.kept`, an attribute of module 'inner'"),
    (lambda m: m.inner.kept, "`inner.kept`, an attribute of module 'inner'"),
])
def test_an_input_written_in_place_that_the_model_holds_too_is_a_contract_error(given, where):
    """The subgraph would write a copy, and the module would keep the old value."""
    model = _Holder()
    sg = _writer()
    if isinstance(given(model), list):
        sg = _subgraph(1, "x.append(1)\nreturn {'y': len(x)}", written_inputs={"x"})
    with pytest.raises(ContractError, match="writes its input 'x' in place") as caught:
        run_chain(model, [sg], {"x": given(model)})
    assert where in str(caught.value)
    assert torch.equal(model.acc, torch.zeros(3)) and torch.equal(model.inner.kept[0], torch.ones(2))


def test_an_input_written_in_place_that_the_model_does_not_hold_is_copied_and_runs():
    model, x = _Holder(), torch.zeros(3)
    out = run_chain(model, [_writer()], {"x": x}, twice=True)
    assert torch.equal(out["y"], torch.full((3,), 2.0)) and torch.equal(x, torch.zeros(3))
    copied = model.acc.clone()  # equal to the buffer, but other memory
    assert torch.equal(run_chain(model, [_writer()], {"x": copied})["y"], torch.full((3,), 2.0))


def test_checks_off_lets_a_written_input_the_model_holds_be_copied():
    from staticexec.emit.run import checks_off

    model = _Holder()
    with checks_off(model):
        run_chain(model, [_writer()], {"x": model.acc})
    assert torch.equal(model.acc, torch.zeros(3))  # the copy was written: what the check is there to stop


class _TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)


def test_a_target_entered_by_a_subgraph_not_emitted_for_it_is_a_target_mismatch():
    model = _TwoLayers()
    install_tripwires([model.a, model.b])
    right = _subgraph(1, "return {'y': model.a(x)}", targets=["a"])
    run_chain(model, [right], {"x": torch.ones(1, 3)}, twice=True)
    for wrong in (_subgraph(1, "return {'y': model.b(x)}", targets=["a"]),  # another target
                  _subgraph(1, "return {'y': model.b(model.a(x))}", targets=["a"]),  # one more
                  _subgraph(0, "return {'y': model.a(x)}")):  # none expected
        with pytest.raises(TargetMismatch):
            run_chain(model, [wrong], {"x": torch.ones(1, 3)})


def test_a_target_called_through_call_target_is_recorded_as_torch_would_run_it():
    """call_target skips torch's hook dispatch only when the tripwire is the one hook: the entry is recorded,
    and a hook of anyone else (a pre-hook that changes the input, a forward hook) still runs as torch runs it."""
    model = _TwoLayers()
    install_tripwires([model.a])
    x = torch.ones(1, 3)
    right = _subgraph(1, "return {'y': _sx.call_target(model.a, x)}", targets=["a"], _globals={"_sx": runtime})
    assert torch.equal(run_chain(model, [right], {"x": x}, twice=True)["y"], model.a(x))
    wrong = _subgraph(1, "return {'y': _sx.call_target(model.b, x)}", targets=["a"], _globals={"_sx": runtime})
    install_tripwires([model.b])
    with pytest.raises(TargetMismatch):
        run_chain(model, [wrong], {"x": x})
    pre = model.a.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
    post = model.a.register_forward_hook(lambda module, args, out: out + 1)
    try:
        assert torch.equal(run_chain(model, [right], {"x": x})["y"], model.a(x))
        assert torch.equal(run_chain(model, [right], {"x": x})["y"], model.a.forward(x * 2) + 1)
    finally:
        pre.remove()
        post.remove()


def test_an_empty_collector_a_subgraph_adds_to_is_emptied_again_and_its_items_travel_in_a_new_scope():
    """A wrapper's scope that publishes an empty collector is shared, not copied: what the run adds goes to a
    scope of its own, and the collector given is empty again, so a second run on it adds the same once."""
    import contextvars

    from staticexec.emit.runtime import WrapperScope

    var = contextvars.ContextVar("collector")
    scope = WrapperScope({var: {}}, [])
    sg = _subgraph(0, "with _sx.wrapper_scope(scope):\n    var.get()['seen'] = x + 1\nreturn {'y': x}", _globals={
        "_sx": runtime, "var": var}, inputs=("x", "scope"), outputs=("y", "scope"), passed_through={"scope"})
    out = run_chain(_Counter(), [sg], {"x": torch.ones(2), "scope": scope}, twice=True)
    assert scope.context[var] == {}
    assert out["scope"] is not scope and list(out["scope"].context[var]) == ["seen"]
    assert torch.equal(out["scope"].context[var]["seen"], torch.full((2,), 2.0))


def _input_sets() -> list:
    """Inputs of every kind the copying tells apart, each with the names its code never reads (carried) or
    reads only as `**name` (spread): the first three need no copy, each of the others one."""
    import contextvars

    from staticexec.emit.run import Packed
    from staticexec.emit.runtime import WrapperScope, WrapperState

    var = contextvars.ContextVar("collector")
    t, u = torch.ones(2), torch.zeros(2)
    plain = {"a": None, "b": False, "c": 0, "t": t, "pair": (t, u), "scope": WrapperScope({var: {}}, []),
             "none": None, "state": WrapperState("here", {"input_ids": t, "kw": {}})}  # a state: never copied
    carried = {"kw": {}, "labels": None, "held": t, "deep": ([t], {"k": (u,)}), "kept": WrapperState("there", {"x": [t]})}
    return [
        (plain, set(), set()),
        (dict(plain, kw={"flag": True}), set(), {"kw"}),  # spread, atoms only
        (dict(plain, **carried), set(carried), set()),
        (dict(plain, kw={"x": t}), set(), {"kw"}),  # spread, but holding a tensor: copied
        (dict(plain, kw={"flag": True}), set(), set()),  # a dict read as such: copied
        (dict(plain, items=[t]), set(), set()),
        (dict(plain, pair=(t, [u])), set(), set()),
        (dict(plain, obj=types.SimpleNamespace(x=t)), set(), set()),
        (dict(plain, held=types.SimpleNamespace(x=t)), {"held"}, set()),  # carried, but an object a copy may reach
        (dict(plain, scope=WrapperScope({var: {"seen": [t]}}, [])), set(), set()),  # a collector added to
        (dict(plain, scope=WrapperScope({}, [(nn.Linear(1, 1), "x", 1)])), set(), set()),  # attributes set
        (dict(plain, out=Packed("builtins", "dict", {"x": t})), set(), set()),  # a packed mapping: rebuilt
    ]


@pytest.mark.parametrize("case", range(len(_input_sets())))
def test_inputs_given_as_they_came_are_what_the_copying_decides(case):
    """The shortcut for inputs that need no copying decides what the full copying decides: the same objects
    given to the code, the same tensors checked, the same scopes emptied after the run; and it steps aside
    (None) whenever the copying would copy, rebuild or unpack anything."""
    from staticexec.emit.run import _as_given, _copied_inputs

    inputs, carried, spread = _input_sets()[case]
    sg = _subgraph(0, "return {}", inputs=tuple(inputs), carried_inputs=carried, spread_inputs=spread)
    values, shared, changed, later, emptied, memo, _ = _copied_inputs(sg, dict(inputs))
    copies = bool(memo) or changed or any(values[k] is not v for k, v in inputs.items())
    given = _as_given(dict(inputs), carried, spread)
    assert (given is None) is bool(copies) is (case >= 3), (given, changed)
    if given is not None:
        assert [(k, id(t)) for k, t in given[0]] == [(k, id(t)) for k, t in shared]
        assert given[1] == emptied
        assert all(values[k] is inputs[k] for k, _ in later)


def test_a_loop_check_reads_a_modulelist_slice_from_its_modules_without_building_one():
    """`loop_slice` gives the items torch's slicing gives, without the new ModuleList (a module registration
    hook sees torch's slicing register every module again, and `loop_slice` register none)."""
    layers = nn.ModuleList(nn.Linear(1, 1) for _ in range(5))
    for lower, upper, step in [(None, 3, None), (1, None, 2), (None, None, -1), (-2, None, None), (4, 1, None)]:
        got = runtime.loop_slice(layers, lower, upper, step)
        assert type(got) is list and len(got) == len(layers[lower:upper:step])
        assert all(a is b for a, b in zip(got, layers[lower:upper:step]))
    registered = []
    handle = torch.nn.modules.module.register_module_module_registration_hook(
        lambda module, name, sub: registered.append(name))
    try:
        runtime.loop_slice(layers, None, 3, None)
        assert registered == []
        layers[:3]
        assert registered == ["0", "1", "2"]
    finally:
        handle.remove()


def test_a_loop_check_slices_any_other_container_as_the_forward_does():
    """A ModuleList subclass's own `__getitem__`, and a tuple, are sliced by their own code."""

    class Reversed(nn.ModuleList):
        def __getitem__(self, idx):
            items = super().__getitem__(idx)
            return list(items)[::-1] if isinstance(idx, slice) else items

    layers = Reversed(nn.Linear(1, 1) for _ in range(3))
    assert [id(m) for m in runtime.loop_slice(layers, None, 2, None)] == [id(layers[1]), id(layers[0])]
    items = tuple(layers)
    assert runtime.loop_slice(items, 1, None, None) == items[1:]


# ----- verify: statuses ---------------------------------------------------------------------------------


def test_second_batch_is_another_seed_and_length_with_padding(llama):
    model, sample, _, _ = llama
    batch, why = V.second_batch(model, dict(sample, use_cache=False))
    assert why == "" and batch.keys() == sample.keys() | {"use_cache"} and batch["use_cache"] is False
    assert batch["input_ids"].shape == (2, V.SECOND_LEN) != sample["input_ids"].shape
    mask = batch["attention_mask"]
    assert mask[0].all() and not mask[1, :V.SECOND_PADDING].any() and mask[1, V.SECOND_PADDING:].all()


def _spy_chains(monkeypatch, change=None):
    """Record every run_chain verify makes (sequence length, twice, offloaded); `change` may alter or refuse a run."""
    runs = []
    real = run_chain

    def spy(model, subgraphs, inputs, before=None, twice=False, offloaded=False):
        runs.append((inputs["input_ids"].shape[-1], twice, offloaded))
        out = real(model, subgraphs, inputs, before=before, twice=twice, offloaded=offloaded)
        return change(inputs, out) if change else out

    monkeypatch.setattr("staticexec.emit.run.run_chain", spy)
    return runs


def test_verify_runs_each_chain_twice_on_the_sample_and_on_a_second_batch(monkeypatch):
    runs = _spy_chains(monkeypatch)
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "ok", verdict.reason
    # the second run of each as the pipeline runs it where that is strictest: twice, its cache offloaded
    assert (16, True, True) in runs and (V.SECOND_LEN, True, True) in runs
    assert (16, False, False) in runs and (V.SECOND_LEN, False, False) in runs


def test_verify_reports_a_mismatch_on_the_second_batch(monkeypatch):
    def wrong_on_second(inputs, out):
        if inputs["input_ids"].shape[-1] == V.SECOND_LEN:
            out["forward_output"].logits[0, -1, 0] += 1
        return out

    _spy_chains(monkeypatch, wrong_on_second)
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "mismatch" and "second batch" in verdict.reason and "logits" in verdict.reason


def test_verify_reports_a_branch_the_second_batch_cannot_take_as_sample_bound(monkeypatch):
    def refuse_second(inputs, out):
        if inputs["input_ids"].shape[-1] == V.SECOND_LEN:
            raise BranchMismatch("x.py:1: `seq_len > 14` is False for these inputs but was True for the sample")
        return out

    _spy_chains(monkeypatch, refuse_second)
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "sample-bound" and not verdict.ok and "BranchMismatch" in verdict.reason


def test_verify_with_no_target_call_is_not_ok(monkeypatch):
    monkeypatch.setattr(V._CallLog, "_hook", lambda self, module, args: None)
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "unsplit" and not verdict.ok


def test_a_usage_error_inside_the_pipeline_is_an_error_not_na(monkeypatch):
    from staticexec.emit.emitter import Emitter

    def broken(self):
        raise UsageError("an internal lookup failed")

    monkeypatch.setattr(Emitter, "emit", broken)
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "error" and "internal lookup failed" in verdict.reason


def test_a_class_with_no_forward_is_na(monkeypatch):
    class OnlyGenerates(nn.Module):
        pass

    monkeypatch.setattr("staticexec.check.models.build_tiny_model", lambda *a, **k: OnlyGenerates())
    verdict = V.verify("LlamaForCausalLM")
    assert verdict.status == "n/a" and "no forward" in verdict.reason


def test_the_cli_flags_an_error_with_exit_1(monkeypatch, capsys):
    from staticexec.cli import main
    from staticexec.emit.emitter import Emitter

    def broken(self):
        raise UsageError("an internal lookup failed")

    monkeypatch.setattr(Emitter, "emit", broken)
    assert main(["verify", "LlamaForCausalLM"]) == 1
    out = capsys.readouterr().out
    assert " error " in out and "1 error" in out
