"""Plans as committed artifacts: plan every architecture, index them, cache by source content.

`staticexec plan --all` writes DIR/<Arch>.json for each generative
architecture of the installed transformers, plus DIR/index.json with each
architecture's status, targets, config model types and source hashes. A
failure is recorded in the index and never stops the rest. An on-disk cache
keyed by the content of every file an analysis read makes a second run over
unchanged sources cheap. `check` re-makes a folder's plans against the
installed transformers (from that cache where it can) and has `drift` judge
each one; it also lists the architectures new to the release or removed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from staticexec.version import __version__, code_digest
from staticexec.messages import MalformedPlan, Refused, UsageError
from staticexec.emit.validate import check_index
from staticexec.analysis.plan import Plan
from staticexec.analysis.source import accessed, loaded, sha256
from staticexec.files import write_atomic

INDEX = "index.json"
CACHE_DIR = ".staticexec-cache"


@lru_cache(maxsize=1)
def _environment_key() -> str:
    """What else a cached plan depends on: staticexec's own code and the analysis libraries."""
    import jedi
    import libcst

    versions = f"jedi {jedi.__version__} libcst {getattr(libcst, '__version__', '?')} code {code_digest()}"
    return hashlib.sha256(versions.encode()).hexdigest()[:16]


def _cache_path(cache: str, arch: str) -> str:
    """One entry per architecture and installed transformers, so several releases share one cache."""
    return os.path.join(cache, "plans", _transformers_key(), f"{arch}.json")


@lru_cache(maxsize=1)
def _transformers_key() -> str:
    """The installed transformers, by version and place, without importing it."""
    from importlib.util import find_spec

    spec = find_spec("transformers")
    where = os.path.dirname(spec.origin) if spec and spec.origin else "?"
    try:
        from importlib.metadata import version

        release = version("transformers")
    except Exception:  # pragma: no cover
        release = "?"
    return f"{release}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


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


def plan_job(arch: str, options: dict) -> dict:
    """`plan_one` as a sweep job: options out (the folder) and cache."""
    return plan_one(arch, options["out"], options.get("cache"))


def plan_one(arch: str, out: str, cache: str | None) -> dict:
    """Plan one architecture with its default targets into `out`; the index row for it."""
    from staticexec.api import analyse_architecture

    entry = _cached(cache, arch) if cache else None
    if entry is None:
        accessed().clear()
        row: dict[str, Any]
        text = None
        try:
            plan = analyse_architecture(arch)
            text = plan.to_json()
            row = {"status": "ok", **summary(plan)}
        except Refused as exc:
            row = {"status": "refused", "reason": str(exc.first)}
        except UsageError as exc:
            row = {"status": "error", "reason": str(exc)}
        entry = {"environment": _environment_key(), "files": _file_hashes(set(accessed())), "row": row, "plan": text}
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


def summary(plan: Plan) -> dict:
    """What the index keeps of a plan: targets, model types, and the hash of every analysed function."""
    return {
        "targets": plan.target_names,
        "model_types": list(plan.model_types),
        "source_hashes": {fn.function: fn.source_hash for fn in plan.functions.values()},
    }


def write_index(out: str, rows: list[dict], transformers: str) -> dict:
    """Write the folder's index.json (release, staticexec version, one row per architecture) and return it."""

    index = {
        "transformers": transformers,
        "staticexec": __version__,
        "architectures": {r["arch"]: {k: v for k, v in r.items() if k != "arch"} for r in rows},
    }
    write_atomic(os.path.join(out, INDEX), json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


@dataclass
class CheckResult:
    """What `check` found: a verdict per planned architecture, and the architectures added or removed."""

    transformers: str
    planned_with: str
    verdicts: dict[str, str] = field(default_factory=dict)  # arch -> unchanged, stale, renamed or changed
    new: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renames: dict[str, list[str]] = field(default_factory=dict)  # "a -> b" -> the architectures renaming it
    decorators: dict[str, list[str]] = field(default_factory=dict)  # "+ @d" -> the plans changed only by it
    report: list[str] = field(default_factory=list)
    cached: int = 0

    @property
    def counts(self) -> dict[str, int]:
        """How many architectures got each verdict."""
        out: dict[str, int] = {}
        for verdict in self.verdicts.values():
            out[verdict] = out.get(verdict, 0) + 1
        return out

    @property
    def current(self) -> bool:
        """Whether every plan is unchanged and no architecture is new or removed."""
        return not self.new and not self.removed and all(v == "unchanged" for v in self.verdicts.values())

    def summary(self) -> str:
        """One line: the releases compared, the count of each verdict, and how many are new or removed."""
        counts = self.counts
        parts = [f"{counts.get(k, 0)} {k}" for k in ("unchanged", "stale", "renamed", "changed")]
        return (f"{len(self.verdicts)} architectures planned with transformers {self.planned_with or '?'}, "
                f"checked on {self.transformers}: {', '.join(parts)}; {len(self.new)} new, {len(self.removed)} removed")


def check(folder: str, jobs: int = 1, cache: str | None = CACHE_DIR,
          installed: list[str] | None = None) -> CheckResult:
    """Re-analyse committed plans against the installed transformers and say what moved, and how.

    Each plan is re-made (from the plan cache when every file its analysis
    read is unchanged, else in worker processes) and compared on its
    structure (`drift`). Architectures the installed transformers has and
    the folder lacks are new; the reverse are removed and not re-analysed.
    """
    import tempfile

    from staticexec import sweep
    from staticexec.version import transformers_version

    index_path = os.path.join(folder, INDEX)
    try:
        with open(index_path, encoding="utf-8") as handle:
            index = json.load(handle)
    except OSError as exc:
        raise UsageError(f"{index_path}: {exc.strerror}; not a plans folder") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(f"{index_path}: not JSON ({exc.msg})") from exc
    check_index(index, index_path)
    for arch, row in sorted(index.get("architectures", {}).items()):  # before any analysis: one line for a broken file
        path = os.path.join(folder, f"{arch}.json")
        if read_plan_file(path) is None and row.get("status") == "ok":
            raise UsageError(f"{path}: no such file, where {index_path} lists {arch} as planned; not a whole plans "
                             "folder (write it again with `staticexec plan --all`)")
    if installed is None:
        from staticexec.analysis.architectures import all_generative

        installed = all_generative()
    planned = sorted(index.get("architectures", {}))
    archs = [a for a in planned if a in set(installed)]
    cache = os.path.abspath(cache) if cache else None
    with tempfile.TemporaryDirectory() as scratch:
        rows = {}
        for arch in archs:  # the cache is read here: unchanged sources need no worker at all
            if cache and _cached(cache, arch) is not None:
                rows[arch] = plan_one(arch, scratch, cache)
        cached = len(rows)
        missing = [a for a in archs if a not in rows]
        for row in sweep.run(plan_job, missing, {"out": scratch, "cache": cache}, jobs=jobs, timeout=600, label="check"):
            rows[row["arch"]] = row
        result = judge(folder, index, scratch, rows, installed, transformers_version())
    result.cached = cached
    return result


def judge(folder: str, index: dict, fresh: str, rows: dict[str, dict], installed: list[str],
          transformers: str) -> CheckResult:
    """Compare the plans in `folder` (described by `index`) with those re-made into `fresh` (`rows`)."""
    from staticexec import drift

    planned = sorted(index.get("architectures", {}))
    result = CheckResult(transformers, index.get("transformers", ""))
    result.new = sorted(set(installed) - set(planned))
    result.removed = sorted(set(planned) - set(installed))
    comparisons: dict[str, tuple[dict | None, dict | None, drift.Verdict, str]] = {}
    for arch in sorted(rows):
        row, old_row = rows[arch], index["architectures"][arch]
        old_doc = read_plan_file(os.path.join(folder, f"{arch}.json"))
        new_doc = read_plan_file(os.path.join(fresh, f"{arch}.json"))
        if old_row["status"] != row["status"]:
            note = f"{old_row['status']} -> {row['status']} {row.get('reason', '')}".rstrip()
            comparisons[arch] = (old_doc, new_doc, drift.Verdict("changed"), note)
        elif old_doc is None and new_doc is None:
            comparisons[arch] = (None, None, drift.Verdict("unchanged"), "")
        elif old_doc is None or new_doc is None:
            comparisons[arch] = (old_doc, new_doc, drift.Verdict("changed"), "plan file missing")
        else:
            comparisons[arch] = (old_doc, new_doc, drift.compare(old_doc, new_doc), "")
    for arch, (old_doc, new_doc, verdict, note) in comparisons.items():
        result.verdicts[arch] = verdict.kind
        if verdict.kind == "renamed" or verdict.only_decorators:
            for a, b in verdict.renames.items():
                result.renames.setdefault(f"{a} -> {b}", []).append(arch)
        if verdict.only_decorators:
            for edit in verdict.decorators:
                result.decorators.setdefault(edit, []).append(arch)
            result.report.append(f"{arch}: changed: only by the release-wide edits summarised below")
        elif verdict.kind == "changed" and old_doc is not None and new_doc is not None and not note:
            result.report.append(f"{arch}: changed:")
            result.report += drift.diff(old_doc, new_doc, verdict.renames) or ["  (same statements; other details)"]
        elif verdict.kind == "renamed":
            renamed = ", ".join(f"{a} -> {b}" for a, b in verdict.renames.items())
            result.report.append(f"{arch}: renamed: {renamed}")
        elif verdict.kind == "stale":
            result.report.append(f"{arch}: stale: same statements, conditions and call chains; other lines or hashes")
        else:
            result.report.append(f"{arch}: {verdict.kind}{': ' + note if note else ''}")
    for pair, where in sorted(result.renames.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        result.report.append(f"renamed in {len(where)} plans: {pair}")
    for edit, where in sorted(result.decorators.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        what = "added to" if edit.startswith("+") else "removed from"
        result.report.append(f"decorator {what} forwards in {len(where)} plans: {edit[2:]}")
    result.report += [f"new: {arch} (no plan in {folder})" for arch in result.new]
    result.report += [f"removed: {arch} (not in the installed transformers)" for arch in result.removed]
    return result


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


def read_plan_file(path: str) -> dict | None:
    """A plan file's document for `drift`; None when there is no such file. A file that is not UTF-8,
    not JSON, cut short, or not shaped as a plan is a `MalformedPlan` (a UsageError: one line, exit 2)
    naming the file and what is wrong."""
    from staticexec import drift

    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedPlan(f"{path}: not a plan: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise MalformedPlan(f"{path}: not a plan: the file is empty")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")  # it runs to the end
        what = "truncated: the JSON ends before it is complete" if cut else f"not JSON: {exc.msg}"
        raise MalformedPlan(f"{path}: {what} (line {exc.lineno}, column {exc.colno})") from None
    problem = drift.malformed(doc)
    if problem:
        raise MalformedPlan(f"{path}: malformed plan: {problem}")
    return doc
