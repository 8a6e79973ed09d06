"""Every diagnostic staticexec gives, one small class each, with its template.

Tests assert the kind of a message (its class), never its wording.

The plan and emit stages and the checks around them give them inside `Refused`; the cli
prints one per line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    """A diagnostic at a place in the source: `path:line: text`."""

    path: str
    line: int
    detail: str = ""

    template = "{detail}"
    kind = "message"

    @property
    def text(self) -> str:
        """The message without its place: the template filled with the detail, in one line (code it quotes as
        written, over several lines, has its runs of whitespace made one space)."""
        return " ".join(self.template.format(detail=self.detail).split())

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path else ""
        return f"{where}{self.text}"

    def to_json(self) -> dict:
        """The message as a JSON object: kind, path, line and reason."""
        return {"kind": self.kind, "path": self.path, "line": self.line, "reason": self.text}


class DynamicCondition(Message):
    """A target call behind a condition that may depend on tensor values (calibration batches could decide it
    differently): one the analysis can't show to read only config values, constants and which inputs are given."""
    kind = "dynamic-condition"
    template = "a target call is guarded by a condition that may depend on tensor values: {detail}"


class UndecidedCondition(Message):
    """A static or input condition guarding a target call that emission could not evaluate."""
    kind = "undecided-condition"
    template = "staticexec can't decide a condition guarding a target call when emitting: {detail}"


class UndecidedLoop(Message):
    """A loop around target calls whose items emission could not compute (the loop is unrolled over them)."""
    kind = "undecided-loop"
    template = "staticexec can't compute the items of a loop around target calls when emitting: {detail}"


class UnresolvedCall(Message):
    """A call that may reach a target but resolves to nothing the analysis or the instance can follow."""
    kind = "unresolved-call"
    template = "a call that could reach a target can't be resolved: {detail}"


class UnsupportedStatement(Message):
    """A statement around target calls that can't be cut into straight-line subgraphs."""
    kind = "unsupported-statement"
    template = "a statement around a target call can't be cut: {detail}"


class UnsupportedDecorator(Message):
    """A reaching function with a decorator that docs/decorators.md does not model."""
    kind = "unsupported-decorator"
    template = "a reaching function has a decorator with no model in docs/decorators.md: {detail}"


class DecoratorMismatch(Message):
    """A modelled decorator that does not behave as docs/decorators.md models it when subgraphs are emitted."""
    kind = "decorator-mismatch"
    template = "a decorator does not behave as docs/decorators.md models it: {detail}"


class InstanceMismatch(Message):
    """The model instance is not what the plan was made for (class, source or call sites)."""
    kind = "instance-mismatch"
    template = "the model instance does not match the plan: {detail}"


class NoCallPath(Message):
    """The root forward calls none of the targets, along any path."""
    kind = "no-call-path"
    template = "no call path from the root forward to a target: {detail}"


class MutatedState(Message):
    """The forward changes state (layers, flags, module-level values) that decides which targets run,
    or that outlives a subgraph, so the pipeline's second run of it would change it again."""
    kind = "mutated-state"
    template = "the forward changes state at run time that the subgraphs can't reproduce: {detail}"


class ShadowedName(Message):
    """A local of the root forward (never renamed) that would hide a module-level name an inlined callee reads."""
    kind = "shadowed-name"
    template = "inlining would let a root-forward name hide a module-level one: {detail}"


class ClosureAcrossCut(Message):
    """A lambda or local function made in one subgraph that reads a local the forward binds again in a later one."""
    kind = "closure-across-cut"
    template = "a function the forward makes reads a name it binds again after a target call: {detail}"


class ReservedName(Message):
    """A name of a function emission writes out that has the form of the names emitted code gives its own
    values and renamed locals (emit/reserved.py)."""
    kind = "reserved-name"
    template = "a name of the source has the form of a name staticexec's emitted code uses: {detail}"


class InstanceHook(Message):
    """A hook on the model instance (or a global module hook) that the inlined forwards would not run."""
    kind = "instance-hook"
    template = "a hook on the model instance would not run in the subgraphs: {detail}"


class ReplacedForward(Message):
    """A module whose running forward is not the analysed one (set on the instance, replaced or wrapped)."""
    kind = "replaced-forward"
    template = "the model runs another forward than the analysed source: {detail}"


class StaleSource(Message):
    """A planned function whose file changed since its module was imported."""
    kind = "stale-source"
    template = "the source file on disk is not the code the model runs: {detail}"


class Refused(Exception):
    """The analysis or emission cannot prove where target calls are; carries the reasons."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = list(messages)
        super().__init__("; ".join(str(m) for m in self.messages))

    @property
    def first(self) -> Message:
        """The first reason."""
        return self.messages[0]


class UsageError(Exception):
    """Bad input from the user (unknown architecture or target, malformed plan): exit code 2."""


class StalePlan(UsageError):
    """A plan was made for other source code than the installed one."""


class MalformedPlan(UsageError):
    """A plan file is not a valid plan document."""
