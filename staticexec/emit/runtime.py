"""What emitted subgraphs call at run time (the `_sx` name in their globals).

When a decorated forward is inlined, its wrapper does not run around the
body: the body is spread over several subgraphs. staticexec runs the *real*
decorator instead, the object the module built on import, in three parts,
so that nothing depends on one transformers release's internals:

- `wrapper_enter` calls the decorator's wrapper around a probe that stands
  for the function. The wrapper does everything it does before the call; the
  probe records the keywords it is passed, the context variables and the
  attributes of `self` and `self.config` that the wrapper changed, and stops
  the wrapper (its `finally` clauses run, so nothing stays changed).
  It gives two values: the state (where, and the keywords the wrapper was
  called with), needed only where the body ends, and the scope (the context
  variables and attributes), None when the wrapper set none.
- `wrapper_scope` re-applies the scope around every subgraph's part of the
  body, and undoes it after. Only the scope travels through the subgraphs of
  the body, so a wrapper that sets nothing costs them nothing.
- `wrapper_exit` calls the wrapper again, with the same keywords, around a
  stand-in that returns the body's result; what the body added to a container
  the wrapper published in a context variable (capture_outputs' collector) is
  moved into the container of this second call first.

Besides the decorator models it holds the checks of what emission decided from one sample, one
instance and one reading of the source, run again where the decision stood: `expect_branch` (the
branch taken), `expect_loop` (the items an unrolled loop runs over; `loop_slice` reads them where the
loop slices a ModuleList), `expect_code` (the function that runs is the one inlined), `reentered` (a
`with` item made before, entered again: reentry.py) and `expect_drained` (an unrolled generator expression
read to its end: drained.py); `hooks_enter` /
`hooks_exit`, the forward hooks of an inlined module run as torch would; and `call_target`, through which the
emitted code calls a target module whose class leaves `__call__` to torch, with the target check's `tripwire`
(the forward pre-hook on every watched module). Which decorators are modelled is analysis/decorators.py.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import itertools
import operator
from dataclasses import dataclass
from typing import Any, Callable

from staticexec.emit.checks import CHECKS
from staticexec.emit.reentry import EnteredState, ManagerMismatch, own_attributes, reentered  # noqa: F401 (`_sx.reentered`)
from staticexec.emit.drained import Drained, GeneratorMismatch, expect_drained  # noqa: F401 (`_sx.Drained`)


ENTERED: contextvars.ContextVar = contextvars.ContextVar("staticexec_entered_targets", default=None)
"""The watched target modules entered while a subgraph runs (a list, None outside a checked run)."""


def tripwire(module: Any, args: Any) -> None:
    """The target check's forward pre-hook on every watched module: records it as entered."""
    entered = ENTERED.get()
    if entered is not None:
        entered.append(module)


def has_tripwire(module: Any) -> bool:
    """Whether the target check's pre-hook is on the module."""
    return any(hook is tripwire for hook in module._forward_pre_hooks.values())


@functools.lru_cache(maxsize=1)
def _torch_machinery() -> tuple:
    """torch's module module, `Module.__call__`, `Module._call_impl` and the tracing-state query, looked up once."""
    import torch
    from torch.nn.modules import module as torch_module

    return torch_module, torch_module.Module.__call__, torch_module.Module._call_impl, torch._C._get_tracing_state


def called_by_torch(module: Any) -> bool:
    """Whether calling the module runs torch's own `Module.__call__` (its hook dispatch), not one of its class:
    only such a target is called through `call_target`."""
    return type(module).__call__ is _torch_machinery()[1]


def call_target(module: Any, *args: Any, **kwargs: Any) -> Any:
    """`module(*args, **kwargs)` for a target module the subgraph's code calls.

    When the only hook torch would run for it is the target check's tripwire (no other hook on it, no global
    hook, not compiled or traced, `__call__` torch's own), this runs the tripwire and then the forward as
    torch's call does without hooks: the same effect, without torch's per-call hook dispatch. Otherwise it
    is the plain call."""
    torch_module, module_call, call_impl, tracing = _torch_machinery()
    cls = type(module)
    hooks = module._forward_pre_hooks
    if (cls.__call__ is module_call and len(hooks) == 1 and not module._forward_hooks and not module._backward_hooks
            and not module._backward_pre_hooks and module._compiled_call_impl is None
            and not module._forward_pre_hooks_with_kwargs):  # as `called_by_torch`: one with its own `__call__` is called as it is
        if (cls._call_impl is call_impl and next(iter(hooks.values())) is tripwire
                and not (torch_module._global_forward_pre_hooks or torch_module._global_forward_hooks
                         or torch_module._global_backward_pre_hooks or torch_module._global_backward_hooks)
                and not tracing()):
            entered = ENTERED.get()
            if entered is not None:
                entered.append(module)
            return module.forward(*args, **kwargs)
    return module(*args, **kwargs)


class DecoratorMismatch(RuntimeError):
    """A decorator's wrapper does not behave as the model of docs/decorators.md requires."""


class _Suspend(BaseException):
    """Raised by the probe to stop a wrapper at its call of the function (not caught by `except Exception`)."""


_ABSENT = object()


@functools.lru_cache(maxsize=4096)
def _signature(fn: Callable) -> inspect.Signature:
    """A function's signature, read once (a wrapper runs at every subgraph chain's start and end)."""
    return inspect.signature(fn)


def _stand_in(fn: Callable, body: Callable) -> Callable:
    body.__signature__ = _signature(fn)  # type: ignore[attr-defined]
    body.__name__ = fn.__name__
    body.__qualname__ = fn.__qualname__
    return body


def method_wrapper(class_decorator: Callable, name: str) -> Callable:
    """A function decorator that does to a function what `class_decorator` does to a class's method `name`:
    the class decorator applied to a bare class holding the function, the class's `name` taken back (the
    function itself when the decorator leaves it)."""

    def decorate(fn: Callable) -> Callable:
        holder = type(f"{name}_holder", (), {name: fn})
        made = class_decorator(holder)
        return (made if isinstance(made, type) else holder).__dict__.get(name, fn)

    return decorate


def _call(wrapped: Callable, self: Any, kw: dict) -> Any:
    return wrapped(self, **kw) if self is not None else wrapped(**kw)


@functools.lru_cache(maxsize=1024)
def _decorated(decorator: Callable, fn: Callable) -> tuple[Callable, list]:
    """The decorator's wrapper around a stand-in for `fn`, made once per decorator and function (as the model's
    own wrapper is made once, at import), and the stack of bodies the stand-in runs: the last one pushed."""
    bodies: list = []

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return bodies[-1](*args, **kwargs)

    return decorator(_stand_in(fn, stand_in)), bodies


def made_wrapper(decorator: Callable, fn: Callable) -> Callable:
    """The wrapper the decorator makes around a stand-in for `fn`: what `_through` runs for it."""
    try:
        return _decorated(decorator, fn)[0]
    except TypeError:  # a decorator that can't be a cache key
        return decorator(_stand_in(fn, lambda *args, **kwargs: None))


def _through(decorator: Callable, fn: Callable, body: Callable, self: Any, kw: dict) -> Any:
    """Call the decorator's wrapper with `body` standing for the function."""
    try:
        wrapped, bodies = _decorated(decorator, fn)
    except TypeError:  # a decorator that can't be a cache key: its wrapper is made for this call
        return _call(decorator(_stand_in(fn, body)), self, kw)
    bodies.append(body)
    try:
        return _call(wrapped, self, kw)
    finally:
        bodies.pop()


def _watched(self: Any) -> list:
    """The attribute dicts a wrapper may change for the length of the call, with their objects: `self`'s and
    its config's."""
    out = []
    for obj in (self, getattr(self, "config", None)):
        attrs = own_attributes(obj) if obj is not None else None
        if attrs is not None and all(obj is not o for o, _ in out):
            out.append((obj, attrs))
    return out


@dataclass
class WrapperState:
    """How a wrapper was called, kept for the subgraph where the body ends (never written after)."""

    where: str
    passed: dict  # the keywords the wrapper was called with


@dataclass
class WrapperScope:
    """What a wrapper set for the length of its call, re-applied around each subgraph's part of the body."""

    context: dict  # context variable -> the value the wrapper set
    attributes: list  # (object, attribute, value or _ABSENT) the wrapper set or deleted


def _run_to_call(self: Any, kw: dict, decorator: Callable, fn: Callable, where: str) -> tuple[dict, dict, list]:
    """Run the real wrapper up to its call of the function; the keywords, context and attributes it had then."""
    watched = _watched(self)
    before = [dict(attrs) for _, attrs in watched]
    context_before = contextvars.copy_context()
    seen: list = []

    def probe(*args: Any, **kwargs: Any) -> Any:
        context = contextvars.copy_context()
        changed = {v: context[v] for v in context if context_before.get(v, _ABSENT) is not context[v]}
        attributes = []
        for (obj, now), old in zip(watched, before):
            if (len(now) == len(old) and all(map(operator.is_, old.values(), now.values()))
                    and all(map(operator.eq, old, now))):
                continue  # the same keys, in the same order, each holding the same object
            keys = [key for key, value in now.items() if old.get(key, _ABSENT) is not value]
            if len(now) - len(keys) != len(old):  # some attribute deleted
                keys += [key for key in old if key not in now]
            attributes += [(obj, key, now.get(key, _ABSENT)) for key in sorted(keys)]
        seen.append((args, kwargs, changed, attributes))
        raise _Suspend

    try:
        _through(decorator, fn, probe, self, kw)
    except _Suspend:
        pass
    if len(seen) != 1:
        raise DecoratorMismatch(f"{where}: the decorator's wrapper did not call the function exactly once")
    args, kwargs, context, attributes = seen[0]
    if args[1 if self is not None else 0 :]:
        raise DecoratorMismatch(f"{where}: the decorator's wrapper passes positional arguments to the function")
    return kwargs, context, attributes


def wrapper_enter(self: Any, kw: dict, decorator: Callable, fn: Callable,
                  where: str) -> tuple[WrapperState, WrapperScope | None]:
    """Run the wrapper's part before the call; `kw` becomes the keywords it passes to the function."""
    passed = dict(kw)
    kwargs, context, attributes = _run_to_call(self, kw, decorator, fn, where)
    kw.clear()
    kw.update(kwargs)
    return WrapperState(where, passed), WrapperScope(context, attributes) if context or attributes else None


def predict_keywords(self: Any, kw: dict, decorator: Callable, fn: Callable, where: str) -> dict:
    """The keywords the wrapper passes on, for what emission knows about the call's keywords.

    Values emission does not know exactly travel as opaque placeholders and come back as they were.
    """
    held = {k: _Held(v) if not _plain(v) else v for k, v in kw.items()}
    kwargs, _, _ = _run_to_call(self, held, decorator, fn, where)
    return {k: v.value if isinstance(v, _Held) else v for k, v in kwargs.items()}


class _Held:
    """A keyword value emission knows only abstractly (present, of some shape, unknown)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


def _plain(value: object) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and all(_plain(v) for v in value)


class wrapper_scope:
    """Re-apply what wrappers set for the call while a subgraph runs part of the body: the scopes of the
    wrappers, outermost first, each None when its wrapper set nothing."""

    __slots__ = ("scopes", "undo")

    def __init__(self, *scopes: WrapperScope | None) -> None:
        self.scopes = scopes
        self.undo: list | None = None

    def __enter__(self) -> None:
        undo = None
        for scope in self.scopes:
            if scope is not None:
                if undo is None:
                    undo = []
                for obj, key, value in scope.attributes:
                    attrs = own_attributes(obj)
                    undo.append((None, obj, key, attrs.get(key, _ABSENT)))
                    _put(attrs, key, value)
                for var, value in scope.context.items():
                    undo.append((var, var.set(value), None, None))
        self.undo = undo

    def __exit__(self, *exc: object) -> None:
        if self.undo:
            for var, token_or_obj, key, value in reversed(self.undo):
                if var is not None:
                    var.reset(token_or_obj)
                else:
                    _put(own_attributes(token_or_obj), key, value)


def _put(attrs: dict, key: str, value: object) -> None:
    if value is _ABSENT:
        attrs.pop(key, None)
    else:
        attrs[key] = value


def wrapper_exit(self: Any, state: WrapperState, scope: WrapperScope | None, output: Any, decorator: Callable,
                 fn: Callable) -> Any:
    """The wrapper's result: the real wrapper called again, with the same keywords, around the body's result."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        context = contextvars.copy_context()
        for var, kept in (scope.context.items() if scope is not None else ()):
            fresh = context.get(var, _ABSENT)
            if fresh is not kept and fresh is not _ABSENT:
                _transfer(fresh, kept, state.where)
        return output

    return _through(decorator, fn, stand_in, self, dict(state.passed))


def _transfer(fresh: Any, kept: Any, where: str) -> None:
    """Give the container a wrapper published for this call what the body added to the first one."""
    if isinstance(fresh, dict) and isinstance(kept, dict):
        fresh.clear()
        fresh.update(kept)
    elif isinstance(fresh, list) and isinstance(kept, list):
        fresh[:] = kept
    elif kept is not None:
        raise DecoratorMismatch(f"{where}: the decorator keeps a {type(kept).__name__} in a context variable, "
                                "which staticexec can't carry between subgraphs")


class AutogradContext:
    """Stands in for the `ctx` of an inlined `torch.autograd.Function.forward`.

    Subgraphs run the function's forward directly (calibration runs without
    gradients), so what the forward stores for its backward is kept and unused.
    """

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep the tensors as `saved_tensors`, as torch's context does."""
        self.saved_tensors = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        """Do nothing: no backward runs."""
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Do nothing: no backward runs."""
        pass

    def set_materialize_grads(self, value: bool) -> None:
        """Do nothing: no backward runs."""
        pass


class BranchMismatch(RuntimeError):
    """The inputs take another branch than the one the subgraphs were emitted for."""


def expect_branch(taken: bool, expected: bool, where: str, test: str) -> None:
    """Run-time check of a branch decided from the sample (its inputs, shapes, the config) at emit time."""
    if taken != expected and CHECKS.get():
        raise BranchMismatch(
            f"{where}: `{test}` is {taken} for these inputs but was {expected} for the sample the subgraphs "
            "were emitted for; emit them again for inputs like these"
        )


class StateWrite(RuntimeError):
    """An augmented assignment that would change in place state that outlives the subgraph."""


def expect_rebinding(value: Any, method: str, where: str, code: str) -> None:
    """Run-time check before `name op= value` on a name the code bound to state that outlives the subgraph (`acc =
    self.acc`): the value has no in-place form of the operator (an int, a float), so the assignment rebinds the name.
    One that has it (a tensor, a list) would be changed in place, and again by the pipeline's second run."""
    if getattr(type(value), method, None) is not None and CHECKS.get():
        raise StateWrite(f"{where}: `{code}` changes in place the {type(value).__name__} its name holds, which the code "
                         "took from state that outlives the subgraph (the model, a module or a module-level value): "
                         "the pipeline runs each subgraph twice, and the second run would change it again")


class ModuleMismatch(RuntimeError):
    """A name that holds a module holds another one than the subgraphs were emitted for."""


def expect_module(value: Any, expected: Any, where: str, name: str, path: str) -> None:
    """Run-time check of a module emission took a name (or a call's callee) to be: the subgraphs after the one
    that binds the name take it from its path, and an inlined call runs the forward of the module at its path
    (`layer = self.layers[i]`, `self.blocks[i](h)`, `norm = self.norm_b if strong else self.norm`)."""
    if value is not expected and CHECKS.get():
        raise ModuleMismatch(f"{where}: `{name}` holds another {type(value).__name__} here than `{path}`, the module "
                             "the subgraphs were emitted for")


class ModuleRecorder:
    """A global module forward pre-hook, on while a subgraph runs for the first time: every module entered,
    in order, so that `Subgraph.submodules` lists the modules its opaque code and helpers call too."""

    def __init__(self) -> None:
        self.entered: list = []

    def __call__(self, module: Any, args: Any) -> None:
        self.entered.append(module)


class HookMismatch(RuntimeError):
    """A module whose forward is inlined into the subgraphs has hooks that can't be run as torch would."""


def _forward_hooks(module: Any) -> list:
    """(hook, with_kwargs) for the forward hooks torch would run after `module`'s forward, in its order."""
    from torch.nn.modules import module as torch_module

    glob = torch_module._global_forward_hooks
    return ([(h, k in torch_module._global_forward_hooks_with_kwargs) for k, h in glob.items()]
            + [(h, k in module._forward_hooks_with_kwargs) for k, h in module._forward_hooks.items()])


def hooks_enter(module: Any, kw: dict, n_positional: int, where: str) -> tuple | None:
    """At the start of an inlined module call: the call's arguments when forward hooks will need them.

    `kw` is the call's arguments by parameter name, the first `n_positional` of them passed by
    position (as torch gives them to a hook in `args`), the rest by keyword.

    Hooks may be added after the subgraphs were emitted (transformers adds its output-capturing
    hooks on the first call that asks for hidden states), so they are looked up when the
    subgraph runs. A forward pre-hook, which may change the arguments the inlined body already
    took, is refused."""
    from torch.nn.modules import module as torch_module

    if module._forward_pre_hooks or any(not isinstance(h, ModuleRecorder)
                                        for h in torch_module._global_forward_pre_hooks.values()):
        raise HookMismatch(f"{where}: {type(module).__name__} has a forward pre-hook, but its forward is inlined "
                           "into the subgraphs, so the hook would not run")
    if not _forward_hooks(module):
        return None
    values = list(kw.items())
    return tuple(v for _, v in values[:n_positional]), dict(values[n_positional:])


def hooks_exit(module: Any, held: tuple | None, result: Any, where: str) -> Any:
    """At the end of an inlined module call: its forward hooks run on the result, as `module(...)` runs them."""
    hooks = _forward_hooks(module)
    if not hooks:
        return result
    if held is None:
        raise HookMismatch(f"{where}: a forward hook was added to {type(module).__name__} while its inlined forward "
                           "ran, so the call's arguments were not kept for it")
    args, kwargs = held
    for hook, with_kwargs in hooks:
        out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
        if out is not None:
            result = out
    return result


class LoopMismatch(RuntimeError):
    """An unrolled loop's iterable gives other items (modules, order, count) than it gave at emission."""


@dataclass(frozen=True)
class LoopItems:
    """What an unrolled loop ran over at emission: the items, and how each is named in a message."""

    items: tuple
    labels: tuple[str, ...]
    complete: bool  # the loop ran to its end (no `break` decided at emission)


def loop_slice(container: Any, lower: Any, upper: Any, step: Any) -> Any:
    """`container[lower:upper:step]`, the iterable of an unrolled loop written as a slice, for its check.

    A torch `ModuleList` (of that very class, its `__getitem__` torch's own) slices into a new `ModuleList` of
    the same modules, registering each one again: the items are read from its modules instead, in the same
    order. Any other container is sliced as the forward slices it."""
    module_list, getitem = _module_list()
    if type(container) is module_list and module_list.__getitem__ is getitem:
        return list(container._modules.values())[lower:upper:step]
    return container[lower:upper:step]


@functools.lru_cache(maxsize=1)
def _module_list() -> tuple:
    """torch's `ModuleList` and its own `__getitem__`, looked up once."""
    from torch.nn import ModuleList

    return ModuleList, ModuleList.__getitem__


def expect_loop(iterable: Any, expected: LoopItems, where: str, code: str) -> None:
    """Run-time check at the start of an unrolled loop: its iterable, evaluated where the loop stood,
    gives exactly the items the subgraphs were unrolled for (modules by identity, in order, as many).

    The iterable is evaluated once, as the forward does; a loop that stopped at a `break` takes only
    as many items as the forward took."""
    if not CHECKS.get():
        return
    iterator = iter(iterable)
    if expected.complete:
        got = list(iterator)
    else:
        got = [item for _, item in zip(range(len(expected.items)), iterator)]
    if len(got) != len(expected.items):
        raise LoopMismatch(f"{where}: `{code}` gives {len(got)} items for these inputs, but gave "
                           f"{len(expected.items)} ({_listed(expected.labels)}) when the subgraphs were emitted; "
                           "emit them again for inputs and a model like these")
    if all(map(operator.is_, got, expected.items)):  # the very objects (modules): nothing more to compare
        return
    for index, (item, want, label) in enumerate(zip(got, expected.items, expected.labels)):
        if not _same_item(item, want):
            raise LoopMismatch(f"{where}: `{code}` gives {describe_item(item)} as item {index} for these inputs, but gave "
                               f"{label} when the subgraphs were emitted; emit them again for inputs and a model "
                               "like these")


_NO_ITEM = object()


def expect_loop_item(iterable: Any, index: int, expected: LoopItems, where: str, code: str) -> None:
    """Run-time check where an unrolled loop takes a later item, for an iterable that can change as Python reads it
    (emit/liveloop.py): evaluated again, it still gives the item the subgraphs were unrolled for at `index`; after
    the last item of a loop that ran to its end, it gives no more."""
    if not CHECKS.get():
        return
    got = next(itertools.islice(iter(iterable), index, None), _NO_ITEM)
    if index < len(expected.items):
        if got is not _NO_ITEM and _same_item(got, expected.items[index]):
            return
        raise LoopMismatch(f"{where}: where the loop takes item {index}, `{code}` evaluated again gives "
                           f"{'no item' if got is _NO_ITEM else describe_item(got)} there, but the subgraphs were "
                           f"unrolled for {expected.labels[index]}: what the loop reads changed while it ran (Python "
                           "reads the iterable one item at a time); emit them again for inputs and a model like these")
    if got is not _NO_ITEM and expected.complete:  # (a loop the forward left at a `break` takes no more)
        raise LoopMismatch(f"{where}: after the {index} items the subgraphs were unrolled for, `{code}` evaluated again "
                           f"gives one more ({describe_item(got)}): what the loop reads grew while it ran, and Python "
                           "would run the body for it too; emit them again for inputs and a model like these")


def _same_item(item: Any, want: Any) -> bool:
    if type(want) in (tuple, list):
        return type(item) in (tuple, list) and len(item) == len(want) and all(map(_same_item, item, want))
    if item is want:
        return True
    if want is None or isinstance(want, (bool, int, float, str, bytes)):
        return type(item) is type(want) and item == want
    return False


def describe_item(item: Any) -> str:
    """A loop item as a message names it: a value by its repr, an object by its type."""
    if type(item) in (tuple, list):
        return "(" + ", ".join(describe_item(i) for i in item) + ")"
    if item is None or isinstance(item, (bool, int, float, str)):
        return repr(item)
    return f"a {type(item).__name__}"


def _listed(labels: tuple[str, ...]) -> str:
    return ", ".join(labels[:4]) + (f", ... {labels[-1]}" if len(labels) > 5 else (f", {labels[4]}" if len(labels) == 5 else ""))


class CodeMismatch(RuntimeError):
    """The function that runs is not the one whose code was inlined into the subgraphs."""


def running_forward(module: Any) -> Any:
    """The function `module(...)` runs, looked up as torch does: the instance's `forward`, then the class's."""
    own = module.__dict__.get("forward")
    if own is not None:
        return getattr(own, "__func__", own)
    return type(module).forward


def expect_forward(module: Any, expected: Any, where: str) -> None:
    """Run-time check at the start of an inlined module call: `module(...)` would run the inlined forward."""
    if running_forward(module) is not expected and CHECKS.get():
        _code_mismatch(running_forward(module), expected, where)


def expect_context(callee: Any, expected: Any, where: str, code: str) -> Any:
    """Run-time check where a subgraph enters again a `with` around target calls: the item's callee, evaluated anew,
    is the context manager the subgraphs were emitted for (emit/withitems.py). Returns it, for the call."""
    if callee is not expected and CHECKS.get():
        raise CodeMismatch(f"{where}: `{code}` gives {getattr(callee, '__qualname__', type(callee).__name__)} where a "
                           f"subgraph enters the `with` again, but gave {getattr(expected, '__qualname__', expected)} "
                           "when the subgraphs were emitted: Python evaluates a `with` item once, where the `with` "
                           "starts, and each subgraph of its body evaluates it anew; emit them again for a forward "
                           "that keeps it")
    return callee


def expect_method(obj: Any, name: str, expected: Any, where: str) -> None:
    """Run-time check at the start of an inlined method call: `obj.name(...)` would run the inlined function."""
    running = obj.__dict__.get(name) if hasattr(obj, "__dict__") else None
    if running is None:
        running = inspect.getattr_static(type(obj), name, None)
        running = getattr(running, "__func__", running)
    if running is not expected and CHECKS.get():
        _code_mismatch(running, expected, where)


def expect_super(obj: Any, owner: type, name: str, expected: Any, where: str) -> None:
    """Run-time check at the start of an inlined `super().name(...)` call in a method of `owner`."""
    running = getattr(super(owner, obj), name, None)
    running = getattr(running, "__func__", running)
    if running is not expected and CHECKS.get():
        _code_mismatch(running, expected, where)


def expect_global(namespace: dict, name: str, expected: Any, where: str) -> None:
    """Run-time check at the start of an inlined function call: the module-level name still holds it."""
    if namespace.get(name) is not expected and CHECKS.get():
        _code_mismatch(namespace.get(name), expected, where)


def _code_mismatch(running: Any, expected: Any, where: str) -> None:
    code = getattr(getattr(running, "__func__", running), "__code__", None)
    place = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    raise CodeMismatch(f"{where}: {getattr(running, '__qualname__', type(running).__name__)}{place} runs here, but "
                       f"{getattr(expected, '__qualname__', expected)} was inlined when the subgraphs were emitted; "
                       "emit them again for the code that runs now")
