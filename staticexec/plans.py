"""Plans as committed artifacts: plan every architecture, index them, cache by source content.

`staticexec plan --all` writes DIR/<Arch>.json for each generative
architecture of the installed transformers, plus DIR/index.json with each
architecture's status, targets, config model types and source hashes. A
failure is recorded in the index and never stops the rest. An on-disk cache
keyed by the content of every file an analysis read makes a second run over
unchanged sources cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from typing import Any

from . import __version__
from .messages import Refused, UsageError
from .validate import check_index
from .source import ACCESSED, loaded, sha256

INDEX = "index.json"
CACHE_DIR = ".staticexec-cache"


@lru_cache(maxsize=1)
def _environment_key() -> str:
    """What else a cached plan depends on: staticexec's own code and the analysis libraries."""
    import jedi
    import libcst

    digest = hashlib.sha256(f"jedi {jedi.__version__} libcst {getattr(libcst, '__version__', '?')}".encode())
    package = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as handle:
                digest.update(name.encode() + handle.read())
    return digest.hexdigest()[:16]


def _cache_path(cache: str, arch: str) -> str:
    return os.path.join(cache, "plans", f"{arch}.json")


def _file_hashes(paths: set[str]) -> dict[str, str]:
    out = {}
    for path in sorted(paths):
        sf = loaded(path)
        if sf is not None:
            out[path] = sf.hash
    return out


def _cached(cache: str, arch: str) -> dict | None:
    """The cached result for an architecture, if every file its analysis read is unchanged."""
    path = _cache_path(cache, arch)
    try:
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None
    if entry.get("environment") != _environment_key():
        return None
    for file, digest in entry["files"].items():
        try:
            with open(file, encoding="utf-8") as handle:
                if sha256(handle.read()) != digest:
                    return None
        except OSError:
            return None
    return entry


def plan_one(arch: str, out: str, cache: str | None) -> dict:
    """Plan one architecture with its default targets into `out`; the index row for it."""
    from .api import analyse_architecture
    from .cli import write_atomic

    entry = _cached(cache, arch) if cache else None
    if entry is None:
        ACCESSED.clear()
        row: dict[str, Any]
        text = None
        try:
            plan = analyse_architecture(arch)
            text = plan.to_json()
            row = {"status": "ok", **summary(plan.doc)}
        except Refused as exc:
            row = {"status": "refused", "reason": str(exc.first)}
        except UsageError as exc:
            row = {"status": "error", "reason": str(exc)}
        entry = {"environment": _environment_key(), "files": _file_hashes(set(ACCESSED)), "row": row, "plan": text}
        if cache:
            os.makedirs(os.path.dirname(_cache_path(cache, arch)), exist_ok=True)
            write_atomic(_cache_path(cache, arch), json.dumps(entry, sort_keys=True))
    target = os.path.join(out, f"{arch}.json")
    if entry["plan"] is not None:
        if not _same(target, entry["plan"]):
            write_atomic(target, entry["plan"])
    elif os.path.exists(target):
        os.unlink(target)
    return dict(entry["row"])


def _same(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() == text
    except OSError:
        return False


def summary(doc: dict) -> dict:
    """What the index keeps of a plan: targets, model types, and the hash of every analysed function."""
    return {
        "targets": sorted(doc["targets"]),
        "model_types": doc["model_types"],
        "source_hashes": {e["function"]: e["source_hash"] for e in doc["functions"].values()},
    }


def write_index(out: str, rows: list[dict], transformers: str) -> dict:
    from .cli import write_atomic

    index = {
        "transformers": transformers,
        "staticexec": __version__,
        "architectures": {r["arch"]: {k: v for k, v in r.items() if k != "arch"} for r in rows},
    }
    write_atomic(os.path.join(out, INDEX), json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


def _flatten(statements: list[dict], depth: int = 0) -> list[tuple[str, str]]:
    """(comparable text without line numbers, shown text with them) for each non-opaque statement."""
    out = []
    for s in statements:
        if s["kind"] == "opaque":
            continue
        detail = ""
        if "call" in s:
            detail = s["call"]["code"][:90]
            extra = s["call"].get("targets") or s["call"].get("callees") or []
            detail += f" -> {', '.join(extra)}"
        elif "condition" in s:
            detail = f"if {s['condition']['code']} ({s['condition']['class']})"
        elif "iter" in s:
            detail = f"for ... in {s['iter']['code']}"
        else:
            detail = s.get("statement", "")
        indent = "  " * depth
        out.append((f"{indent}{s['kind']} {detail}", f"{indent}{s['kind']:<8} line {s['lines'][0]:<5} {detail}"))
        for block in ("body", "orelse"):
            out += _flatten(s.get(block, []), depth + 1)
    return out


def structure(doc: dict) -> dict:
    return {
        "targets": sorted(doc["targets"]),
        "functions": {n: [a for a, _ in _flatten(e["statements"])] for n, e in doc["functions"].items()},
    }


def diff(old: dict, new: dict) -> list[str]:
    """What moved between two plans: targets, reaching functions, statements and call chains."""
    import difflib

    lines: list[str] = []
    if sorted(old["targets"]) != sorted(new["targets"]):
        lines.append(f"  targets: {sorted(old['targets'])} -> {sorted(new['targets'])}")
    for node in sorted(set(old["functions"]) | set(new["functions"])):
        a, b = old["functions"].get(node), new["functions"].get(node)
        if a is None:
            lines.append(f"  + reaching function {node}")
            continue
        if b is None:
            lines.append(f"  - reaching function {node}")
            continue
        fa, fb = _flatten(a["statements"]), _flatten(b["statements"])
        if [x for x, _ in fa] != [x for x, _ in fb]:
            lines.append(f"  ~ {node}")
            matcher = difflib.SequenceMatcher(a=[x for x, _ in fa], b=[x for x, _ in fb], autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag == "equal":
                    continue
                lines += [f"      - {shown}" for _, shown in fa[i1:i2]]
                lines += [f"      + {shown}" for _, shown in fb[j1:j2]]
    return lines


def check(folder: str, jobs: int = 1) -> tuple[int, list[str]]:
    """Re-analyse committed plans against the installed transformers: unchanged, changed or stale."""
    import tempfile

    from . import sweep

    index_path = os.path.join(folder, INDEX)
    try:
        with open(index_path, encoding="utf-8") as handle:
            index = json.load(handle)
    except OSError as exc:
        raise UsageError(f"{index_path}: {exc.strerror}; not a plans folder") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(f"{index_path}: not JSON ({exc.msg})") from exc
    check_index(index, index_path)
    archs = sorted(index["architectures"])
    report: list[str] = []
    changed = 0
    with tempfile.TemporaryDirectory() as scratch:
        rows = sweep.run("plan", archs, {"out": scratch, "cache": None}, jobs=jobs, timeout=600, label="check")
        for row in rows:
            arch = row["arch"]
            old_row = index["architectures"][arch]
            old_path, new_path = os.path.join(folder, f"{arch}.json"), os.path.join(scratch, f"{arch}.json")
            old_doc = _read(old_path)
            new_doc = _read(new_path)
            if old_row["status"] != row["status"]:
                changed += 1
                report.append(f"{arch}: changed: {old_row['status']} -> {row['status']} {row.get('reason', '')}".rstrip())
                continue
            if old_doc is None and new_doc is None:
                report.append(f"{arch}: unchanged ({row['status']})")
                continue
            if _comparable(old_doc) == _comparable(new_doc):
                report.append(f"{arch}: unchanged")
                continue
            changed += 1
            if old_doc is MALFORMED:
                moved = [f"  plan file {old_path} is malformed (not a JSON object)"]
            else:
                moved = diff(old_doc, new_doc) if old_doc and new_doc else ["  plan file missing"]
            if not moved:
                report.append(f"{arch}: stale: same statements and chains, other source (hashes or lines)")
            else:
                report.append(f"{arch}: changed:")
                report += moved
    return changed, report


def _comparable(doc: dict | None) -> dict | None:
    """A plan without the versions it was made with: equal sources and analysis make equal plans."""
    if doc is None:
        return None
    return {k: v for k, v in doc.items() if k not in ("transformers", "staticexec")}


MALFORMED: dict = {"malformed": True}  # a plan file that exists but is not a JSON object


def _read(path: str) -> dict | None:
    """A plan file's document; None when it is missing, MALFORMED when it can't be read as a plan."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return MALFORMED
    return doc if isinstance(doc, dict) else MALFORMED
