"""Classify a condition that guards reaching code: static, input or dynamic.

- static: config and module attributes only (`self.config.use_x`,
  `self.training`), decided when subgraphs are emitted;
- input: which inputs are present (`pixel_values is not None`, a bool
  argument), decided per sample input;
- dynamic: tensor values (`x.sum() > 0`): a target behind it is refused.

It serves the plan stage (plan.py), which records each condition's class; emit then
decides the static and input ones (evaluate.py).
"""

from __future__ import annotations

import libcst as cst

# transformers' questions about the running environment: pure, and fixed for a process, so a condition
# on them is decided when subgraphs are emitted (`synced_gpus = is_deepspeed_zero3_enabled() or ...`)
ENVIRONMENT_CALLS = {
    "is_deepspeed_zero3_enabled", "is_fsdp_managed_module", "is_torchdynamo_compiling", "is_torchdynamo_exporting",
    "is_tracing", "is_accelerate_available", "is_peft_available", "is_torch_available", "is_scipy_available",
    "is_kernels_available", "is_flash_attn_available", "is_torch_cuda_available", "is_torch_greater_or_equal",
    "is_mambapy_available", "is_flash_attention_requested",
}
ORDER = {"static": 0, "input": 1, "dynamic": 2}
MAPPING_METHODS = {"get", "keys", "values", "items"}
STATIC_CALLS = {"isinstance", "hasattr", "getattr", "callable", "len", "bool", "type", "issubclass"}


def worst(*classes: str) -> str:
    """The least decidable of some condition classes (static < input < dynamic); static when none is given."""
    return max(classes, key=ORDER.__getitem__) if classes else "static"


class ConditionClassifier:
    """Classifies expressions of one function; `locals` maps local names to their bound expressions."""

    def __init__(self, self_name: str | None, params: list[str], bindings: dict[str, list]) -> None:
        self.self_name = self_name
        self.params = set(params)
        self.bindings = bindings
        self._names: dict[str, str] = {}

    def classify(self, node: cst.BaseExpression) -> str:
        """The class of an expression: `static`, `input` or `dynamic`."""
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
            return "static"
        if isinstance(node, cst.Name):
            return self._name(node.value)
        if isinstance(node, cst.Attribute):
            base = self.classify(node.value)
            return base if base != "input" else "dynamic"
        if isinstance(node, cst.Subscript):
            parts = [self.classify(node.value)]
            for el in node.slice:
                s = el.slice
                if isinstance(s, cst.Index):
                    parts.append(self.classify(s.value))
            c = worst(*parts)
            return c if c != "input" else "dynamic"
        if isinstance(node, cst.UnaryOperation):
            return self.classify(node.expression)
        if isinstance(node, cst.NamedExpr):  # the value it binds (a binding in reaching code is refused: planner.py)
            return self.classify(node.value)
        if isinstance(node, cst.BooleanOperation):
            left, right = self.classify(node.left), self.classify(node.right)
            if (left == "dynamic") != (right == "dynamic"):
                # `pixel_values is not None and (ids == k).any()`: decided per input when the left side
                # short-circuits; emission refuses when it does not
                return "input"
            return worst(left, right)
        if isinstance(node, cst.Comparison):
            parts = [self.classify(node.left)] + [self.classify(c.comparator) for c in node.comparisons]
            if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons):
                return worst(*parts)
            c = worst(*parts)
            return c if c != "input" else "dynamic"
        if isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Name) and f.value in ENVIRONMENT_CALLS:
                return "static"
            if isinstance(f, cst.Attribute) and f.attr.value in MAPPING_METHODS:
                # `mm_encoder_outputs.get("image")` on a dict of inputs: decided with the dict when emitting
                # (on a tensor the emitter refuses)
                return worst(self.classify(f.value), *(self.classify(a.value) for a in node.args))
            if isinstance(f, cst.Name) and f.value in STATIC_CALLS:
                args = [self.classify(a.value) for a in node.args]
                c = worst(*args)
                if f.value == "isinstance" and c == "input":
                    return "input"
                return c if c != "input" else "dynamic"
            if isinstance(f, cst.Name) and not node.args and f.value not in self.params and not self.bindings.get(f.value):
                # a module-level function given nothing (a global flag such as get_calibrate_all_experts_flag()):
                # no tensor of the forward decides it; it is read off the sample's run and checked again when
                # the subgraphs run, as a condition on the inputs is
                return "input"
            return "dynamic"
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return worst(*(self.classify(e.value) for e in node.elements))
        if isinstance(node, cst.IfExp):
            # the test decides which side counts: a static or input test keeps the whole decidable
            return worst(self.classify(node.test), self.classify(node.body), self.classify(node.orelse))
        if isinstance(node, cst.BinaryOperation):
            c = worst(self.classify(node.left), self.classify(node.right))
            return c if c != "input" else "dynamic"
        return "dynamic"

    def _name(self, name: str) -> str:
        if name in ("True", "False", "None"):
            return "static"
        if name == self.self_name:
            return "static"
        if name in self.params:
            return "input"
        if name in self._names:
            return self._names[name]
        bound = self.bindings.get(name)
        if not bound:
            return "static"  # a global constant or builtin
        self._names[name] = "input"  # recursion guard
        parts = []
        for kind, value, _extra in bound:
            if kind == "expr":
                parts.append(self.classify(value))
            elif kind == "iter":
                parts.append(self.iterable(value))
            elif kind == "item":
                inner_kind, inner_value, _ = value
                parts.append(self.classify(inner_value) if inner_kind == "expr" else self.iterable(inner_value))
            else:
                parts.append("dynamic")
        # a name bound both to decidable and to tensor values may still be decided where it is used
        if "dynamic" in parts and any(p != "dynamic" for p in parts):
            result = "input"
        else:
            result = worst(*parts)
        self._names[name] = result
        return result

    def iterable(self, node: cst.BaseExpression) -> str:
        """A loop over config values or module containers binds static values (once the loop is unrolled)."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in (
            "enumerate", "zip", "range", "reversed", "list", "tuple",
        ):
            return worst(*(self.iterable(a.value) for a in node.args))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "values", "items", "keys", "children",
        ):
            return self.iterable(node.func.value)
        c = self.classify(node)
        return c
