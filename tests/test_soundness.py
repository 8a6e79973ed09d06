"""The soundness corpus (fixtures/soundness): every model is ok, exactly, or cleanly refused.

A silent wrong split (the chain runs, but its outputs or target calls differ from the model's own)
and a traceback instead of a staticexec error are failures whatever the expected verdict says.
A `# gap:` line marks a known shortfall (an expected failure, strict: it must go once fixed).
Run `python tests/soundness_report.py` for a table of every outcome.
"""

from __future__ import annotations

import pytest

from soundness import cases, judge

CASES = cases()


def test_the_corpus_is_large_and_covers_both_verdicts():
    assert len(CASES) >= 80
    assert sum(c.verdict == "ok" for c in CASES) >= 30
    assert sum(c.verdict == "refused" for c in CASES) >= 30


def _param(case):
    marks = [pytest.mark.xfail(reason=case.gap, strict=True)] if case.gap else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_soundness(case):
    outcome = judge(case)
    assert outcome.status not in ("silent-wrong", "traceback"), f"{case.name}: {outcome}"
    assert outcome.matches(case), f"{case.name}: expected {case.expected}, got {outcome}"
