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


def test_staticexec_never_imports_llmcompressor():
    code = "import sys, staticexec, staticexec.llmcompressor; print('llmcompressor' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.parametrize("per, count", [(1, 3), (2, 2)])
def test_trace_subgraphs_takes_the_pipelines_five_positional_arguments(per, count):
    model = build_tiny_model("LlamaForCausalLM")
    sample = sample_inputs(model)
    subgraphs = trace_subgraphs(model, sample, ["LlamaDecoderLayer"], ["_update_causal_mask"], per)
    assert len(subgraphs) == count
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, subgraphs, sample).logits, model(**sample).logits)
