"""Check a claim of support by running it.

A tiny random model is built from the architecture's config class; its own
forward runs against the emitted subgraphs. "ok" means four things: the
number of subgraphs is the number of target modules called plus one; each
target module is called exactly once; each is called inside exactly one
subgraph; the outputs are `torch.equal` to the model's own.

It runs the whole pipeline (plan, emit, cut, `run_chain`) on tiny models (configs.py, models.py, samples.py), for the
cli, sweeps and the release matrix.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from staticexec.analysis.architectures import UnknownArchitecture
from staticexec.messages import Refused, UsageError
from staticexec.emit.run import outermost_targets
from staticexec.emit.targets import pipeline_targets, select_targets

STATUSES = ("ok", "n/a", "refused", "repeated-target", "build-failed", "run-failed", "mismatch", "error")


@dataclass
class Verdict:
    """The outcome of verifying one architecture: its status (`STATUSES`), why, and what ran."""
    architecture: str
    status: str
    reason: str = ""
    subgraphs: int = 0
    targets_called: int = 0
    targets: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # target calls per class
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the status is ok."""
        return self.status == "ok"

    def line(self) -> str:
        """One report line: the architecture, its status, and the counts and time when ok, else the reason."""
        head = f"{self.architecture:<44} {self.status:<15}"
        if self.ok:
            per_class = ", ".join(f"{n} {cls}" for cls, n in self.calls.items()) or ", ".join(self.targets)
            return f"{head} {self.subgraphs} subgraphs, {self.targets_called} target calls ({per_class}), {self.seconds:.1f}s"
        return f"{head} {self.reason}"


class _CallLog:
    """Forward hooks on every target module: which were called, and in which subgraph."""

    def __init__(self, model: Any, targets: set[str]) -> None:
        held = outermost_targets(model, targets)
        self.names = {id(m): n for n, m in held}
        self.classes = {n: type(m).__name__ for n, m in held}
        self.calls: list[tuple[str, int]] = []
        self.current = -1
        self.handles = [
            m.register_forward_pre_hook(self._hook) for _, m in model.named_modules() if id(m) in self.names
        ]

    def _hook(self, module: Any, args: Any) -> None:
        self.calls.append((self.names[id(module)], self.current))

    def close(self) -> None:
        """Remove the hooks."""
        for h in self.handles:
            h.remove()


def _tensors(value: Any, prefix: str = "output") -> dict:
    import torch

    out: dict = {}
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif hasattr(value, "to_tuple") and hasattr(value, "keys"):
        for k in value.keys():
            out.update(_tensors(value[k], f"{prefix}.{k}"))
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            out.update(_tensors(v, f"{prefix}[{i}]"))
    return out


def compare(expected: Any, actual: Any) -> str:
    """'' when every output tensor is torch.equal (caches aside), else what differs."""
    import torch

    a, b = _tensors(expected), _tensors(actual)
    if set(a) != set(b):
        return f"output fields differ: {sorted(set(a) ^ set(b))[:4]}"
    for k in sorted(a):
        if a[k].shape != b[k].shape or a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k]):
            return f"{k} differs"
    if not a:
        return "no tensor in the output to compare"
    return ""


def verify(architecture: str, *, attn_implementation: str = "eager", targets: list[str] | None = None,
           config: Any = None, plan: Any = None, sample: str = "text", targets_from: str = "default") -> Verdict:
    """Check one architecture end to end on a tiny model.

    `targets_from="llmcompressor"` takes the targets as llm-compressor's sequential pipeline
    chooses them when given none: the model's `_no_split_modules`, absent classes skipped.
    """
    import torch

    from staticexec.check.configs import TinyBuildError
    from staticexec.check.models import build_tiny_model, upstream_note
    from staticexec.check.samples import default_targets, sample_inputs
    from staticexec.api import analyse_architecture, load_plan
    from staticexec.emit.emitter import Emitter

    start = time.perf_counter()
    verdict = Verdict(architecture, "error")
    try:
        model = build_tiny_model(architecture, attn_implementation=attn_implementation, config=config)
    except TinyBuildError as exc:
        if "does not support an attention implementation" in str(exc):
            verdict.status = "n/a"
            verdict.reason = f"{architecture} does not support attn_implementation={attn_implementation!r} in transformers"
        else:
            verdict.status, verdict.reason = "build-failed", upstream_note(architecture, attn_implementation) + str(exc)
        return verdict
    if targets_from == "llmcompressor" and not targets:
        declared = pipeline_targets(model)
        if not declared:  # the pipeline passes "__ALL__", which it rejects: the user must name targets
            verdict.status = "n/a"
            verdict.reason = (f"{architecture} declares no _no_split_modules, so llm-compressor's pipeline has "
                              "no targets to choose; name sequential_targets")
            return verdict
        try:  # as the pipeline does: absent classes skipped, none matching is an error
            targets = list(select_targets(model, declared, warn=False).classes)
        except UsageError as exc:
            verdict.status, verdict.reason = "no-target", str(exc)
            return verdict
    targets = targets or default_targets(model)
    verdict.targets = list(targets)
    held = {type(m).__name__ for m in model.modules()}
    missing = [t for t in targets if t not in held]
    if missing:
        raise UsageError(f"no module of class {', '.join(missing)} in {architecture}")
    mode = sample
    more: Iterator[dict] = iter(())  # later multimodal samples, tried when the forward refuses the first
    try:
        if mode == "multimodal":
            from staticexec.check.multimodal import multimodal_samples

            more = multimodal_samples(model)
            sample = next(more)
        else:
            sample = sample_inputs(model)
    except TinyBuildError as exc:
        verdict.status, verdict.reason = "build-failed", f"no {mode} sample: {exc}"
        return verdict
    log = _CallLog(model, set(targets))
    try:
        try:
            expected, sample = _own_forward(model, sample, log, more)
        except Exception as exc:  # the model itself can't run here
            verdict.status, verdict.reason = "run-failed", _one_line(exc)
            return verdict
        own_calls = list(log.calls)
        with torch.no_grad():
            again = model(**sample)
        if compare(expected, again):
            verdict.status = "run-failed"
            verdict.reason = "the model's own forward is not deterministic (two runs differ), so nothing compares exactly"
            return verdict
        counts: dict[str, int] = {}
        for name, _ in own_calls:
            counts[name] = counts.get(name, 0) + 1
        repeated = sorted(n for n, c in counts.items() if c > 1)
        if repeated:
            verdict.status = "repeated-target"
            verdict.reason = f"the model's own forward calls {repeated[0]} {counts[repeated[0]]} times by design"
            return verdict
        try:
            the_plan = load_plan(plan) if plan is not None else analyse_architecture(architecture, targets, config=model.config)
            subgraphs = Emitter(the_plan, model, sample).emit()
        except Refused as exc:
            verdict.status, verdict.reason = "refused", str(exc.first)
            return verdict
        except UsageError as exc:  # e.g. a generation-only class with no forward of its own
            verdict.status, verdict.reason = "n/a", str(exc)
            return verdict
        try:
            problem = chain_problem(model, subgraphs, sample, log, own_calls, expected)
        except Exception as exc:
            verdict.status, verdict.reason = "mismatch", f"subgraphs raised {_one_line(exc)}"
            return verdict
        verdict.subgraphs = len(subgraphs)
        verdict.targets_called = len(own_calls)
        for name, _ in own_calls:  # in order of first call
            cls = log.classes[name]
            verdict.calls[cls] = verdict.calls.get(cls, 0) + 1
        verdict.status, verdict.reason = ("mismatch", problem) if problem else ("ok", "")
        return verdict
    finally:
        log.close()
        verdict.seconds = time.perf_counter() - start


def chain_problem(model: Any, subgraphs: list, sample: dict, log: _CallLog, own_calls: list, expected: Any) -> str:
    """'' when the chain reproduces `expected` exactly with each target called once, in its own subgraph."""
    import torch

    from staticexec.emit.run import run_chain

    log.calls.clear()
    with torch.no_grad():
        out = run_chain(model, subgraphs, sample, before=lambda sg: setattr(log, "current", sg.index))
    problem = _check_calls(own_calls, log.calls, len(subgraphs)) or compare(expected, out["forward_output"])
    if not problem:  # as llm-compressor runs it: every subgraph twice on the same inputs
        with torch.no_grad():
            again = run_chain(model, subgraphs, sample, twice=True)
        problem = compare(expected, again["forward_output"])
    log.calls.clear()
    return problem


def _own_forward(model: Any, sample: dict, log: "_CallLog", more: Iterable[dict] = ()) -> tuple[Any, dict]:
    """The model's own output on the sample; with its cache off when the default cache can't run here.

    Only when neither runs are the `more` samples tried (each with, then without the cache), so
    the sample a model takes the first time is the one it always got.
    """
    import inspect

    import torch

    from staticexec.check.samples import alternative_samples

    params = inspect.signature(model.forward).parameters
    takes_cache = "use_cache" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
    without_cache = takes_cache and "use_cache" not in sample
    candidates = [sample] + alternative_samples(model)
    if without_cache:
        candidates += [dict(c, use_cache=False) for c in candidates]
    later = (c for m in _until_error(more) for c in ([m, dict(m, use_cache=False)] if without_cache else [m]))
    first: Exception | None = None
    for candidate in itertools.chain(candidates, later):
        log.calls.clear()  # a failed attempt may have called some targets already
        try:
            with torch.no_grad():
                return model(**candidate), candidate
        except Exception as exc:
            first = first or exc
    raise first


def _until_error(samples: Iterable[dict]) -> Iterator[dict]:
    """The samples, until one can't be made: then the first forward's error is the one to report."""
    try:
        yield from samples
    except Exception:
        return


def _check_calls(own: list[tuple[str, int]], chained: list[tuple[str, int]], n_subgraphs: int) -> str:
    called = [n for n, _ in own]
    if n_subgraphs != len(called) + 1:
        return f"{n_subgraphs} subgraphs for {len(called)} target calls"
    names = [n for n, _ in chained]
    if sorted(names) != sorted(called):
        return f"the subgraphs called targets {len(names)} times, the model {len(called)}"
    per_subgraph: dict[int, list[str]] = {}
    for name, index in chained:
        per_subgraph.setdefault(index, []).append(name)
    if per_subgraph.get(0):
        return f"subgraph 0 calls {per_subgraph[0][0]}"
    for k in range(1, n_subgraphs):
        got = per_subgraph.get(k, [])
        if len(got) != 1:
            return f"subgraph {k} calls {len(got)} targets"
    if [n for n, _ in sorted(chained, key=lambda c: c[1])] != called:
        return "targets run in another order than in the model"
    return ""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(exc).__name__}: {text}"


def sweep_job(arch: str, options: dict) -> dict:
    """`verify` as a sweep job (`sweep.run(sweep_job, ...)`): options attn, sample, targets_from."""
    v = verify(arch, attn_implementation=options.get("attn", "eager"), sample=options.get("sample", "text"),
               targets_from=options.get("targets_from", "default"))
    return {"status": v.status, "reason": v.reason, "subgraphs": v.subgraphs, "targets_called": v.targets_called,
            "targets": v.targets, "seconds": round(v.seconds, 2)}


def forward_job(arch: str, options: dict) -> dict:
    """Build the tiny model and run its own forward once (no analysis): what the tiny builder can do."""
    import torch

    from staticexec.check.configs import TinyBuildError
    from staticexec.check.models import build_tiny_model, param_mb, upstream_note
    from staticexec.check.samples import sample_inputs

    try:
        model = build_tiny_model(arch, attn_implementation=options.get("attn", "eager"))
    except (TinyBuildError, UnknownArchitecture) as exc:
        return {"status": "build-failed", "reason": upstream_note(arch) + str(exc)}
    try:
        with torch.no_grad():
            model(**sample_inputs(model))
    except Exception as exc:
        return {"status": "run-failed", "reason": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "reason": "", "mb": round(param_mb(model), 2)}
