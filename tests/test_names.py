"""jedi's on-disk cache shared by parallel workers: a cut cache file must not change what resolves.

Each resolution runs in a fresh process, as a sweep worker would: parso's
in-memory cache is process-wide, and clearing it here would pull parse trees
from under the shared resolver of the tests that follow.
"""

from __future__ import annotations

import glob
import os
import pickle
import subprocess
import sys

GOTO = """
import sys
import jedi
import staticexec.analysis.jedicache  # noqa: F401  makes parso's cache safe to share
jedi.settings.cache_directory = sys.argv[1]
src = sys.argv[2]
project = jedi.Project(src, added_sys_path=[src])
code = "import helpers\\n\\ny = helpers.take_along_dim(1, 2)\\n"
names = jedi.Script(code, path=src + "/user.py", project=project).goto(3, 14, follow_imports=True)
print([n.full_name for n in names])
"""


def _goto(cache, src) -> str:
    done = subprocess.run([sys.executable, "-c", GOTO, str(cache), str(src)], capture_output=True, text=True)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def test_a_cut_cache_file_is_a_miss_and_is_rewritten_whole(tmp_path):
    cache, src = tmp_path / "jedi-cache", tmp_path / "src"
    src.mkdir()
    body = "".join(f"def f{i}(x):\n    return x\n\n" for i in range(300))
    (src / "helpers.py").write_text(body + "def take_along_dim(a, b):\n    return a\n")
    assert _goto(cache, src) == "['helpers.take_along_dim']"
    (pickled,) = [p for p in glob.glob(os.path.join(cache, "**", "*.pkl"), recursive=True) if os.path.getsize(p) > 1000]
    with open(pickled, "rb") as handle:
        whole = handle.read()
    pickle.loads(whole)  # written whole
    assert not glob.glob(os.path.join(cache, "**", ".tmp-*"), recursive=True)

    # what a reader saw while a parallel worker was still writing (or after one was killed mid-write)
    with open(pickled, "wb") as handle:
        handle.write(whole[: len(whole) // 2])
    assert _goto(cache, src) == "['helpers.take_along_dim']"
    with open(pickled, "rb") as handle:
        pickle.loads(handle.read())  # and the cut file was replaced by a whole one


def _reader(folder, name: str, head: str, member: str) -> tuple:
    """A file that imports a module as `head` and reads `head.member` on its last line: the file, and
    the positions of `head` and of `member` on that line."""
    path = folder / f"{name}.py"
    imports = {"h": "import helpers as h", "nn": "from torch import nn", "act": "from transformers import activations as act",
               "g": "from transformers.utils import generic as g"}
    path.write_text(f"{imports[head]}\n\n\nx = {head}.{member}\n")
    from staticexec.analysis.source import load_file

    return load_file(str(path), name), (4, 4), (4, 4 + len(head) + 1)


def _counting_goto(monkeypatch) -> list:
    import jedi

    asked, goto = [], jedi.Script.goto

    def counting(self, *args, **kwargs):
        asked.append(args)
        return goto(self, *args, **kwargs)

    monkeypatch.setattr(jedi.Script, "goto", counting)
    return asked


def test_a_member_of_an_installed_module_is_asked_of_jedi_once_whichever_file_reads_it(tmp_path, monkeypatch):
    """`g._is_torch_available` is bound twice in its module (a `try` and its `except`): jedi answers, once."""
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated

    monkeypatch.syspath_prepend(str(tmp_path))
    asked = _counting_goto(monkeypatch)
    with isolated():
        names = NameResolver()
        found = []
        for name in ("reader_a", "reader_b"):
            sf, head, member = _reader(tmp_path, name, "g", "_is_torch_available")
            owner = names.goto(sf, *head)
            assert (owner.kind, owner.module) == ("module", "transformers.utils.generic")
            found.append(names.goto_member(sf, owner.module, "_is_torch_available", *member))
        assert len(asked) == 3  # `g` in each file, `g._is_torch_available` in the first only
        assert found[0] == found[1] is not None
        # and it is jedi's own answer in the second file (of the two bindings, either line)
        again = NameResolver().goto(sf, *member)
        assert (again.module, again.qualname, again.kind) == (found[1].module, found[1].qualname, found[1].kind)


def test_a_member_bound_plainly_is_followed_without_jedi_to_jedi_s_answer(tmp_path, monkeypatch):
    """`act.GELUActivation`, a class statement of its module: follow.py reads it there."""
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated

    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated():
        sf, head, member = _reader(tmp_path, "reader_f", "act", "GELUActivation")
        jedi_answer = NameResolver().goto(sf, *member)
        asked = _counting_goto(monkeypatch)
        found = NameResolver().goto_member(sf, "transformers.activations", "GELUActivation", *member)
        assert asked == []
        assert (found.module, found.qualname, found.kind) == (jedi_answer.module, jedi_answer.qualname, "class") \
            == ("transformers.activations", "GELUActivation", "class")


def test_a_name_of_torch_is_looked_up_in_torch_with_jedi_s_answer(tmp_path, monkeypatch):
    """torch's names are not asked of jedi (which would parse torch's sources and stubs): the imported
    module answers, with what jedi would say of the class."""
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated

    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated():
        sf, head, member = _reader(tmp_path, "reader_t", "nn", "Linear")
        jedi_answer = NameResolver().goto(sf, *member)
        asked = _counting_goto(monkeypatch)
        names = NameResolver()
        owner = names.goto(sf, *head)
        found = names.goto_member(sf, owner.module, "Linear", *member)
        assert len(asked) == 1  # `nn` only
        assert (found.module, found.qualname, found.kind) == (jedi_answer.module, jedi_answer.qualname, "class") \
            == ("torch.nn.modules.linear", "Linear", "class")


def test_a_member_of_a_module_that_may_be_edited_is_read_where_it_is_now(tmp_path, monkeypatch):
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "helpers.py").write_text("class Block:\n    pass\n")
    asked = _counting_goto(monkeypatch)
    with isolated():
        names = NameResolver()
        sf, head, member = _reader(tmp_path, "reader_c", "h", "Block")
        owner = names.goto(sf, *head)
        assert (owner.kind, owner.module) == ("module", "helpers")
        assert names.goto_member(sf, "helpers", "Block", *member).line == 1
        (tmp_path / "helpers.py").write_text("\n\nclass Block:\n    pass\n")  # the model code changes
        later = os.stat(tmp_path / "helpers.py").st_mtime + 10
        os.utime(tmp_path / "helpers.py", (later, later))
        sf, head, member = _reader(tmp_path, "reader_d", "h", "Block")
        assert names.goto_member(sf, "helpers", "Block", *member).line == 3
        assert len(asked) == 1  # `h` in the first file; `h.Block` followed in helpers.py, read again once changed


READ_BACK = """
import sys, time
import parso, parso.cache
import staticexec.analysis.jedicache  # noqa: F401
grammar = parso.load_grammar()
grammar.parse(path=sys.argv[2], cache=True, cache_path=sys.argv[1])
item = parso.cache.parser_cache[grammar._hashed][parso.file_io.FileIO(sys.argv[2]).path]
print(round(time.time() - item.last_used))
"""


def test_a_module_read_back_from_the_disk_cache_counts_as_used_now(tmp_path):
    """parso pickles the time a module was parsed and, past 600 modules in memory, drops those not used
    in ten minutes: a module read back from disk must not look as old as its first parse."""
    import parso

    source, cache = tmp_path / "module.py", tmp_path / "cache"
    source.write_text("def f(x):\n    return x\n")
    grammar = parso.load_grammar()
    grammar.parse(path=str(source), cache=True, cache_path=str(cache))  # pickled to the disk cache
    (pickled,) = glob.glob(os.path.join(cache, "**", "*.pkl"), recursive=True)
    with open(pickled, "rb") as handle:
        item = pickle.load(handle)
    item.last_used -= 3600  # parsed an hour ago, by an earlier run
    with open(pickled, "wb") as handle:
        pickle.dump(item, handle)
    os.utime(source, (item.change_time - 10, item.change_time - 10))  # the source is older than its cache
    done = subprocess.run([sys.executable, "-c", READ_BACK, str(cache), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) < 60


def test_a_name_transformers_exports_lazily_is_looked_up_when_jedi_finds_nothing(tmp_path, monkeypatch):
    """`from transformers import LlamaForCausalLM`: jedi can fail inside its star-import filter on
    transformers' lazy __init__; the name is then looked up in the imported package (lazy.py)."""
    from staticexec.analysis.names import NameResolver
    from staticexec.analysis.session import isolated
    from staticexec.analysis.source import load_file

    path = tmp_path / "user_model.py"
    path.write_text("from transformers import LlamaForCausalLM\n\n\nBase = LlamaForCausalLM\n")
    monkeypatch.setattr(NameResolver, "goto", lambda self, sf, line, column: None)  # jedi finding nothing
    with isolated():
        sf = load_file(str(path), "user_model")
        found = NameResolver().goto_global(sf, "LlamaForCausalLM", 4, 7)
    assert (found.module, found.qualname, found.kind) == ("transformers.models.llama.modeling_llama",
                                                        "LlamaForCausalLM", "class")
