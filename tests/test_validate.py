"""Bad input gets a one-line UsageError (or MalformedPlan), never a traceback; plans name real places."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import torch

from soundness import cases
from staticexec.analysis.plan import seal
from staticexec.api import load_plan, subgraphs
from staticexec.cli import main
from staticexec.messages import MalformedPlan, Refused, UsageError

CASE = next(c for c in cases() if c.name == "ok_loop_over_layers")


@pytest.fixture()
def model_and_sample():
    return CASE.load().build()


@pytest.mark.parametrize("targets", ["Layer", [], ("Layer", 3), 7, [""]])
def test_bad_targets_are_one_line_usage_errors(model_and_sample, targets):
    model, sample = model_and_sample
    with pytest.raises(UsageError) as info:
        subgraphs(model, sample, targets)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("sample", [torch.randn(2, 5, 8), [("x", 1)], {"x": torch.randn(2, 5, 8), "mask": None}])
def test_bad_samples_are_one_line_usage_errors(model_and_sample, sample):
    model, _ = model_and_sample
    with pytest.raises(UsageError) as info:
        subgraphs(model, sample, ["Layer"])
    assert "\n" not in str(info.value)


def test_a_model_on_meta_is_a_usage_error(model_and_sample):
    model, sample = model_and_sample
    with pytest.raises(UsageError, match="meta"):
        subgraphs(model.to("meta"), sample, ["Layer"])


def test_a_compiled_model_names_the_wrapper(model_and_sample):
    model, sample = model_and_sample
    with pytest.raises(UsageError, match="torch.compile"):
        subgraphs(torch.compile(model, backend="eager"), sample, ["Layer"])  # the wrapper, without inductor


def _plan_doc(model, sample):
    from staticexec.api import analyse
    from staticexec.analysis.source import ClassRef

    return analyse(ClassRef(type(model).__module__, type(model).__qualname__), ["Layer"]).to_dict()


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d.update(functions=list(d["functions"].values())), "`functions` is a list, not an object"),
    (lambda d: next(iter(d["functions"].values())).pop("statements"), "no `statements`"),
    (lambda d: next(iter(d["functions"].values()))["statements"].append({"kind": "magic", "lines": [1, 1]}),
     "a statement of kind 'magic' (expected one of"),
    (lambda d: next(iter(d["functions"].values()))["statements"].append(
        {"kind": "control", "lines": [3, 4], "statement": "if"}), "the control statement at line 3 has no `condition`"),
    (lambda d: d.update(targets=["Layer"]), "`targets` is a list, not an object"),
    (lambda d: d.update(root="nowhere:Model.forward"), "the root nowhere:Model.forward has no entry in `functions`"),
])
def test_malformed_plans_are_refused_in_one_line(model_and_sample, edit, problem):
    """Each edit is sealed again, so what refuses it is the check of its own shape, not the broken seal."""
    model, sample = model_and_sample
    doc = copy.deepcopy(_plan_doc(model, sample))
    edit(doc)
    doc["seal"] = seal(doc)
    with pytest.raises(MalformedPlan) as info:
        load_plan(doc)
    assert problem in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(MalformedPlan, match=re.escape(problem)):
        subgraphs(model, sample, ["Layer"], plan=doc)


def test_a_plan_for_a_same_named_class_names_both_modules(model_and_sample):
    model, sample = model_and_sample
    other = next(c for c in cases() if c.name == "ok_residual")
    other_model, _ = other.load().build()
    doc = _plan_doc(other_model, sample)
    with pytest.raises(Refused) as info:
        subgraphs(model, sample, ["Layer"], plan=doc)
    text = str(info.value.first)
    assert other.module in text and CASE.module in text
    assert info.value.first.line > 0 and info.value.first.path.endswith("ok_loop_over_layers.py")


def test_plan_out_to_a_folder_that_cannot_be_written(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["plan", "LlamaForCausalLM", "--out", str(blocker / "plans")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("index", [
    {"architectures": [{"arch": "LlamaForCausalLM"}]},
    {"architectures": {"LlamaForCausalLM": {"targets": ["LlamaDecoderLayer"]}}},
    ["LlamaForCausalLM"],
])
def test_check_on_a_malformed_index(tmp_path, capsys, index):
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "malformed index" in err


def test_a_malformed_plan_file_is_reported_as_malformed_not_missing(tmp_path):
    from staticexec.plans import MALFORMED, _read

    path = tmp_path / "X.json"
    path.write_text("{not json")
    assert _read(str(path)) is MALFORMED
    assert _read(str(tmp_path / "missing.json")) is None
    with pytest.raises(MalformedPlan):
        load_plan(str(path))
    with pytest.raises(UsageError) as info:
        load_plan(str(tmp_path / "missing.json"))
    assert not isinstance(info.value, MalformedPlan)
    assert os.path.exists(path)


def _hide_the_layer_loop(doc: dict) -> int:
    """Turn the root's loop over targets into opaque code, as a hand edit would; its first line."""
    statements = doc["functions"][doc["root"]]["statements"]
    loop = next(s for s in statements if s["kind"] == "control")
    lines = loop["lines"]
    loop.clear()
    loop.update({"kind": "opaque", "lines": lines, "count": 1})
    return lines[0]


def test_an_edited_plan_is_refused_by_its_seal(model_and_sample):
    """Statement classes changed after the analysis wrote the plan: refused on loading, before anything runs."""
    model, sample = model_and_sample
    doc = copy.deepcopy(_plan_doc(model, sample))
    _hide_the_layer_loop(doc)
    with pytest.raises(MalformedPlan, match=r"^plan: edited after staticexec wrote it \(its `seal` does not match"):
        subgraphs(model, sample, ["Layer"], plan=doc)
    del doc["seal"]
    with pytest.raises(MalformedPlan, match=r"^plan: no `seal`"):
        load_plan(doc)


def test_a_resealed_plan_that_hides_the_layer_loop_is_refused_by_the_emitter(model_and_sample):
    """Past the seal (edited and sealed again), the emitter still sees the loop call each target: refused
    where the loop is."""
    from staticexec.analysis.plan import seal

    model, sample = model_and_sample
    doc = copy.deepcopy(_plan_doc(model, sample))
    line = _hide_the_layer_loop(doc)
    doc["seal"] = seal(doc)
    with pytest.raises(Refused, match=rf":{line}: .*marks this loop as code with no target call, but it calls each of `self.layers`"):
        subgraphs(model, sample, ["Layer"], plan=doc)
