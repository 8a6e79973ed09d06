"""parso's search for the name at a position, pruned by position.

jedi's `goto` starts from `module.get_name_of_position((line, column))`, which parso answers by
visiting every node of the module in order until it meets the name: a query near the end of a
long model file walks the whole file, and the analysis asks one for every name it resolves
(a sixth of a warm analysis). The leaves of a parse tree lie in source order, so a subtree that
ends before the position, or begins after it, cannot hold the name: the search here skips the
first and stops at the second, and finds the same leaf (the first name whose span holds the
position), or none, as parso's.

It is part of stage 2 (names): names.py imports it for this effect.
"""

from __future__ import annotations

from parso.python.tree import PythonMixin
from parso.tree import Leaf

_parso_search = PythonMixin.get_name_of_position


def name_of_position(node, position: tuple[int, int]):
    """The first name leaf below `node` whose start and end hold `position`; None when there is none."""
    for child in node.children:
        if child.start_pos > position:
            return None  # it and every later leaf start after the position
        if isinstance(child, Leaf):
            if child.type == "name" and position <= child.end_pos:
                return child
        elif child.end_pos >= position:
            found = name_of_position(child, position)
            if found is not None:
                return found
    return None


PythonMixin.get_name_of_position = name_of_position
