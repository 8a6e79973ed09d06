"""staticexec: split a model's forward into sequential subgraphs from its source alone."""

__version__ = "0.1.0"

from .api import analyse, analyse_architecture, load_plan, subgraphs  # noqa: E402
from .run import Subgraph, run_subgraphs  # noqa: E402

__all__ = ["Subgraph", "analyse", "analyse_architecture", "load_plan", "run_subgraphs", "subgraphs"]
