"""The default targets (staticexec/analysis/defaults.py): one rule, read two ways.

Each case is a small model source. Its `Model` class is read from source (`api.default_targets`,
what planning without targets uses) and built and read as modules (`check.samples.default_targets`,
what verify uses); both must give the expected targets.
"""

from __future__ import annotations

import textwrap

import pytest

from patterns import import_fixture
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.source import ClassRef
from staticexec.api import default_targets as from_source
from staticexec.check.samples import default_targets as from_modules

HEADER = textwrap.dedent("""
    from torch import nn


    class Inner(nn.Module):
        pass


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()


    class Other(nn.Module):
        pass
    """)

CASES = [
    ("declared-by-the-root", """
        class Model(nn.Module):
            _no_split_modules = ["Layer"]

            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])
        """, ["Layer"]),
    ("declared-by-a-sub-model-only", """
        class Body(nn.Module):
            _no_split_modules = ["Layer"]

            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = Body()
        """, ["Layer"]),
    ("declared-and-inherited", """
        class Base(nn.Module):
            _no_split_modules = ["Layer"]


        class Model(Base):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Layer()])
        """, ["Layer"]),
    ("nothing-declared-the-layer-stack", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Other()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])
        """, ["Layer"]),
    ("nothing-declared-the-first-stack-breadth-first", """
        class Body(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(3)])


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = Body()
                self.heads = nn.ModuleList([Other(), Other()])
        """, ["Other"]),
    ("a-stack-of-stacks-is-read-through", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.stages = nn.ModuleList([nn.ModuleList([Layer(), Layer()]) for _ in range(2)])
        """, ["Layer"]),
    ("a-mixed-list-is-no-stack", """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.parts = nn.ModuleList([Layer(), Other()])
        """, []),
    ("declared-but-not-held-falls-back", """
        class Model(nn.Module):
            _no_split_modules = ["Missing"]

            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Layer()])
        """, ["Layer"]),
    ("only-inside-another-target-is-dropped", """
        class Model(nn.Module):
            _no_split_modules = ["Layer", "Inner"]

            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Layer()])
        """, ["Layer"]),
    ("also-held-outside-is-kept", """
        class Model(nn.Module):
            _no_split_modules = ["Layer", "Inner"]

            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Layer()])
                self.final = Inner()
        """, ["Inner", "Layer"]),
]


@pytest.mark.parametrize("name, source, expected", CASES, ids=[c[0] for c in CASES])
def test_default_targets(tmp_path, name, source, expected):
    module = f"stage_defaults_{name.replace('-', '_')}"
    path = tmp_path / f"{module}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    loaded = import_fixture(str(path), module, path.name)
    assert from_source(Resolver(), ClassRef(module, "Model")) == expected
    assert from_modules(loaded.Model()) == expected
