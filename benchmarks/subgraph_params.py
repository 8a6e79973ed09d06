"""Benchmark: the largest parameter size a subgraph holds, decoder-layer targets against finer ones.

Sequential calibration holds one subgraph's modules at a time: what must fit is the largest sum,
over one subgraph, of the parameters of the modules it runs (`Subgraph.submodules(model)`, each
parameter counted once). For one MoE model, a tiny random Qwen3-MoE in the shape of the client
tests (hidden 128, 8 experts of width 128, 4 layers), it splits the forward with

- the decoder layers as targets (llm-compressor's default, `_no_split_modules`);
- the attention and the experts of each layer (`Qwen3MoeAttention`, `Qwen3MoeExperts`);
- the same with the experts linearized by llm-compressor's `linearize_moe` (one ExpertMLP each),
  where llm-compressor is installed;
- every Linear, without and with `linearize_moe` (fused experts are parameters, not Linear modules),

and prints, per split, the number of subgraphs, the largest parameter count a subgraph holds and
its share of the model's parameters. The first subgraph (embeddings and what runs before the first
target) and the last (the head) count like any other.

    .venv/bin/python benchmarks/subgraph_params.py [--out FILE.md]
"""

from __future__ import annotations

import argparse

import torch
import transformers

import staticexec


def _model(experts: int = 8, layers: int = 4):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    config = Qwen3MoeConfig(hidden_size=128, intermediate_size=256, moe_intermediate_size=128, num_experts=experts,
                            num_experts_per_tok=2, num_hidden_layers=layers, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=32, vocab_size=256, max_position_embeddings=64)
    torch.manual_seed(0)
    return Qwen3MoeForCausalLM(config).eval()


def largest(model, targets: list[str]) -> tuple[int, int]:
    """(subgraphs, the largest parameter count one subgraph's modules hold) for a split of `model`."""
    sample = {"input_ids": torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(1)),
              "use_cache": False}
    chain = staticexec.subgraphs(model, sample, targets)
    with torch.no_grad():
        staticexec.run_subgraphs(model, chain, sample)  # submodules lists what each entered on its first run
    sizes = []
    for sg in chain:
        params = {id(p): p.numel() for m in sg.submodules(model) for p in m.parameters(recurse=False)}
        sizes.append(sum(params.values()))
    return len(chain), max(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the table to this Markdown file too")
    args = parser.parse_args()
    splits = [("decoder layers", None, ["Qwen3MoeDecoderLayer"]),
              ("attention + experts (fused)", None, ["Qwen3MoeAttention", "Qwen3MoeExperts"])]
    try:
        from llmcompressor.modeling.moe.linearize import linearize_moe
    except ImportError:
        linearize_moe = None
    if linearize_moe is not None:
        splits.append(("attention + experts (linearize_moe)", linearize_moe, ["Qwen3MoeAttention", "ExpertMLP"]))
    splits.append(("every Linear", None, ["Linear"]))
    if linearize_moe is not None:
        splits.append(("every Linear (linearize_moe)", linearize_moe, ["Linear"]))
    lines = ["| targets | subgraphs | largest subgraph, parameters | share of the model |", "|---|---|---|---|"]
    for label, prepare, targets in splits:
        model = _model()
        if prepare is not None:
            prepare(model)
        total = sum(p.numel() for p in model.parameters())
        count, size = largest(model, targets)
        lines.append(f"| {label} (`{', '.join(targets)}`) | {count} | {size:,} | {size / total:.1%} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(f"Made by benchmarks/subgraph_params.py: tiny Qwen3-MoE (hidden 128, 8 experts, 4 layers), "
                         f"transformers {transformers.__version__}, torch {torch.__version__}\n\n" + text)


if __name__ == "__main__":
    main()
