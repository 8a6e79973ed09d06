"""Plans are byte-identical from the first cold run (parallel workers, empty jedi and plan caches) and
under another hash seed.

Every causal LM's forward calls `slice_logits_to_keep`, whose
`torch.take_along_dim` jedi finds in torch's 30,000-line stub. Parallel
workers on a cold jedi cache once read that stub's cache file while another
was writing it, and left the call unresolved in 127 plans.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys

import pytest

import committed

ARCHS = ["LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM", "GemmaForCausalLM", "Phi3ForCausalLM",
         "Qwen3ForCausalLM"]
COLD_RUN = """
import json, sys
from staticexec import sweep
from staticexec.plans import plan_job
rows = sweep.run(plan_job, sys.argv[3:], {"out": sys.argv[1], "cache": sys.argv[2]}, jobs=2, timeout=600)
print(json.dumps([r["status"] for r in rows]))
"""


def cold_plans(tmp_path, name: str, archs: list[str]) -> str:
    """Plan `archs` with two workers, in a fresh process with empty jedi (XDG_CACHE_HOME) and plan caches."""
    root = tmp_path / name
    out, xdg = root / "plans", root / "xdg"
    out.mkdir(parents=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg)}
    done = subprocess.run([sys.executable, "-c", COLD_RUN, str(out), str(root / "plan-cache"), *archs],
                          env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == '["' + '", "'.join(["ok"] * len(archs)) + '"]', done.stdout + done.stderr
    assert (xdg / "jedi").is_dir()  # jedi's cache was the fresh one
    return str(out)


@pytest.mark.slow
def test_two_cold_parallel_runs_equal_the_committed_plans(tmp_path):
    folder = committed.require_installed()
    first, second = cold_plans(tmp_path, "first", ARCHS), cold_plans(tmp_path, "second", ARCHS)
    for arch in ARCHS:
        name = f"{arch}.json"
        assert filecmp.cmp(os.path.join(first, name), os.path.join(second, name), shallow=False), arch
        assert filecmp.cmp(os.path.join(first, name), os.path.join(folder, name), shallow=False), arch


@pytest.mark.slow
def test_plan_is_the_same_under_another_hash_seed(tmp_path):
    """Two `staticexec plan` processes with different PYTHONHASHSEEDs write the same bytes."""
    a, b = tmp_path / "a", tmp_path / "b"
    env = dict(os.environ, PYTHONHASHSEED="123")
    first = subprocess.run([sys.executable, "-m", "staticexec.cli", "plan", "Qwen2ForCausalLM", "--out", str(a)],
                           capture_output=True, text=True, env=env, timeout=600)
    env["PYTHONHASHSEED"] = "7"
    second = subprocess.run([sys.executable, "-m", "staticexec.cli", "plan", "Qwen2ForCausalLM", "--out", str(b)],
                            capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert (a / "Qwen2ForCausalLM.json").read_bytes() == (b / "Qwen2ForCausalLM.json").read_bytes()
