"""Sweep: build every causal-LM architecture's tiny model and run its forward once.

Prints one line per architecture: name, status (ok / build / inputs / forward /
timeout / crash), parameter MB, reason. One worker process at a time handles the
architectures in turn; it is killed and replaced when one runs past the timeout or
dies, so a single bad model can't stall or take down the sweep.

    .venv/bin/python benchmarks/tiny_sweep.py [--attn eager] [--timeout 120] [ARCH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "@@tiny-sweep "
STARTUP_TIMEOUT = 300.0


def causal_lm_architectures() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    names = set()
    for value in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        names.update([value] if isinstance(value, str) else value)
    return sorted(names)


def run_one(arch: str, attn: str) -> dict:
    import torch

    from staticexec.tiny import TinyBuildError, UnknownArchitecture, build_tiny_model, param_mb, sample_inputs

    try:
        model = build_tiny_model(arch, attn_implementation=attn)
    except UnknownArchitecture as e:
        return {"status": "unknown", "mb": None, "reason": str(e)}
    except TinyBuildError as e:
        return {"status": "build", "mb": None, "reason": upstream(arch, attn) + str(e)}
    mb = param_mb(model)
    try:
        inputs = sample_inputs(model)
    except Exception as e:
        return {"status": "inputs", "mb": mb, "reason": f"{type(e).__name__}: {e}"}
    try:
        with torch.no_grad():
            out = model(**inputs)
    except Exception as e:
        return {"status": "forward", "mb": mb, "reason": f"{type(e).__name__}: {e}"}
    first = out[0] if isinstance(out, tuple) else next(iter(out.values()), None)
    if isinstance(first, torch.Tensor) and not torch.isfinite(first).all():
        return {"status": "forward", "mb": mb, "reason": "non-finite output"}
    return {"status": "ok", "mb": mb, "reason": ""}


def upstream(arch: str, attn: str) -> str:
    """A prefix saying the class defaults themselves can't build the model (tried on meta)."""
    import torch

    from staticexec.tiny import config_class_for, model_class_for

    try:
        config = config_class_for(arch)()
        with torch.device("meta"):
            model_class_for(arch)._from_config(config, attn_implementation=attn)
    except ImportError:
        return "needs a library: "
    except Exception:
        return "upstream: "
    return ""


def worker(attn: str) -> None:
    import torch
    import transformers  # noqa: F401  (imported before "ready", so timeouts measure models only)

    import staticexec.tiny  # noqa: F401

    torch.set_num_threads(1)
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        arch = line.strip()
        if not arch:
            continue
        try:
            result = run_one(arch, attn)
        except BaseException as e:  # a crash inside one model must not end the worker
            result = {"status": "crash", "mb": None, "reason": f"{type(e).__name__}: {e}"}
        result["reason"] = " ".join(str(result["reason"]).split())[:300]
        print(MARK + json.dumps({"arch": arch, **result}), flush=True)


class Worker:
    """A worker process fed one architecture at a time, replaced after a timeout or crash."""

    def __init__(self, attn: str) -> None:
        self.attn = attn
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TRANSFORMERS_VERBOSITY": "error"}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--attn", self.attn],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        if not self.read(STARTUP_TIMEOUT):
            self.stop()
            raise RuntimeError("the sweep worker did not start")

    def read(self, timeout: float) -> dict | None:
        """The worker's next message; {} when it died, None when it ran past `timeout`."""
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            line = self.proc.stdout.readline()
            if not line:
                return {}
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        return None

    def run(self, arch: str, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(arch + "\n")
        self.proc.stdin.flush()
        result = self.read(timeout)
        if result:
            return result
        self.stop()
        if result is None:
            return {"arch": arch, "status": "timeout", "mb": None, "reason": f"over {timeout:g}s"}
        return {"arch": arch, "status": "crash", "mb": None, "reason": "worker died"}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archs", nargs="*", help="architectures (default: every causal LM)")
    parser.add_argument("--attn", default="eager")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.attn)
        return
    archs = args.archs or causal_lm_architectures()
    pool = Worker(args.attn)
    counts: Counter[str] = Counter()
    try:
        for arch in archs:
            result = pool.run(arch, args.timeout)
            counts[result["status"]] += 1
            mb = "-" if result["mb"] is None else f"{result['mb']:.2f}"
            print(f"{arch}\t{result['status']}\t{mb}\t{result['reason']}", flush=True)
    finally:
        pool.stop()
    print("# " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())) + f" total={len(archs)}")


if __name__ == "__main__":
    main()
