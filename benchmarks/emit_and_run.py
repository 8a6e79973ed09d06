"""Benchmark: emission from a saved plan, and the subgraph chain against the model's own forward.

For a tiny Llama at 2, 8, 32 and 80 layers it measures, in one process and
side by side (forward and chain runs interleaved, so machine noise hits both
alike):

- emit: staticexec.subgraphs(..., plan=saved) (plan loading, hash check, emission, compile);
  first is the first call with the row's plan (the analysis that made the plan has just run in the
  process, and the rows before it emitted too: the sources are read already), warm the median of the
  next ones; the first trace in a fresh process is in benchmarks/versus_tracer.py;
- forward: model(**inputs) under torch.no_grad, median;
- chain: staticexec.run_subgraphs(...), median;
- the same chain with every run-time check off (staticexec.emit.run.checks_off: the target check with its
  hooks detached, the input version counters, and the branch, loop, code-identity and module-name
  checks), median;
  checked and unchecked runs alternate which goes first;
- the ratios chain / forward, emit (warm) / forward, and the checks' share of the chain (the median
  of the per-repeat differences between checked and unchecked runs, over the chain).

Then forward and chains again with the KV cache off (use_cache=False in the inputs, as llm-compressor
calibrates), without the emission columns; --repeat-80 sets the repeats at 80 layers and more there.

    .venv/bin/python benchmarks/emit_and_run.py [--layers 2 8 32 80] [--repeat 201] [--repeat-80 101]
        [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import tempfile
import time

import torch
import transformers

import staticexec
from staticexec.api import analyse_architecture
from staticexec.emit.run import checks_off

HEADER = ("| layers | emit first (ms) | emit warm (ms) | forward (ms) | chain (ms) | chain, no checks (ms) | "
          "chain / forward | emit / forward | run-time checks / chain |")
HEADER_NO_CACHE = ("| layers | forward (ms) | chain (ms) | chain, no checks (ms) | chain / forward | "
                   "run-time checks / chain |")


def tiny_llama(layers: int) -> transformers.LlamaForCausalLM:
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=layers, max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def ms(seconds: float) -> float:
    return seconds * 1000.0


def measure(layers: int, repeat: int, folder: str, use_cache: bool = True) -> dict:
    """One row. With use_cache=False the inputs say so (as llm-compressor calibrates) and emission is timed
    once only (cold), not repeated."""
    model = tiny_llama(layers)
    torch.manual_seed(1)
    inputs = {"input_ids": torch.randint(3, 256, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
    if not use_cache:
        inputs["use_cache"] = False
    plan = analyse_architecture("LlamaForCausalLM", ["LlamaDecoderLayer"], config=model.config)
    path = os.path.join(folder, f"llama-{layers}.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(plan.to_json())

    start = time.perf_counter()
    subgraphs = staticexec.subgraphs(model, inputs, ["LlamaDecoderLayer"], plan=path)
    cold = time.perf_counter() - start
    warm = [cold]
    for _ in range(repeat if use_cache else 0):
        start = time.perf_counter()
        staticexec.subgraphs(model, inputs, ["LlamaDecoderLayer"], plan=path)
        warm.append(time.perf_counter() - start)

    forward, chain, unchecked = [], [], []
    with torch.no_grad():
        expected = model(**inputs)
        got = staticexec.run_subgraphs(model, subgraphs, inputs)
        assert torch.equal(expected.logits, got.logits), "the chain differs from the model"
        for i in range(repeat):
            start = time.perf_counter()
            model(**inputs)
            forward.append(time.perf_counter() - start)
            # checked and unchecked chains alternate which runs first, so drift and cache warmth hit both alike
            for checked in ((True, False) if i % 2 == 0 else (False, True)):
                with contextlib.nullcontext() if checked else checks_off(model):
                    start = time.perf_counter()
                    staticexec.run_subgraphs(model, subgraphs, inputs)
                    (chain if checked else unchecked).append(time.perf_counter() - start)
    f, c, w = statistics.median(forward), statistics.median(chain), statistics.median(warm[1:] or warm)
    u = statistics.median(unchecked)
    paired = statistics.median(a - b for a, b in zip(chain, unchecked))  # per-repeat pairs: less noise than c - u
    return {"layers": layers, "repeat": repeat, "subgraphs": len(subgraphs), "cold": ms(cold), "warm": ms(w),
            "forward": ms(f), "chain": ms(c), "unchecked": ms(u), "chain_ratio": c / f, "emit_ratio": w / f,
            "check": paired / c}


def row(r: dict) -> str:
    return (f"| {r['layers']} | {r['cold']:.1f} | {r['warm']:.1f} | {r['forward']:.2f} | {r['chain']:.2f} | "
            f"{r['unchecked']:.2f} | {r['chain_ratio']:.2f} | {r['emit_ratio']:.2f} | {100 * r['check']:.1f}% |")


def row_no_cache(r: dict) -> str:
    return (f"| {r['layers']} | {r['forward']:.2f} | {r['chain']:.2f} | {r['unchecked']:.2f} | "
            f"{r['chain_ratio']:.2f} | {100 * r['check']:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 8, 32, 80])
    parser.add_argument("--repeat", type=int, default=201)
    parser.add_argument("--repeat-80", type=int, default=101, help="repeats at 80 layers and more (time)")
    parser.add_argument("--out", help="also write the tables into this Markdown file")
    args = parser.parse_args()
    torch.set_num_threads(1)

    def repeat(layers: int) -> int:
        return args.repeat_80 if layers >= 80 else args.repeat

    lines = [HEADER, "|" + "---|" * 9]
    lines_no_cache = [HEADER_NO_CACHE, "|" + "---|" * 6]
    results, results_no_cache = [], []
    with tempfile.TemporaryDirectory() as folder:
        print("use_cache on (the model's default):\n" + "\n".join(lines), flush=True)
        for layers in args.layers:
            results.append(measure(layers, repeat(layers), folder))
            lines.append(row(results[-1]))
            print(lines[-1], flush=True)
        print("\nuse_cache=False (as llm-compressor calibrates):\n" + "\n".join(lines_no_cache), flush=True)
        for layers in args.layers:
            results_no_cache.append(measure(layers, repeat(layers), folder, use_cache=False))
            lines_no_cache.append(row_no_cache(results_no_cache[-1]))
            print(lines_no_cache[-1], flush=True)
    print("\n" + goals(results, results_no_cache), flush=True)
    if args.out:
        # the other benchmarks' blocks in the file (each between its markers) are kept as they are
        tail = ""
        if os.path.exists(args.out):
            with open(args.out, encoding="utf-8") as handle:
                old = handle.read()
            found = [old.find(m) for m in OTHER_BLOCKS if m in old]
            tail = old[min(found):] if found else ""
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(report(lines, lines_no_cache, results, results_no_cache, args) + ("\n" + tail if tail else ""))


OTHER_BLOCKS = ("<!-- versus tracer begin -->", "<!-- where time goes begin -->", "<!-- oneshot paired begin -->")


def goals(results: list[dict], results_no_cache: list[dict]) -> str:
    """Each goal against the measured row it is about: met or not, from the numbers of this run."""
    checks = []  # emission and the chain against the forward are judged against llm-compressor's tracer (versus_tracer.py)
    for table, rows in (("use_cache on", results), ("use_cache=False", results_no_cache)):
        at = {r["layers"]: r for r in rows}
        for layers in (8, 80):
            if layers in at:
                share = at[layers]["check"]
                checks.append((f"run-time checks / chain at {layers} layers, {table}", f"{100 * share:.1f}%",
                               "at most 2%", share <= 0.02))
    return "\n".join(f"- {name}: {value}, goal {goal}: {'met' if ok else 'not met'}" for name, value, goal, ok in checks)


def report(lines: list[str], lines_no_cache: list[str], results: list[dict], results_no_cache: list[dict],
           args: argparse.Namespace) -> str:
    return f"""# Benchmarks

Measured by `benchmarks/emit_and_run.py` (`make bench`), never by tests. Tiny Llama
(hidden 64, 4 heads, 2 kv heads, vocab 256), batch 2 x 16 tokens, float32 on CPU,
one torch thread, median of {args.repeat} runs ({args.repeat_80} at 80 layers, to keep the
whole run to a few minutes); forward and chain runs interleaved in one process, so the
ratios compare like with like.

- emit first: the first `staticexec.subgraphs(model, inputs, targets, plan=path)` with the
  row's plan (plan loaded and checked against the installed source hashes, functions
  parsed, subgraphs emitted and compiled). It is not a cold start: the analysis that made
  the plan has just run in the same process, and the rows before it emitted too, so the
  sources are read already (the first trace in a fresh process is in the side-by-side with
  llm-compressor's tracer, below). emit warm: the same call again.
- forward: `model(**inputs)`; chain: `staticexec.run_subgraphs(model, subgraphs, inputs)`
  (the strict runner: cache-like rebuilding of values between subgraphs, with every
  run-time check on, as by default).
- chain, no checks: the same under `staticexec.emit.run.checks_off(model)`, which turns off
  all the run-time checks of the chain together:
  - the target check (each subgraph enters exactly the target modules it was emitted for),
    with its hooks detached from the target modules (a target whose class leaves `__call__` to torch
    is entered through `call_target`, which runs the hook without torch's hook dispatch when it is
    the module's only hook);
  - the input version counters (a tensor input a subgraph changed in place raises `ContractError`),
    and, before a run that copies inputs its code writes in place, the search of the model's modules
    for them (`ContractError` when a module holds one too);
  - the branch checks (`expect_branch`: each branch decided at emission is taken again);
  - the loop checks (`expect_loop`: an unrolled loop's iterable gives the same modules, in the
    same order and count; `expect_loop_item`, for an iterable that can change as it is read: each
    later item is still there where the loop takes it);
  - the code-identity checks (`expect_forward`, `expect_method`, `expect_super`,
    `expect_global`: the function that runs is the one the plan inlines, and a module-level
    name resolves to the value emission saw);
  - the module-name checks (`expect_module`: a name that holds a module holds the one at the path
    emission found);
  - the state checks (`expect_rebinding`: `x += ...` on a name bound to the model's state rebinds
    the name rather than change the state in place).

  Checked and unchecked chains run in alternating order, so drift and cache warmth hit both alike.
- run-time checks / chain: the median of the per-repeat differences (checked - unchecked),
  over the chain's median.

Machine: {platform.machine()}, Python {platform.python_version()}, torch {torch.__version__},
transformers {transformers.__version__}.

With `use_cache` on (the model's default: the forward builds a `DynamicCache`; each subgraph
copies the cache layers it reads):

{chr(10).join(lines)}

With the KV cache off (`use_cache=False` in the inputs, as llm-compressor calibrates), the
same measures, emission not repeated:

{chr(10).join(lines_no_cache)}

The run-time checks' goal, against this run's numbers (emission and the chain against the forward
are judged side by side with llm-compressor's own tracer, below):

{goals(results, results_no_cache)}

The chain keeps llm-compressor's Subgraph contract (docs/subgraph-contract.md): each subgraph
copies the mutable values it receives that its code or the code it calls could change (a
decorator's published collector once something is in it, keyword dicts it does more with than
spread into a call, the model's default `DynamicCache`, which the forward builds when `use_cache`
is on: of its per-layer list only the layers the subgraph reads, with their tensors, as it reads
them) so that a second run gives the same outputs, gives back only what it bound or copied, and
`run_subgraphs` rebuilds values between subgraphs as llm-compressor's cache does. A value every batch
gives alike (a decorator's scope that set nothing, `use_cache=False`, an empty `**kwargs`) is learned at the
first run and kept out of the cache (staticexec/emit/constants.py), so a decoder layer's subgraph takes
only the values that change. That cost is per
subgraph, not per FLOP, so it shrinks relative to real layer sizes, and it does not grow with the
depth. The second table shows the chain without the cache, as it runs in calibration, and the
checks' share of that chain.
"""

if __name__ == "__main__":
    main()
