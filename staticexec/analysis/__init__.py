"""Stages 1 to 4, from source to plan, without running anything.

source (find and parse files) -> names and resolve (where a name is defined, which classes an
expression can hold) -> callgraph (which calls reach a target) -> conditions and mutations (what
decides a reaching statement, and what the forward changes) -> planner (every statement
classified). It imports nothing from the stages above it; `build_plan` is its entry point, and
`Plan` (plan.py, typed, JSON only at its boundary) what it gives.
"""

from staticexec.analysis.plan import Plan
from staticexec.analysis.planner import build_plan

__all__ = ["Plan", "build_plan"]
