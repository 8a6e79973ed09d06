"""Stage 6, run: a subgraph is a plain Python function over named values.

`Subgraph` has the interface of llm-compressor's sequential pipeline, with its
contract (docs/subgraph-contract.md): `input_names`, `consumed_names`,
`forward(model, **inputs) -> dict`, `submodules(model, recurse=True)`, plus
`output_names`. Values cross subgraphs the way that pipeline's cache keeps
them: containers and dataclasses are rebuilt on the way, so a subgraph packs
what would not survive that (model outputs) and copies what it could change in
place (caches, collectors), which makes running it twice give the same result.
Each run checks that the subgraph entered exactly the targets it was emitted
for, in order. `run_chain` runs a chain exactly as the pipeline does.
"""

from __future__ import annotations

import collections
import contextvars
import copy
import dataclasses
import functools
import linecache
import operator
import sys
import traceback
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from staticexec.emit.constants import ChainConstants, keyword_defaults
from staticexec.emit.heldstate import held_by_model, memory_of
from staticexec.emit.layout import Strided, laid_out
from staticexec.emit.modules import named_modules, outermost
from staticexec.emit.onread import CopiedOnRead, eligible
from staticexec.emit.registrations import registrations
from staticexec.emit.samplealias import apart
from staticexec.emit.runtime import (CHECKS, ENTERED, EnteredState, ModuleRecorder, WrapperScope, WrapperState, has_tripwire,
                                      tripwire)
from staticexec.emit.shared import Held, shared_names

_MISSING = object()


@dataclass(frozen=True)
class Unbound:
    """The value of an output name that the subgraph did not bind on the path it took."""


UNBOUND = Unbound()

BUILTINS = {"_sx_type": type, "_sx_locals": locals}
"""The builtins the subgraphs' own code calls, by names a model's source can't shadow (a local named `type`)."""


@dataclass
class Packed:
    """A mapping of another type than dict (a ModelOutput), or a namedtuple, on its way to a later subgraph.

    Its class travels by name: llm-compressor's cache rebuilds every dataclass it holds,
    and would try to rebuild a dataclass *type* held in a field too."""

    module: str
    qualname: str
    items: dict

    def rebuild(self) -> Any:
        """The original mapping: its class imported by name and built from the items, unpacked in turn."""
        import importlib

        cls: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            cls = getattr(cls, part)
        return cls(**{k: _unpack(v) for k, v in self.items.items()})


class ContractError(RuntimeError):
    """A chain broke the Subgraph contract: a name missing, or a subgraph run with the wrong inputs."""


class TargetMismatch(RuntimeError):
    """A subgraph entered other target modules than those it was emitted for."""


_TRIPWIRES = CHECKS


class checks_off:
    """Run subgraphs without their run-time checks: the target check, the input version counters, the search
    of the model for inputs written in place (heldstate.py), and the branch, loop, code, module and state
    checks of runtime.py (for measuring what they cost; they are on by default).

    Given the model, its target modules' hooks are detached too, and attached again on exit."""

    def __init__(self, model: Any = None) -> None:
        self.model = model
        self.detached: list = []

    def __enter__(self) -> None:
        self.token = _TRIPWIRES.set(False)
        for module in self.model.modules() if self.model is not None else ():
            for key, hook in list(module._forward_pre_hooks.items()):
                if hook is tripwire:
                    del module._forward_pre_hooks[key]
                    self.detached.append(module)

    def __exit__(self, *exc: object) -> None:
        _TRIPWIRES.reset(self.token)
        install_tripwires(self.detached)
        self.detached = []


tripwires_off = checks_off  # the name it had when the target check was the only one


def outermost_targets(model: Any, targets: set[str]) -> list[tuple[str, Any]]:
    """Target modules not inside another target module: the ones a subgraph chain calls."""
    return outermost(named_modules(model), lambda m: type(m).__name__ in targets)


def arm_target_check(model: Any, chain: list, classes: set[str], watched: tuple[str, ...] | None = None) -> None:
    """Put the tripwire on every module the targets select, not only those the chain splits at.

    `watched` names the selected modules (llm-compressor's selection, by class in the MRO, name or
    pattern); by default every module of a target class. A selected module nested inside another
    is entered while its outer target runs, which is right only inside the subgraph emitted for
    that outer target: each subgraph is told which nested ones belong to which outer target."""
    listing = list(model.named_modules())  # afresh: emission may have run code that added modules
    if watched is None:
        watched = tuple(name for name, module in listing if type(module).__name__ in classes)
    outer = outermost(listing, lambda m: type(m).__name__ in classes)
    outer_names = {name for name, _ in outer}
    nested: dict[int, str] = {}
    modules = []
    for name in watched:
        module = _module_at(model, name) if name else model
        if module is None:
            continue
        modules.append(module)
        parts = name.split(".")
        holder = next((p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in outer_names), None)
        if holder is not None:
            nested[id(module)] = holder
    modules += [m for _, m in outer]
    kept = {id(m) for m in modules}
    remove_tripwires(m for _, m in listing if id(m) not in kept)  # an earlier chain's targets, not watched now
    install_tripwires(modules)
    armed = (frozenset(classes), frozenset(id(m) for _, m in listing))
    registrations().watch(armed[0])  # a module of these classes made from now on makes each subgraph record again
    for sg in chain:
        sg.nested_targets = nested
        sg.armed_over = armed


def install_tripwires(modules: list) -> None:
    """A forward pre-hook on each target module that records it while a subgraph runs (once per module)."""
    for module in modules:
        if not has_tripwire(module):
            module.register_forward_pre_hook(tripwire)


def is_tripwire(hook: Any) -> bool:
    """Whether a forward pre-hook is the target check's own."""
    return hook is tripwire


def remove_tripwires(modules: Any) -> None:
    """Take the tripwire off modules: a chain emitted earlier with other targets watched them."""
    for module in modules:
        for key in [k for k, hook in module._forward_pre_hooks.items() if hook is tripwire]:
            del module._forward_pre_hooks[key]


@dataclass
class Subgraph:
    """One piece of the forward: its source, its named inputs and outputs, and the modules it calls."""

    index: int
    source: str
    input_names: set[str]
    output_names: set[str]
    consumed_names: set[str]
    targets: list[str] = field(default_factory=list)
    module_paths: list[str] = field(default_factory=list)
    origins: list[tuple[int, str]] = field(default_factory=list, repr=False)
    filename: str = ""
    target_origins: list[str] = field(default_factory=list, repr=False)
    written_inputs: set[str] = field(default_factory=set)  # inputs its code may change in place
    passed_through: set[str] = field(default_factory=set)  # outputs it received and never rebinds
    spread_inputs: set[str] = field(default_factory=set)  # inputs its code reads only as `**name`
    carried_inputs: set[str] = field(default_factory=set)  # inputs its code never reads, taken for an alias
    input_reads: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)  # input -> model lines reading it
    gives_on: bool = True  # its outputs go to later subgraphs through the cache (all but the last)
    nested_targets: dict = field(default_factory=dict, repr=False)  # id of a watched module -> the outer target holding it
    armed_over: tuple = field(default=(frozenset(), frozenset()), repr=False)  # target class names, ids of the modules then
    live_globals: tuple = field(default=(), repr=False)  # (global, module namespace, name): read afresh each run
    constants: ChainConstants | None = field(default=None, repr=False)  # shared by the chain (emit/constants.py)
    omits: frozenset = frozenset()  # outputs it leaves out of the cache while they hold the chain's constant
    keeps_identity: frozenset = frozenset()  # names whose tensors travel as one where two reach one (emit/shared.py)
    one_tensor: tuple = ()  # groups of its inputs that were one tensor in the sample, one written in place (samplealias.py)
    constant_inputs: frozenset = frozenset()  # inputs it binds to the chain's constant when not given them
    _expected: list | None = field(default=None, repr=False)  # the target modules entered at the last good run
    _ran: list | None = field(default=None, repr=False)  # every module entered on its last recorded complete run
    _recorded_at: int = field(default=-1, repr=False)  # the registrations counted when that run began
    _taken: frozenset | None = field(default=None, repr=False)  # its inputs less the constants its code defaults
    _default_scopes: tuple = field(default=(), repr=False)  # (name, scope) of the scopes among those defaults
    _globals: dict = field(default_factory=dict, repr=False)
    _fn: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._fn is None:
            self._compile()

    def _compile(self) -> None:
        linecache.cache[self.filename] = (len(self.source), None, self.source.splitlines(True), self.filename)
        scope = dict(self._globals)
        scope.update(_MISSING=_MISSING, Unbound=Unbound, UNBOUND=UNBOUND, **BUILTINS)
        exec(_compiled(self.source, self.filename), scope)
        self._fn = scope[f"subgraph_{self.index}"]

    def forward(self, model: Any, *args: Any, **inputs: Any) -> dict:
        """Run this subgraph on its named inputs; returns the named values later subgraphs need.

        The inputs are exactly `input_names`, less those the chain keeps out of the cache while they hold its
        constant (emit/constants.py), which it binds. Mutable inputs are copied first, and so are the
        tensors its code writes in place (`x += y`, `x[i] = y`, `x.add_(y)`); other tensors are
        shared. So the inputs are left as they were and a second run gives the same outputs.
        """
        if args:
            raise TypeError("subgraph inputs are passed by name")
        defaulted: tuple = ()  # the scopes its code takes as defaults in this run: emptied again after it
        keys = inputs.keys()
        if keys != self.input_names:
            if self._taken is None and self.constant_inputs:
                self._take_defaults()
            if keys == self._taken:  # given all but the constants its code takes as keyword defaults
                defaulted = self._default_scopes
            else:
                inputs = self.bound_inputs(inputs)
        if self.one_tensor and _TRIPWIRES.get():
            self._check_one_tensor(inputs)
        scope = self._fn.__globals__
        for alias, namespace, name in self.live_globals:  # module-level names as the model's modules hold them now
            value = namespace.get(name, _MISSING)
            if value is not _MISSING and scope.get(alias, _MISSING) is not value:
                scope[alias] = value
        checked = _TRIPWIRES.get()
        given = None if self.written_inputs else _as_given(inputs, self.carried_inputs, self.spread_inputs)
        if given is not None:  # every input goes to the code as it came: nothing copied, nothing to reconcile
            values, changed, later, memo, kept = inputs, [], [], {}, None
            shared, emptied = given
        else:
            values, shared, changed, later, emptied, memo, kept = _copied_inputs(self, inputs)  # kept: alive while it runs
            if checked and self.written_inputs:
                self._check_written_unheld(model, kept[0], values)
        versions = _versions(shared) if checked else None
        entered: list = []
        token = ENTERED.set(entered if checked else None)
        recorder = handle = None
        registered = registrations().count
        if registered != self._recorded_at:  # the first run records every module it enters (submodules), and so
            # does the first after a target-class module was made or registered: opaque code may run it
            from torch.nn.modules.module import register_module_forward_pre_hook

            recorder = ModuleRecorder()
            handle = register_module_forward_pre_hook(recorder)
        try:
            out = self._fn(model, **values)
        except Exception as exc:
            origin = self._origin_of(exc)
            if origin and hasattr(exc, "add_note"):
                exc.add_note(f"staticexec: raised in subgraph {self.index}, in code emitted from {origin}")
            raise
        finally:
            ENTERED.reset(token)
            if handle is not None:
                handle.remove()
            for k, default in defaulted:
                values[k] = default  # (then as a scope it was given, below)
                emptied.append(k)
            for k in emptied:
                scope = _emptied(values[k])
                if scope is not None:
                    values[k] = scope
                    changed.append(k)
            if _OPENED in memo:
                _close(memo)
                for k, v in later:  # passed as they came: they take the copies made while it ran
                    if values[k] is v and not _untouched(v, memo):
                        values[k] = _fresh(v, memo)
                        changed.append(k)
        if recorder is not None:
            self._ran, self._recorded_at = recorder.entered, registered
            if checked:
                self._check_unwatched(model, recorder.entered)
        if checked:
            self._check_targets(model, entered)
        if versions and versions != _versions(shared):
            for (name, tensor), version in zip(shared, versions):
                if version is not None and tensor._version != version:
                    self._changed_input(name)
        # the code returns what it binds; an input it never rebinds goes back only where this run copied or
        # rebuilt it: one given back as the very object is left where the cache holds it
        given_on = out
        for k in changed:
            if k in self.passed_through:
                if given_on is out:
                    given_on = dict(out)
                given_on[k] = values[k]
        if not self.keeps_identity and all(map(_is_atom, given_on.values())):
            # atoms and tensors (a layer's hidden states): nothing to pack, nothing held
            if self.gives_on:
                for k, v in given_on.items():
                    if _kind(type(v)) == _TENSOR_KIND:
                        given_on[k] = laid_out(v)  # a strided view with its layout (emit/layout.py)
            if self.omits:
                self.constants.leave_out(self.omits, given_on)
            return given_on  # a dict of its own: the code's, or the one made above
        # one object later subgraphs reach under two names travels held, as one (emit/shared.py)
        held = shared_names(given_on, inputs, self.consumed_names, self.keeps_identity) if self.gives_on else ()
        result = {k: Held(v) if k in held else _pack(v, self.gives_on) for k, v in given_on.items()}
        for k in held - given_on.keys():  # an input it leaves in the cache: given on with the others
            result[k] = Held(values[k] if k in values else inputs[k])
        if self.omits:
            self.constants.leave_out(self.omits, result)
        return result

    def _take_defaults(self) -> None:
        """Once the chain has learned every constant it may not be given: its code takes those it can as keyword
        defaults (emit/constants.py), and a run given exactly the other inputs binds nothing itself."""
        found = keyword_defaults(self)
        if found is None:
            return
        defaults, scopes = found
        self._fn.__kwdefaults__ = defaults or None
        self._taken = frozenset(self.input_names - defaults.keys())
        self._default_scopes = tuple(scopes)

    def bound_inputs(self, inputs: dict) -> dict:
        """The inputs as its code takes them: the chain's constant bound for each one the cache was not given (an
        earlier subgraph left it out: emit/constants.py); a name missing otherwise, or one it doesn't take, is an error."""
        missing, extra = self.input_names - inputs.keys(), inputs.keys() - self.input_names
        if not extra and missing <= self.constant_inputs:
            given = self.constants.given(inputs, missing)
            if given is not None:
                return given
        missing = sorted(n for n in missing if not self.absent(n))
        raise ContractError(f"subgraph {self.index}: " + "; ".join(
            part for part in (f"missing inputs {missing}" if missing else "",
                              f"unexpected inputs {sorted(extra)}" if extra else "") if part))

    def absent(self, name: str) -> bool:
        """Whether an input may be missing from the values it is given: the chain's constant stands for it."""
        return name in self.constant_inputs and self.constants is not None and self.constants.holds(name)

    def _changed_input(self, name: str) -> None:
        """An input tensor the subgraph shared (not copied) was written in place while it ran."""
        raise ContractError(f"subgraph {self.index} ({self.filename}) changed its input {name!r} in place"
                            f"{self._read_by(name)}: the pipeline runs each subgraph twice on the same inputs, and the "
                            "second run would see the changed value")

    def _check_written_unheld(self, model: Any, given: dict, values: dict) -> None:
        """Before a run that copies inputs its code writes in place: none of them is also the model's own state
        (emit/heldstate.py), which would keep the old value where the forward changes it."""
        written = {k: given[k] for k in sorted(self.written_inputs) if k in values and values[k] is not given[k]}
        found = held_by_model(model, written) if written else None
        if found is None:
            return
        name, where = found
        raise ContractError(f"subgraph {self.index} ({self.filename}) writes its input {name!r} in place"
                            f"{self._read_by(name)}, and the model holds it too ({where}): the subgraph writes a "
                            "copy, so that the pipeline's second run of it starts from the same value, and the "
                            "model's state would not change as the forward changes it")

    def _check_one_tensor(self, inputs: dict) -> None:
        """Names that were one tensor in the sample the subgraphs were emitted for, one of which a subgraph writes in
        place, are given as one tensor still (emit/samplealias.py)."""
        found = apart(self.one_tensor, inputs)
        if found is None:
            return
        first, other = found
        raise ContractError(f"subgraph {self.index} ({self.filename}) was given {first!r} and {other!r} as two tensors, "
                            "which were one in the sample the subgraphs were emitted for, and the forward writes one of "
                            "them in place: the write would not show in the other (a cache that offloads to another "
                            "device gives each name a copy of its own); emit them again for a sample like these inputs, "
                            "or keep the cache on the model's device")

    def _read_by(self, name: str) -> str:
        reads = self.input_reads.get(name, ())
        return f" (read by the code emitted from {', '.join(reads[:3])}{', ...' if len(reads) > 3 else ''})" if reads else ""

    def _check_unwatched(self, model: Any, ran: list) -> None:
        """On a recorded run (the first, and the first after a target-class module was made or registered anywhere:
        registrations.py), which enters every module with a recorder on: a module of a target class (or a subclass
        of one) that was not in the model when the target check was armed, and has no tripwire, was added since (or
        is kept outside the module tree), so the target check could not see where it runs."""
        classes, known = self.armed_over
        unwatched = next((m for m in ran if id(m) not in known and any(c.__name__ in classes for c in type(m).__mro__)
                          and not has_tripwire(m)), None)
        if unwatched is None:
            return
        path = next((n for n, m in model.named_modules() if m is unwatched), None)
        shown = f"{path!r}, a {type(unwatched).__name__}" if path is not None else f"a {type(unwatched).__name__} outside the model's modules"
        raise TargetMismatch(f"subgraph {self.index} ({self.filename}) entered {shown}, which the target check was not "
                             "armed for: a target module added after the subgraphs were emitted; emit them again with it in "
                             "the model")

    def _check_targets(self, model: Any, entered: list) -> None:
        if self.nested_targets:  # a watched module inside one of this subgraph's targets runs as part of it
            nested = self.nested_targets
            entered = [m for m in entered if nested.get(id(m)) not in self.targets]
        expected = self._expected
        if expected is not None and len(entered) == len(expected) and all(map(operator.is_, entered, expected)):
            return  # the modules found at the targets' paths last time (a module replaced since shows below)
        if len(entered) == len(self.targets) and all(
            m is _module_at(model, p) for m, p in zip(entered, self.targets)
        ):
            self._expected = list(entered)
            return
        paths = {id(m): n for n, m in model.named_modules()}
        got = [paths.get(id(m), type(m).__name__) for m in entered]
        where = ", ".join(self.target_origins) or "no target call"
        raise TargetMismatch(f"subgraph {self.index} ({self.filename}) entered targets {got}, but was emitted "
                             f"to call {self.targets} ({where})")

    def _origin_of(self, exc: BaseException) -> str | None:
        line = None
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == self.filename:
                line = frame.lineno
        if line is None:
            return None
        best = None
        for start, origin in self.origins:
            if start <= line:
                best = origin
        return best

    def submodules(self, model: Any, recurse: bool = True) -> list:
        """The modules this subgraph calls, in call order; with `recurse` (the default, as llm-compressor's
        Subgraph) each followed by all modules below it.

        Those its own code names (its targets, module attributes it calls), and, once it has run, every
        other module of the model it entered: called by opaque code or a helper (a vision tower called
        from `self._image_features(...)`). llm-compressor asks after the subgraph's calibration run."""
        direct = []
        for path in self.module_paths:
            try:
                direct.append(model.get_submodule(path))
            except AttributeError:
                continue
        if self._ran:
            covered = {id(m) for module in direct for m in module.modules()}
            owned = {id(m) for m in model.modules()}
            for module in self._ran:  # entered in call order: a module before those inside it
                if id(module) not in covered and id(module) in owned and module is not model:
                    direct.append(module)
                    covered.update(id(m) for m in module.modules())
        if not recurse:
            return direct
        out, seen = [], set()
        for module in direct:
            for sub in module.modules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
        return out


def _copied_inputs(sg: Subgraph, inputs: dict) -> tuple:
    """The values a subgraph's code is given when some input must be copied or rebuilt first: (values, the
    (input, tensor) pairs shared and checked after the run, the inputs given as another object, the carried
    inputs (input, value) that take copies made while it runs, the scopes shared and emptied after it, the
    memo, and what must stay alive while it runs: the memo is keyed by id)."""
    unpacked = inputs  # alive while copied: the memo is keyed by id
    memo: dict = {}
    written: dict = {}
    if sg.written_inputs or any(type(v) is Held or type(v) is Strided for v in inputs.values()):
        # copied first, so that a tensor input they hold shares their copy; a held tensor, or a strided view made
        # again, taken as a tensor
        unpacked = {k: _unpack(v) if _kind(type(v)) > _TENSOR_KIND else v for k, v in inputs.items()}
        written = {k: _fresh(unpacked[k], memo, True) for k in sorted(sg.written_inputs)
                   if not _views_another(unpacked[k], k, unpacked)}
    values = {}
    shared: list = []  # (input, tensor) of the tensors shared, not copied: their versions are checked after the run
    changed = []  # inputs given to the code as another object than they came as (copied or rebuilt)
    carried = sg.carried_inputs
    later = []  # carried inputs, after those its code reads: they take their copies
    scopes = []  # wrapper scopes whose published containers are empty: shared unless another input's copy holds one
    kept = []  # the containers rebuilt here stay alive while copied: the memo is keyed by id
    for k, v in unpacked.items():
        kind = _kind(type(v))
        if kind == _ATOM:  # never copied (what `_fresh` gives back for it is itself)
            values[k] = v
            continue
        if kind == _TENSOR_KIND:
            if k in carried:
                later.append((k, v))
                continue
            fresh = written[k] if k in written else memo.get(id(v), v) if memo else v
            values[k] = fresh
            if fresh is not v:
                changed.append(k)
            else:
                shared.append((k, v))
            continue
        if kind == _TUPLE and k not in carried and k not in written:
            tensors = _flat_shared(v, memo)
            if tensors is not None:
                values[k] = v  # tensors and atoms only, none copied here: passed as it is, its tensors checked
                if v is not inputs[k]:
                    changed.append(k)
                for t in tensors:
                    shared.append((k, t))
                continue
        if kind == _SCOPE and k not in carried and k not in written and _publishes_empty(v):
            scopes.append((k, v))  # shared, and emptied again after the run (below)
            continue
        if unpacked is inputs:  # a container or a packed mapping
            fresh = _unpack(v)
            if fresh is not v:
                kept.append(fresh)
                v = fresh
                kind = _kind(type(v))
        if k in carried:  # (atoms and tensors were taken above: this is a container or an object)
            later.append((k, v))
            continue
        if k in written:
            values[k] = written[k]
        elif kind == _DICT and k in sg.spread_inputs and all(
                _kind(type(x)) == _ATOM for x in v.values()):  # spread (copied) by the call, holding no state
            values[k] = v
        else:
            values[k] = fresh = _fresh(v, memo)
            if type(fresh) is tuple:
                shared += [(k, t) for t in _tuple_tensors(fresh, v)]
        if values[k] is not inputs[k]:
            changed.append(k)
    for k, v in later:
        # never read here, so only a copy made of an object it shares with a read input can change it
        values[k] = fresh = v if _untouched(v, memo) else _fresh(v, memo)
        if fresh is not inputs[k]:
            changed.append(k)
    if _OPENED in memo:  # items copied while it runs must not become second copies of a tensor shared here
        for _, tensor in shared:
            memo.setdefault(id(tensor), tensor)
        memo[_RUNNING] = True
    emptied = []  # the scopes shared: what the run puts in their containers moves to a new scope after it
    for k, v in scopes:
        if memo and (id(v) in memo or any(id(c) in memo for c in v.context.values())):
            values[k] = _fresh(v, memo)
            changed.append(k)
        else:
            values[k] = v
            emptied.append(k)
    return values, shared, changed, later, emptied, memo, (unpacked, kept)


_NO_COPIES: Any = types.MappingProxyType({})  # the memo of a run that copies nothing


def _as_given(inputs: dict, carried: set, spread: set) -> tuple[list, list] | None:
    """When every input can go to the code as it came (none is copied, rebuilt or unpacked, as
    `_copied_inputs` would decide with nothing copied): the (input, tensor) pairs shared, whose versions are
    checked after the run, and the scopes shared and emptied after it. None when some input needs more."""
    shared: list = []
    scopes: list = []
    kind_of = _kind
    for k, v in inputs.items():
        kind = kind_of(type(v))
        if kind == _ATOM or kind == _STATE:  # never copied (a wrapper's state is never written: see `_fresh`)
            continue
        if k in carried:  # never read: passed as it is unless it holds an object a copy could reach
            # (a tensor and an empty dict are what `_untouched` passes at once)
            if kind != _TENSOR_KIND and not (kind == _DICT and not v) and not _untouched(v, _NO_COPIES):
                return None
        elif kind == _TENSOR_KIND:
            shared.append((k, v))
        elif kind == _TUPLE:
            tensors = _flat_shared(v, _NO_COPIES)
            if tensors is None:
                return None
            for t in tensors:
                shared.append((k, t))
        elif kind == _SCOPE and _publishes_empty(v):
            scopes.append(k)
        elif not (kind == _DICT and k in spread
                  and (not v or all(kind_of(type(x)) == _ATOM for x in v.values()))):
            return None
    return shared, scopes


def _compiled(source: str, filename: str) -> Any:
    """The code object of a subgraph's source, compiled once per session (the same plan at the same depth
    emits the same source again)."""
    from staticexec.analysis.session import current

    table = current().table("run.compiled")
    code = table.get((source, filename))
    if code is None:
        code = table[(source, filename)] = compile(source, filename, "exec")
    return code


def _tuple_tensors(value: tuple, given: Any) -> list:
    """The tensors of a tuple (nested tuples too) that are those given, not copies."""
    if value is given:
        out = []
        for v in value:
            kind = _kind(type(v))
            if kind == _TENSOR_KIND:
                out.append(v)
            elif kind == _TUPLE:
                out += _tuple_tensors(v, v)
        return out
    items = zip(value, given) if type(given) is tuple and len(given) == len(value) else ((v, None) for v in value)
    out = []
    for v, g in items:
        if _kind(type(v)) == _TENSOR_KIND:
            if v is g:
                out.append(v)
        elif type(v) is tuple:
            out += _tuple_tensors(v, g)
    return out


_TENSOR: list = [None]  # torch.Tensor, looked up once (torch is imported lazily)


def _tensor_type() -> type:
    if _TENSOR[0] is None:
        import torch

        _TENSOR[0] = torch.Tensor
    return _TENSOR[0]


def _views_another(value: Any, name: str, inputs: dict) -> bool:
    """Whether a tensor input shares memory with another tensor input (a view made in an earlier subgraph):
    copying it alone would cut it off from the other, so it is shared, and its version counter (a view
    shares its base's) shows a write while the subgraph runs."""
    import torch

    if not isinstance(value, torch.Tensor):
        return False
    ptr = memory_of(value)
    if not ptr:  # empty, or no storage of its own (meta, sparse, a subclass)
        return False
    return any(other != name and isinstance(v, torch.Tensor) and v is not value and memory_of(v) == ptr
               for other, v in inputs.items())


_COLLECTORS = (dict, list, collections.defaultdict)  # what a wrapper publishes for the body to add to


def _publishes_empty(scope: WrapperScope) -> bool:
    """Whether a wrapper's scope sets no attributes and publishes only atoms and empty dicts and lists (a
    collector nothing was added to yet): the subgraph can share it and empty it again after the run, rather
    than copy it before."""
    if scope.attributes:
        return False
    for value in scope.context.values():
        if type(value) in _COLLECTORS:
            if value:
                return False
        elif _kind(type(value)) != _ATOM:
            return False
    return True


def _emptied(scope: WrapperScope) -> WrapperScope | None:
    """After a run that shared a scope whose containers were empty: None when they still are; otherwise a new
    scope holding what the run added, in containers of its own, and the shared containers emptied again, so
    the input is as it was and a second run starts from the same empty collector."""
    for value in scope.context.values():
        if type(value) in _COLLECTORS and value:
            break
    else:
        return None
    context = {}
    for var, value in scope.context.items():
        if type(value) in _COLLECTORS and value:
            context[var] = copy.copy(value)
            value.clear()
        else:
            context[var] = value
    return WrapperScope(context, [])


def _flat_shared(value: tuple, memo: dict) -> list | None:
    """The tensors of a tuple that holds only tensors and atoms, none of them copied in this run (so `_fresh`
    would give it back as it is): `position_embeddings`, passed to every layer. None for any other tuple."""
    tensors = []
    for v in value:
        kind = _kind(type(v))
        if kind != _TENSOR_KIND and kind != _ATOM or memo and id(v) in memo:
            return None
        if kind == _TENSOR_KIND:
            tensors.append(v)
    return tensors


def _versions(shared: list) -> list:
    """The version counters of the tensors shared with the caller, in order (None for an inference tensor)."""
    try:
        return [t._version for _, t in shared]
    except RuntimeError:  # an inference tensor among them
        return [_version(t) for _, t in shared]


def _version(tensor: Any) -> int | None:
    """A tensor's version counter (bumped by every in-place write); None for an inference tensor, which has none."""
    try:
        return tensor._version
    except RuntimeError:
        return None


def _module_at(model: Any, path: str) -> Any:
    """The module at a dotted path now, or None (`get_submodule` without its checks: this runs per subgraph)."""
    module = model
    for part in path.split("."):
        module = module._modules.get(part)
        if module is None:
            return None
    return module


def _pack(value: Any, layout: bool = False) -> Any:
    """A value as it may travel through llm-compressor's cache, which rebuilds dicts as plain dicts; with `layout`,
    its strided views with their layout (emit/layout.py)."""
    kind = _kind(type(value))
    if kind <= _TENSOR_KIND:
        return laid_out(value) if layout and kind == _TENSOR_KIND else value
    if kind == _TUPLE:
        items = [_pack(v, layout) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else tuple(items)
    if kind == _LIST:
        return [_pack(v, layout) for v in value]
    if kind == _DICT:
        return {k: _pack(v, layout) for k, v in value.items()}
    if isinstance(value, dict):  # a mapping of another type (a ModelOutput)
        cls = type(value)
        return Packed(cls.__module__, cls.__qualname__, {k: _pack(v, layout) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        cls = type(value)
        return Packed(cls.__module__, cls.__qualname__, {k: _pack(v, layout) for k, v in zip(value._fields, value)})
    return value


def _unpack(value: Any) -> Any:
    kind = _kind(type(value))
    if kind <= _TENSOR_KIND:
        return value
    if kind >= _STATE:  # an object: only a Packed or Strided one is rebuilt, and a Held one unwrapped
        if type(value) is Held:
            return value.value
        return value.rebuild() if type(value) is Packed or type(value) is Strided else value
    # a container with nothing packed in it is given back as it came (the copying that follows decides
    # whether the subgraph gets a copy)
    if kind == _TUPLE:
        items = [_unpack(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else tuple(items)
    if kind == _LIST:
        items = [_unpack(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if kind == _DICT:
        for v in value.values():
            if _kind(type(v)) > _TENSOR_KIND:
                break
        else:  # atoms and tensors only (a keyword dict): nothing to rebuild
            return value
        items = {k: _unpack(v) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, (Packed, Strided)):
        return value.rebuild()
    return value


# What each type of value is to the copying below, decided once per type (these run for every value of
# every subgraph run): atoms are never copied (immutable values, modules, configs, types, callables),
# tensors are shared or cloned, containers are walked, anything else is copied as an object.
_ATOM, _TENSOR_KIND, _TUPLE, _FROZENSET, _LIST, _DICT, _SET, _STATE, _SCOPE, _OBJECT = range(1, 11)
_ATOMS: tuple = ()


def _atom_types() -> tuple:
    global _ATOMS
    if not _ATOMS:
        import enum
        import types

        import torch
        from transformers import PretrainedConfig

        _ATOMS = (type(None), bool, int, float, complex, str, bytes, range, slice, type, enum.Enum, Unbound,
                  contextvars.ContextVar, torch.dtype, torch.device, torch.Size, torch.nn.Module,
                  PretrainedConfig, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)
    return _ATOMS


_KINDS_KEPT = 4096  # types whose kind is kept; a program that makes types without end starts the dict again


class _Kinds(dict):
    """The kind of values of each exact type, decided at its first value (a type's kind never changes); kept
    in a plain dict, read for every value of every subgraph run."""

    def __missing__(self, cls: type) -> int:
        tensor = _TENSOR[0] or _tensor_type()
        if issubclass(cls, tensor):
            kind = _TENSOR_KIND
        elif issubclass(cls, _atom_types()):
            kind = _ATOM
        else:
            kind = {tuple: _TUPLE, frozenset: _FROZENSET, list: _LIST, CopiedOnRead: _LIST, dict: _DICT, set: _SET,
                    WrapperState: _STATE, EnteredState: _STATE, WrapperScope: _SCOPE}.get(cls, _OBJECT)
        if len(self) >= _KINDS_KEPT:
            self.clear()
        self[cls] = kind
        return kind


_kind: Callable[[type], int] = _Kinds().__getitem__
"""The kind of values of this exact type."""


def _is_atom(value: Any) -> bool:
    """Values a subgraph never copies: immutable ones, tensors, modules, configs, types and callables."""
    return (_kind(type(value))) <= _TENSOR_KIND


def _untouched(value: Any, memo: dict, depth: int = 4) -> bool:
    """Whether a value is made of atoms, tensors and plain containers none of which was copied in this run
    (so it holds no object of the copies): it can be passed as it is."""
    kind = _kind(type(value))
    if kind == _ATOM:
        return True
    if id(value) in memo or depth == 0:
        return False
    if kind == _TENSOR_KIND:
        return True
    if kind == _TUPLE or kind == _LIST or kind == _FROZENSET or kind == _SET:
        return all(_untouched(v, memo, depth - 1) for v in value)
    if kind == _DICT:
        return not value or all(_untouched(v, memo, depth - 1) for v in value.values())
    return False


@functools.lru_cache(maxsize=1024)
def _plain_object(cls: type) -> bool:
    """Whether copy.copy copies an instance of this class by its `__dict__` alone: a Python class with no
    copy or pickle hooks of its own, no slots (an empty `__slots__`, as abc.ABC has, holds none), built by
    object.__new__."""
    return (cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
            and getattr(cls, "__copy__", None) is None and getattr(cls, "__getstate__", None) in (None, object.__getstate__)
            and getattr(cls, "__setstate__", None) is None and cls.__new__ is object.__new__
            and not any(vars(c).get("__slots__") for c in cls.__mro__[:-1]) and "__dict__" in dir(cls))


def _fresh(value: Any, memo: dict, held: bool = False) -> Any:
    """A copy of the containers and plain objects in `value`, sharing its modules and configs.

    Tensors passed as such, or in tuples, are shared (or given the copy already made of them);
    tensors held by a list, a dict or an object are cloned, since model code updates those in
    place (a recurrent state, a cache). A tuple none of whose items is copied is kept as it is.
    One memo per subgraph run keeps two names for one object two names for one copy."""
    kind = _kind(type(value))
    if kind == _ATOM or kind == _STATE:  # a WrapperState is never written (wrapper_exit passes a copy of its keywords),
        # an EnteredState once, where its `with` is first entered: every later subgraph checks against that
        return value
    key = id(value)
    if kind == _TENSOR_KIND:
        if not held:
            return memo.get(key, value)
        if key not in memo:  # a tensor kept in a list, dict or object may be written in place
            memo[key] = value.clone()
        return memo[key]
    if key in memo:
        return memo[key]
    if kind == _TUPLE or kind == _FROZENSET:
        items = [_fresh(v, memo, held) for v in value]
        # nothing in it copied: the tuple itself is kept (it can't change), so it is given back as it came
        out: Any = value if all(a is b for a, b in zip(items, value)) else type(value)(items)
        memo[key] = out
        return out
    if kind == _LIST:
        out = memo[key] = []
        out.extend(_fresh(v, memo, True) for v in value)
        return out
    if kind == _DICT:
        out = memo[key] = {}
        out.update((k, _fresh(v, memo, True)) for k, v in value.items())
        return out
    if kind == _SET:
        out = memo[key] = {_fresh(v, memo, True) for v in value}
        return out
    if kind == _SCOPE and not value.attributes:  # what a wrapper publishes may be added to (a collector)
        out = memo[key] = WrapperScope({}, [])
        out.context.update((var, _fresh(v, memo, True)) for var, v in value.context.items())
        return out
    try:
        if _plain_object(type(value)):  # what copy.copy does for it, without its generic protocol
            out = object.__new__(type(value))
            out.__dict__.update(value.__dict__)
        else:
            out = copy.copy(value)
    except Exception:  # an object that can't be copied is shared
        out = value
    memo[key] = out
    if out is not value and hasattr(out, "__dict__") and not isinstance(value, dict):
        attributes = vars(out)
        for k, v in vars(value).items():
            kind = _kind(type(v))
            if kind == _ATOM:  # an atom is the very object copy.copy put there
                continue
            if kind == _LIST and id(v) not in memo and _RUNNING not in memo and eligible(v, _plain_item):
                memo[id(v)] = CopiedOnRead(v, functools.partial(_fresh, memo=memo, held=True))
            attributes[k] = fresh = _fresh(v, memo, True)
            if type(fresh) is CopiedOnRead:
                memo.setdefault(_OPENED, []).append((out, k, fresh))
    return out


_OPENED, _RUNNING = "opened", "running"
"""The keys of a run's memo that are not ids: (owner, attribute, list) of each `CopiedOnRead` given to an
object copied in the run; and, once its code runs, that it runs (an item copied on read, or anything copied
after, is copied whole: a list opened then could be reached only through one the code may keep)."""


def _plain_item(cls: type) -> bool:
    """Items a list may hold to be copied on read: plain Python objects (see staticexec.emit.onread)."""
    return _kind(cls) == _OBJECT and _plain_object(cls)


def _close(memo: dict) -> None:
    """After a run: each `CopiedOnRead` stops copying, and its owners hold a plain list of its items.

    A list the code kept elsewhere (an alias of its owner, an iterator, an output, a frame held by an
    exception) copies every item and stays where it is, so both names hold one list; so does one that the
    copies made for such a list reach, until no more are found. Only then does each list take the copies
    made through other names, so an item two lists hold is one copy in both. No list is opened after the
    run starts (`_RUNNING`): what is copied from then on is copied whole."""
    alone = object()
    base = sys.getrefcount(alone)  # what a local and getrefcount's argument count, on this interpreter
    lists: dict = {}  # id -> [list, its owners that hold it, kept]
    for owner, name, lazy in memo.pop(_OPENED):
        lists.setdefault(id(lazy), [lazy, [], False])[1].append((owner, name))
    del lazy
    for entry in lists.values():
        entry[1] = [(o, n) for o, n in entry[1] if vars(o).get(n) is entry[0]]
    found = True
    while found:
        found = False
        for entry in lists.values():
            if entry[2]:
                continue
            lazy = entry[0]
            # besides a local's count: the memo's entry, `entry`, its owners' attributes, and what copies made
            # for a kept list (owners registered again under _OPENED) hold
            if sys.getrefcount(lazy) > base + 2 + len(entry[1]):
                entry[2] = found = True
                lazy.copy_all()
            del lazy
    memo.pop(_OPENED, None)
    for lazy, owners, kept in lists.values():
        source = lazy.source
        plain = lazy.close(memo)
        memo[id(source)] = lazy if kept else plain
        if not kept:
            for owner, name in owners:
                vars(owner)[name] = plain


def _as_cached(value: Any, clone: bool = False) -> Any:
    """What llm-compressor's IntermediatesCache gives back for a value it stored: containers and
    dataclasses rebuilt, dict subclasses as plain dicts, anything else as it is. With `clone`, the
    tensors are copies too (a snapshot to compare with later)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone() if clone else value
    if isinstance(value, list):
        return [_as_cached(v, clone) for v in value]
    if isinstance(value, tuple):
        return tuple(_as_cached(v, clone) for v in value)
    if isinstance(value, dict):
        return {k: _as_cached(v, clone) for k, v in value.items()}
    if dataclasses.is_dataclass(value):  # a dataclass type too, as the cache does
        return type(value)(**{f.name: _as_cached(getattr(value, f.name), clone) for f in dataclasses.fields(value)})
    return value


def run_chain(model: Any, subgraphs: list[Subgraph], inputs: dict,
              before: Callable[[Subgraph], None] | None = None, twice: bool = False,
              offloaded: bool = False) -> dict:
    """Run a chain as llm-compressor's sequential pipeline does; the last subgraph's outputs.

    Strict as its cache is: every input name must exist (from the inputs or an earlier
    subgraph), every consumed name must exist when it is deleted, and values are rebuilt
    between subgraphs as the cache rebuilds them. With `twice`, each subgraph runs a second
    time on the same inputs (the pipeline's calibration and propagation passes): both runs
    must give the same outputs and leave the inputs as they were. With `offloaded`, each fetch
    gives every tensor as a copy of its own, as the cache does when it offloads to another device
    than the model's (it moves each value back on its own: two names for one tensor come back as
    two tensors), and again for the second run; a held value (emit/shared.py) comes back as it is.
    """
    unknown = sorted(inputs.keys() - subgraphs[0].input_names) if subgraphs else []
    if unknown:  # the first subgraph takes every key of the sample it was emitted for
        raise ContractError(f"the inputs hold {unknown}, which no subgraph takes: the subgraphs were emitted for a "
                            "sample without it, and would run as if it were not given")
    values = {k: _as_cached(v) for k, v in inputs.items()}
    out: dict = {}
    for sg in subgraphs:
        if before is not None:
            before(sg)
        missing = sorted(n for n in sg.input_names - values.keys() if not sg.absent(n))
        if missing:
            raise ContractError(f"subgraph {sg.index} needs {missing}, which neither the inputs nor an earlier "
                                "subgraph provide")
        args = {k: _as_cached(values[k], clone=offloaded) for k in sg.input_names if k in values}
        if twice:
            kept = {k: _as_cached(v, clone=True) for k, v in args.items()}
            first = sg.forward(model, **args)
            _check_unchanged(sg, kept, args)
            if before is not None:
                before(sg)
            if offloaded:  # the pipeline fetches the inputs again for its second pass: copies again
                args = {k: _as_cached(values[k], clone=True) for k in sg.input_names if k in values}
        out = sg.forward(model, **args)
        if twice:
            _check_unchanged(sg, kept, args)
            differs = _differs(first, out)
            if differs:
                raise ContractError(f"subgraph {sg.index} gives other outputs when run twice on the same inputs: {differs}")
        values.update({k: _as_cached(v) for k, v in out.items()})
        for name in sg.consumed_names:
            if name not in values:
                if sg is subgraphs[-1] and sg.absent(name):  # the pipeline deletes nothing after the last one
                    continue
                raise ContractError(f"subgraph {sg.index} consumes {name!r}, which does not exist")
            del values[name]
    return {k: _unpack(v) for k, v in out.items()}


def _check_unchanged(sg: Subgraph, kept: dict, args: dict) -> None:
    for name, value in args.items():
        differs = _differs(kept[name], value, name)
        if differs:
            raise ContractError(f"subgraph {sg.index} changed its input {differs} in place: the pipeline's second "
                                "run of it, and any later subgraph, would see the changed value")


def _differs(a: Any, b: Any, where: str = "") -> str:
    """'' when two values are equal: tensors exactly, containers element by element."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
            and a.dtype == b.dtype and torch.equal(a, b)
        return "" if same else where or "a tensor"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return where or "a sequence"
        return next((d for d in (_differs(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b))) if d), "")
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return where or "a mapping"
        return next((d for d in (_differs(a[k], b[k], f"{where}[{k!r}]") for k in a) if d), "")
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and not isinstance(a, type):
        return _differs(vars(a), vars(b), where)
    return ""


def run_subgraphs(model: Any, subgraphs: list[Subgraph], inputs: dict) -> Any:
    """Run a chain; returns exactly what `model(**inputs)` returns."""
    return run_chain(model, subgraphs, inputs)["forward_output"]
