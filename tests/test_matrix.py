"""The release matrix: its fixed cases, and the report written from per-release results."""

from __future__ import annotations

import json
import os

import test_architectures
from staticexec.check import matrix


def test_the_cases_are_the_tested_groups_and_a_fixed_sample():
    cases = matrix.cases()
    assert len(cases) == 14 + 12 + 4 + 40 + 12 + 14
    assert [c.arch for c in cases if c.group == "foundation"] == test_architectures.ARCHITECTURES
    vlm = [(c.arch, c.sample, set(c.targets)) for c in cases if c.group == "vision-and-text"]
    assert vlm == [(a, "multimodal", set(v + t)) for a, v, t in test_architectures.VISION_AND_TEXT]
    assert {c.arch for c in cases if c.group == "encoder-decoder"} == {
        "BartForConditionalGeneration", "T5ForConditionalGeneration", "WhisperForConditionalGeneration",
        "Speech2TextForConditionalGeneration"}
    sample = [c.arch for c in cases if c.group == "sample"]
    assert len(set(sample)) == 40 and not set(sample) & {c.arch for c in cases if c.group != "sample"}
    processed = [c for c in cases if c.group == "processor-samples"]
    assert len({c.arch for c in processed}) == 12 and all(c.sample == "multimodal" and not c.targets for c in processed)
    below = [(c.arch, c.targets) for c in cases if c.group == "below-the-layer"]
    assert [a for a, _ in below] == test_architectures.ARCHITECTURES
    for arch, targets in below:  # as test_verify_below_the_layer chooses them: every Linear, GPT-2's Conv1D too
        assert set(targets) == ({"Linear", "Conv1D"} if arch == "GPT2LMHeadModel" else {"Linear"})
    for case in cases:
        assert matrix.Case.parse(case.spec) == matrix.Case("", case.arch, case.sample, case.targets)


def test_the_releases_are_the_newest_patch_of_each_minor():
    minors = [tuple(map(int, r.split(".")[:2])) for r in matrix.RELEASES]
    assert minors == [(5, m) for m in range(15, 26)]


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
    assert "| 5.17.0 | 93 | 1 | 1 | 1 | 13/14 | 12/12 | 4/4 | 40/40 | 12/12 | 12/14 |" in text
    assert "| 5.25.0 | not run |" in text
    assert "- **not ok** (mismatch), 1 case: subgraphs raised TypeError: boom" in text
    assert f"  - {cases[0].arch} [foundation]" in text
    assert "- refused, 1 case: x.py:3: no call path" in text


def test_the_report_is_written_from_the_committed_results_of_every_release(tmp_path):
    """One release run again, the others from their committed files; a file made by older code is marked."""
    rows = {c.spec: {"status": "ok", "reason": ""} for c in matrix.cases()}
    current = {"transformers": "5.20.2", "analysis": matrix.analysis_key(), "rows": rows}
    older = {"transformers": "5.17.0", "analysis": "0123456789ab", "rows": rows}
    matrix.write_results(matrix.results_path(str(tmp_path), "5.20.2"), current)
    matrix.write_results(matrix.results_path(str(tmp_path), "5.17.0"), older)
    report = tmp_path / "compatibility.md"
    matrix.write_report(str(tmp_path), str(report))
    text = report.read_text()
    assert f"| 5.20.2 | 96 | 0 | 0 | 0 | 14/14 | 12/12 | 4/4 | 40/40 | 12/12 | 14/14 | `{matrix.analysis_key()}` |" in text
    assert "| 5.17.0 | 96 | 0 | 0 | 0 | 14/14 | 12/12 | 4/4 | 40/40 | 12/12 | 14/14 | `0123456789ab` (older code) |" in text
    assert "| 5.25.0 | not run |" in text
    assert matrix.complete(current) and not matrix.complete(older)
    assert not matrix.complete({**current, "rows": dict(list(rows.items())[1:])})


def test_committed_results_are_sorted_and_hold_no_timings(tmp_path):
    path = matrix.results_path(str(tmp_path), "5.20.2")
    row = {"status": "ok", "reason": "", "subgraphs": 3, "targets_called": 2, "calls": {"B": 1, "A": 1}}
    data = {"transformers": "5.20.2", "analysis": "x", "torch": "2.13.0", "rows": {"b|text|": row, "a|text|": row}}
    matrix.write_results(path, data)
    text = open(path, encoding="utf-8").read()
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"
    assert text.index('"a|text|"') < text.index('"b|text|"')
    assert "seconds" not in matrix.ROW_FIELDS


def test_reasons_name_no_folder_of_this_machine():
    import transformers

    packages = os.path.dirname(os.path.dirname(os.path.abspath(transformers.__file__)))
    reason = f"RuntimeError: {packages}/transformers/models/x.py:3: <object at 0x7f3a2b1c>"
    assert matrix.portable(reason) == "RuntimeError: transformers/models/x.py:3: <object>"


def test_a_new_release_environment_is_built_from_the_checkout():
    """The environment of a release not built yet takes staticexec's pins and package from the checkout
    that holds the package (its constraints.txt and pyproject.toml), whatever the working folder."""
    from staticexec.check import matrix

    root = matrix._checkout()
    assert os.path.isfile(os.path.join(root, "constraints.txt"))
    assert os.path.isfile(os.path.join(root, "pyproject.toml"))
    assert "jedi" in {pin.split("==")[0].lower() for pin in matrix._own_pins(root)}
