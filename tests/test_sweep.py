"""The full causal-LM sweep, as CI runs it (`make verify`): every architecture verified exactly."""

from __future__ import annotations

import os

import pytest

from staticexec import sweep
from staticexec.check import coverage
from staticexec.analysis.architectures import task_architectures
from staticexec.check.verify import sweep_job

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


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: `make verify` runs it
def test_a_job_of_a_module_run_with_dash_m_reaches_its_workers(tmp_path):
    """`python -m staticexec.check.matrix` hands its own run_case, whose __module__ is then __main__, to the workers."""
    import subprocess
    import sys

    (tmp_path / "jobmod.py").write_text(
        "import json\nfrom staticexec import sweep\n\n"
        "def job(arch, options):\n    return {'status': 'ok', 'reason': arch.upper()}\n\n"
        "if __name__ == '__main__':\n"
        "    print(json.dumps([r['reason'] for r in sweep.run(job, ['a', 'b'], {}, jobs=2)]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "jobmod"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == '["A", "B"]'
