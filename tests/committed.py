"""The committed plan folders (staticexec/shipped/transformers-X, shipped in the package), and the one for the installed release.

A test that compares fresh analysis with committed plans can only do so
against plans made with the installed transformers; on a release without a
folder it is skipped with that reason, never passed.
"""

from __future__ import annotations

import glob
import os

import pytest
import transformers

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "staticexec", "shipped")
PREFIX = "transformers-"


def folders() -> list[str]:
    """Every committed plans folder, oldest release first."""
    from packaging.version import Version

    found = [p for p in glob.glob(os.path.join(ROOT, PREFIX + "*")) if os.path.isdir(p)]
    return sorted(found, key=lambda p: Version(os.path.basename(p)[len(PREFIX):]))


def release(folder: str) -> str:
    return os.path.basename(folder)[len(PREFIX):]


def installed() -> str | None:
    """The committed folder made with the installed transformers, if there is one."""
    folder = os.path.join(ROOT, PREFIX + transformers.__version__)
    return folder if os.path.isdir(folder) else None


def require_installed() -> str:
    folder = installed()
    if folder is None:
        have = ", ".join(release(f) for f in folders()) or "none"
        pytest.skip(f"no committed plans for the installed transformers {transformers.__version__} "
                    f"(staticexec/shipped has {have}); drift against committed plans is not checked")
    return folder
