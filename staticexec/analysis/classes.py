"""Classes as their source gives them: definitions, bases and MRO, methods, class-body constants.

Part of stage 2 (names/resolve): `ClassIndex` follows a class's bases with jedi (names.py) and
linearises them as Python does, finds methods and class attributes through that order, and
indexes which methods store which `self.<attr>`. The resolver (resolve.py) builds on it to
evaluate what those attributes hold. Nothing is imported or instantiated.
"""

from __future__ import annotations

import ast
import os

from staticexec.analysis import external
from staticexec.analysis.names import shared_names
from staticexec.analysis.session import current
from staticexec.analysis.source import ClassRef, FunctionRef, SourceFile, function_node, load_file, load_module
from staticexec.analysis.values import EMPTY, Constant, DATA, Value, one

CONTAINERS = {
    ("torch.nn.modules.container", "ModuleList"),
    ("torch.nn.modules.container", "Sequential"),
    ("torch.nn.modules.container", "ModuleDict"),
}


# methods that add a module to a container stored on self: `self.layers.append(...)` stores to `layers`
GROWING_METHODS = ("append", "extend", "insert", "add_module")
# calls that store an attribute of the object by name (`setattr(self, "x", v)`, `self.add_module("x", v)`):
# not followed, but a read of such an attribute is not said to be "never set"
NAMED_STORES = ("setattr", "add_module", "register_module")
# nn.Module methods that return the module itself: `self.m = self.m.to(dtype)` keeps what self.m held
SELF_RETURNING = frozenset({
    "to", "float", "half", "double", "bfloat16", "cuda", "cpu", "xpu", "ipu", "mtia", "eval", "train",
    "requires_grad_", "type", "to_empty", "apply", "share_memory",
})
TORCH_MODULE = ("torch.nn.modules.module", "Module")


class ClassIndex:
    """Class definitions, bases, MRO, methods and stored attributes, each looked up once per analysis."""

    def __init__(self) -> None:
        self.names = shared_names()
        self._mro: dict[ClassRef, list[ClassRef]] = {}
        self._unread: dict[ClassRef, str] = {}

    # ----- classes -------------------------------------------------------------------------

    def class_def(self, ref: ClassRef) -> tuple[SourceFile, ast.ClassDef] | None:
        """The file and stdlib-ast node defining a class, if its source can be found."""
        sf = load_module(ref.module)
        if sf is None:
            return None
        node = sf.find_class(ref.name)
        return (sf, node) if node is not None else None

    def bases(self, ref: ClassRef) -> list[ClassRef]:
        """A class's direct bases that jedi resolves to classes, in order (an external class's, as the
        imported class holds them)."""
        runtime = external.bases(ref.module, ref.name) if self.is_external(ref.module) else None
        if runtime is not None:
            return [ClassRef(module, name) for module, name in runtime]
        found = self.class_def(ref)
        if found is None:
            return []
        sf, node = found
        out = []
        for base in node.bases:
            target = base
            while isinstance(target, ast.Subscript):  # Generic[...]
                target = target.value
            defn = self.names.goto_module_scope(sf, target)
            if defn is not None and defn.kind == "class":
                out.append(ClassRef(defn.module, defn.qualname))
        return out

    def unread_class(self, ref: ClassRef) -> str:
        """Why the class's MRO may hold code the analysis has not read: a class whose source is not
        found, or a base jedi does not resolve to a class; '' when it read them all."""
        cached = self._unread.get(ref)
        if cached is None:
            cached = self._unread[ref] = self._find_unread(ref)
        return cached

    def _find_unread(self, ref: ClassRef) -> str:
        for c in self.mro(ref):
            if self.is_external(c.module):
                continue
            found = self.class_def(c)
            if found is None:
                return f"the source of {c.name} ({c.module}) is not found"
            sf, node = found
            for base in node.bases:
                target = base
                while isinstance(target, ast.Subscript):
                    target = target.value
                defn = self.names.goto_module_scope(sf, target)
                if defn is None or defn.kind != "class":
                    return f"{c.name}'s base `{ast.unparse(base)[:60]}` is not resolved"
        return ""

    def mro(self, ref: ClassRef) -> list[ClassRef]:
        """Python's C3 linearisation over the statically resolved bases."""
        cached = self._mro.get(ref)
        if cached is not None:
            return cached
        self._mro[ref] = [ref]  # recursion guard for broken hierarchies
        seqs = [list(self.mro(b)) for b in self.bases(ref)]
        seqs.append(list(self.bases(ref)))
        order = [ref]
        while True:
            seqs = [s for s in seqs if s]
            if not seqs:
                break
            for seq in seqs:
                head = seq[0]
                if not any(head in s[1:] for s in seqs):
                    break
            else:  # inconsistent: fall back to depth-first order
                head = seqs[0][0]
            order.append(head)
            for s in seqs:
                if s and s[0] == head:
                    del s[0]
        self._mro[ref] = order
        return order

    def is_container(self, ref: ClassRef) -> bool:
        """Whether a class is, or derives from, a torch module container (`CONTAINERS`)."""
        return any((c.module, c.name) in CONTAINERS for c in self.mro(ref))

    def is_module(self, ref: ClassRef) -> bool:
        """Whether a class derives from `torch.nn.Module` (a Parameter or a buffer does not)."""
        return any((c.module, c.name) == TORCH_MODULE for c in self.mro(ref))

    def is_autograd_function(self, cls: ClassRef) -> bool:
        """Whether a class derives from `torch.autograd.Function`."""
        return any(c.module == "torch.autograd.function" and c.name == "Function" for c in self.mro(cls))

    def is_external(self, ref_module: str) -> bool:
        """Code we never analyse: torch, numpy and the standard library (their modules hold no targets)."""
        return external.is_external(ref_module)

    def find_method(self, cls: ClassRef, name: str) -> FunctionRef | None:
        """The method a class gets by a name through its MRO; None when missing or shadowed by a class attribute."""
        for c in self.mro(cls):
            found = self.class_def(c)
            if found is None:
                continue
            sf, node = found
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return FunctionRef(c.module, f"{c.name}.{name}")
                if isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in item.targets
                ):
                    return None  # a class attribute shadows inherited methods
        return None

    def _decorated(self, fref: FunctionRef, names: tuple[str, ...]) -> bool:
        sf = load_module(fref.module)
        node = function_node(sf, fref.qualname) if sf else None
        return node is not None and any(isinstance(d, ast.Name) and d.id in names for d in node.decorator_list)

    def is_property(self, fref: FunctionRef) -> bool:
        """Whether a function is decorated `@property` or `@cached_property`."""
        return self._decorated(fref, ("property", "cached_property"))

    def is_staticmethod(self, fref: FunctionRef) -> bool:
        """Whether a function is decorated `@staticmethod`."""
        return self._decorated(fref, ("staticmethod",))

    def is_classmethod(self, fref: FunctionRef) -> bool:
        """Whether a function is decorated `@classmethod`."""
        return self._decorated(fref, ("classmethod",))

    def class_assignment(self, cls: ClassRef, name: str) -> ast.expr | None:
        """The value of a class-body assignment `name = ...`, through the MRO."""
        for c in self.mro(cls):
            found = self.class_def(c)
            if found is None:
                continue
            for item in found[1].body:
                targets = []
                if isinstance(item, ast.Assign):
                    targets = item.targets
                elif isinstance(item, ast.AnnAssign) and item.value is not None:
                    targets = [item.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return item.value
        return None

    def class_constant(self, cls: ClassRef, name: str) -> Value:
        """A class-body constant such as `base_model_prefix = "model"`, through the MRO."""
        value = self.class_assignment(cls, name)
        if value is None:
            return EMPTY
        return one(Constant(value.value)) if isinstance(value, ast.Constant) else DATA

    def _storing_methods(self, cls: ClassRef, node: ast.ClassDef) -> dict[str, list[ast.FunctionDef]]:
        """For one class body: attribute name -> the methods that store `self.<name>` (one walk per class
        body, kept by the session: it does not depend on what is being analysed)."""
        stores = current().table("classes.stores")
        index = stores.get(node)
        if index is None:
            index = {}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for attr in sorted(_stored_self_attrs(item)):
                        index.setdefault(attr, []).append(item)
            stores[node] = index
        return index

    def named_stores(self, cls: ClassRef) -> list[tuple[str | None, str]]:
        """The stores on `self` that the class's model code makes by name, which the resolver does not
        follow (`setattr(self, name, v)`, `self.add_module(name, v)`, `self.__dict__[...]`): per store,
        the name when it is a constant (None when computed at run time) and `Class.method line N: code`."""
        out: list[tuple[str | None, str]] = []
        for c, node in self._model_code_classes(cls):
            out += self._named_stores_in(c, node)
        return out

    def _model_code_classes(self, cls: ClassRef) -> list[tuple[ClassRef, ast.ClassDef]]:
        """The classes of `cls`'s MRO that are model code (not torch's, not a framework mixin), with their nodes."""
        out = []
        for c in self.mro(cls):
            if self.is_external(c.module) or is_framework(c.module):
                continue
            found = self.class_def(c)
            if found is not None:
                out.append((c, found[1]))
        return out

    def _named_stores_in(self, cls: ClassRef, node: ast.ClassDef) -> list[tuple[str | None, str]]:
        """`named_stores` of one class body (one walk per class body, kept by the session)."""
        table = current().table("classes.named_stores")
        found = table.get(node)
        if found is None:
            found = table[node] = [
                (name, f"{cls.name}.{item.name} line {site.lineno}: `{ast.unparse(site)[:80]}`")
                for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                for site, name in _named_store_sites(item)
            ]
        return found

    def external_setter(self, cls: ClassRef, attr: str) -> ClassRef | None:
        """The base class outside the analysed code (torch's `nn.Embedding`, `nn.Module`) whose methods
        store `self.<attr>`, by assignment or by a constant name; None when none does or none can be read."""
        for c in self.mro(cls):
            if not self.is_external(c.module) or c.module == "builtins":
                continue
            found = self.class_def(c)
            if found is None:
                continue
            if attr in self._storing_methods(c, found[1]) or any(n == attr for n, _ in self._named_stores_in(c, found[1])):
                return c
        return None

    def attribute_names(self, cls: ClassRef) -> list[str]:
        """Names stored as `self.<name>` by the class's model code (framework mixins hold no submodules)."""
        names: list[str] = []
        for c, node in self._model_code_classes(cls):
            for name in self._storing_methods(c, node):
                if name not in names:
                    names.append(name)
        return names


def _stored_name(node: ast.Call) -> ast.expr | None:
    """The name argument of a call that stores an attribute of self by name, else None:
    `setattr(self, name, v)`, `object.__setattr__(self, name, v)`, `self.add_module(name, v)`,
    `self.register_module(name, v)`, `super().__setattr__(name, v)` (as torch's nn.Module does)."""
    f, args = node.func, node.args
    self_first = bool(args) and isinstance(args[0], ast.Name) and args[0].id == "self"
    if isinstance(f, ast.Name) and f.id == "setattr":
        return args[1] if self_first and len(args) >= 3 else None
    if not isinstance(f, ast.Attribute):
        return None
    if f.attr == "__setattr__" and isinstance(f.value, ast.Name) and f.value.id == "object":
        return args[1] if self_first and len(args) >= 3 else None
    if f.attr == "__setattr__" and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) \
            and f.value.func.id == "super":
        return args[0] if len(args) >= 2 else None
    if f.attr in NAMED_STORES and f.attr != "setattr":
        if isinstance(f.value, ast.Name) and f.value.id == "self" and len(args) >= 2:
            return args[0]
    return None


def _named_store_sites(fn: ast.FunctionDef) -> list[tuple[ast.AST, str | None]]:
    """The stores on self by name in a function, in source order: the node, and the name when it is
    a string constant."""
    out: list[tuple[ast.AST, str | None]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = _stored_name(node)
            if name is not None:
                constant = isinstance(name, ast.Constant) and isinstance(name.value, str)
                out.append((node, name.value if constant else None))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "__dict__"
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            out.append((node, None))
    return sorted(out, key=lambda item: (item[0].lineno, item[0].col_offset))


def _stored_self_attrs(fn: ast.FunctionDef) -> set[str]:
    """Attributes a method stores on self, grows with `.append` / `.extend` / `.add_module`, or stores an
    item of (`self.adapters[lang] = ...`)."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                out.add(node.attr)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):  # self.adapters[lang] = ...
            inner = node.value
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self":
                out.add(inner.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in GROWING_METHODS
            and isinstance(node.func.value, ast.Attribute)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == "self"
        ):
            out.add(node.func.value.attr)
    return out


def is_framework(module: str) -> bool:
    """transformers' own machinery (not a model folder): mixins and utilities that construct no submodules."""
    return module.startswith("transformers.") and not module.startswith("transformers.models.")


def find_transformers_class(model_type: str, class_name: str) -> ClassRef | None:
    """Where transformers defines a model class, found from the model_type's folder without importing it."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    package = f"transformers.models.{model_type_to_module_name(model_type)}"
    init = load_module(package)
    if init is None:
        return None
    folder = os.path.dirname(init.path)
    for name in sorted(os.listdir(folder)):
        if name.startswith("modeling_") and name.endswith(".py"):
            sf = load_file(os.path.join(folder, name), f"{package}.{name[:-3]}")
            if sf.find_class(class_name) is not None:
                return ClassRef(sf.module, class_name)
    return None
