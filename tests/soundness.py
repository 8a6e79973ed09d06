"""The soundness corpus: load each model of fixtures/soundness and judge what staticexec does with it.

Each file holds one tiny model, a `build()` that returns a fresh seeded instance and a sample,
and its expected verdict inline:

    # staticexec: root=Model targets=Layer
    # verdict: ok | refused <message kind> | refused * | usage <exception class>
    # gap: why staticexec does not reach the verdict yet (optional: the test is an expected failure)

An outcome is one of: `ok` (the chain equals the model's own forward exactly and every target
is called once, in its own subgraph), `refused` (a `Refused` naming this file and a real line),
`usage` (a one-line `UsageError`), `caught` (a staticexec error raised while the chain runs),
`silent-wrong` (the chain runs, but its outputs or its target calls differ) or `traceback`
(any other exception, anywhere).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from patterns import import_fixture

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "soundness")
HEADER = re.compile(r"#\s*staticexec:\s*root=(\w+)\s+targets=([\w,]+)")
GAP = re.compile(r"#\s*gap:\s*(.+?)\s*$")
VERDICT = re.compile(r"#\s*verdict:\s*(ok|refused|usage)(?:\s+([\w*-]+))?\s*$")


@dataclass
class Case:
    name: str
    path: str
    root: str
    targets: list[str]
    verdict: str
    kind: str | None = None
    gap: str = ""

    @property
    def module(self) -> str:
        return f"staticexec_soundness_{self.name}"

    def load(self):
        return import_fixture(self.path, self.module, f"fixtures/soundness/{self.name}.py")

    @property
    def expected(self) -> str:
        return f"{self.verdict} {self.kind}" if self.kind else self.verdict


@dataclass
class Outcome:
    status: str  # ok, refused, usage, caught, silent-wrong, traceback
    kinds: set[str] = field(default_factory=set)
    detail: str = ""

    def matches(self, case: Case) -> bool:
        if self.status != case.verdict:
            return False
        return case.kind in (None, "*") or case.kind in self.kinds

    def __str__(self) -> str:
        kinds = f" [{', '.join(sorted(self.kinds))}]" if self.kinds else ""
        return f"{self.status}{kinds}: {self.detail}" if self.detail else f"{self.status}{kinds}"


def cases() -> list[Case]:
    out = []
    for name in sorted(os.listdir(ROOT)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as handle:
            head = handle.read(2000)
        header = HEADER.search(head)
        verdict = next((VERDICT.search(l) for l in head.splitlines() if VERDICT.search(l)), None)
        if header is None or verdict is None:
            raise ValueError(f"{name}: no `# staticexec:` header or `# verdict:` line")
        gap = next((GAP.search(l).group(1) for l in head.splitlines() if GAP.search(l)), "")
        out.append(Case(name[:-3], path, header.group(1), header.group(2).split(","), verdict.group(1), verdict.group(2), gap))
    return out


def judge(case: Case) -> Outcome:
    """Emit subgraphs for the case's model and run them strictly against a fresh copy's own forward."""
    import torch

    from staticexec.api import subgraphs
    from staticexec.messages import Refused, UsageError
    from staticexec.emit.run import run_chain
    from staticexec.check.verify import _CallLog, _check_calls, compare

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
            return Outcome("refused", kinds, str(exc.first))
        except UsageError as exc:
            text = str(exc)
            if "\n" in text or not text:
                return Outcome("traceback", {type(exc).__name__}, f"not a one-line error: {text!r}")
            return Outcome("usage", {type(exc).__name__}, text)
        except Exception as exc:  # a crash inside staticexec
            return Outcome("traceback", {type(exc).__name__}, _one_line(exc))

        reference, ref_sample = module.build()
        own_log = _CallLog(reference, set(case.targets))
        try:
            with torch.no_grad():
                expected = reference(**ref_sample)
        except Exception as exc:  # staticexec accepted what the model itself can't run
            return Outcome("silent-wrong", set(), f"accepted, but the model's own forward raises {_one_line(exc)}")
        finally:
            own_log.close()
        own_calls = list(own_log.calls)

        log = _CallLog(model, set(case.targets))
        try:
            with torch.no_grad():
                out = run_chain(model, chain, sample, before=lambda sg: setattr(log, "current", sg.index))
                calls = list(log.calls)
                # as llm-compressor's pipeline runs it: each subgraph twice, on the same cached inputs
                again = run_chain(model, chain, sample, twice=True)
        except Exception as exc:
            if type(exc).__module__.startswith("staticexec"):
                return Outcome("caught", {type(exc).__name__}, _one_line(exc))
            return Outcome("traceback", {type(exc).__name__}, f"the chain raised {_one_line(exc)}")
        finally:
            log.close()
        problem = (_check_calls(own_calls, calls, len(chain)) or compare(expected, out.get("forward_output"))
                   or compare(expected, again.get("forward_output")))
        if not problem:
            for sg in chain[1:]:
                called = [n for n, k in calls if k == sg.index]
                if list(sg.targets) != called:
                    problem = f"subgraph {sg.index} was emitted for {sg.targets} and called {called}"
                    break
        if problem:
            return Outcome("silent-wrong", set(), problem)
        return Outcome("ok")
    finally:
        cleanup = getattr(module, "cleanup", None)
        if cleanup is not None:
            cleanup()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"
