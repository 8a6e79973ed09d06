"""staticexec: split a model's forward into sequential subgraphs from its source alone.

The pipeline runs source -> names/resolve -> callgraph -> plan -> emit -> cut -> run; the
package exports its entry points (api.py) and the `Subgraph` it produces (run.py).
"""

__version__ = "0.1.0"

from .api import analyse, analyse_architecture, load_plan, subgraphs  # noqa: E402
from .run import Subgraph, run_subgraphs  # noqa: E402

__all__ = ["Subgraph", "analyse", "analyse_architecture", "load_plan", "run_subgraphs", "subgraphs"]
