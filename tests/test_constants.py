"""The values a chain keeps out of the pipeline's cache (staticexec/emit/constants.py): learned where they are
bound at its first run, left out while they hold that value, bound again by the subgraphs that read them; any
other value goes through the cache, batch by batch, as before.

    .venv/bin/pytest -q tests/test_constants.py
"""

from __future__ import annotations

import contextvars

import pytest
import torch

from staticexec.emit.run import ContractError, run_chain, tripwires_off
from staticexec.emit.runtime import WrapperScope
from test_stage_cut import GLOBALS, OUTPUT, chain, steps

T0, T1 = ("h = layer(h)", "layers.0"), ("h = layer(h)", "layers.1")
# `scale` is bound in the first subgraph and read by both later ones; `h` is bound by every subgraph
PROGRAM = steps("h = x * 2", "scale = None if flag else x[0]", T0, "h = h if scale is None else h * scale", T1,
                f"{OUTPUT} = h if scale is None else h + scale")


def pipeline(model, subgraphs: list, batches: list[dict]) -> list:
    """The chain as llm-compressor's sequential pipeline runs it: each subgraph over every batch before the next,
    its cache's fetch (the names it holds among a subgraph's inputs), update and delete (a missing name an
    error), and nothing kept or deleted after the last subgraph."""
    cache = [dict(batch) for batch in batches]
    last = []
    for index, sg in enumerate(subgraphs):
        for held in cache:
            out = sg.forward(model, **{k: v for k, v in held.items() if k in sg.input_names})
            if index < len(subgraphs) - 1:
                held.update(out)
                for name in sg.consumed_names:
                    del held[name]
            else:
                last.append(out[OUTPUT])
    return last


def whole(x: torch.Tensor, flag: bool) -> torch.Tensor:
    """PROGRAM as one function, as the model's forward would run it."""
    layer = GLOBALS["layer"]
    scale = None if flag else x[0]
    h = layer(x * 2)
    h = layer(h if scale is None else h * scale)
    return h if scale is None else h + scale


def test_a_value_that_stays_the_first_runs_constant_stays_out_of_the_cache():
    first, second, third = chain(PROGRAM, ["x", "flag"], globals_=GLOBALS)
    assert first.omits == {"scale"} and {"scale"} <= second.constant_inputs and "scale" not in second.omits
    with tripwires_off():
        out = first.forward(None, x=torch.ones(2), flag=True)
        assert "scale" not in out and "h" in out  # None at the first run: the chain's constant from now on
        given = {k: v for k, v in out.items() if k in second.input_names}
        assert second.bound_inputs(given)["scale"] is None and "h" in second.forward(None, **given)


def test_each_batch_is_carried_exactly_when_its_value_is_not_the_constant():
    sgs = chain(PROGRAM, ["x", "flag"], globals_=GLOBALS)
    batches = [{"x": torch.full((2,), float(i + 1)), "flag": flag} for i, flag in enumerate((True, False, True, False))]
    expected = [whole(b["x"], b["flag"]) for b in batches]
    with tripwires_off():
        got = pipeline(None, sgs, batches)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert sgs[0].constants.values["scale"] is None


def test_a_first_run_whose_value_is_no_constant_keeps_the_name_in_the_cache():
    sgs = chain(PROGRAM, ["x", "flag"], globals_=GLOBALS)
    with tripwires_off():
        first = sgs[0].forward(None, x=torch.ones(2), flag=False)  # a tensor at the first run
        again = sgs[0].forward(None, x=torch.ones(2), flag=True)  # None later: still carried
    assert "scale" in first and again["scale"] is None


def test_the_strict_runner_and_a_missing_name_without_a_constant():
    sgs = chain(PROGRAM, ["x", "flag"], globals_=GLOBALS)
    with tripwires_off():
        with pytest.raises(ContractError, match=r"missing inputs \['scale'\]"):
            sgs[1].forward(None, h=torch.ones(2))  # the first subgraph never ran: no constant yet
        got = run_chain(None, sgs, {"x": torch.ones(2), "flag": True}, twice=True)[OUTPUT]
    assert torch.equal(got, whole(torch.ones(2), True))


def test_names_bound_twice_or_given_by_the_caller_are_never_left_out():
    program = steps("h = x * 2", "n = None", T0, "n = 0 if n is None else n", T1, f"{OUTPUT} = h + (n or 0)")
    first, second, third = chain(program, ["x", "flag"], globals_=GLOBALS)
    assert not first.omits and not second.omits and not third.constant_inputs  # `n` is bound twice
    given = steps("flag = None", T0, f"{OUTPUT} = h if flag is None else -h")
    head, _ = chain(given, ["h", "flag"], globals_=GLOBALS)
    assert "flag" not in head.omits  # the cache holds the caller's value under that name


def test_a_keyword_parameter_of_the_models_forward_is_never_left_out():
    from staticexec.emit.cut import build_subgraphs

    # a batch may hold `scale` though the sample did not: the cache would keep it, and readers would take it
    first, _, _ = build_subgraphs(PROGRAM, ["x", "flag"], OUTPUT, dict(GLOBALS), "test", keywords=("x", "flag", "scale"))
    assert not first.omits


def test_a_name_consumed_before_the_last_subgraph_is_never_left_out():
    program = steps("h = x * 2", "extra = None", T0, "h = h if extra is None else h + extra", T1, f"{OUTPUT} = h")
    first, second, _ = chain(program, ["x"], globals_=GLOBALS)
    assert "extra" in second.consumed_names and not first.omits  # the pipeline would delete it: it must be there


COLLECTOR = contextvars.ContextVar("collector", default=None)


def test_a_scope_that_publishes_an_empty_collector_is_a_constant_given_afresh():
    program = steps("h = x * 2", "scope = _scope()", T0, "h = h + len(scope.context)", T1,
                    f"{OUTPUT} = h + len(scope.context)")
    made = []

    def _scope():
        made.append(WrapperScope({COLLECTOR: {}}, []))
        return made[-1]

    first, second, third = chain(program, ["x"], globals_={**GLOBALS, "_scope": _scope})
    with tripwires_off():
        out = first.forward(None, x=torch.ones(2))
        assert "scope" not in out
        given = second.bound_inputs({k: v for k, v in out.items() if k in second.input_names})
        assert given["scope"] is not made[0] and given["scope"].context == {COLLECTOR: {}}
        assert given["scope"].context[COLLECTOR] is not made[0].context[COLLECTOR]  # a new collector each run


def test_once_learned_the_constants_are_the_codes_keyword_defaults_and_a_shared_scope_is_emptied_again():
    from staticexec.emit import runtime
    from staticexec.emit.cut import Step

    def step(code, target=None, scoped=False):
        return Step(code=code, origin="model.py:1", target=target,
                    scopes=("_sx.wrapper_scope(scope)",) if scoped else ())

    # the middle subgraph's code adds to the collector its scope publishes when `h` is large
    program = [step("h = x * 2"), step("scope = _scope()"), step("extra = None"),
               step("h = layer(h)", "layers.0", True),
               step("if float(h.sum()) > 100:\n    COLLECTOR.get().setdefault('seen', []).append(1)\n", scoped=True),
               step("h = layer(h)", "layers.1", True),
               step(f"{OUTPUT} = (h, dict(scope.context[COLLECTOR]), extra)")]
    first, second, third = chain(program, ["x"], globals_={
        **GLOBALS, "_sx": runtime, "COLLECTOR": COLLECTOR,
        "_scope": lambda: WrapperScope({COLLECTOR: {}}, [])})
    with tripwires_off():
        small = run_chain(None, [first, second, third], {"x": torch.ones(2)}, twice=True)[OUTPUT]
        assert "scope" in second.input_names and second._taken == second.input_names - {"scope"}
        large = run_chain(None, [first, second, third], {"x": torch.full((2,), 100.0)}, twice=True)[OUTPUT]
        again = run_chain(None, [first, second, third], {"x": torch.ones(2)}, twice=True)[OUTPUT]
    assert small[1] == {} and large[1] == {"seen": [1]} and again[1] == {}  # what one run added moved on with it
    assert small[2] is None and second.bound_inputs({"h": torch.ones(2)})["scope"].context == {COLLECTOR: {}}
