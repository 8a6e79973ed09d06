"""Benchmark: a model with no plan, split in a fresh process on one core.

For each architecture, and each folder of remote code of the project's own corpus
(fixtures/remote_code, built with transformers' trust_remote_code loader, its default targets the
model's `_no_split_modules`), a tiny model is built from its config class (not timed), then
`staticexec.subgraphs(model, sample, model._no_split_modules)` is timed with the shipped
plans turned off (STATICEXEC_SHIPPED_PLANS=0), so the whole analysis runs: names resolved
across files (follow.py, jedi for the rest), call graph, plan, then emission. Every run is a new process,
pinned to one core (taskset, where the machine has it: the report says whether it was) with one torch
thread, so nothing is reused from an earlier run in memory. Two columns:

- first run: jedi's and parso's disk caches empty (a fresh XDG_CACHE_HOME), as on a new machine;
- later runs: the same caches as the first run left them, the median of `--repeat` runs.

Each is given as wall time and as the CPU time of the timed process: on a machine shared with
other work the wall time grows with the load, the CPU time much less. The goals are judged on the wall
time; a model the analysis refuses is not split, and meets neither.

    .venv/bin/python benchmarks/cold_analysis.py [--repeat 3] [--cpu 0] [--out docs/benchmarks-analysis.md]

Two versions side by side: run one copy per core (`--cpu 0` and `--cpu 1`), each with its own
checkout first on PYTHONPATH.

The goals: 2 s at most per model for the later runs, 5 s at most for the first run (wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

ARCHITECTURES = (
    "LlamaForCausalLM", "Qwen3MoeForCausalLM", "GPT2LMHeadModel", "LlavaForConditionalGeneration",
    "WhisperForConditionalGeneration", "T5ForConditionalGeneration", "BartForConditionalGeneration",
)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REMOTE_CODE = os.path.join(ROOT, "fixtures", "remote_code")
GOAL_LATER = 2.0
GOAL_FIRST = 5.0


def one(arch: str) -> dict:
    """In the child process: build the tiny model, then time the split."""
    import time

    import torch

    import staticexec
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs

    from staticexec.messages import Refused

    torch.set_num_threads(1)
    if os.path.isdir(arch):  # a folder of remote code
        model = _remote_code_model(arch)
        sample = {"input_ids": torch.randint(3, 64, (2, 6))}
        sample["attention_mask"] = torch.ones_like(sample["input_ids"])
    else:
        model = build_tiny_model(arch)
        sample = sample_inputs(model)
    targets = list(model._no_split_modules or [])
    start, cpu = time.perf_counter(), time.process_time()
    try:
        subgraphs = len(staticexec.subgraphs(model, sample, targets))
    except Refused:  # the analysis ran to its end; the time is what it took to refuse
        subgraphs = "refused"
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "subgraphs": subgraphs}


def _remote_code_model(folder: str):
    """The folder's model as transformers builds remote code: its config and auto class read from the folder."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    auto = "AutoModelForCausalLM" if "AutoModelForCausalLM" in config.auto_map else "AutoModel"
    torch.manual_seed(0)
    return getattr(transformers, auto).from_config(config, trust_remote_code=True).eval()


def child(arch: str, cache: str, cpu: int) -> dict:
    env = dict(os.environ, STATICEXEC_SHIPPED_PLANS="0", XDG_CACHE_HOME=cache, OMP_NUM_THREADS="1")
    pin = ["taskset", "-c", str(cpu)] if shutil.which("taskset") else []
    done = subprocess.run([*pin, sys.executable, __file__, "--one", arch], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{arch}: the benchmark run failed\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(arch: str, repeat: int, cpu: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        first = child(arch, cache, cpu)
        later = [child(arch, cache, cpu) for _ in range(repeat)]
    label = f"{os.path.relpath(arch, ROOT)} (remote code)" if os.path.isdir(arch) else arch
    return {"arch": label, "subgraphs": first["subgraphs"], "first": first["seconds"], "first_cpu": first["cpu"],
            "later": statistics.median(r["seconds"] for r in later), "later_cpu": statistics.median(r["cpu"] for r in later)}


HEADER = ("| architecture | subgraphs | first run (s) | later runs (s) | first run, CPU (s) | later runs, CPU (s) "
          "| first within 5 s | later within 2 s |")


def row(r: dict) -> str:
    split = r["subgraphs"] != "refused"
    first = "yes" if split and r["first"] <= GOAL_FIRST else "no"
    later = "yes" if split and r["later"] <= GOAL_LATER else "no"
    return (f"| {r['arch']} | {r['subgraphs']} | {r['first']:.2f} | {r['later']:.2f} | {r['first_cpu']:.2f} "
            f"| {r['later_cpu']:.2f} | {first} | {later} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", metavar="ARCH", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=0, help="the core every timed run is pinned to")
    parser.add_argument("--out", help="also write the table into this Markdown file")
    parser.add_argument("architectures", nargs="*", help="architectures or remote-code folders (default: the seven "
                        "architectures above and every folder of fixtures/remote_code)")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    if not args.architectures:
        args.architectures = [*ARCHITECTURES, *(os.path.join(REMOTE_CODE, name) for name in sorted(os.listdir(REMOTE_CODE))
                                                if os.path.isfile(os.path.join(REMOTE_CODE, name, "config.json")))]
    import torch
    import transformers

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [HEADER, "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for arch in args.architectures:
        line = row(measure(arch, args.repeat, args.cpu))
        print(line, flush=True)
        lines.append(line)
    if args.out:
        text = f"""# Benchmark: analysis with no plan

Measured by `benchmarks/cold_analysis.py` (`make bench`), never by tests.
{__doc__.split(chr(10), 2)[2].split(chr(10) + "    .venv")[0].strip()}

Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__},
transformers {transformers.__version__}; load average {load:.1f} when the run began; each run
{"pinned to core " + str(args.cpu) + " with taskset" if shutil.which("taskset") else "not pinned (no taskset here)"}.

{chr(10).join(lines)}

Goals: 2 s at most per model in the later runs, 5 s at most in the first run, judged on the wall
time. With a load average above the number of cores, the wall times measure the load more than the
analysis; the CPU columns show how much of a miss is the load's.
With the plans shipped in the package for the installed transformers, no analysis runs (see
docs/llmcompressor.md).

## Where the time goes

Profiled with cProfile (Llama, Llava). Most names a model file reads at its top level are bound
once, plainly: a class or function statement, an import of a module found on the import path.
`staticexec/analysis/follow.py` follows them through the files' own statements, read with the
standard library's parser, and jedi is asked only where the statements don't say. For the seven
models above, that is a name or two read inside a nested function (the `mask` a closure of
`masking_utils.py` calls; Whisper's helpers local to `_compute_mask_indices`).

Before, jedi answered every lookup and parsed, with parso, every module it followed: 50 to 100
of them, among them `transformers/modeling_utils.py`, `generation/utils.py` and its own
`builtins` stub. Parsing them was about 60% of a first run and pickling them into jedi's cache
about 20%; reading them back was about half of a later run. A first run took 4.3 to 7.0 s, a
later one 1.3 to 2.7 s, on this machine.

What is left is staticexec's own work (for transformers' models about the same in a first and a
later run; the remote-code folders' first runs are the longer ones in the table above): the resolver and
the call graph, libcst parsing each function the call graph enters and computing its positions,
the standard library's parser reading each file the analysis follows, and emission. No automatic
garbage collection runs during the analysis (it walked the millions of objects the analysis keeps).
"""
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
