"""The public entry points: analyse a class, load a plan, emit and run subgraphs.

They drive the whole pipeline: `analyse` runs source -> names/resolve -> callgraph -> plan,
and `subgraphs` then runs emit -> cut, returning run.py's `Subgraph`s.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from typing import Any, Iterator

from staticexec.analysis import defaults
from staticexec.analysis.architectures import Architecture, check_model_type, find_architecture
from staticexec.emit.emitter import Emitter
from staticexec.emit.instance import check_instance
from staticexec.emit.modules import one_listing
from staticexec.messages import MalformedPlan, Refused, StalePlan, UsageError
from staticexec.analysis.plan import Plan
from staticexec.analysis.planner import build_plan
from staticexec.analysis.resolve import Resolver
from staticexec.analysis.session import current
from staticexec.emit.run import Subgraph, run_subgraphs
from staticexec.analysis.observed import Observed, observe
from staticexec.analysis.source import ClassRef, FunctionRef, function_source_hash, load_module
from staticexec.emit.targets import select_targets
from staticexec.emit.validate import check_call

__all__ = ["analyse", "analyse_architecture", "default_targets", "load_plan", "subgraphs", "run_subgraphs", "Subgraph"]


def default_targets(resolver: Resolver, root: ClassRef) -> list[str]:
    """The default targets of a root class read from source: analysis/defaults.py's rule."""
    return defaults.default_targets(defaults.source_holdings(resolver, root))


def analyse(root: ClassRef, targets: list[str] | None, *, config: Any = None, architecture: str | None = None,
            model_types: list[str] | None = None, observed: Observed | None = None) -> Plan:
    """Build a plan for a root class from its source alone; with `observed`, also from what an instance
    holds that its source does not build (modules replaced after construction: analysis/observed.py)."""
    with _few_collections():
        return _analyse(root, targets, config=config, architecture=architecture, model_types=model_types,
                        observed=observed)


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """No automatic garbage collection while analysing, and what the analysis kept counted as old after it.

    An analysis makes millions of objects (parse trees, jedi's module trees read from its disk
    cache) and keeps nearly all of them in its session: there is little garbage to find, yet the
    collector's default thresholds walk the young ones again and again, and the first collection
    after the analysis walks all it kept, a third of the time of a cold analysis. A zero
    threshold turns the automatic collections off (parso turns the collector back on after each
    cache read, so `gc.disable()` would not last); at the end, `freeze()` then `unfreeze()` moves
    every object into the oldest generation without walking it, where the next full collection,
    as rare as ever, finds the little garbage the analysis left."""
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.set_threshold(*before)


def _analyse(root: ClassRef, targets: list[str] | None, *, config: Any, architecture: str | None,
             model_types: list[str] | None, observed: Observed | None = None) -> Plan:
    resolver = Resolver(config, observed)
    if not targets:
        targets = default_targets(resolver, root)
        if not targets:
            raise UsageError(f"{root.name} declares no _no_split_modules and has no layer stack; pass --targets")
    for name in targets:  # the analysis knows target classes by name alone, below the root
        if not name.isidentifier():
            raise UsageError(f"the target {name!r} is not a class name; the analysis takes a target class by its "
                             f"name alone ({name.rpartition('.')[2]!r})")
        if name == root.name.rpartition(".")[2]:
            raise UsageError(f"the target {name} is the model's own class; name the class of its layers")
    try:
        return build_plan(resolver, root, targets, architecture or root.name, model_types=model_types)
    except Refused as exc:
        held = {c.name.rpartition(".")[2] for c in resolver.submodule_classes(root, depth=6)}
        no_path = all(m.kind == "no-call-path" for m in exc.messages)
        if no_path and not set(targets) & held and not _defined_anywhere(targets):
            raise UsageError(f"no class {', '.join(sorted(targets))} in {architecture or root.name}") from exc
        raise


def _defined_anywhere(names: list[str]) -> bool:
    """Whether transformers exports a class of one of these names (an existing class not held is no typo)."""
    import transformers

    return any(hasattr(transformers, n) for n in names)


def analyse_architecture(name: str, targets: list[str] | None = None, config: Any = None) -> Plan:
    """Build a plan for an architecture by name, against its config class's defaults unless a config is given."""
    arch: Architecture = find_architecture(name)
    if config is not None:
        check_model_type(name, config)
    else:
        try:
            config = arch.config()
        except Exception as exc:  # broken defaults upstream
            raise UsageError(f"{arch.config_class}() fails with its own defaults: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:160]}") from exc
    model_type = getattr(config, "model_type", arch.model_type)
    return analyse(arch.cls, targets, config=config, architecture=name, model_types=[model_type])


def stale_functions(plan: Plan) -> list[str]:
    """Functions whose installed source differs from the one the plan was made for."""
    out = []
    for fn in plan.functions.values():
        ref = FunctionRef.parse(fn.function)
        sf = load_module(ref.module)
        digest = function_source_hash(sf, ref.qualname) if sf else None
        if digest != fn.source_hash:
            out.append(f"{fn.path}:{fn.lines[0]} {ref.qualname}")
    return out


def load_plan(plan: Plan | str | os.PathLike | dict) -> Plan:
    """Load and validate a plan; refuse a malformed or stale one with a one-line reason."""
    if isinstance(plan, Plan):
        doc, where = plan.to_dict(), plan.architecture
    elif isinstance(plan, dict):
        doc, where = plan, "plan"
    else:
        where = os.fspath(plan)
        try:
            with open(where, encoding="utf-8") as handle:
                doc = json.load(handle)
        except OSError as exc:
            raise UsageError(f"{where}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise MalformedPlan(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    result = Plan.from_json(doc, where)
    stale = stale_functions(result)
    if stale:
        raise StalePlan(f"{where}: stale, the installed source changed: {stale[0]}" + (f" (+{len(stale) - 1} more)" if len(stale) > 1 else ""))
    return result


def _class_ref(cls: type) -> ClassRef:
    return ClassRef(cls.__module__, cls.__qualname__)


def subgraphs(model: Any, sample_input: dict, sequential_targets: str | list[str] | None = None,
              ignore: list[str] | None = None, targets_per_subgraph: int = 1, *,
              plan: Plan | str | os.PathLike | None = None) -> list[Subgraph]:
    """Split `model`'s forward into subgraphs, `targets_per_subgraph` target calls each.

    The positional arguments are those of llm-compressor's `trace_subgraphs`. Targets are
    class names, module names or `re:` patterns (`staticexec.emit.targets`); those that match no
    module are skipped with one warning line, and none matching is a UsageError.
    `plan` is a Plan, a plan file (validated; a stale or malformed one is refused), or a folder
    of committed plans (the model's plan is used when it is current, else the analysis runs).
    Without `plan`, the plans shipped in the package for the installed transformers release
    are that folder (`shipped_plans()`).
    `ignore` is accepted for compatibility and has no meaning here: nothing is traced.
    """
    del ignore
    with one_listing(model):  # the module tree walked once for all the questions emission asks of it
        check_call(model, sample_input, sequential_targets)
        return _subgraphs(model, sample_input, sequential_targets, targets_per_subgraph, plan)


def _subgraphs(model: Any, sample_input: dict, sequential_targets: str | list[str] | None, targets_per_subgraph: int,
               plan: Plan | str | os.PathLike | None) -> list[Subgraph]:
    selection = select_targets(model, sequential_targets) if sequential_targets else None
    targets = selection.classes if selection is not None else None
    if plan is None:
        plan = shipped_plans()
    if plan is not None and not isinstance(plan, (Plan, dict)) and os.path.isdir(plan):
        plan = _committed_plan(os.fspath(plan), model, targets)
    if plan is not None:
        loaded = load_plan(plan)
    else:
        observed = observe(model)  # modules put in after construction (linearized experts) are analysed too
        key = (_class_ref(type(model)), tuple(targets or ()), _config_key(model), observed)
        plans = current().table("api.plans")  # by root class, targets, config and what the instance holds
        loaded = plans.get(key)
        if loaded is None:
            loaded = analyse(key[0], list(targets) if targets else None, config=getattr(model, "config", None),
                             architecture=type(model).__name__,
                             model_types=[getattr(getattr(model, "config", None), "model_type", "")] if hasattr(model, "config") else None,
                             observed=observed)
            plans[key] = loaded
    check_instance(model, loaded, sample_input)
    watched = selection.selected if selection is not None else None
    return Emitter(loaded, model, sample_input, watched=watched).emit(targets_per_subgraph)


SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shipped")


def shipped_plans() -> str | None:
    """The folder of plans shipped in the package for the installed transformers release, if any.

    STATICEXEC_SHIPPED_PLANS=0 turns them off (the analysis always runs)."""
    from staticexec.version import transformers_version

    if os.environ.get("STATICEXEC_SHIPPED_PLANS", "1") == "0":
        return None
    folder = os.path.join(SHIPPED, f"transformers-{transformers_version()}")
    return folder if os.path.isdir(folder) else None


def _committed_plan(folder: str, model: Any, targets: tuple[str, ...] | None) -> Plan | None:
    """The plan for this model in a folder of committed plans, if it is current; else None (analyse)."""
    path = os.path.join(folder, f"{type(model).__name__}.json")
    if not os.path.exists(path):
        return None
    try:
        plan = load_plan(path)
    except UsageError:  # stale or malformed: the analysis runs instead
        return None
    root = plan.function(plan.root)
    if root is None or root.self_class is None or ClassRef.parse(root.self_class) != _class_ref(type(model)):
        return None  # a plan for another class of the same name (a user's own class): analyse this one
    if targets and sorted(targets) != plan.target_names:
        return None
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type and plan.model_types and model_type not in plan.model_types:
        return None
    return plan


def _config_key(model: Any) -> str:
    config = getattr(model, "config", None)
    if config is None:
        return ""
    try:
        return config.to_json_string(use_diff=False)
    except Exception:  # configs that can't serialise are keyed by identity
        return str(id(config))
