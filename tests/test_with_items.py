"""emit/withitems.py: which parts of a `with` item around target calls are evaluated once, where it is entered."""

from __future__ import annotations

import libcst as cst
import pytest

from staticexec.emit.withitems import split_item, written_again


def _items(code: str) -> list[cst.WithItem]:
    return list(cst.parse_statement(code).items)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def test_a_call_item_has_its_arguments_bound_once():
    [item] = _items('with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.use_amp):\n    pass\n')
    bindings, entered, anew = split_item(item, "with__0_3_0")
    assert [(name, _code(value)) for name, value in bindings] == [
        ("with__0_3_0_0", '"cpu"'), ("with__0_3_0_1", "torch.bfloat16"), ("with__0_3_0_2", "self.use_amp")]
    assert _code(entered) == "torch.autocast(with__0_3_0_0, dtype=with__0_3_0_1, enabled=with__0_3_0_2)"
    assert [_code(expr) for expr in anew] == ["torch.autocast"]


def test_each_item_of_several_is_split_on_its_own_without_its_comma():
    first, second = _items("with torch.no_grad(), torch.autocast('cpu', enabled=flag):\n    pass\n")
    assert split_item(first, "w_0")[0] == [] and _code(split_item(first, "w_0")[1]) == "torch.no_grad()"
    bindings, entered, _ = split_item(second, "w_1")
    assert [name for name, _ in bindings] == ["w_1_0", "w_1_1"]
    assert _code(entered) == "torch.autocast(w_1_0, enabled=w_1_1)"


@pytest.mark.parametrize("code", [
    "with ctx:\n    pass\n",  # not a call
    "with torch.autocast(*args):\n    pass\n",  # a starred argument
    "with self.make()(flag):\n    pass\n",  # a callee that calls
    "with (a if self.flag else b):\n    pass\n",
])
def test_other_items_are_evaluated_again_as_written(code):
    [item] = _items(code)
    bindings, entered, anew = split_item(item, "with__0_1_0")
    assert bindings == []
    assert _code(entered) == _code(item) and [_code(expr) for expr in anew] == [_code(item.item)]


def test_what_is_evaluated_again_is_checked_against_the_body_writes():
    stmt = cst.parse_statement("with self.cfg.ctx(flag), helper:\n    self.cfg = other\n    flags['x'] = 1\n    del self.other\n")
    anew = [expr for i, item in enumerate(stmt.items) for expr in split_item(item, f"w_{i}")[2]]
    assert written_again(anew, stmt.body) == ["self.cfg", "self.cfg.ctx"]
    single = cst.parse_statement("with torch.autocast('cpu', enabled=self.cfg.amp):\n    self.cfg = other\n")
    anew = split_item(single.items[0], "w_0")[2]
    assert written_again(anew, single.body) == []  # its argument was read once, before the body


def test_only_the_mode_setting_managers_themselves_are_known_not_their_names():
    import contextlib

    import torch

    from staticexec.emit.withitems import known_manager

    for manager in (torch.no_grad, torch.enable_grad, torch.inference_mode, torch.set_grad_enabled, torch.autocast,
                    torch.nn.attention.sdpa_kernel, torch.device, contextlib.nullcontext):
        assert known_manager(manager)

    def no_grad():  # named like one
        return contextlib.nullcontext()

    assert not known_manager(no_grad) and not known_manager(torch.no_grad()) and not known_manager(None)


def test_each_subgraph_checks_the_callee_it_enters_again():
    import sys

    import torch

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from soundness import cases

    from staticexec.api import subgraphs

    module = next(c for c in cases() if c.name == "ok_with_two_items").load()
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    later = chain[2].source
    assert "_sx.expect_context(torch.no_grad, context__" in later and "_sx.expect_context(torch.autocast, context__" in later
    found = later.split("expect_context(torch.no_grad, ")[1].split(",")[0]  # the object emission found
    assert chain[2]._fn.__globals__[found] is torch.no_grad


def test_a_conditional_item_is_the_side_the_sample_takes_its_test_checked_once_where_the_with_starts():
    import sys

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from soundness import cases

    from staticexec.api import subgraphs

    module = next(c for c in cases() if c.name == "with_item_conditional_test_written_through_alias").load()
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    assert sum(sg.source.count("expect_branch(bool(self.use_amp), True") for sg in chain) == 1
    assert "expect_branch" in chain[0].source  # where the `with` starts
    for sg in chain[1:-1]:
        assert "_sx.expect_context(torch.autocast, context__" in sg.source and "nullcontext" not in sg.source


def test_a_name_item_is_entered_again_through_the_state_its_first_entry_records():
    import sys

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from soundness import cases

    from staticexec.api import subgraphs

    module = next(c for c in cases() if c.name == "ok_with_name_manager_made_before").load()
    model, sample = module.build()
    chain = subgraphs(model, sample, ["Layer"])
    made = [sg.index for sg in chain if "= _sx.EnteredState()" in sg.source]
    assert made == [0]  # where the `with` starts (the loop's items checked inside it)
    state = chain[0].source.split(" = _sx.EnteredState()")[0].split()[-1]
    for sg in chain:
        assert f"with _sx.reentered(ctx, {state}, " in sg.source
    assert all(state in sg.input_names for sg in chain[1:])


def _entries(manager, *changes):
    """Enter `manager` through one state three times, as three subgraphs of a body would, applying each change
    (a function of the manager) between two entries."""
    from staticexec.emit.reentry import EnteredState, reentered

    state = EnteredState()
    for change in (None, *changes):
        if change is not None:
            change(manager)
        with reentered(manager, state, "model.py:3", "ctx"):
            pass
    return state


def test_managers_that_save_the_mode_they_set_back_are_entered_again_as_they_were():
    import contextlib

    import torch

    with torch.enable_grad():  # no_grad saves the mode it sets back (`prev`), which its first entry changes
        state = _entries(torch.no_grad(), None, None)
    assert "prev" in state.written
    _entries(torch.inference_mode(), None)  # makes a new C++ guard at each entry
    _entries(torch.set_grad_enabled(torch.is_grad_enabled()), None)  # sets its mode when made, and when entered
    _entries(torch.autocast("cpu", dtype=torch.bfloat16), None)
    # what a nullcontext gives for `as` sets no mode: a subgraph may be given a copy of it
    _entries(contextlib.nullcontext([1]), lambda ctx: setattr(ctx, "enter_result", list(ctx.enter_result)))
    _entries(torch.device("cpu"), None)  # no attributes of its own


def test_a_manager_the_body_changes_after_its_first_entry_stops_the_next_entry():
    import torch

    from staticexec.emit.reentry import ManagerMismatch

    def turned_on(ctx):
        ctx._enabled = True

    with pytest.raises(ManagerMismatch, match="the attribute `_enabled` of the `with` item `ctx`"):
        _entries(torch.autocast("cpu", dtype=torch.bfloat16, enabled=False), turned_on)
    with pytest.raises(ManagerMismatch, match="`fast_dtype`"):
        _entries(torch.autocast("cpu", dtype=torch.bfloat16), lambda ctx: setattr(ctx, "fast_dtype", torch.float16))
    with pytest.raises(ManagerMismatch, match="`fast_dtype`"):
        _entries(torch.autocast("cpu", dtype=torch.bfloat16), lambda ctx: delattr(ctx, "fast_dtype"))
    assert not torch.is_autocast_enabled("cpu")  # the mismatch stops before it enters
    with pytest.raises(ManagerMismatch, match="`__class__`"):
        _entries(torch.no_grad(), lambda ctx: setattr(ctx, "__class__", torch.enable_grad))


def test_a_manager_of_any_other_class_stops_its_first_entry():
    import contextlib

    import torch

    from staticexec.emit.reentry import ManagerMismatch

    class Counting:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Autocast(torch.autocast):  # a subclass may enter otherwise
        pass

    for manager in (Counting(), contextlib.ExitStack(),
                    Autocast("cpu", dtype=torch.bfloat16), torch.random.fork_rng()):
        with pytest.raises(ManagerMismatch, match=f"is of class {type(manager).__qualname__}, and each subgraph"):
            _entries(manager)


def test_with_the_checks_off_a_manager_is_entered_unchecked():
    import torch

    from staticexec.emit.run import checks_off

    with checks_off():
        state = _entries(torch.autocast("cpu", dtype=torch.bfloat16), lambda ctx: setattr(ctx, "_enabled", False))
    assert state.after is None
