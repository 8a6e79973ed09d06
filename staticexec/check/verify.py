"""Check a claim of support by running it.

A tiny random model is built from the architecture's config class; its own
forward runs against the emitted subgraphs. "ok" means: the forward called at
least one target module (each one named by the caller, at least once); the
number of subgraphs is the number of target calls plus one; each target module
is called exactly once, inside exactly one subgraph, in the model's order; and
every value the output holds is equal to the model's own (`compare`: tensors
`torch.equal`, caches, dicts, dataclasses, other values). The chain runs once,
then with every subgraph run twice as llm-compressor runs it (its cache offloaded to another
device: each name's tensors come back as copies of their own), on the sample and
on a second batch (another seed and length, padded: `second_batch`). A second
batch that takes another branch than the sample is "sample-bound", not ok; a
usage error raised inside the pipeline is an "error" (a bug), not "n/a".

It runs the whole pipeline (plan, emit, cut, `run_chain`) on tiny models (configs.py, models.py, samples.py), for the
cli, sweeps and the release matrix.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import time
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from staticexec.analysis.architectures import UnknownArchitecture
from staticexec.messages import Refused, UsageError
from staticexec.emit.run import outermost_targets
from staticexec.emit.targets import pipeline_targets, select_targets

STATUSES = ("ok", "n/a", "refused", "no-target", "repeated-target", "unsplit", "build-failed", "run-failed",
            "sample-bound", "mismatch", "error")


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
            note = f"; {self.reason}" if self.reason else ""
            return (f"{head} {self.subgraphs} subgraphs, {self.targets_called} target calls ({per_class}), "
                    f"{self.seconds:.1f}s{note}")
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


_DEPTH = 200  # nesting beyond this is reported rather than followed


def compare(expected: Any, actual: Any) -> str:
    """'' when `actual` is exactly `expected`, else where and how it first differs.

    Every value the output holds is compared: tensors (`torch.equal`, same shape and dtype; NaN
    equal to NaN in the same place), caches and other objects by their attributes (`__dict__`,
    `__slots__`), dataclasses and ModelOutputs by their fields and keys, mappings, sequences, and
    plain values (numbers, strings, None) by equality. Modules and configs are compared by identity
    or equality, never entered; a value seen before (a cycle, a shared object) is not compared again.
    """
    import torch

    found = [0]  # tensors compared
    seen: set = set()
    keep: list = []  # the pairs seen stay alive, so their ids stay theirs
    atoms = (bool, int, float, complex, str, bytes, range, slice, torch.dtype, torch.device, torch.Size, enum.Enum)
    by_equality = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)

    def walk(a: Any, b: Any, where: str, depth: int) -> str:
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
                return f"{where}: {_kind(b)} where the model gives {_kind(a)}"
            found[0] += 1
            return _tensor_differs(a, b, where)
        if a is b:
            return ""
        if type(a) is not type(b):
            return f"{where}: {_kind(b)} where the model gives {_kind(a)}"
        if a is None or isinstance(a, atoms):
            return "" if a == b or _both_nan(a, b) else f"{where}: {b!r} where the model gives {a!r}"
        if isinstance(a, torch.nn.Module):
            return f"{where}: another {type(a).__name__} module than the model's"
        if _is_config(a) or isinstance(a, by_equality):
            return "" if a == b else f"{where}: another {type(a).__name__} than the model's"
        key = (id(a), id(b))
        if key in seen:
            return ""
        seen.add(key)
        keep.append((a, b))
        if depth > _DEPTH:
            return f"{where}: nested too deep to compare"
        for label, x, y in _parts(a, b, where):
            if label is None:  # the parts themselves differ (keys, lengths)
                return x
            problem = walk(x, y, label, depth + 1)
            if problem:
                return problem
        return ""

    problem = walk(expected, actual, "output", 0)
    if not problem and not found[0]:
        return "no tensor in the output to compare"
    return problem


def _kind(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"a tensor {tuple(value.shape)}"
    return "None" if value is None else f"a {type(value).__name__}"


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and a != a and b != b


def _is_config(value: Any) -> bool:
    from transformers import PretrainedConfig

    return isinstance(value, PretrainedConfig)


def _tensor_differs(a: Any, b: Any, where: str) -> str:
    import torch

    if a.shape != b.shape:
        return f"{where}: shape {tuple(b.shape)} where the model gives {tuple(a.shape)}"
    if a.dtype != b.dtype:
        return f"{where}: dtype {b.dtype} where the model gives {a.dtype}"
    if a.device != b.device:
        return f"{where}: on {b.device} where the model's is on {a.device}"
    if torch.equal(a, b):
        return ""
    if a.is_floating_point() or a.is_complex():
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        if bool(same.all()):
            return ""
    return f"{where} differs"


def _parts(a: Any, b: Any, where: str) -> Iterator[tuple[str | None, Any, Any]]:
    """The values to compare inside two containers or objects of one type, each with where it lies;
    (None, problem, None) when their layout already differs."""
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            yield f"{where}.{f.name}", getattr(a, f.name, _ABSENT), getattr(b, f.name, _ABSENT)
    if isinstance(a, Mapping):
        if set(a.keys()) != set(b.keys()):
            yield None, f"{where}: keys {_keys_differ(a.keys(), b.keys())}", None
            return
        for k in a.keys():
            yield f"{where}[{k!r}]", a[k], b[k]
        return
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            yield None, f"{where}: {len(b)} items where the model gives {len(a)}", None
            return
        for i, (x, y) in enumerate(zip(a, b)):
            yield f"{where}[{i}]", x, y
        return
    if isinstance(a, (set, frozenset)):
        if a != b:
            yield None, f"{where}: another set than the model's", None
        return
    attrs_a, attrs_b = _attributes(a), _attributes(b)
    if attrs_a is None:  # no attributes to look into: equal only by its own equality
        try:
            same = bool(a == b)
        except Exception:
            same = False
        if not same:
            yield None, f"{where}: another {type(a).__name__} than the model's", None
        return
    if dataclasses.is_dataclass(a):  # its fields are compared already
        names = {f.name for f in dataclasses.fields(a)}
        attrs_a = {k: v for k, v in attrs_a.items() if k not in names}
        attrs_b = {k: v for k, v in attrs_b.items() if k not in names}
    if attrs_a.keys() != attrs_b.keys():
        yield None, f"{where}: attributes {_keys_differ(attrs_a.keys(), attrs_b.keys())}", None
        return
    for k, v in attrs_a.items():
        yield f"{where}.{k}", v, attrs_b[k]


_ABSENT = object()


def _attributes(value: Any) -> dict | None:
    """An object's attributes: its `__dict__` and the `__slots__` of its classes; None when it has neither."""
    out: dict = {}
    has = False
    for cls in type(value).__mro__:
        slots = vars(cls).get("__slots__")
        if slots is None:
            continue
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            has = True
            out[name] = getattr(value, name, _ABSENT)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        has = True
        out.update(attrs)
    return out if has else None


def _keys_differ(expected: Iterable, actual: Iterable) -> str:
    e, a = set(map(repr, expected)), set(map(repr, actual))
    parts = []
    if e - a:
        parts.append(f"missing {sorted(e - a)[:4]}")
    if a - e:
        parts.append(f"extra {sorted(a - e)[:4]}")
    return ", ".join(parts)


def verify(architecture: str, *, attn_implementation: str = "eager", targets: list[str] | None = None,
           config: Any = None, plan: Any = None, sample: str = "text", targets_from: str = "default",
           model: Any = None) -> Verdict:
    """Check one architecture end to end on a tiny model.

    With `model` (a user's own class, built by the caller), that model is checked, and its class's own
    source is analysed; `architecture` is only its label.

    `targets_from="llmcompressor"` takes the targets as llm-compressor's sequential pipeline
    chooses them when given none: the model's `_no_split_modules`, absent classes skipped;
    `"linear"` every Linear (and Conv1D); `"sublayer"` the attention and MLP classes of the layers.
    Targets named by the caller must each run on the sample; chosen ones, at least one of them.
    A `plan` given is the caller's input: a malformed or stale one raises its `UsageError`.
    """
    import torch

    from staticexec.check.configs import TinyBuildError
    from staticexec.check.models import build_tiny_model, upstream_note
    from staticexec.check.samples import default_targets, sample_inputs
    from staticexec.api import analyse_architecture, load_plan
    from staticexec.emit.emitter import Emitter

    start = time.perf_counter()
    built = model
    given_plan = load_plan(plan) if plan is not None else None
    named = list(targets or [])  # the caller's own targets, each of which must run
    verdict = Verdict(architecture, "error")
    try:
        if model is None:
            model = build_tiny_model(architecture, attn_implementation=attn_implementation, config=config)
    except TinyBuildError as exc:
        if "does not support an attention implementation" in str(exc):
            verdict.status = "n/a"
            verdict.reason = f"{architecture} does not support attn_implementation={attn_implementation!r} in transformers"
        else:
            verdict.status, verdict.reason = "build-failed", upstream_note(architecture, attn_implementation) + str(exc)
        return verdict
    if type(model).forward is torch.nn.Module.forward:
        verdict.status, verdict.reason = "n/a", f"{architecture} has no forward of its own to split (it only generates)"
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
    if targets_from in ("linear", "sublayer") and not targets:
        from staticexec.check.samples import linear_targets, sublayer_targets

        chosen = linear_targets(model) if targets_from == "linear" else sublayer_targets(model)
        if not chosen:
            verdict.status = "n/a"
            verdict.reason = f"{architecture}'s layers hold no attention or MLP class to split at"
            return verdict
        try:
            targets = list(select_targets(model, chosen, warn=False).classes)
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
        from staticexec.check.multimodal import NoMediaInput

        verdict.status = "n/a" if isinstance(exc, NoMediaInput) else "build-failed"
        verdict.reason = f"no {mode} sample: {exc}"
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
        called = {log.classes[name] for name, _ in own_calls}
        not_run = [t for t in targets if t not in called]
        unsplit = unsplit_reason(len(own_calls), not_run if named else [])
        if unsplit:
            verdict.status, verdict.reason = "unsplit", unsplit
            return verdict
        try:
            the_plan = given_plan or (analyse_architecture(architecture, targets, config=model.config)
                                      if built is None else _analyse_model(model, targets, architecture))
            subgraphs = Emitter(the_plan, model, sample).emit()
        except Refused as exc:
            verdict.status, verdict.reason = "refused", str(exc.first)
            return verdict
        except UsageError as exc:  # the architecture and targets were accepted above: this is the pipeline's bug
            verdict.status, verdict.reason = "error", f"inside the pipeline: {_one_line(exc)}"
            return verdict
        try:
            problem = chain_problem(model, subgraphs, sample, log, own_calls, expected)
        except Exception as exc:
            verdict.status, verdict.reason = "mismatch", f"subgraphs raised {_one_line(exc)}"
            return verdict
        if problem:
            verdict.status, verdict.reason = "mismatch", problem
            return verdict
        verdict.subgraphs = len(subgraphs)
        verdict.targets_called = len(own_calls)
        for name, _ in own_calls:  # in order of first call
            cls = log.classes[name]
            verdict.calls[cls] = verdict.calls.get(cls, 0) + 1
        status, reason = _second_batch_verdict(model, subgraphs, sample, mode, log)
        notes = [reason] if reason else []
        if status == "ok" and not_run:
            notes.append(f"{', '.join(not_run)} not run on this sample")
        verdict.status, verdict.reason = status, "; ".join(notes)
        return verdict
    finally:
        log.close()
        verdict.seconds = time.perf_counter() - start


def unsplit_reason(target_calls: int, not_run: list[str]) -> str:
    """'' when the forward split somewhere: at least one target call, and every target class in `not_run`
    (the named ones that never ran) is none; else why "ok" would claim a split that did not happen."""
    if not target_calls:
        return "the forward called no target module on the sample: one subgraph, nothing split"
    if not_run:
        return f"target {', '.join(not_run)} never ran on the sample: nothing was split at it"
    return ""


SECOND_SEED, SECOND_LEN, SECOND_PADDING = 1, 12, 3


def second_batch(model: Any, sample: dict, mode: str = "text") -> tuple[dict | None, str]:
    """Another batch with the keys of `sample`, and why there is none when it can't be made.

    Built as the sample was (samples.py, multimodal.py), with seed `SECOND_SEED`; a text batch
    is also `SECOND_LEN` tokens long (the sample has 16) and, where the model takes an attention
    mask, its last row has `SECOND_PADDING` padded positions on the left (the sample's has 2).
    Values that are not tensors (`use_cache=False`) are the sample's. A multimodal batch is the first
    sample of that seed, with the tensors of the sample, that the model's own forward takes.
    """
    import torch

    from staticexec.check.samples import sample_inputs

    tensors = {k for k, v in sample.items() if isinstance(v, torch.Tensor)}
    try:
        if mode == "multimodal":
            from staticexec.check.multimodal import multimodal_samples

            # the first one the forward takes, as for the sample: a processor's own placeholder count
            # may not be the model's, and the one after it is
            fresh = next((s for s in _until_error(multimodal_samples(model, seed=SECOND_SEED))
                          if {k for k, v in s.items() if isinstance(v, torch.Tensor)} == tensors
                          and _runs(model, _merged(s, sample, tensors))), None)
            if fresh is None:
                return None, "no second multimodal sample with the inputs of the first that the model takes"
        else:
            ids = sample.get("input_ids")
            rows = ids.shape[0] if isinstance(ids, torch.Tensor) and ids.dim() == 2 else 2
            fresh = sample_inputs(model, seq_len=SECOND_LEN, seed=SECOND_SEED, codebook_rows=rows > 2)
            mask = fresh.get("attention_mask")
            if isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.shape[0] > 1:
                mask.fill_(1)
                mask[-1, :SECOND_PADDING] = 0
    except Exception as exc:
        return None, f"no second batch: {_one_line(exc)}"
    out = _merged(fresh, sample, tensors)
    if not any(out[k] is not sample[k] for k in tensors):
        return None, "no second batch: no input of the sample could be drawn again"
    return out, ""


def _merged(fresh: dict, sample: dict, tensors: set[str]) -> dict:
    """The sample's keys, with the fresh tensors in place of its tensors and its other values kept."""
    import torch

    return {k: fresh[k] if k in tensors and isinstance(fresh.get(k), torch.Tensor) else v for k, v in sample.items()}


def _runs(model: Any, inputs: dict) -> bool:
    """Whether the model's own forward takes the inputs."""
    import torch

    try:
        with torch.no_grad():
            model(**inputs)
    except Exception:
        return False
    return True


def _second_batch_verdict(model: Any, subgraphs: list, sample: dict, mode: str, log: _CallLog) -> tuple[str, str]:
    """The chain on a second batch (`second_batch`) against the model's own forward on it: ("ok", note),
    ("sample-bound", why) when the subgraphs refuse it for a branch decided by the sample, or
    ("mismatch", what differs)."""
    import torch

    from staticexec.check.models import caused_by
    from staticexec.emit.runtime import BranchMismatch

    batch, why = second_batch(model, sample, mode)
    if batch is None:
        return "ok", f"{why}, so only the sample was run"
    log.calls.clear()
    log.current = -1
    try:
        with torch.no_grad():
            expected = model(**batch)
    except Exception as exc:
        return "ok", f"second batch not run: the model's own forward raised {_one_line(exc)}"
    own_calls = list(log.calls)
    try:
        problem = chain_problem(model, subgraphs, batch, log, own_calls, expected)
    except Exception as exc:
        if caused_by(exc, BranchMismatch):
            return "sample-bound", f"a second batch takes another branch: {_one_line(exc)}"
        return "mismatch", f"on a second batch, subgraphs raised {_one_line(exc)}"
    return ("mismatch", f"on a second batch: {problem}") if problem else ("ok", "")


def _analyse_model(model: Any, targets: list[str], label: str) -> Any:
    """The plan of a built model's own class, from its source (a user's class: not one of transformers')."""
    from staticexec.api import analyse
    from staticexec.analysis.source import ClassRef

    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    return analyse(ClassRef(type(model).__module__, type(model).__qualname__), targets, config=config,
                   architecture=label, model_types=[model_type] if model_type else None)


def chain_problem(model: Any, subgraphs: list, sample: dict, log: _CallLog, own_calls: list, expected: Any) -> str:
    """'' when the chain reproduces `expected` exactly with each target called once, in its own subgraph,
    run once and then as llm-compressor runs it where that is strictest: every subgraph twice on the same
    inputs, its cache offloaded to another device than the model's (each name's tensors come back as
    copies of their own: `run_chain(offloaded=True)`)."""
    import torch

    from staticexec.emit.run import run_chain

    log.calls.clear()
    try:
        with torch.no_grad():
            out = run_chain(model, subgraphs, sample, before=lambda sg: setattr(log, "current", sg.index))
        problem = _check_calls(own_calls, log.calls, len(subgraphs)) or compare(expected, out["forward_output"])
        if not problem:
            with torch.no_grad():
                again = run_chain(model, subgraphs, sample, twice=True, offloaded=True)
            problem = compare(expected, again["forward_output"])
            if problem:
                problem = f"run twice per subgraph, the cache offloaded: {problem}"
    finally:
        log.calls.clear()
        log.current = -1
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
    """'' when the chain called the targets the model did (`own`), each once, in subgraphs 1, 2, ... in
    order and none in subgraph 0; else what differs. No target call at all is a problem too."""
    called = [n for n, _ in own]
    if not called:
        return "no target call: nothing was split"
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
