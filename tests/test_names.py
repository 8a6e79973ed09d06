"""jedi's on-disk cache shared by parallel workers: a cut cache file must not change what resolves."""

from __future__ import annotations

import glob
import os
import pickle

import jedi
import parso.cache

import staticexec.names  # noqa: F401  makes parso's cache safe to share

USER = "import helpers\n\ny = helpers.take_along_dim(1, 2)\n"


def _goto(tmp_path):
    project = jedi.Project(str(tmp_path), added_sys_path=[str(tmp_path)])
    names = jedi.Script(USER, path=str(tmp_path / "user.py"), project=project).goto(3, 14, follow_imports=True)
    return [n.full_name for n in names]


def _cache_files(cache):
    return [p for p in glob.glob(os.path.join(cache, "**", "*.pkl"), recursive=True)]


def test_a_cut_cache_file_is_a_miss_and_is_rewritten_whole(tmp_path, monkeypatch):
    cache = tmp_path / "jedi-cache"
    monkeypatch.setattr(jedi.settings, "cache_directory", str(cache))
    (tmp_path / "src").mkdir()
    helpers = tmp_path / "src" / "helpers.py"
    helpers.write_text("".join(f"def f{i}(x):\n    return x\n\n" for i in range(300)) + "def take_along_dim(a, b):\n    return a\n")
    src = tmp_path / "src"
    parso.cache.parser_cache.clear()
    assert _goto(src) == ["helpers.take_along_dim"]
    (pickled,) = [p for p in _cache_files(str(cache)) if os.path.getsize(p) > 1000]
    whole = open(pickled, "rb").read()
    pickle.loads(whole)  # written whole
    assert not glob.glob(os.path.join(cache, "**", ".tmp-*"), recursive=True)

    # what a reader saw while a parallel worker was still writing (or after one was killed mid-write)
    with open(pickled, "wb") as handle:
        handle.write(whole[: len(whole) // 2])
    parso.cache.parser_cache.clear()  # a fresh worker process
    assert _goto(src) == ["helpers.take_along_dim"]
    pickle.loads(open(pickled, "rb").read())  # and the cut file was replaced by a whole one
