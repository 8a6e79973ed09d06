"""Plans as committed artifacts: the cache, the index, and drift checks."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from staticexec import plans
from staticexec.cli import main

COMMITTED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "plans",
                         "transformers-5.23.0")


def test_plan_one_uses_the_cache_until_a_source_changes(tmp_path, monkeypatch):
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    row = plans.plan_one("Qwen2ForCausalLM", str(out), str(cache))
    assert row["status"] == "ok" and row["targets"] == ["Qwen2DecoderLayer"]
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

    entry_path = cache / "plans" / "Qwen2ForCausalLM.json"
    entry = json.loads(entry_path.read_text())
    some_file = sorted(entry["files"])[0]
    entry["files"][some_file] = "0" * 64  # as if that source had changed since
    entry_path.write_text(json.dumps(entry))
    assert plans.plan_one("Qwen2ForCausalLM", str(out), str(cache)) == row
    assert len(calls) == 1  # analysed again
    assert (out / "Qwen2ForCausalLM.json").read_text() == first


def _subset(tmp_path, archs):
    folder = tmp_path / "plans"
    folder.mkdir()
    with open(os.path.join(COMMITTED, "index.json"), encoding="utf-8") as handle:
        index = json.load(handle)
    index["architectures"] = {a: index["architectures"][a] for a in archs}
    (folder / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    for arch in archs:
        shutil.copy(os.path.join(COMMITTED, f"{arch}.json"), folder / f"{arch}.json")
    return folder


def test_committed_index_describes_every_plan():
    with open(os.path.join(COMMITTED, "index.json"), encoding="utf-8") as handle:
        index = json.load(handle)
    assert index["transformers"] == "5.23.0"
    ok = [a for a, r in index["architectures"].items() if r["status"] == "ok"]
    assert len(ok) > 250
    for arch in ok:
        row = index["architectures"][arch]
        assert row["targets"] and row["source_hashes"]
        assert os.path.exists(os.path.join(COMMITTED, f"{arch}.json"))
    for arch, row in index["architectures"].items():
        if row["status"] != "ok":
            assert row["reason"] and not os.path.exists(os.path.join(COMMITTED, f"{arch}.json"))


def test_check_reports_unchanged_changed_and_stale(tmp_path, capsys):
    folder = _subset(tmp_path, ["LlamaForCausalLM", "GPT2LMHeadModel", "OPTForCausalLM"])
    assert main(["check", str(folder), "--jobs", "1"]) == 0
    assert capsys.readouterr().out.count(": unchanged") == 3

    llama = json.loads((folder / "LlamaForCausalLM.json").read_text())
    node = next(n for n in llama["functions"] if n.endswith("LlamaModel.forward"))
    loop = next(s for s in llama["functions"][node]["statements"] if s["kind"] == "control")
    loop["body"][0]["kind"] = "ancestor"  # as if an older analysis had seen something else
    (folder / "LlamaForCausalLM.json").write_text(json.dumps(llama, indent=1, sort_keys=True) + "\n")

    gpt2 = json.loads((folder / "GPT2LMHeadModel.json").read_text())
    for entry in gpt2["functions"].values():
        entry["source_hash"] = "f" * 64
    (folder / "GPT2LMHeadModel.json").write_text(json.dumps(gpt2, indent=1, sort_keys=True) + "\n")

    assert main(["check", str(folder), "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "LlamaForCausalLM: changed:" in out
    minus = [l for l in out.splitlines() if l.strip().startswith("- ")]
    plus = [l for l in out.splitlines() if l.strip().startswith("+ ")]
    assert any("ancestor" in l for l in minus) and any("target" in l for l in plus)
    assert "GPT2LMHeadModel: stale" in out
    assert "OPTForCausalLM: unchanged" in out


def test_check_needs_a_plans_folder(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.slow
def test_committed_plans_are_current():
    """`staticexec check` over every committed plan (minutes: run with `make verify`)."""
    assert main(["check", COMMITTED]) == 0
