"""staticexec's version and the installed transformers release, both written into every plan it makes,
and the digest of staticexec's own code, which results made by other code are told apart by."""

from __future__ import annotations

import hashlib
import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))

__version__ = "0.1.0"


def transformers_version() -> str:
    """The installed transformers release; empty when it is not installed."""
    try:
        import transformers
    except ImportError:  # pragma: no cover
        return ""
    return transformers.__version__


def code_digest(skip: frozenset[str] | set[str] = frozenset(), package: str = PACKAGE) -> str:
    """sha256 (hex) over every .py file of the package, subpackages included: each file's path relative to
    the package (forward slashes), then its bytes, in sorted order; files named in `skip` are left out."""
    names = sorted(os.path.relpath(os.path.join(folder, name), package).replace(os.sep, "/")
                   for folder, _, files in os.walk(package) for name in files if name.endswith(".py"))
    digest = hashlib.sha256()
    for name in names:
        if name not in skip:
            with open(os.path.join(package, name), "rb") as handle:
                digest.update(name.encode() + handle.read())
    return digest.hexdigest()
