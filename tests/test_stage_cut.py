"""Stage cut (staticexec/emit/cut.py), through `cut` and `build_subgraphs`, on hand-written steps.

A program is a list of steps as emit produces them: one statement (or a compound one) each,
a step that calls a target written `(code, module path)`. The tables give, per subgraph,
`inputs | outputs | consumed`, space-separated and sorted:

- an input marked `?` may arrive as UNBOUND (the subgraph deletes it first), one marked `!`
  is in `written_inputs` (the subgraph may change it in place, so it is copied);
- an output marked `?` is returned as UNBOUND where the subgraph did not bind it.

The last table runs the chain as llm-compressor's pipeline does (each subgraph twice, the
contract checked) and compares with the same steps run as one function.
"""

from __future__ import annotations

import ast
import re
import types

import pytest
import torch

from staticexec.emit.cut import Step, build_subgraphs, cut
from staticexec.emit.run import UNBOUND, run_chain, tripwires_off

OUTPUT = "out"


def steps(*items: str | tuple[str, str], modules: dict | None = None) -> list[Step]:
    """Steps from code strings; `(code, path)` calls the target at `path`."""
    out = []
    for item in items:
        code, target = (item, None) if isinstance(item, str) else item
        out.append(Step(code=code, origin="model.py:1", target=target, modules=dict(modules or {})))
    return out


def summary(sg) -> str:
    """`inputs | outputs | consumed` of a subgraph, in the notation of the module docstring."""
    maybe_in = set(re.findall(r"if _sx_type\((\w+)\) is Unbound:", sg.source))
    found = re.search(r"for _n in (\(.*?\))\}", sg.source)
    maybe_out = set(ast.literal_eval(found.group(1))) if found else set()
    inputs = " ".join(n + ("?" if n in maybe_in else "") + ("!" if n in sg.written_inputs else "")
                      for n in sorted(sg.input_names))
    outputs = " ".join(n + ("?" if n in maybe_out else "") for n in sorted(sg.output_names))
    return f"{inputs} | {outputs} | {' '.join(sorted(sg.consumed_names))}"


def chain(program: list[Step], inputs: list[str], per_subgraph: int = 1, globals_: dict | None = None) -> list:
    return build_subgraphs(program, inputs, OUTPUT, dict(globals_ or {}), "test", per_subgraph)


# ----- where the cuts fall ----------------------------------------------------------------

T = ("t = layer(t)", "layers.0")
O = "o = f(o)"


@pytest.mark.parametrize(
    "kinds, per_subgraph, sizes",
    [
        ("OTOTO", 1, [1, 2, 2]),
        ("OTOTO", 2, [1, 4]),
        ("OTTTO", 2, [1, 2, 2]),  # llm-compressor's partition: N consecutive targets, then the next piece
        ("OTOTOT", 3, [1, 5]),
        ("TTT", 1, [0, 1, 1, 1]),  # piece 0 runs what precedes the first target: nothing here
        ("OOO", 1, [3]),  # no target: one piece
        ("", 1, [0]),
        ("OTOOO", 1, [1, 4]),  # what follows the last target stays with it
    ],
    ids=lambda v: str(v),
)
def test_cut_points(kinds, per_subgraph, sizes):
    program = steps(*(T if k == "T" else O for k in kinds))
    pieces = cut(program, per_subgraph)
    assert [len(p.steps) for p in pieces] == sizes
    assert [s for p in pieces for s in p.steps] == program


def test_targets_per_subgraph_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        cut(steps(O, T), 0)


# ----- names between subgraphs -----------------------------------------------------------

NAME_CASES = [
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h)", "layers.0"), ("h = layer1(h)", "layers.1"), "out = norm(h)"),
        ["x"], ["x | h | x", "h | h | ", "h | out | h"], id="straight-chain"),
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h, mask)", "layers.0"), ("h = layer1(h, mask)", "layers.1"), "out = h"),
        ["x", "mask"], ["x | h | x", "h mask | h mask | ", "h mask | out | h mask"],
        id="sample-input-read-by-later-pieces"),
    pytest.param(
        steps("h = x", ("h = layer0(h)", "layers.0"), "out = h"),
        ["x", "unused"], ["x | h | x", "h | out | h"], id="unused-input-is-no-ones-input"),
    pytest.param(
        steps("h = embed(x)", "if flag:\n    extra = h * 2\n", ("h = layer0(h)", "layers.0"),
              "out = h + extra if flag else h"),
        ["x", "flag"], ["flag x | extra? flag h | x", "extra? flag h | out | extra flag h"], id="bound-on-one-branch"),
    pytest.param(
        steps("for i in range(n):\n    x = x + i\n", ("h = layer0(x)", "layers.0"), "out = h + i"),
        ["x", "n"], ["n x | i? x | n", "i? x | out | i x"], id="loop-variable-may-be-unbound"),
    pytest.param(
        steps("if flag:\n    y = x\n", "y = x * 2", ("h = layer0(y)", "layers.0"), "out = h"),
        ["x", "flag"], ["flag x | y | flag x", "y | out | y"], id="bound-on-one-branch-then-always"),
    pytest.param(
        steps("if flag:\n    y = x\n", ("h = layer0(x)", "layers.0"), "y = h", ("h = layer1(y)", "layers.1"),
              "out = h"),
        ["x", "flag"], ["flag x | x y? | flag", "x | y | x", "y | out | y"],
        id="maybe-bound-then-rebound-in-a-later-piece"),
    pytest.param(
        steps("h = embed(x)", ("t = layer0(x)", "layers.0"), "h += t", "out = h"),
        ["x"], ["x | h x | ", "h! x | out | h x"], id="augmented-assignment-reads-first"),
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h)", "layers.0"), "ys = [h * k for k in range(3)]", "out = ys"),
        ["x", "k"], ["x | h | x", "h | out | h"], id="comprehension-variable-is-not-an-input"),
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h)", "layers.0"), "f = lambda x: x + h", "out = f(1)"),
        ["x"], ["x | h | x", "h | out | h"], id="lambda-parameter-is-not-an-input"),
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h)", "layers.0"), "def g(a):\n    b = a + scale\n    return b + h\n",
              "out = g(h)"),
        ["x", "a", "b", "scale"], ["x | h | x", "h scale | out | h scale"], id="nested-function-free-names-only"),
    pytest.param(
        steps("h = embed(x)", ("h = layer0(h)", "layers.0"), "out: int = h"),
        ["x"], ["x | h | x", "h | out | h"], id="annotated-assignment"),
    pytest.param(
        steps("a, (b, c) = split(x)", ("h = layer0(a)", "layers.0"), "out = h + b + c"),
        ["x"], ["x | a b c | x", "a b c | out | a b c"], id="tuple-unpacking-binds-each-name"),
    pytest.param(
        steps(("h = layer0(x)", "layers.0"), "out = h"),
        ["x"], [" |  | ", "x | out | x"], id="first-step-is-a-target"),
    pytest.param(
        steps("out = x"),
        ["x"], ["x | out | x"], id="no-target-one-subgraph"),
    pytest.param(
        steps("y = x", ("h = layer0(y)", "layers.0"), "z = h", ("h = layer1(z)", "layers.1"), "out = h"),
        ["x"], ["x | y | x", "y | z | y", "z | out | z"], id="only-what-a-later-piece-reads-is-returned"),
    pytest.param(
        steps("keep = x + 1", ("h = layer0(x)", "layers.0"), ("h = layer1(h)", "layers.1"), "out = h + keep"),
        ["x"], ["x | keep x | ", "x | h | x", "h keep | out | h keep"],
        id="a-name-skips-a-piece-that-does-not-read-it"),
    pytest.param(
        steps("keep = x", ("h = layer0(x)", "layers.0"), ("h = layer1(h)", "layers.1"), "out = h + keep"),
        ["x"], ["x | keep x | ", "keep x | h keep | x", "h keep | out | h keep"],
        id="a-name-that-may-hold-an-inputs-object-comes-in-and-leaves-with-it"),
    pytest.param(
        steps("kw = {'cache': c if flag else None}", "cache = kw.pop('cache')", ("h = layer0(x, cache)", "layers.0"),
              ("h = layer1(h)", "layers.1"), "out = h + len(c)"),
        ["c", "flag", "x"], ["c flag | c cache | flag", "c cache x | c h | cache x", "c h | out | c h"],
        id="an-argument-bound-through-a-keyword-dict-is-carried-with-the-callers-name"),
]


@pytest.mark.parametrize("program, inputs, expected", NAME_CASES)
def test_subgraph_names(program, inputs, expected):
    assert [summary(sg) for sg in chain(program, inputs)] == expected


def test_the_final_output_is_returned_even_if_nothing_reads_it():
    (last,) = chain(steps("out = x", "other = x"), ["x"])
    assert last.output_names == {"out"}
    assert last.forward(None, x=1) == {"out": 1}


# ----- in-place writes -------------------------------------------------------------------

WRITE_CASES = [
    pytest.param("h += y", "h! x y | out | h x y", id="augmented-assignment"),
    pytest.param("h[0] = y", "h! x y | out | h x y", id="item-assignment"),
    pytest.param("h[0] += y", "h! x y | out | h x y", id="augmented-item-assignment"),
    pytest.param("h.mul_(y)", "h! x y | out | h x y", id="in-place-method"),
    pytest.param("h.data.masked_fill_(y, 0)", "h! x y | out | h x y", id="in-place-method-on-an-attribute"),
    pytest.param("h.cache = y", "h! x y | out | h x y", id="attribute-assignment"),
    pytest.param("y.add_(1)\nh += y", "h! x y! | out | h x y", id="two-names-written"),
    pytest.param("h._reset_(y)", "h x y | out | h x y", id="private-method-is-not-in-place"),
    pytest.param("h.add(y)", "h x y | out | h x y", id="out-of-place-method"),
    pytest.param("h = h * y", "h x y | out | h x y", id="rebinding-is-not-writing"),
    pytest.param("h = h * y\nh += y", "h! x y | out | h x y", id="rebound-and-written-in-one-step-is-kept"),
    pytest.param("z = y * 2\nz += h", "h x y | out | h x y", id="local-written"),
]


@pytest.mark.parametrize("code, expected", WRITE_CASES)
def test_written_inputs(code, expected):
    """`h` and `y` come from subgraph 0 into subgraph 1, whose target call rebinds neither."""
    program = steps("h = embed(x)", "y = h > 0", ("t = layer0(x)", "layers.0"), code, "out = h + t")
    assert summary(chain(program, ["x"])[-1]) == expected


def test_an_input_rebound_in_an_earlier_step_is_not_written():
    program = steps("h = embed(x)", ("t = layer0(x)", "layers.0"), "h = h * 2", "h += 1", "out = h + t")
    assert summary(chain(program, ["x"])[-1]) == "h x | out | h x"


def test_an_input_written_through_a_local_alias_is_written():
    program = steps("h = embed(x)", ("t = layer0(x)", "layers.0"), "a = h", "a += t", "out = a")
    assert chain(program, ["x"])[-1].written_inputs == {"h"}


@pytest.mark.parametrize("code, checked", [
    ("acc = self.acc\nacc += h", True),  # bound to the model's state: checked where it runs
    ("acc = getattr(self, 'acc')\nacc *= 2", True),
    ("acc = self.acc.clone()\nacc += h", False),  # a new value
    ("acc = h\nacc += 1", False),  # an input: copied when written (written_inputs)
    ("acc = self.mask\nacc |= h", False),  # the same result when run again
])
def test_an_augmented_assignment_on_a_name_bound_to_state_is_checked_when_it_runs(code, checked):
    program = steps("h = embed(x)", *code.splitlines(), ("t = layer0(h)", "layers.0"), "out = t")
    first = chain(program, ["x"])[0]
    assert ("_sx.expect_rebinding(acc, " in first.source) is checked


def test_expect_rebinding_lets_a_rebinding_pass_and_stops_a_change_in_place():
    import torch

    from staticexec.emit.runtime import StateWrite, expect_rebinding
    from staticexec.emit.run import checks_off

    expect_rebinding(3, "__iadd__", "m.py:1", "acc += 1")  # an int: `+=` rebinds the name
    expect_rebinding((1,), "__iadd__", "m.py:1", "acc += (2,)")
    for value in (torch.zeros(2), [1]):
        with pytest.raises(StateWrite, match="m.py:1: `acc \\+= 1` changes in place the"):
            expect_rebinding(value, "__iadd__", "m.py:1", "acc += 1")
    with checks_off():
        expect_rebinding(torch.zeros(2), "__iadd__", "m.py:1", "acc += 1")


# ----- module-bound names, scopes and reads through locals() ------------------------------

def test_module_bound_names_are_bound_from_the_model_not_passed():
    program = steps("h = self__1.embed(x)", ("h = self__2(h)", "model.layers.0"), "out = self__1.norm.inner(h)",
                    modules={"self__1": "self.model", "self__2": "self.model.layers[0]"})
    first, second = chain(program, ["x"])
    assert summary(first) == "x | h | x" and summary(second) == "h | out | h"
    assert "    self__1 = self.model\n" in first.source and "self__2" not in first.source
    assert "    self__2 = self.model.layers[0]\n    self__1 = self.model\n" in second.source  # in order of use
    assert first.module_paths == ["model.embed"]
    assert second.module_paths == ["model.layers.0", "model.norm.inner"]


def test_an_unrolled_loops_next_module_bound_where_a_piece_ends_is_not_looked_up_there():
    """`layer = self.layers[1]` after the call of layers[0]: nothing after it in that piece reads it, and the
    piece that calls it binds it again in its prelude; a binding a later step of the piece reads is kept."""
    modules = {"layer": "self.layers[1]"}
    program = steps("h = embed(x)", ("h = layer(h)", "layers.0"), "layer = self.layers[1]", ("h = layer(h)", "layers.1"),
                    "out = h", modules=modules)
    program[1] = Step(code="h = layer(h)", origin="model.py:1", target="layers.0", modules={"layer": "self.layers[0]"})
    first, second, third = chain(program, ["x"])
    assert "self.layers[1]" not in second.source and "    layer = self.layers[0]\n" in second.source
    assert "    layer = self.layers[1]\n" in third.source
    kept = steps("h = embed(x)", ("h = self__1(h)", "layers.0"), "layer = self.layers[1]", "out = layer.norm(h)",
                 modules=modules)
    assert "layer = self.layers[1]" in chain(kept, ["x"])[1].source


def test_a_name_bound_to_itself_needs_no_prelude():
    (only,) = chain(steps("out = self.norm(x)", modules={"self": "self"}), ["x"])
    assert only.input_names == {"x"} and "self = self" not in only.source
    assert only.module_paths == ["norm"]


def test_scope_expressions_are_read_by_each_step_inside():
    program = [Step("h = embed(x)", "model.py:1"),
               Step("h = layer0(h)", "model.py:2", target="layers.0", scopes=("autocast(dtype)",)),
               Step("out = h", "model.py:3")]
    first, second = chain(program, ["x", "dtype"])
    assert summary(first) == "x | h | x"
    assert summary(second) == "dtype h | out | dtype h"
    assert "    with autocast(dtype):\n        # model.py:2\n        h = layer0(h)\n" in second.source


def test_reads_through_locals_are_inputs():
    program = [Step("h = embed(x)", "model.py:1"), Step("h = layer0(h)", "model.py:2", target="layers.0"),
               Step("out = dict(locals())", "model.py:3", reads=("mask",))]
    assert [summary(sg) for sg in chain(program, ["x", "mask"])] == ["x | h | x", "h mask | out | h mask"]


def test_targets_per_subgraph_lists_each_subgraphs_targets():
    program = steps("h = x", *[(f"h = layer{i}(h)", f"layers.{i}") for i in range(5)], "out = h")
    sgs = chain(program, ["x"], per_subgraph=2)
    assert [sg.targets for sg in sgs] == [[], ["layers.0", "layers.1"], ["layers.2", "layers.3"], ["layers.4"]]
    assert [sg.filename for sg in sgs][1] == "<staticexec test subgraph 1 of 4>"


# ----- the chain runs as the steps do ------------------------------------------------------

def layer(t):
    return t * 3 + 1


GLOBALS = {"layer": layer, "F": torch.nn.functional, "torch": torch}

RUN_CASES = [
    pytest.param(
        ["h = x * 2", "if flag:\n    extra = h + 1\n", ("h = layer(h)", "layers.0"), "out = h + extra if flag else h"],
        {"x": torch.ones(2), "flag": False}, id="unbound-on-the-path-taken"),
    pytest.param(
        ["h = x * 2", "if flag:\n    extra = h + 1\n", ("h = layer(h)", "layers.0"), "out = h + extra if flag else h"],
        {"x": torch.ones(2), "flag": True}, id="bound-on-the-path-taken"),
    pytest.param(
        ["h = x * 1", ("t = layer(x)", "layers.0"), "h += t", ("t = layer(t)", "layers.1"), "h[0] = t[1]",
         "h.mul_(t)", "out = h"],
        {"x": torch.arange(2.0)}, id="in-place-writes-leave-inputs-unchanged"),
    pytest.param(
        ["acc = [x]", ("h = layer(x)", "layers.0"), "acc.append(h)", ("h = layer(h)", "layers.1"), "acc.append(h)",
         "out = torch.stack(acc)"],
        {"x": torch.ones(2)}, id="a-collector-list-grows-across-pieces"),
    pytest.param(
        ["ys = [x * k for k in range(2)]", ("h = layer(ys[1])", "layers.0"), "out = h + sum(k for k in ys)"],
        {"x": torch.ones(2)}, id="comprehension"),
    pytest.param(
        ["hs = [F for F in parts]", "x = x * 1", ("h = layer(x)", "layers.0"), "out = F.relu(h) + len(hs)"],
        {"x": torch.ones(2), "parts": [1, 2]}, id="comprehension-variable-named-like-a-global"),
    pytest.param(
        ["h = x * 2", ("t = layer(x)", "layers.0"), "a = h", "a += t", "out = a"],
        {"x": torch.ones(2)}, id="in-place-write-through-an-alias"),
    pytest.param(
        ["h = x * 2", ("t = layer(x)", "layers.0"), "v = h[0]", "v += t[0]", "w = h.view(-1)", "w.mul_(3)",
         "out = h"],
        {"x": torch.ones(2)}, id="in-place-writes-through-views"),
    pytest.param(
        ["h = x * 2", ("t = layer(x)", "layers.0"), "a = h", "a = a + t", "a += 1", "out = a + h"],
        {"x": torch.ones(2)}, id="an-alias-rebound-before-the-write"),
]


def _whole(program: list, inputs: dict) -> object:
    """The steps run as one function, as the model's forward would."""
    lines = [f"def whole({', '.join(inputs)}):"]
    for item in program:
        code = item if isinstance(item, str) else item[0]
        lines += ["    " + line for line in code.rstrip("\n").split("\n")]
    lines.append(f"    return {OUTPUT}")
    scope = dict(GLOBALS)
    exec("\n".join(lines), scope)
    return scope["whole"](**{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()})


@pytest.mark.parametrize("program, inputs", RUN_CASES)
def test_the_chain_gives_what_the_steps_give(program, inputs):
    sgs = chain(steps(*program), list(inputs), globals_=GLOBALS)
    kept = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    with tripwires_off():
        got = run_chain(None, sgs, inputs, twice=True)[OUTPUT]
    assert torch.equal(got, _whole(program, kept))
    assert all(torch.equal(inputs[k], v) for k, v in kept.items() if isinstance(v, torch.Tensor))


def test_an_output_unbound_on_the_path_taken_is_returned_as_unbound():
    first, _ = chain(steps("if flag:\n    extra = x\n", ("h = layer(x)", "layers.0"), "out = h + extra"),
                     ["x", "flag"], globals_=GLOBALS)
    # x passes through unchanged (the very object it was given), so the caller's cache keeps it
    assert first.forward(None, x=1, flag=False) == {"extra": UNBOUND}
    assert first.forward(None, x=1, flag=True) == {"extra": 1}


def test_a_value_passed_through_comes_back_only_when_the_subgraph_copied_it():
    sgs = chain(steps("h = x + box[0]", ("h = layer(h) + box[0]", "layers.0"), ("h = layer(h)", "layers.1"),
                      "out = h + box[0]"), ["x", "box"], globals_=GLOBALS)
    middle = sgs[1]
    assert middle.passed_through == {"box"}
    box = [torch.ones(1)]
    with tripwires_off():
        got = middle.forward(None, h=torch.zeros(1), box=box)
        assert got["box"] is not box and torch.equal(got["box"][0], box[0])  # a list is copied: it comes back
        got = middle.forward(None, h=torch.zeros(1), box=(torch.ones(1),))
        assert "box" not in got  # a tuple of tensors is shared: the cache keeps the one it has
        got = run_chain(None, sgs, {"x": torch.zeros(1), "box": [torch.ones(1)]}, twice=True)[OUTPUT]
    assert torch.equal(got, _whole(["h = x + box[0]", "h = layer(h) + box[0]", "h = layer(h)", "out = h + box[0]"],
                                   {"x": torch.zeros(1), "box": [torch.ones(1)]}))


def test_a_mapping_read_only_as_keywords_is_shared_when_it_holds_no_state():
    def call(h, scale=1.0, box=None):
        if box is not None:
            box.append(1)
        return h * scale

    sgs = chain(steps("h = x + 1", ("h = layer(h)", "layers.0"), ("h = call(h, **kw)", "layers.1"),
                      ("h = call(h, **kw)", "layers.2"), "out = h"), ["x", "kw"], globals_={**GLOBALS, "call": call})
    middle = sgs[2]
    assert middle.spread_inputs == {"kw"}
    plain = {"scale": 2.0}
    with tripwires_off():
        assert "kw" not in middle.forward(None, h=torch.ones(1), kw=plain)  # spread by the call: the cache keeps it
        held = {"box": []}
        got = middle.forward(None, h=torch.ones(1), kw=held)
    assert held == {"box": []} and got["kw"] == {"box": [1]}  # a list inside may change: copied and given back


# ----- objects shared by several names cross subgraphs together ---------------------------

@pytest.mark.parametrize("bind", ["layer: object = c.layers[0]", "layer = c.layers[0]"])  # annotated or not
def test_a_part_of_a_cache_carries_the_cache_it_hangs_off(bind):
    """The caller's `cache` reaches the callee's `layer` through `kw = {'cache': cache}`, `kwargs = kw` and
    `kw2 = {**kwargs}`: a subgraph that gets `layer` also gets `cache` and gives it back, so both keep the one copy
    it updated (DeepSeek-V4's cache layer, read beside a Linear)."""
    program = steps("cache = make()", "kw = {'cache': cache}", "kwargs = kw", "kw2 = {'h': x, **kwargs}", "c = kw2.pop('cache')", bind,
                    ("h = proj(x)", "proj"), "layer.items.append(h)", ("g = proj2(h)", "proj2"), "out = (g, cache)")
    globals_ = {"make": lambda: types.SimpleNamespace(layers=[types.SimpleNamespace(items=[])]), "proj": lambda t: t + 1,
                "proj2": lambda t: t * 2}
    sgs = chain(program, ["x"], globals_=globals_)
    assert "cache" in sgs[1].input_names and "cache" in sgs[1].output_names
    with tripwires_off():
        out = run_chain(None, sgs, {"x": torch.ones(1)}, twice=True)[OUTPUT]
    assert len(out[1].layers[0].items) == 1 and torch.equal(out[1].layers[0].items[0], torch.full((1,), 2.0))


def test_a_dict_carries_the_objects_bound_from_its_entries():
    """A subgraph that gets `kwargs` and changes the cache in `kwargs['cache']` also gets `cache` (bound from that
    entry elsewhere) and gives it back: a later read of `cache` sees the one copy it changed (DeepSeek-V4 with its
    attention and MoE blocks as targets: the attention reached the cache through the layer's **kwargs)."""
    program = steps("cache = make(x)", "kw = {'cache': cache}", "kwargs = kw", ("h = proj(x)", "proj"),
                    "kwargs['cache'].items.append(h)", ("g = proj2(h)", "proj2"), "out = (g, cache)")
    globals_ = {"make": lambda x: types.SimpleNamespace(items=[]), "proj": lambda t: t + 1, "proj2": lambda t: t * 2}
    sgs = chain(program, ["x"], globals_=globals_)
    assert {"cache", "kwargs"} <= sgs[1].input_names and "cache" in sgs[1].output_names
    with tripwires_off():
        out = run_chain(None, sgs, {"x": torch.ones(1)}, twice=True)[OUTPUT]
    assert len(out[1].items) == 1


def test_a_module_expression_gives_the_path_it_is_registered_under():
    from staticexec.emit.cut import _expr_path

    assert _expr_path("self.model.layers._modules['3']") == "model.layers.3"
    assert _expr_path("self.model.layers[3]") == "model.layers.3"
    assert _expr_path("self.blocks._modules['a]b'].norm") == "blocks.a]b.norm"
    assert _expr_path("self.blocks._modules['class']") == "blocks.class"
    assert _expr_path("self") == ""
    assert _expr_path("other.layers[0]") is None and _expr_path("self.layers[i]") is None
