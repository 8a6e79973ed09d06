"""Benchmark: where a chain's time goes, part by part, staticexec beside llm-compressor's own tracer.

Run in the client environment (llm-compressor 0.14, transformers 5.17):

    .venv-client/bin/python benchmarks/where_time_goes.py [--layers 8] [--repeat 301] [--out docs/benchmarks.md]

For the tiny Llama of benchmarks/versus_tracer.py, KV cache off under llm-compressor's
`calibration_forward_context`, both backends' subgraphs are brought to the state the sequential pipeline
gives them (its `IntermediatesCache` filled by the subgraphs before), then each part of the pipeline's
work on the first, a middle and the last subgraph is timed on its own:

- fetch: `cache.fetch(batch, subgraph.input_names)`;
- forward: `subgraph.forward(model, **inputs)`;
- update: `cache.update(batch, outputs)`, into a cache of its own (the pipeline does not keep the last
  subgraph's outputs; the `delete` of the consumed names that follows is not timed).

The middle subgraph's decoder layer, called directly with the inputs the model's forward gives it, is
the baseline: what a subgraph costs beyond it is the backend's overhead.

A second table splits five of those parts further:

- the middle forward: the backend's compiled code called alone (staticexec's emitted function, llm-compressor's
  `forward` of the graph's Python code), and what the backend's `Subgraph.forward` adds around it;
- staticexec's first and last forward: its calls of `wrapper_enter` (each of transformers' forward wrappers
  run up to its call of the function) and of `wrapper_exit` (each run again around the body's result),
  replayed with the arguments one run gave them; and, beside them, the same wrappers each run once around
  a function that does nothing, as the model's own forward runs them once: what is left of the two rows
  above is what staticexec spends on top of running each wrapper a second time;
- staticexec's first update and last fetch: the part spent on the wrappers' states and scopes (the
  `WrapperState` and `WrapperScope` values that carry transformers' forward wrappers, such as
  `can_return_tuple`, from the first subgraph to the last; a wrapper that set nothing for the call passes
  None as its scope, counted with the others), and the part spent on the other values.

Each part is timed twice: warm (called again and again, as a tight loop leaves the processor's caches)
and disturbed (another model's forward runs before each call, as a decoder layer's work runs between
two subgraphs of a chain; a tiny Mistral, of a class the chains don't target: `disturber`). All parts run interleaved, in rotating order; medians, in µs.

With --out, the table replaces the text between the markers `<!-- where time goes begin -->` and
`<!-- where time goes end -->` of that file.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

import torch
import transformers

from versus_tracer import _version, publish, tiny_llama

BEGIN, END = "<!-- where time goes begin -->", "<!-- where time goes end -->"


def disturber():
    """The model whose forward runs before each disturbed call: a tiny Mistral as large as a 2-layer tiny Llama.
    Its class is not the chains' target class: a model of that class whose forward slices its layers (Llama's
    `self.layers[: n]`) registers target modules without a tripwire, and each subgraph would record its next
    run again (emit/registrations.py), a cost the pipeline's chain does not have."""
    config = transformers.MistralConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                        num_key_value_heads=2, num_hidden_layers=2, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.MistralForCausalLM(config).eval()


def prepared(model, subgraphs, batch) -> list[tuple]:
    """For each subgraph: the cache as the pipeline leaves it before the subgraph runs, and its inputs."""
    from llmcompressor.pipelines.cache import IntermediatesCache

    states = []
    cache = IntermediatesCache.empty(1, torch.device("cpu"))
    cache.update(0, batch)
    for index, subgraph in enumerate(subgraphs):
        snapshot = IntermediatesCache([dict(cache.batch_intermediates[0])], cache.offload_device)
        inputs = cache.fetch(0, subgraph.input_names)
        states.append((snapshot, inputs))
        outputs = subgraph.forward(model, **inputs)
        if index < len(subgraphs) - 1:
            cache.update(0, outputs)
            cache.delete(0, subgraph.consumed_names)
    return states


def code_alone(subgraph):
    """The backend's compiled code of a subgraph that has run once, called without its `Subgraph.forward`."""
    from staticexec.emit.run import Subgraph

    if isinstance(subgraph, Subgraph):
        return subgraph._fn
    return subgraph._code.globals["forward"]


def of_wrappers(values: dict, wanted: bool) -> dict:
    """The values that carry a forward wrapper from the first subgraph to the last (or all the others)."""
    from staticexec.emit.runtime import WrapperScope, WrapperState

    return {k: v for k, v in values.items() if isinstance(v, (WrapperState, WrapperScope)) == wanted}


def wrapper_calls(model, subgraph, inputs: dict) -> tuple[list, list]:
    """The calls of `wrapper_enter` and `wrapper_exit` one run of a staticexec subgraph makes, with their
    arguments as they were at the call (the keywords copied: `wrapper_enter` rewrites them in place)."""
    from staticexec.emit import runtime

    entered, exited = [], []
    enter, exit_ = runtime.wrapper_enter, runtime.wrapper_exit

    def record_enter(self, kw, decorator, fn, where):
        entered.append((self, dict(kw), decorator, fn, where))
        return enter(self, kw, decorator, fn, where)

    def record_exit(self, state, scope, output, decorator, fn):
        exited.append((self, state, scope, output, decorator, fn))
        return exit_(self, state, scope, output, decorator, fn)

    runtime.wrapper_enter, runtime.wrapper_exit = record_enter, record_exit
    try:
        subgraph.forward(model, **inputs)
    finally:
        runtime.wrapper_enter, runtime.wrapper_exit = enter, exit_
    return entered, exited


def empty_body(decorator, fn):
    """The decorator's own wrapper around a function that does nothing (with `fn`'s signature, as the runtime's
    stand-ins have it): what the wrapper's code costs when it runs once, as in the model's own forward."""
    from staticexec.emit.runtime import _stand_in

    return decorator(_stand_in(fn, lambda *args, **kwargs: None))


def wrapper_parts(model, subgraph, inputs: dict, where: str) -> dict:
    """staticexec's first forward: its `wrapper_enter` calls, replayed; its last: its `wrapper_exit` calls; and,
    with the first, the same wrappers each run once around an empty body."""
    from staticexec.emit import runtime

    entered, exited = wrapper_calls(model, subgraph, inputs)
    out = {}
    if where == "first" and entered:
        out["forward, wrappers entered"] = lambda calls=entered: [
            runtime.wrapper_enter(self, dict(kw), decorator, fn, at) for self, kw, decorator, fn, at in calls]
        bare = [(empty_body(decorator, fn), self, kw) for self, kw, decorator, fn, _ in entered]
        out["forward, wrappers alone"] = lambda calls=bare: [
            wrapped(self, **kw) if self is not None else wrapped(**kw) for wrapped, self, kw in calls]
    if where == "last" and exited:
        out["forward, wrappers exited"] = lambda calls=exited: [runtime.wrapper_exit(*call) for call in calls]
    return out


def parts(model, subgraphs, batch, prefix: str) -> dict:
    """The timed calls of one backend: fetch, forward and update of the first, a middle and the last subgraph,
    and the finer parts of the second table."""
    from llmcompressor.pipelines.cache import IntermediatesCache

    states = prepared(model, subgraphs, batch)
    out = {}
    for where, index in (("first", 0), ("middle", len(subgraphs) // 2), ("last", len(subgraphs) - 1)):
        subgraph = subgraphs[index]
        cache, inputs = states[index]
        outputs = subgraph.forward(model, **inputs)
        out[(prefix, where, "fetch")] = lambda c=cache, s=subgraph: c.fetch(0, s.input_names)
        out[(prefix, where, "forward")] = lambda s=subgraph, i=inputs: s.forward(model, **i)
        if where != "last":  # into a cache of its own, which each call fills again with the same values
            target = IntermediatesCache.empty(1, torch.device("cpu"))
            out[(prefix, where, "update")] = lambda t=target, o=outputs: t.update(0, o)
        if where == "middle":  # given as its code gets them: with the chain's constants bound
            given = subgraph.bound_inputs(inputs) if hasattr(subgraph, "bound_inputs") else inputs
            out[(prefix, where, "code alone")] = lambda f=code_alone(subgraph), i=given: f(model, **i)
        if prefix == "staticexec" and where == "first":
            for wanted, name in ((True, "update, wrappers"), (False, "update, others")):
                target = IntermediatesCache.empty(1, torch.device("cpu"))
                out[(prefix, where, name)] = lambda t=target, o=of_wrappers(outputs, wanted): t.update(0, o)
        if prefix == "staticexec" and where in ("first", "last"):
            for name, call in wrapper_parts(model, subgraph, inputs, where).items():
                out[(prefix, where, name)] = call
        if prefix == "staticexec" and where == "last":
            for wanted, name in ((True, "fetch, wrappers"), (False, "fetch, others")):
                names = list(of_wrappers(inputs, wanted))
                out[(prefix, where, name)] = lambda c=cache, n=names: c.fetch(0, n)
    return out


def layer_inputs(model, batch, path: str) -> tuple:
    """The decoder layer at `path` and the arguments the model's own forward calls it with."""
    layer = model.get_submodule(path)
    seen = {}

    def hook(module, args, kwargs):
        seen["call"] = (args, dict(kwargs))

    handle = layer.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        model(**batch)
    finally:
        handle.remove()
    return layer, seen["call"]


def measure(layers: int, repeat: int) -> tuple[dict, int, int]:
    from llmcompressor.args import DatasetArguments
    from llmcompressor.pipelines.sequential import helpers
    from llmcompressor.utils.helpers import calibration_forward_context

    from staticexec.llmcompressor import trace_subgraphs

    model, other = tiny_llama(layers), disturber()
    torch.manual_seed(1)
    batch = {"input_ids": torch.randint(3, 256, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
    targets, ignore = ["LlamaDecoderLayer"], DatasetArguments().tracing_ignore
    fx = helpers.trace_subgraphs(model, batch, targets, ignore)
    sx = trace_subgraphs(model, batch, targets, ignore)
    with calibration_forward_context(model), calibration_forward_context(other):
        (path,) = sx[len(sx) // 2].targets  # the middle subgraph's layer
        layer, (args, kwargs) = layer_inputs(model, batch, path)
        calls = {("layer", "middle", "called directly"): lambda: layer(*args, **kwargs)}
        calls.update(parts(model, fx, batch, "llm-compressor"))
        calls.update(parts(model, sx, batch, "staticexec"))
        times: dict = {(key, mode): [] for key in calls for mode in ("warm", "disturbed")}
        order = list(calls)
        for fn in calls.values():
            fn()
        for i in range(repeat):
            for key in order[i % len(order):] + order[: i % len(order)]:
                fn = calls[key]
                for mode in ("warm", "disturbed"):
                    if mode == "disturbed":
                        other(**batch)
                    else:
                        fn()
                    start = time.perf_counter()
                    fn()
                    times[(key, mode)].append(time.perf_counter() - start)
    return {key: statistics.median(values) * 1e6 for key, values in times.items()}, len(fx), len(sx)


def report(medians: dict, layers: int, subgraphs: tuple[int, int], repeat: int) -> str:
    rows = []
    for where in ("first", "middle", "last"):
        for part in ("fetch", "forward", "update"):
            got = [medians.get(((backend, where, part), mode)) for backend in ("llm-compressor", "staticexec")
                   for mode in ("warm", "disturbed")]
            if None in got:
                continue
            rows.append(f"| {where} | {part} | {got[0]:.1f} | {got[2]:.1f} | {got[1]:.1f} | {got[3]:.1f} |")
    direct = {mode: medians[(("layer", "middle", "called directly"), mode)] for mode in ("warm", "disturbed")}

    def summed(backend: str, mode: str, wheres: tuple[str, ...]) -> float:
        return sum(value for ((who, where, part), m), value in medians.items() if who == backend and m == mode
                   and where in wheres and part in ("fetch", "forward", "update"))

    lines = [("the middle subgraph's decoder layer, called directly", lambda mode: direct[mode])]
    for backend in ("llm-compressor", "staticexec"):
        lines.append((f"{backend}: the middle subgraph, all three parts, beyond the layer",
                      lambda mode, b=backend: summed(b, mode, ("middle",)) - direct[mode]))
    for backend in ("llm-compressor", "staticexec"):
        lines.append((f"{backend}: the first and the last subgraph, all parts",
                      lambda mode, b=backend: summed(b, mode, ("first", "last"))))
    summary = "\n".join(f"| {name} | {value('warm'):.1f} | {value('disturbed'):.1f} |" for name, value in lines)

    def cell(backend: str, where: str, part: str, mode: str) -> str:
        value = medians.get(((backend, where, part), mode))
        return "" if value is None else f"{value:.1f}"

    def beyond(backend: str, mode: str) -> str:
        whole, code = (medians[((backend, "middle", part), mode)] for part in ("forward", "code alone"))
        return f"{whole - code:.1f}"

    split = [("middle", "forward: the compiled code alone", lambda b, m: cell(b, "middle", "code alone", m)),
             ("middle", "forward: what `Subgraph.forward` adds", beyond)]
    split += [("first", "forward: the wrappers entered (`wrapper_enter`, each up to its call)",
               lambda b, m: cell(b, "first", "forward, wrappers entered", m)),
              ("first", "for reference: the same wrappers, each run once around an empty body",
               lambda b, m: cell(b, "first", "forward, wrappers alone", m)),
              ("last", "forward: the wrappers exited (`wrapper_exit`, each run again around the result)",
               lambda b, m: cell(b, "last", "forward, wrappers exited", m))]
    for where, part in (("first", "update"), ("last", "fetch")):
        for suffix, what in (("wrappers", "the wrappers' states and scopes"), ("others", "the other values")):
            split.append((where, f"{part}: {what}",
                          lambda b, m, w=where, p=f"{part}, {suffix}": cell(b, w, p, m)))
    finer = "\n".join(f"| {where} | {part} | " + " | ".join(value(b, m) for m in ("warm", "disturbed")
                                                            for b in ("llm-compressor", "staticexec")) + " |"
                       for where, part, value in split)
    return f"""{BEGIN}
Measured by `benchmarks/where_time_goes.py` in `.venv-client` (llm-compressor {_version("llmcompressor")},
transformers {transformers.__version__}, torch {torch.__version__}, {platform.machine()}, one torch thread):
tiny Llama, {layers} layers ({subgraphs[0]} subgraphs from llm-compressor's tracer, {subgraphs[1]} from staticexec),
KV cache off, median of {repeat} interleaved calls of each part, in µs. Warm: the part called again right
after itself; disturbed: another model's forward (a tiny Mistral, of a class no chain targets) run before it, as a layer's work runs between two subgraphs.

| subgraph | part | llm-compressor, warm | staticexec, warm | llm-compressor, disturbed | staticexec, disturbed |
|---|---|---|---|---|---|
{chr(10).join(rows)}

| sum | warm | disturbed |
|---|---|---|
{summary}

Split further (the same run; each part timed on its own, so parts need not add up exactly):

| subgraph | part | llm-compressor, warm | staticexec, warm | llm-compressor, disturbed | staticexec, disturbed |
|---|---|---|---|---|---|
{finer}
{END}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=301)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from loguru import logger

    logger.remove()
    medians, fx, sx = measure(args.layers, args.repeat)
    publish(report(medians, args.layers, (fx, sx), args.repeat), args.out, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
