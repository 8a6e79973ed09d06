import atexit
import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one worker per core: torch's own thread pool in each worker would put two threads
    # on every core, and the tiny models gain nothing from it
    import torch

    torch.set_num_threads(1)

# At exit, after pytest has finished (its last garbage collections, which report what finalizers raised,
# included), what the process holds is frozen out of the collector: the interpreter's own collections
# while it shuts down would otherwise walk the analysis caches (millions of parse-tree objects) for
# seconds on every worker.
atexit.register(gc.freeze)
