"""The release matrix: its fixed cases, and the report written from per-release results."""

from __future__ import annotations

import json

import test_architectures
from staticexec import matrix


def test_the_cases_are_the_tested_groups_and_a_fixed_sample():
    cases = matrix.cases()
    assert len(cases) == 14 + 12 + 4 + 40
    assert [c.arch for c in cases if c.group == "foundation"] == test_architectures.ARCHITECTURES
    vlm = [(c.arch, c.sample, set(c.targets)) for c in cases if c.group == "vision-and-text"]
    assert vlm == [(a, "multimodal", set(v + t)) for a, v, t in test_architectures.VISION_AND_TEXT]
    assert {c.arch for c in cases if c.group == "encoder-decoder"} == {
        "BartForConditionalGeneration", "T5ForConditionalGeneration", "WhisperForConditionalGeneration",
        "Speech2TextForConditionalGeneration"}
    sample = [c.arch for c in cases if c.group == "sample"]
    assert len(set(sample)) == 40 and not set(sample) & {c.arch for c in cases if c.group != "sample"}
    for case in cases:
        assert matrix.Case.parse(case.spec) == matrix.Case("", case.arch, case.sample, case.targets)


def test_the_releases_are_the_newest_patch_of_each_minor():
    minors = [tuple(map(int, r.split(".")[:2])) for r in matrix.RELEASES]
    assert minors == [(5, m) for m in range(15, 25)]


def test_the_report_counts_each_release_and_names_every_not_ok(tmp_path):
    cases = matrix.cases()
    rows = {c.spec: {"status": "ok", "reason": ""} for c in cases}
    rows[cases[0].spec] = {"status": "mismatch", "reason": "subgraphs raised TypeError: boom"}
    rows[cases[-1].spec] = {"status": "refused", "reason": "x.py:3: no call path"}
    rows[cases[-2].spec] = {"status": "absent", "reason": "unknown architecture"}
    data = {"transformers": "5.17.0", "analysis": matrix.analysis_key(), "rows": rows, "complete": True}
    (tmp_path / "transformers-5.17.0.json").write_text(json.dumps(data))
    report = tmp_path / "compatibility.md"
    matrix.write_report(str(tmp_path), str(report))
    text = report.read_text()
    assert "| 5.17.0 | 67 | 1 | 1 | 1 | 13/14 | 12/12 | 4/4 | 38/40 |" in text
    assert "| 5.24.0 | not run |" in text
    assert "- **not ok** (mismatch), 1 case: subgraphs raised TypeError: boom" in text
    assert f"  - {cases[0].arch} [foundation]" in text
    assert "- refused, 1 case: x.py:3: no call path" in text
