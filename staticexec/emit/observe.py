"""The branches the sample takes when the model runs it: one traced forward, read by line events.

Emission (emitter.py) decides each `if` around target calls from the sample without running the
model, by evaluating its test (evaluate.py). Some tests can't be computed before running: the
state of a cache the forward builds, the result of a helper. Such an `if` is decided here: the
model runs the sample once under `sys.settrace`, tracing only the files that hold such tests,
and the branch each evaluation took is read off the line events of its frame.

A decision read here is like every decision taken from the sample: the test runs again where it
stood in the subgraphs, and a batch that would take the other branch raises `BranchMismatch`.
A test on tensor values is never decided this way (the plan refuses it): calibration batches
would disagree on it.
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IfLines:
    """Where an `if` lies in its file: its test, its body, and where the code after the body starts.

    `after` is the first line of the `else` / `elif` part, or the line after the whole statement."""

    file: str
    test: tuple[int, int]
    body: int
    after: int


class SampleRun:
    """The model's own forward on a copy of the sample, traced in chosen files, run on first need."""

    def __init__(self, model: Any, sample: dict) -> None:
        self.model = model
        self.sample = sample
        self._files: set[str] = set()
        self._events: dict[str, list[tuple[int, int]]] = {}
        self.failure: str | None = None

    def branch(self, where: IfLines, occurrence: int) -> bool | None:
        """Whether the `occurrence`-th evaluation (from 0) of the `if` took its body; None if unknown."""
        if where.body <= where.test[1]:
            return None  # body on the test's line: line events can't tell the branches apart
        events = self._traced(where.file)
        if events is None:
            return None
        first, last = where.test
        count = -1
        previous: dict[int, int] = {}
        for i, (frame, line) in enumerate(events):
            before = previous.get(frame)
            previous[frame] = line
            if not first <= line <= last or (before is not None and first <= before <= last):
                continue
            count += 1
            if count < occurrence:
                continue
            for other, next_line in events[i + 1:]:
                if other == frame and not first <= next_line <= last:
                    return where.body <= next_line < where.after
            return None
        return None

    def _traced(self, file: str) -> list[tuple[int, int]] | None:
        file = os.path.realpath(file)
        if file not in self._files:
            self._files.add(file)
            self._run()
        return None if self.failure else self._events.get(file, [])

    def _run(self) -> None:
        import torch

        files = set(self._files)
        events: dict[str, list[tuple[int, int]]] = {f: [] for f in files}
        known: dict[Any, list | None] = {}
        serial = iter(range(sys.maxsize))

        def trace(frame, event, arg):
            code = frame.f_code
            log = known.get(code, ())
            if log == ():
                log = known[code] = events.get(os.path.realpath(code.co_filename))
            if log is None:
                return None
            number = next(serial)

            def local(frame, event, arg):
                if event == "line":
                    log.append((number, frame.f_lineno))
                return local

            return local

        try:
            sample = copy.deepcopy(self.sample)
        except Exception as exc:  # noqa: BLE001 - a sample that can't be copied is not run
            self.failure = f"the sample can't be copied to run the model on it ({type(exc).__name__})"
            return
        previous = sys.gettrace()
        sys.settrace(trace)
        try:
            with torch.no_grad():
                self.model(**sample)
        except Exception as exc:  # noqa: BLE001 - the model's own error: nothing can be read
            self.failure = f"the model's own forward raised {type(exc).__name__} on the sample"
        finally:
            sys.settrace(previous)
        self._events = events
