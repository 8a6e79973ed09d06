"""Data-driven tests: each fixture in fixtures/patterns exercises one pattern.

Its expectations are written inline (`# expect: target`, ...), and its
golden plan lies beside it (`<name>.plan.json`; regenerate with
STATICEXEC_UPDATE_GOLDEN=1). Every non-refused fixture is also run: the
subgraphs must reproduce the model's own output exactly.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from patterns import fixtures, opaque_lines, plan_statements
from staticexec.api import analyse
from staticexec.drift import VERSION_FIELDS  # the releases and the seal: they move with the environment
from staticexec.emit.emitter import Emitter
from staticexec.messages import Refused
from staticexec.check.verify import _CallLog, chain_problem

FIXTURES = fixtures()
IDS = [f.name for f in FIXTURES]


def test_there_are_enough_fixtures():
    assert len(FIXTURES) >= 15
    assert sum(1 for f in FIXTURES if f.refusal) >= 2


def _plan_or_refusal(fx):
    try:
        return analyse(fx.root_ref, fx.targets, architecture=fx.root), None
    except Refused as exc:
        return None, exc


@pytest.mark.parametrize("fx", [f for f in FIXTURES if not f.refusal], ids=[f.name for f in FIXTURES if not f.refusal])
def test_statement_classes_match_inline_expectations(fx):
    plan, refused = _plan_or_refusal(fx)
    assert refused is None, str(refused)
    got = plan_statements(plan, fx.module)
    opaque = opaque_lines(plan, fx.module)
    for line, (kind, cond) in sorted(fx.expect.items()):
        if kind == "opaque":
            assert line not in got, f"line {line}: expected opaque, plan says {got.get(line)}"
            assert any(a <= line <= b for a, b in opaque), f"line {line}: not in any analysed opaque span"
            continue
        assert got.get(line, (None,))[0] == kind, f"line {line}: expected {kind}, plan says {got.get(line)}"
        if cond:
            assert got[line][1] == cond, f"line {line}: expected condition {cond}, plan says {got[line][1]}"
    unmarked = {line: k for line, k in got.items() if line not in fx.expect}
    assert not unmarked, f"reaching statements without an expectation: {unmarked}"


@pytest.mark.parametrize("fx", [f for f in FIXTURES if f.refusal], ids=[f.name for f in FIXTURES if f.refusal])
def test_refusals_name_the_line_and_kind(fx):
    line, kind = fx.refusal
    plan, refused = _plan_or_refusal(fx)
    if refused is None:
        model, sample = fx.load().build()
        with pytest.raises(Refused) as info:
            Emitter(plan, model, sample).emit()
        refused = info.value
    kinds = {(m.line, m.kind) for m in refused.messages}
    assert (line, kind) in kinds, f"expected {kind} at line {line}, got {kinds}"
    assert all(m.path.endswith(os.path.basename(fx.path)) for m in refused.messages)


@pytest.mark.parametrize("fx", [f for f in FIXTURES if not f.refusal], ids=[f.name for f in FIXTURES if not f.refusal])
def test_subgraphs_reproduce_the_forward(fx):
    plan, refused = _plan_or_refusal(fx)
    assert refused is None, str(refused)
    model, sample = fx.load().build()
    model.eval()
    log = _CallLog(model, set(fx.targets))
    try:
        with torch.no_grad():
            expected = model(**sample)
        own = list(log.calls)
        subgraphs = Emitter(plan, model, sample).emit()
        assert chain_problem(model, subgraphs, sample, log, own, expected) == ""
    finally:
        log.close()


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
def test_golden_plan(fx):
    plan, refused = _plan_or_refusal(fx)
    if refused is not None:
        text = "".join(f"{m}\n" for m in refused.messages)
        golden = fx.path[:-3] + ".refusal.txt"
    else:
        text = plan.to_json()
        golden = fx.path[:-3] + ".plan.json"
    if os.environ.get("STATICEXEC_UPDATE_GOLDEN") and not (
            os.path.exists(golden) and _without_versions(_read(golden), golden) == _without_versions(text, golden)):
        with open(golden, "w", encoding="utf-8") as handle:
            handle.write(text)
        pytest.fail(f"{os.path.basename(golden)} written afresh: review its diff, then run again without "
                    "STATICEXEC_UPDATE_GOLDEN")
    assert os.path.exists(golden), f"no golden file {os.path.basename(golden)}; run with STATICEXEC_UPDATE_GOLDEN=1"
    assert _without_versions(_read(golden), golden) == _without_versions(text, golden)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _without_versions(text: str, path: str) -> str:
    """A golden plan as the comparison sees it: the releases it was made with set aside.

    The fixtures are self-contained sources, so their plans are the same on
    every transformers release; only the recorded version strings move.
    """
    if not path.endswith(".json"):
        return text
    doc = json.loads(text)
    for key in VERSION_FIELDS:
        doc.pop(key, None)
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def test_a_branch_decided_from_a_shape_is_checked_when_the_subgraphs_run():
    """input_shape_condition: emitted for one image, run on none: the chain stops instead of skipping the call."""
    from staticexec.emit.runtime import BranchMismatch
    from staticexec.emit.run import run_subgraphs

    fx = next(f for f in FIXTURES if f.name == "input_shape_condition")
    plan, refused = _plan_or_refusal(fx)
    assert refused is None, str(refused)
    model, sample = fx.load().build()
    subgraphs = Emitter(plan, model, sample).emit()
    other = dict(sample, images=torch.randn(3, 5, 8))
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, subgraphs, other), model(**other))
        with pytest.raises(BranchMismatch, match=r"input_shape_condition.py:33: `images is not None and images.size\(0\) > 0`"):
            run_subgraphs(model, subgraphs, dict(sample, images=torch.randn(0, 5, 8)))


def test_a_branch_decided_from_an_input_is_checked_when_the_subgraphs_run():
    """input_presence_condition: emitted with `extra=None`, run with a tensor: BranchMismatch, not a skipped call;
    run without the key the sample had: a ContractError, not a silent default."""
    from staticexec.emit.runtime import BranchMismatch
    from staticexec.emit.run import ContractError, run_subgraphs

    fx = next(f for f in FIXTURES if f.name == "input_presence_condition")
    plan, refused = _plan_or_refusal(fx)
    assert refused is None, str(refused)
    model, sample = fx.load().build()
    sample = dict(sample, extra=None)
    subgraphs = Emitter(plan, model, sample).emit()
    with torch.no_grad():
        assert torch.equal(run_subgraphs(model, subgraphs, sample), model(**sample))
        with pytest.raises(BranchMismatch, match=r"input_presence_condition.py:\d+: `extra is not None`"):
            run_subgraphs(model, subgraphs, dict(sample, extra=torch.randn(2, 5, 8)))
        with pytest.raises(ContractError, match="extra"):
            run_subgraphs(model, subgraphs, {"x": sample["x"]})
