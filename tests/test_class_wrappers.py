"""Class decorators that wrap a method (kernels' `use_kernelized_func` on transformers' attention classes).

The analysis records them with the method (`class_decorators`), the emitter runs each in parts outside the
method's own decorators, and the context it sets is set again in every subgraph that runs part of the
method. Here a stand-in for kernels (installed as `kernels` for the test) wraps `forward` the way the real
one does: `functools.wraps`, a context variable set for the length of the call, which the body's kernel
function reads. transformers' own classes under the real kernels run in `make test-release RELEASE=5.25.0`.
"""

from __future__ import annotations

import functools
import sys
import types

import pytest
import torch

import staticexec
from staticexec.analysis.source import ClassRef
from staticexec.emit import runtime
from staticexec.messages import Refused

KERNELS = '''
import contextvars
import functools

ACTIVE = contextvars.ContextVar("ACTIVE", default=None)


def use_kernelized_func(*functions):
    def decorator(cls):
        inner = cls.forward

        @functools.wraps(inner)
        def new_forward(self, *args, **kwargs):
            token = ACTIVE.set(3.0)
            try:
                return inner(self, *args, **kwargs)
            finally:
                ACTIVE.reset(token)

        cls.forward = new_forward
        return cls

    return decorator
'''

MODEL = '''
import torch
from kernels import ACTIVE, use_kernelized_func
from transformers.utils.deprecation import deprecate_kwarg


def route(x):
    scale = ACTIVE.get()
    return x * (scale if scale is not None else 1.0)


@use_kernelized_func(route)
class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)
        self.o = torch.nn.Linear(8, 8)

    def project(self, h):
        return self.q(h)

    @deprecate_kwarg("hidden", version="99.0.0", new_name="h")
    def forward(self, h):
        q = self.project(h)
        q = route(q)
        return self.o(torch.tanh(q))


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, h):
        return h + self.attn(h)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer() for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


def _import(tmp_path, monkeypatch, name: str, source: str) -> types.ModuleType:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    module = __import__(name)
    monkeypatch.setitem(sys.modules, name, module)
    return module


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    fake = types.ModuleType("kernels")
    exec(compile(KERNELS, "kernels.py", "exec"), fake.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, "kernels", fake)
    return fake


def test_a_class_wrapper_runs_in_parts_around_the_method_split_at_its_linears(kernels, tmp_path, monkeypatch):
    module = _import(tmp_path, monkeypatch, "class_wrapped_model", MODEL)
    torch.manual_seed(0)
    model = module.Model().eval()
    sample = {"x": torch.randn(2, 3, 8)}
    plan = staticexec.analyse(ClassRef("class_wrapped_model", "Model"), ["Linear"])
    attention = plan.function("class_wrapped_model:Attention.forward")
    assert attention.class_decorators == ("use_kernelized_func(route)",)
    assert attention.decorators == ('deprecate_kwarg("hidden", version="99.0.0", new_name="h")',)
    assert plan.function("class_wrapped_model:Attention.project").class_decorators == ()  # it wraps forward only
    chain = staticexec.subgraphs(model, sample, ["Linear"])
    assert [len(sg.targets) for sg in chain] == [0, 1, 1, 1, 1]
    assert any("class_decorator__" in sg.source for sg in chain)
    with torch.no_grad():
        expected = model(**sample)
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), expected)
        # the body reads what the wrapper set: without it, route() would scale by 1
        assert not torch.equal(expected, _without_the_wrapper(model, sample))


def _without_the_wrapper(model, sample):
    inner = type(model.layers[0].attn).forward.__wrapped__
    h = sample["x"]
    for layer in model.layers:
        h = h + inner(layer.attn, h)
    return h


def test_a_class_decorator_named_like_kernels_but_defined_here_is_refused(tmp_path, monkeypatch):
    source = MODEL.replace("from kernels import ACTIVE, use_kernelized_func",
                           "from kernels_lookalike import ACTIVE, use_kernelized_func")
    lookalike = types.ModuleType("kernels_lookalike")
    exec(compile(KERNELS, "kernels_lookalike.py", "exec"), lookalike.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, "kernels_lookalike", lookalike)
    module = _import(tmp_path, monkeypatch, "lookalike_wrapped_model", source)
    model = module.Model().eval()
    with pytest.raises(Refused, match="not the use_kernelized_func of transformers or kernels, only named like it") as info:
        staticexec.subgraphs(model, {"x": torch.randn(2, 3, 8)}, ["Linear"])
    line = source.splitlines().index("@use_kernelized_func(route)") + 1
    assert [(m.path, m.line) for m in info.value.messages] == [("lookalike_wrapped_model.py", line)]


def test_method_wrapper_gives_the_method_as_the_class_decorator_leaves_it():
    def bare(self):
        return 1

    def registers(cls):
        return cls

    def wraps(cls):
        inner = cls.forward

        @functools.wraps(inner)
        def forward(self):
            return inner(self) + 1

        cls.forward = forward
        return cls

    assert runtime.method_wrapper(registers, "forward")(bare) is bare
    wrapped = runtime.method_wrapper(wraps, "forward")(bare)
    assert wrapped is not bare and wrapped.__wrapped__ is bare and wrapped(None) == 2


def test_a_class_decorator_changed_since_the_plan_is_refused(kernels, tmp_path, monkeypatch):
    from dataclasses import replace

    from staticexec.emit.classwrap import class_wrappers

    module = _import(tmp_path, monkeypatch, "changed_wrapped_model", MODEL)
    plan = staticexec.analyse(ClassRef("changed_wrapped_model", "Model"), ["Linear"])
    planned = plan.function("changed_wrapped_model:Attention.forward")
    assert [e for e, _ in class_wrappers(planned, module.__dict__)] == ["use_kernelized_func(route)"]
    stale = replace(planned, class_decorators=("use_kernelized_func(other)",))
    with pytest.raises(Refused, match=r"its source now has @use_kernelized_func\(route\): make the plan again"):
        class_wrappers(stale, module.__dict__)
    without = replace(planned, class_decorators=())  # a plan made before the class had it
    with pytest.raises(Refused, match=r"the plan has none on the class of Attention.forward where its source now"):
        class_wrappers(without, module.__dict__)


def test_a_forward_replaced_by_another_wrapper_is_refused(kernels, tmp_path, monkeypatch):
    """One `functools.wraps` layer where the class decorator's is expected, but not the one it makes: refused,
    not run as if it were the decorator's."""
    module = _import(tmp_path, monkeypatch, "replaced_wrapped_model", MODEL)
    inner = module.Attention.forward.__wrapped__

    @functools.wraps(inner)
    def doubled(self, *args, **kwargs):
        return inner(self, *args, **kwargs) * 2

    monkeypatch.setattr(module.Attention, "forward", doubled)
    model = module.Model().eval()
    with pytest.raises(Refused, match="but a wrapper that runs is .*doubled defined here, not one its decorators make"):
        staticexec.subgraphs(model, {"x": torch.randn(2, 3, 8)}, ["Linear"])


def test_a_class_decorator_that_leaves_the_method_is_left_out(tmp_path, monkeypatch):
    """transformers' fallback without kernels: the decorator returns the class as it was; the plan records it,
    emission leaves it out, and the split is exact."""
    fallback = types.ModuleType("kernels")
    exec(compile(KERNELS.replace("        cls.forward = new_forward\n", ""), "kernels.py", "exec"), fallback.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, "kernels", fallback)
    module = _import(tmp_path, monkeypatch, "unwrapped_model", MODEL)
    torch.manual_seed(0)
    model = module.Model().eval()
    sample = {"x": torch.randn(2, 3, 8)}
    plan = staticexec.analyse(ClassRef("unwrapped_model", "Model"), ["Linear"])
    assert plan.function("unwrapped_model:Attention.forward").class_decorators == ("use_kernelized_func(route)",)
    chain = staticexec.subgraphs(model, sample, ["Linear"])
    assert not any("class_decorator__" in sg.source for sg in chain)
    with torch.no_grad():
        assert torch.equal(staticexec.run_subgraphs(model, chain, sample), model(**sample))


def test_transformers_attention_under_the_real_kernels_routes_as_its_own_forward():
    """Where kernels is installed (transformers 5.25 on): each attention's own kernel function is called
    by the split exactly as by the model's forward, and the outputs are equal."""
    pytest.importorskip("kernels", reason="kernels is not installed: transformers' attention is not wrapped here")
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import sample_inputs

    model = build_tiny_model("LlamaForCausalLM")
    first = model.model.layers[0].self_attn
    if getattr(type(first).forward, "__wrapped__", None) is None or not hasattr(first, "_kernel_funcs"):
        pytest.skip("this release's LlamaAttention is not wrapped by use_kernelized_func")
    calls: list[int] = []
    for index, layer in enumerate(model.model.layers):
        for kernel in layer.self_attn._kernel_funcs.values():
            kernel.register_forward_pre_hook(lambda module, args, i=index: calls.append(i))
    sample = sample_inputs(model)
    with torch.no_grad():
        expected = model(**sample)
        own = list(calls)
        chain = staticexec.subgraphs(model, sample, ["Linear"])
        assert any("class_decorator__" in sg.source for sg in chain)
        calls.clear()
        got = staticexec.run_subgraphs(model, chain, sample)
    assert own == list(range(len(model.model.layers))) and calls == own
    assert torch.equal(got.logits, expected.logits)
