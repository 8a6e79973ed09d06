import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one worker per core: torch's own thread pool in each worker would put two threads
    # on every core, and the tiny models gain nothing from it
    import torch

    torch.set_num_threads(1)
