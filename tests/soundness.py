"""The soundness corpus: load each model of fixtures/soundness and judge what staticexec does with it.

Each file holds one tiny model, a `build()` that returns a fresh seeded instance and a sample,
and its expected verdict inline:

    # staticexec: root=Model targets=Layer
    # verdict: ok
    # verdict: refused <message kind> line=<N>    (or `# refused-here` at the end of line N)
    # verdict: usage <exception class>
    # verdict: caught <exception class>           (raised by staticexec while the chain runs)
    # verdict: mismatch                           (refused, naming a line of the file, or caught)
    # gap: why staticexec does not reach the verdict yet (optional: the test is an expected failure)

A kind may name alternatives, `caught ReplacedForward|CodeMismatch`. A refusal must name the line
the case expects: the line given by `line=`, or the one marked `# refused-here` (a `mismatch` that
ends refused is held to the marked line when there is one, to any line of the file otherwise).

Two optional functions make the chain run on more than the sample it was emitted for:
`after_emit(model)` changes the model after the subgraphs were emitted and before they run (a layer
appended, a forward replaced; it must give the same result on every copy, so it seeds what it
builds), and `batches()` gives further samples (a later batch with another value of a keyword,
another length). Each sample is run through the chain as llm-compressor's pipeline runs it, every
subgraph twice, and compared with a fresh copy's own forward on the same sample (`after_emit`
applied to that copy too); then once more as the pipeline runs it with its cache offloaded to another
device than the model's (`run_chain(offloaded=True)`: each name's tensors come back as copies of their own). A `cleanup()` undoes what `build()` or `after_emit` changed outside the
instance (a class attribute, a global hook).

An outcome is one of: `ok` (every sample's chain equals the model's own forward exactly, and every
target is called once, in its own subgraph), `refused` (a `Refused` naming this file and a real
line), `usage` (a one-line `UsageError`), `caught` (a staticexec error raised while the chain runs),
`silent-wrong` (the chain runs, but its outputs or its target calls differ) or `traceback` (any
other exception, anywhere).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any

from patterns import import_fixture

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "soundness")
HEADER = re.compile(r"#\s*staticexec:\s*root=(\w+)\s+targets=([\w,]+)")
GAP = re.compile(r"#\s*gap:\s*(.+?)\s*$")
VERDICT = re.compile(r"#\s*verdict:\s*(ok|refused|usage|caught|mismatch)(?:\s+([\w|-]+))?(?:\s+line=(\d+))?\s*$")
MARKER = re.compile(r"#\s*refused-here\b")
VERDICTS = ("ok", "refused", "usage", "caught", "mismatch")


@dataclass
class Case:
    name: str
    path: str
    root: str
    targets: list[str]
    verdict: str  # ok, refused, usage, caught or mismatch
    kind: str | None = None  # a message kind or an exception class; alternatives joined by `|`
    gap: str = ""
    line: int | None = None  # the line of the fixture a refusal must name

    @property
    def module(self) -> str:
        return f"staticexec_soundness_{self.name}"

    def load(self):
        return import_fixture(self.path, self.module, f"fixtures/soundness/{self.name}.py")

    @property
    def kinds(self) -> set[str]:
        return set(self.kind.split("|")) if self.kind else set()

    @property
    def expected(self) -> str:
        text = f"{self.verdict} {self.kind}" if self.kind else self.verdict
        return f"{text} line={self.line}" if self.line else text


@dataclass
class Outcome:
    status: str  # ok, refused, usage, caught, silent-wrong, traceback
    kinds: set[str] = field(default_factory=set)
    detail: str = ""
    places: set[tuple[str, int]] = field(default_factory=set)  # (kind, line) of each refusal in the case's file

    def matches(self, case: Case) -> bool:
        if case.verdict == "mismatch":
            if self.status == "caught":
                return not case.kind or bool(case.kinds & self.kinds)
            return self.status == "refused" and self._refused_as(case)
        if self.status != case.verdict:
            return False
        if self.status == "refused":
            return self._refused_as(case)
        return not case.kind or bool(case.kinds & self.kinds)

    def _refused_as(self, case: Case) -> bool:
        """A refusal of the expected kind (any, for `mismatch` with none) at the expected line."""
        return any((not case.kind or kind in case.kinds) and (case.line is None or line == case.line)
                   for kind, line in self.places)

    def __str__(self) -> str:
        kinds = f" [{', '.join(sorted(self.kinds))}]" if self.kinds else ""
        return f"{self.status}{kinds}: {self.detail}" if self.detail else f"{self.status}{kinds}"


def parse(name: str, text: str, path: str = "") -> Case:
    """A case from a fixture's text: its header, its verdict, the line a refusal must name, its gap."""
    lines = text.splitlines()
    head = "\n".join(lines[:40])
    header = HEADER.search(head)
    verdict = next((m for m in map(VERDICT.search, lines[:40]) if m), None)
    if header is None or verdict is None:
        raise ValueError(f"{name}: no `# staticexec:` header or `# verdict:` line")
    status, kind, line = verdict.group(1), verdict.group(2), verdict.group(3)
    marked = [i for i, l in enumerate(lines, 1) if MARKER.search(l)]
    if len(marked) > 1 or (marked and line):
        raise ValueError(f"{name}: give the refused line once, by `line=` or by one `# refused-here`")
    where = int(line) if line else (marked[0] if marked else None)
    if status == "refused" and (not kind or "*" in kind or where is None):
        raise ValueError(f"{name}: `refused` names a message kind and a line (`line=N` or `# refused-here`)")
    if status in ("usage", "caught") and not kind:
        raise ValueError(f"{name}: `{status}` names the exception class")
    if where is not None and status not in ("refused", "mismatch"):
        raise ValueError(f"{name}: a refused line is given, but the verdict is {status}")
    gap = next((m.group(1) for m in map(GAP.search, lines[:40]) if m), "")
    return Case(name, path, header.group(1), header.group(2).split(","), status, kind, gap, where)


def cases() -> list[Case]:
    out = []
    for name in sorted(os.listdir(ROOT)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as handle:
            out.append(parse(name[:-3], handle.read(), path))
    return out


def judge(case: Case) -> Outcome:
    """Emit subgraphs for the case's model and run them strictly against a fresh copy's own forward."""
    from staticexec.api import subgraphs
    from staticexec.messages import Refused, UsageError

    module = case.load()
    try:
        model, sample = module.build()
        try:
            chain = subgraphs(model, sample, case.targets)
        except Refused as exc:
            kinds = {m.kind for m in exc.messages}
            here = os.path.basename(case.path)
            bad = [str(m) for m in exc.messages if not (m.path.endswith(here) and m.line > 0)]
            if bad:
                return Outcome("traceback", kinds, f"a refusal names no line of {here}: {bad[0]}")
            return Outcome("refused", kinds, str(exc.first), {(m.kind, m.line) for m in exc.messages})
        except UsageError as exc:
            text = str(exc)
            if "\n" in text or not text:
                return Outcome("traceback", {type(exc).__name__}, f"not a one-line error: {text!r}")
            return Outcome("usage", {type(exc).__name__}, text)
        except Exception as exc:  # a crash inside staticexec
            return Outcome("traceback", {type(exc).__name__}, _one_line(exc))
        return _run(case, module, model, sample, chain)
    finally:
        cleanup = getattr(module, "cleanup", None)
        if cleanup is not None:
            cleanup()


def _run(case: Case, module: Any, model: Any, sample: dict, chain: list) -> Outcome:
    """Run the chain on the sample and on every further batch, each against a fresh copy's own forward."""
    import torch

    from staticexec.emit.run import run_chain
    from staticexec.emit.targets import select_targets

    reference, ref_sample = module.build()
    after_emit = getattr(module, "after_emit", None)
    if after_emit is not None:
        after_emit(model)
        after_emit(reference)
    more = getattr(module, "batches", None)
    samples = [(sample, ref_sample)] + (list(zip(more(), more())) if more is not None else [])
    # the offloaded pass on samples of its own: a forward may write its sample in place
    again = [(module.build()[1], module.build()[1])] + (list(zip(more(), more())) if more is not None else [])
    targets = set(select_targets(model, case.targets, warn=False).classes)
    runs = [(n, *pair, False) for n, pair in enumerate(samples)] + [(n, *pair, True) for n, pair in enumerate(again)]
    for n, batch, ref_batch, offloaded in runs:
        which = ("the sample" if n == 0 else f"batch {n}") + (", the cache offloaded" if offloaded else "")
        own = _Calls(reference, targets)
        try:
            with torch.no_grad():
                expected = reference(**ref_batch)
        except Exception as exc:  # staticexec accepted what the model itself can't run
            problem = f"accepted, but the model's own forward on {which} raises {_one_line(exc)}"
            return Outcome("silent-wrong", set(), problem)
        finally:
            own.close()
        log = _Calls(model, targets)
        try:
            with torch.no_grad():  # as llm-compressor's pipeline runs it: each subgraph twice, on the same inputs
                out = run_chain(model, chain, batch, before=log.enter, twice=True, offloaded=offloaded)
        except Exception as exc:
            kinds = {type(exc).__name__} | {m.kind for m in getattr(exc, "messages", ())}
            if type(exc).__module__.startswith("staticexec"):
                return Outcome("caught", kinds, f"on {which}: {_one_line(exc)}")
            return Outcome("traceback", kinds, f"the chain raised on {which}: {_one_line(exc)}")
        finally:
            log.close()
        problem = _call_problem(own.calls, log, chain) or differs(expected, out.get("forward_output"))
        if problem:
            return Outcome("silent-wrong", set(), f"on {which}: {problem}")
    return Outcome("ok")


class _Calls:
    """Forward pre-hooks on every outermost target module: which ran, in which subgraph and which of its two runs."""

    def __init__(self, model: Any, targets: set[str]) -> None:
        from staticexec.emit.run import outermost_targets

        held = outermost_targets(model, targets)
        self.names = {id(m): n for n, m in held}
        self.calls: list[tuple[str, int, int]] = []  # (module path, subgraph index, run)
        self.current = (-1, 0)
        self.handles = [m.register_forward_pre_hook(self._hook) for _, m in held]

    def enter(self, sg: Any) -> None:
        """`run_chain`'s `before`: called before each of a subgraph's runs."""
        self.current = (sg.index, self.current[1] + 1 if self.current[0] == sg.index else 0)

    def _hook(self, module: Any, args: Any) -> None:
        self.calls.append((self.names[id(module)], *self.current))

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def _call_problem(own: list, log: _Calls, chain: list) -> str:
    """'' when the chain called the model's targets in its order, each once, in the subgraph emitted for it."""
    called = [name for name, _, _ in own]
    if not called:
        return "nothing was split: the model calls no target"
    if len(chain) != len(called) + 1:
        return f"{len(chain)} subgraphs for {len(called)} target calls"
    for run in (0, 1):
        per: dict[int, list[str]] = {}
        for name, index, r in log.calls:
            if r == run:
                per.setdefault(index, []).append(name)
        which = "first" if run == 0 else "second"
        for sg in chain:
            got = per.get(sg.index, [])
            if got != list(sg.targets):
                return f"subgraph {sg.index} was emitted for {list(sg.targets)} and called {got} ({which} run)"
        if [n for sg in chain for n in per.get(sg.index, [])] != called:
            return f"the subgraphs called {[n for sg in chain for n in per.get(sg.index, [])]}, the model {called}"
    return ""


def differs(expected: Any, actual: Any, where: str = "output") -> str:
    """'' when two outputs are equal: tensors exactly (shape, dtype, values), containers, model outputs and
    dataclasses field by field, anything else by `==`; else where they differ."""
    import torch

    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"{where}: {type(expected).__name__} against {type(actual).__name__}"
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            return f"{where}: {tuple(expected.shape)} {expected.dtype} against {tuple(actual.shape)} {actual.dtype}"
        return "" if torch.equal(expected, actual) else f"{where} differs"
    if type(expected) is not type(actual):
        return f"{where}: {type(expected).__name__} against {type(actual).__name__}"
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"{where}: {len(expected)} items against {len(actual)}"
        pairs = enumerate(zip(expected, actual))
        return next((d for d in (differs(a, b, f"{where}[{i}]") for i, (a, b) in pairs) if d), "")
    if isinstance(expected, dict) or (hasattr(expected, "keys") and hasattr(expected, "to_tuple")):
        if list(expected.keys()) != list(actual.keys()):
            return f"{where}: keys {list(expected.keys())} against {list(actual.keys())}"
        return next((d for d in (differs(expected[k], actual[k], f"{where}[{k!r}]") for k in expected.keys()) if d), "")
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        return differs(vars(expected), vars(actual), where)
    try:
        same = bool(expected == actual)
    except Exception:
        same = expected is actual
    return "" if same else f"{where}: {expected!r} against {actual!r}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"
