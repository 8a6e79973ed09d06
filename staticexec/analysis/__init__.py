"""Stages 1 to 4, from source to plan, without running anything.

source (find and parse files) -> names and resolve (where a name is defined, which classes an
expression can hold) -> callgraph (which calls reach a target) -> conditions and mutations (what
decides a reaching statement, and what the forward changes) -> plan (every statement classified).
It imports nothing from the stages above it; `build_plan` is its entry point, and `Plan` what it
gives.
"""

from staticexec.analysis.plan import Plan, build_plan

__all__ = ["Plan", "build_plan"]
