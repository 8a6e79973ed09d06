"""Plans as committed artifacts: the cache, the index, and drift checks."""

from __future__ import annotations

import json
import os
import re

import pytest

import committed
from staticexec import plans
from staticexec.cli import main


def test_plan_one_uses_the_cache_until_a_source_changes(tmp_path, monkeypatch):
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    row = plans.plan_one("Qwen2ForCausalLM", str(out), str(cache))
    assert row["status"] == "ok" and row["targets"] == ["Qwen2DecoderLayer"], row
    first = (out / "Qwen2ForCausalLM.json").read_text()

    import staticexec.api as api

    calls = []
    original = api.analyse_architecture

    def counting(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(api, "analyse_architecture", counting)
    assert plans.plan_one("Qwen2ForCausalLM", str(out), str(cache)) == row
    assert calls == []  # served from the cache

    (entry_path,) = cache.glob("plans/*/Qwen2ForCausalLM.json")  # one folder per installed transformers
    entry = json.loads(entry_path.read_text())
    some_file = sorted(entry["files"])[0]
    entry["files"][some_file] = "0" * 64  # as if that source had changed since
    entry_path.write_text(json.dumps(entry))
    assert plans.plan_one("Qwen2ForCausalLM", str(out), str(cache)) == row
    assert len(calls) == 1  # analysed again
    assert (out / "Qwen2ForCausalLM.json").read_text() == first


def _fresh(tmp_path, archs, cache):
    """A plans folder made now, with the installed transformers, as `plan --all` would for `archs`."""
    from staticexec.version import transformers_version

    folder = tmp_path / "plans"
    folder.mkdir()
    rows = [{"arch": a, **plans.plan_one(a, str(folder), str(cache))} for a in archs]
    plans.write_index(str(folder), rows, transformers_version())
    return folder


def test_the_code_digest_covers_every_subpackage(tmp_path):
    """Cached plans and matrix results are told apart by the code that made them: a change to a module in
    any subpackage changes the digest, and a skipped file does not."""
    from staticexec.version import code_digest

    (tmp_path / "analysis").mkdir()
    (tmp_path / "top.py").write_text("A = 1\n")
    (tmp_path / "analysis" / "deep.py").write_text("B = 1\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    before = code_digest(package=str(tmp_path))
    (tmp_path / "notes.txt").write_text("changed\n")
    assert code_digest(package=str(tmp_path)) == before
    (tmp_path / "analysis" / "deep.py").write_text("B = 2\n")
    changed = code_digest(package=str(tmp_path))
    assert changed != before
    skipped = code_digest(skip={"analysis/deep.py"}, package=str(tmp_path))
    (tmp_path / "analysis" / "deep.py").write_text("B = 3\n")
    assert code_digest(skip={"analysis/deep.py"}, package=str(tmp_path)) == skipped
    assert code_digest(package=str(tmp_path)) != changed


@pytest.mark.parametrize("folder", committed.folders(), ids=committed.release)
def test_committed_index_describes_every_plan(folder):
    with open(os.path.join(folder, "index.json"), encoding="utf-8") as handle:
        index = json.load(handle)
    assert index["transformers"] == committed.release(folder)
    ok = [a for a, r in index["architectures"].items() if r["status"] == "ok"]
    assert len(ok) > 250
    for arch in ok:
        row = index["architectures"][arch]
        assert row["targets"] and row["source_hashes"]
        assert os.path.exists(os.path.join(folder, f"{arch}.json"))
    for arch, row in index["architectures"].items():
        if row["status"] != "ok":
            assert row["reason"] and not os.path.exists(os.path.join(folder, f"{arch}.json"))


def _rewrite(folder, arch, edit):
    path = folder / f"{arch}.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def test_check_reports_unchanged_changed_stale_new_and_removed(tmp_path):
    archs = ["LlamaForCausalLM", "GPT2LMHeadModel", "OPTForCausalLM"]
    cache = tmp_path / "cache"
    folder = _fresh(tmp_path, archs, cache)
    installed = archs + ["MistralForCausalLM"]
    result = plans.check(str(folder), cache=str(cache), installed=installed)
    assert result.verdicts == dict.fromkeys(archs, "unchanged")
    assert result.cached == 3  # re-made from the cache: no worker, no analysis
    assert result.new == ["MistralForCausalLM"] and not result.current

    def as_if_another_analysis(doc):
        node = next(n for n in doc["functions"] if n.endswith("LlamaModel.forward"))
        loop = next(s for s in doc["functions"][node]["statements"] if s["kind"] == "control")
        loop["body"][0]["kind"] = "ancestor"

    def as_if_lines_moved(doc):
        for entry in doc["functions"].values():
            entry["source_hash"] = "f" * 64
            entry["lines"] = [n + 7 for n in entry["lines"]]
            entry["chain"] = [re.sub(r":(\d+) ", lambda m: f":{int(m[1]) + 7} ", c) for c in entry["chain"]]

    _rewrite(folder, "LlamaForCausalLM", as_if_another_analysis)
    _rewrite(folder, "GPT2LMHeadModel", as_if_lines_moved)
    index = json.loads((folder / "index.json").read_text())
    index["architectures"]["Gpt3ForCausalLM"] = {"status": "refused", "reason": "gone since"}
    (folder / "index.json").write_text(json.dumps(index))

    result = plans.check(str(folder), cache=str(cache), installed=archs)
    assert not result.current and result.removed == ["Gpt3ForCausalLM"]
    assert result.verdicts == {"LlamaForCausalLM": "changed", "GPT2LMHeadModel": "stale", "OPTForCausalLM": "unchanged"}
    out = "\n".join(result.report)
    assert "LlamaForCausalLM: changed:" in out
    minus = [l for l in out.splitlines() if l.strip().startswith("- ")]
    plus = [l for l in out.splitlines() if l.strip().startswith("+ ")]
    assert any("ancestor" in l for l in minus) and any("target" in l for l in plus)
    assert "GPT2LMHeadModel: stale" in out
    assert "OPTForCausalLM: unchanged" in out
    assert "removed: Gpt3ForCausalLM" in out


def test_check_needs_a_plans_folder(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.slow
def test_committed_plans_are_current():
    """`staticexec check` over the committed plans of the installed release (minutes: `make verify`)."""
    assert main(["check", committed.require_installed()]) == 0
