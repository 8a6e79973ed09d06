"""Every diagnostic staticexec gives, one small class each, with its template.

Tests assert the kind of a message (its class), never its wording.
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
        return self.template.format(detail=self.detail)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path else ""
        return f"{where}{self.text}"

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": self.path, "line": self.line, "reason": self.text}


class DynamicCondition(Message):
    kind = "dynamic-condition"
    template = "a target call is guarded by a condition on tensor values: {detail}"


class UndecidedCondition(Message):
    kind = "undecided-condition"
    template = "a condition guarding a target call can't be decided before running: {detail}"


class DynamicLoop(Message):
    kind = "dynamic-loop"
    template = "a target call is inside a loop whose trip count depends on run-time values: {detail}"


class UnresolvedCall(Message):
    kind = "unresolved-call"
    template = "a call that could reach a target can't be resolved: {detail}"


class UnsupportedStatement(Message):
    kind = "unsupported-statement"
    template = "a statement around a target call can't be cut: {detail}"


class UnsupportedDecorator(Message):
    kind = "unsupported-decorator"
    template = "a reaching function has a decorator with no model in docs/decorators.md: {detail}"


class DecoratorMismatch(Message):
    kind = "decorator-mismatch"
    template = "a decorator does not behave as docs/decorators.md models it: {detail}"


class InstanceMismatch(Message):
    kind = "instance-mismatch"
    template = "the model instance does not match the plan: {detail}"


class NoCallPath(Message):
    kind = "no-call-path"
    template = "no call path from the root forward to a target: {detail}"


class MutatedState(Message):
    kind = "mutated-state"
    template = "the forward changes, at run time, what decides which targets run: {detail}"


class ShadowedName(Message):
    kind = "shadowed-name"
    template = "inlining would let a root-forward name hide a module-level one: {detail}"


class InstanceHook(Message):
    kind = "instance-hook"
    template = "a hook on the model instance would not run in the subgraphs: {detail}"


class ReplacedForward(Message):
    kind = "replaced-forward"
    template = "the model runs another forward than the analysed source: {detail}"


class StaleSource(Message):
    kind = "stale-source"
    template = "the source file on disk is not the code the model runs: {detail}"


class Refused(Exception):
    """The analysis or emission cannot prove where target calls are; carries the reasons."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = list(messages)
        super().__init__("; ".join(str(m) for m in self.messages))

    @property
    def first(self) -> Message:
        return self.messages[0]


class UsageError(Exception):
    """Bad input from the user (unknown architecture or target, malformed plan): exit code 2."""


class StalePlan(UsageError):
    """A plan was made for other source code than the installed one."""


class MalformedPlan(UsageError):
    """A plan file is not a valid plan document."""
