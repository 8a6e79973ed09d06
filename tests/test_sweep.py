"""The full causal-LM sweep, as CI runs it (`make verify`): every architecture verified exactly."""

from __future__ import annotations

import os

import pytest

from staticexec import coverage, sweep
from staticexec.architectures import task_architectures
from staticexec.verify import sweep_job

BUGS = {"mismatch", "crash", "timeout", "error"}


@pytest.mark.slow
def test_causal_lm_sweep():
    rows = sweep.run(sweep_job, task_architectures("causal-lm"), {"attn": "eager"}, jobs=os.cpu_count() or 1,
                     timeout=600)
    table = {r["arch"]: r for r in rows}
    bugs = {a: r["reason"] for a, r in table.items() if r["status"] in BUGS}
    assert not bugs, bugs
    refused = {a: r["reason"] for a, r in table.items() if r["status"] == "refused"}
    assert all(":" in reason and " " in reason for reason in refused.values()), refused  # file:line and why
    totals = coverage.totals(table)
    assert totals["percent"] >= 98.0, coverage.totals_line("causal-lm", table)
