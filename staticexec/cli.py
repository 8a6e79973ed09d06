"""The `staticexec` command: plan, explain, emit and verify architectures.

Exit codes: 0 ok; 1 refused or not verified; 2 bad usage or bad input
(one line on stderr, no traceback).

It sits outside the pipeline and drives it through api.py, explain, graph, verify, sweep,
coverage, matrix and the plan store (plans.py).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
from typing import Any

from staticexec.analysis.architectures import TASKS
from staticexec.files import write_atomic
from staticexec.messages import Refused, UsageError
from staticexec.emit.validate import writable_folder

DESCRIPTION = """\
Static analysis of transformers model code. From the source alone, staticexec
finds which statements of each forward can reach a call of a sequential
target (usually the decoder layer), writes that down as a wrap plan, and
emits the forward as a chain of plain Python subgraphs, one target call each.
"""

EPILOG = """\
examples:
  staticexec plan LlamaForCausalLM                 writes plans/LlamaForCausalLM.json
  staticexec explain MistralForCausalLM            shows each statement's class and call chain
  staticexec emit GPT2LMHeadModel                  prints the subgraphs of a tiny GPT-2
  staticexec verify LlamaForCausalLM Qwen3ForCausalLM --attn both
  staticexec verify --all --task causal-lm --report docs/coverage.md
  staticexec plan --all --out plans/                writes every plan and plans/index.json
  staticexec check plans/                          what changed since the plans were made
  staticexec graph LlavaForConditionalGeneration --out llava.svg
  staticexec matrix --releases 5.17.0 5.25.0       verify on other transformers releases

exit codes: 0 ok, 1 refused or not verified, 2 bad usage or input
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        """Raise a one-line UsageError (exit 2) instead of printing usage and exiting."""
        raise UsageError(f"{message} (see `{self.prog} --help`)")


JOBS = os.cpu_count() or 1  # parallel workers unless --jobs says otherwise
VERIFY_TIMEOUT = 300.0  # verify --all: seconds per architecture unless --timeout says otherwise


def _class_name(text: str) -> str:
    """A --targets value: a class name, not empty."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty class name")
    return text


def _positive(kind: type) -> Any:
    """An argument type: a number of `kind` above zero."""
    def read(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not above zero")
        return value

    return read


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="staticexec", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def targets(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--targets", nargs="+", metavar="CLASS", type=_class_name,
                        help="sequential target class names (default: the _no_split_modules classes the model holds, "
                             "outermost; where it holds none, the class of its first layer stack)")
        sp.add_argument("--config", metavar="config.json",
                        help="a user's config (e.g. a Llava holding a Mistral) instead of the config class's "
                             "defaults (for a model folder, instead of its config.json); the plan records its model "
                             "types, tiny models shrink its sizes")

    def sample_option(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--sample", choices=["text", "multimodal"], default="text",
                        help="text: token ids only (vision/audio branches stay opaque); multimodal: also an image "
                             "and its placeholder tokens, so vision layers can be targets (default: text)")

    sp = sub.add_parser("plan", help="analyse an architecture and write its wrap plan",
                        description="Analyse ARCH's forward from its source and write DIR/ARCH.json.")
    sp.add_argument("architecture", nargs="?", metavar="ARCH", help="model class name (LlamaForCausalLM), a user's class as module.path:Class, or a model folder (config.json with auto_map, as remote code is laid out)")
    targets(sp)
    sp.add_argument("--out", default="plans", metavar="DIR", help="output folder (default: plans/)")
    sp.add_argument("--all", action="store_true",
                    help="every generative architecture of the installed transformers, with DIR/index.json")
    sp.add_argument("--jobs", type=_positive(int), help="with --all: parallel workers (default: one per core)")
    sp.add_argument("--no-cache", action="store_true", help="with --all: ignore the on-disk cache")

    sp = sub.add_parser("explain", help="print each analysed statement's class and call chain",
                        description="Print the analysed forwards of ARCH, marking each statement's class; for "
                                    "every reaching statement, the call chain down to the target.")
    sp.add_argument("architecture", metavar="ARCH", help="model class name (LlamaForCausalLM), a user's class as module.path:Class, or a model folder (config.json with auto_map, as remote code is laid out)")
    targets(sp)

    sp = sub.add_parser("emit", help="print the emitted subgraphs of a tiny model",
                        description="Build a tiny random ARCH from its config class and print its subgraphs.")
    sp.add_argument("architecture", metavar="ARCH", help="model class name (LlamaForCausalLM), a user's class as module.path:Class, or a model folder (config.json with auto_map, as remote code is laid out)")
    targets(sp)
    sample_option(sp)

    sp = sub.add_parser("graph", help="draw the call graph of an architecture's plan",
                        description="Draw ARCH's call graph: the targets, the reaching functions and the calls "
                                    "between them, each labelled with its file:line. FILE.dot writes DOT; .svg, .png "
                                    "or .pdf use Graphviz's `dot` when installed, else DOT is written beside.")
    sp.add_argument("architecture", metavar="ARCH", help="model class name (LlamaForCausalLM), a user's class as module.path:Class, or a model folder (config.json with auto_map, as remote code is laid out)")
    targets(sp)
    sp.add_argument("--out", required=True, metavar="FILE", help="FILE.svg, FILE.png, FILE.pdf, or FILE.dot (or .gv) for DOT itself")

    sp = sub.add_parser("check", help="re-analyse committed plans against the installed transformers",
                        description="Re-analyse every plan in DIR (a folder written by `plan --all`) against the "
                                    "installed transformers. Each architecture is unchanged; stale (same statements, "
                                    "conditions and call chains, other lines or hashes); renamed (stale once names "
                                    "renamed across the release are applied, reported once as a summary); or changed "
                                    "(with a diff; decorators added to every forward are reported once). Architectures new in the installed transformers, or removed from "
                                    "it, are listed. Exit 1 unless every plan is unchanged and none is new or removed.")
    sp.add_argument("folder", metavar="DIR", help="a folder of plans written by `plan --all`, with its index.json")
    sp.add_argument("--jobs", type=_positive(int), default=JOBS, help="parallel workers")
    sp.add_argument("--no-cache", action="store_true", help="re-analyse every plan, ignoring the on-disk cache "
                    "(.staticexec-cache in the current folder, kept by plan --all and check)")

    sp = sub.add_parser("matrix", help="verify a fixed set of cases on every supported transformers release",
                        description="For each RELEASE: build an environment with that transformers (once), run "
                                    "verify over the foundation architectures, 40 more over every task, the "
                                    "vision-language models with multimodal samples, the encoder-decoder "
                                    "targets, the vision-language models whose samples their own processor makes "
                                    "and the foundation architectures with every Linear a target, and keep the results in a committed JSON per release "
                                    "(docs/compatibility/transformers-X.json; resumable). Then write the report "
                                    "from the results of every release, run now or before. Exit 1 when a case of "
                                    "a release run is not ok (refused is a verdict, not a failure).")
    sp.add_argument("--releases", nargs="+", metavar="RELEASE", help="which releases (default: 5.15 to 5.25, "
                    "the newest patch of each minor)")
    sp.add_argument("--envs", default=".matrix-envs", metavar="DIR", help="where the environments are built")
    sp.add_argument("--results", default=None, metavar="DIR",
                    help="the JSON per release, committed (default: docs/compatibility)")
    sp.add_argument("--rerun", action="store_true", help="run the releases again even when their results are "
                    "complete and made by the current code (an incomplete one resumes)")
    sp.add_argument("--report", default="docs/compatibility.md", metavar="FILE.md",
                    help="the report to write (default: docs/compatibility.md)")
    sp.add_argument("--report-only", action="store_true", help="only write the report from the results there are")
    sp.add_argument("--jobs", type=_positive(int), default=JOBS, help="parallel workers in each release")
    sp.add_argument("--timeout", type=_positive(float), default=600.0, help="seconds per case")

    sp = sub.add_parser("verify", help="check architectures end to end on tiny models",
                        description="For each ARCH: build a tiny random model, run its own forward and the "
                                    "emitted subgraphs, and check that outputs are equal and every target runs "
                                    "exactly once, in exactly one subgraph. Exit 0 only if each is ok or n/a (the check does "
                                    "not apply: an attention implementation the architecture lacks, no forward of "
                                    "its own, no sample for its inputs).")
    sp.add_argument("architectures", nargs="*", metavar="ARCH", help="model class name (LlamaForCausalLM), a user's class as module.path:Class, or a model folder (config.json with auto_map, as remote code is laid out)")
    targets(sp)
    sp.add_argument("--attn", choices=["eager", "sdpa", "both"], default="eager",
                    help="attention implementation(s) to verify with (default: eager)")
    sample_option(sp)
    sp.add_argument("--targets-from", choices=["default", "llmcompressor", "linear", "sublayer"], default="default",
                    help="without --targets: default, the outermost _no_split_modules classes the model holds; "
                         "llmcompressor, the model's _no_split_modules as llm-compressor's pipeline passes them, "
                         "absent classes skipped; linear, every Linear (and Conv1D); sublayer, the attention and "
                         "MLP (or MoE) classes of the layers (default: default)")
    sp.add_argument("--all", action="store_true", help="every architecture of --task, each in a worker process")
    sp.add_argument("--task", choices=sorted(TASKS),
                    help="with --all: which auto mapping to sweep (default: causal-lm)")
    sp.add_argument("--report", metavar="FILE.md", help="with --all: write the coverage report (and FILE.json)")
    sp.add_argument("--jobs", type=_positive(int), help="with --all: parallel workers (default: one per core)")
    sp.add_argument("--timeout", type=_positive(float), help=f"with --all: seconds per architecture (default: {VERIFY_TIMEOUT:g})")
    return p


def _read_config(path: str) -> dict:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{path}: not a file (--config names a config.json)")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        data["model_type"]
    except OSError as exc:
        raise UsageError(f"{path}: can't read it ({exc.strerror})") from exc
    except (json.JSONDecodeError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise UsageError(f"{path}: not a transformers config.json ({type(exc).__name__}: {exc})") from exc
    return data


def _writable_file(path: str, what: str) -> None:
    """Say in one line, before any work, why an output file can't be written at `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{path}: a folder; {what} is a file")
    if not os.path.isdir(folder):
        raise UsageError(f"{path}: no folder {folder} to write {what} in")
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise UsageError(f"{path}: can't write {what} there ({exc.strerror})") from exc


def _written(path: str, content: str) -> None:
    """write_atomic, with what stops it (a folder in the way, a full disk) said in one line."""
    try:
        write_atomic(path, content)
    except OSError as exc:
        raise UsageError(f"{path}: can't write it ({exc.strerror or exc})") from exc


def _load_config(path: str | None):
    if not path:
        return None
    from transformers import AutoConfig

    from staticexec.check.configs import one_line

    data = _read_config(path)
    model_type = data.pop("model_type")
    try:
        return AutoConfig.for_model(model_type, **data)
    except Exception as exc:  # the config class rejects a value (a null where it expects a dict, an unknown type)
        detail = one_line(exc, 200)
        raise UsageError(f"{path}: the config class for model_type {model_type!r} rejects it: "
                         f"{type(exc).__name__}: {detail}") from exc


def _config_of(architecture: str, path: str | None):
    """The --config for one of transformers' architectures: one of the model types whose auto mappings
    name it, so that the plan records model types that are the architecture's own."""
    from staticexec.analysis.architectures import check_model_type, find_architecture

    if path is None:
        return None
    find_architecture(architecture)  # an unknown name is said as such, before the config is read
    config = _load_config(path)
    check_model_type(architecture, config, where=path)  # the analysis checks it too; emit builds first
    return config


def _analysed(args):
    """The plan of the architecture the command names: one of transformers' classes, or a user's class
    or model folder, read from source alone (nothing of the user's code is imported)."""
    try:
        return _analysis(args)
    except SyntaxError as exc:  # a user's file that Python can't read (transformers' own files parse)
        raise _unreadable(exc, args.architecture) from exc


def _unreadable(exc: SyntaxError, spec: str) -> UsageError:
    """A syntax error in a user's file, in one line."""
    where = f"{exc.filename}:{exc.lineno}" if exc.filename else spec
    return UsageError(f"{where}: a syntax error ({exc.msg}); staticexec reads code that Python can run")


def _analysis(args):
    from staticexec.analysis.userclass import UserClass, analysis_config, find_user_class, is_user_class
    from staticexec.api import analyse, analyse_architecture

    if not is_user_class(args.architecture):
        return analyse_architecture(args.architecture, args.targets, config=_config_of(args.architecture, args.config))
    user = find_user_class(args.architecture)
    given = analysis_config(UserClass(args.config, user.cls, config=_read_config(args.config))) if args.config else None
    config = analysis_config(user, given)
    model_type = getattr(config, "model_type", None) or (user.config or {}).get("model_type")
    return analyse(user.cls, args.targets, config=config, architecture=user.cls.name,
                   model_types=[model_type] if model_type else None)


def _built(spec: str, config_path: str | None):
    """A user's model built for emit and verify: the folder's code run as transformers runs remote code (its
    config.json, or the --config file read as the folder's config class), or the module imported and its
    class built from its config class (the --config file, else its defaults). Its size is measured on the
    meta device first (or counted while it is built, when it can't be made there): a full-size config is
    refused, not allocated."""
    try:
        return _build(spec, config_path)
    except SyntaxError as exc:  # in a file of the folder or module, read or imported
        raise _unreadable(exc, spec) from exc


def _build(spec: str, config_path: str | None):
    import importlib

    from staticexec.analysis.userclass import find_user_class
    from staticexec.check.configs import one_line
    from staticexec.check.models import OverLimit, built_within

    user = find_user_class(spec)
    if user.folder is not None:
        import transformers

        name, source, smaller = user.cls.name, "the folder's config.json", "a folder whose config.json is smaller"
        # a file that is not there, or no config, said before any of the folder runs
        given = _read_config(config_path) if config_path else None
        print(f"staticexec: building {name} from {spec}: this runs the folder's code (trust_remote_code)",
              file=sys.stderr)
        try:
            config = transformers.AutoConfig.from_pretrained(user.folder, trust_remote_code=True)
        except Exception as exc:
            detail = one_line(exc)
            raise UsageError(f"{spec!r}: transformers can't read the folder's config: {type(exc).__name__}: "
                             f"{detail}") from exc
        if given is not None:  # the folder's config class, made from the file given
            source = config_path
            folder_config = config
            try:
                config = type(config)(**given)
            except Exception as exc:
                raise UsageError(f"{spec!r}: can't read {config_path} as {type(config).__name__}: "
                                 f"{type(exc).__name__}: {one_line(exc)}") from exc
            # where transformers finds the folder's code: the folder, and its auto classes
            config._name_or_path = folder_config._name_or_path
            config.auto_map = getattr(folder_config, "auto_map", None)
        auto = getattr(transformers, user.auto_class)

        def make(config):
            return auto.from_config(config, trust_remote_code=True)
    else:
        module, _, qualname = spec.partition(":")  # the module named, which may bind a class defined elsewhere
        print(f"staticexec: building {qualname}: this imports {module}", file=sys.stderr)
        try:
            cls = importlib.import_module(module)
        except SyntaxError:
            raise
        except Exception as exc:
            raise UsageError(f"{spec!r}: importing {module} failed: {type(exc).__name__}: {one_line(exc)}") from exc
        for part in qualname.split("."):
            cls = getattr(cls, part, None)
        if not isinstance(cls, type):
            raise UsageError(f"{spec!r}: {module} has no class {qualname}")
        config_class = getattr(cls, "config_class", None)
        name, smaller = cls.__name__, "--config with a smaller config"
        if config_class is None:
            raise UsageError(f"{spec!r}: {name} has no config_class to build it from")
        source = config_path or config_class.__name__ + "()"
        try:
            config = config_class.from_json_file(config_path) if config_path else config_class()
        except Exception as exc:
            raise UsageError(f"{spec!r}: can't read {source}: {type(exc).__name__}: {exc}") from exc
        make = cls
    try:
        return built_within(make, config).eval()
    except OverLimit as exc:
        raise UsageError(f"{spec!r}: {name} built from {source} {exc.said(' of a model staticexec builds')}; "
                         f"give it {smaller}") from exc
    except Exception as exc:
        detail = one_line(exc)
        raise UsageError(f"{spec!r}: can't build {name} from {source}: {type(exc).__name__}: {detail}") from exc


def cmd_plan(args) -> int:
    """`staticexec plan`: write one architecture's plan, or with `--all` every plan and the index."""
    if args.all:
        return _plan_all(args)
    if not args.architecture:
        raise UsageError("name an architecture, or --all")
    if args.jobs is not None or args.no_cache:
        raise UsageError("--jobs and --no-cache go with --all")

    made = writable_folder(args.out)
    try:
        plan = _analysed(args)
        _check_requested(args.targets, plan)
        path = os.path.join(args.out, f"{plan.architecture}.json")
        _written(path, plan.to_json())
    except BaseException:
        for folder in made:  # made for this plan, innermost first: not left behind empty
            if os.path.isdir(folder) and not os.listdir(folder):
                os.rmdir(folder)
        raise
    print(f"{path}: {len(plan.functions)} reaching functions, targets {', '.join(plan.target_names)}")
    return 0


def _plan_all(args) -> int:
    import time

    from staticexec import sweep
    from staticexec.analysis.architectures import all_generative
    from staticexec.version import transformers_version
    from staticexec.plans import CACHE_DIR, plan_job, write_index

    if args.architecture or args.targets or args.config:
        raise UsageError("--all plans every architecture with its default targets and config")
    writable_folder(args.out)
    archs = all_generative()
    start = time.monotonic()
    options = {"out": os.path.abspath(args.out), "cache": None if args.no_cache else os.path.abspath(CACHE_DIR)}
    rows = sweep.run(plan_job, archs, options, jobs=args.jobs or JOBS, timeout=600, label="plan")
    index = write_index(args.out, rows, transformers_version())
    counts: dict[str, int] = {}
    for row in index["architectures"].values():
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    for arch, row in sorted(index["architectures"].items()):
        if row["status"] != "ok":
            print(f"{arch:<44} {row['status']:<9} {row.get('reason', '')}")
    done = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{len(archs)} architectures planned in {time.monotonic() - start:.0f}s: {done}; "
          f"plans and index.json in {args.out}")
    return 0


def _check_requested(requested: list[str] | None, plan) -> None:
    if requested:
        unseen = sorted(set(requested) - set(plan.targets))
        if unseen:
            raise UsageError(f"target class {', '.join(unseen)} is not called from {plan.architecture}")


def cmd_explain(args) -> int:
    """`staticexec explain`: print the analysed forwards, each statement's class and the call chains."""
    from staticexec.explain import explain

    plan = _analysed(args)
    _check_requested(args.targets, plan)
    sys.stdout.write(explain(plan))
    return 0


def cmd_emit(args) -> int:
    """`staticexec emit`: print the subgraphs emitted for a tiny model of the architecture and a sample input."""
    from staticexec.check.models import build_tiny_model
    from staticexec.check.samples import default_targets, sample_inputs
    from staticexec.api import analyse_architecture
    from staticexec.emit.emitter import Emitter

    from staticexec.analysis.architectures import find_architecture
    from staticexec.analysis.userclass import is_user_class
    from staticexec.check.configs import TinyBuildError

    user = is_user_class(args.architecture)
    if not user:
        find_architecture(args.architecture)  # an unknown name said as such (with the nearest), before building
    try:
        model = _built(args.architecture, args.config) if user else build_tiny_model(args.architecture, config=_config_of(args.architecture, args.config))
        targets = args.targets or default_targets(model)
        if args.sample == "multimodal":
            from staticexec.check.multimodal import multimodal_samples

            sample = next(multimodal_samples(model))
        else:
            sample = sample_inputs(model)
    except TinyBuildError as exc:  # verify reports the same as build-failed, or n/a where no media input fits
        raise UsageError(f"{args.architecture}: {exc}") from exc
    if user:
        import staticexec

        subgraphs = staticexec.subgraphs(model, sample, targets)
    else:
        plan = analyse_architecture(args.architecture, targets, config=model.config)
        subgraphs = Emitter(plan, model, sample).emit()
    for sg in subgraphs:
        print(f"# subgraph {sg.index}: inputs {sorted(sg.input_names)} -> outputs {sorted(sg.output_names)}")
        print(sg.source)
    return 0


def cmd_verify(args) -> int:
    """`staticexec verify`: verify the named architectures, or with `--all` a task's, and print one line each."""
    from staticexec.analysis.architectures import check_model_type, find_architecture
    from staticexec.check.verify import verify

    if args.all:
        return _verify_all(args)
    if args.report or args.task or args.jobs is not None or args.timeout is not None:
        raise UsageError("--report, --task, --jobs and --timeout go with --all")
    from staticexec.analysis.userclass import is_user_class

    if not args.architectures:
        raise UsageError("name at least one architecture, or --all")
    users = {name for name in args.architectures if is_user_class(name)}
    config = _load_config(args.config) if len(users) < len(args.architectures) else None
    for name in args.architectures:
        if name not in users:
            find_architecture(name)
            if config is not None:
                check_model_type(name, config, where=args.config)
    attns = ["eager", "sdpa"] if args.attn == "both" else [args.attn]
    counts: dict[str, int] = {}
    for name in args.architectures:
        for attn in attns:
            built = _built(name, args.config) if name in users else None
            v = verify(name, attn_implementation=attn, targets=args.targets, sample=args.sample, config=config,
                       targets_from=args.targets_from, model=built)
            if len(attns) > 1:
                v.architecture = f"{v.architecture} [{attn}]"
            print(v.line(), flush=True)
            counts[v.status] = counts.get(v.status, 0) + 1
    total = sum(counts.values())
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: (kv[0] != "ok", kv[0])))
    print(f"{total} checked: {summary}")
    # a combination transformers itself does not support (n/a) is reported, not counted as a failure
    return 0 if counts.get("ok", 0) + counts.get("n/a", 0) == total and counts.get("ok", 0) else 1


def _verify_all(args) -> int:
    from staticexec.check import coverage
    from staticexec import sweep
    from staticexec.check.verify import sweep_job
    from staticexec.analysis.architectures import task_architectures
    from staticexec.version import transformers_version

    if args.architectures or args.targets or args.config:
        raise UsageError("--all verifies every architecture with its default targets and config")
    task = args.task or "causal-lm"
    if args.report:
        _writable_file(args.report, "the report")
        _writable_file(os.path.splitext(args.report)[0] + ".json", "the report's JSON")
    archs = task_architectures(task)
    attns = ["eager", "sdpa"] if args.attn == "both" else [args.attn]
    failed = 0
    for attn in attns:
        counts: dict[str, int] = {}

        def show(r: dict) -> None:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            detail = f"{r.get('subgraphs', 0)} subgraphs" if r["status"] == "ok" else r["reason"]
            print(f"{r['arch']:<44} {r['status']:<15} {detail}", flush=True)

        rows = sweep.run(sweep_job, archs, {"attn": attn, "sample": args.sample, "targets_from": args.targets_from},
                         jobs=args.jobs or JOBS, timeout=args.timeout or VERIFY_TIMEOUT,
                         label=f"verify {task} [{attn}]", on_result=show)
        table = {r["arch"]: r for r in rows}
        mode = attn if args.sample == "text" else f"{attn}, {args.sample} samples"
        if args.targets_from != "default":
            mode += f", {args.targets_from} targets"
        print(coverage.totals_line(f"{task} [{mode}]", table).replace("**", ""))
        if args.report:
            json_path = os.path.splitext(args.report)[0] + ".json"
            coverage.update(json_path, args.report, task, mode, rows, transformers_version())
        failed += sum(1 for r in rows if r["status"] not in ("ok", "n/a"))
        bugs = sorted((r["arch"], r["status"]) for r in rows
                      if coverage.CATEGORIES.get(r["status"], "").startswith("BUG"))
        if bugs:  # a mismatch, a usage error inside the pipeline, a crash: the sweep's own findings
            shown = ", ".join(f"{arch} ({status})" for arch, status in bugs[:20])
            print(f"flagged as bugs [{attn}]: {len(bugs)}: {shown}" + (", ..." if len(bugs) > 20 else ""))
    return 1 if failed else 0


def cmd_graph(args) -> int:
    """`staticexec graph`: write the plan's call graph to the `--out` file and say what was written."""
    from staticexec.graph import FORMATS, format_of, render, to_dot

    if format_of(args.out) not in FORMATS:
        raise UsageError(f"{args.out}: name a .{', .'.join(FORMATS[:-1])} or .{FORMATS[-1]} file")
    _writable_file(args.out, "the graph")
    plan = _analysed(args)
    _check_requested(args.targets, plan)
    print(render(to_dot(plan), args.out))
    return 0


def cmd_check(args) -> int:
    """`staticexec check`: re-make a folder's plans, report what moved; 1 unless all unchanged, none new or gone."""
    from staticexec.plans import CACHE_DIR, check

    result = check(args.folder, jobs=args.jobs, cache=None if args.no_cache else CACHE_DIR)
    for line in result.report:
        print(line)
    print(result.summary() + (f" ({result.cached} re-made from the plan cache)" if result.cached else ""))
    return 0 if result.current else 1


def cmd_matrix(args) -> int:
    """`staticexec matrix`: verify the cases on each chosen release, or with `--report-only` just rewrite the report."""
    from staticexec.check import matrix

    folder = args.results or matrix.RESULTS
    unknown = sorted(set(args.releases or []) - set(matrix.RELEASES))
    if unknown:
        raise UsageError(f"release {', '.join(unknown)} is not in the matrix ({' '.join(matrix.RELEASES)})")
    _writable_file(args.report, "the report")  # before hours of runs, not after them
    if args.report_only:
        if not os.path.isdir(folder) or not any(n.startswith("transformers-") and n.endswith(".json")
                                                for n in os.listdir(folder)):
            raise UsageError(f"{folder}: no matrix results (transformers-X.json) to write the report from")
        matrix.write_report(folder, args.report)
        print(f"{args.report} written")
        return 0
    return matrix.run(args.releases or matrix.RELEASES, args.envs, folder, args.report, args.jobs, args.timeout,
                      rerun=args.rerun)


COMMANDS = {"matrix": cmd_matrix, "plan": cmd_plan, "check": cmd_check, "graph": cmd_graph, "explain": cmd_explain, "emit": cmd_emit, "verify": cmd_verify}


def main(argv: list[str] | None = None) -> int:
    """Run the `staticexec` command line; returns the exit code (0 ok, 1 refused or not verified, 2 bad usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if not args.command:
            raise UsageError("name a command: plan, explain, emit, verify, check, graph or matrix (see `staticexec --help`)")
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"staticexec: {exc}", file=sys.stderr)
        return 2
    except Refused as exc:
        print("staticexec: refused:", file=sys.stderr)
        for m in exc.messages:
            print(f"  {m}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The `staticexec` program: `main`, then exit. What the run holds is frozen out of the garbage
    collector first: an analysis keeps millions of parse-tree objects, and the interpreter's own
    collections while it shuts down would walk them for seconds after the work is done."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
