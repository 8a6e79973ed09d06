"""staticexec.llmcompressor without llm-compressor installed: the call fits, nothing imports it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import staticexec
from staticexec.check.models import build_tiny_model
from staticexec.check.samples import sample_inputs
from staticexec.llmcompressor import trace_subgraphs


# a finder first on sys.meta_path that records every import asked for, found or not: an import of llmcompressor
# that fails (it is not installed here) and is caught leaves nothing in sys.modules, but is asked for all the same
RECORDING = """
import sys
asked = []
class Recorder:
    def find_spec(self, name, path=None, target=None):
        asked.append(name)
        return None
sys.meta_path.insert(0, Recorder())
import staticexec, staticexec.llmcompressor
import staticexec.api, staticexec.cli
import {probe}
print(sorted({{n for n in asked if n.split('.')[0] == 'llmcompressor'}}))
"""


@pytest.mark.parametrize("probe, expected", [("json", "[]"), ("importlib.util; importlib.util.find_spec('llmcompressor')",
                                                                "['llmcompressor']")])
def test_staticexec_never_imports_llmcompressor(probe, expected):
    """Importing staticexec and its llm-compressor module asks for no module of llm-compressor (the second case,
    which asks itself, shows the recorder sees such a request)."""
    run = subprocess.run([sys.executable, "-c", RECORDING.format(probe=probe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == expected


@pytest.mark.parametrize("per, count", [(1, 3), (2, 2)])
def test_trace_subgraphs_takes_the_pipelines_five_positional_arguments(per, count):
    model = build_tiny_model("LlamaForCausalLM")
    sample = sample_inputs(model)
    subgraphs = trace_subgraphs(model, sample, ["LlamaDecoderLayer"], ["_update_causal_mask"], per)
    assert len(subgraphs) == count
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, subgraphs, sample).logits, model(**sample).logits)
