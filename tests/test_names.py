"""jedi's on-disk cache shared by parallel workers: a cut cache file must not change what resolves.

Each resolution runs in a fresh process, as a sweep worker would: parso's
in-memory cache is process-wide, and clearing it here would pull parse trees
from under the shared resolver of the tests that follow.
"""

from __future__ import annotations

import glob
import os
import pickle
import subprocess
import sys

GOTO = """
import sys
import jedi
import staticexec.analysis.names  # noqa: F401  makes parso's cache safe to share
jedi.settings.cache_directory = sys.argv[1]
src = sys.argv[2]
project = jedi.Project(src, added_sys_path=[src])
code = "import helpers\\n\\ny = helpers.take_along_dim(1, 2)\\n"
names = jedi.Script(code, path=src + "/user.py", project=project).goto(3, 14, follow_imports=True)
print([n.full_name for n in names])
"""


def _goto(cache, src) -> str:
    done = subprocess.run([sys.executable, "-c", GOTO, str(cache), str(src)], capture_output=True, text=True)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def test_a_cut_cache_file_is_a_miss_and_is_rewritten_whole(tmp_path):
    cache, src = tmp_path / "jedi-cache", tmp_path / "src"
    src.mkdir()
    body = "".join(f"def f{i}(x):\n    return x\n\n" for i in range(300))
    (src / "helpers.py").write_text(body + "def take_along_dim(a, b):\n    return a\n")
    assert _goto(cache, src) == "['helpers.take_along_dim']"
    (pickled,) = [p for p in glob.glob(os.path.join(cache, "**", "*.pkl"), recursive=True) if os.path.getsize(p) > 1000]
    with open(pickled, "rb") as handle:
        whole = handle.read()
    pickle.loads(whole)  # written whole
    assert not glob.glob(os.path.join(cache, "**", ".tmp-*"), recursive=True)

    # what a reader saw while a parallel worker was still writing (or after one was killed mid-write)
    with open(pickled, "wb") as handle:
        handle.write(whole[: len(whole) // 2])
    assert _goto(cache, src) == "['helpers.take_along_dim']"
    with open(pickled, "rb") as handle:
        pickle.loads(handle.read())  # and the cut file was replaced by a whole one
