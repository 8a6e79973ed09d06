"""The wrap plan as typed values: what stage 4 (planner.py) writes and every later stage reads.

A plan is frozen dataclasses and enums: `Plan` -> `Function` -> `Statement` (with its `Call`,
`Condition` and blocks of statements) and `Unresolved`. JSON is read and written only here, at
the boundary: `Plan.from_json` checks a document field by field (docs/plan.schema.json is the
contract) and refuses a malformed, foreign-schema or edited one with one `MalformedPlan` line;
`Plan.to_json` writes the deterministic document. `walk` is the one walk over statements.
"""

from __future__ import annotations

import enum
import hashlib
import json
import types
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping

from staticexec.messages import MalformedPlan

SCHEMA_VERSION = 2


class Kind(str, enum.Enum):
    """A statement's class: it calls a target, calls a reaching function, holds such calls, or neither."""

    TARGET = "target"
    ANCESTOR = "ancestor"
    CONTROL = "control"
    OPAQUE = "opaque"


class Control(str, enum.Enum):
    """Which compound statement a control entry is; `exit` is a `break` / `continue` in an unrolled loop."""

    IF = "if"
    FOR = "for"
    WHILE = "while"
    WITH = "with"
    TRY = "try"
    EXIT = "exit"


class Decided(str, enum.Enum):
    """When a condition or loop iterable is known: from the source and config, from the inputs, or never."""

    STATIC = "static"
    INPUT = "input"
    DYNAMIC = "dynamic"


@dataclass(frozen=True)
class Call:
    """The reaching call of a target or ancestor statement: where it is, and what it calls."""

    line: int
    code: str
    index: int  # among the statement's calls, in source order
    targets: tuple[str, ...] = ()
    callees: tuple[str, ...] = ()


@dataclass(frozen=True)
class Condition:
    """An `if` test or a `for` iterable, one line of code, and when it is decided."""

    code: str
    decided: Decided


@dataclass(frozen=True)
class Statement:
    """One planned statement, or a run of `count` opaque ones; a control statement holds blocks of them."""

    kind: Kind
    lines: tuple[int, int]
    count: int = 0  # opaque: how many statements the run holds
    call: Call | None = None  # target, ancestor
    statement: Control | None = None  # control
    condition: Condition | None = None  # if
    iter: Condition | None = None  # for
    items: tuple[str, ...] | None = None  # with
    blocks: tuple[tuple[str, tuple["Statement", ...]], ...] = ()  # control: ("body", ...), ("orelse", ...)

    @property
    def first(self) -> int:
        """The statement's first line."""
        return self.lines[0]

    @property
    def reaching(self) -> bool:
        """Whether the statement is not opaque: it calls, or holds, what reaches a target."""
        return self.kind is not Kind.OPAQUE

    def block(self, name: str) -> tuple["Statement", ...]:
        """One block of a control statement by its name (`body`, `orelse`, ...); empty when it has none."""
        return dict(self.blocks).get(name, ())


@dataclass(frozen=True)
class Function:
    """One reaching function: where it is, the source it was planned from, and its statements."""

    function: str  # module:qualname
    self_class: str | None  # module:Class of `self`, None for a plain function
    path: str
    lines: tuple[int, int]
    source_hash: str
    decorators: tuple[str, ...]
    params: tuple[str, ...]
    statements: tuple[Statement, ...]
    chain: tuple[str, ...] = ()
    class_decorators: tuple[str, ...] = ()  # its class's wrapper decorators (decorators.CLASS_WRAPPERS), outermost first


@dataclass(frozen=True)
class Unresolved:
    """A call the analysis could not resolve, with the reason."""

    function: str
    path: str
    line: int
    call: str
    reason: str
    receiver_is_self: bool
    reaching_function: bool


@dataclass(frozen=True)
class Plan:
    """A wrap plan: every reaching function from the root forward down to the target classes."""

    architecture: str
    root: str
    targets: Mapping[str, str]  # target class name -> module:Class
    functions: Mapping[str, Function]  # by call-graph node
    model_types: tuple[str, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    not_analysed: tuple[str, ...] = ()
    staticexec: str = ""
    transformers: str = ""
    schema: int = SCHEMA_VERSION
    seal: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", types.MappingProxyType(dict(self.targets)))
        object.__setattr__(self, "functions", types.MappingProxyType(dict(self.functions)))

    @property
    def target_names(self) -> list[str]:
        """The target class names, sorted."""
        return sorted(self.targets)

    def function(self, node: str) -> Function | None:
        """The analysis of one reaching function by its node, if the plan has it."""
        return self.functions.get(node)

    def statements(self) -> Iterator[tuple[str, Function, Statement]]:
        """(node, function, statement) for every statement of every function, sorted by node, blocks in order."""
        for node, fn in sorted(self.functions.items()):
            for s in walk(fn.statements):
                yield node, fn, s

    def sealed(self) -> "Plan":
        """The plan with its `seal` computed over everything else in it."""
        return replace(self, seal=seal(self.to_dict()))

    # ----- the JSON boundary ------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The plan as the JSON document of docs/plan.schema.json."""
        doc = {
            "schema": self.schema,
            "staticexec": self.staticexec,
            "transformers": self.transformers,
            "architecture": self.architecture,
            "root": self.root,
            "targets": dict(self.targets),
            "model_types": list(self.model_types),
            "functions": {node: _function_json(fn) for node, fn in self.functions.items()},
            "unresolved": [_unresolved_json(u) for u in self.unresolved],
            "not_analysed": list(self.not_analysed),
        }
        if self.seal:
            doc["seal"] = self.seal
        return doc

    def to_json(self) -> str:
        """The plan as deterministic JSON: sorted keys, one-space indent, a final newline."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, doc: Any, where: str = "plan") -> "Plan":
        """Read a plan document; a malformed one, another schema or a broken seal is one `MalformedPlan` line.

        The checks run in this order: structure, schema, seal. A document with fields staticexec does not
        write is malformed too: what is read is all there is."""
        try:
            plan = _read_plan(doc)
        except _Bad as bad:
            raise MalformedPlan(f"{where}: {bad}") from None
        if plan.schema != SCHEMA_VERSION:
            raise MalformedPlan(f"{where}: plan schema {plan.schema} is not the supported {SCHEMA_VERSION}")
        if doc.get("seal") != seal(doc):
            raise MalformedPlan(f"{where}: " + ("edited after staticexec wrote it (its `seal` does not match its content)"
                                                if "seal" in doc else "no `seal`: not written by `staticexec plan`")
                                + "; write it again with `staticexec plan`")
        if plan.to_dict() != doc:
            extra = sorted(_extra_keys(doc, plan.to_dict()))
            raise MalformedPlan(f"{where}: fields staticexec does not write: {', '.join(extra[:3]) or 'values out of shape'}")
        return plan


def seal(doc: dict) -> str:
    """The digest a plan carries over everything else in it (`seal`): staticexec writes it with the analysis,
    so a plan edited afterwards, its statement classes changed against the unchanged source, does not match."""
    body = {k: v for k, v in doc.items() if k != "seal"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def walk(statements: tuple[Statement, ...]) -> Iterator[Statement]:
    """Every statement of a block, and of the blocks inside it, in source order (a statement before its blocks)."""
    for s in statements:
        yield s
        for _, block in s.blocks:
            yield from walk(block)


# ----- writing ---------------------------------------------------------------------------------


def _statement_json(s: Statement) -> dict:
    out: dict = {"kind": s.kind.value, "lines": list(s.lines)}
    if s.kind is Kind.OPAQUE:
        out["count"] = s.count
    if s.call is not None:
        call: dict = {"line": s.call.line, "code": s.call.code, "index": s.call.index}
        if s.call.targets:
            call["targets"] = list(s.call.targets)
        if s.call.callees:
            call["callees"] = list(s.call.callees)
        out["call"] = call
    if s.statement is not None:
        out["statement"] = s.statement.value
    for key, condition in (("condition", s.condition), ("iter", s.iter)):
        if condition is not None:
            out[key] = {"code": condition.code, "class": condition.decided.value}
    if s.items is not None:
        out["items"] = list(s.items)
    for name, block in s.blocks:
        out[name] = [_statement_json(b) for b in block]
    return out


def _function_json(fn: Function) -> dict:
    return {
        "function": fn.function,
        "self_class": fn.self_class,
        "path": fn.path,
        "lines": list(fn.lines),
        "source_hash": fn.source_hash,
        "decorators": list(fn.decorators),
        "params": list(fn.params),
        "statements": [_statement_json(s) for s in fn.statements],
        "chain": list(fn.chain),
        **({"class_decorators": list(fn.class_decorators)} if fn.class_decorators else {}),
    }


def _unresolved_json(u: Unresolved) -> dict:
    return {"function": u.function, "path": u.path, "line": u.line, "call": u.call, "reason": u.reason,
            "receiver_is_self": u.receiver_is_self, "reaching_function": u.reaching_function}


# ----- reading: every field checked, the first malformed one named ------------------------------

BLOCKS = ("body", "orelse", "handler", "finally")


class _Bad(Exception):
    """A malformed field, in words."""


def json_type(value: Any) -> str:
    """A JSON value's type in words (object, list, string, ...), for messages on malformed documents."""
    return {dict: "object", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _field(obj: dict, key: str, kind: type, where: str, default: Any = ...) -> Any:
    if key not in obj:
        if default is not ...:
            return default
        raise _Bad(f"{where}no `{key}`")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Bad(f"{where}`{key}` is a {json_type(value)}")
    return value


def _strings(values: list, what: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in values):
        raise _Bad(f"{what} holds something other than strings")
    return tuple(values)


def _span(value: Any) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(type(n) is int and n > 0 for n in value):
        return (value[0], value[1])
    return None


def _read_plan(doc: Any) -> Plan:
    if not isinstance(doc, dict):
        raise _Bad(f"a plan is a JSON object, not a {json_type(doc)}")
    missing = [k for k in ("schema", "architecture", "root", "targets", "functions") if k not in doc]
    if missing:
        raise _Bad(f"not a plan (missing {', '.join(missing)})")
    for key, kind in (("architecture", str), ("root", str), ("targets", dict), ("functions", dict)):
        if not isinstance(doc[key], kind):
            raise _Bad(f"`{key}` is a {json_type(doc[key])}, not {'a string' if kind is str else 'an object'}")
    for key in ("model_types", "unresolved", "not_analysed"):
        if key in doc and not isinstance(doc[key], list):
            raise _Bad(f"`{key}` is a {json_type(doc[key])}, not a list")
    if not all(isinstance(v, str) for v in doc["targets"].values()):
        raise _Bad("`targets` maps class names to `module:Class` strings")
    if doc["root"] not in doc["functions"]:
        raise _Bad(f"the root {doc['root']} has no entry in `functions`")
    functions = {}
    for node, entry in doc["functions"].items():
        try:
            functions[node] = _read_function(entry)
        except _Bad as bad:
            raise _Bad(f"function {node}: {bad}") from None
    if type(doc["schema"]) is not int:
        raise _Bad(f"`schema` is a {json_type(doc['schema'])}")
    return Plan(
        architecture=doc["architecture"],
        root=doc["root"],
        targets=doc["targets"],
        functions=functions,
        model_types=_strings(doc.get("model_types", []), "`model_types`"),
        unresolved=tuple(_read_unresolved(u) for u in doc.get("unresolved", [])),
        not_analysed=_strings(doc.get("not_analysed", []), "`not_analysed`"),
        staticexec=_field(doc, "staticexec", str, "", ""),
        transformers=_field(doc, "transformers", str, "", ""),
        schema=doc["schema"],
        seal=_field(doc, "seal", str, "", ""),
    )


def _read_function(entry: Any) -> Function:
    if not isinstance(entry, dict):
        raise _Bad(f"a {json_type(entry)}, not an object")
    fields = {key: _field(entry, key, kind, "") for key, kind in (
        ("function", str), ("path", str), ("source_hash", str), ("lines", list), ("params", list), ("statements", list))}
    if "self_class" not in entry:
        raise _Bad("no `self_class`")
    if entry["self_class"] is not None and not isinstance(entry["self_class"], str):
        raise _Bad("`self_class` is not a string")
    decorators = entry.get("decorators", [])
    if not isinstance(decorators, list):
        raise _Bad("`decorators` is not a list")
    class_decorators = _field(entry, "class_decorators", list, "", [])
    lines = _span(fields["lines"])
    if lines is None:
        raise _Bad("`lines` is not [first, last]")
    return Function(
        function=fields["function"],
        self_class=entry["self_class"],
        path=fields["path"],
        lines=lines,
        source_hash=fields["source_hash"],
        decorators=_strings(decorators, "`decorators`"),
        params=_strings(fields["params"], "`params`"),
        statements=_read_block(fields["statements"], 0),
        chain=_strings(_field(entry, "chain", list, "", []), "`chain`"),
        class_decorators=_strings(class_decorators, "`class_decorators`"),
    )


def _read_block(statements: list, depth: int) -> tuple[Statement, ...]:
    if depth > 50:
        raise _Bad("statements nest too deep")
    return tuple(_read_statement(s, depth) for s in statements)


def _read_statement(s: Any, depth: int) -> Statement:
    if not isinstance(s, dict):
        raise _Bad(f"a statement is a {json_type(s)}, not an object")
    kinds = [k.value for k in Kind]
    if s.get("kind") not in kinds:
        raise _Bad(f"a statement of kind {s.get('kind')!r} (expected one of {', '.join(kinds)})")
    kind = Kind(s["kind"])
    lines = _span(s.get("lines"))
    if lines is None:
        raise _Bad(f"a {kind.value} statement without `lines` [first, last]")
    where = f"the {kind.value} statement at line {lines[0]}"
    if kind is Kind.OPAQUE:
        if type(s.get("count")) is not int:
            raise _Bad(f"{where} has no `count`")
        return Statement(kind, lines, count=s["count"])
    if kind in (Kind.TARGET, Kind.ANCESTOR):
        call = s.get("call")
        if not isinstance(call, dict) or type(call.get("line")) is not int or not isinstance(call.get("code"), str):
            raise _Bad(f"{where} has no `call` with a line and code")
        if kind is Kind.TARGET and not isinstance(call.get("targets"), list):
            raise _Bad(f"{where} names no `targets`")
        if kind is Kind.ANCESTOR and not isinstance(call.get("callees"), list):
            raise _Bad(f"{where} names no `callees`")
        if type(call.get("index", 0)) is not int:
            raise _Bad(f"{where}: the call's `index` is not a number")
        return Statement(kind, lines, call=Call(
            line=call["line"], code=call["code"], index=call.get("index", 0),
            targets=_strings(call.get("targets", []), f"{where}: `targets`"),
            callees=_strings(call.get("callees", []), f"{where}: `callees`")))
    controls = [c.value for c in Control]
    if s.get("statement") not in controls:
        raise _Bad(f"{where} has `statement` {s.get('statement')!r}")
    statement = Control(s["statement"])
    conditions = {}
    for key in ("condition", "iter"):
        value = s.get(key)
        if value is None:
            continue
        if not (isinstance(value, dict) and isinstance(value.get("code"), str)
                and value.get("class") in [d.value for d in Decided]):
            raise _Bad(f"{where} has no `{key}` with code and a class (static, input or dynamic)")
        conditions[key] = Condition(value["code"], Decided(value["class"]))
    if statement is Control.IF and "condition" not in conditions:
        raise _Bad(f"{where} has no `condition`")
    if statement is not Control.EXIT and not isinstance(s.get("body"), list):
        raise _Bad(f"{where} has no `body`")
    items = s.get("items")
    if items is not None:
        if not isinstance(items, list):
            raise _Bad(f"{where}: `items` is a {json_type(items)}")
        items = _strings(items, f"{where}: `items`")
    blocks = []
    for name in BLOCKS:
        if name in s:
            if not isinstance(s[name], list):
                raise _Bad(f"{where}: `{name}` is a {json_type(s[name])}")
            blocks.append((name, _read_block(s[name], depth + 1)))
    return Statement(kind, lines, statement=statement, condition=conditions.get("condition"),
                     iter=conditions.get("iter"), items=items, blocks=tuple(blocks))


def _read_unresolved(u: Any) -> Unresolved:
    if not isinstance(u, dict):
        raise _Bad(f"an `unresolved` entry is a {json_type(u)}, not an object")
    where = "an `unresolved` entry: "
    return Unresolved(
        function=_field(u, "function", str, where), path=_field(u, "path", str, where),
        line=_field(u, "line", int, where), call=_field(u, "call", str, where),
        reason=_field(u, "reason", str, where), receiver_is_self=_field(u, "receiver_is_self", bool, where),
        reaching_function=_field(u, "reaching_function", bool, where))


def _extra_keys(doc: Any, written: Any, path: str = "") -> Iterator[str]:
    """Where a document holds what the plan it reads to would not write."""
    if isinstance(doc, dict) and isinstance(written, dict):
        for key in doc:
            if key not in written:
                yield f"{path}{key}"
            else:
                yield from _extra_keys(doc[key], written[key], f"{path}{key}.")
    elif isinstance(doc, list) and isinstance(written, list):
        for i, (a, b) in enumerate(zip(doc, written)):
            yield from _extra_keys(a, b, f"{path}{i}.")
