"""Sweep: build every causal-LM architecture's tiny model and run its own forward once.

Prints one line per architecture: name, status, parameter MB, reason. Each
architecture runs in a worker process with a timeout (staticexec.sweep).

    .venv/bin/python benchmarks/tiny_sweep.py [--attn eager] [--timeout 120] [--jobs 2] [ARCH ...]
"""

from __future__ import annotations

import argparse
import os
from collections import Counter

from staticexec import sweep
from staticexec.analysis.architectures import task_architectures
from staticexec.check.verify import forward_job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archs", nargs="*", help="architectures (default: every causal LM)")
    parser.add_argument("--attn", default="eager")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    archs = args.archs or task_architectures("causal-lm")
    counts: Counter[str] = Counter()

    def show(r: dict) -> None:
        counts[r["status"]] += 1
        mb = f"{r['mb']:.2f}" if r.get("mb") is not None else "-"
        print(f"{r['arch']}\t{r['status']}\t{mb}\t{r['reason']}", flush=True)

    sweep.run(forward_job, archs, {"attn": args.attn}, jobs=args.jobs, timeout=args.timeout, on_result=show)
    print("# " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())) + f" total={len(archs)}")


if __name__ == "__main__":
    main()
