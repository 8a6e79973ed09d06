"""The release matrix: the same verify cases on every transformers release staticexec supports.

`staticexec matrix` builds one virtual environment per release (torch
2.13.0 CPU, then `transformers==X` and staticexec itself, with staticexec's
own dependencies pinned as in constraints.txt and transformers' resolved by
pip for that release), runs `verify` over a fixed set of cases in it, and
writes docs/compatibility.md from the results, generated, never edited.

Each release's results are a small JSON file, committed under docs/compatibility/
(sorted, no timings, so a rerun on any machine gives the same bytes when the
verdicts are the same) and rewritten after every case. So one release can be run
again on a fresh machine, and the report is still written from every release's
results; a release's run resumes where it stopped, and results made by other
analysis code than the current one are run again.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from staticexec.files import write_atomic
from staticexec.version import code_digest

# the newest patch of each minor release from 5.15 to 5.25
RELEASES = ["5.15.1", "5.16.1", "5.17.0", "5.18.0", "5.19.0", "5.20.2", "5.21.1", "5.22.2", "5.23.0", "5.24.0",
            "5.25.0"]

# the foundation's 14 decoder-only architectures (tests/test_architectures.py)
FOUNDATION = [
    "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Gemma2ForCausalLM",
    "Gemma3ForCausalLM", "Phi3ForCausalLM", "GPT2LMHeadModel", "OPTForCausalLM", "FalconForCausalLM",
    "MixtralForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM",
]

# 40 more, spread over every task: per task, the architectures present in 5.17.0 and 5.24.0 and ok on 5.23.0
# (docs/coverage.json), outside the other groups, sorted by name and taken at an even stride
# (18 causal-lm, 8 image-text-to-text, 4 multimodal-lm, 6 seq2seq-lm, 4 speech-seq2seq)
SAMPLE = [
    ("AXK1ForCausalLM", "text"), ("BertGenerationDecoder", "text"), ("BloomForCausalLM", "text"),
    ("CwmForCausalLM", "text"), ("Dots1ForCausalLM", "text"), ("FalconH1ForCausalLM", "text"),
    ("Gemma3nForCausalLM", "text"), ("Glm4MoeForCausalLM", "text"), ("GraniteMoeSWAForCausalLM", "text"),
    ("InklingForCausalLM", "text"), ("Llama4ForCausalLM", "text"), ("MiMoV2FlashForCausalLM", "text"),
    ("MptForCausalLM", "text"), ("Olmo3ForCausalLM", "text"), ("Phi4MultimodalForCausalLM", "text"),
    ("ReformerModelWithLMHead", "text"), ("SmolLM3ForCausalLM", "text"), ("XLMRobertaForCausalLM", "text"),
    ("AyaVisionForConditionalGeneration", "multimodal"), ("Cosmos3OmniForConditionalGeneration", "multimodal"),
    ("Glm4vForConditionalGeneration", "multimodal"), ("GotOcr2ForConditionalGeneration", "multimodal"),
    ("Kimi_K25ForConditionalGeneration", "multimodal"), ("LlavaOnevisionForConditionalGeneration", "multimodal"),
    ("QianfanOCRForConditionalGeneration", "multimodal"), ("Qwen3_5ForConditionalGeneration", "multimodal"),
    ("Cohere2VisionForConditionalGeneration", "multimodal"), ("Glm5NextForConditionalGeneration", "multimodal"),
    ("LightOnOcrForConditionalGeneration", "multimodal"),
    ("Qwen2_5OmniThinkerForConditionalGeneration", "multimodal"),
    ("AudioFlamingo3ForConditionalGeneration", "text"), ("FSMTForConditionalGeneration", "text"),
    ("LongT5ForConditionalGeneration", "text"), ("MvpForConditionalGeneration", "text"),
    ("ProphetNetForConditionalGeneration", "text"), ("SwitchTransformersForConditionalGeneration", "text"),
    ("CanaryForConditionalGeneration", "multimodal"), ("GraniteSpeechForConditionalGeneration", "multimodal"),
    ("Pop2PianoForConditionalGeneration", "multimodal"), ("SpeechEncoderDecoderModel", "multimodal"),
]

# vision-language models with an image, the vision tower's and the text model's layers as targets together
VISION_AND_TEXT = [
    ("LlavaForConditionalGeneration", ["CLIPEncoderLayer"], ["LlamaDecoderLayer"]),
    ("LlavaNextForConditionalGeneration", ["CLIPEncoderLayer"], ["LlamaDecoderLayer"]),
    ("Qwen2VLForConditionalGeneration", ["Qwen2VLVisionBlock"], ["Qwen2VLDecoderLayer"]),
    ("Qwen2_5_VLForConditionalGeneration", ["Qwen2_5_VLVisionBlock"], ["Qwen2_5_VLDecoderLayer"]),
    ("Qwen3VLForConditionalGeneration", ["Qwen3VLVisionBlock"], ["Qwen3VLTextDecoderLayer"]),
    ("Gemma3ForConditionalGeneration", ["SiglipEncoderLayer"], ["Gemma3DecoderLayer"]),
    ("Idefics3ForConditionalGeneration", ["Idefics3EncoderLayer"], ["LlamaDecoderLayer"]),
    ("SmolVLMForConditionalGeneration", ["SmolVLMEncoderLayer"], ["LlamaDecoderLayer"]),
    ("MllamaForConditionalGeneration", ["MllamaVisionEncoderLayer"],
     ["MllamaSelfAttentionDecoderLayer", "MllamaCrossAttentionDecoderLayer"]),
    ("Mistral3ForConditionalGeneration", ["PixtralAttentionLayer"], ["MistralDecoderLayer"]),
    ("PaliGemmaForConditionalGeneration", ["SiglipEncoderLayer"], ["GemmaDecoderLayer"]),
    ("InternVLForConditionalGeneration", ["InternVLVisionLayer"], ["Qwen2DecoderLayer"]),
]

# encoder-decoder models with the encoder's and the decoder's layers as targets
ENCODER_DECODER = [
    ("BartForConditionalGeneration", ["BartEncoderLayer", "BartDecoderLayer"], "text"),
    ("T5ForConditionalGeneration", ["T5Block"], "text"),
    ("WhisperForConditionalGeneration", ["WhisperEncoderLayer", "WhisperDecoderLayer"], "multimodal"),
    ("Speech2TextForConditionalGeneration", ["Speech2TextEncoderLayer", "Speech2TextDecoderLayer"], "multimodal"),
]

# vision-language models whose samples their own processor makes (check/processors.py) and no hand-built
# layout could: default targets (vision and text layers), in every release that has them
PROCESSOR_SAMPLES = [
    "BlipForConditionalGeneration", "DeepseekOcr2ForConditionalGeneration", "DeepseekVLForConditionalGeneration",
    "DeepseekVLHybridForConditionalGeneration", "Florence2ForConditionalGeneration", "GitForCausalLM",
    "JanusForConditionalGeneration", "Kosmos2ForConditionalGeneration", "Kosmos2_5ForConditionalGeneration",
    "Pix2StructForConditionalGeneration", "T5Gemma2ForConditionalGeneration", "VideoLlama3ForConditionalGeneration",
]

# the foundation architectures split below the layer, every Linear a target (and GPT-2's Conv1D), as
# `verify --targets-from linear` chooses them (check/samples.py: linear_targets): the attention forwards are
# inlined, under the class decorators that wrap them where the release has kernels (from 5.25, always)
BELOW_THE_LAYER = [(a, ("Linear", "Conv1D") if a == "GPT2LMHeadModel" else ("Linear",)) for a in FOUNDATION]

GROUPS = {
    "foundation": "the 14 foundation architectures",
    "vision-and-text": "12 vision-language models, multimodal samples, vision and text layers as targets",
    "encoder-decoder": "encoder and decoder layers as targets",
    "sample": "40 more, spread over every task",
    "processor-samples": "12 vision-language models, samples made by their own processor, default targets",
    "below-the-layer": "the 14 foundation architectures, every Linear (GPT-2's Conv1D too) a target",
}
VERDICTS = ("ok", "refused", "not-ok", "absent")
RESULTS = os.path.join("docs", "compatibility")
# what a committed row keeps of a case's result: no timings, so the file only changes with a verdict
ROW_FIELDS = ("status", "reason", "subgraphs", "targets_called", "calls")
# staticexec's own dependencies, pinned as in constraints.txt; transformers' are pip's choice per release
OWN_PINS = ("jedi", "parso", "libcst", "networkx", "pytest", "pytest-xdist", "execnet", "jsonschema", "accelerate", "psutil",
            "pillow")
# the package's files that verify never runs, by their path below the package
REPORT_TOOLING = {"check/matrix.py", "cli.py", "drift.py", "plans.py", "check/coverage.py", "graph.py", "explain.py"}


@dataclass(frozen=True)
class Case:
    """One verify run: an architecture, its sample, and its targets (empty: the model's defaults)."""

    group: str
    arch: str
    sample: str = "text"
    targets: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        """How a sweep worker is told the case, on one line: ARCH|SAMPLE|TARGET,TARGET."""
        return f"{self.arch}|{self.sample}|{','.join(self.targets)}"

    @staticmethod
    def parse(spec: str) -> "Case":
        """The case of a one-line spec `ARCH|SAMPLE|TARGET,TARGET` (its group is not part of it)."""
        arch, sample, targets = spec.split("|")
        return Case("", arch, sample, tuple(t for t in targets.split(",") if t))


def cases() -> list[Case]:
    """The fixed cases every release runs: foundation, vision-and-text, encoder-decoder, sample,
    processor-samples and below-the-layer groups."""
    out = [Case("foundation", a) for a in FOUNDATION]
    out += [Case("vision-and-text", a, "multimodal", tuple(v + t)) for a, v, t in VISION_AND_TEXT]
    out += [Case("encoder-decoder", a, s, tuple(t)) for a, t, s in ENCODER_DECODER]
    out += [Case("sample", a, s) for a, s in SAMPLE]
    out += [Case("processor-samples", a, "multimodal") for a in PROCESSOR_SAMPLES]
    out += [Case("below-the-layer", a, "text", t) for a, t in BELOW_THE_LAYER]
    return out


def verdict_of(status: str) -> str:
    """The verdict of a verify status: ok, refused and absent stay, anything else is not-ok."""
    if status in ("ok", "refused", "absent"):
        return status
    return "not-ok"


def analysis_key() -> str:
    """A hash of the code a verify run executes (report tooling set aside): results of other code are redone."""
    return code_digest(skip=REPORT_TOOLING)[:12]


# ----- inside one release's environment --------------------------------------------------------


def run_case(spec: str, options: dict) -> dict:
    """The sweep job: verify one case; `absent` when the release has no such architecture."""
    from staticexec.analysis.architectures import UnknownArchitecture, find_architecture
    from staticexec.check.verify import verify

    case = Case.parse(spec)
    try:
        find_architecture(case.arch)
    except UnknownArchitecture as exc:
        return {"status": "absent", "reason": str(exc)}
    v = verify(case.arch, attn_implementation=options.get("attn", "eager"), targets=list(case.targets) or None,
               sample=case.sample)
    row = {"status": v.status, "reason": v.reason, "subgraphs": v.subgraphs, "targets_called": v.targets_called,
           "calls": v.calls, "seconds": round(v.seconds, 1)}
    never = [t for t in case.targets if t not in v.calls]
    if v.status == "ok" and never:  # every requested target class must really run, each in its own subgraph
        row.update(status="targets-not-run", reason=f"target {', '.join(never)} never ran")
    return row


def run_release(results: str, jobs: int, timeout: float) -> dict:
    """Run every case not yet done by the current code into `results` (a JSON file, rewritten after each case)."""
    import transformers

    from staticexec import sweep

    key = analysis_key()
    data = _read(results) or {}
    if data.get("analysis") != key or data.get("transformers") != transformers.__version__:
        data = {"transformers": transformers.__version__, "analysis": key, "rows": {}}
    data["torch"] = __import__("torch").__version__
    specs = {c.spec for c in cases()}
    data["rows"] = {spec: row for spec, row in data["rows"].items() if spec in specs}
    todo = [c for c in cases() if c.spec not in data["rows"]]
    os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)

    def keep(result: dict) -> None:
        spec = result["arch"]
        data["rows"][spec] = {k: result[k] for k in ROW_FIELDS if k in result}
        if "reason" in data["rows"][spec]:
            data["rows"][spec]["reason"] = portable(str(result["reason"]))
        write_results(results, data)
        print(f"  {spec.split('|')[0]:<44} {result['status']:<15} {result.get('seconds', '')!s:>6}s "
              f"{result.get('reason', '')[:100]}", flush=True)

    start = time.monotonic()
    sweep.run(run_case, [c.spec for c in todo], {"attn": "eager"}, jobs=jobs, timeout=timeout,
              label=f"transformers {transformers.__version__}", on_result=keep)
    write_results(results, data)
    print(f"transformers {transformers.__version__}: {len(todo)} cases run in {time.monotonic() - start:.0f}s")
    return data


def _checkout() -> str:
    """The folder of the checkout that holds this package (pyproject.toml, constraints.txt)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def portable(reason: str) -> str:
    """A reason as any machine would write it: no folder of this checkout or environment, no object address."""
    import transformers

    root = _checkout()
    packages = os.path.dirname(os.path.dirname(os.path.abspath(transformers.__file__)))
    for folder in sorted({os.path.realpath(packages), packages, os.path.realpath(root), root}, key=len, reverse=True):
        reason = reason.replace(folder + os.sep, "")
    return re.sub(r" at 0x[0-9a-fA-F]+", "", reason)


def write_results(path: str, data: dict) -> None:
    """One release's results as committed: sorted keys, one row per case, the same bytes on every machine."""
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def results_path(folder: str, release: str) -> str:
    """The JSON file of one release's results in the folder."""
    return os.path.join(folder, f"transformers-{release}.json")


def complete(data: dict | None) -> bool:
    """Every case has a row made by the current analysis code."""
    return bool(data) and data.get("analysis") == analysis_key() and all(
        c.spec in data.get("rows", {}) for c in cases())


# ----- the orchestrator ------------------------------------------------------------------------


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None


def _own_pins(root: str) -> list[str]:
    with open(os.path.join(root, "constraints.txt"), encoding="utf-8") as handle:
        lines = [line.strip() for line in handle]
    return [line for line in lines if line.split("==")[0].lower() in OWN_PINS]


def build_env(release: str, envs: str, root: str, tests: bool = False) -> str:
    """The environment for `release` (built once): its python. With `tests`, also what the test suite needs."""
    env = os.path.join(envs, f"transformers-{release}")
    stamp = os.path.join(env, ".staticexec-matrix")
    if tests and os.path.exists(stamp) and not os.path.exists(stamp + "-tests"):
        python = os.path.join(os.path.abspath(env), "bin", "python")
        pins = os.path.join(envs, "own-pins.txt")
        with open(pins, "w", encoding="utf-8") as handle:
            handle.write("\n".join(_own_pins(root)) + "\n")
        subprocess.run([python, "-m", "pip", "install", "-q", "-c", pins, "-e", f"{root}[test]"], check=True)
        open(stamp + "-tests", "w").close()
    if os.path.exists(stamp):
        # by its real path: run through a symlinked folder, the analysis can't place transformers' files
        return os.path.join(os.path.realpath(env), "bin", "python")
    python = os.path.join(os.path.abspath(env), "bin", "python")
    pins = os.path.join(envs, "own-pins.txt")
    os.makedirs(envs, exist_ok=True)
    with open(pins, "w", encoding="utf-8") as handle:
        handle.write("\n".join(_own_pins(root)) + "\n")
    steps = [
        [sys.executable, "-m", "venv", env],
        # torch first, pinned exactly: the exact pin takes the CPU build among pip's local wheels, where an
        # open `torch` requirement would pull a CUDA build from PyPI
        [python, "-m", "pip", "install", "-q", "torch==2.13.0"],
        [python, "-m", "pip", "install", "-q", "-c", pins, f"transformers=={release}", "-e",
         f"{root}[test]" if tests else f"{root}[samples]"],
    ]
    for step in steps:
        print("$", " ".join(step), flush=True)
        subprocess.run(step, check=True)
    open(stamp, "w").close()
    if tests:
        open(stamp + "-tests", "w").close()
    return python


def run(releases: list[str], envs: str, folder: str, report: str, jobs: int, timeout: float,
        rerun: bool = False) -> int:
    """Run `releases` into their results in `folder`, then write the report from every release's results there."""
    root = _checkout()
    for release in releases:
        results = results_path(folder, release)
        if complete(_read(results)):
            if not rerun:
                print(f"transformers {release}: done by the current code ({results}); --rerun runs it again")
                continue
            os.remove(results)  # started over; an incomplete one resumes instead
        python = build_env(release, envs, root)
        print(f"transformers {release}: verify in {python}", flush=True)
        subprocess.run([python, "-m", "staticexec.check.matrix", os.path.abspath(results), str(jobs), str(timeout)],
                       check=True, cwd=root)
    write_report(folder, report)
    bad = {}
    for release in releases:
        rows = (_read(results_path(folder, release)) or {}).get("rows", {})
        bad[release] = sum(1 for row in rows.values() if verdict_of(row["status"]) == "not-ok")
    print(f"{report} written; not ok: " + ", ".join(f"{r} {n}" for r, n in bad.items()))
    return 1 if any(bad.values()) else 0


# ----- docs/compatibility.md ------------------------------------------------------------------


def write_report(folder: str, path: str) -> None:
    """docs/compatibility.md from the results of every release in `folder` (those not run say so)."""

    key = analysis_key()
    by_case = {c.spec: c for c in cases()}
    lines = [
        "# Compatibility with transformers releases",
        "",
        "Generated by `make matrix` (`staticexec matrix`); do not edit. Each release runs in its own",
        "environment (torch 2.13.0 CPU, `transformers==X`, staticexec's own dependencies pinned as in",
        "`constraints.txt`), `staticexec verify` over the same cases:",
        "",
    ]
    lines += [f"- **{g}**: {text}" for g, text in GROUPS.items()]
    lines += [
        "",
        "ok: the subgraphs reproduce the model exactly, every target once, in its own subgraph. refused: the",
        "analysis said where and why it can't prove a target call. not ok: anything else (a mismatch, a crash,",
        "a model that can't be built or run). absent: the release has no such architecture.",
        "",
        "| release | ok | refused | not ok | absent | foundation | vision and text | encoder-decoder | sample "
        "| processor samples | below the layer | analysis |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    for release in RELEASES:
        data = _read(results_path(folder, release))
        if not data:
            lines.append(f"| {release} | not run |" + " |" * (len(VERDICTS) + len(GROUPS)))
            continue
        rows = data["rows"]
        counts = dict.fromkeys(VERDICTS, 0)
        groups = {g: [0, 0] for g in GROUPS}
        bad = []
        for spec, case in by_case.items():
            row = rows.get(spec)
            if row is None:
                continue
            verdict = verdict_of(row["status"])
            counts[verdict] += 1
            groups[case.group][1] += 1
            groups[case.group][0] += verdict == "ok"
            if verdict in ("not-ok", "refused"):
                bad.append((verdict, case, row))
        done = sum(counts.values())
        note = "" if done == len(by_case) else f" ({done} of {len(by_case)} run)"
        stale = "" if data.get("analysis") == key else " (older code)"
        cells = [f"{counts[v]}" for v in VERDICTS] + [f"{ok}/{n}" for ok, n in groups.values()]
        lines.append(f"| {release}{note} | {' | '.join(cells)} | `{data.get('analysis', '?')}`{stale} |")
        if bad:
            details += ["", f"## transformers {release}", ""]
            grouped: dict[tuple[str, str, str], list[str]] = {}
            for verdict, case, row in bad:
                what = case.arch + (f" ({case.sample}; {', '.join(case.targets)})" if case.targets else
                                    f" ({case.sample})" if case.sample != "text" else "")
                reason = " ".join(str(row.get("reason", "")).split())
                grouped.setdefault((verdict, row["status"], reason), []).append(f"{what} [{case.group}]")
            for (verdict, status, reason), where in sorted(grouped.items(), key=lambda kv: (kv[0][0] != "not-ok", -len(kv[1]), kv[0])):
                head = f"**not ok** ({status})" if verdict == "not-ok" else "refused"
                details.append(f"- {head}, {len(where)} case{'s' if len(where) > 1 else ''}: {reason}")
                details += [f"  - {w}" for w in sorted(where)]
    lines += [
        "",
        "The analysis column is a hash of the code that verify runs; a row made by older code is marked.",
        f"Each release's results are in `{RESULTS}/transformers-X.json`; `make matrix RELEASES=X` runs one",
        "release again and writes this page from the results of all of them.",
    ]
    write_atomic(path, "\n".join(lines + details) + "\n")


if __name__ == "__main__":
    run_release(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
