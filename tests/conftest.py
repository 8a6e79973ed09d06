import gc
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one worker per core: torch's own thread pool in each worker would put two threads
    # on every core, and the tiny models gain nothing from it
    import torch

    torch.set_num_threads(1)

# The whole heap (torch, transformers, the analysis caches: millions of objects, kept to the end) is walked
# by every full collection, a second or more each; at the default third threshold one ran every few test
# files. Young garbage is still collected as usual; what outlives two young collections waits for the
# collection at the session's end, which reports what its finalizers raise as before.
gc.set_threshold(gc.get_threshold()[0], gc.get_threshold()[1], 1000)


@pytest.fixture
def unloaded(monkeypatch):
    """`unloaded(match)` takes every loaded module whose name matches out of `sys.modules` for the test
    (put back after it) and gives a function listing those that match again: what the test itself imported,
    whatever other tests of the same worker ran before it."""
    def clear(match):
        for name in [m for m in sys.modules if match(m)]:
            monkeypatch.delitem(sys.modules, name)
        return lambda: sorted(m for m in sys.modules if match(m))

    return clear


def pytest_sessionfinish(session):
    """Collect the garbage once, then freeze what is left (live objects only: the analysis caches,
    millions of parse-tree objects) out of the collector. pytest's own last collections, which report
    what finalizers raised, still run and still see any garbage made after this; they no longer walk
    the caches, which took seconds on each worker after its last test, and neither do the
    interpreter's collections while it shuts down (the objects stay frozen)."""
    gc.collect()
    gc.freeze()
