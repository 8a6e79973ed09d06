"""Models whose code is not in an installed package: remote-code folders, and classes on sys.path.

fixtures/remote_code/ holds a corpus of model folders laid out as transformers loads remote code
(config.json with auto_map, modeling_*.py and configuration_*.py importing their siblings
relatively), each written in a style real remote code takes. Each folder is planned from the
command line, from source alone, and split under the sequential pipeline's double run with the
model built by transformers' trust_remote_code loader, against the model's own output exactly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

import pytest

from staticexec.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fixtures", "remote_code")


@dataclass(frozen=True)
class Folder:
    """A corpus folder and what its plan holds: the class auto_map names, and the default targets
    (the `_no_split_modules` the model holds)."""

    name: str
    style: str  # the ways of writing remote code it stands for
    architecture: str
    targets: tuple[str, ...]

    @property
    def path(self) -> str:
        return os.path.join(CORPUS, self.name)


FOLDERS = {f.name: f for f in [
    Folder("tiny_causal", "a layer in a sibling file", "TinyRemoteForCausalLM", ("TinyRemoteLayer",)),
    Folder("sparse_moe", "own attention; MoE: router, ModuleList of experts, top-k loop over experts, shared expert",
           "SparseMoeForCausalLM", ("SparseMoeDecoderLayer",)),
    Folder("mla_moe", "MLA attention (low-rank q/kv, decoupled rope dims); DeepSeek MoE, first layer dense",
           "MlaMoeForCausalLM", ("MlaMoeDecoderLayer",)),
    Folder("vlm_tower", "own vision tower in a sibling file, run from a helper, reassigned with .to() in __init__",
           "TinyVlmForCausalLM", ("TinyVisionEncoderLayer", "TinyVlmDecoderLayer")),
    Folder("hybrid_layers", "layer classes picked from config.layer_types in a loop; one mask per kind",
           "HybridForCausalLM", ("HybridFullAttentionLayer", "HybridSlidingAttentionLayer")),
    Folder("dual_auto", "InternLM2 style; auto_map names AutoModel and AutoModelForCausalLM; tuple caches",
           "DualForCausalLM", ("DualDecoderLayer",)),
    Folder("glm_blocks", "ChatGLM style: init_method(cls, ...), nested build_layer, self._get_layer(i), seq-first",
           "ChatGLMForConditionalGeneration", ("GLMBlock",)),
]}


def _folder_param(name: str, broken: dict[str, str]):
    marks = [pytest.mark.xfail(strict=True, reason=broken[name])] if name in broken else []
    return pytest.param(FOLDERS[name], id=name, marks=marks)


# What planning from source alone gets wrong today: each test below that
# fails for a folder says why, and starts passing (failing the strict xfail) when it is fixed.
PLAN_BROKEN: dict[str, str] = {}


@pytest.mark.parametrize("folder", [_folder_param(n, PLAN_BROKEN) for n in FOLDERS])
def test_each_folder_is_planned_from_the_command_line_from_source_alone(folder, tmp_path, unloaded):
    # no file of the folder is imported (its package, which has no __init__, may be)
    imported = unloaded(lambda m: m.startswith("transformers_modules") or m.startswith("staticexec_remote_") and "." in m)
    assert main(["plan", folder.path, "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / f"{folder.architecture}.json").read_text())
    assert plan["architecture"] == folder.architecture
    assert sorted(plan["targets"]) == sorted(folder.targets)
    assert imported() == []


def test_a_vlm_folder_is_planned_with_its_vision_and_text_layers_as_targets(tmp_path):
    folder = FOLDERS["vlm_tower"]
    assert main(["plan", folder.path, "--targets", *folder.targets, "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / f"{folder.architecture}.json").read_text())
    assert sorted(plan["targets"]) == sorted(folder.targets)


def test_blocks_built_by_a_nested_function_and_run_through_checkpoint_are_planned(tmp_path):
    """ChatGLM builds its blocks through a function nested in __init__ (`build_layer`), fetches each
    with an accessor (`self._get_layer(i)`) and, while training, runs it through
    `torch.utils.checkpoint.checkpoint(layer, ...)`: the plan holds the blocks and the call through
    checkpoint as the call of its first argument."""
    folder = FOLDERS["glm_blocks"]
    assert main(["plan", folder.path, "--targets", *folder.targets, "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / f"{folder.architecture}.json").read_text())
    assert list(plan["targets"]) == ["GLMBlock"]
    calls = {}

    def visit(entries: list) -> None:
        for entry in entries:
            if "call" in entry:
                calls[entry["call"]["line"]] = (entry["kind"], entry["call"].get("targets", []), entry["call"]["code"])
            for key in ("body", "orelse"):
                visit(entry.get(key, []))

    for function in plan["functions"].values():
        visit(function["statements"])
    kind, targets, code = calls[298]  # torch.utils.checkpoint.checkpoint(layer, ...)
    assert (kind, targets) == ("target", ["GLMBlock"]) and code.startswith("torch.utils.checkpoint.checkpoint(")
    assert calls[303][:2] == ("target", ["GLMBlock"])  # layer(...)


def test_the_base_model_of_a_folder_is_planned_by_module_path(tmp_path, monkeypatch):
    """dual_auto's auto_map names AutoModel too: its class, named as module.path:Class."""
    monkeypatch.syspath_prepend(ROOT)
    spec = "fixtures.remote_code.dual_auto.modeling_dual:DualModel"
    assert main(["plan", spec, "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / "DualModel.json").read_text())
    assert sorted(plan["targets"]) == ["DualDecoderLayer"]


@dataclass(frozen=True)
class Split:
    """One split of a folder's model: the auto class it is built as, the targets (None: the model's
    _no_split_modules), the sample (text, or text with an image) and the output compared."""

    folder: str
    name: str
    subgraphs: list[list[str]] | None  # the target modules of each subgraph; None: refused
    auto: str = "AutoModelForCausalLM"
    targets: list[str] | None = None
    image: bool = False
    output: str = "logits"
    refused: set[str] = field(default_factory=set)  # the message kinds of the refusal
    train: bool = False  # split in training mode, gradient checkpointing on where the model has it

    @property
    def spec(self) -> dict:
        return {"name": self.name, "auto": self.auto, "targets": self.targets, "image": self.image,
                "output": self.output, "train": self.train}


def _layers(prefix: str, n: int) -> list[list[str]]:
    return [[]] + [[f"{prefix}.{i}"] for i in range(n)]


SPLITS = [
    Split("tiny_causal", "text", _layers("layers", 3)),
    Split("sparse_moe", "text", _layers("model.layers", 2)),
    Split("mla_moe", "text", _layers("model.layers", 3)),
    Split("vlm_tower", "text", _layers("language_model.layers", 2)),
    Split("vlm_tower", "image", _layers("vision_tower.layers", 2) + _layers("language_model.layers", 2)[1:],
          targets=["TinyVlmDecoderLayer", "TinyVisionEncoderLayer"], image=True),
    Split("hybrid_layers", "text", _layers("transformer.h", 3)),
    Split("dual_auto", "text", _layers("model.layers", 2)),
    Split("dual_auto", "base", _layers("layers", 2), auto="AutoModel", output="last_hidden_state"),
    Split("glm_blocks", "text", _layers("transformer.encoder.layers", 2)),
    # training with gradient checkpointing on: the blocks run through torch.utils.checkpoint, refused
    # where emission meets it (modeling_chatglm.py:298), not split wrong
    Split("glm_blocks", "checkpointing", None, refused={"unsupported-statement"}, train=True),
]
assert {s.folder for s in SPLITS} == set(FOLDERS)

SPLIT = textwrap.dedent("""
    import json, sys, torch, transformers
    from transformers import AutoConfig
    import staticexec
    from staticexec.emit.run import run_chain
    from staticexec.messages import Refused

    folder, splits = sys.argv[1], json.loads(sys.argv[2])
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)  # code from the folder only
    for split in splits:
        auto = getattr(transformers, split["auto"])
        torch.manual_seed(0)
        auto.from_config(config, trust_remote_code=True).save_pretrained(folder)
        model = auto.from_pretrained(folder, trust_remote_code=True).eval()
        if split["train"]:
            model.train()
            for module in model.modules():
                if hasattr(module, "gradient_checkpointing"):
                    module.gradient_checkpointing = True
        assert type(model).__module__.startswith("transformers_modules."), type(model).__module__
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, config.vocab_size - 1, (2, 6), generator=g)
        sample = {"input_ids": ids}
        if split["image"]:  # the image's placeholder tokens, one per patch, inside the text
            side = config.vision_config.image_size
            tokens = (side // config.vision_config.patch_size) ** 2
            sample["input_ids"] = torch.cat([ids[:, :2], torch.full((2, tokens), config.image_token_id), ids[:, 2:]], 1)
            sample["pixel_values"] = torch.randn(2, config.vision_config.num_channels, side, side, generator=g)
        sample["attention_mask"] = torch.ones_like(sample["input_ids"])
        with torch.no_grad():
            expected = getattr(model(**sample), split["output"])
            try:
                # the pipeline's default targets: the model's _no_split_modules
                chain = staticexec.subgraphs(model, sample, split["targets"] or list(model._no_split_modules))
                out = run_chain(model, chain, sample, twice=True)["forward_output"]
            except Refused as exc:
                print(json.dumps({"name": split["name"], "refused": [m.to_json() for m in exc.messages]}))
                continue
        print(json.dumps({"name": split["name"], "subgraphs": [sg.targets for sg in chain],
                          "exact": torch.equal(getattr(out, split["output"]), expected)}))
""")


def _run(code: str, *args: str, env: dict | None = None) -> list[str]:
    """The JSON lines a script prints, run in a fresh interpreter in the folder args[0]."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=args[0] if args else None)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    """Each folder's splits, run once per folder in a fresh interpreter: the folder copied, its model
    built with trust_remote_code, saved with its own modeling files and loaded back from there
    (transformers imports it from its module cache, on sys.path only at run time)."""
    results: dict[str, dict] = {}

    def run(folder: str) -> dict:
        if folder not in results:
            tmp = tmp_path_factory.mktemp(folder)
            copy = tmp / folder
            shutil.copytree(os.path.join(CORPUS, folder), copy)
            env = {"HF_MODULES_CACHE": str(tmp / "modules"), "HF_HUB_OFFLINE": "1"}
            specs = [s.spec for s in SPLITS if s.folder == folder]
            lines = _run(SPLIT, str(copy), json.dumps(specs), env=env)
            results[folder] = {r["name"]: r for r in map(json.loads, lines)}
        return results[folder]

    return run


@pytest.mark.slow  # a fresh interpreter importing torch and transformers per folder: `make verify` runs it
@pytest.mark.parametrize("split", SPLITS, ids=lambda s: f"{s.folder}-{s.name}")
def test_a_remote_code_split_is_exact_under_the_pipelines_double_run(split, splits):
    """The model loaded with trust_remote_code from its saved folder, split with staticexec.subgraphs
    (default targets: the model's _no_split_modules), each subgraph run twice as the pipeline does:
    the output equals the model's own exactly. A folder the analysis can't follow is refused with
    the file and line of each reason."""
    result = splits(split.folder)[split.name]
    if split.subgraphs is None:
        assert {m["kind"] for m in result.get("refused", [])} == split.refused, result
        assert all(m["path"] and m["line"] > 0 for m in result["refused"]), result
        return
    assert "refused" not in result, result["refused"]
    assert result["subgraphs"] == split.subgraphs
    assert result["exact"] is True


LOCAL = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import tinymodel, staticexec

    model = tinymodel.Model()
    sample = {"x": torch.randn(2, 8)}
    chain = staticexec.subgraphs(model, sample, ["Layer"])
    with torch.no_grad():
        print(len(chain), torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample)))
""")


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: `make verify` runs it
def test_a_model_in_a_folder_added_to_sys_path_at_run_time(tmp_path):
    """The layer class is imported absolutely from a folder that is on sys.path, not on PYTHONPATH."""
    (tmp_path / "tinylayers.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            def forward(self, h):
                return h + torch.tanh(self.proj(h))
    """))
    (tmp_path / "tinymodel.py").write_text(textwrap.dedent("""
        from torch import nn
        from tinylayers import Layer

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
    """))
    other = tmp_path / "elsewhere"
    other.mkdir()
    done = subprocess.run([sys.executable, "-c", LOCAL, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=other)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "3 True"
