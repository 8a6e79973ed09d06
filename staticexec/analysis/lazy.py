"""Names that transformers' packages export lazily, looked up where the imported package holds them.

transformers' `__init__.py` files bind their names by star imports under `TYPE_CHECKING` and by a
lazy module at run time. jedi fails inside its star-import filter on them, so `from transformers
import LlamaForCausalLM` (the way a user's code names the class it derives from) finds nothing.
Such a name, bound by the file's only import of it, is looked up in the imported package, and so is
a user's `transformers:Name` (userclass.py): only transformers is imported, and it imports the module
of transformers that defines the name. That module is then read from source like any other, by the
binding of the object's qualified name, when the module holds the object by it; a user's own code is
never imported here.
"""

from __future__ import annotations

import inspect
from typing import Any

from staticexec.analysis import external

PACKAGES = ("transformers",)
"""Top-level packages whose names are looked up this way when jedi finds nothing."""


def is_lazy(module: str) -> bool:
    """Whether a module is one of transformers' packages (its names may be exported lazily)."""
    return module.split(".")[0] in PACKAGES


def definition(module: str, member: str) -> tuple[str, str, str, str | None] | None:
    """Where `module.member` is defined, as the imported package holds it: (module, qualified name,
    kind, file), the fields of jedi's answer; None for a name that is not a class, function or
    module of transformers' own, or can't be looked up."""
    obj = definition_object(module, member)
    if inspect.ismodule(obj):
        return obj.__name__, "", "module", getattr(obj, "__file__", None)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        defined, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
        if defined and is_lazy(defined) and "<locals>" not in qualname and _holds(defined, qualname, obj):
            return defined, qualname, "class" if inspect.isclass(obj) else "function", None
    return None


def _holds(module: str, qualname: str, obj: Any) -> bool:
    """Whether a module, imported, holds `obj` by its qualified name. One made elsewhere under a borrowed
    name is not; whether the module's statement of that name made it is for its source to say (the
    module's last binding of the name, read where it is used)."""
    held = external.held(module, qualname.split(".")[0])
    for part in qualname.split(".")[1:]:
        held = getattr(held, part, external.MISSING)
    return held is obj


def definition_object(module: str, member: str) -> Any:
    """What `module.member` is in one of transformers' packages, imported; None for any other module,
    or a name it does not hold."""
    if not is_lazy(module):
        return None
    obj = external.held(module, member)
    return None if obj is external.MISSING else obj
