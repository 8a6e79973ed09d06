"""Inspect the model instance before emitting: does it run the code the plan was made from?

The emitter inlines the forward of the root and of every module between it and the targets, so
whatever the instance adds around those forwards would silently not run in the subgraphs:

- forward hooks on the root, forward pre-hooks (also with kwargs, and accelerate's `_hf_hook`)
  on the root or an ancestor of a target, and global module hooks (accelerate's CPU offload is
  honoured: its root
  hook only aligns devices, a no-op when everything runs on the sample's device, and the hooks
  that load offloaded weights sit on the modules that are called as modules; compressed-tensors'
  offloading, which llm-compressor's pipeline applies, is honoured when the sample is on the
  onload device);
- a `forward` set on the instance, or a class `forward` that is not the analysed one (replaced
  after the class was built, or wrapped by a class decorator).

Targets and the modules opaque code calls are called as modules, so their hooks do run; a hook
on a target is honoured exactly. The forward hooks of an ancestor are run by the subgraph that
ends its inlined forward, as torch would run them (they are looked up when the subgraph runs,
so hooks added later, such as transformers' output-capturing hooks, run too). Everything else
above is refused, naming the module path and the file and line of the hook or the replacing
function.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from staticexec.messages import InstanceHook, Message, Refused, ReplacedForward
from staticexec.analysis.plan import Plan
from staticexec.emit.modules import named_modules, outermost
from staticexec.emit.run import is_tripwire
from staticexec.emit.validate import relative

HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")


def inlined_modules(model: Any, targets: set[str]) -> list[tuple[str, Any]]:
    """The root and every module on a path from it to an outermost target (their forwards are inlined)."""
    paths = {""}
    listing = named_modules(model)
    for name, _ in outermost(listing, lambda m: type(m).__name__ in targets):
        parts = name.split(".")
        for i in range(len(parts)):
            paths.add(".".join(parts[:i]))
    return [(name, module) for name, module in listing if name in paths]


def accelerate_hooks(hook: Any) -> list[Any]:
    """The hooks inside accelerate's `_hf_hook` (a SequentialHook holds several)."""
    inner = getattr(hook, "hooks", None)
    return [h for sub in inner for h in accelerate_hooks(sub)] if isinstance(inner, (list, tuple)) else [hook]


def _honoured_accelerate_hook(hook: Any, model: Any, sample: Any) -> bool:
    """accelerate's CPU offload puts an AlignDevicesHook on the root that moves nothing of its own
    (no execution device, no weights) and returns the output on the input's device: skipping it is
    exact when every hooked module runs on the device the sample is on."""
    if type(hook).__name__ != "AlignDevicesHook" or not type(hook).__module__.startswith("accelerate"):
        return False
    if getattr(hook, "offload", True) or getattr(hook, "execution_device", None) is not None:
        return False
    devices = {str(t.device) for t in _tensors(sample)}
    if len(devices) > 1:
        return False
    for _, module in named_modules(model):
        for h in accelerate_hooks(getattr(module, "_hf_hook", None)) if getattr(module, "_hf_hook", None) is not None else []:
            device = getattr(h, "execution_device", None)
            if device is not None and devices and _device_name(device) not in devices:
                return False
    return True


def _honoured_offload_forward(module: Any, sample: Any) -> bool:
    """compressed-tensors' offloading (what llm-compressor's pipeline puts on every module) sets an
    instance `forward` that moves the call's tensors to the module's onload device, then calls the
    class's own forward. Skipping it is exact when the sample is on that device already."""
    func = getattr(vars(module)["forward"], "__func__", None)
    original = getattr(module, "_original_forward_func", None)
    code = getattr(func, "__code__", None)  # functools.wraps gave it the wrapped function's names
    if code is None or original is None or "compressed_tensors" not in code.co_filename.replace("-", "_"):
        return False
    if getattr(func, "__wrapped__", None) is not original or original is not type(module).forward:
        return False
    device = getattr(module._parameters, "onload_device", None)
    devices = {str(t.device) for t in _tensors(sample)}
    return device is None or not devices or devices == {_device_name(device)}


def _device_name(device: Any) -> str:
    import torch

    return str(torch.device(device)) if not isinstance(device, int) else f"cuda:{device}"


def _tensors(value: Any) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def instance_refusals(model: Any, plan: Plan, sample: Any = None) -> list[Message]:
    """The global and module hooks and replaced forwards that inlining the forwards would skip, one message each."""
    targets = set(plan.targets)
    analysed = _analysed_forwards(plan)
    out: list[Message] = []
    out += _global_hooks()
    for path, module in inlined_modules(model, targets):
        label = f"the model ({type(module).__name__})" if not path else f"{path} ({type(module).__name__})"
        for attr in HOOK_DICTS:
            if attr == "_forward_hooks" and path:  # run by the subgraph after the inlined forward (hooks_exit)
                continue
            for hook in getattr(module, attr, {}).values():
                if is_tripwire(hook):  # the target check of a chain emitted earlier, taken off when this one is armed
                    continue
                kind = "pre-hook" if "pre" in attr else "hook"
                out.append(InstanceHook(*_place(hook, module), f"a forward {kind} {_name(hook)} on {label}: "
                                        "its forward is inlined into the subgraphs, so the hook would not run"))
        hf_hook = getattr(module, "_hf_hook", None)
        for hook in accelerate_hooks(hf_hook) if hf_hook is not None else []:
            if not _honoured_accelerate_hook(hook, model, sample):
                out.append(InstanceHook(*_place(type(hook), module), f"accelerate's {type(hook).__name__} on {label}: "
                                        "its forward is inlined into the subgraphs, so the hook would not run"))
        if "forward" in vars(module) and hf_hook is None and not _honoured_offload_forward(module, sample) \
                and not _class_forward_bound(module):
            out.append(ReplacedForward(*_place(vars(module)["forward"], module),
                                       f"`forward` is set on the instance {label}, replacing {type(module).__name__}.forward"))
        expected = analysed.get(f"{type(module).__module__}:{type(module).__qualname__}")
        if expected is not None:
            running = _qualified(type(module).forward)
            if running is not None and running not in expected:
                out.append(ReplacedForward(*_place(type(module).forward, module),
                                           f"{type(module).__qualname__}.forward is {running}, not the analysed "
                                           f"{sorted(expected)[0]} (replaced or wrapped after the class was defined)"))
    return out


def _class_forward_bound(module: Any) -> bool:
    """Whether the instance's `forward` is its class's own forward bound to it (as a tool that patched
    `forward` and restored it leaves it): calling the module runs exactly what the class's would."""
    own = vars(module).get("forward")
    return getattr(own, "__self__", None) is module and getattr(own, "__func__", None) is type(module).forward


def check_instance(model: Any, plan: Plan, sample: Any = None) -> None:
    """Refuse a model instance that would not run the planned code: hooks, replaced forwards, stale files."""
    from staticexec.emit.imported import stale_source_refusals
    from staticexec.emit.validate import check_plan_is_for

    root = plan.function(plan.root)
    if root is not None and root.self_class:
        check_plan_is_for(root.self_class, model)
    refusals = instance_refusals(model, plan, sample) + stale_source_refusals(plan)
    if refusals:
        raise Refused(refusals)


def _analysed_forwards(plan: Plan) -> dict[str, set[str]]:
    """Class (`module:Class`) -> the forwards the plan analysed for instances of it."""
    out: dict[str, set[str]] = {}
    for fn in plan.functions.values():
        if not fn.function.endswith(".forward"):
            continue
        owner = fn.self_class or fn.function.rpartition(".")[0]
        out.setdefault(owner, set()).add(fn.function)
    return out


def _qualified(fn: Any) -> str | None:
    fn = inspect.unwrap(fn) if callable(fn) else fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    return f"{module}:{qualname}" if module and qualname else None


def _global_hooks() -> list[Message]:
    from torch.nn.modules import module as torch_module

    out: list[Message] = []
    for attr in ("_global_forward_pre_hooks", "_global_forward_hooks"):
        for hook in getattr(torch_module, attr, {}).values():
            out.append(InstanceHook(*_place(hook, None), f"a global module forward {'pre-hook' if 'pre' in attr else 'hook'} "
                                    f"{_name(hook)}: it would not run for the inlined root and ancestors"))
    return out


def _name(hook: Any) -> str:
    while isinstance(hook, functools.partial):
        hook = hook.func
    return getattr(hook, "__qualname__", type(hook).__name__)


def _place(obj: Any, module: Any) -> tuple[str, int]:
    """File and line of a hook or function (its definition); else of the module's class."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    for candidate in (obj, getattr(obj, "__func__", None), type(module) if module is not None else None):
        if candidate is None:
            continue
        try:
            target = inspect.unwrap(candidate) if callable(candidate) else candidate
            path = inspect.getsourcefile(target)
            _, line = inspect.getsourcelines(target)
        except (TypeError, OSError):
            continue
        if path:
            return relative(path), max(line, 1)
    return "", 0
