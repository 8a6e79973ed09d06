"""Run one job per architecture in worker processes: isolated, parallel, with timeouts.

A job is a module-level function `job(arch, options) -> dict` of the caller's module
(`verify.sweep_job`, `plans.plan_job`, `matrix.run_case`); the worker imports it by name,
so this module knows no job. A worker imports torch and transformers once and then takes
architectures one at a time; it is killed and replaced when one runs past the timeout or
crashes, so a single bad model can't stall or end a sweep. Results come back as JSON lines.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable

MARK = "@@staticexec-sweep "
STARTUP_TIMEOUT = 300.0


def job_name(job: Callable[[str, dict], dict]) -> str:
    """The name a worker imports a job by: `module:function` (a job of a module run with `-m` is
    named by that module, not `__main__`, which in the worker is the sweep itself)."""
    module = job.__module__
    if module == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        if spec is None:
            raise ValueError(f"sweep job {job.__qualname__} is in a script, not an importable module")
        module = spec.name
    return f"{module}:{job.__qualname__}"


def worker(name: str, options: dict) -> None:
    """Run a worker process: import the job once, then print one JSON line per architecture read from stdin."""
    import importlib

    import torch
    import transformers  # noqa: F401  imported before "ready", so timeouts measure the job only

    torch.set_num_threads(1)
    module, _, function = name.partition(":")
    job = getattr(importlib.import_module(module), function)
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        arch = line.strip()
        if not arch:
            continue
        try:
            result = job(arch, options)
        except BaseException as exc:  # one architecture's crash must not end the worker
            result = {"status": "crash", "reason": f"{type(exc).__name__}: {exc}"}
        result["reason"] = " ".join(str(result.get("reason", "")).split())[:300]
        print(MARK + json.dumps({"arch": arch, **result}), flush=True)


class Worker:
    """A worker process fed one architecture at a time, replaced after a timeout or crash."""

    def __init__(self, name: str, options: dict) -> None:
        self.name = name
        self.options = options
        self.proc: subprocess.Popen | None = None
        self.arch: str | None = None
        self.started = 0.0

    def start(self) -> None:
        """Start the worker process and wait for it to be ready; stop it and raise when it is not in time."""
        env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "PYTHONWARNINGS": "ignore"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "staticexec.sweep", self.name, json.dumps(self.options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        if self.read(STARTUP_TIMEOUT) is None:
            self.stop()
            raise RuntimeError("a sweep worker did not start")

    def read(self, timeout: float) -> dict | None:
        """The next message; {} when the worker died, None past the timeout."""
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

    def submit(self, arch: str) -> None:
        """Send the worker one architecture, starting a new process if there is none or it has exited."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.arch = arch
        self.started = time.monotonic()
        try:
            self.proc.stdin.write(arch + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it exited meanwhile: reading it gives {}, reported as a dead worker
            pass

    def stop(self) -> None:
        """Kill the worker process and wait for it."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@dataclass
class Progress:
    """A one-line progress bar on stderr when it is a terminal; nothing otherwise."""

    total: int
    label: str
    done: int = 0

    def __post_init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.start = time.monotonic()

    def step(self, note: str) -> None:
        """Count one architecture done and redraw the bar with a note."""
        self.done += 1
        if not self.tty:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = time.monotonic() - self.start
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                         f"{elapsed:5.0f}s {note[:40]:<40}")
        sys.stderr.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.tty:
            sys.stderr.write("\n")


def run(job: Callable[[str, dict], dict], archs: Iterable[str], options: dict, *, jobs: int = 1,
        timeout: float = 300.0, label: str = "", on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run `job` over `archs` in up to `jobs` workers; results in input order."""
    pending = list(archs)
    order = {a: i for i, a in enumerate(pending)}
    results: dict[str, dict] = {}
    workers = [Worker(job_name(job), options) for _ in range(max(1, min(jobs, len(pending))))]
    progress = Progress(len(pending), label or job.__name__)
    try:
        busy: list[Worker] = []
        while pending or busy:
            for w in workers:
                if w not in busy and pending:
                    w.submit(pending.pop(0))
                    busy.append(w)
            selector = selectors.DefaultSelector()
            for w in busy:
                selector.register(w.proc.stdout, selectors.EVENT_READ, w)
            now = time.monotonic()
            wait = max(0.05, min(w.started + timeout - now for w in busy))
            ready = {key.data for key, _ in selector.select(wait)}
            for w in list(busy):
                result = None
                if w in ready:
                    result = w.read(max(1.0, w.started + timeout - time.monotonic()))
                    if result == {}:
                        w.stop()
                        result = {"arch": w.arch, "status": "crash", "reason": "the worker process died"}
                elif time.monotonic() - w.started > timeout:
                    w.stop()
                    result = {"arch": w.arch, "status": "timeout", "reason": f"over {timeout:g}s"}
                if result is None:
                    continue
                busy.remove(w)
                results[result["arch"]] = result
                progress.step(result["arch"])
                if on_result:
                    on_result(result)
    finally:
        for w in workers:
            w.stop()
        progress.close()
    return sorted(results.values(), key=lambda r: order[r["arch"]])


if __name__ == "__main__":
    worker(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
