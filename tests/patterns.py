"""Load the hand-written pattern fixtures and read their inline expectations."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field

from staticexec.analysis.source import ClassRef, load_file

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "patterns")
HEADER = re.compile(r"#\s*staticexec:\s*root=(\w+)\s+targets=([\w,]+)")
EXPECT = re.compile(r"#\s*expect:\s*(\w+)(?:\s+(static|input|dynamic))?\s*$")
REFUSAL = re.compile(r"#\s*expect-refusal:\s*([\w-]+)")


def import_fixture(path: str, module: str, relpath: str):
    """Import a fixture file under its own module name, so emission can find its globals."""
    if module not in sys.modules:
        load_file(path, module, relpath)
        spec = importlib.util.spec_from_file_location(module, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[module] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[module]


@dataclass
class Fixture:
    name: str
    path: str
    root: str
    targets: list[str]
    expect: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    refusal: tuple[int, str] | None = None

    @property
    def module(self) -> str:
        return f"staticexec_fixture_{self.name}"

    def load(self):
        return import_fixture(self.path, self.module, f"fixtures/patterns/{self.name}.py")

    @property
    def root_ref(self) -> ClassRef:
        self.load()
        return ClassRef(self.module, self.root)


def fixtures() -> list[Fixture]:
    out = []
    for name in sorted(os.listdir(ROOT)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        header = next((HEADER.search(l) for l in lines if HEADER.search(l)), None)
        if header is None:
            continue
        fx = Fixture(name[:-3], path, header.group(1), header.group(2).split(","))
        for number, text in enumerate(lines, 1):
            m = EXPECT.search(text)
            if m:
                fx.expect[number] = (m.group(1), m.group(2))
            r = REFUSAL.search(text)
            if r:
                fx.refusal = (number, r.group(1))
        out.append(fx)
    return out


def plan_statements(plan, module: str) -> dict[int, tuple[str, str | None]]:
    """Line -> (kind, condition class) for every statement of every function of `module` (the fixture's
    own file: torch's functions a plan holds, such as nn.Sequential's forward, have lines of their own)."""
    return {s.first: (s.kind.value, s.condition.decided.value if s.condition else None)
            for node, _, s in plan.statements() if node.startswith(f"{module}:") and s.reaching}


def opaque_lines(plan, module: str) -> list[tuple[int, int]]:
    return [s.lines for node, _, s in plan.statements() if node.startswith(f"{module}:") and not s.reaching]
