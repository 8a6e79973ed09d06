"""The command line: exit codes, one-line errors, and what each command writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from staticexec.analysis.session import isolated
from staticexec.cli import main


def run(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "staticexec.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["plan"],
        ["plan", "NoSuchArchitectureForCausalLM"],
        ["plan", "LlamaForCausalLM", "--targets", "NoSuchLayer"],
        ["verify", "NoSuchArchitecture"],
        ["plan", "LlamaForCausalLM", "--config", "/nonexistent/config.json"],
    ],
)
def test_bad_input_exits_2_with_one_line(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_plan_writes_the_plan(tmp_path):
    assert main(["plan", "LlamaForCausalLM", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "LlamaForCausalLM.json").read_text())
    assert doc["architecture"] == "LlamaForCausalLM"
    assert list(doc["targets"]) == ["LlamaDecoderLayer"]
    assert [f for f in os.listdir(tmp_path) if f.startswith(".tmp")] == []


def test_plan_with_a_users_config(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 3, "hidden_size": 64,
                                  "intermediate_size": 128, "num_attention_heads": 4}))
    assert main(["plan", "LlamaForCausalLM", "--config", str(config), "--out", str(tmp_path)]) == 0


LLAVA_WITH_MISTRAL = {
    "model_type": "llava", "image_token_index": 32000,
    "text_config": {"model_type": "mistral", "vocab_size": 32064, "hidden_size": 64, "intermediate_size": 128,
                    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                      "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 28, "patch_size": 14},
}


@pytest.mark.slow  # a Llava built, planned and verified for the config: `make verify` runs it
def test_a_users_config_decides_the_text_model(tmp_path, capsys):
    """A Llava holding a Mistral: planned and verified for that config, and the plan says so."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAVA_WITH_MISTRAL))
    assert main(["plan", "LlavaForConditionalGeneration", "--config", str(config), "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "LlavaForConditionalGeneration.json").read_text())
    assert doc["model_types"] == ["clip_vision_model", "llava", "mistral"]
    # the default targets as a built Llava of this config has them: the Mistral's layers, not a Llama's,
    # and the classes the CLIP tower declares unsplittable
    assert list(doc["targets"]) == ["CLIPEncoderLayer", "CLIPVisionEmbeddings", "MistralDecoderLayer"]
    capsys.readouterr()
    assert main(["verify", "LlavaForConditionalGeneration", "--config", str(config), "--sample", "multimodal",
                 "--targets", "MistralDecoderLayer", "CLIPEncoderLayer"]) == 0
    assert "ok              5 subgraphs, 4 target calls (2 CLIPEncoderLayer, 2 MistralDecoderLayer)" in capsys.readouterr().out


def test_explain_prints_classes_and_chains(capsys):
    assert main(["explain", "GPT2LMHeadModel"]) == 0
    out = capsys.readouterr().out
    assert "T " in out and "C " in out
    assert "reaches through" in out
    assert "-> target GPT2Block" in out


def test_emit_prints_subgraphs(capsys):
    assert main(["emit", "LlamaForCausalLM"]) == 0
    out = capsys.readouterr().out
    assert out.count("def subgraph_") >= 3
    assert "decoder_layer" in out


def test_emit_a_model_folder_with_a_config_given(tmp_path, capsys):
    """--config replaces the folder's config.json, read as the folder's config class."""
    config = json.loads(open(os.path.join(REMOTE, "config.json")).read())
    config["num_hidden_layers"] = 5
    (tmp_path / "five.json").write_text(json.dumps(config))
    assert main(["emit", REMOTE]) == 0
    assert capsys.readouterr().out.count("def subgraph_") == 4
    assert main(["emit", REMOTE, "--config", str(tmp_path / "five.json")]) == 0
    assert capsys.readouterr().out.count("def subgraph_") == 6


def test_python_m_staticexec_is_the_command():
    done = subprocess.run([sys.executable, "-m", "staticexec", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: staticexec")


def test_verify_exit_codes(capsys):
    assert main(["verify", "LlamaForCausalLM"]) == 0
    out = capsys.readouterr().out
    assert "LlamaForCausalLM" in out and " ok " in out


def test_help_explains():
    proc = run("--help")
    assert proc.returncode == 0
    for word in ("plan", "explain", "emit", "verify", "exit codes"):
        assert word in proc.stdout


def test_planning_is_static(tmp_path, monkeypatch):
    """Planning runs no module and traces nothing: every way to do either raises while it plans."""
    import torch
    import torch.fx

    def boom(*args, **kwargs):
        raise AssertionError("the model ran during planning")

    monkeypatch.setattr(torch.nn.Module, "__call__", boom)
    monkeypatch.setattr(torch.fx.Tracer, "trace", boom)
    monkeypatch.setattr(torch.fx, "symbolic_trace", boom)
    with isolated():  # nothing analysed before this test is reused
        assert main(["plan", "MixtralForCausalLM", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "MixtralForCausalLM.json").exists()


def test_graph_writes_dot(tmp_path, capsys):
    out = tmp_path / "gpt2.dot"
    assert main(["graph", "GPT2LMHeadModel", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith('digraph "GPT2LMHeadModel"')
    assert '"target:GPT2Block"' in text and "GPT2Model.forward" in text
    assert "modeling_gpt2.py:" in text


def test_graph_without_graphviz_says_how_to_render(tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["graph", "GPT2LMHeadModel", "--out", str(tmp_path / "gpt2.svg")]) == 0
    assert "dot -Tsvg" in capsys.readouterr().out
    assert (tmp_path / "gpt2.dot").exists() and not (tmp_path / "gpt2.svg").exists()


def _fake_sweep(monkeypatch, statuses: dict[str, str]):
    """`verify --all` over made-up rows: the sweep gives `statuses`, nothing is built or run."""
    from staticexec import sweep
    from staticexec.analysis import architectures

    def run(job, archs, options, jobs, timeout, label, on_result=None):
        rows = [{"arch": a, "status": statuses[a], "reason": f"why {a}", "subgraphs": 3} for a in archs]
        for row in rows:
            on_result(row)
        return rows

    monkeypatch.setattr(sweep, "run", run)
    monkeypatch.setattr(architectures, "task_architectures", lambda task: sorted(statuses))


def test_verify_all_flags_an_error_inside_the_pipeline(monkeypatch, capsys):
    _fake_sweep(monkeypatch, {"AForCausalLM": "ok", "BForCausalLM": "n/a", "CForCausalLM": "error",
                              "DForCausalLM": "unsplit"})
    assert main(["verify", "--all", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "1 error" in out and "1 unsplit" in out
    flagged = [line for line in out.splitlines() if line.startswith("flagged")]
    assert len(flagged) == 1 and "CForCausalLM (error)" in flagged[0] and "DForCausalLM" not in flagged[0]


def test_verify_all_with_only_ok_and_na_exits_0(monkeypatch, capsys):
    _fake_sweep(monkeypatch, {"AForCausalLM": "ok", "BForCausalLM": "n/a"})
    assert main(["verify", "--all", "--jobs", "1"]) == 0
    assert "flagged" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["plan", "explain"])
def test_a_config_its_class_rejects_is_one_line_and_exit_2(command, tmp_path, capsys):
    """A config.json whose config class rejects a value (a number where it expects a dict) is bad input."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llava", "text_config": None, "vision_config": 5}))
    extra = ["--out", str(tmp_path)] if command == "plan" else []
    assert main([command, "LlavaForConditionalGeneration", "--config", str(config), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "config.json" in err and "Traceback" not in err


REMOTE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "remote_code", "tiny_causal")


def test_plan_and_explain_a_model_folder_from_source_alone(tmp_path, capsys, unloaded):
    """A folder laid out as remote code (config.json with auto_map, modeling and configuration files
    importing each other relatively) is planned without running any of its code."""
    imported = unloaded(lambda m: any(part in m for part in ("modeling_tiny", "configuration_tiny", "layers_tiny")))
    assert main(["plan", REMOTE, "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / "TinyRemoteForCausalLM.json").read_text())
    assert plan["architecture"] == "TinyRemoteForCausalLM" and sorted(plan["targets"]) == ["TinyRemoteLayer"]
    assert main(["explain", REMOTE]) == 0
    assert "target TinyRemoteLayer" in capsys.readouterr().out
    assert imported() == []


def test_plan_a_users_class_by_module_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.dirname(REMOTE))))
    assert main(["plan", "fixtures.remote_code.tiny_causal.modeling_tiny:TinyRemoteForCausalLM", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "TinyRemoteForCausalLM.json").exists()


def test_a_users_class_derived_from_a_class_transformers_exports_lazily(tmp_path, monkeypatch, capsys):
    """`from transformers import LlamaForCausalLM`, which jedi can't follow, and an alias of the class:
    both planned as the user's class; a name bound to a value says what it is bound to."""
    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.dirname(REMOTE))))
    for name, planned in (("MyLlama", "MyLlama"), ("Model", "MyLlama"), ("Base", "LlamaModel")):
        assert main(["plan", f"fixtures.userclass.derived_llama:{name}", "--out", str(tmp_path / name)]) == 0
        plan = json.loads((tmp_path / name / f"{planned}.json").read_text())
        assert list(plan["targets"]) == ["LlamaDecoderLayer"] and "LlamaModel.forward" in " ".join(plan["functions"])
    assert main(["plan", "fixtures.userclass.derived_llama:config", "--out", str(tmp_path / "config")]) == 2
    assert "derived_llama.py:18 binds config by `config = LlamaConfig()`" in capsys.readouterr().err
    assert not (tmp_path / "config").exists()


def test_a_name_is_followed_from_its_last_binding_through_star_imports(tmp_path, monkeypatch):
    """`from m import *` binds what m's `__all__` lists (transformers' Llama module), or m's public names
    when it has none (a sibling imported relatively); the name is followed there, through the sibling's own
    binding (`Model = MyLlama`). A name bound twice is followed from its last binding: an assignment after
    another (`Twice`), a star import after a class statement (`LlamaModel`). Each is what importing the
    module binds."""
    import importlib

    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.dirname(REMOTE))))
    for spec, planned in (("star:LlamaForCausalLM", "LlamaForCausalLM"), ("star_relative:MyLlama", "MyLlama"),
                          ("star_relative:Model", "MyLlama"), ("star_relative:LlamaModel", "LlamaModel"),
                          ("derived_llama:Twice", "LlamaForCausalLM")):
        assert main(["plan", f"fixtures.userclass.{spec}", "--out", str(tmp_path / spec)]) == 0
        plan = json.loads((tmp_path / spec / f"{planned}.json").read_text())
        assert list(plan["targets"]) == ["LlamaDecoderLayer"]
        module, _, name = spec.partition(":")
        assert getattr(importlib.import_module(f"fixtures.userclass.{module}"), name).__name__ == planned


def test_a_class_named_by_transformers_package_is_planned_as_by_its_own_module(tmp_path):
    """`transformers:LlamaForCausalLM`, bound in transformers' source only under `TYPE_CHECKING`, is the class
    the imported package holds: its plan is the plan of the class named by the module that defines it."""
    plans = []
    for spec in ("transformers:LlamaForCausalLM", "transformers.models.llama:LlamaForCausalLM",
                 f"{LLAMA_MODULE}:LlamaForCausalLM"):
        assert main(["plan", spec, "--out", str(tmp_path / spec)]) == 0
        plans.append((tmp_path / spec / "LlamaForCausalLM.json").read_text())
    assert plans[0] == plans[1] == plans[2] and '"LlamaDecoderLayer"' in plans[0]


@pytest.mark.slow  # a tiny Llama built, planned and verified: `make verify` runs it
def test_verify_a_users_class_builds_it_from_the_config_given_and_refuses_a_full_size_one(tmp_path, monkeypatch,
                                                                                         capsys):
    from transformers import LlamaConfig

    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.dirname(REMOTE))))
    spec = "fixtures.userclass.derived_llama:MyLlama"
    assert main(["verify", spec]) == 2  # LlamaConfig() is 7B parameters: measured on meta, never allocated
    err = capsys.readouterr().err
    assert ("MyLlama built from LlamaConfig() has 26,954 MB of parameters and buffers, over the 32 MB limit of a model "
            "staticexec builds; give it --config with a smaller config") in err
    config = tmp_path / "tiny.json"
    LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=128).to_json_file(str(config))
    assert main(["verify", spec, "--config", str(config)]) == 0
    assert "1 checked: 1 ok" in capsys.readouterr().out


def test_a_class_in_a_package_is_planned_without_running_the_packages_init(tmp_path, monkeypatch):
    """Finding a module's file runs none of its packages' `__init__` files (find_spec would import them)."""
    package = tmp_path / "sx_package_that_raises"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the package ran')\n")
    (package / "models" / "__init__.py").write_text("raise RuntimeError('the subpackage ran')\n")
    (package / "models" / "tiny.py").write_text(
        "from torch import nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])\n\n"
        "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "sx_package_that_raises.models.tiny:Model"
    assert main(["plan", spec, "--targets", "Linear", "--out", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "Model.json").read_text())["targets"] == {"Linear": "torch.nn.modules.linear:Linear"}
    assert not [m for m in sys.modules if m.startswith("sx_package_that_raises")]


def test_verify_a_model_folder_builds_it_and_says_so(capsys):
    assert main(["verify", REMOTE]) == 0
    captured = capsys.readouterr()
    assert "runs the folder's code" in captured.err
    assert "1 checked: 1 ok" in captured.out


@pytest.mark.parametrize("spec", ["no.such.module:Model", "not a class:", "{missing}"])
def test_a_user_class_that_is_not_there_is_one_line_and_exit_2(spec, tmp_path, capsys):
    spec = spec.replace("{missing}", str(tmp_path))  # a folder without config.json
    assert main(["plan", spec, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_model_folder_without_auto_map_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert main(["plan", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "auto_map" in capsys.readouterr().err


LLAMA_MODULE = "transformers.models.llama.modeling_llama"


def _bad_input_cases(tmp: str) -> list[tuple[list[str], str]]:
    """(argv, what the one line must say) for input each command turns away before any work is written."""
    return [
        (["plan", "LlamaForCausalLM", "--targets", "", "--out", f"{tmp}/new"], "an empty class name"),
        (["plan", "LlamaForCausalLM", "--jobs", "2", "--out", f"{tmp}/new"], "--jobs and --no-cache go with --all"),
        (["check", tmp, "--jobs", "0"], "0 is not above zero"),
        (["verify", "LlamaForCausalLM", "--timeout", "1"], "go with --all"),
        (["verify", "--all", "--report", f"{tmp}/nowhere/coverage.md"], "no folder"),
        (["plan", "LlamaForCausalLM", "--config", tmp, "--out", f"{tmp}/new"], "not a file"),
        (["plan", "LlamaForCausalLM", "--config", f"{tmp}/gpt2.json", "--out", f"{tmp}/new"],
         "model_type 'gpt2' is not LlamaForCausalLM's"),
        (["emit", "LlamaForCausalLM", "--config", f"{tmp}/gpt2.json"], "model_type 'gpt2' is not LlamaForCausalLM's"),
        (["emit", "LlamaForCausalLM", "--sample", "multimodal"], "takes no image or audio tensor"),
        (["plan", f"{LLAMA_MODULE}:LLAMA", "--out", f"{tmp}/new"], "modeling_llama.py binds no LLAMA at module level"),
        (["plan", f"{LLAMA_MODULE}:LlamaModel.Inner", "--out", f"{tmp}/new"], "defines no class LlamaModel.Inner"),
        (["plan", f"{LLAMA_MODULE}:apply_rotary_pos_emb", "--out", f"{tmp}/new"], "is a function"),
        (["plan", f"{LLAMA_MODULE}:logger", "--out", f"{tmp}/new"],
         "binds logger by `logger = logging.get_logger(__name__)`, which staticexec does not follow to a class"),
        (["plan", f"{LLAMA_MODULE}:nn", "--out", f"{tmp}/new"], "nn is the module torch.nn"),
        (["plan", "torch.nn.modules.container:ModuleList", "--targets", "Linear", "--out", f"{tmp}/new"],
         "ModuleList has no forward to split: no `def forward` in it or a base staticexec reads"),
        (["plan", "fixtures.userclass.derived_llama:Model.Inner", "--out", f"{tmp}/new"],
         "Model is the class fixtures.userclass.derived_llama:MyLlama (fixtures/userclass/derived_llama.py:15), which defines no class Inner"),
        (["plan", "fixtures.userclass.derived_llama:InBlock", "--out", f"{tmp}/new"],
         "derived_llama.py:20 defines InBlock inside a block; staticexec reads a name bound at the module's top level"),
        (["plan", "fixtures.userclass.star:Model", "--out", f"{tmp}/new"],
         "star.py binds no Model at module level, and its `import *` of transformers.models.llama.modeling_llama "
         "binds none"),
        (["plan", "fixtures.userclass.star_computed:LlamaForCausalLM", "--out", f"{tmp}/new"],
         "star_computed.py:3 `from .listed_by_code import *` may bind LlamaForCausalLM, and staticexec can't tell "
         "whether it does: "),
        (["plan", "fixtures.userclass.star_computed:LlamaForCausalLM", "--out", f"{tmp}/new"],
         "listed_by_code.py makes its `__all__` in a way staticexec does not read (one list of names written out)"),
        (["plan", f"{tmp}/broken", "--out", f"{tmp}/new"], "modeling_tiny.py:26: a syntax error"),
        (["graph", "GPT2LMHeadModel", "--out", f"{tmp}/g.txt"], "name a .dot, .gv, .svg, .png or .pdf file"),
        (["graph", "GPT2LMHeadModel", "--out", f"{tmp}/nowhere/g.dot"], "no folder"),
        (["graph", "GPT2LMHeadModel", "--out", f"{tmp}/folder.dot"], "a folder"),
        (["plan", "LlamaForCausalLM", "--out", tmp], "can't write it"),  # LlamaForCausalLM.json is a folder there
        (["emit", f"{tmp}/broken"], "modeling_tiny.py:26: a syntax error"),
        (["verify", f"{tmp}/broken"], "modeling_tiny.py:26: a syntax error"),
        (["verify", "LlamaForCausalLM", "--config", f"{tmp}/gpt2.json"], "model_type 'gpt2' is not LlamaForCausalLM's"),
        (["emit", "LlamaForCausalLm"], "did you mean LlamaForCausalLM?"),
        (["explain", "LlamaForCausalLM", "--targets", "LlamaForCausalLM"], "is the model's own class"),
        (["explain", "LlamaForCausalLM", "--targets", f"{LLAMA_MODULE}.LlamaDecoderLayer"],
         "is not a class name; the analysis takes a target class by its name alone ('LlamaDecoderLayer')"),
        (["plan", "LlamaForCausalLM", "--targets", "NoSuchLayer", "--out", f"{tmp}/new/deeper/still"], "no class NoSuchLayer"),
        (["plan", "LlamaForCausalLM", "--out", f"{tmp}/gpt2.json"], "a file, not a folder"),
        (["check", f"{tmp}/half"], "half/LlamaForCausalLM.json: no such file, where"),
        (["matrix", "--report-only", "--results", f"{tmp}/noresults", "--report", f"{tmp}/c.md"], "no matrix results"),
        (["matrix", "--report-only", "--report", f"{tmp}/nowhere/c.md"], "no folder"),
        (["emit", REMOTE, "--config", f"{tmp}/nothere.json"], "nothere.json: no such file"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_input_cases(""))))
def test_bad_input_is_one_line_and_exit_2_and_nothing_is_written(case, tmp_path, capsys):
    from transformers import GPT2Config

    GPT2Config().to_json_file(str(tmp_path / "gpt2.json"))
    (tmp_path / "folder.dot").mkdir()
    (tmp_path / "LlamaForCausalLM.json").mkdir()
    broken = tmp_path / "broken"
    shutil.copytree(REMOTE, broken)
    with open(broken / "modeling_tiny.py", "a") as handle:
        handle.write("def broken(:\n")
    half = tmp_path / "half"  # an index whose planned architecture has no plan file
    half.mkdir()
    (half / "index.json").write_text(json.dumps({"transformers": "5.23.0", "staticexec": "0",
                                                 "architectures": {"LlamaForCausalLM": {"status": "ok"}}}))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv, said = _bad_input_cases(str(tmp_path))[case]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and "Traceback" not in err, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing new, nothing left


@pytest.mark.parametrize("name, meant", [("LlamaForCausalLm", "LlamaForCausalLM"), ("LlamaForCasualLM", "LlamaForCausalLM"),
                                         ("FooBarModel", None)])
def test_an_unknown_architecture_names_the_one_meant_when_one_is_close(name, meant, tmp_path, capsys):
    assert main(["plan", name, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"staticexec: unknown architecture {name!r}: not a model class of transformers")
    assert err.endswith(f"; did you mean {meant}?" if meant else "transformers")
    assert not (tmp_path / "out").exists()


def test_a_users_class_that_cant_be_made_on_meta_is_stopped_while_it_is_built(tmp_path, monkeypatch, capsys):
    """Its size can't be measured first, so its parameters are counted as they are made: a config over the
    limit is stopped at its first parameters (a 41 MB embedding), not allocated whole."""
    from transformers import LlamaConfig

    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.dirname(REMOTE))))
    big = tmp_path / "big.json"
    LlamaConfig(vocab_size=10_000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=16).to_json_file(big)
    assert main(["verify", "fixtures.userclass.unmeasurable:UnmeasurableLlama", "--config", str(big)]) == 2
    err = capsys.readouterr().err
    assert (f"UnmeasurableLlama built from {big} passed 41.0 MB of parameters and buffers while it was built, over the 32 MB "
            "limit of a model staticexec builds (it can't be made on the meta device, where it is measured "
            "first); give it --config with a smaller config") in err
