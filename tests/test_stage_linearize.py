"""Stage test: a statement with several target calls taken apart in Python's evaluation order."""

from __future__ import annotations

import pytest

from staticexec.emit.linearize import CannotLinearize, evaluated_before, linearize


def _run(code: str, funcs: list[str]) -> list[tuple[str, int | None]]:
    return [(p.code.strip(), p.target) for p in linearize(code, funcs, "t")]


def test_an_mlp_line_becomes_one_statement_per_target_call_in_evaluation_order():
    got = _run("down = self.down(self.act(self.gate(x)) * self.up(x))", ["self.gate", "self.up", "self.down"])
    assert got == [
        ("t0 = self.gate(x)", "self.gate"),
        ("t1 = self.act(t0)", None),  # computed before up_proj, as Python does
        ("t2 = self.up(x)", "self.up"),
        ("t3 = t1 * t2", None),
        ("t4 = self.down(t3)", "self.down"),
        ("down = t4", None),
    ]


def test_what_follows_the_last_target_call_stays_in_the_statement():
    got = _run("return self.q(h).view(2, -1) + self.k(h).transpose(1, 2).float()", ["self.q", "self.k"])
    assert got == [("t0 = self.q(h)", "self.q"), ("t1 = t0.view(2, -1)", None), ("t2 = self.k(h)", "self.k"),
                   ("return t1 + t2.transpose(1, 2).float()", None)]


def test_a_lazy_expression_before_the_targets_is_one_value():
    got = _run("y = self.a(u if c else v) + self.b(w)", ["self.a", "self.b"])
    assert got[0] == ("t0 = u if c else v", None)


@pytest.mark.parametrize("code", [
    "y = self.a(x) if flag else self.b(x)",
    "y = self.a(x) and self.b(x)",
    "y = [self.a(x), *(self.b(h) for h in hs)]",
    "y = (lambda: self.a(x))() + self.b(x)",
])
def test_a_target_call_python_may_skip_or_delay_is_refused(code):
    with pytest.raises(CannotLinearize):
        linearize(code, ["self.a", "self.b"], "t")


def test_a_target_called_twice_in_the_statement_is_refused():
    with pytest.raises(CannotLinearize):
        linearize("y = self.a(self.a(x))", ["self.a", "self.b"], "t")


def test_a_callee_that_is_a_lookup_stays_whole_with_its_call():
    got = _run("return self.run(self.layers[i](h), i + 1)", ["self.layers[i]", "self.run"])
    assert got == [("t0 = self.layers[i](h)", "self.layers[i]"), ("t1 = i + 1", None),
                   ("t2 = self.run(t0, t1)", "self.run"), ("return t2", None)]


def test_a_callee_that_computes_is_taken_apart_before_its_arguments():
    got = _run("y = self.pick(k)(self.a(x))", ["self.pick(k)", "self.a"])
    assert got[0] == ("t0 = self.pick(k)", None)


@pytest.mark.parametrize("code, before", [
    ("h = self.config.scale * self.block(h)", "self.config"),
    ("h = torch.cat([self.scales['a'] * h, self.block(h)])", "self.scales"),
    ("h = f(g(x), self.block(h))", "g(x)"),
])
def test_what_python_computes_before_an_inlined_call_is_named(code, before):
    assert evaluated_before(code, "self.block") == before


@pytest.mark.parametrize("code", [
    "h = self.block(h)",
    "h = residual + self.block(h)",  # names are read where they are
    "out = self.block(x.to(dtype), mask=self.mask[0])",  # the call's own arguments: bound where its body starts
    "return -1 * self.block(h)",
    "h = self.block(h) * self.config.scale",  # after the call: read after, as Python does
    "h = self.other(h)",  # no call of it
])
def test_a_statement_with_nothing_computed_before_its_call_is_left_whole(code):
    assert evaluated_before(code, "self.block") is None
