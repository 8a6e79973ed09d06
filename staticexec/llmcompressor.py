"""llm-compressor integration: staticexec's subgraphs inside its SequentialPipeline.

    from staticexec.llmcompressor import patch

    with patch():
        oneshot(model=model, dataset=ds, recipe=recipe, pipeline="sequential")

`trace_subgraphs` has the signature and return contract of
`llmcompressor.pipelines.sequential.helpers.trace_subgraphs` (see docs/llmcompressor.md).
`patch()` rebinds the name the pipeline module looks up, and restores it on exit.
This module imports llm-compressor only when `patch()` runs; staticexec itself never does.

It sits after the pipeline: `api.subgraphs` plans (or loads a plan), emits and cuts, and
llm-compressor runs the resulting `Subgraph`s (run.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from staticexec.api import subgraphs
from staticexec.emit.run import Subgraph

__all__ = ["trace_subgraphs", "patch"]

PIPELINE_MODULE = "llmcompressor.pipelines.sequential.pipeline"


def trace_subgraphs(model: Any, sample_input: dict[str, Any], sequential_targets: str | list[str],
                    ignore: list[str] | None, targets_per_subgraph: int = 1) -> list[Subgraph]:
    """Subgraphs of `model` for `sample_input`, in execution order, `targets_per_subgraph` targets each.

    Each has `input_names`, `consumed_names`, `forward(model, **inputs) -> dict` and
    `submodules(model, recurse=True)`. `ignore` (function names fx tracing skips) has no
    meaning here: nothing is traced, every statement outside the path to a target runs as-is.
    """
    return subgraphs(model, sample_input, sequential_targets, ignore, targets_per_subgraph)


class patch:
    """Make llm-compressor's SequentialPipeline use staticexec's `trace_subgraphs`.

    As a context manager the pipeline's own tracer is restored on exit; called plainly,
    the patch stays until `.undo()`.
    """

    def __init__(self) -> None:
        self._module = importlib.import_module(PIPELINE_MODULE)
        self._original = self._module.trace_subgraphs
        self._module.trace_subgraphs = trace_subgraphs

    def undo(self) -> None:
        """Restore the pipeline's own `trace_subgraphs`, unless something else has replaced ours since."""
        if self._module.trace_subgraphs is trace_subgraphs:
            self._module.trace_subgraphs = self._original

    def __enter__(self) -> "patch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()
