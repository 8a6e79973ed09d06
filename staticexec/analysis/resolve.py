"""Stage 2, resolve: which classes can an expression such as `self.layers[i]` hold?

jedi finds where names are defined (names.py), classes.py gives the class hierarchy and
functions.py a function's parameters and bindings; this module evaluates the right-hand
sides itself, with explicit rules for what jedi can't know:
`nn.ModuleList` / `nn.Sequential` / `nn.ModuleDict` element types (list
literals, comprehensions, lists built with `.append`, module-level dicts of
layer classes, helper methods returning the list), conditional constructors
(a union), attributes set in a parent `__init__` (the MRO), attributes
reassigned from themselves (`self.m = self.m.to(dtype)`: a fixed point, with
torch's `nn.Module` methods that return the module),
`getattr(self, self.base_model_prefix)`, `Cls._from_config(config.x)` and
`AutoModel.from_config(config.x)` through transformers' auto mapping names
and the sub-config's class, as transformers picks them. Nothing is instantiated but configs.

What it can't tell it gives as the unknown with the reason; "X never sets self.y"
only when no code of the class or its bases (torch's included) stores that attribute.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from staticexec.analysis.classes import (
    CONTAINERS, GROWING_METHODS, SELF_RETURNING, TORCH_MODULE, ClassIndex, find_transformers_class, is_framework,
)
from staticexec.analysis.observed import Observed
from staticexec.analysis.functions import FunctionContext, bind_arguments, function_context
from staticexec.analysis.scopes import bound_names, comprehension_variables, free_called_names, walk
from staticexec.analysis.session import current
from staticexec.analysis.names import Definition, load_definition_file
from staticexec.analysis.source import ClassRef, FunctionRef, SourceFile, is_nested_function
from staticexec.analysis.values import (
    DATA,
    ConfigRef,
    EMPTY,
    ClassObject,
    Constant,
    Container,
    Data,
    Function,
    Instance,
    Items,
    Mapping,
    Unknown,
    Value,
    join,
    one,
    unknown,
)

ITER_BUILTINS = {"list", "tuple", "reversed", "iter", "sorted", "set"}
DATA_BUILTINS = {
    "len", "isinstance", "issubclass", "hasattr", "callable", "int", "float", "bool", "str",
    "min", "max", "sum", "any", "all", "abs", "round", "print", "type", "id", "repr", "hash", "divmod",
}
FACTORY_METHODS = {"from_config", "_from_config"}
# how many times an attribute computed from itself (`self.m = wrap(self.m)`) is evaluated again
# before its value is given up as not settling
SELF_ROUNDS = 6
# where transformers defines the factories that build an instance of the class they are called on
FACTORY_MODULES = {"transformers.modeling_utils", "transformers.models.auto.auto_factory"}


@dataclass(frozen=True)
class Factory:
    """`Cls.from_config` / `Cls._from_config` before it is called."""

    cls: ClassRef


class Resolver(ClassIndex):
    """Evaluates expressions of model code to abstract values (see values.py)."""

    def __init__(self, config: object | None = None, observed: Observed | None = None) -> None:
        super().__init__()
        self.observed = observed  # what the instance being split holds (observed.py); None for a plan from source
        self.configs: dict[str, object] = {}
        if config is not None:
            self.configs["config"] = config
        self.class_configs: dict[ClassRef, str] = {}
        self._functions: dict[FunctionRef, FunctionContext | None] = {}
        self._attrs: dict[tuple[ClassRef, str], Value] = {}
        # attributes being evaluated, with the value found so far (what a read of one from its own
        # right-hand side sees), and those read that way
        self._pending: dict[tuple[ClassRef, str], Value] = {}
        self._self_read: set[tuple[ClassRef, str]] = set()
        self._returns: dict[FunctionRef, Value] = {}
        self._active: set = set()
        self.model_types: set[str] = set()
        self._globals: dict[tuple, Value] = {}
        # modules passed to a class's constructor, by (class, parameter), at the calls the analysis saw
        self._passed: dict[tuple[ClassRef, str], list[Value]] = {}

    # ----- module attributes ---------------------------------------------------------------

    def attribute(self, cls: ClassRef, attr: str) -> Value:
        """What `self.<attr>` can hold for an instance of `cls`: every `self.attr = ...` in its MRO's methods.

        An attribute computed from itself (`self.m = self.m.to(dtype)`, `self.m = wrap(self.m)`, a
        reassignment in a loop) is evaluated to a fixed point: a read of `self.m` on a right-hand
        side sees what the bindings gave so far, starting from nothing, and what was worked out
        from a value that changed is worked out again."""
        key = (cls, attr)
        if key in self._attrs:
            return self._attrs[key]
        if key in self._pending:
            self._self_read.add(key)
            return self._pending[key]
        marks = (len(self._attrs), len(self._returns))
        self._pending[key] = EMPTY
        try:
            for _ in range(SELF_ROUNDS):
                self._self_read.discard(key)
                result = self._attribute_value(cls, attr)
                if key not in self._self_read or result == self._pending[key]:
                    break
                self._pending[key] = result
                self._forget_since(marks)
            else:
                result = join(result, unknown(f"self.{attr} of {cls.name} is computed from itself and does not settle"))
        finally:
            del self._pending[key]
            self._self_read.discard(key)
        self._attrs[key] = result
        return result

    def _forget_since(self, marks: tuple[int, int]) -> None:
        """Drop the attributes and returns worked out since `marks`: they may rest on a value that changed."""
        for table, mark in zip((self._attrs, self._returns), marks):
            for k in list(table)[mark:]:
                del table[k]

    def _attribute_value(self, cls: ClassRef, attr: str) -> Value:
        values: list[Value] = []
        for c in self.mro(cls):
            if self.is_external(c.module):
                continue
            found = self.class_def(c)
            if found is None:
                continue
            sf, node = found
            for item in self._storing_methods(c, node).get(attr, []):
                ctx = self.function(FunctionRef(c.module, f"{c.name}.{item.name}"))
                if ctx is not None:
                    found = self._self_attr_values(ctx, cls, attr)
                    if found:
                        values.append(found)
        result = join(*values)
        if not values:
            const = self.class_constant(cls, attr)
            if const:
                result = const
            else:
                method = self.find_method(cls, attr)
                if method is not None:
                    if self.is_property(method):
                        result = self.returns(method, one(Instance(cls)))
                    else:
                        result = one(Function(method, one(Instance(cls))))
        return join(result, self._observed_at(cls, attr, result))

    def _observed_at(self, cls: ClassRef, attr: str, source: Value) -> Value:
        """The module classes the instance holds at `self.<attr>` that the source does not give there (a
        module replaced after construction); a torch container where the source gives a container is the same."""
        if self.observed is None:
            return EMPTY
        known = _instance_classes(source)
        held = self.observed.held(cls, attr) - known
        if any(isinstance(a, Container) for a in source):
            held = {c for c in held if (c.module, c.name) not in CONTAINERS}
        methods = sorted(self.observed.bound(cls, attr), key=str)
        return join(*(one(Instance(c)) for c in sorted(held, key=str)),
                    *(one(Function(fn, one(Instance(owner)))) for fn, owner in methods))

    def stores(self, cls: ClassRef, attr: str) -> bool:
        """Whether the class's model code (its MRO, torch left out) stores `self.<attr>` anywhere."""
        for c in self.mro(cls):
            if self.is_external(c.module):
                continue
            found = self.class_def(c)
            if found is not None and attr in self._storing_methods(c, found[1]):
                return True
        return False

    def missing_attribute(self, cls: ClassRef, attr: str, line: int, absent: str) -> Value:
        """What a read of `self.<attr>` gives when `attribute` found nothing. Nothing while the
        attribute is still being worked out (a read from its own right-hand side); otherwise the
        unknown, with why: `absent` only when the model code truly stores no such attribute, by
        any name it could compute."""
        if (cls, attr) in self._pending:
            return EMPTY
        if self.stores(cls, attr):
            return unknown(f"what {cls.name} stores in self.{attr} resolves to nothing the analysis follows", line)
        for name, where in self.named_stores(cls):
            if name == attr:
                return unknown(f"{cls.name} sets self.{attr} by name, which the analysis does not follow ({where})", line)
            if name is None:
                return unknown(f"{cls.name} may set self.{attr} under a name computed at run time ({where})", line)
        unread = self.unread_class(cls)
        if unread:
            return unknown(f"what {cls.name} sets is not known: {unread}", line)
        setter = self.external_setter(cls, attr)
        if setter is not None:
            package = setter.module.partition(".")[0]
            return unknown(f"self.{attr} of {cls.name} is set by {package}'s {setter.name}, whose code the analysis "
                           "does not follow", line)
        return unknown(absent, line)

    def submodule_classes(self, cls: ClassRef, depth: int = 4) -> set[ClassRef]:
        """Classes an instance may hold below it, following resolved attributes (containers included)."""
        seen: set[ClassRef] = set()
        frontier = [cls]
        for _ in range(depth):
            nxt = []
            for c in frontier:
                held = [k for name in self.attribute_names(c) for k in _instance_classes(self.attribute(c, name))]
                if self.observed is not None:  # what the instance holds: a container of a tool's own, its items
                    held += sorted(self.observed.items(c), key=str)
                    held += sorted((k for owner, _, k in self.observed.attributes if owner == c), key=str)
                for k in held:
                    if k not in seen:
                        seen.add(k)
                        nxt.append(k)
            frontier = nxt
        return seen

    def unknowns_below(self, cls: ClassRef, depth: int = 8) -> str:
        """Why what an instance of `cls` holds below it is not fully known: the first attribute, in
        the closure `submodule_classes` follows, whose value has an unknown part, or a class that
        stores attributes under computed names; '' when everything below resolved."""
        seen: set[ClassRef] = set()
        frontier = [cls]
        for _ in range(depth):
            nxt = []
            for c in frontier:
                if c in seen or self.is_external(c.module):
                    continue
                seen.add(c)
                unread = self.unread_class(c)
                if unread:
                    return unread
                named = self.named_stores(c)
                if named:
                    return f"{c.name} sets attributes by name, which the analysis does not follow ({named[0][1]})"
                for name in self.attribute_names(c):
                    value = self.attribute(c, name)
                    reasons = sorted(a.reason for a in value if isinstance(a, Unknown))
                    if reasons:
                        return f"{c.name}.{name} is not resolved: {reasons[0]}"
                    nxt.extend(sorted(_instance_classes(value), key=str))
            frontier = nxt
        return ""

    def _self_attr_values(self, ctx: FunctionContext, cls: ClassRef, attr: str) -> Value:
        env = self.method_env(ctx, cls)
        found: list[Value] = []
        for kind, node in _storing_sites(ctx.node).get(attr, ()):
            if kind == "assign":
                found.append(self._stored_value(node.value, ctx, env, cls, attr))
            elif kind == "unpack":
                found.append(unknown(f"self.{attr} is assigned by unpacking", ctx.line(node)))
            elif kind == "item":
                found.append(one(Container(self.eval(node.value, ctx, env))))
            else:  # self.<attr>.append(...), .extend, .insert, .add_module
                v = self.eval(node.args[-1].value, ctx, env)
                if node.func.attr.value == "extend":
                    v = self.element(v)
                found.append(one(Container(v)))
        return join(*found)

    def _stored_value(self, expr: cst.BaseExpression, ctx: FunctionContext, env: dict[str, Value], cls: ClassRef,
                      attr: str) -> Value:
        """The value a store gives `self.<attr>`. One computed from the attribute itself by code the
        analysis does not follow (`self.m = torch.compile(self.m)`: data where modules went in) is
        the unknown, with why, not data."""
        value = self.eval(expr, ctx, env)
        prior = self._pending.get((cls, attr), EMPTY)
        if not any(isinstance(a, Data) for a in value) or not _reads_self_attr(expr, attr):
            return value
        if not any(isinstance(a, Container) or (isinstance(a, Instance) and self.is_module(a.cls)) for a in prior):
            return value
        why = unknown(f"self.{attr} is computed from itself by `{_short(ctx.code(expr))}`", ctx.line(expr))
        return join(frozenset(a for a in value if not isinstance(a, Data)), why)

    def method_env(self, ctx: FunctionContext, cls: ClassRef) -> dict[str, Value]:
        """Parameters of a method analysed for an instance of `cls`: `config` is the class's config."""
        env: dict[str, Value] = {}
        for i, name in enumerate(ctx.params):
            if i == 0 and name == "self":
                env[name] = one(Instance(cls))
            elif name == "config":
                env[name] = one(ConfigRef(self.class_configs.get(cls, "config")))
            else:
                # what the analysed constructor calls passed, besides anything else
                passed = self._passed.get((cls, name), []) if ctx.ref.qualname.endswith(".__init__") else []
                env[name] = join(DATA, *passed)
        return env

    # ----- functions -----------------------------------------------------------------------

    def function(self, ref: FunctionRef) -> FunctionContext | None:
        """The parsed context of a function, cached; None when its source can't be found."""
        if ref in self._functions:
            return self._functions[ref]
        ctx = function_context(ref)
        self._functions[ref] = ctx
        return ctx

    def returns(self, ref: FunctionRef, self_value: Value | None, args: dict[str, Value] | None = None) -> Value:
        """The join of a function's `return` values (used for helpers such as `get_layers()`)."""
        key = (ref, self_value, tuple(sorted((args or {}).items(), key=lambda kv: kv[0])))
        if key in self._returns:
            return self._returns[key]
        if key in self._active:
            return unknown(f"{ref} returns through recursion")
        ctx = self.function(ref)
        if ctx is None:
            return unknown(f"no source for {ref}")
        self._active.add(key)
        try:
            env = dict(args or {})
            if self_value is not None and ctx.params:
                env[ctx.params[0]] = self_value
            for p in ctx.params:
                env.setdefault(p, DATA)
            found: list[Value] = [
                self.eval(node.value, ctx, env) if node.value is not None else one(Constant(None))
                for node in walk(ctx.node.body, skip=(cst.FunctionDef, cst.Lambda), only=(cst.Return,))
            ]
            result = join(*found) if found else one(Constant(None))
            self._returns[key] = result
            return result
        finally:
            self._active.discard(key)

    # ----- expressions ---------------------------------------------------------------------

    def element(self, value: Value) -> Value:
        """What iterating over / indexing a value gives."""
        out: list[Value] = []
        for atom in value:
            if isinstance(atom, Container):
                out.append(atom.elem)
            elif isinstance(atom, Mapping):
                out.append(DATA)  # iterating a dict gives its keys
            elif isinstance(atom, Items):  # a tuple display: any of its items (`for stack in (self.a, self.b)`)
                out.append(join(*atom.items))
            elif isinstance(atom, Instance) and self.is_container(atom.cls):
                items = self.observed.items(atom.cls) if self.observed is not None else set()
                out.append(join(*(one(Instance(c)) for c in sorted(items, key=str))) if items
                           else unknown(f"elements of {atom.cls.name} are not known"))
            elif isinstance(atom, (Data, Constant)):
                out.append(DATA)
            elif isinstance(atom, Unknown):
                out.append(one(atom))
            else:
                out.append(unknown("iterating a non-container"))
        return join(*out)

    def eval(self, node: cst.BaseExpression, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        """The abstract value of an expression in a function under an environment; unknown on recursion."""
        key = ("eval", id(node), id(env))
        if key in self._active:
            return unknown("recursive binding", ctx.line(node))
        self._active.add(key)
        try:
            return self._eval(node, ctx, env)
        finally:
            self._active.discard(key)

    def _eval(self, node: cst.BaseExpression, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        if isinstance(node, cst.Name):
            return self._eval_name(node, ctx, env)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return one(Constant(node.evaluated_value)) if not isinstance(node, cst.Imaginary) else DATA
        if isinstance(node, cst.SimpleString):
            return one(Constant(node.evaluated_value))
        if isinstance(node, (cst.ConcatenatedString, cst.FormattedString)):
            return DATA
        if isinstance(node, cst.Attribute):
            return self._eval_attribute(node, ctx, env)
        if isinstance(node, cst.Subscript):
            base = self.eval(node.value, ctx, env)
            out: list[Value] = []
            is_slice = any(isinstance(e.slice, cst.Slice) for e in node.slice)
            for atom in base:
                if isinstance(atom, Container):
                    out.append(one(atom) if is_slice else atom.elem)
                elif isinstance(atom, Mapping):
                    out.append(atom.values)
                elif isinstance(atom, Items) and not is_slice:
                    index = node.slice[0].slice
                    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                        i = int(index.value.value)
                        out.append(atom.items[i] if i < len(atom.items) else DATA)
                    else:
                        out.append(join(*atom.items))
                elif isinstance(atom, Instance) and self.is_container(atom.cls):
                    items = self.element(one(atom))  # what the instance holds, if observed (observed.py)
                    out.append(one(atom) if is_slice and not any(isinstance(a, Unknown) for a in items) else
                               items if not any(isinstance(a, Unknown) for a in items) else
                               unknown(f"elements of {atom.cls.name} are not known", ctx.line(node)))
                elif isinstance(atom, (Data, Constant, ConfigRef)):
                    out.append(DATA)
                elif isinstance(atom, Unknown):
                    out.append(one(atom))
                else:
                    out.append(unknown("subscript of a non-container", ctx.line(node)))
            return join(*out)
        if isinstance(node, cst.Call):
            return self._eval_call(node, ctx, env)
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            elems = []
            for el in node.elements:
                v = self.eval(el.value, ctx, env)
                elems.append(self.element(v) if isinstance(el, cst.StarredElement) else v)
            if isinstance(node, cst.Tuple):
                return one(Items(tuple(elems))) if all(not isinstance(e, cst.StarredElement) for e in node.elements) else one(Container(join(*elems)))
            return one(Container(join(*elems))) if elems else one(Container(EMPTY))
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            inner = self.comprehension_env(node.for_in, ctx, env)
            return one(Container(self.eval(node.elt, ctx, inner)))
        if isinstance(node, cst.Dict):
            vals = [self.eval(el.value, ctx, env) for el in node.elements if isinstance(el, cst.DictElement)]
            return one(Mapping(join(*vals)))
        if isinstance(node, cst.DictComp):
            inner = self.comprehension_env(node.for_in, ctx, env)
            return one(Mapping(self.eval(node.value, ctx, inner)))
        if isinstance(node, cst.IfExp):
            return join(self.eval(node.body, ctx, env), self.eval(node.orelse, ctx, env))
        if isinstance(node, cst.BooleanOperation):
            return join(self.eval(node.left, ctx, env), self.eval(node.right, ctx, env))
        if isinstance(node, cst.NamedExpr):
            return self.eval(node.value, ctx, env)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
            return self._sequence_arithmetic(node, ctx, env)
        if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return DATA
        if isinstance(node, cst.Lambda):
            return unknown(self._lambda_reason(node, ctx, env), ctx.line(node))
        if isinstance(node, cst.Await):
            return unknown("await", ctx.line(node))
        return DATA

    def _sequence_arithmetic(self, node: cst.BinaryOperation, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        """`a + b` and `[m] * n` of lists or tuples: a container of their elements; other arithmetic is data.

        Only displays and names, attributes and subscripts are looked at (a call's result is data
        here, as before), so arithmetic on tensors costs nothing to evaluate."""
        looked = (cst.List, cst.Tuple, cst.ListComp, cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation)
        elements = []
        for side in (node.left, node.right):
            if not isinstance(side, looked):
                continue
            for atom in self.eval(side, ctx, env):
                if isinstance(atom, Container):
                    elements.append(atom.elem)
                elif isinstance(atom, Items):
                    elements.append(join(*atom.items))
                elif isinstance(atom, Unknown) or (isinstance(atom, Instance) and self.is_container(atom.cls)):
                    elements.append(self.element(one(atom)))  # what it holds is not known: nor is the sum's
        return one(Container(join(*elements))) if elements else DATA

    def _lambda_reason(self, node: cst.Lambda, ctx: FunctionContext, env: dict[str, Value]) -> str:
        """'a lambda', or 'a lambda that calls `x`' when its body calls through a name bound to a module."""
        for name, use in sorted(free_called_names(node).items()):
            value = self.eval(use, ctx, env)
            if any(isinstance(a, (Instance, Container, Items, Mapping)) for a in value):
                return f"a lambda that calls through `{name}` (defined at line {ctx.line(node)})"
        return "a lambda"

    def comprehension_env(self, for_in: cst.CompFor, ctx: FunctionContext, env: dict[str, Value]) -> dict[str, Value]:
        """The environment of a comprehension's element and conditions: `env`, with the names its `for`s bind
        bound to the items of their iterables (the first read in `env`, each later one where the earlier bind)."""
        inner = _ComprehensionEnv(env, getattr(env, "bound", ()))
        comp: cst.CompFor | None = for_in
        while comp is not None:
            self._bind_target(comp.target, self.element(self.eval(comp.iter, ctx, inner)), inner)
            inner.bound.update(bound_names(comp.target))
            comp = comp.inner_for_in
        return inner

    def _bind_target(self, target: cst.BaseExpression, value: Value, env: dict[str, Value]) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, el in enumerate(target.elements):
                env_value = join(*(self._item(v, i) for v in [value]))
                self._bind_target(el.value, env_value, env)

    def _item(self, value: Value, i: int) -> Value:
        out = []
        for atom in value:
            if isinstance(atom, Items):
                out.append(atom.items[i] if i < len(atom.items) else DATA)
            elif isinstance(atom, Container):
                out.append(atom.elem)
            elif isinstance(atom, (Data, Constant)):
                out.append(DATA)
            else:
                out.append(one(atom) if isinstance(atom, Unknown) else unknown("unpacking a non-tuple"))
        return join(*out)

    def _eval_name(self, node: cst.Name, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        name = node.value
        if id(node) in comprehension_variables(ctx.node.body) and name not in getattr(env, "bound", ()):
            # read where the comprehension's own binding is not in the environment (a call in its element, as
            # the call graph looks at it): neither the function's name of that spelling nor the module's
            return unknown(f"`{name}` is a comprehension's variable, which the analysis does not follow", ctx.line(node))
        if name in env:
            if name in ctx.locals and name not in ctx.params[:1]:
                # a parameter the function rebinds (`encoder = AutoModel.from_config(...)`) holds either
                return join(env[name], self._eval_local(name, ctx, env))
            return env[name]
        if name in ctx.locals:
            return self._eval_local(name, ctx, env)
        if name in ("True", "False", "None"):
            return one(Constant({"True": True, "False": False, "None": None}[name]))
        if name in ITER_BUILTINS or name in DATA_BUILTINS or name in (
            "enumerate", "zip", "range", "getattr", "super", "dict", "map", "filter", "next", "setattr",
        ):
            if ctx.sf.top_level(name) is None:
                return one(Function(FunctionRef("builtins", name)))
        return self._eval_global(node, ctx)

    def _eval_local(self, name: str, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        key = ("local", ctx.ref, name)
        if key in self._active:
            return EMPTY
        self._active.add(key)
        try:
            values = []
            appended = []
            for kind, value, extra in ctx.locals[name]:
                if kind == "append":
                    appended.append(self.eval(value, ctx, env))
                elif kind == "extend":
                    appended.append(self.element(self.eval(value, ctx, env)))
                else:
                    values.append(self._binding_value(kind, value, extra, ctx, env))
            result = join(*values)
            if appended:
                result = join(
                    *(one(Container(join(a.elem, *appended))) if isinstance(a, Container) else one(a) for a in result)
                ) if result else one(Container(join(*appended)))
            return result
        finally:
            self._active.discard(key)

    def _binding_value(self, kind: str, value, extra, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        if kind == "expr":
            return self.eval(value, ctx, env)
        if kind == "iter":
            return self.element(self.eval(value, ctx, env))
        if kind == "item":
            inner_kind, inner_value, inner_extra = value
            return self._item(self._binding_value(inner_kind, inner_value, inner_extra, ctx, env), extra)
        return unknown("bound by a construct the resolver does not follow")

    def _eval_global(self, node: cst.Name | cst.Attribute, ctx: FunctionContext, module: str | None = None) -> Value:
        """A module-level name (or `module.attr`, with `module` the one module the name before the dot
        is): the same text means the same thing across a file."""
        text = _dotted(node)
        key = (ctx.sf.path, ctx.sf.hash, text) if text else None
        if key is not None and key in self._globals:
            return self._globals[key]
        target = node.attr if isinstance(node, cst.Attribute) else node
        line = ctx.line(target)
        col = ctx.column(target)
        if module is not None and isinstance(node, cst.Attribute):
            defn = self.names.goto_member(ctx.sf, module, node.attr.value, line, col)
        else:
            # a name no local binds, read in a function not nested in another: the module-level name
            found = self.names.followed(ctx.sf, node.value) if isinstance(node, cst.Name) \
                and not is_nested_function(ctx.sf, ctx.ref.qualname) else None
            defn = found if found is not None else self.names.goto(ctx.sf, line, col)
        value = self.definition_value(defn, f"`{ctx.code(node)}` is not resolved by jedi", line)
        if key is not None:
            self._globals[key] = value
        return value

    def definition_value(self, defn: Definition | None, reason: str, line: int) -> Value:
        """The value of what a name's definition binds: a class, function, module or module-level value."""
        if defn is None:
            return unknown(reason, line)
        if defn.kind == "class":
            return one(ClassObject(ClassRef(defn.module, defn.qualname)))
        if defn.kind == "function":
            return one(Function(FunctionRef(defn.module, defn.qualname)))
        if defn.kind == "module":
            return one(ModuleObject(defn.module))
        if defn.kind == "statement" and defn.qualname and "." not in defn.qualname:
            return self._module_level_value(defn)
        return unknown(reason, line)

    def _module_level_value(self, defn: Definition) -> Value:
        """A module-level assignment such as `LAYER_CLASSES = {"a": LayerA, ...}`, evaluated statically."""
        if self.is_external(defn.module):
            return DATA
        sf = load_definition_file(defn)
        if sf is None:
            return unknown(f"no source for {defn.module}.{defn.qualname}")
        node = sf.top_level(defn.qualname)
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            return unknown(f"{defn.module}.{defn.qualname} is not a simple assignment")
        value = node.value
        if (
            isinstance(value, ast.Call)
            and value.args
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == defn.qualname
            and sf.find_class(defn.qualname) is not None
        ):
            # `AutoModel = auto_class_update(AutoModel)`: a class decorated after its definition
            return one(ClassObject(ClassRef(defn.module, defn.qualname)))
        return self._module_expr_value(sf, value)

    def _module_expr_value(self, sf: SourceFile, expr: ast.expr) -> Value:
        if isinstance(expr, ast.Dict):
            return one(Mapping(join(*(self._module_expr_value(sf, v) for v in expr.values))))
        if isinstance(expr, (ast.List, ast.Tuple)):
            return one(Container(join(*(self._module_expr_value(sf, v) for v in expr.elts))))
        if isinstance(expr, ast.Constant):
            return one(Constant(expr.value)) if isinstance(expr.value, (str, int, bool, type(None))) else DATA
        if isinstance(expr, (ast.Name, ast.Attribute)):
            defn = self.names.goto_module_scope(sf, expr)
            if defn is not None and defn.kind == "statement" and defn.module == sf.module:
                node = sf.top_level(defn.qualname)
                if isinstance(node, ast.Assign) and node.value is not expr:
                    return self._module_expr_value(sf, node.value)
            return self.definition_value(defn, f"`{ast.unparse(expr)}` is not resolved", expr.lineno)
        if isinstance(expr, ast.Call):
            func = self._module_expr_value(sf, expr.func)
            if any(isinstance(a, Function) and a.ref.qualname in ("OrderedDict", "dict") for a in func) or any(
                isinstance(a, ClassObject) and a.cls.name in ("OrderedDict", "dict") for a in func
            ):
                return join(*(self._module_expr_value(sf, a) for a in expr.args)) if expr.args else one(Mapping(EMPTY))
            return unknown(f"`{ast.unparse(expr)[:60]}` at module level", expr.lineno)
        return DATA

    def _eval_attribute(self, node: cst.Attribute, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        base = self.eval(node.value, ctx, env)
        attr = node.attr.value
        out: list[Value] = []
        for atom in base:
            if isinstance(atom, Instance):
                if self.is_external(atom.cls.module):
                    if attr in SELF_RETURNING and self.is_module(atom.cls):  # `nn.Linear(...).to(dtype)`
                        out.append(one(Function(FunctionRef(TORCH_MODULE[0], f"{TORCH_MODULE[1]}.{attr}"), one(atom))))
                        continue
                    out.append(DATA if not self.is_container(atom.cls) else unknown("attribute of a container"))
                    continue
                if attr == "config" and not self.attribute(atom.cls, attr):
                    out.append(one(ConfigRef(self.class_configs.get(atom.cls, "config"))))
                    continue
                value = self.attribute(atom.cls, attr)
                if not value:
                    value = self.missing_attribute(atom.cls, attr, ctx.line(node), f"{atom.cls.name} never sets self.{attr}")
                out.append(value)
            elif isinstance(atom, ConfigRef):
                out.append(self._config_attribute(atom, attr))
            elif isinstance(atom, ClassObject):
                if attr == "apply" and self.is_autograd_function(atom.cls):
                    # `Fn.apply(*args)` runs `Fn.forward(ctx, *args)`: analysed like a call to it
                    forward = self.find_method(atom.cls, "forward")
                    out.append(one(Function(forward, one(Data()))) if forward else unknown("no forward", ctx.line(node)))
                    continue
                method = self.find_method(atom.cls, attr)
                if attr in FACTORY_METHODS and (method is None or method.module in FACTORY_MODULES):
                    out.append(one(Factory(atom.cls)))
                elif method is not None and self.is_classmethod(method):
                    out.append(one(Function(method, one(atom))))
                else:
                    out.append(one(Function(method)) if method else DATA)
            elif isinstance(atom, ModuleObject):
                out.append(self._eval_global(node, ctx, atom.module if len(base) == 1 else None))
            elif isinstance(atom, Container):
                if attr in ("values", "children", "modules"):
                    out.append(one(Function(FunctionRef("builtins", "values"), one(atom))))
                elif attr == "items":
                    out.append(one(Function(FunctionRef("builtins", "items"), one(atom))))
                else:
                    out.append(DATA)
            elif isinstance(atom, Mapping) and attr in ("values", "items"):  # a dict display's values
                out.append(one(Function(FunctionRef("builtins", attr), one(Container(atom.values)))))
            elif isinstance(atom, (Data, Constant)):
                out.append(DATA)
            elif isinstance(atom, Unknown):
                out.append(one(atom))
            else:
                out.append(DATA)
        return join(*out)

    def _config_attribute(self, ref: ConfigRef, attr: str) -> Value:
        config = self.configs.get(ref.path)
        if config is None:
            return DATA
        try:
            value = getattr(config, attr, None)
        except Exception:  # configs may refuse ambiguous reads (per-layer attributes)
            return DATA
        if _is_config(value):
            path = f"{ref.path}.{attr}"
            self.configs[path] = value
            return one(ConfigRef(path))
        if isinstance(value, (str, int, bool, type(None))):
            return one(Constant(value))
        return DATA

    def _eval_call(self, node: cst.Call, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        func = self.eval(node.func, ctx, env)
        out: list[Value] = []
        for atom in func:
            if isinstance(atom, ClassObject):
                if self.is_container(atom.cls) and atom.cls.name == "ModuleDict":
                    mapped = [self.eval(a.value, ctx, env) for a in node.args]
                    values = [m.values if isinstance(m, Mapping) else self.element(one(m)) for v in mapped for m in v]
                    out.append(one(Container(join(*values))))
                elif self.is_container(atom.cls):
                    elems = [self.eval(a.value, ctx, env) for a in node.args]
                    if atom.cls.name == "Sequential":
                        elems = [self.element(e) if a.star else e for e, a in zip(elems, node.args)]
                        out.append(one(Container(join(*elems))) if elems else one(Container(EMPTY)))
                    else:
                        out.append(one(Container(join(*(self.element(e) for e in elems)))) if elems else one(Container(EMPTY)))
                elif atom.cls.name in ("dict", "OrderedDict"):
                    out.append(one(Mapping(join(*(self.eval(a.value, ctx, env) for a in node.args)))))
                else:
                    self._note_passed_modules(atom.cls, node, ctx, env)
                    out.append(one(Instance(atom.cls)))
            elif isinstance(atom, Factory):
                out.append(self._factory(atom, node, ctx, env))
            elif isinstance(atom, Function):
                out.append(self._call_function(atom, node, ctx, env))
            elif isinstance(atom, Instance):
                out.append(DATA)  # calling a module gives tensors
            elif isinstance(atom, Unknown):
                out.append(one(atom))
            elif isinstance(atom, Mapping):
                out.append(atom.values)
            else:
                out.append(DATA)
        return join(*out)

    def _note_passed_modules(self, cls: ClassRef, node: cst.Call, ctx: FunctionContext, env: dict[str, Value]) -> None:
        """Remember the modules a constructor call passes (`SpeechT5Model(config, encoder, decoder)`), so
        `self.decoder = Default(config) if decoder is None else decoder` in its `__init__` can hold them,
        and the sub-config it passes as `config`."""
        init = self.find_method(cls, "__init__")
        if init is None or self.is_external(init.module):
            return
        init_ctx = self.function(init)
        if init_ctx is None:
            return
        for param, i in bind_arguments(init_ctx.params[1:], node.args):
            arg = node.args[i]
            if param == "config":
                # `T5Gemma2Encoder(config.encoder)`: its `config` is that sub-config, as for `_from_config`
                paths = [a.path for a in self.eval(arg.value, ctx, env) if isinstance(a, ConfigRef)]
                if len(paths) == 1:
                    self.class_configs.setdefault(cls, paths[0])
                continue
            if not isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call)):
                continue
            value = self.eval(arg.value, ctx, env)
            if any(isinstance(a, (Instance, Container)) for a in value):
                self._passed.setdefault((cls, param), []).append(value)

    def _call_function(self, atom: Function, node: cst.Call, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        ref = atom.ref
        args = [self.eval(a.value, ctx, env) for a in node.args]
        if ref.module == "builtins":
            name = ref.qualname
            if name in ITER_BUILTINS:
                return one(Container(self.element(args[0]))) if args else one(Container(EMPTY))
            if name == "enumerate":
                return one(Container(one(Items((DATA, self.element(args[0])))))) if args else DATA
            if name == "zip":
                return one(Container(one(Items(tuple(self.element(a) for a in args)))))
            if name in ("values",) and atom.bound is not None:
                return one(Container(self.element(atom.bound)))
            if name == "items" and atom.bound is not None:
                return one(Container(one(Items((DATA, self.element(atom.bound))))))
            if name == "getattr" and len(args) >= 2:
                return self._getattr(args, node, ctx)
            if name == "super":
                return unknown("super() outside a method call", ctx.line(node))
            if name in ("map", "filter", "next"):
                return unknown(f"{name}(...) is not followed", ctx.line(node))
            return DATA
        if self.is_external(ref.module):
            if atom.bound is not None and _returns_self(ref):
                return frozenset(a for a in atom.bound if isinstance(a, Instance))  # the module itself
            return DATA
        if atom.bound is None and is_framework(ref.module):
            return unknown(f"{ref.qualname}() in transformers' utilities is not followed", ctx.line(node))
        bound = atom.bound
        if bound is not None and not all(isinstance(b, Data) for b in bound) and self.is_staticmethod(ref):
            bound = None  # a static method looked up on an instance takes no self (`Fn.apply`'s forward, bound
            # to the autograd context, Data, does take its context first)
        call_args = {}
        fctx = self.function(ref)
        if fctx is not None:
            params = fctx.params[1:] if bound is not None else fctx.params
            call_args = {p: args[i] for p, i in bind_arguments(params, node.args)}
        return self.returns(ref, bound, call_args)

    def _getattr(self, args: list[Value], node: cst.Call, ctx: FunctionContext) -> Value:
        out: list[Value] = []
        names = [a.value for a in args[1] if isinstance(a, Constant) and isinstance(a.value, str)]
        if not names:
            return unknown("getattr with a name that is not a constant", ctx.line(node))
        for atom in args[0]:
            if isinstance(atom, Instance):
                for name in names:
                    v = self.attribute(atom.cls, name)
                    if not v:
                        v = args[2] if len(args) > 2 else self.missing_attribute(
                            atom.cls, name, ctx.line(node), f"no self.{name}")
                    out.append(v)
            elif isinstance(atom, ConfigRef):
                out.extend(self._config_attribute(atom, n) for n in names)
            else:
                out.append(DATA if isinstance(atom, (Data, Constant)) else one(atom))
        return join(*out)

    def _factory(self, atom: Factory, node: cst.Call, ctx: FunctionContext, env: dict[str, Value]) -> Value:
        config_value = self.eval(node.args[0].value, ctx, env) if node.args else EMPTY
        config_paths = [a.path for a in config_value if isinstance(a, ConfigRef)]
        if atom.cls.module == "transformers.models.auto.modeling_auto":
            return self._auto_class(atom.cls, config_paths, ctx.line(node))
        for path in config_paths:
            self.class_configs.setdefault(atom.cls, path)
        return one(Instance(atom.cls))

    def _auto_class(self, auto: ClassRef, config_paths: list[str], line: int) -> Value:
        """`AutoModel.from_config(config.x)`: the class the auto mapping names for the sub-config's class."""
        configs = [(p, self.configs.get(p)) for p in config_paths]
        configs = [(p, c) for p, c in configs if c is not None and getattr(c, "model_type", None)]
        if not configs:
            return unknown(f"{auto.name}.from_config needs a config whose model_type is known", line)
        module = importlib.import_module(auto.module)
        auto_cls = getattr(module, auto.name, None)
        mapping = getattr(auto_cls, "_model_mapping", None)
        if any(getattr(mapping, table, None) is None
               for table in ("_model_mapping", "_config_mapping", "_reverse_config_mapping")):
            return unknown(f"{auto.name} has no model mapping", line)
        out: list[Value] = []
        for path, config in configs:
            found = _mapped_model(mapping, config)
            if found is None:
                # the call raises for this config (Blip2's seq2seq branch given an OPT config), so it
                # builds nothing the instance could hold
                continue
            model_type, name = found
            ref = find_transformers_class(model_type, name)
            if ref is None:
                out.append(unknown(f"class {name} for model_type {model_type!r} not found", line))
                continue
            self.model_types.add(model_type)
            self.class_configs.setdefault(ref, path)
            out.append(one(Instance(ref)))
        return join(*out)


class _ComprehensionEnv(dict):
    """The environment of a comprehension's element: the one around it, with the names its `for`s bind (`bound`)."""

    def __init__(self, env: dict[str, Value], bound: Iterable[str] = ()) -> None:
        super().__init__(env)
        self.bound: set[str] = set(bound)


def _mapped_model(mapping, config: object) -> tuple[str, str] | None:
    """The model type and class name an auto class's `from_config(config)` builds, found as transformers
    finds them: by the config's class, whose name the config mapping lists under a model type, not by
    the config's `model_type` attribute. The two differ for a config made from another's dict
    (`EncoderConfig(**self.to_dict())` carries the other's model_type). Of several classes under one
    model type, the one the config's `architectures` names, else the first. None when the auto class
    maps no such config class: the call raises. A config whose class names no model type of its own
    (PretrainedConfig itself, as a model folder's config.json is read for remote code) stands for the
    class of the model type it carries."""
    if not getattr(type(config), "model_type", ""):
        candidates = [getattr(config, "model_type", None)]
    else:
        config_class = type(config).__name__
        candidates = [mapping._reverse_config_mapping.get(config_class),
                      *(t for t, name in mapping._config_mapping.items() if name == config_class)]
    model_type = next((t for t in candidates if t is not None and t in mapping._model_mapping), None)
    if model_type is None:
        return None
    names = mapping._model_mapping[model_type]
    if isinstance(names, (list, tuple)):
        named = [a for a in getattr(config, "architectures", None) or [] if a in names]
        names = named[0] if named else names[0]
    return model_type, names


def _dotted(node: cst.BaseExpression) -> str | None:
    """`nn.Linear` -> "nn.Linear"; None for anything but names and attribute chains."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 80 else code[:77] + "..."


def _returns_self(ref: FunctionRef) -> bool:
    """Whether a function is one of torch's `nn.Module` methods that return the module (`.to`, `.eval`)."""
    owner, _, method = ref.qualname.rpartition(".")
    return (ref.module, owner) == TORCH_MODULE and method in SELF_RETURNING


def _reads_self_attr(expr: cst.BaseExpression, attr: str) -> bool:
    """Whether an expression reads `self.<attr>` (outside nested functions and lambdas)."""
    return any(
        _self_attr_name(node) == attr
        for node in walk(expr, skip=(cst.FunctionDef, cst.Lambda), only=(cst.Attribute,))
    )


def _instance_classes(value: Value, depth: int = 0) -> set[ClassRef]:
    out: set[ClassRef] = set()
    for atom in value:
        if isinstance(atom, Instance):
            out.add(atom.cls)
        elif isinstance(atom, Container) and depth < 3:
            out |= _instance_classes(atom.elem, depth + 1)
    return out


@dataclass(frozen=True)
class ModuleObject:
    """An imported module used as a namespace (`nn` in `nn.Linear`)."""

    module: str


def _is_config(value: object) -> bool:
    try:
        from transformers import PretrainedConfig
    except ImportError:  # pragma: no cover
        return False
    return isinstance(value, PretrainedConfig)


def _storing_sites(fn: cst.FunctionDef) -> dict[str, list[tuple[str, cst.CSTNode]]]:
    """Where a function stores to `self.<name>`, by name, in source order: an assignment ("assign"),
    an unpacking ("unpack"), a call that adds to a container ("add"), or a store into one of its
    items (`self.<name>[key] = ...`, "item"). Found in one walk, kept
    by the session."""
    table = current().table("resolve.storing_sites")
    sites = table.get(fn)
    if sites is not None:
        return sites
    sites = {}
    for node in walk(fn.body, only=(cst.Assign, cst.AnnAssign, cst.Call)):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                name = _self_attr_name(t.target)
                item = _self_attr_name(t.target.value) if isinstance(t.target, cst.Subscript) else None
                if name is not None:
                    sites.setdefault(name, []).append(("assign", node))
                elif item is not None:  # self.adapters[lang] = Adapter(config): a container grows
                    sites.setdefault(item, []).append(("item", node))
                elif isinstance(t.target, (cst.Tuple, cst.List)):
                    for name in dict.fromkeys(_self_attr_name(e.value) for e in t.target.elements):
                        if name is not None:
                            sites.setdefault(name, []).append(("unpack", node))
        elif isinstance(node, cst.AnnAssign):
            name = _self_attr_name(node.target)
            if node.value is not None and name is not None:
                sites.setdefault(name, []).append(("assign", node))
        elif isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value in GROWING_METHODS and node.args:
                name = _self_attr_name(f.value)
                if name is not None:
                    sites.setdefault(name, []).append(("add", node))
    table[fn] = sites
    return sites


def _self_attr_name(node: cst.BaseExpression) -> str | None:
    """`name` when the node is `self.name`, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None
