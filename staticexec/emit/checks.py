"""Stage 5, emit: the switch every run-time check of the emitted code reads (runtime.py, reentry.py, run.py)."""

from __future__ import annotations

import contextvars

CHECKS: contextvars.ContextVar = contextvars.ContextVar("staticexec_checks", default=True)
"""Whether the run-time checks of what emission decided run (on by default; run.checks_off turns them off to
measure what they cost)."""
