"""Models whose code is not in an installed package: analysed from the files the process runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REMOTE = textwrap.dedent("""
    import sys, torch
    from transformers import AutoConfig, AutoModelForCausalLM
    import staticexec

    folder = sys.argv[1]
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)  # code from the folder only
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config, trust_remote_code=True).save_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)
    assert type(model).__module__.startswith("transformers_modules."), type(model).__module__
    sample = {"input_ids": torch.randint(0, 32, (2, 5)), "attention_mask": torch.ones(2, 5)}
    chain = staticexec.subgraphs(model, sample, None)
    with torch.no_grad():
        same = torch.equal(staticexec.run_subgraphs(model, chain, sample).logits, model(**sample).logits)
    print(len(chain), [sg.targets for sg in chain], same)
""")


def _run(code: str, *args: str, env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=args[0] if args else None)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: `make verify` runs it
def test_a_trust_remote_code_model_is_analysed_from_its_own_folder(tmp_path):
    """Saved with its own modeling files, loaded with trust_remote_code from a local folder:
    transformers imports it from its module cache, which is on sys.path only at run time."""
    folder = tmp_path / "tiny-remote"
    shutil.copytree(os.path.join(ROOT, "fixtures", "remote_code"), folder)
    env = {"HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1"}
    out = _run(REMOTE, str(folder), env=env)
    assert out == "4 [[], ['layers.0'], ['layers.1'], ['layers.2']] True", out


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
