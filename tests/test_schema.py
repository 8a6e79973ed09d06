"""Every plan, golden, committed or fresh, validates against docs/plan.schema.json; broken ones don't."""

from __future__ import annotations

import copy
import glob
import json
import os
import re

import pytest
from jsonschema import Draft202012Validator

import staticexec
import test_architectures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "docs", "plan.schema.json")
FORMAT_DOC = os.path.join(ROOT, "docs", "plan-format.md")
GOLDEN = sorted(glob.glob(os.path.join(ROOT, "fixtures", "patterns", "*.plan.json")))
COMMITTED = sorted(
    p for p in glob.glob(os.path.join(ROOT, "staticexec", "shipped", "**", "*.json"), recursive=True)
    if os.path.basename(p) != "index.json"
)
EXAMPLE_GOLDEN = os.path.join(ROOT, "fixtures", "patterns", "module_helper_function.plan.json")


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    return Draft202012Validator(schema)


def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _errors(validator: Draft202012Validator, doc: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def test_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(_load(SCHEMA))


def test_there_are_golden_plans():
    assert GOLDEN, "no fixtures/patterns/*.plan.json found"


@pytest.mark.parametrize("path", GOLDEN, ids=_rel)
def test_golden_plan_validates(validator, path):
    assert _errors(validator, _load(path)) == []


# the 14 foundation architectures' committed plans are validated in `make test`; every other committed plan
# with the slow checks (`make verify`): JSON Schema validation of all of them takes half a minute, and
# tests/test_plan_model.py reads every one of them with the typed reader in `make test` already
FOUNDATION = {f"{a}.json" for a in test_architectures.ARCHITECTURES}


@pytest.mark.parametrize("path", [pytest.param(p, id=_rel(p), marks=() if os.path.basename(p) in FOUNDATION
                                               else pytest.mark.slow) for p in COMMITTED])
def test_committed_plan_validates(validator, path):
    assert _errors(validator, _load(path)) == []


@pytest.fixture(scope="module")
def llama_plan():
    return staticexec.analyse_architecture("LlamaForCausalLM")


def test_fresh_llama_plan_validates(validator, llama_plan):
    assert _errors(validator, llama_plan.to_dict()) == []


def test_fresh_llama_plan_validates_as_written(validator, llama_plan):
    assert _errors(validator, json.loads(llama_plan.to_json())) == []


def test_documented_example_is_the_golden_plan_and_validates(validator):
    with open(FORMAT_DOC, encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "docs/plan-format.md should hold exactly one ```json example"
    example = json.loads(blocks[0])
    assert _errors(validator, example) == []
    assert example == _load(EXAMPLE_GOLDEN)


# ----- broken plans --------------------------------------------------------------------------


def _walk(statements: list[dict]):
    for s in statements:
        yield s
        for block in ("body", "orelse"):
            yield from _walk(s.get(block, []))


def _root_entry(doc: dict) -> dict:
    return doc["functions"][doc["root"]]


def _first(doc: dict, **match) -> dict:
    for entry in doc["functions"].values():
        for s in _walk(entry["statements"]):
            if all(s.get(k) == v for k, v in match.items()):
                return s
    raise AssertionError(f"the example plan has no statement {match}")


def _bad_kind(doc):
    _root_entry(doc)["statements"][0]["kind"] = "skipped"


def _bad_nested_kind(doc):
    _first(doc, statement="for")["body"][0]["kind"] = "call"


def _missing_source_hash(doc):
    del _root_entry(doc)["source_hash"]


def _missing_unresolved(doc):
    del doc["unresolved"]


def _missing_count(doc):
    del _first(doc, kind="opaque")["count"]


def _missing_targets_in_call(doc):
    del _first(doc, kind="target")["call"]["targets"]


def _ancestor_without_callees(doc):
    del _first(doc, kind="ancestor")["call"]["callees"]


def _bad_iter_class(doc):
    _first(doc, statement="for")["iter"]["class"] = "runtime"


def _bad_control_statement(doc):
    _first(doc, statement="for")["statement"] = "while"


def _other_schema(doc):
    doc["schema"] = 1


def _extra_field(doc):
    _root_entry(doc)["statements"][0]["note"] = "hand-edited"


def _absolute_path(doc):
    _root_entry(doc)["path"] = "/usr/lib/python3/site-packages/" + _root_entry(doc)["path"]


def _short_hash(doc):
    _root_entry(doc)["source_hash"] = _root_entry(doc)["source_hash"][:12]


def _one_line_span(doc):
    _root_entry(doc)["lines"] = [_root_entry(doc)["lines"][0]]


def _bad_node_id(doc):
    doc["functions"]["Model.forward"] = doc["functions"].pop(doc["root"])


def _unresolved_missing_reason(doc):
    doc["unresolved"] = [{"function": doc["root"], "path": _root_entry(doc)["path"], "line": 1, "call": "f(x)",
                          "receiver_is_self": False, "reaching_function": True}]


BROKEN = [
    _bad_kind, _bad_nested_kind, _missing_source_hash, _missing_unresolved, _missing_count, _missing_targets_in_call,
    _ancestor_without_callees, _bad_iter_class, _bad_control_statement, _other_schema, _extra_field, _absolute_path,
    _short_hash, _one_line_span, _bad_node_id, _unresolved_missing_reason,
]


@pytest.mark.parametrize("breakage", BROKEN, ids=lambda f: f.__name__.strip("_"))
def test_broken_plan_fails_validation(validator, breakage):
    doc = _load(EXAMPLE_GOLDEN)
    assert _errors(validator, doc) == []
    broken = copy.deepcopy(doc)
    breakage(broken)
    assert broken != doc
    assert not validator.is_valid(broken)


def test_unresolved_entry_shape_is_accepted(validator):
    doc = _load(EXAMPLE_GOLDEN)
    doc["unresolved"] = [{"function": doc["root"], "path": _root_entry(doc)["path"], "line": 35,
                          "call": "self.helper(\n    x,\n)", "reason": "Model never sets self.helper",
                          "receiver_is_self": True, "reaching_function": True}]
    assert _errors(validator, doc) == []
