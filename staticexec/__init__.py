"""staticexec: split a model's forward into sequential subgraphs from its source alone.

The pipeline runs source -> names/resolve -> callgraph -> plan -> emit -> cut -> run; the
package exports its entry points (api.py) and the `Subgraph` it produces (run.py).
"""

from staticexec.version import __version__
from staticexec.api import analyse, analyse_architecture, load_plan, subgraphs
from staticexec.emit.run import Subgraph, run_subgraphs

__all__ = ["Subgraph", "analyse", "analyse_architecture", "load_plan", "run_subgraphs", "subgraphs"]
