"""Cut the emitted straight-line program before each target call.

Subgraph 0 runs everything before the first target call; subgraph k runs
target call k and what follows it up to target call k+1 (or N target calls and
what follows them, with `targets_per_subgraph=N`). Names flow between
subgraphs by name: a subgraph's inputs are the names it reads before it
assigns them; its outputs are the names it assigns or receives that a later
subgraph reads. Every output is always returned: a name bound only on some
paths is returned as `UNBOUND` where it is not, so each input name of a later
subgraph exists, whatever branch ran (the contract of docs/subgraph-contract.md).
Modules are never passed between subgraphs: each subgraph binds the
modules it uses from the model (`self__1 = self.model`).

It sits between emit, which produces the steps, and run, whose `Subgraph` each piece
becomes.
"""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from staticexec.emit import state
from staticexec.emit.constants import share_constants
from staticexec.emit.run import Subgraph
from staticexec.emit.samplealias import SampleTensors, may_be_one, written_aliases, written_names
from staticexec.emit.shared import keep_identity
from staticexec.messages import ClosureAcrossCut, Refused


RUNTIME = "_sx"
"""The name under which the subgraphs' code reaches runtime.py."""


def expect_module_code(value: str, path: str, origin: str, shown: str) -> str:
    """The subgraph code that checks the module `value` evaluates to is the one at `path` (runtime.expect_module)."""
    return f"{RUNTIME}.expect_module({value}, {path}, {origin!r}, {shown!r}, {path!r})"


@dataclass(frozen=True)
class Step:
    """One emitted statement (or a few), where it comes from, and its context."""

    code: str
    origin: str
    target: str | None = None  # dotted module path of the target this step calls
    scopes: tuple[str, ...] = ()
    modules: dict = field(default_factory=dict)  # module-bound names in effect here: name -> expression
    reads: tuple[str, ...] = ()  # names the step reads without naming them in its code (through locals())


@dataclass
class _Names:
    loads: list[str]
    definite: set[str]
    maybe: set[str]
    written: set[str] = field(default_factory=set)  # names whose value the code may change in place
    aliases: tuple[tuple[str, str], ...] = ()  # (name, base): `name = base`, `base[i]`, `base.view(...)`, in order


# methods that give a view of (or the same) tensor: writing into the result writes into the base
_VIEWS = frozenset({"view", "view_as", "reshape", "reshape_as", "transpose", "permute", "unsqueeze", "squeeze",
                    "expand", "expand_as", "narrow", "select", "flatten", "unflatten", "t", "detach", "as_strided",
                    "chunk", "split", "unbind", "movedim", "swapaxes", "diagonal", "unfold", "contiguous", "to"})


def _view_base(value: ast.AST) -> str | None:
    """The name whose object `value` may be (or be a view of): `h`, `h[i]`, `h.T`, `h.view(...)`."""
    while True:
        if isinstance(value, ast.Name):
            return value.id
        if isinstance(value, ast.Subscript) or (isinstance(value, ast.Attribute) and value.attr in ("T", "mT", "H")):
            value = value.value
        elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS):
            value = value.func.value
        else:
            return None


def _keyed(value: ast.AST) -> str | None:
    """`kw['x']` for `kw.pop('x', ...)` or `kw.get('x')`: the keyword dict entry an inlined call binds a parameter from."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("pop", "get")
            and isinstance(value.func.value, ast.Name) and value.args and isinstance(value.args[0], ast.Constant)):
        return f"{value.func.value.id}[{value.args[0].value!r}]"
    return None


def _assigned(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    """The targets of an assignment, annotated (`x: T = v`) or not."""
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _aliases(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    """Top-level assignments of one name to another's object or a view of it, in order; a dict display
    `kw = {'x': h}` makes `kw['x']` an alias of h, and `x = kw.pop('x')` an alias of `kw['x']`."""
    out = []
    for top in tree.body:
        if isinstance(top, ast.Assign) and isinstance(top.value, ast.Dict):
            for target in top.targets:
                if isinstance(target, ast.Name):
                    out += [(f"{target.id}[{k.value!r}]", base) for k, v in zip(top.value.keys, top.value.values)
                            if isinstance(k, ast.Constant) and (base := _view_base(v)) is not None]
            continue
        if isinstance(top, (ast.Assign, ast.AnnAssign)) and top.value is not None:
            base = _keyed(top.value) or _view_base(top.value)
            if base is not None:
                for target in _assigned(top):
                    names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
                    out += [(t.id, base) for t in names if isinstance(t, ast.Name)]
    return tuple(out)


def _written_in_place(tree: ast.AST) -> set[str]:
    """Names whose object the code changes in place: `x += y` (in place on a tensor), `x[i] = y`,
    `x[i] += y`, `x.attr = y` and in-place methods such as `x.add_(y)` or `x.masked_fill_(m, v)`."""
    out: set[str] = set()

    def base(node: ast.AST) -> str | None:
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.AugAssign):
            targets = [node.target]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets = [t for t in targets if isinstance(t, (ast.Subscript, ast.Attribute))]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr.endswith("_") and not attr.startswith("_"):
                targets = [node.func.value]
        for t in targets:
            name = base(t)
            if name is not None:
                out.add(name)
    return out


@lru_cache(maxsize=65536)
def _names(code: str) -> _Names:
    tree = ast.parse(code)
    loads: list[str] = []
    stores: set[str] = set()
    definite: set[str] = set()
    for top in tree.body:
        if isinstance(top, ast.Assign):
            for t in top.targets:
                definite |= _target_names(t)
        elif isinstance(top, (ast.AnnAssign, ast.AugAssign)) and getattr(top, "value", None) is not None:
            definite |= _target_names(top.target)
        elif isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definite.add(top.name)
        elif isinstance(top, (ast.Import, ast.ImportFrom)):
            definite |= {name for alias in top.names for name in _binds(alias)}
    order: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            order.append((node.lineno, node.col_offset, node.target.id))  # `x += 1` reads x first
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            order.append((node.lineno, node.col_offset, node.id))
        else:
            stores.update(_binds(node))
    _drop_inner_scopes(tree, order)
    stores -= _inner_stores(tree)
    loads = [n for _, _, n in sorted(order)]
    return _Names(loads, definite, stores - definite, _written_in_place(tree), _aliases(tree))


@lru_cache(maxsize=65536)
def _spread_only(code: str) -> frozenset[str]:
    """Names the code reads only as `**name` in a call: spreading copies the mapping, so the code never
    changes the mapping itself."""
    tree = ast.parse(code)
    spread = {id(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
              for k in node.keywords if k.arg is None and isinstance(k.value, ast.Name)}
    seen: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            only = isinstance(node.ctx, ast.Load) and id(node) in spread
            seen[node.id] = seen.get(node.id, True) and only
    return frozenset(name for name, only in seen.items() if only)


def _binds(node: ast.AST) -> list[str]:
    """The names one node binds in the scope it stands in: a name stored or deleted, a parameter, an import's
    alias (`import a.b` binds `a`), an `except ... as` name, a `case` capture, a def's or class's own name."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return [] if node.name == "*" else [node.asname or node.name.split(".")[0]]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


def _inner_stores(tree: ast.AST) -> set[str]:
    """Names bound only inside comprehensions, lambdas and local functions: not the frame's. A `:=` inside a
    comprehension (and no function) binds the frame's name, as Python has it."""
    inner: set[str] = set()
    outer: set[str] = set()

    def visit(node: ast.AST, nested: bool, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            function = in_function or isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            scope = nested or function or isinstance(child, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
            frames = not nested or (not in_function and isinstance(node, ast.NamedExpr) and child is node.target)
            (outer if frames else inner).update(_binds(child))  # a def binds its own name where it stands
            visit(child, scope, function)

    visit(tree, False, False)
    return inner - outer


def _drop_inner_scopes(tree: ast.AST, order: list) -> None:
    """Names bound inside comprehensions, lambdas and local functions are not the frame's."""
    inner: set[tuple[int, int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Lambda, ast.FunctionDef)):
            bound: set[str] = set()
            if isinstance(node, ast.Lambda) or isinstance(node, ast.FunctionDef):
                bound |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            if isinstance(node, ast.FunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                        bound.add(sub.id)
            else:
                for gen in getattr(node, "generators", []):
                    bound |= _target_names(gen.target)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in bound:
                    inner.add((sub.lineno, sub.col_offset, sub.id))
    order[:] = [o for o in order if o not in inner]


def _loads_after(pieces: list[Piece]) -> list[set[str]]:
    """For each piece, the names any later piece's code reads (its steps, their scopes, what they read through
    locals())."""
    out: list[set[str]] = []
    seen: set[str] = set()
    for piece in reversed(pieces):
        out.append(set(seen))
        for step in piece.steps:
            seen.update(_names(step.code).loads, step.reads, *(_names(s).loads for s in step.scopes))
    return out[::-1]


def _carry_aliases(pieces: list[Piece], together: dict[str, set[str]], before: dict[int, tuple[set, set, set]]) -> None:
    """A subgraph copies the mutable objects it receives, one copy per object. A name a later subgraph reads
    that may hold the same object as one of this subgraph's inputs (`past_key_values__1`, bound to the
    callee's `past_key_values__2` by an inlined call) comes in with that input and leaves with it, so both
    names keep the one copy the code changed. Names no later subgraph reads are not carried."""
    read_after = _read_after(pieces)  # before any piece is changed: carrying adds to a piece's own inputs only
    for i, piece in enumerate(pieces):
        later = read_after[i]
        defined, maybe_defined, local = before[id(piece)]
        for name in list(piece.inputs):
            for other in sorted(together.get(name, ())):
                if other in piece.inputs or other in local or other not in later:
                    continue
                if other in defined or other in maybe_defined:
                    piece.inputs.append(other)
                    if other not in piece.stored:  # (a name it may bind goes back as the code leaves it)
                        piece.carried.add(other)
                        piece.passed_through.add(other)
                    piece.outputs = sorted(set(piece.outputs) | {other})
                    if other not in defined:
                        piece.maybe_inputs.add(other)
                    else:
                        piece.definite_outputs.add(other)


def _check_module_names(pieces: list[Piece]) -> None:
    """A name a piece's code binds to a module is not passed on: the pieces after it that read it bind it again
    from the path emission found (their prelude). Each piece checks, where it ends, that such a name holds the
    module at that path (`runtime.expect_module`): a binding emission decided from the sample (`layer =
    self.layers[i]`, `norm = self.norm_b if strong else self.norm`, an opaque `if` it took one way) may give
    another module for other inputs. Emission's own bindings from the path (`layer = <path>`) need no check."""
    expected: dict[str, str] = {}  # name -> the path the next piece that reads it binds it from
    for piece in reversed(pieces):
        origin: dict[str, str] = {}
        surely: set[str] = set()
        for step in piece.steps:
            names = _names(step.code)
            for name in names.definite | names.maybe:
                if step.code.rstrip("\n") != f"{name} = {step.modules.get(name)}":
                    origin[name] = step.origin
            surely |= names.definite
        piece.module_checks = [(name, expected[name], origin[name], name in surely or name in piece.prelude)
                               for name in sorted(origin) if name in expected]
        for name in surely:  # what it held before this piece does not reach the pieces after it
            expected.pop(name, None)
        expected.update(piece.prelude)


def _check_closures(pieces: list[Piece]) -> None:
    """A function a piece makes (a lambda, a nested def) keeps the variables of the subgraph it was made in.
    Where the forward rebinds a name it reads after a cut (`scale = 2.0`; an unrolled loop's variable, bound
    again for the next layer), the function would go on reading the old value, where Python's closure reads
    the new one: refused where the function is made."""
    stored_after: dict[str, str] = {}  # name -> the first origin a later piece binds it at
    for piece in reversed(pieces):
        for step in piece.steps:
            for name, made_at in _closure_reads(step.code):
                if name in stored_after:
                    path, _, line = step.origin.rpartition(":")
                    raise Refused([ClosureAcrossCut(path, int(line) if line.isdigit() else 0, (
                        f"the {made_at} made here reads `{name}`, bound again at {stored_after[name]}; made in one "
                        "subgraph, it would go on reading the value that subgraph held, where Python's closure reads "
                        "the new one"))])
        for step in reversed(piece.steps):
            names = _names(step.code)
            for name in names.definite | names.maybe:
                stored_after[name] = step.origin


@lru_cache(maxsize=65536)
def _closure_reads(code: str) -> tuple[tuple[str, str], ...]:
    """The names each function the code makes (a lambda, a local def) reads from the code's own scope, with how the
    function is shown in a message. Scopes are Python's own (`symtable`): a name a nested function binds for itself,
    or a comprehension's variable, is not read from outside. A comprehension or a class body runs where it stands:
    only the functions made inside it count. (A generator expression runs as it is consumed, nearly always at once,
    by `all`, `any`, `tuple`, ...; one kept for later that reads a name bound again after a cut is not refused here.)"""
    tree = ast.parse(code)
    declared = {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    names = sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - declared)
    # the code as the body of a function whose locals are every name it mentions: what a nested scope reads of
    # them is what it reads from the subgraph's own variables
    wrapped = f"def _scope({', '.join(names)}):\n" + "".join(f"    {line}\n" for line in code.splitlines())
    top = symtable.symtable(wrapped, "<step>", "exec").get_children()[0]
    out: list[tuple[str, str]] = []

    def visit(scope: symtable.SymbolTable, chain: list) -> None:
        for child in scope.get_children():
            if child.get_type() != "function":  # a class body: names inside resolve past it
                visit(child, chain)
                continue
            name = child.get_name()
            if name not in ("listcomp", "setcomp", "dictcomp", "genexpr"):  # comprehensions run where they stand
                shown = "lambda" if name == "lambda" else f"function `{name}`"
                for free in child.get_frees():
                    owner = next((s for s in reversed(chain) if _is_local(s, free)), None)
                    if owner is top:
                        out.append((free, shown))
            visit(child, chain + [child])

    visit(top, [top])
    return tuple(dict.fromkeys(out))


def _is_local(scope: symtable.SymbolTable, name: str) -> bool:
    try:
        return scope.lookup(name).is_local()
    except KeyError:
        return False


def _read_after(pieces: list[Piece]) -> list[set[str]]:
    """For each piece, the names the pieces after it read (their inputs)."""
    out: list[set[str]] = [set() for _ in pieces]
    for i in range(len(pieces) - 2, -1, -1):
        out[i] = out[i + 1] | set(pieces[i + 1].inputs)
    return out


def _holders(value: ast.AST) -> list[str]:
    """The names whose objects `value` may be or hang off: `h`, `h.cache`, `h[i]`, `h.view(...)`, either side
    of `a if c else b` or of `a or b`."""
    if isinstance(value, ast.IfExp):
        return _holders(value.body) + _holders(value.orelse)
    if isinstance(value, ast.BoolOp):
        return [n for v in value.values for n in _holders(v)]
    while isinstance(value, (ast.Attribute, ast.Subscript)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS):
        value = value.func.value if isinstance(value, ast.Call) else value.value
    return [value.id] if isinstance(value, ast.Name) else []


@lru_cache(maxsize=65536)
def _object_aliases(code: str) -> tuple[tuple[str, str], ...]:
    """(name, other) for every assignment in the code, at any depth, of a name to an object another name
    holds or reaches (`cache = past_key_values.self_attention_cache if ... else past_key_values`)."""
    out = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:  # `cache: Layer = pkv.layers[i]`
            bases = _holders(node.value)
            for target in _assigned(node):
                out += [(t, b) for t in _target_names(target) for b in bases]
                if isinstance(node.value, ast.Dict) and isinstance(target, ast.Name):  # a call's keyword dict
                    out += [(f"{target.id}[{k.value!r}]", b) for k, v in zip(node.value.keys, node.value.values)
                            if isinstance(k, ast.Constant) for b in _holders(v)]
                    # `{..., **kwargs}`: the entries of kwargs are entries of this dict (_alias_groups)
                    out += [(target.id, b) for k, v in zip(node.value.keys, node.value.values) if k is None
                            for b in _holders(v)]
    return tuple(out)


def _alias_groups(steps: list[Step]) -> dict[str, set[str]]:
    """Names that may hold the same object somewhere in the program (`a = b`, a view, a keyword binding),
    flow-insensitively: name -> the other names of its group."""
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    def union(name: str, base: str) -> None:
        seen.update((name, base))
        a, b = find(name), find(base)
        if a != b:
            parent[a] = b

    seen: set[str] = set()
    links = []
    for step in steps:
        for name, base in _names(step.code).aliases + _object_aliases(step.code):
            union(name, base)
            links.append((name, base))
    # two names of one dict (`kwargs = kw`, or `kw2 = {**kwargs}`) hold the same entries: `kw2['past_key_values']`
    # is `kw['past_key_values']`, for every key an entry is read or bound by
    keys = {n[n.index("["):] for n in seen if "[" in n}
    for name, base in links:
        if name.isidentifier() and base.isidentifier():
            for key in keys:
                union(name + key, base + key)
    groups: dict[str, set[str]] = {}
    for n in seen:
        groups.setdefault(find(n), set()).add(n)
    out: dict[str, set[str]] = {}
    for members in groups.values():
        names = {m for m in members if m.isidentifier()}
        for m in names:
            out[m] = names - {m}
    # a dict holds its entries: `kwargs` and the `past_key_values` bound from `kwargs['past_key_values']` go together
    for n in seen:
        name, bracket, _ = n.partition("[")
        if bracket and name.isidentifier():
            for other in groups[find(n)]:
                if other.isidentifier() and other != name:
                    out.setdefault(name, set()).add(other)
                    out.setdefault(other, set()).add(name)
    return out


def _target_names(target: ast.AST) -> set[str]:
    """The names an assignment target binds: `a`, `a, (b, *c)`; not `a` in `a.x = ...` or `a[i] = ...`."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for el in target.elts for n in _target_names(el)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


@dataclass
class Piece:
    """The steps of one subgraph, before code generation."""

    steps: list[Step]
    inputs: list[str] = field(default_factory=list)
    maybe_inputs: set[str] = field(default_factory=set)
    written_inputs: set[str] = field(default_factory=set)  # inputs the piece may change in place
    prelude: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    definite_outputs: set[str] = field(default_factory=set)  # surely bound when the piece ends
    reads: dict[str, list[str]] = field(default_factory=dict)  # input -> the model lines whose code reads it
    passed_through: set[str] = field(default_factory=set)  # inputs it never rebinds: outputs only if changed
    spread_inputs: set[str] = field(default_factory=set)  # inputs its code reads only as `**name`
    carried: set[str] = field(default_factory=set)  # inputs its code never reads, taken for an alias (_carry_aliases)
    stored: set[str] = field(default_factory=set)  # names its code binds, surely or on some paths
    module_checks: list[tuple[str, str, str, bool]] = field(default_factory=list)  # (name, path, origin, surely bound)


def cut(steps: list[Step], targets_per_subgraph: int = 1) -> list[Piece]:
    """Piece 0 runs what precedes the first target call; each later piece starts at a target call
    and holds `targets_per_subgraph` consecutive ones (llm-compressor's partition)."""
    if targets_per_subgraph < 1:
        raise ValueError("targets_per_subgraph must be at least 1")
    pieces = [Piece([])]
    seen = 0
    for step in steps:
        if step.target is not None:
            if len(pieces) == 1 or seen == targets_per_subgraph:
                pieces.append(Piece([]))
                seen = 0
            seen += 1
        pieces[-1].steps.append(step)
    return pieces


def _without_unread_bindings(steps: list[Step]) -> list[Step]:
    """The steps without the module bindings nothing after them in the piece reads (`decoder_layer__1 =
    self.model.layers[3]`, an unrolled loop's next item bound where the piece ends): a module-bound name is
    bound again, from its path, in the piece that reads it (its prelude), so the lookup is dead code here."""
    kept: list[Step] = []
    read: set[str] = set()
    for step in reversed(steps):
        name, _, expr = step.code.rstrip("\n").partition(" = ")
        if step.target is None and step.modules.get(name) == expr and name not in read:
            continue
        read.update(_names(step.code).loads, step.reads, *(_names(s).loads for s in step.scopes))
        kept.append(step)
    return kept[::-1]


def build_subgraphs(steps: list[Step], input_names: list[str], output_name: str, globals_: dict, title: str,
                    targets_per_subgraph: int = 1, live: dict | None = None, keywords: tuple[str, ...] = (),
                    sample: SampleTensors | None = None) -> list:
    """Cut the steps into pieces and make each a `Subgraph`, with the inputs, outputs and consumed names above.
    `keywords` are the names the model's forward takes by keyword: a batch may hold them. `sample` holds the sample's tensor
    names and those that share a tensor (samplealias.py)."""
    pieces = cut(steps, targets_per_subgraph)
    for piece in pieces:
        piece.steps = _without_unread_bindings(piece.steps)
    defined = set(input_names)  # names that exist before a piece runs, surely
    maybe_defined: set[str] = set()
    repeating = []
    holds_state: set[str] = set()  # locals bound to state that outlives a subgraph (the model's, a module's, a global's)
    written_at: dict[str, str] = {}  # an input some piece writes in place -> the model line of the first write
    before: dict[int, tuple[set, set, set]] = {}
    loads_after = _loads_after(pieces)
    for index, piece in enumerate(pieces):
        local: set[str] = set()
        inputs: list[str] = []
        alias: dict[str, str] = {}  # local name -> the input whose object (or a view of it) it holds
        for at, step in enumerate(piece.steps):
            names = _names(step.code)
            scope_loads = [n for s in step.scopes for n in _names(s).loads]
            for name in scope_loads + names.loads + list(step.reads):
                if name in local or name in piece.prelude:
                    continue
                if name in step.modules:
                    if step.modules[name] != name:
                        piece.prelude[name] = step.modules[name]
                    continue
                if name in defined or name in maybe_defined:
                    if name not in inputs:
                        inputs.append(name)
                        if name not in defined:
                            piece.maybe_inputs.add(name)
            own = (local | names.definite | names.maybe | set(inputs)) - set(step.modules)
            repeating += [state.refusal(step.origin, write) for root, write in state.repeating_writes(step.code)
                          if root not in own or root in holds_state]
            augmented = state.augmented_name(step.code)
            if augmented is not None and augmented[0] in holds_state:  # `acc += 1`, `acc = self.acc` before
                name, method = augmented
                piece.steps[at] = step = replace(step, code=(
                    f"{RUNTIME}.expect_rebinding({name}, {method!r}, {step.origin!r}, {step.code.strip()!r})\n" + step.code))
            aliases = state.state_aliases(step.code)
            for name, root in aliases:  # `hist = self.history`: a write to hist is one to self
                if root in holds_state or root not in own:
                    holds_state.add(name)
            holds_state -= (names.definite | names.maybe) - {name for name, _ in aliases}
            for name in names.written:
                root = alias.get(name, name if name in inputs and name not in local else None)
                if root is not None:
                    piece.written_inputs.add(root)
                    written_at.setdefault(root, step.origin)
            for name in names.definite - names.written - {n for n, _ in names.aliases}:
                alias.pop(name, None)  # rebound to another object
            for name, base in names.aliases:  # `a = h` (or a view of h): writing into a writes into h
                root = alias.get(base, base if base in inputs and base not in local else None)
                if root is not None:
                    alias[name] = root
            local |= names.definite
        before[id(piece)] = (set(defined), set(maybe_defined), set(local))
        piece.inputs = inputs
        if repeating:
            raise Refused(repeating)
        for step in piece.steps:
            for name in set(_names(step.code).loads) & set(inputs):
                origins = piece.reads.setdefault(name, [])
                if step.origin not in origins:
                    origins.append(step.origin)
        stored = set()
        for step in piece.steps:
            n = _names(step.code)
            defined |= n.definite
            stored |= n.definite | n.maybe
            maybe_defined |= n.maybe
            piece.definite_outputs |= n.definite
        before_defined, before_maybe, _ = before[id(piece)]
        for name in sorted(stored - piece.definite_outputs):
            # bound on some paths only, where an earlier piece bound it: where this one does not, it gives the
            # earlier value on (not UNBOUND in its place)
            if name not in inputs and name in loads_after[index] and (name in before_defined or name in before_maybe):
                inputs.append(name)
                if name not in before_defined:
                    piece.maybe_inputs.add(name)
        piece.definite_outputs |= set(inputs) - piece.maybe_inputs
        # what a piece receives and a later one reads passes through it: the piece may change it
        piece.outputs = sorted(stored | set(inputs))
        piece.stored = stored
        piece.passed_through = set(inputs) - stored
        piece.spread_inputs = {n for n in piece.passed_through
                               if all(n in _spread_only(step.code) or n not in _names(step.code).loads
                                      for step in piece.steps)
                               and not any(n in _names(s).loads for step in piece.steps for s in step.scopes)}
    sample = sample or SampleTensors((), ())
    together = _alias_groups(steps)
    written = written_names(sample, written_at, together)
    one_tensor = written_aliases(sample, written)
    _carry_aliases(pieces, _joined(together, one_tensor + may_be_one(sample, written)), before)
    _check_module_names(pieces)
    _check_closures(pieces)
    # keep only outputs a later piece reads (and the final output)
    read_after = _read_after(pieces)
    for i, piece in enumerate(pieces):
        later = read_after[i]
        keep = [n for n in piece.outputs if n in later]
        if i == len(pieces) - 1:
            keep = sorted(set(keep) | {output_name})
        piece.outputs = keep
    consumed: dict[int, set[str]] = {i: set() for i in range(len(pieces))}
    for name in {n for p in pieces for n in p.inputs}:
        last = max(i for i, p in enumerate(pieces) if name in p.inputs)
        consumed[last].add(name)
    live = live or {}
    chain = []
    for i, piece in enumerate(pieces):
        sg = _subgraph(i, len(pieces), piece, consumed[i], globals_, title)
        loaded = {n for step in piece.steps for n in _names(step.code).loads}
        sg.live_globals = tuple((alias, *live[alias]) for alias in sorted(loaded & live.keys()))
        chain.append(sg)
    share_constants(chain, [*input_names, *keywords])
    keep_identity(chain)
    for sg in chain:
        sg.one_tensor = tuple(group for group in (tuple(n for n in names if n in sg.input_names) for names in one_tensor)
                              if len(group) > 1)
    return chain


def _joined(together: dict[str, set[str]], groups: list[tuple[str, ...]]) -> dict[str, set[str]]:
    """The names that may hold one object, with each group of names for one tensor of the sample joined in (with
    the names the code binds to any of them)."""
    for names in groups:
        members = set(names).union(*(together.get(n, ()) for n in names))
        for name in members:
            together[name] = members - {name}
    return together


def _subgraph(index: int, count: int, piece: Piece, consumed: set[str], globals_: dict, title: str) -> Subgraph:
    source, origins = generate(index, piece)
    steps = [s for s in piece.steps if s.target is not None]
    return Subgraph(
        index=index,
        source=source,
        input_names=set(piece.inputs),
        output_names=set(piece.outputs),
        consumed_names=set(consumed),
        targets=[s.target for s in steps],
        module_paths=_module_paths(piece),
        origins=origins,
        filename=f"<staticexec {title} subgraph {index} of {count}>",
        target_origins=[s.origin for s in steps],
        written_inputs=set(piece.written_inputs),
        passed_through=set(piece.passed_through) & set(piece.outputs),
        spread_inputs=set(piece.spread_inputs),
        carried_inputs=set(piece.carried) & set(piece.outputs),
        input_reads={k: tuple(v) for k, v in piece.reads.items()},
        gives_on=index < count - 1,
        _globals=globals_,
    )


def generate(index: int, piece: Piece) -> tuple[str, list[tuple[int, str]]]:
    """The subgraph's function source, and for each line of it the model source line it came from."""
    lines: list[str] = []
    origins: list[tuple[int, str]] = []
    params = ", ".join(piece.inputs)
    sig = f"def subgraph_{index}(self{', *, ' + params if params else ''}):"
    lines.append(sig)
    for n in piece.inputs:
        if n in piece.maybe_inputs:
            lines.append(f"    if _sx_type({n}) is Unbound:")
            lines.append(f"        del {n}")
    for name, expr in piece.prelude.items():
        lines.append(f"    {name} = {expr}")
    current: tuple[str, ...] = ()
    for step in piece.steps:
        if step.scopes != current:
            current = step.scopes
            if current:
                lines.append("    with " + ", ".join(_merged_scopes(current)) + ":")
        indent = "        " if current else "    "
        lines.append(f"{indent}# {step.origin}")
        for code_line in step.code.rstrip("\n").split("\n"):
            origins.append((len(lines) + 1, step.origin))
            lines.append(f"{indent}{code_line}" if code_line.strip() else "")
    for name, path, origin, surely in piece.module_checks:
        check = expect_module_code(name, path, origin, name)
        if surely:
            lines.append(f"    {check}")
        else:  # bound on some paths only: where it is not, it still holds what it held before this piece
            lines += [f"    if {name!r} in _sx_locals():", f"        {check}"]
    # inputs it never rebinds are given back by Subgraph.forward, only where a run copied them
    returned = [n for n in piece.outputs if n not in piece.passed_through]
    sure = [n for n in returned if n in piece.definite_outputs]
    maybe = [n for n in returned if n not in piece.definite_outputs]
    if maybe:  # assigned only on some paths: UNBOUND where they are not
        lines.append("    _locals = _sx_locals()")
        lines.append(f"    _out = {{_n: _locals.get(_n, UNBOUND) for _n in {tuple(maybe)!r}}}")
        for n in sure:
            lines.append(f"    _out[{n!r}] = {n}")
        lines.append("    return _out")
    else:
        lines.append("    return {" + ", ".join(f"{n!r}: {n}" for n in sure) + "}")
    return "\n".join(lines) + "\n", origins


_SCOPE = re.compile(r"(\w+)\.wrapper_scope\((\w+)\)$")


def _merged_scopes(contexts: tuple[str, ...]) -> list[str]:
    """The context managers of a `with`, where consecutive wrapper scopes are entered by one
    `wrapper_scope(a, b, ...)`: one context manager instead of one per decorator."""
    out: list[str] = []
    names: list[str] = []
    runtime = ""
    for context in contexts + ("",):
        match = _SCOPE.match(context)
        if match:
            runtime = match.group(1)
            names.append(match.group(2))
            continue
        if names:
            out.append(f"{runtime}.wrapper_scope({', '.join(names)})")
            names = []
        if context:
            out.append(context)
    return out


def _module_paths(piece) -> list[str]:
    """Dotted paths of modules a piece uses: targets, and `selfvar.attr` chains on module-bound names."""
    bound = dict(piece.prelude)
    for step in piece.steps:
        bound.update(step.modules)
    paths: list[str] = []
    for step in piece.steps:
        if step.target is not None and step.target not in paths:
            paths.append(step.target)
        for node in _calls(step.code):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                chain = []
                cur: ast.AST = node.func
                while isinstance(cur, ast.Attribute):
                    chain.append(cur.attr)
                    cur = cur.value
                if isinstance(cur, ast.Name) and (cur.id in bound or cur.id == "self"):
                    base = bound.get(cur.id, "self")
                    path = _expr_path(base)
                    if path is None:
                        continue
                    full = ".".join([p for p in [path] if p] + list(reversed(chain)))
                    if full not in paths:
                        paths.append(full)
    return paths


@lru_cache(maxsize=65536)
def _calls(code: str) -> tuple:
    return tuple(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call))


@lru_cache(maxsize=65536)
def _expr_path(expr: str) -> str | None:
    """A module's dotted path from the expression emission binds it with: `self.model.layers._modules['3']`
    -> `model.layers.3` (any key, as registered: a digit, a keyword, one holding brackets); None for any other
    expression."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    parts: list[str] = []
    while not (isinstance(node, ast.Name) and node.id == "self"):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            parts.append(str(node.slice.value))
            node = node.value
            if isinstance(node, ast.Attribute) and node.attr == "_modules":  # the registered item's key
                node = node.value
        else:
            return None
    return ".".join(reversed(parts))
