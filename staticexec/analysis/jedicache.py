"""jedi's disk cache (parso's pickled module trees), made safe to share and quick to read back.

jedi keeps every module it parses as a pickled parso tree under `jedi.settings.cache_directory`
and reads it back instead of parsing again. staticexec replaces parso's two file functions:

- a write is whole-or-nothing: a temporary file renamed into place;
- a read of a cut or unreadable file is a miss, not an error;
- a module is written with its index of used names (every name leaf, by its text), which jedi
  builds for each module it looks a name up in, by walking the whole tree: with the index
  pickled beside the tree, a later process reads it back instead of walking the tree again.

It is part of stage 2 (names): names.py imports it for these effects.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time

import parso.cache
from parso.python.tree import Module


def _save_atomically(hashed_grammar, path, item, cache_path=None) -> None:
    """parso's cache write, made whole-or-nothing and written with the module's used names.

    parso pickles a parsed module straight into its cache file. A process
    reading that file while another writes it (parallel workers planning on a
    cold cache), or after a worker was killed mid-write, unpickles a cut file;
    jedi's `goto` then raises and the names of that module (every `torch.*`
    function, from torch's 30,000-line stub) come out unresolved. With the
    rename, a reader sees no file or a whole one.
    """
    if isinstance(item.node, Module):
        item.node.get_used_names()  # built from this very tree: pickled with it, in its `_used_names` slot
    target = parso.cache._get_hashed_path(hashed_grammar, path, cache_path=cache_path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(item, handle, pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_parso_load = parso.cache._load_from_file_system


def _load_or_miss(hashed_grammar, path, p_time, cache_path=None):
    """parso's cache read, where a cut or unreadable file (left by an older writer) is a miss, not an error.

    A module read back is marked used now. parso keeps the time it was first parsed, pickled with
    it, and once its memory cache holds 600 modules it drops every one not used in ten minutes:
    each module read back from the disk cache, moments ago, looked that old. jedi still held them
    and failed on its next lookup in one (a KeyError inside `goto`), so the name came out
    unresolved: `from transformers import X`, which reads hundreds of modules, did it to every
    module read before."""
    try:
        node = _parso_load(hashed_grammar, path, p_time, cache_path=cache_path)
    except (EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError, ValueError):
        return None
    item = parso.cache.parser_cache.get(hashed_grammar, {}).get(path)
    if node is not None and item is not None:
        item.last_used = time.time()
    return node


parso.cache._save_to_file_system = _save_atomically
parso.cache._load_from_file_system = _load_or_miss
