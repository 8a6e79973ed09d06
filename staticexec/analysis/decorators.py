"""The decorators staticexec models on inlined forwards: the table (docs/decorators.md).

The names below are the decorators a plan accepts. An *inert* one has no behaviour at call time; a
*wrapper* is run for real around the inlined body, in parts, by emit/runtime.py; a *context* is a
context manager the body runs in (`torch.no_grad()`), entered around each subgraph's part of it. A reaching function
with any other decorator makes the plan refuse. The call graph and the plan read this table.

A class decorator may wrap a method too: `CLASS_WRAPPERS` names those the plan records for the methods
they wrap (`class_decorators`), run as wrappers outside the method's own. Emission reads the class's
decorators again (emit/classwrap.py), to check the plan against the source. Any other class decorator is
not recorded; if it replaced the method, the emission's check of the code that runs refuses
(emit/imported.py).
"""

from __future__ import annotations

import ast

import libcst as cst

INERT = "inert"
WRAPPER = "wrapper"
CONTEXT = "context"

MODELS: dict[str, str] = {
    "auto_docstring": INERT,
    "add_start_docstrings_to_model_forward": INERT,
    "replace_return_docstrings": INERT,
    # a static method is a plain function once looked up on its class
    "staticmethod": INERT,
    "can_return_tuple": WRAPPER,
    "merge_with_config_defaults": WRAPPER,
    "check_model_inputs": WRAPPER,
    "capture_outputs": WRAPPER,
    "deprecate_kwarg": WRAPPER,
    "accepts_precomputed_kwargs": WRAPPER,
    "select_hidden_states": WRAPPER,
    "filter_output_hidden_states": WRAPPER,
    # fires the accelerate hooks of named children before the body and after it (no-ops without them)
    "force_accelerate_hooks": WRAPPER,
    # torch.no_grad() as a decorator: the body runs with gradients off
    "no_grad": CONTEXT,
}

# class decorators that may replace methods with wrappers around them (functools.wraps), run in parts as a
# method's wrapper decorators are, by the methods they wrap: kernels' `use_kernelized_func` (a dependency of
# transformers from 5.25) wraps `forward` to route calls of kernel functions to the instance's own for the
# length of the call
CLASS_WRAPPERS: dict[str, tuple[str, ...]] = {"use_kernelized_func": ("forward",)}


def class_wrapper_names(node: ast.ClassDef, method: str) -> list[tuple[str, int]]:
    """The class's decorators that `CLASS_WRAPPERS` lists for `method`, outermost first: each one's source
    expression and line."""
    out = []
    for dec in node.decorator_list:
        func = dec.func if isinstance(dec, ast.Call) else dec
        # by a plain name, as `base_name` reads it
        if isinstance(func, ast.Name) and method in CLASS_WRAPPERS.get(func.id, ()):
            out.append((ast.unparse(dec), dec.lineno))
    return out


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
    """A decorator's name without its arguments."""
    return decorator.partition("(")[0]


def unsupported_decorators(names: list[str]) -> list[str]:
    """The decorators whose base name `MODELS` does not list: a reaching function with one is refused."""
    return [n for n in names if base_name(n) not in MODELS]
