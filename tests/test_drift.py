"""Telling an upgrade apart from a change: small edits of one golden plan, judged on structure."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from staticexec import drift, plans

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "fixtures", "patterns", "causal_lm_wrapper.plan.json")


def _plan() -> dict:
    with open(GOLDEN, encoding="utf-8") as handle:
        return json.load(handle)


def _statements(doc: dict):
    def walk(statements):
        for s in statements:
            yield s
            for block in ("body", "orelse"):
                yield from walk(s.get(block, []))

    for entry in doc["functions"].values():
        yield from walk(entry["statements"])


def _rename(doc: dict, old: str, new: str) -> dict:
    """The plan as a release that renamed `old` to `new` everywhere would make it."""
    text = json.dumps(doc)
    return json.loads(re.sub(rf"\b{old}\b", new, text))


def _shift(doc: dict, by: int) -> dict:
    doc = copy.deepcopy(doc)
    for entry in doc["functions"].values():
        entry["lines"] = [n + by for n in entry["lines"]]
        entry["source_hash"] = "e" * 64
        entry["chain"] = [re.sub(r":(\d+) ", lambda m: f":{int(m[1]) + by} ", c) for c in entry["chain"]]
    for s in _statements(doc):
        s["lines"] = [n + by for n in s["lines"]]
        if "call" in s:
            s["call"]["line"] += by
    return doc


def test_another_release_string_alone_is_unchanged():
    doc = _plan()
    other = dict(doc, transformers="9.9.9")
    assert drift.compare(doc, other).kind == "unchanged"


def test_moved_lines_and_hashes_are_stale():
    doc = _plan()
    assert drift.compare(doc, _shift(doc, 12)).kind == "stale"


def test_an_opaque_statement_more_is_stale():
    doc = _plan()
    other = copy.deepcopy(doc)
    first = next(iter(other["functions"].values()))
    first["statements"].insert(0, {"count": 2, "kind": "opaque", "lines": [1, 2]})
    assert drift.compare(doc, other).kind == "stale"


def test_a_statement_class_that_moved_is_changed():
    doc = _plan()
    other = copy.deepcopy(doc)
    target = next(s for s in _statements(other) if s["kind"] == "target")
    target["kind"] = "ancestor"
    verdict = drift.compare(doc, other)
    assert verdict.kind == "changed"
    shown = drift.diff(doc, other)
    assert any(re.match(r"\s*-\s+target ", line) for line in shown)
    assert any(re.match(r"\s*\+\s+ancestor ", line) for line in shown)


def test_a_changed_plan_whose_statements_did_not_move_names_the_fields_that_did():
    doc = _plan()
    other = copy.deepcopy(doc)
    other["schema"], other["architecture"] = 99, "EditedForCausalLM"
    assert drift.compare(doc, other).kind == "changed"
    shown = drift.diff(doc, other)
    assert f"  schema: {doc['schema']!r} -> 99" in shown
    assert f"  architecture: {doc['architecture']!r} -> 'EditedForCausalLM'" in shown and len(shown) == 2


def test_a_condition_class_that_moved_is_changed():
    doc = _plan()
    other = copy.deepcopy(doc)
    for s in _statements(other):
        if "iter" in s:
            s["iter"]["class"] = "dynamic"
    assert drift.compare(doc, other).kind == "changed"


def test_a_different_call_chain_is_changed():
    doc = _plan()
    other = copy.deepcopy(doc)
    entry = next(iter(other["functions"].values()))
    entry["chain"] = entry["chain"][:-1] + [entry["chain"][-1].replace(" -> ", " -> Other")]
    assert drift.compare(doc, other).kind == "changed"


def test_a_difference_beyond_the_old_90_character_cut_is_seen():
    doc = _plan()
    long_call = "layer(h, " + ", ".join(f"argument_{i}=argument_{i}" for i in range(5)) + ", mask=mask)"
    assert 90 < len(long_call) < 157
    for s in _statements(doc):
        if s["kind"] == "target":
            s["call"]["code"] = long_call
    other = copy.deepcopy(doc)
    for s in _statements(other):
        if s["kind"] == "target":
            s["call"]["code"] = long_call.replace("mask=mask)", "mask=None)")
    assert drift.compare(doc, other).kind == "changed"


def test_cut_calls_compare_on_what_both_show():
    a = drift.Code.of("f(" + "x, " * 60 + "past_key_values=past_key_values, y=y, z=...")
    b = drift.Code.of("f(" + "x, " * 60 + "cache=cache, y=y, z=z, w=w, v=v, u=u, t=t...")
    assert a.cut and b.cut
    assert drift.equal(a, b, {"past_key_values": "cache"})
    assert not drift.equal(a, b)


def test_a_name_renamed_everywhere_is_renamed_not_changed():
    doc = _plan()
    other = _shift(_rename(doc, "mask", "attention_mask"), 3)
    verdict = drift.compare(doc, other)
    assert verdict.kind == "renamed"
    assert verdict.renames == {"mask": "attention_mask"}


def test_a_rename_with_a_real_change_shows_only_the_change():
    doc = _plan()
    other = _rename(doc, "mask", "attention_mask")
    target = next(s for s in _statements(other) if s["kind"] == "target")
    target["kind"] = "ancestor"
    verdict = drift.compare(doc, other)
    assert verdict.kind == "changed" and verdict.renames == {"mask": "attention_mask"}
    shown = [line for line in drift.diff(doc, other, verdict.renames) if line.strip()[:1] in "-+"]
    assert shown and all("target" in line or "ancestor" in line for line in shown)


def _folders(tmp_path, pairs: dict[str, tuple[dict, dict]]):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    for arch, (a, b) in pairs.items():
        (old / f"{arch}.json").write_text(json.dumps(a))
        (new / f"{arch}.json").write_text(json.dumps(b))
    index = {"transformers": "1.0", "architectures": {arch: {"status": "ok"} for arch in pairs}}
    return str(old), index, str(new), {arch: {"status": "ok"} for arch in pairs}


def test_a_release_wide_rename_is_reported_once(tmp_path):
    doc = _plan()
    pairs = {f"Arch{i}ForCausalLM": (doc, _rename(doc, "mask", "attention_mask")) for i in range(30)}
    changed = copy.deepcopy(doc)
    next(s for s in _statements(changed) if s["kind"] == "target")["kind"] = "ancestor"
    pairs["OddForCausalLM"] = (doc, changed)
    pairs["SameForCausalLM"] = (doc, doc)
    folder, index, fresh, rows = _folders(tmp_path, pairs)
    installed = sorted(pairs) + ["NewForCausalLM"]
    result = plans.judge(folder, index, fresh, rows, installed, "2.0")
    assert result.counts == {"renamed": 30, "changed": 1, "unchanged": 1}
    assert result.renames == {"mask -> attention_mask": sorted(a for a in pairs if a.startswith("Arch"))}
    summaries = [line for line in result.report if line.startswith("renamed in")]
    assert summaries == ["renamed in 30 plans: mask -> attention_mask"]
    assert not any(line.startswith("      ") for line in result.report if "Arch" in line)
    assert result.new == ["NewForCausalLM"] and result.removed == []
    assert "OddForCausalLM: changed:" in result.report


def test_a_status_that_moved_is_changed(tmp_path):
    doc = _plan()
    folder, index, fresh, rows = _folders(tmp_path, {"AForCausalLM": (doc, doc)})
    os.unlink(os.path.join(fresh, "AForCausalLM.json"))
    rows["AForCausalLM"] = {"status": "refused", "reason": "x.py:3: no call path"}
    result = plans.judge(folder, index, fresh, rows, ["AForCausalLM"], "2.0")
    assert result.verdicts == {"AForCausalLM": "changed"}
    assert result.report == ["AForCausalLM: changed: ok -> refused x.py:3: no call path"]


def _add_decorator(doc: dict, decorator: str) -> dict:
    doc = copy.deepcopy(doc)
    for entry in doc["functions"].values():
        entry["decorators"] = entry["decorators"] + [decorator]
    return doc


def test_a_decorator_added_to_every_forward_is_reported_once(tmp_path):
    doc = _plan()
    deprecate = 'deprecate_kwarg("mask", "5.40.0", new_name="attention_mask")'
    edited = _add_decorator(_rename(doc, "mask", "attention_mask"), deprecate)
    verdict = drift.compare(doc, edited)
    assert verdict.kind == "changed" and verdict.only_decorators
    assert verdict.decorators == [f"+ @{deprecate}"] and verdict.renames == {"mask": "attention_mask"}
    other = copy.deepcopy(edited)
    next(s for s in _statements(other) if s["kind"] == "target")["kind"] = "ancestor"
    assert not drift.compare(doc, other).only_decorators  # a real change besides is shown as a diff

    pairs = {f"Arch{i}ForCausalLM": (doc, edited) for i in range(20)}
    pairs["OddForCausalLM"] = (doc, other)
    folder, index, fresh, rows = _folders(tmp_path, pairs)
    result = plans.judge(folder, index, fresh, rows, sorted(pairs), "2.0")
    assert result.counts == {"changed": 21}
    assert [l for l in result.report if l.startswith("decorator ")] == [
        f"decorator added to forwards in 20 plans: @{deprecate}"]
    assert [l for l in result.report if l.startswith("renamed in")] == ["renamed in 20 plans: mask -> attention_mask"]
    assert "OddForCausalLM: changed:" in result.report
    assert sum(1 for l in result.report if l.startswith("      ")) < 10  # only the odd plan has a diff


# ----- a plan file that can't be compared: one line, exit 2 --------------------------------------------


def _folder_with(tmp_path, text: str | bytes):
    """A plans folder of two architectures whose second plan file holds `text`."""
    good = json.dumps(_plan(), indent=1)
    (tmp_path / "AForCausalLM.json").write_text(good)
    path = tmp_path / "BForCausalLM.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    rows = {"AForCausalLM": {"status": "ok"}, "BForCausalLM": {"status": "ok"}}
    (tmp_path / "index.json").write_text(json.dumps({"transformers": "1.0", "architectures": rows}))
    return path


def _without(key: str) -> str:
    doc = _plan()
    del doc[key]
    return json.dumps(doc)


def _edited(edit) -> str:
    doc = _plan()
    edit(doc)
    return json.dumps(doc)


def _first_statement(doc: dict) -> dict:
    return next(iter(doc["functions"].values()))["statements"][0]


@pytest.mark.parametrize("text, says", [
    ("{not json", "not JSON"),
    (json.dumps(_plan(), indent=1)[:700], "truncated"),
    ("", "empty"),
    (b"\xff\xfe{}", "UTF-8"),
    ("[1, 2]", "JSON object"),
    (_without("functions"), "functions"),
    (_without("targets"), "targets"),
    (_edited(lambda d: d.update(functions=[])), "functions"),
    (_edited(lambda d: next(iter(d["functions"].values())).pop("statements")), "statements"),
    (_edited(lambda d: _first_statement(d).pop("kind")), "kind"),
    (_edited(lambda d: next(iter(d["functions"].values()))["statements"].append("x = 1")), "statement"),
    (_edited(lambda d: d.update(unresolved={})), "unresolved"),
], ids=["not-json", "truncated", "empty", "not-utf8", "a-list", "no-functions", "no-targets", "functions-a-list",
        "no-statements", "statement-without-kind", "statement-a-string", "unresolved-an-object"])
def test_check_on_a_malformed_plan_file_says_which_and_what_in_one_line(tmp_path, capsys, text, says):
    from staticexec.cli import main

    path = _folder_with(tmp_path, text)
    assert main(["check", str(tmp_path), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and says in err


def test_judge_refuses_a_malformed_plan_rather_than_crash(tmp_path):
    from staticexec.messages import MalformedPlan

    doc = _plan()
    bad = dict(doc)
    del bad["functions"]
    folder, index, fresh, rows = _folders(tmp_path, {"AForCausalLM": (bad, doc)})
    with pytest.raises(MalformedPlan, match="AForCausalLM.json"):
        plans.judge(folder, index, fresh, rows, ["AForCausalLM"], "2.0")


def test_every_golden_plan_is_well_formed_for_drift():
    folder = os.path.dirname(GOLDEN)
    names = [n for n in sorted(os.listdir(folder)) if n.endswith(".plan.json")]
    assert names
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            assert drift.malformed(json.load(handle)) == "", name
