"""oneshot with sequential targets below the decoder layer (`make client`): every Linear, and attention plus experts
on GLM-MoE-DSA with llm-compressor's `linearize_moe` applied (llm-compressor's own test_glm_moe_dsa_trace.py)."""

from __future__ import annotations

import pytest

from .cases import SUBLAYER_CASES, target_modules
from .test_oneshot import assert_same_weights, own_run, staticexec_run
from .test_remote_code_oneshot import w4a16

pytestmark = pytest.mark.client


def _linearize(model) -> None:
    from llmcompressor.modeling.moe.linearize import linearize_moe

    linearize_moe(model)


@pytest.mark.parametrize("name, per_target", [("glm_moe_dsa_experts", ("GlmMoeDsaAttention", "ExpertMLP")),
                                              ("glm_moe_dsa_linear", ("Linear",))])
def test_glm_moe_dsa_linearized_one_subgraph_per_target(name, per_target):
    """One subgraph per attention and per expert call (or per Linear), each target entered by its own subgraph in both
    of the pipeline's passes over every batch, and every targeted Linear quantized (staticexec_run asserts these)."""
    case = SUBLAYER_CASES[name]
    run = staticexec_run(case, recipe=w4a16(case), on_load=_linearize)  # experts' inputs are 64 wide: groups of 8
    targets = target_modules(run.model, case)
    assert len(run.record.subgraph_runs) == len(targets) + 1
    assert any(".experts." in t for t in targets) and any("self_attn" in t for t in targets)
    assert set(run.record.target_calls) == set(targets)


def test_llama_every_linear_a_target():
    case = SUBLAYER_CASES["llama_linear"]
    ours = staticexec_run(case)
    assert len(ours.record.subgraph_runs) == len(target_modules(ours.model, case)) + 1 == 2 * 7 + 1 + 1
    theirs = own_run(case)
    assert len(theirs.record.subgraph_runs) == len(ours.record.subgraph_runs)
    assert_same_weights(ours, theirs, case)
