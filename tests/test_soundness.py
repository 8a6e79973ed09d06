"""The soundness corpus (fixtures/soundness): every model is ok, exactly, cleanly refused, or caught when it runs.

A silent wrong split (the chain runs, but its outputs or target calls differ from the model's own)
and a traceback instead of a staticexec error are failures whatever the expected verdict says.
A `# gap:` line marks a known shortfall (an expected failure, strict: it must go once fixed).
Run `python tests/soundness_report.py` for a table of every outcome.
"""

from __future__ import annotations

import pytest

from soundness import Outcome, cases, differs, judge, parse

CASES = cases()


def test_the_corpus_is_large_and_covers_every_verdict():
    assert len(CASES) >= 200
    assert sum(c.verdict == "ok" for c in CASES) >= 80
    assert sum(c.verdict == "refused" for c in CASES) >= 70
    assert sum(c.verdict == "caught" for c in CASES) >= 25
    assert sum(getattr(c.load(), "after_emit", None) is not None for c in CASES) >= 15
    assert sum(getattr(c.load(), "batches", None) is not None for c in CASES) >= 5


def test_every_refusal_names_its_kind_and_its_line():
    for case in CASES:
        if case.verdict == "refused":
            assert case.kind and "*" not in case.kind and case.line, case.name
            with open(case.path, encoding="utf-8") as handle:
                assert case.line <= len(handle.read().splitlines()), case.name


_HEAD = "# staticexec: root=Model targets=Layer\n"


@pytest.mark.parametrize("verdict", ["refused *", "refused mutated-state", "caught", "usage", "ok line=3"])
def test_a_verdict_without_what_it_needs_is_an_error(verdict):
    with pytest.raises(ValueError):
        parse("bad", _HEAD + f"# verdict: {verdict}\n")


def test_the_refused_line_comes_from_the_header_or_the_marker():
    by_header = parse("a", _HEAD + "# verdict: refused mutated-state line=7\n")
    by_marker = parse("b", _HEAD + "# verdict: refused mutated-state\n\nx = 1\ny = 2  # refused-here\n")
    assert (by_header.line, by_marker.line) == (7, 5)
    with pytest.raises(ValueError):
        parse("c", _HEAD + "# verdict: refused mutated-state line=5\ny = 2  # refused-here\n")


def test_a_refusal_matches_only_at_its_kind_and_line():
    case = parse("a", _HEAD + "# verdict: refused mutated-state line=7\n")
    assert Outcome("refused", {"mutated-state"}, places={("mutated-state", 7)}).matches(case)
    assert not Outcome("refused", {"mutated-state"}, places={("mutated-state", 6)}).matches(case)
    assert not Outcome("refused", {"no-call-path"}, places={("no-call-path", 7)}).matches(case)
    assert not Outcome("caught", {"LoopMismatch"}).matches(case)


def test_caught_and_mismatch_verdicts():
    caught = parse("a", _HEAD + "# verdict: caught ReplacedForward|CodeMismatch\n")
    assert Outcome("caught", {"CodeMismatch"}).matches(caught)
    assert not Outcome("caught", {"TargetMismatch"}).matches(caught)
    assert not Outcome("ok").matches(caught)
    mismatch = parse("b", _HEAD + "# verdict: mismatch LoopMismatch|undecided-loop\nfor x in y:  # refused-here\n")
    assert Outcome("caught", {"LoopMismatch"}).matches(mismatch)
    assert Outcome("refused", {"undecided-loop"}, places={("undecided-loop", 3)}).matches(mismatch)
    assert not Outcome("refused", {"undecided-loop"}, places={("undecided-loop", 4)}).matches(mismatch)
    assert not Outcome("refused", {"mutated-state"}, places={("mutated-state", 3)}).matches(mismatch)
    assert not Outcome("silent-wrong").matches(mismatch)
    assert not Outcome("ok").matches(parse("c", _HEAD + "# verdict: mismatch\n"))


def test_outputs_compare_every_value():
    import torch

    t = torch.ones(2)
    assert differs((t, {"a": [t, 3]}), (t.clone(), {"a": [t.clone(), 3]})) == ""
    assert differs((t, {"a": [t, 3]}), (t, {"a": [t, 4]}))
    assert differs({"a": t}, {"a": t * 2})
    assert differs({"a": t}, {"b": t})
    assert differs(t, t.double())
    assert differs([t], (t,))


def _param(case):
    marks = [pytest.mark.xfail(reason=case.gap, strict=True)] if case.gap else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_soundness(case):
    outcome = judge(case)
    assert outcome.status not in ("silent-wrong", "traceback"), f"{case.name}: {outcome}"
    assert outcome.matches(case), f"{case.name}: expected {case.expected}, got {outcome}"


def test_a_conditional_expression_decided_from_an_input_is_checked_when_the_subgraphs_run():
    """ifexp_input_in_helper_not_taken: emitted with `extra=None` (the inner layers skipped), run with
    a tensor: BranchMismatch at the expression's line, not a chain that skips the layers."""
    import torch

    from staticexec.api import subgraphs
    from staticexec.emit.runtime import BranchMismatch
    from staticexec.emit.run import run_subgraphs

    case = next(c for c in CASES if c.name == "ifexp_input_in_helper_not_taken")
    model, sample = case.load().build()
    chain = subgraphs(model, sample, case.targets)
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
        with pytest.raises(BranchMismatch, match=r"ifexp_input_in_helper_not_taken.py:\d+: `extra is not None`"):
            run_subgraphs(model, chain, dict(sample, extra=torch.ones(1)))


def test_an_and_operand_decided_from_an_input_is_checked_when_the_subgraphs_run():
    """boolop_input_condition_taken: emitted with `extra` given (the side layers cut), run with None: BranchMismatch."""
    import torch

    from staticexec.api import subgraphs
    from staticexec.emit.runtime import BranchMismatch
    from staticexec.emit.run import run_subgraphs

    case = next(c for c in CASES if c.name == "boolop_input_condition_taken")
    model, sample = case.load().build()
    chain = subgraphs(model, sample, case.targets)
    assert len(chain) == 4
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
        with pytest.raises(BranchMismatch, match=r"boolop_input_condition_taken.py:\d+: `extra is not None`"):
            run_subgraphs(model, chain, dict(sample, extra=None))


def test_a_branch_read_off_the_models_own_forward_is_checked_when_the_subgraphs_run():
    """observed_cache_condition: the cross layers' skip, read off the model's forward with `cross=None`,
    is re-checked: a batch with `cross` given raises BranchMismatch instead of skipping them."""
    import torch

    from staticexec.api import subgraphs
    from staticexec.emit.runtime import BranchMismatch
    from staticexec.emit.run import run_subgraphs

    case = next(c for c in CASES if c.name == "observed_cache_condition")
    model, sample = case.load().build()
    chain = subgraphs(model, sample, case.targets)
    assert [sg.targets for sg in chain if sg.targets] == [["layers.0"], ["layers.2"]]
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
        with pytest.raises(BranchMismatch, match=r"observed_cache_condition.py:\d+: `is_cross and cross is None and empty`"):
            run_subgraphs(model, chain, dict(sample, cross=torch.ones(8)))


def test_a_batch_with_a_key_the_sample_did_not_have_is_refused_by_the_runner():
    """ifexp_input_condition, emitted for a sample without `use_layers`: a batch that sets it would run
    the chain as if it were not given (the layers called); the runner stops it, as a ContractError."""
    import torch

    from staticexec.api import subgraphs
    from staticexec.emit.run import ContractError, run_subgraphs

    case = next(c for c in CASES if c.name == "ifexp_input_condition")
    model, sample = case.load().build()
    chain = subgraphs(model, sample, case.targets)
    with torch.no_grad(), pytest.raises(ContractError, match=r"the inputs hold \['use_layers'\], which no subgraph takes"):
        run_subgraphs(model, chain, dict(sample, use_layers=False))


def test_a_plan_from_source_alone_builds_the_class_auto_model_builds():
    """ok_auto_model_from_derived_config, planned as `staticexec plan` and `verify` plan it: from the source and
    the config, nothing of the instance observed. The encoder's config carries the tower's model_type ("gpt2");
    AutoModel builds the class its config's class maps to (LlamaModel), so `self.tower.encode(x)` reaches the
    targets through `Tower.encode`, and the subgraphs split there exactly."""
    import torch

    from staticexec.api import analyse
    from staticexec.analysis.source import ClassRef
    from staticexec.emit.emitter import Emitter
    from staticexec.emit.run import run_subgraphs

    case = next(c for c in CASES if c.name == "ok_auto_model_from_derived_config")
    model, sample = case.load().build()
    plan = analyse(ClassRef(case.module, "Model"), case.targets, config=model.config, architecture="Model")
    assert f"{case.module}:Tower.encode" in plan.functions
    assert not any("GPT2" in name for name in plan.not_analysed), plan.not_analysed
    chain = Emitter(plan, model, sample).emit()
    assert [sg.targets for sg in chain] == [[], ["tower.encoder.layers.0"], ["tower.encoder.layers.1"]]
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, chain, sample), model(**sample))
