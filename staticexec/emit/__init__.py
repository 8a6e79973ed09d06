"""Stages 5 and 6, from a plan, a model instance and a sample to subgraphs that run.

validate and instance (what the caller passes, and whether the instance runs the planned code) ->
emitter (the forward inlined into one straight-line program, decided branches checked again) ->
cut (one subgraph per target call) -> run (the Subgraph contract, the tripwire, the chain). It
imports the analysis below it and nothing above; `Emitter` is its entry point, and `Subgraph`
what it gives.
"""

from staticexec.emit.emitter import Emitter
from staticexec.emit.run import Subgraph

__all__ = ["Emitter", "Subgraph"]
