"""How two plans of one architecture differ: unchanged, stale, renamed or changed.

The verdict is decided on the plan's structure, never on its text:

- **unchanged**: equal plans, the release each was made with set aside;
- **stale**: the same targets, reaching functions, statement classes,
  conditions, calls, call chains and unresolved calls; only line numbers
  and source hashes moved;
- **renamed**: stale once some identifiers are renamed consistently in the
  old plan's code (a release that renames `past_key_values=` to `cache=`
  in every call); the renames are reported, not the statements;
- **changed**: anything else; `diff` lists what, with the renames applied
  first so that they don't drown the real change. A plan whose only other
  change is decorators added or removed (a release that puts
  `@deprecate_kwarg(...)` on every forward) is changed, but marked as such, so
  that `check` reports the edit once for every plan that has it.

Code in a plan is cut (calls at 160 characters, chain steps at 100); two
cut texts are compared on the part both show.

It belongs to the plan store: `check` (plans.py) asks it for the verdict on each re-made plan,
after `malformed` has said that each plan in the folder can be compared at all.
"""

from __future__ import annotations

import difflib
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

VERSION_FIELDS = ("transformers", "staticexec", "seal")
_POSITION_KEYS = {"lines", "line", "source_hash", "count", "index"}
_CODE_KEYS = {"code", "call", "reason"}
_CHAIN_STEP = re.compile(r"^(?P<path>\S+?):\d+ (?P<code>.*?)(?: -> (?P<target>\S+))?$")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")
_CHAIN_CUT = 100


@dataclass(frozen=True)
class Code:
    """A piece of source as a plan records it: whitespace collapsed, perhaps cut."""

    text: str
    cut: bool

    @staticmethod
    def of(text: str, cut_at: int | None = None) -> "Code":
        """The code of a plan's text: a trailing `...` marks it cut, as does a length of `cut_at` or more."""
        text = " ".join(text.split())
        if text.endswith("..."):
            return Code(text[:-3], True)
        return Code(text, cut_at is not None and len(text) >= cut_at)


@dataclass
class Verdict:
    """How a plan moved: its kind, the renames that explain it, the decorators added or removed."""
    kind: str  # "unchanged", "stale", "renamed" or "changed"
    renames: dict[str, str] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)  # "+ @d" / "- @d": decorators added or removed
    only_decorators: bool = False  # changed, but by nothing more than the renames and `decorators`


_BLOCKS = ("body", "orelse", "handler", "finally")
_MAX_NESTING = 50


def malformed(doc: Any) -> str:
    """'' when `doc` has the shape a plan has, as far as drift reads it (any release's plan: its seal,
    schema and versions are not asked for); else what is wrong, in words."""
    if not isinstance(doc, dict):
        return f"a plan is a JSON object, not {_a(doc)}"
    missing = [f"`{k}`" for k in ("targets", "functions") if k not in doc]
    if missing:
        return f"not a plan: no {' or '.join(missing)}"
    if not isinstance(doc["targets"], (dict, list)):
        return f"`targets` is {_a(doc['targets'])}, not an object"
    if not isinstance(doc["functions"], dict):
        return f"`functions` is {_a(doc['functions'])}, not an object"
    for key in ("model_types", "not_analysed", "unresolved"):
        if key in doc and not isinstance(doc[key], list):
            return f"`{key}` is {_a(doc[key])}, not a list"
    for i, u in enumerate(doc.get("unresolved", [])):
        if not (isinstance(u, dict) and isinstance(u.get("function"), str) and isinstance(u.get("call"), str)):
            return f"`unresolved` entry {i} has no `function` and `call` strings"
    for node, entry in doc["functions"].items():
        problem = _function_problem(entry)
        if problem:
            return f"function {node}: {problem}"
    return ""


def _a(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
             bool: "a boolean", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


def _function_problem(entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"{_a(entry)}, not an object"
    if not isinstance(entry.get("statements"), list):
        return "no `statements` list"
    for key in ("decorators", "params", "chain"):
        if key in entry and not (isinstance(entry[key], list) and all(isinstance(v, str) for v in entry[key])):
            return f"`{key}` is not a list of strings"
    return _block_problem(entry["statements"], 0)


def _block_problem(statements: list, depth: int) -> str:
    if depth > _MAX_NESTING:
        return "statements nest too deep"
    for s in statements:
        if not isinstance(s, dict):
            return f"a statement is {_a(s)}, not an object"
        lines = s.get("lines")
        if not isinstance(s.get("kind"), str) or not (isinstance(lines, list) and lines
                                                      and all(type(n) is int for n in lines)):
            return "a statement without a `kind` and `lines`"
        where = f"the {s['kind']} statement at line {lines[0]}"
        for key in ("call", "condition", "iter"):
            if key in s and not (isinstance(s[key], dict) and isinstance(s[key].get("code"), str)):
                return f"{where}: `{key}` has no `code`"
        call = s.get("call", {})
        for key in ("targets", "callees"):
            if key in call and not isinstance(call[key], list):
                return f"{where}: the call's `{key}` is not a list"
        if "condition" in s and not isinstance(s["condition"].get("class"), str):
            return f"{where}: the condition has no `class`"
        for block in _BLOCKS:
            if block in s:
                if not isinstance(s[block], list):
                    return f"{where}: `{block}` is {_a(s[block])}, not a list"
                problem = _block_problem(s[block], depth + 1)
                if problem:
                    return problem
    return ""


def decorator_edits(old_doc: dict, new_doc: dict) -> list[str]:
    """Decorators added to or removed from the functions both plans analyse."""
    from collections import Counter

    edits = set()
    for node in old_doc["functions"].keys() & new_doc["functions"].keys():
        a = Counter(old_doc["functions"][node].get("decorators", []))
        b = Counter(new_doc["functions"][node].get("decorators", []))
        edits |= {f"+ @{d}" for d in b - a} | {f"- @{d}" for d in a - b}
    return sorted(edits)


def _without_decorators(shaped: Any) -> Any:
    return {**shaped, "functions": {n: {k: v for k, v in e.items() if k != "decorators"}
                                    for n, e in shaped.get("functions", {}).items()}}


def without_versions(doc: dict | None) -> dict | None:
    """A plan document without the releases it was made with and its seal (`VERSION_FIELDS`); None stays None."""
    if doc is None:
        return None
    return {k: v for k, v in doc.items() if k not in VERSION_FIELDS}


def shape(doc: dict) -> Any:
    """A plan without what moves when only lines or hashes move: positions, hashes, opaque runs."""
    return _shape(without_versions(doc), None)


def _shape(value: Any, key: str | None) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _POSITION_KEYS:
                continue
            if k == "statements":
                out[k] = [_shape(s, None) for s in v if s.get("kind") != "opaque"]
            elif k == "chain":
                out[k] = [_chain_step(step) for step in v]
            elif k == "params":
                out[k] = [Code(p, False) for p in v]
            elif k == "unresolved":
                items = [_shape(u, None) for u in v]
                out[k] = sorted(items, key=repr)
            else:
                out[k] = _shape(v, k)
        return out
    if isinstance(value, list):
        return [_shape(v, key) for v in value]
    if isinstance(value, str) and key in _CODE_KEYS:
        return Code.of(value)
    return value


def _chain_step(step: str) -> Any:
    m = _CHAIN_STEP.match(step)
    if not m:
        return step
    return (m["path"], Code.of(m["code"], _CHAIN_CUT), m["target"])


def _tokens(code: Code) -> list[str]:
    return _TOKEN.findall(code.text)


def _renamed(code: Code, renames: dict[str, str]) -> Code:
    if not renames:
        return code
    text = re.sub(r"\w+", lambda m: renames.get(m.group(0), m.group(0)), code.text)
    return Code(text, code.cut)


def _same_code(a: Code, b: Code) -> bool:
    if a.text == b.text:
        return True
    if a.cut or b.cut:  # compare what both show
        ta, tb = _tokens(a), _tokens(b)
        n = min(len(ta), len(tb)) - 1  # the last shown token may itself be cut
        if (a.cut and len(ta) <= len(tb)) or (b.cut and len(tb) <= len(ta)):
            return n >= 0 and ta[:n] == tb[:n]
    return False


def equal(old: Any, new: Any, renames: dict[str, str] | None = None) -> bool:
    """Two shapes are equal, with `renames` applied to the old one's code."""
    renames = renames or {}
    if isinstance(old, Code) and isinstance(new, Code):
        return _same_code(_renamed(old, renames), new)
    if isinstance(old, dict) and isinstance(new, dict):
        if old.keys() != new.keys():
            return False
        return all(_equal_unordered(old[k], new[k], renames) if k == "unresolved" else equal(old[k], new[k], renames)
                   for k in old)
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        if len(old) != len(new):
            return False
        if len(old) and all(isinstance(x, Code) for x in old) and all(isinstance(x, Code) for x in new):
            return all(equal(a, b, renames) for a, b in zip(old, new))
        return all(equal(a, b, renames) for a, b in zip(old, new))
    return old == new


def _equal_unordered(old: list, new: list, renames: dict[str, str]) -> bool:
    """Unresolved calls are a set: renaming may reorder them."""
    if len(old) != len(new):
        return False
    left = list(new)
    for item in old:
        match = next((i for i, other in enumerate(left) if equal(item, other, renames)), None)
        if match is None:
            return False
        left.pop(match)
    return not left


def _pair_renames(a: Code, b: Code) -> dict[str, str] | None:
    """The identifiers renamed between two codes that differ in nothing else; None when they do."""
    ta, tb = _tokens(a), _tokens(b)
    if a.cut or b.cut:
        n = min(len(ta), len(tb)) - 1
        ta, tb = ta[:n], tb[:n]
    elif len(ta) != len(tb):
        return None
    out: dict[str, str] = {}
    for x, y in zip(ta, tb):
        if x == y:
            continue
        if not (_IDENTIFIER.match(x) and _IDENTIFIER.match(y)) or keyword.iskeyword(x) or keyword.iskeyword(y):
            return None
        if out.setdefault(x, y) != y:
            return None
    return out


def _signature(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value.get('kind')} {value.get('statement', '')} {sorted(value)}"
    return type(value).__name__


def find_renames(old: Any, new: Any) -> dict[str, int]:
    """Candidate renames `a -> b` seen between aligned codes of two shapes, with how often."""
    found: dict[str, int] = {}

    def walk(a: Any, b: Any) -> None:
        if isinstance(a, Code) and isinstance(b, Code):
            pairs = _pair_renames(a, b)
            for x, y in (pairs or {}).items():
                found[f"{x} -> {y}"] = found.get(f"{x} -> {y}", 0) + 1
        elif isinstance(a, dict) and isinstance(b, dict):
            for k in a.keys() & b.keys():
                walk(a[k], b[k])
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) == len(b):
                for x, y in zip(a, b):
                    walk(x, y)
                return
            matcher = difflib.SequenceMatcher(a=[_signature(x) for x in a], b=[_signature(y) for y in b],
                                              autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag in ("equal", "replace") and i2 - i1 == j2 - j1:
                    for x, y in zip(a[i1:i2], b[j1:j2]):
                        walk(x, y)

    walk(old, new)
    return found


def consistent(candidates: dict[str, int]) -> dict[str, str]:
    """The renames to apply: each old name mapped to the new name it most often became."""
    best: dict[str, tuple[int, str]] = {}
    for pair, n in candidates.items():
        a, b = pair.split(" -> ")
        if a not in best or n > best[a][0]:
            best[a] = (n, b)
    return {a: b for a, (_, b) in sorted(best.items())}


def compare(old_doc: dict, new_doc: dict) -> Verdict:
    """The verdict for two plans of one architecture."""
    if without_versions(old_doc) == without_versions(new_doc):
        return Verdict("unchanged")
    old, new = shape(old_doc), shape(new_doc)
    if equal(old, new):
        return Verdict("stale")
    renames = consistent(find_renames(old, new))
    if renames and equal(old, new, renames):
        return Verdict("renamed", _needed(old, new, renames))
    edits = decorator_edits(old_doc, new_doc)
    bare_old, bare_new = _without_decorators(old), _without_decorators(new)
    if edits and equal(bare_old, bare_new, renames):
        return Verdict("changed", _needed(bare_old, bare_new, renames), edits, only_decorators=True)
    return Verdict("changed", renames, edits)


def _needed(old: Any, new: Any, renames: dict[str, str]) -> dict[str, str]:
    """The renames without which the shapes differ."""
    return {a: b for a, b in renames.items() if not equal(old, new, {k: v for k, v in renames.items() if k != a})}


# ----- what a changed plan shows ---------------------------------------------------------------


def _show(code: Any) -> str:
    if isinstance(code, Code):
        return code.text + ("..." if code.cut else "")
    return str(code)


def _flatten(statements: list[dict], renames: dict[str, str], depth: int = 0) -> list[tuple[Any, str]]:
    """(comparable, shown) for each non-opaque statement of a plan (not shaped: it keeps its lines)."""
    out = []
    for s in statements:
        if s["kind"] == "opaque":
            continue
        if "call" in s:
            code = _renamed(Code.of(s["call"]["code"]), renames)
            extra = ", ".join(s["call"].get("targets") or s["call"].get("callees") or [])
            key, detail = (s["kind"], code, extra), f"{_show(code)[:120]} -> {extra}"
        elif "condition" in s:
            code = _renamed(Code.of(s["condition"]["code"]), renames)
            key, detail = (s["kind"], code, s["condition"]["class"]), f"if {_show(code)} ({s['condition']['class']})"
        elif "iter" in s:
            code = _renamed(Code.of(s["iter"]["code"]), renames)
            key, detail = (s["kind"], code), f"for ... in {_show(code)}"
        else:
            key, detail = (s["kind"], s.get("statement", "")), s.get("statement", "")
        indent = "  " * depth
        out.append(((depth, key), f"{indent}{s['kind']:<8} line {s['lines'][0]:<5} {detail}"))
        for block in ("body", "orelse"):
            out += _flatten(s.get(block, []), renames, depth + 1)
    return out


class _Key:
    """A flattened statement compared as `equal` compares: cut code on what both show."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and equal(self.value, other.value)

    def __hash__(self) -> int:
        depth, key = self.value
        return hash((depth, key[0]))


def diff(old: dict, new: dict, renames: dict[str, str] | None = None) -> list[str]:
    """What moved between two plans: targets, reaching functions, statements, chains, unresolved calls."""
    renames = renames or {}
    lines: list[str] = []
    if sorted(old["targets"]) != sorted(new["targets"]):
        lines.append(f"  targets: {sorted(old['targets'])} -> {sorted(new['targets'])}")
    for key in ("model_types", "not_analysed"):
        if old.get(key) != new.get(key):
            lines.append(f"  {key}: {old.get(key)} -> {new.get(key)}")
    for node in sorted(set(old["functions"]) | set(new["functions"])):
        a, b = old["functions"].get(node), new["functions"].get(node)
        if a is None:
            lines.append(f"  + reaching function {node}")
            continue
        if b is None:
            lines.append(f"  - reaching function {node}")
            continue
        moved: list[str] = []
        fa, fb = _flatten(a["statements"], renames), _flatten(b["statements"], {})
        ka, kb = [_Key(x) for x, _ in fa], [_Key(x) for x, _ in fb]
        if ka != kb:
            matcher = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag != "equal":
                    moved += [f"      - {shown}" for _, shown in fa[i1:i2]]
                    moved += [f"      + {shown}" for _, shown in fb[j1:j2]]
        for key in ("decorators", "params", "chain"):
            sa, sb = shape({key: a.get(key, [])}), shape({key: b.get(key, [])})
            if not equal(sa, sb, renames):
                moved.append(f"      {key}: {a.get(key)} -> {b.get(key)}")
        if moved:
            lines.append(f"  ~ {node}")
            lines += moved
    ua, ub = shape({"unresolved": old.get("unresolved", [])}), shape({"unresolved": new.get("unresolved", [])})
    if not equal(ua, ub, renames):
        shown_a = {f"{u['function']}: {u['call']}" for u in old.get("unresolved", [])}
        shown_b = {f"{u['function']}: {u['call']}" for u in new.get("unresolved", [])}
        lines += [f"  - unresolved {u}" for u in sorted(shown_a - shown_b)]
        lines += [f"  + unresolved {u}" for u in sorted(shown_b - shown_a)]
        if shown_a == shown_b:
            lines.append("  ~ unresolved calls: other reasons")
    if not lines:  # none of the above moved: name the fields that did (an edited architecture, schema, ...)
        a, b = shape(old), shape(new)
        for key in sorted(set(a) | set(b)):
            if not equal(a.get(key), b.get(key), renames):
                if isinstance(old.get(key, new.get(key)), (dict, list)):
                    lines.append(f"  ~ {key}: other details")
                else:
                    lines.append(f"  {key}: {old.get(key)!r} -> {new.get(key)!r}")
    return lines
