"""The decorators staticexec models on inlined forwards (docs/decorators.md is the table).

When a decorated forward is inlined, its wrapper does not run; the emitter
writes explicit calls to the helpers below around the inlined body instead.
Each helper reproduces what transformers' wrapper does, step for step, on
the call's keyword dict `kw` (positional arguments are named first):

- `enter(self, kw)` runs before the parameters are bound and returns a state;
- `exit(self, state, output)` runs on the function's result;
- `scope(state)` is a context manager re-entered by every subgraph that runs
  part of the body (capture_outputs' output collector).

A decorator not in the table makes the plan refuse.

Emitted subgraphs reach this module as their run-time helpers; besides the
decorator models it holds `expect_branch`, the check of a branch that was
decided from the shape of a sample tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst


@dataclass(frozen=True)
class DecoratorModel:
    name: str
    enter: str | None  # helper names in this module
    exit: str | None
    scope: str | None = None
    probe: bool = False  # the enter helper runs the real decorator object on a probe function


MODELS: dict[str, DecoratorModel] = {
    "auto_docstring": DecoratorModel("auto_docstring", None, None),
    "add_start_docstrings_to_model_forward": DecoratorModel("add_start_docstrings_to_model_forward", None, None),
    "replace_return_docstrings": DecoratorModel("replace_return_docstrings", None, None),
    # a static method is a plain function once looked up on its class
    "staticmethod": DecoratorModel("staticmethod", None, None),
    "can_return_tuple": DecoratorModel("can_return_tuple", "can_return_tuple_enter", "can_return_tuple_exit"),
    "merge_with_config_defaults": DecoratorModel(
        "merge_with_config_defaults", "merge_with_config_defaults_enter", "merge_with_config_defaults_exit"
    ),
    "check_model_inputs": DecoratorModel(
        "check_model_inputs", "merge_with_config_defaults_enter", "merge_with_config_defaults_exit"
    ),
    "capture_outputs": DecoratorModel("capture_outputs", "capture_outputs_enter", "capture_outputs_exit", "collecting"),
    # decorators that only rewrite the call's keywords: run the real decorator on a probe
    "deprecate_kwarg": DecoratorModel("deprecate_kwarg", "kwargs_decorator_enter", None, probe=True),
    "accepts_precomputed_kwargs": DecoratorModel("accepts_precomputed_kwargs", "kwargs_decorator_enter", None, probe=True),
    "select_hidden_states": DecoratorModel("select_hidden_states", "kwargs_decorator_enter", None, probe=True),
    # rewrites the keywords, then only transforms the result: the real decorator runs on a probe before
    # the body and again around a stand-in that returns the body's result
    "filter_output_hidden_states": DecoratorModel("filter_output_hidden_states", "replay_enter", "replay_exit", probe=True),
}


def _decorator_name(dec: cst.Decorator) -> tuple[str, cst.Call | None]:
    node = dec.decorator
    call = None
    if isinstance(node, cst.Call):
        call = node
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value, call
    if isinstance(node, cst.Name):
        return node.value, call
    return "<expression>", call


def decorator_names(fn: cst.FunctionDef) -> list[str]:
    """Decorator names, outermost first; keyword arguments are kept as `name(key=value)`."""
    out = []
    for dec in fn.decorators:
        name, call = _decorator_name(dec)
        if call is not None and call.args:
            args = ", ".join(
                f"{a.keyword.value}={cst.Module([]).code_for_node(a.value)}" if a.keyword else cst.Module([]).code_for_node(a.value)
                for a in call.args
            )
            name = f"{name}({args})"
        out.append(name)
    return out


def base_name(decorator: str) -> str:
    return decorator.partition("(")[0]


def unsupported_decorators(names: list[str]) -> list[str]:
    return [n for n in names if base_name(n) not in MODELS]


def decorator_kwargs(decorator: str) -> dict[str, Any]:
    """Keyword arguments of a decorator call, for literal values (e.g. `tie_last_hidden_states=False`)."""
    import ast

    _, _, rest = decorator.partition("(")
    if not rest:
        return {}
    call = ast.parse(f"f({rest}", mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}


# ----- run-time helpers (called from emitted code) ----------------------------------------------


def _stand_in(fn: Callable, body: Callable) -> Callable:
    import inspect

    body.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    body.__name__ = fn.__name__
    body.__qualname__ = fn.__qualname__
    return body


def _call(wrapped: Callable, self: Any, kw: dict) -> Any:
    return wrapped(self, **kw) if self is not None else wrapped(**kw)


def kwargs_decorator_enter(self: Any, kw: dict, decorator: Callable, fn: Callable) -> None:
    """Rewrite the call's keywords exactly as a keywords-only decorator does.

    The real decorator object wraps a probe with the decorated function's
    signature; calling the probe returns the keywords the function would get.
    """
    rewritten = _call(decorator(_stand_in(fn, lambda *args, **kwargs: kwargs)), self, kw)
    kw.clear()
    kw.update(rewritten)


def replay_enter(self: Any, kw: dict, decorator: Callable, fn: Callable) -> tuple:
    """Keywords as the decorator passes them on; the state keeps the call's own for `replay_exit`."""
    passed = dict(kw)
    kwargs_decorator_enter(self, kw, decorator, fn)
    return passed, decorator, fn


def replay_exit(self: Any, state: tuple, output: Any) -> Any:
    """The decorator's result: the real decorator called again, around a stand-in returning `output`."""
    passed, decorator, fn = state
    return _call(decorator(_stand_in(fn, lambda *args, **kwargs: output)), self, passed)


def can_return_tuple_enter(self: Any, kw: dict) -> bool:
    return_dict = self.config.return_dict if hasattr(self, "config") else True
    passed = kw.pop("return_dict", return_dict)
    if passed is not None:
        return_dict = passed
    return return_dict


def can_return_tuple_exit(self: Any, return_dict: bool, output: Any) -> Any:
    if not return_dict and not isinstance(output, tuple):
        output = output.to_tuple()
    return output


_CONFIG_DEFAULTS = ("use_cache", "vision_feature_layer", "vision_feature_select_strategy", "vision_aspect_ratio")


def merge_with_config_defaults_enter(self: Any, kw: dict) -> tuple:
    """Fill `use_cache` & co. from the config when not passed; set `is_causal` on the config for the call."""
    for name in _CONFIG_DEFAULTS:
        value = kw.get(name)
        if value is None:
            value = getattr(self.config, name, None)
        if value is None:
            continue
        if name == "use_cache":
            if getattr(self, "gradient_checkpointing", False) and self.training and value:
                value = False
        elif name == "vision_feature_select_strategy" and value not in ("default", "full"):
            raise ValueError(f"`Unexpected select feature strategy: {value}. Please select from ['default', 'full'].")
        kw[name] = value
    is_causal = kw.get("is_causal", getattr(self.config, "is_causal", None))
    saved = None
    if is_causal is not None:
        in_config = hasattr(self.config, "is_causal")
        saved = (in_config, self.config.is_causal if in_config else None)
        self.config.is_causal = is_causal
        kw["is_causal"] = is_causal
    return (is_causal, saved)


def merge_with_config_defaults_exit(self: Any, state: tuple, output: Any) -> Any:
    is_causal, saved = state
    if is_causal is not None:
        in_config, value = saved
        if in_config:
            self.config.is_causal = value
        else:
            del self.config.is_causal
    return output


@dataclass
class CaptureState:
    return_dict: Any
    collected: dict
    tie_last_hidden_states: bool


def capture_outputs_enter(self: Any, kw: dict, tie_last_hidden_states: bool = True) -> CaptureState:
    from transformers.utils import output_capturing as oc

    return_dict = kw.pop("return_dict", getattr(self.config, "return_dict", True))
    flags = oc._CAN_RECORD_REGISTRY.get(self)
    keys = {f"output_{k}": kw.get(f"output_{k}", getattr(self.config, f"output_{k}", False)) for k in flags}
    if "cross_attentions" in flags:
        keys["output_cross_attentions"] = kw.get("output_attentions", getattr(self.config, "output_attentions", False))
    if "mask_decoder_attentions" in flags:
        keys["output_mask_decoder_attentions"] = kw.get(
            "output_attentions", getattr(self.config, "output_attentions", False)
        )
    collected = {k.replace("output_", ""): [] for k, v in keys.items() if v}
    selected = oc.selected_hidden_states(keys.get("output_hidden_states"))
    if selected is not None:
        collected["_hidden_states_layers"] = oc.resolve_hidden_states_indices(self, selected)
    if collected:
        oc.maybe_install_capturing_hooks(self)
    return CaptureState(return_dict, collected, tie_last_hidden_states)


class collecting:
    """Make the output collector of a capture_outputs call active while a subgraph runs part of its body."""

    __slots__ = ("collected", "token")
    _var = None

    def __init__(self, state: CaptureState) -> None:
        self.collected = state.collected
        if collecting._var is None:
            from transformers.utils.output_capturing import _active_collector

            collecting._var = _active_collector

    def __enter__(self) -> None:
        self.token = collecting._var.set(self.collected)

    def __exit__(self, *exc: object) -> None:
        collecting._var.reset(self.token)


def capture_outputs_exit(self: Any, state: CaptureState, outputs: Any) -> Any:
    collected = state.collected
    collected.pop("_hidden_states_layers", None)
    for key in collected:
        if key == "hidden_states":
            tie_last = getattr(self.config, "tie_last_hidden_states", None)
            tie_last = state.tie_last_hidden_states if tie_last is None else tie_last
            if not tie_last or not collected[key] or collected[key][-1] is None:
                pass
            elif hasattr(outputs, "vision_hidden_states"):
                collected[key] = collected[key][:-1]
                collected[key].append(outputs.vision_hidden_states)
            elif hasattr(outputs, "last_hidden_state"):
                collected[key] = collected[key][:-1]
                collected[key].append(outputs.last_hidden_state)
        outputs[key] = tuple(collected[key])
    if state.return_dict is False:
        outputs = outputs.to_tuple()
    return outputs


class AutogradContext:
    """Stands in for the `ctx` of an inlined `torch.autograd.Function.forward`.

    Subgraphs run the function's forward directly (calibration runs without
    gradients), so what the forward stores for its backward is kept and unused.
    """

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


HELPERS: dict[str, Callable] = {
    name: globals()[name]
    for model in MODELS.values()
    for name in (model.enter, model.exit, model.scope)
    if name
}


class BranchMismatch(RuntimeError):
    """The inputs take another branch than the one the subgraphs were emitted for."""


def expect_branch(taken: bool, expected: bool, where: str, test: str) -> None:
    """Run-time check of a branch decided from the sample's tensor shapes when the subgraphs were emitted."""
    if taken != expected:
        raise BranchMismatch(
            f"{where}: `{test}` is {taken} for these inputs but was {expected} for the sample the subgraphs "
            "were emitted for; emit them again for inputs of this shape"
        )
