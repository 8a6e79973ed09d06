"""The typed plan (staticexec/analysis/plan.py): JSON in and out at the boundary, one walk over statements.

Every plan on disk reads to typed values and writes back to the same bytes; a document the model can't
hold is refused in one line, naming the field; `walk` visits statements in source order.
"""

from __future__ import annotations

import copy
import glob
import json
import os

import pytest

from staticexec.analysis.plan import (
    Call,
    Condition,
    Control,
    Decided,
    Function,
    Kind,
    Plan,
    Statement,
    seal,
    walk,
)
from staticexec.messages import MalformedPlan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ON_DISK = sorted(
    p for p in glob.glob(os.path.join(ROOT, "staticexec", "shipped", "*", "*.json"))
    + glob.glob(os.path.join(ROOT, "fixtures", "patterns", "*.plan.json"))
    if os.path.basename(p) != "index.json"
)


def test_every_plan_on_disk_reads_and_writes_back_byte_for_byte():
    assert len(ON_DISK) > 100
    for path in ON_DISK:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        plan = Plan.from_json(json.loads(text), path)
        assert plan.to_json() == text, os.path.relpath(path, ROOT)


def _plan() -> Plan:
    layer = Statement(Kind.TARGET, (5, 5), call=Call(5, "h = layer(h)", 0, targets=("Layer",)))
    loop = Statement(Kind.CONTROL, (4, 5), statement=Control.FOR, iter=Condition("self.layers", Decided.STATIC),
                     blocks=(("body", (layer,)),))
    branch = Statement(Kind.CONTROL, (6, 9), statement=Control.IF, condition=Condition("flag", Decided.INPUT),
                       blocks=(("body", (Statement(Kind.OPAQUE, (7, 7), count=1),)),
                               ("orelse", (Statement(Kind.CONTROL, (9, 9), statement=Control.EXIT),))))
    fn = Function("m:Model.forward", "m:Model", "m.py", (2, 10), "0" * 64, (), ("self", "h"),
                  (Statement(Kind.OPAQUE, (3, 3), count=1), loop, branch, Statement(Kind.OPAQUE, (10, 10), count=1)),
                  ("m.py:5 layer(h) -> Layer",))
    return Plan("Model", "m:Model.forward", {"Layer": "m:Layer"}, {"m:Model.forward": fn},
                staticexec="0", transformers="").sealed()


def test_walk_visits_a_statement_before_its_blocks_in_source_order():
    fn = _plan().function("m:Model.forward")
    assert [s.first for s in walk(fn.statements)] == [3, 4, 5, 6, 7, 9, 10]
    assert [(node, s.first) for node, _, s in _plan().statements() if s.reaching] == [
        ("m:Model.forward", 4), ("m:Model.forward", 5), ("m:Model.forward", 6), ("m:Model.forward", 9)]


@pytest.mark.parametrize("name, expected", [("body", [7]), ("orelse", [9]), ("handler", [])])
def test_a_control_statement_gives_its_blocks_by_name(name, expected):
    branch = _plan().function("m:Model.forward").statements[2]
    assert [s.first for s in branch.block(name)] == expected


def test_a_built_plan_reads_back_equal():
    plan = _plan()
    assert Plan.from_json(json.loads(plan.to_json())) == plan
    assert plan.seal == seal(plan.to_dict())


def test_the_plan_is_frozen():
    plan = _plan()
    with pytest.raises(AttributeError):
        plan.root = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.functions["x"] = None  # type: ignore[index]


def _resealed(edit):
    doc = _plan().to_dict()
    edit(doc)
    doc["seal"] = seal(doc)
    return doc


FN = "m:Model.forward"


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d.update(schema="2"), "`schema` is a string"),
    (lambda d: d.update(schema=1), "plan schema 1 is not the supported 2"),
    (lambda d: d["functions"][FN].update(lines=[2]), "`lines` is not [first, last]"),
    (lambda d: d["functions"][FN]["statements"][1].update(iter={"code": "x", "class": "sometimes"}),
     "has no `iter` with code and a class"),
    (lambda d: d["functions"][FN]["statements"][1]["body"][0]["call"].update(index="0"), "the call's `index` is not a number"),
    (lambda d: d["functions"][FN]["statements"][0].update(count=True), "has no `count`"),
    (lambda d: d["functions"][FN].update(decorators=[1]), "`decorators` holds something other than strings"),
    (lambda d: d["unresolved"].append({"function": FN}), "an `unresolved` entry: no `path`"),
    (lambda d: d.update(comment="reviewed"), "fields staticexec does not write: comment"),
    (lambda d: d["functions"][FN]["statements"][0].update(note="x"), "fields staticexec does not write: functions.m:Model.forward.statements.0.note"),
])
def test_a_document_the_plan_cannot_hold_is_refused_in_one_line(edit, problem):
    with pytest.raises(MalformedPlan) as info:
        Plan.from_json(_resealed(edit), "p.json")
    text = str(info.value)
    assert text.startswith("p.json: ") and problem in text and "\n" not in text


def test_a_document_is_not_changed_by_reading_it():
    doc = _plan().to_dict()
    before = copy.deepcopy(doc)
    Plan.from_json(doc)
    assert doc == before
