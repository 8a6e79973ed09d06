"""The class a user's `module:Name` stands for, read from source, is the class importing the module binds
to the name, or the name is refused with where and why: star imports (by `__all__` or by public names,
relative ones, one after a class statement), `del`, `global`, bindings inside blocks, a package's submodules.

Each case is a small package written to a temporary folder under a name of its own; a followed name is
checked against what Python binds when the module is imported.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap

import pytest

from staticexec.analysis.userclass import find_user_class
from staticexec.messages import UsageError

_COUNT = itertools.count()

LLAMA = "transformers.models.llama.modeling_llama"

MINE = "from transformers import LlamaModel, LlamaForCausalLM\nclass Mine(LlamaModel):\n    pass\n"

# (files of the package, the module and name asked for, the class it is ("module:qualname") or a refusal's words)
CASES = {
    "star by __all__": ({"u.py": f"from {LLAMA} import *\n"}, "u:LlamaModel", f"{LLAMA}:LlamaModel"),
    "star by public names, relative": (
        {"m.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\n_hidden = Mine\n",
         "u.py": "from .m import *\n"}, "u:Mine", "{pkg}.m:Mine"),
    "a private name is not exported": (
        {"m.py": "from transformers import LlamaModel\nclass _Mine(LlamaModel):\n    pass\n",
         "u.py": "from .m import *\n"}, "u:_Mine", "binds no _Mine at module level, and its `import *` of {pkg}.m binds none"),
    "star through a star": (
        {"m.py": f"from {LLAMA} import *\n", "u.py": "from .m import *\n"}, "u:LlamaModel", f"{LLAMA}:LlamaModel"),
    "star before the class statement": (
        {"u.py": f"from {LLAMA} import *\nclass LlamaModel(LlamaPreTrainedModel):\n    pass\n"},
        "u:LlamaModel", "{pkg}.u:LlamaModel"),
    "star after the class statement": (
        {"u.py": f"from transformers import LlamaPreTrainedModel\nclass LlamaModel(LlamaPreTrainedModel):\n"
                 f"    pass\nfrom {LLAMA} import *\n"},
        "u:LlamaModel", f"{LLAMA}:LlamaModel"),
    "__all__ bound by an import": (
        {"names.py": "__all__ = ['LlamaModel']\n",
         "m.py": "from .names import __all__\nfrom transformers import LlamaForCausalLM, LlamaModel\n",
         "u.py": "from .m import *\n"},
        "u:LlamaForCausalLM", "m.py makes its `__all__` in a way staticexec does not read"),
    "__all__ computed": (
        {"m.py": "from transformers import LlamaModel\n__all__ = [n for n in ['LlamaModel']]\n",
         "u.py": "from .m import *\n"}, "u:LlamaModel", "m.py makes its `__all__` in a way staticexec does not read"),
    "a name deleted in the star-imported module": (
        {"m.py": "from transformers import LlamaForCausalLM, LlamaModel\ndel LlamaForCausalLM\n",
         "u.py": "from .m import *\n"}, "u:LlamaForCausalLM", "m.py:2 deletes LlamaForCausalLM"),
    "a name deleted": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\ndel Mine\n"},
        "u:Mine", "u.py:4 deletes Mine; staticexec follows a name that is never unbound"),
    "a name a function may rebind": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\n"
                 "def swap():\n    global Mine\n    Mine = None\n"},
        "u:Mine", "u.py:5 declares Mine global in the function swap, which may rebind it"),
    "a star import inside a block": (
        {"u.py": f"import sys\nif sys.version_info < (3, 0):\n    from {LLAMA} import *\n"},
        "u:LlamaModel", "u.py:3 binds LlamaModel inside a block"),
    "an import inside a block": (
        {"u.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from transformers import LlamaModel\n"},
        "u:LlamaModel", "u.py:3 binds LlamaModel inside a block"),
    "bound twice, the last holds": (
        {"u.py": "from transformers import LlamaModel as M\nfrom transformers import LlamaForCausalLM as M\n"},
        "u:M", f"{LLAMA}:LlamaForCausalLM"),
    "two aliases in one import, the last holds": (
        {"u.py": "from transformers import LlamaModel as M, LlamaForCausalLM as M\n"},
        "u:M", f"{LLAMA}:LlamaForCausalLM"),
    "two assignments on one line, the last holds": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nM = LlamaForCausalLM; M = LlamaModel\n"},
        "u:M", f"{LLAMA}:LlamaModel"),
    "a class statement, then another class assigned": (
        {"u.py": MINE + "Mine = LlamaForCausalLM\n"}, "u:Mine", f"{LLAMA}:LlamaForCausalLM"),
    "an import, then a class statement of its name": (
        {"u.py": "from transformers import LlamaModel\nclass LlamaModel(LlamaModel):\n    pass\n"},
        "u:LlamaModel", "{pkg}.u:LlamaModel"),
    "a binding in a block, then one at the top level": (
        {"u.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from transformers import LlamaModel as Mine\n"
                 "from transformers import LlamaForCausalLM\nclass Mine(LlamaForCausalLM):\n    pass\n"},
        "u:Mine", "{pkg}.u:Mine"),
    "a binding in a block after one at the top level": (
        {"u.py": "import sys\nfrom transformers import LlamaModel as Mine\nif sys.version_info < (3, 0):\n"
                 "    from transformers import LlamaForCausalLM as Mine\n"},
        "u:Mine", "u.py:4 binds Mine inside a block"),
    "a class defined twice": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\nclass Mine(LlamaModel):\n"
                 "    x = 1\n"},
        "u:Mine", "u.py defines Mine 2 times (lines 2, 4); staticexec reads a class bound once, by its class statement"),
    "a class rebound by a call": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\nMine = type(Mine)\n"},
        "u:Mine", "u.py:4 binds Mine by `Mine = type(Mine)`, which staticexec does not follow to a class"),
    "an attribute of the class assigned": (
        {"u.py": MINE + "from transformers import LlamaConfig\nMine.config_class = LlamaConfig\n"},
        "u:Mine", "{pkg}.u:Mine"),
    "the class as a key": ({"u.py": MINE + "d = {}\nd[Mine] = LlamaForCausalLM\n"}, "u:Mine", "{pkg}.u:Mine"),
    "an attribute deleted": ({"u.py": MINE + "Mine.x = 1\ndel Mine.x\n"}, "u:Mine", "{pkg}.u:Mine"),
    "an attribute of an imported class assigned": (
        {"u.py": "from transformers import LlamaModel as Mine, LlamaForCausalLM\nMine.alias = LlamaForCausalLM\n"},
        "u:Mine", f"{LLAMA}:LlamaModel"),
    "an attribute of a star-imported class assigned": (
        {"u.py": f"from {LLAMA} import *\nLlamaModel.alias = LlamaPreTrainedModel\n"},
        "u:LlamaModel", f"{LLAMA}:LlamaModel"),
    "a walrus in a lambda binds in the lambda": (
        {"u.py": MINE + "f = lambda: (Mine := LlamaForCausalLM)\n"}, "u:Mine", "{pkg}.u:Mine"),
    "a walrus in a default value": (
        {"u.py": MINE + "def f(x=(Mine := LlamaForCausalLM)):\n    pass\n"},
        "u:Mine", "u.py:4 binds Mine by `def f(x=(Mine := LlamaForCausalLM)): pass`, which staticexec does not follow"),
    "a walrus in a class's bases": (
        {"u.py": MINE + "class Other((Mine := LlamaForCausalLM)):\n    pass\n"},
        "u:Mine", "u.py:4 binds Mine by `class Other"),
    "a match capture": (
        {"u.py": MINE + "match LlamaForCausalLM:\n    case Mine:\n        pass\n"},
        "u:Mine", "u.py:4 binds Mine by `match"),
    "global at module level": ({"u.py": "global Mine\n" + MINE}, "u:Mine", "{pkg}.u:Mine"),
    "global in a class body": (
        {"u.py": MINE + "class Other:\n    global Mine\n    Mine = LlamaForCausalLM\n"},
        "u:Mine", "u.py:5 declares Mine global in the class Other, which may rebind it"),
    "a nested class": (
        {"u.py": "from transformers import LlamaModel\nclass Outer:\n    class Inner(LlamaModel):\n        pass\n"},
        "u:Outer.Inner", "{pkg}.u:Outer.Inner"),
    "a nested class rebound in its class's body": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nclass Outer:\n    class Inner(LlamaModel):\n"
                 "        pass\n    Inner = LlamaForCausalLM\n"},
        "u:Outer.Inner", "u.py binds Inner in the class Outer other than by one class statement (lines 3, 5)"),
    "a nested class rebound from outside": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nclass Outer:\n    class Inner(LlamaModel):\n"
                 "        pass\nOuter.Inner = LlamaForCausalLM\n"},
        "u:Outer.Inner", "u.py:5 assigns Outer.Inner, which may rebind the class"),
    "an assignment expression in an annotation": (
        {"u.py": MINE + "x: (Mine := LlamaForCausalLM)\n"}, "u:Mine", "u.py:4 binds Mine by `x: (Mine := LlamaForCausalLM)`"),
    "an imported class its module defines twice": (
        {"m.py": MINE + "class Mine(LlamaForCausalLM):\n    pass\n", "u.py": "from .m import Mine\n"},
        "u:Mine", "m.py defines Mine 2 times (lines 2, 4)"),
    "an imported class its module rebinds": (
        {"m.py": MINE + "Mine = LlamaForCausalLM\n", "u.py": "from .m import Mine\n"}, "u:Mine", f"{LLAMA}:LlamaForCausalLM"),
    "a package with a submodule of the name, not imported": (
        {"p/__init__.py": MINE, "p/Mine.py": "x = 1\n"}, "p:Mine", "{pkg}.p:Mine"),
    "a package that imports its submodule of the name": (
        {"p/__init__.py": MINE + "from .Mine import x\n", "p/Mine.py": "x = 1\n"},
        "p:Mine", "p/__init__.py:4 imports the submodule {pkg}.p.Mine, which binds Mine to the submodule"),
    "a package that imports the class from its submodule of the name": (
        {"p/__init__.py": "from .Mine import Mine\n", "p/Mine.py": MINE}, "p:Mine", "{pkg}.p.Mine:Mine"),
    "an alias taken before the class's name is rebound": (
        {"u.py": MINE + "Model = Mine\nMine = LlamaForCausalLM\n"}, "u:Model", "{pkg}.u:Mine"),
    "a nested class declared global": (
        {"u.py": "from transformers import LlamaModel\nclass Outer:\n    global Inner\n    class Inner(LlamaModel):\n"
                 "        pass\n"}, "u:Outer.Inner", "u.py:3 declares Inner global in the class Outer"),
    "a nested class inside a block": (
        {"u.py": "from transformers import LlamaModel\nclass Outer:\n    if True:\n        class Inner(LlamaModel):\n"
                 "            pass\n"}, "u:Outer.Inner", "u.py:4 defines Inner inside a block of the class Outer"),
    "a nested class rebound through another name": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nclass Outer:\n    class Inner(LlamaModel):\n"
                 "        pass\nO = Outer\nO.Inner = LlamaForCausalLM\n"},
        "u:Outer.Inner", "u.py:6 assigns O.Inner, which may rebind the class Outer.Inner"),
    "a name transformers exports lazily, imported by a name of its own": (
        {"u.py": "from transformers import LlamaModel as Model\n"}, "u:Model", f"{LLAMA}:LlamaModel"),
    "a name transformers exports lazily, bound again in its module": (
        {"u.py": "from transformers import AutoModelForCausalLM as Model\n"}, "u:Model",
        "binds AutoModelForCausalLM by `AutoModelForCausalLM = auto_class_update(AutoModelForCausalLM"),
    "a submodule of a star-imported package": (
        {"sub/__init__.py": "from .modeling import Thing\n", "sub/modeling.py": "class Thing:\n    pass\n",
         "u.py": "from transformers import LlamaModel\nclass modeling(LlamaModel):\n    pass\nfrom .sub import *\n"},
        "u:modeling", "modeling is also a submodule of the package {pkg}.sub"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_users_name_is_the_class_python_binds_or_refused(case, tmp_path, monkeypatch):
    files, asked, expected = CASES[case]
    pkg = f"sx_names_{next(_COUNT)}_{abs(hash(case)) % 10**6}"
    for name, text in files.items():
        path = tmp_path / pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    module, _, name = asked.partition(":")
    spec, expected = f"{pkg}.{module}:{name}", expected.format(pkg=pkg)
    if ":" in expected and " " not in expected:
        found = find_user_class(spec).cls
        assert f"{found.module}:{found.name}" == expected
        bound = importlib.import_module(f"{pkg}.{module}")
        for part in name.split("."):
            bound = getattr(bound, part)
        assert f"{bound.__module__}:{bound.__qualname__}" == expected  # what Python binds
    else:
        with pytest.raises(UsageError) as refused:
            find_user_class(spec)
        assert expected in str(refused.value) and len(str(refused.value).splitlines()) == 1
    for loaded in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        monkeypatch.delitem(sys.modules, loaded)


@pytest.mark.parametrize("source, bound", [
    ("a = b = x", {"a", "b"}),
    ("a, (b, *c) = x", {"a", "b", "c"}),
    ("a.b = x", set()),
    ("d[a] = x", set()),
    ("a.b: int = x", set()),
    ("a: int", set()),
    ("a: (b := int)", {"b"}),
    ("for a.b in x:\n    pass", set()),
    ("with x as (a, b.c):\n    pass", {"a"}),
    ("del a.b, d[a], c", {"c"}),
    ("f = lambda y=(a := 1): (b := 2)", {"f", "a"}),
    ("x = [(a := i) for i in y]", {"x", "a"}),
    ("@(a := d)\ndef g(x=(b := 1)) -> (c := int):\n    e = 1", {"g", "a", "b", "c"}),
    ("class C((a := B), k=(b := 1)):\n    e = 1", {"C", "a", "b"}),
    ("if (a := x):\n    b = 1", {"a"}),
    ("try:\n    pass\nexcept E:\n    (a := 1)", set()),
    ("match x:\n    case a:\n        pass\n    case {**b}:\n        pass\n    case [*c] if (d := 1):\n        e = 1",
     {"a", "b", "c", "d"}),
])
def test_what_a_module_level_statement_binds(source, bound):
    """Its own targets, names and assignment expressions, not what it writes into (`a.b = x`) nor what the
    statements it holds bind (an `if`'s body, an except clause: each a statement of its own)."""
    import ast

    from staticexec.analysis.external import statement_binds

    assert statement_binds(ast.parse(source).body[0]) == bound


@pytest.mark.parametrize("name", ["LlamaForCausalLM", "LlamaModel", "BitImageProcessor"])
def test_a_name_of_transformers_packages_is_the_class_the_imported_package_holds(name, tmp_path, monkeypatch):
    """transformers' `__init__` files bind their names in source only under `TYPE_CHECKING`, and at run time
    by a lazy module (which binds `BitImageProcessor` to a class of another name when torchvision is
    missing): such a name, named by the package, imported from it or read as its attribute, is the class the
    imported package holds, read by its module's binding of it."""
    users = {f"sx_imports_{name}": f"from transformers import {name} as Model\n",  # a module name of its own
             f"sx_attribute_{name}": f"import transformers as t\nModel = t.{name}\n"}  # (sources read once a name)
    for user, text in users.items():
        (tmp_path / f"{user}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec in (f"transformers:{name}", f"transformers.models.{'bit' if 'Bit' in name else 'llama'}:{name}",
                 *(f"{user}:Model" for user in users)):
        found = find_user_class(spec).cls
        module, _, bound_name = spec.partition(":")
        bound = getattr(importlib.import_module(module), bound_name)
        assert (found.module, found.name) == (bound.__module__, bound.__qualname__), spec


@pytest.mark.parametrize("spec, said", [
    ("transformers:AutoModelForCausalLM", "binds AutoModelForCausalLM by `AutoModelForCausalLM = "
     "auto_class_update(AutoModelForCausalLM"),  # (lines left out: they differ between releases)
    ("transformers.models.dpr:DPRReaderOutput", "binds DPRReaderOutput by `DPRReaderOutput = collections.namedtuple("),
    ("transformers:pipeline", "pipeline is the function transformers.pipelines:pipeline (as the imported transformers "
     "holds it), which staticexec does not follow to a class"),
    ("transformers:models", "models is the module transformers.models (as the imported transformers holds it)"),
])
def test_a_name_transformers_holds_is_refused_when_its_module_binds_it_to_no_class_statement(spec, said):
    """The class a package holds is read in its module by that module's last binding of the name: one bound
    again by a call (`namedtuple`, a class rebuilt) is refused with that binding, as any module's would be."""
    with pytest.raises(UsageError) as refused:
        find_user_class(spec)
    assert said in str(refused.value) and len(str(refused.value).splitlines()) == 1



def test_a_class_transformers_holds_under_a_borrowed_name_is_not_read_by_it(monkeypatch):
    """A class whose module and qualified name say `modeling_llama:LlamaModel`, which that module does not
    hold, is not read as that class statement: the package's source is read instead, and refuses (why
    depends on the release: its `__init__` binds the name inside a block, or through a star import that
    staticexec can't read)."""
    import transformers
    from transformers.models.llama import modeling_llama

    borrowed = type("LlamaModel", (modeling_llama.LlamaModel,), {"__module__": LLAMA})
    monkeypatch.setattr(transformers, "LlamaModel", borrowed)
    assert getattr(transformers, "LlamaModel") is borrowed and modeling_llama.LlamaModel is not borrowed
    with pytest.raises(UsageError, match=r"^'transformers:LlamaModel': transformers/__init__\.py:\d+ "):
        find_user_class("transformers:LlamaModel")


def test_a_member_a_lazy_module_fails_to_import_is_missing(monkeypatch):
    """A lazy module raises what importing a member raised (`ModuleNotFoundError` for a missing backend): the
    member is missing, as one that isn't there, and the module's source is read instead."""
    import types

    from staticexec.analysis import external

    lazy_module = types.ModuleType("sx_lazy_module_that_raises")
    lazy_module.__getattr__ = lambda name: (_ for _ in ()).throw(ModuleNotFoundError(f"no backend for {name}"))
    monkeypatch.setitem(sys.modules, "sx_lazy_module_that_raises", lazy_module)
    assert external.held("sx_lazy_module_that_raises", "Anything") is external.MISSING
