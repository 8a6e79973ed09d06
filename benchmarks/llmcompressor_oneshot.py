"""llm-compressor's oneshot (GPTQ W4A16, sequential pipeline) on tiny models: its own tracer against staticexec.

Each run is a fresh process. staticexec runs twice: with the plans shipped in the package
for the installed transformers (plan loaded and checked against the source, then emission),
and cold (STATICEXEC_SHIPPED_PLANS=0: the analysis runs first). Trace times are those of
the `trace_subgraphs` call alone; the ratios are against llm-compressor's own tracer, measured
in the same run. Run in .venv-client:

    .venv-client/bin/python benchmarks/llmcompressor_oneshot.py --out docs/llmcompressor.md

writes the table between the markers of that file (or prints it without --out).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- oneshot table begin -->", "<!-- oneshot table end -->"


def one(name: str, mode: str) -> dict:
    sys.path.insert(0, ROOT)
    from loguru import logger

    logger.remove()
    from tests.client import cases

    case = cases.CASES[name]
    try:
        run = cases.oneshot_run(case, staticexec=(mode != "fx"))
    except Exception as exc:  # the table reports it
        return {"completed": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"}
    total = sum(1 for _ in cases.quantizable(run.model, case))
    bad = cases.unquantized(run.model, case)
    return {"completed": True, "quantized": total - len(bad), "expected": total,
            "seconds": run.seconds, "trace": run.trace_seconds}


def cell(result: dict) -> str:
    if not result["completed"]:
        return f"fails: {result['error']}"
    return f"{result['quantized']}/{result['expected']} quantized"


def seconds(result: dict) -> str:
    return f"{result['trace']:.2f}" if result.get("completed") else "-"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", nargs=2, metavar=("CASE", "MODE"))
    parser.add_argument("--out")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return 0
    sys.path.insert(0, ROOT)
    from tests.client import cases

    names = args.cases or list(cases.CASES)
    rows = ["| model | llm-compressor's tracer | trace s | staticexec | trace s, shipped plan | ratio | "
            "trace s, cold analysis | ratio |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in names:
        results = {}
        for mode in ("fx", "shipped", "cold"):
            env = dict(os.environ, STATICEXEC_SHIPPED_PLANS="0" if mode == "cold" else "1")
            proc = subprocess.run([sys.executable, __file__, "--one", name, mode], capture_output=True, text=True,
                                  cwd=ROOT, env=env)
            lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
            results[mode] = json.loads(lines[-1]) if lines else {"completed": False, "error": proc.stderr[-120:]}
        fx, shipped, cold = results["fx"], results["shipped"], results["cold"]

        def ratio(r: dict) -> str:
            return f"{r['trace'] / fx['trace']:.0f}x" if fx.get("trace") and r.get("trace") else ""

        rows.append(f"| {name} | {cell(fx)} | {seconds(fx)} | {cell(shipped)} | {seconds(shipped)} | {ratio(shipped)} | "
                    f"{seconds(cold)} | {ratio(cold)} |")
        print(rows[-1], flush=True)
    table = "\n".join(rows) + "\n"
    if args.out:
        with open(args.out, encoding="utf-8") as handle:
            text = handle.read()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(f"{head}{BEGIN}\n{table}{END}{tail}")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
