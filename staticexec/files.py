"""Files staticexec writes (plans, index, coverage and matrix reports): whole or not at all.

A run that stops half-way (an error, Ctrl-C, a killed worker) must never leave a cut file that
a later run or a reviewer would read as a result. The bottom of the package: it imports nothing
of staticexec.
"""

from __future__ import annotations

import os
import tempfile


def write_atomic(path: str, content: str | bytes) -> None:
    """Write a whole file or nothing: a temporary file in the same folder, renamed into place."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        data = content.encode("utf-8") if isinstance(content, str) else content
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as an ordinary file would be, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
