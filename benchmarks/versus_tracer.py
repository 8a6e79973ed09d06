"""Benchmark: staticexec against llm-compressor's own tracer, side by side in one process.

Run in the client environment (llm-compressor 0.14, transformers 5.17):

    .venv-client/bin/python benchmarks/versus_tracer.py [--layers 2 8 32 80] [--repeat 101]
        [--oneshot-size-repeat 31] [--out docs/benchmarks.md]

For a tiny Llama (hidden 64, as benchmarks/emit_and_run.py) at each depth:

- trace: llm-compressor's `trace_subgraphs` (torch.fx), and staticexec's `trace_subgraphs` from the plan
  shipped for the installed transformers (plan loaded and checked, emission, compile), both called with
  the arguments the sequential pipeline gives them, before its calibration context, again and again in
  one process (what staticexec keeps per plan and class, and per plan and depth, is made at the first
  call); medians, each trace timed after a garbage collection (so neither pays for what the other or the
  chains before it left). staticexec's analysis is made to fail for the whole run: every trace must take
  the shipped plan;
- first trace: the first call of each, in a fresh process (as a pipeline run makes it: nothing kept
  yet), at 8 and 80 layers, in pairs of processes alternating which backend goes first; medians;
- forward: `model(**batch)`;
- chain: each backend's subgraphs run as the pipeline runs them, through its `IntermediatesCache`
  (fetch the subgraph's inputs, `forward`, update, delete the consumed names), one pass;
- chain without the cache: the same subgraphs, each one's outputs handed to the next as they are (a plain
  dict), to tell what the pipeline's cache costs each backend from what its subgraphs cost.

Then, with the KV cache off, forward and chains (not traces) once more at the size of the model that
benchmarks/oneshot_paired.py calibrates, on one sample of its length: what the per-subgraph cost comes to
beside layers that do real work (no goal is judged on it).

KV cache off: forward and chains under llm-compressor's `calibration_forward_context` (no grad, cache
off, eval, eager attention), as it calibrates. KV cache on: under `torch.no_grad()` only, the model's
default `DynamicCache`; there the per-subgraph overhead ((chain - forward) / subgraphs) is compared
between depths. Forward and the four chains run interleaved, in rotating order, so noise hits all alike;
every staticexec run has all its run-time checks on.

With --out, the tables and the goals judged from this run's numbers replace the text between the
markers `<!-- versus tracer begin -->` and `<!-- versus tracer end -->` of that file.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import statistics
import sys
import time

import torch
import transformers

BEGIN, END = "<!-- versus tracer begin -->", "<!-- versus tracer end -->"
HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_llama(layers: int):
    sys.path.insert(0, HERE)
    from emit_and_run import tiny_llama as build

    return build(layers)


def pipeline_chain(model, subgraphs, batch) -> None:
    """One pass over the chain as llm-compressor's SequentialPipeline runs it, with its cache."""
    from llmcompressor.pipelines.cache import IntermediatesCache

    cache = IntermediatesCache.empty(1, torch.device("cpu"))
    cache.update(0, batch)
    for index, subgraph in enumerate(subgraphs):
        inputs = cache.fetch(0, subgraph.input_names)
        outputs = subgraph.forward(model, **inputs)
        if index < len(subgraphs) - 1:  # as the pipeline: the last outputs are not kept
            cache.update(0, outputs)
            cache.delete(0, subgraph.consumed_names)


def plain_chain(model, subgraphs, batch) -> None:
    """One pass over the chain without the pipeline's cache: each subgraph's outputs handed on as they are (and,
    as the cache fetches, each subgraph given the names it takes that are there)."""
    values = dict(batch)
    for subgraph in subgraphs:
        values.update(subgraph.forward(model, **{name: values[name] for name in subgraph.input_names if name in values}))


def timed(fn, collect: bool = False) -> float:
    if collect:
        gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def first_trace(backend: str, layers: int) -> float:
    """In a fresh process: the first trace of the tiny Llama by `backend` ("fx" or "sx"), in ms, its imports done."""
    from llmcompressor.args import DatasetArguments
    from llmcompressor.pipelines.sequential import helpers

    import staticexec.llmcompressor

    _analysis_forbidden()
    model = tiny_llama(layers)
    torch.manual_seed(1)
    batch = {"input_ids": torch.randint(3, 256, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
    trace = helpers.trace_subgraphs if backend == "fx" else staticexec.llmcompressor.trace_subgraphs
    return 1000 * timed(lambda: trace(model, batch, ["LlamaDecoderLayer"], DatasetArguments().tracing_ignore), True)


def first_traces(layers: int, pairs: int) -> dict:
    """Medians of the first trace of each backend, each in a fresh process, in pairs alternating which goes first."""
    import subprocess

    times: dict[str, list[float]] = {"fx": [], "sx": []}
    for pair in range(pairs):
        for backend in (("fx", "sx") if pair % 2 == 0 else ("sx", "fx")):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--first", backend, str(layers)],
                                  capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
            lines = [line for line in proc.stdout.splitlines() if line.startswith("first ")]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"the first {backend} trace at {layers} layers failed:\n{proc.stderr[-2000:]}")
            times[backend].append(float(lines[-1].split()[1]))
    return {"layers": layers, "pairs": pairs, **{k: statistics.median(v) for k, v in times.items()}}


def _analysis_forbidden() -> None:
    """staticexec's analysis made to fail: a trace that did not take the shipped plan (stale, or none for this
    release) stops the benchmark instead of timing an analysis as emission."""
    import staticexec.api

    def forbidden(*args, **kwargs):
        raise RuntimeError("the benchmark's traces must take the plan shipped for the installed transformers, "
                           "and the analysis ran: is the plan for this release there and current?")

    staticexec.api.analyse = forbidden


def measure(layers: int, repeat: int, use_cache: bool) -> dict:
    """The tiny Llama at one depth: traces, forward and chains."""
    model = tiny_llama(layers)
    torch.manual_seed(1)
    batch = {"input_ids": torch.randint(3, 256, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
    return {"layers": layers, "use_cache": use_cache,
            **side_by_side(model, batch, repeat, use_cache, traces=max(5, repeat // 10))}


def at_oneshot_size(repeat: int) -> dict:
    """The Llama of benchmarks/oneshot_paired.py, one sample of its length, KV cache off: forward and chains."""
    from oneshot_paired import TOKENS, llama_config

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(llama_config(256)).eval()
    torch.manual_seed(1)
    batch = {"input_ids": torch.randint(3, 256, (1, TOKENS)), "attention_mask": torch.ones(1, TOKENS, dtype=torch.long)}
    return side_by_side(model, batch, repeat, False, traces=0)


def side_by_side(model, batch: dict, repeat: int, use_cache: bool, traces: int) -> dict:
    """Both backends on one model: `traces` timed traces of each (none: not timed), then forward and the four
    chains interleaved, `repeat` times; medians in ms, and the overhead per subgraph."""
    from llmcompressor.args import DatasetArguments
    from llmcompressor.pipelines.sequential import helpers
    from llmcompressor.utils.helpers import calibration_forward_context

    from staticexec.llmcompressor import trace_subgraphs

    targets, ignore = ["LlamaDecoderLayer"], DatasetArguments().tracing_ignore
    fx_trace, sx_trace = [], []
    for i in range(traces):  # alternating which goes first
        for backend in (("fx", "sx") if i % 2 == 0 else ("sx", "fx")):
            if backend == "fx":
                fx_trace.append(timed(lambda: helpers.trace_subgraphs(model, batch, targets, ignore), True))
            else:
                sx_trace.append(timed(lambda: trace_subgraphs(model, batch, targets, ignore), True))
    fx = helpers.trace_subgraphs(model, batch, targets, ignore)
    sx = trace_subgraphs(model, batch, targets, ignore)
    runs = {"forward": lambda: model(**batch), "fx": lambda: pipeline_chain(model, fx, batch),
            "sx": lambda: pipeline_chain(model, sx, batch), "fx_plain": lambda: plain_chain(model, fx, batch),
            "sx_plain": lambda: plain_chain(model, sx, batch)}
    times: dict[str, list] = {name: [] for name in runs}
    context = calibration_forward_context(model) if not use_cache else torch.no_grad()
    with context:
        for fn in runs.values():  # warm up
            fn()
        order = list(runs)
        for i in range(repeat):
            for name in order[i % len(order):] + order[: i % len(order)]:
                times[name].append(timed(runs[name]))
    med = {name: statistics.median(values) * 1000 for name, values in times.items()}
    return {"fx_subgraphs": len(fx), "sx_subgraphs": len(sx),
            **({"fx_trace": statistics.median(fx_trace) * 1000, "sx_trace": statistics.median(sx_trace) * 1000}
               if traces else {}), **med,
            "sx_overhead": (med["sx"] - med["forward"]) / len(sx), "fx_overhead": (med["fx"] - med["forward"]) / len(fx)}


HEADER = ("| layers | KV cache | llm-compressor trace (ms) | staticexec emission (ms) | emission / trace | forward (ms) | "
          "llm-compressor chain / forward | staticexec chain / forward | staticexec chain / llm-compressor chain | "
          "overhead per subgraph, llm-compressor / staticexec (µs) |")


def row(r: dict) -> str:
    return (f"| {r['layers']} | {'on' if r['use_cache'] else 'off'} | {r['fx_trace']:.1f} | {r['sx_trace']:.1f} | "
            f"{r['sx_trace'] / r['fx_trace']:.2f} | {r['forward']:.2f} | {r['fx'] / r['forward']:.3f} | "
            f"{r['sx'] / r['forward']:.3f} | {r['sx'] / r['fx']:.3f} | {1000 * r['fx_overhead']:.0f} / "
            f"{1000 * r['sx_overhead']:.0f} |")


CACHE_HEADER = ("| layers | KV cache | llm-compressor chain / forward, through the cache | without it | "
                "staticexec chain / forward, through the cache | without it |")


def cache_row(r: dict) -> str:
    return (f"| {r['layers']} | {'on' if r['use_cache'] else 'off'} | {r['fx'] / r['forward']:.3f} | "
            f"{r['fx_plain'] / r['forward']:.3f} | {r['sx'] / r['forward']:.3f} | {r['sx_plain'] / r['forward']:.3f} |")


def goals(rows: list[dict]) -> list[tuple[str, str, bool]]:
    at = {(r["layers"], r["use_cache"]): r for r in rows}
    out = []
    for layers in (8, 80):
        r = at.get((layers, False))
        if r:
            ratio = r["sx"] / r["forward"]
            out.append((f"chain / forward at {layers} layers, KV cache off", f"{ratio:.3f}, goal at most 1.03 "
                        f"(llm-compressor's own chain: {r['fx'] / r['forward']:.3f}; without the pipeline's cache, "
                        f"llm-compressor's {r['fx_plain'] / r['forward']:.3f} and staticexec's "
                        f"{r['sx_plain'] / r['forward']:.3f}; the pipeline's cache alone adds "
                        f"{(r['fx'] - r['fx_plain']) / r['forward']:.3f} of the forward to llm-compressor's chain)",
                        ratio <= 1.03))
    if (8, True) in at and (80, True) in at:
        growth = at[(80, True)]["sx_overhead"] / at[(8, True)]["sx_overhead"]
        out.append(("per-subgraph overhead at 80 layers / at 8, KV cache on", f"{growth:.2f}, goal at most 1.2",
                    growth <= 1.2))
    r = at.get((80, False))
    if r:
        ratio = r["sx_trace"] / r["fx_trace"]
        out.append(("emission / llm-compressor's trace at 80 layers", f"{ratio:.2f}, goal at most 0.5", ratio <= 0.5))
    return out


SIZE_HEADER = ("| forward (ms) | llm-compressor chain / forward, through the cache | without it | staticexec chain / "
               "forward, through the cache | without it | staticexec chain / llm-compressor chain | overhead per "
               "subgraph, llm-compressor / staticexec (µs) |")


def size_table(r: dict | None, args: argparse.Namespace) -> str:
    """The chains at the size of the `oneshot` benchmark (no goal of their own: what the per-subgraph cost comes
    to beside layers of that size); empty when not measured."""
    if r is None:
        return ""
    from oneshot_paired import HIDDEN, LAYERS, TOKENS

    return f"""
At the size of the `oneshot` benchmark below ({LAYERS}-layer Llama, hidden {HIDDEN}), one sample of {TOKENS} tokens,
KV cache off, the same chains (median of {args.oneshot_size_repeat} interleaved runs; {r['fx_subgraphs']} subgraphs
from llm-compressor's tracer, {r['sx_subgraphs']} from staticexec). These ratios are not goals: they show what the
per-subgraph cost above comes to beside layers that do that much work.

{SIZE_HEADER}
|{"---|" * 7}
| {r['forward']:.1f} | {r['fx'] / r['forward']:.3f} | {r['fx_plain'] / r['forward']:.3f} | {r['sx'] / r['forward']:.3f} | \
{r['sx_plain'] / r['forward']:.3f} | {r['sx'] / r['fx']:.3f} | {1000 * r['fx_overhead']:.0f} / {1000 * r['sx_overhead']:.0f} |
"""


def first_lines(firsts: list[dict]) -> str:
    """The first traces in fresh processes, beside the goal judged on repeated calls."""
    if not firsts:
        return ""
    cells = "; ".join(f"{f['layers']} layers: llm-compressor {f['fx']:.1f} ms, staticexec {f['sx']:.1f} ms, "
                      f"{f['sx'] / f['fx']:.2f}" for f in firsts)
    return (f"\nThe first trace in a fresh process, as one pipeline run makes it (median of {firsts[0]['pairs']} pairs "
            f"of processes; no goal is judged on it): {cells}.\n")


def report(rows: list[dict], sized: dict | None, args: argparse.Namespace, firsts: list[dict] = ()) -> str:
    judged = "\n".join(f"- {name}: {value}: {'met' if ok else 'not met'}" for name, value, ok in goals(rows))
    return f"""{BEGIN}
Measured by `benchmarks/versus_tracer.py` in `.venv-client` (llm-compressor {_version("llmcompressor")},
transformers {transformers.__version__}, torch {torch.__version__}, {platform.machine()}, one torch thread),
median of {args.repeat} interleaved runs per depth (traces: median of {max(5, args.repeat // 10)}, each after a garbage collection):

{HEADER}
|{"---|" * 10}
{chr(10).join(row(r) for r in rows)}

The same chains, and the same subgraphs run again with each one's outputs handed to the next as they are
(no `IntermediatesCache`): what the pipeline's cache costs each backend, apart from what its subgraphs cost.

{CACHE_HEADER}
|{"---|" * 6}
{chr(10).join(cache_row(r) for r in rows)}
{size_table(sized, args)}{first_lines(list(firsts))}
Goals, against this run's numbers (emission: the median of repeated calls in one process, in the table above):

{judged}
{END}"""


def publish(text: str, path: str | None, begin: str, end: str) -> None:
    """Print `text` (which starts with `begin` and ends with `end`); with a path, also put it in place of what
    lies between the markers in that file, or at its end when it has none."""
    print(text)
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        old = handle.read()
    head, sep, rest = old.partition(begin)
    tail = rest.partition(end)[2] if sep else "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{head}{text}{tail}" if sep else f"{old.rstrip()}\n\n{text}\n")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 8, 32, 80])
    parser.add_argument("--repeat", type=int, default=101)
    parser.add_argument("--oneshot-size-repeat", type=int, default=31,
                        help="interleaved runs at the oneshot benchmark's size (0: not measured)")
    parser.add_argument("--first-pairs", type=int, default=5,
                        help="pairs of fresh processes for the first traces at 8 and 80 layers (0: not measured)")
    parser.add_argument("--first", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from loguru import logger

    logger.remove()
    if args.first:
        print(f"first {first_trace(args.first[0], int(args.first[1])):.3f}")
        return 0
    _analysis_forbidden()
    rows = []
    print(HEADER + "\n|" + "---|" * 10, flush=True)
    for use_cache in (False, True):
        for layers in args.layers:
            rows.append(measure(layers, args.repeat, use_cache))
            print(row(rows[-1]), flush=True)
    sized = at_oneshot_size(args.oneshot_size_repeat) if args.oneshot_size_repeat else None
    firsts = [first_traces(layers, args.first_pairs) for layers in (8, 80) if args.first_pairs]
    publish(report(rows, sized, args, firsts), args.out, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
