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
        "u:Mine", "u.py:5 declares Mine global in a function, which may rebind it"),
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
        {"u.py": "from transformers import LlamaModel as M, LlamaForCausalLM as M\n"}, "u:M", f"{LLAMA}:LlamaForCausalLM"),
    "two assignments on one line, the last holds": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nM = LlamaForCausalLM; M = LlamaModel\n"},
        "u:M", f"{LLAMA}:LlamaModel"),
    "a class statement, then another class assigned": (
        {"u.py": "from transformers import LlamaModel, LlamaForCausalLM\nclass Mine(LlamaModel):\n    pass\n"
                 "Mine = LlamaForCausalLM\n"}, "u:Mine", f"{LLAMA}:LlamaForCausalLM"),
    "an import, then a class statement of its name": (
        {"u.py": "from transformers import LlamaModel\nclass LlamaModel(LlamaModel):\n    pass\n"},
        "u:LlamaModel", "{pkg}.u:LlamaModel"),
    "a binding in a block, then one at the top level": (
        {"u.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from transformers import LlamaModel as Mine\n"
                 "from transformers import LlamaForCausalLM\nclass Mine(LlamaForCausalLM):\n    pass\n"},
        "u:Mine", "{pkg}.u:Mine"),
    "a binding in a block after one at the top level": (
        {"u.py": "import sys\nfrom transformers import LlamaModel as Mine\nif sys.version_info < (3, 0):\n"
                 "    from transformers import LlamaForCausalLM as Mine\n"},
        "u:Mine", "u.py:4 binds Mine inside a block"),
    "a class defined twice": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\nclass Mine(LlamaModel):\n"
                 "    x = 1\n"},
        "u:Mine", "u.py defines Mine 2 times (lines 2, 4); staticexec reads a class defined once"),
    "a class rebound by a call": (
        {"u.py": "from transformers import LlamaModel\nclass Mine(LlamaModel):\n    pass\nMine = type(Mine)\n"},
        "u:Mine", "u.py:4 binds Mine by `Mine = type(Mine)`, which staticexec does not follow to a class"),
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
        bound = getattr(importlib.import_module(f"{pkg}.{module}"), name)
        assert f"{bound.__module__}:{bound.__qualname__}" == expected  # what Python binds
    else:
        with pytest.raises(UsageError) as refused:
            find_user_class(spec)
        assert expected in str(refused.value) and len(str(refused.value).splitlines()) == 1
    for loaded in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
