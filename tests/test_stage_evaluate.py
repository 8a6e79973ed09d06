"""Stage evaluate (staticexec/emit/evaluate.py, emit's evaluator), through `evaluate`, `evaluate_condition`,
`truth` and `sample_value`.

Expressions are evaluated as emission evaluates them: `self` is a real (tiny) module, sample
inputs stand as `sample_value` makes them (plain values as they are, tensors only present,
with their shape). Each case is an expression and the value it is decided to, or the reason
it is Undecidable. A decided value must be Python's own on the real sample.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers.utils import is_torchdynamo_compiling

from staticexec.emit.evaluate import (
    PRESENT,
    UNKNOWN,
    Undecidable,
    evaluate,
    evaluate_condition,
    is_present,
    sample_value,
    truth,
)


class Config:
    use_cache = True
    layer_types = ["full", "sliding", "full"]
    window = None


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = Config()
        self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        self.blocks = nn.ModuleDict({"a": nn.Identity(), "b": nn.Identity()})
        self.register_buffer("scale", torch.ones(2))

    def get_layers(self):
        """An accessor: its body only returns an expression without calls."""
        return self.layers

    def layer_list(self):
        return list(self.layers)

    def layer(self, i):
        return self.layers[i]


MODEL = Model()
SAMPLE = {"x": torch.ones(2, 3), "mask": None, "flag": True, "n": 3, "ids": [1, 2],
          "zero": torch.zeros(1), "one": torch.ones(1)}
NAMES = {**{k: sample_value(v) for k, v in SAMPLE.items()}, "self": MODEL, "opts": {"a": 1}}
GLOBALS = {"K": 4, "torch": torch, "is_torchdynamo_compiling": is_torchdynamo_compiling}


def python(expr: str) -> object:
    """What Python gives for the expression on the real sample."""
    return eval(expr, dict(GLOBALS), {**SAMPLE, "self": MODEL, "opts": {"a": 1}})


DECIDED = [
    ("self.config.use_cache", True),
    ("self.config.layer_types[1]", "sliding"),
    ("self.config.layer_types.count('full')", 2),
    ("len(self.layers)", 3),
    ("list(self.blocks.keys())", ["a", "b"]),
    ("self.layers[2] is self.get_layers()[-1]", True),
    ("self.layer(1) is self.layers[1]", True),  # an accessor given arguments: its return expression, read here
    ("self.layer(i=2) is self.layers[2]", True),
    ("type(self).__name__", "Model"),
    ("getattr(self.config, 'missing', 7)", 7),
    ("hasattr(self.config, 'layer_types')", True),
    ("mask is None", True),
    ("x is not None and mask is not None", False),
    ("mask is not None and x.sum() > 0", False),  # decided before the tensor test is reached
    ("x.sum() > 0 and flag is None", False),  # a later operand fixes the truth of `and`
    ("mask or flag", True),
    ("1 if flag else x.sum()", 1),  # the side not taken is not evaluated
    ("-n", -3),
    ("K // 3 + n * 2 - 1", 6),
    ("1 < n < 3", False),
    ("K in (1, 4) and 'ful' not in self.config.layer_types", True),
    ("opts.get('b', 2) + opts['a']", 3),
    ("list(enumerate(self.config.layer_types))[1]", (1, "sliding")),
    ("isinstance(x, int)", False),
    ("is_torchdynamo_compiling()", False),
]


@pytest.mark.parametrize("expr, value", DECIDED, ids=[e for e, _ in DECIDED])
def test_decided(expr, value):
    assert evaluate(expr, NAMES, GLOBALS) == value
    assert python(expr) == value


def test_an_accessor_method_is_called():
    assert evaluate("self.get_layers()", NAMES, GLOBALS) is MODEL.layers


def test_a_present_tensor_input_is_its_own_value():
    assert is_present(evaluate("x", NAMES, GLOBALS))
    assert evaluate("x if flag else mask", NAMES, GLOBALS) is NAMES["x"]


UNDECIDABLE = [
    ("x.sum() > 0", "a call"),
    ("not x", "truth value of a tensor input"),
    ("1 if x else 2", "truth value of a tensor input"),
    ("x.shape[0] == 2", "attribute of a run-time value"),  # shapes only in conditions
    ("x.size(0)", "a call"),
    ("x.dtype", "attribute of a run-time value"),
    ("x[0]", "indexing a run-time value"),
    ("len(x)", "run-time value passed to a call"),
    ("x * 2", "arithmetic on a run-time value"),
    ("-x", "operator on a run-time value"),
    ("x == 1", "comparison of run-time values"),
    ("self.scale + 1", "arithmetic on a run-time value"),  # a buffer: a tensor, known or not
    ("n << 1", "arithmetic"),
    ("unknown_name", "is not known"),
    ("self.missing", "AttributeError"),
    ("self.config.layer_types[7]", "IndexError"),
    ("self.layer_list()", "a call"),  # not an accessor: its body calls
    ("self.layer(x)", "a run-time value passed to a call"),  # an accessor given a value known only when it runs
    ("{**opts}", "dict display with \\*\\* unpacking"),
    ("[t for t in ids]", "not evaluated statically"),
    ("opts.get(", "can't parse"),
    ("self.config.get('window')", "a method of a Config"),
]


@pytest.mark.parametrize("expr, reason", UNDECIDABLE, ids=[e for e, _ in UNDECIDABLE])
def test_undecidable(expr, reason):
    with pytest.raises(Undecidable, match=reason):
        evaluate(expr, NAMES, GLOBALS)


def test_a_safe_builtin_shadowed_by_a_local_is_not_called():
    with pytest.raises(Undecidable, match="a call"):
        evaluate("len(ids)", {**NAMES, "len": lambda v: 0}, GLOBALS)


def test_an_environment_question_must_be_transformers_own():
    with pytest.raises(Undecidable, match="not transformers' own"):
        evaluate("is_torchdynamo_compiling()", NAMES, {"is_torchdynamo_compiling": lambda: False})


CONDITIONS = [
    ("x.shape[0] == 2", True, True),
    ("x.size(1)", 3, True),
    ("x.size()", (2, 3), True),
    ("x.dim() == x.ndim", True, True),
    ("x.numel()", 6, True),
    ("x is not None and x.size(0) > 0", True, True),
    ("mask is not None and mask.size(0) > 0", False, False),  # short-circuits before any shape
    ("flag and n > 2", True, False),
]


@pytest.mark.parametrize("expr, value, read_shape", CONDITIONS, ids=[e for e, _, _ in CONDITIONS])
def test_conditions_may_read_sample_shapes(expr, value, read_shape):
    assert evaluate_condition(expr, NAMES, GLOBALS) == (value, read_shape)
    assert python(expr) == value


def test_shapes_of_a_present_value_without_one_are_undecidable():
    with pytest.raises(Undecidable, match="a call"):
        evaluate_condition("x.size(0) > 0", {"x": PRESENT}, {})


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, None),
        (3, 3),
        ("text", "text"),
        ((1, None), (1, None)),
        ([1.5, True], [1.5, True]),
        ([1, torch.zeros(1)], "<present at run time>"),
        (torch.zeros(2, 3), "<present at run time, shape [2, 3]>"),
        ({"a": 1}, "<present at run time>"),
        (object(), "<present at run time>"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_sample_value(value, expected):
    known = sample_value(value)
    assert (repr(known) if is_present(known) else known) == expected


@pytest.mark.parametrize(
    "value, expected",
    [(0, False), ([], False), ("a", True), (torch.ones(1), True), (MODEL.layers, True)],
    ids=["zero", "empty-list", "string", "one-element-tensor", "module-list"],
)
def test_truth(value, expected):
    assert truth(value) is expected


@pytest.mark.parametrize("value", [UNKNOWN, PRESENT, sample_value(torch.ones(1)), torch.ones(2)],
                         ids=["unknown", "present", "shaped", "two-element-tensor"])
def test_truth_of_a_run_time_value_is_undecidable(value):
    with pytest.raises(Undecidable):
        truth(value)


# ----- decided values are Python's --------------------------------------------------------

WRONG = [
    pytest.param("isinstance(x, torch.Tensor)", id="isinstance-of-a-tensor-input"),
    pytest.param("isinstance(x, (list, tuple))", id="isinstance-of-a-tensor-input-false"),
    pytest.param("hasattr(x, 'dtype')", id="hasattr-of-a-tensor-input"),
    pytest.param("type(x) is torch.Tensor", id="type-of-a-tensor-input"),
    pytest.param("callable(x)", id="callable-of-a-tensor-input"),
    pytest.param("one or flag", id="or-value-after-an-undecided-operand", marks=pytest.mark.xfail(
        strict=True, reason="`or` skips an undecided operand and returns a later truthy one: its truth is "
        "right, its value is not (Python gives the tensor when it is truthy), and `name = <expr>` is learned")),
    pytest.param("zero and self.config.window + 1 > 0", id="error-in-an-operand-python-never-reaches"),
    pytest.param("flag or self.config.window + 1 > 0", id="short-circuit-keeps-errors-away"),
    pytest.param("getattr(x, 'shape')", id="getattr-shape-of-a-tensor-input"),
]


@pytest.mark.parametrize("expr", WRONG)
def test_never_a_wrong_answer(expr):
    """The evaluator decides an expression to Python's value on the sample, or says it can't."""
    try:
        got = evaluate(expr, NAMES, GLOBALS)
    except Undecidable:
        return
    want = python(expr)
    assert not isinstance(want, torch.Tensor), f"decided to {got!r}, where Python gives the tensor"
    assert got == want
