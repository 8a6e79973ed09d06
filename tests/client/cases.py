"""Tiny models and calibration data for llm-compressor's `oneshot`, built offline from config classes.

Each case is a random model of hidden size 128 and 2 layers per stack, saved with a
word-level tokenizer to a folder and loaded back with `from_pretrained` (oneshot reads
the config from `name_or_path`), plus a few random calibration samples as a
`datasets.Dataset`. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

VOCAB = 256
HIDDEN = 128
SAMPLES = 4
SEQ = 16


@dataclass(frozen=True)
class Case:
    name: str
    config: Callable[[], Any]
    model_class: str
    data: Callable[[], dict[str, list]]
    sequential_targets: list[str] | None  # None: the pipeline's default, the model's _no_split_modules
    ignore: list[str] = field(default_factory=lambda: ["lm_head"])
    quant_targets: list[str] = field(default_factory=lambda: ["Linear"])
    input_names: list[str] = field(default_factory=lambda: ["input_ids", "attention_mask"])  # "already tokenized"
    remote_code: str | None = None  # a model folder laid out as remote code; model_class is then its auto class


def _tokens(n: int = SAMPLES, seq: int = SEQ, seed: int = 1, low: int = 3) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(low, VOCAB, (seq,), generator=g).tolist() for _ in range(n)]


def _text() -> dict[str, list]:
    return {"input_ids": _tokens()}


def _seq2seq() -> dict[str, list]:
    return {"input_ids": _tokens(), "decoder_input_ids": _tokens(seq=8, seed=2)}


def _llama_config(**extra: Any):
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=HIDDEN, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64, **extra)


def _qwen3_moe_config():
    from transformers import Qwen3MoeConfig

    return Qwen3MoeConfig(hidden_size=HIDDEN, intermediate_size=256, moe_intermediate_size=128, num_experts=4,
                          num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=32, vocab_size=VOCAB, max_position_embeddings=64)


def _gpt2_config():
    from transformers import GPT2Config

    return GPT2Config(n_embd=HIDDEN, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64)


def _bart_config():
    from transformers import BartConfig

    return BartConfig(d_model=HIDDEN, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                      decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=VOCAB,
                      max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                      decoder_start_token_id=2)


def _t5_config():
    from transformers import T5Config

    return T5Config(d_model=HIDDEN, d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2, num_heads=4,
                    vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0)


MEL_BINS = 16
SOURCE_POSITIONS = 16


def _whisper_config():
    from transformers import WhisperConfig

    return WhisperConfig(d_model=HIDDEN, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=VOCAB,
                         num_mel_bins=MEL_BINS, max_source_positions=SOURCE_POSITIONS, max_target_positions=64,
                         pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=0,
                         suppress_tokens=[], begin_suppress_tokens=[])


def _whisper_data() -> dict[str, list]:
    g = torch.Generator().manual_seed(3)
    features = [torch.randn(MEL_BINS, 2 * SOURCE_POSITIONS, generator=g).tolist() for _ in range(SAMPLES)]
    return {"input_features": features, "decoder_input_ids": _tokens(seq=8, seed=2)}


def _llava_config():
    from transformers import CLIPVisionConfig, LlavaConfig

    vision = CLIPVisionConfig(hidden_size=HIDDEN, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                              image_size=32, patch_size=8, projection_dim=HIDDEN)
    return LlavaConfig(vision_config=vision, text_config=_llama_config().to_dict() | {"model_type": "llama"},
                       image_token_id=VOCAB - 1, vocab_size=VOCAB)


IMAGE_TOKENS = 16  # (32 / 8) ** 2 patches, the CLS feature dropped


def _llava_image_data() -> dict[str, list]:
    g = torch.Generator().manual_seed(4)
    ids = [[VOCAB - 1] * IMAGE_TOKENS + row[:8] for row in _tokens(low=3)]
    pixels = [torch.randn(3, 32, 32, generator=g).tolist() for _ in range(SAMPLES)]
    return {"input_ids": ids, "pixel_values": pixels}


LLAVA_IGNORE = ["lm_head", "re:.*vision_tower.*", "re:.*multi_modal_projector.*"]


def _gemma3_config():
    from transformers import Gemma3Config, Gemma3TextConfig, SiglipVisionConfig

    vision = SiglipVisionConfig(hidden_size=HIDDEN, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                image_size=32, patch_size=8, vision_use_head=False)  # as Gemma 3 checkpoints
    text = Gemma3TextConfig(hidden_size=HIDDEN, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=32, vocab_size=VOCAB, max_position_embeddings=64,
                            sliding_window=8, layer_types=["sliding_attention", "full_attention"])
    # a 4 x 4 patch grid pooled to 2 x 2 image tokens; the placeholder ids at the top of the vocab
    return Gemma3Config(vision_config=vision.to_dict(), text_config=text.to_dict(), mm_tokens_per_image=4,
                        image_token_index=VOCAB - 1, boi_token_index=VOCAB - 2, eoi_token_index=VOCAB - 3)


GEMMA3_INPUTS = ["input_ids", "attention_mask", "pixel_values"]


def _gemma3_image_data() -> dict[str, list]:
    """Samples as Gemma 3's users make them: Gemma3Processor (its image processor fitted to the config, a
    word-level tokenizer with the config's ids) packs a random image and expands its placeholder."""
    from transformers import Gemma3ForConditionalGeneration

    from staticexec.check.processors import processor_samples

    model = Gemma3ForConditionalGeneration(_gemma3_config()).eval()
    rows: dict[str, list] = {name: [] for name in GEMMA3_INPUTS}
    for seed in range(SAMPLES):
        sample = next(s for s in processor_samples(model, seed=seed) if _runs(model, s))
        for name in GEMMA3_INPUTS:
            rows[name].append(sample[name][0].tolist())
    return rows


def _runs(model: Any, sample: dict) -> bool:
    """Whether the model's own forward takes the sample (its placeholder count is the model's)."""
    try:
        with torch.no_grad():
            model(**sample)
    except ValueError:
        return False
    return True

CASES = {
    "llama": Case("llama", _llama_config, "LlamaForCausalLM", _text, ["LlamaDecoderLayer"]),
    "qwen3_moe": Case("qwen3_moe", _qwen3_moe_config, "Qwen3MoeForCausalLM", _text, ["Qwen3MoeDecoderLayer"],
                      ignore=["lm_head", "re:.*mlp.gate$"]),
    # compressed-tensors quantizes Linear and Embedding only, not GPT-2's Conv1D: GPTQ quantizes lm_head
    "gpt2": Case("gpt2", _gpt2_config, "GPT2LMHeadModel", _text, ["GPT2Block"], ignore=[]),
    "bart": Case("bart", _bart_config, "BartForConditionalGeneration", _seq2seq, None),
    "t5": Case("t5", _t5_config, "T5ForConditionalGeneration", _seq2seq, ["T5Block"]),
    "whisper": Case("whisper", _whisper_config, "WhisperForConditionalGeneration", _whisper_data,
                    ["WhisperEncoderLayer", "WhisperDecoderLayer"], input_names=["input_features", "decoder_input_ids"]),
    "llava_text": Case("llava_text", _llava_config, "LlavaForConditionalGeneration", _text, ["LlamaDecoderLayer"],
                       ignore=LLAVA_IGNORE),
    "llava_image": Case("llava_image", _llava_config, "LlavaForConditionalGeneration", _llava_image_data,
                        ["LlamaDecoderLayer", "CLIPEncoderLayer"],
                        input_names=["input_ids", "attention_mask", "pixel_values"]),
    # images, but only the text layers as targets: the vision tower runs inside the first subgraph's
    # opaque code (get_image_features), and its Linear modules are calibrated with that subgraph
    "llava_image_text_targets": Case("llava_image_text_targets", _llava_config, "LlavaForConditionalGeneration",
                                     _llava_image_data, ["LlamaDecoderLayer"],
                                     input_names=["input_ids", "attention_mask", "pixel_values"]),
    # a second vision-language family, its samples made by its own processor: the SigLIP encoder's and
    # Gemma 3's layers as targets, every Linear quantized (the projector's in the subgraph between them)
    "gemma3_image": Case("gemma3_image", _gemma3_config, "Gemma3ForConditionalGeneration", _gemma3_image_data,
                         ["SiglipEncoderLayer", "Gemma3DecoderLayer"], input_names=GEMMA3_INPUTS),
}


def _glm_moe_dsa_config():
    """The tiny configuration of llm-compressor's own test of this model (test_glm_moe_dsa_trace.py)."""
    from transformers.models.glm_moe_dsa.configuration_glm_moe_dsa import GlmMoeDsaConfig

    return GlmMoeDsaConfig(hidden_size=HIDDEN, intermediate_size=256, moe_intermediate_size=64, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=4, num_local_experts=4, n_routed_experts=4,
                           num_experts_per_tok=2, n_shared_experts=1, n_group=1, topk_group=1, vocab_size=VOCAB)


# targets below the decoder layer: every Linear, or the attention and the experts; GLM-MoE-DSA's fused experts
# are first turned into one module per expert by llm-compressor's `linearize_moe` (the tests pass it as on_load)
GLM_IGNORE = ["lm_head", "re:.*mlp.gate$"]
SUBLAYER_CASES = {
    "llama_linear": Case("llama_linear", _llama_config, "LlamaForCausalLM", _text, ["Linear"]),
    "glm_moe_dsa_experts": Case("glm_moe_dsa_experts", _glm_moe_dsa_config, "GlmMoeDsaForCausalLM", _text,
                                ["GlmMoeDsaAttention", "ExpertMLP"], ignore=GLM_IGNORE),
    "glm_moe_dsa_linear": Case("glm_moe_dsa_linear", _glm_moe_dsa_config, "GlmMoeDsaForCausalLM", _text, ["Linear"],
                               ignore=GLM_IGNORE),
}


def tokenizer(input_names: list[str] | None = None):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", pad_token="t0",
                                   model_input_names=input_names or ["input_ids", "attention_mask"])


def load(case: Case, folder: str):
    """A seeded random model of the case, saved and loaded back (oneshot reads `name_or_path`)."""
    import transformers

    if case.remote_code is not None:
        return _load_remote_code(case, folder)
    cls = getattr(transformers, case.model_class)
    torch.manual_seed(0)
    cls(case.config()).eval().save_pretrained(folder)
    tokenizer(case.input_names).save_pretrained(folder)
    return cls.from_pretrained(folder, dtype=torch.float32).eval()


def _load_remote_code(case: Case, folder: str):
    """The folder's model built with its own code (trust_remote_code), saved with it and loaded back.

    The copy keeps the folder's name, so every load of the same code is the same module of
    transformers' module cache."""
    import os
    import shutil

    import transformers

    folder = os.path.join(folder, os.path.basename(case.remote_code))
    shutil.copytree(case.remote_code, folder)
    auto = getattr(transformers, case.model_class)
    config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    torch.manual_seed(0)
    auto.from_config(config, trust_remote_code=True).eval().save_pretrained(folder)
    tokenizer(case.input_names).save_pretrained(folder)
    return auto.from_pretrained(folder, trust_remote_code=True, dtype=torch.float32).eval()


@dataclass
class Record:
    """What a `oneshot_run` saw of the tracers and the pipeline, kept also when `oneshot` raises."""

    traced_by: Any = None  # the function the pipeline called as `trace_subgraphs`
    trace_calls: int = 0  # how many times the pipeline called it
    staticexec_calls: int = 0  # calls of `staticexec.subgraphs` made by `staticexec.llmcompressor.trace_subgraphs`
    own_tracer_calls: int = 0  # calls of llm-compressor's own `trace_subgraphs`
    subgraph_runs: list[int] = field(default_factory=list)  # per subgraph, in order: runs of its `forward`
    loaded: dict[str, torch.Tensor] = field(default_factory=dict)  # the state dict as loaded, before oneshot
    target_calls: dict[str, int] = field(default_factory=dict)  # per sequential target module: its calls in oneshot
    # of those, the calls made while the tracer ran (staticexec runs the model's own forward once on the sample
    # where it reads a branch off that run)
    calls_while_tracing: dict[str, int] = field(default_factory=dict)


@dataclass
class Run:
    model: Any
    seconds: float
    trace_seconds: float
    record: Record = field(default_factory=Record)


def oneshot_run(case: Case, staticexec: bool, recipe: Any = None, record: Record | None = None,
                on_load: Callable[[Any], None] | None = None, **kwargs: Any) -> Run:
    """`oneshot` with the sequential pipeline, through staticexec's subgraphs or llm-compressor's tracer.

    `record` (filled in even when `oneshot` raises) counts the calls of each tracer and the runs
    of each subgraph; `on_load(model)` runs on the loaded model before `oneshot`.
    """
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import GPTQModifier
    from llmcompressor.pipelines.sequential import pipeline

    if recipe is None:
        recipe = GPTQModifier(scheme="W4A16", targets=case.quant_targets, ignore=case.ignore)
    record = Record() if record is None else record
    with tempfile.TemporaryDirectory() as folder:
        model = load(case, folder)
        record.loaded = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if on_load is not None:
            on_load(model)
        for name in target_modules(model, case):
            record.target_calls[name] = 0
            model.get_submodule(name).register_forward_pre_hook(functools.partial(_count_call, record, name))
        timed = _Timed(pipeline, record)
        start = time.perf_counter()
        with contextlib.ExitStack() as stack:
            # llm-compressor's own tracer is counted under the name the pipeline calls, before
            # `patch()` rebinds that name: a patch that failed to rebind it would call the counter
            stack.enter_context(counted(pipeline, "trace_subgraphs", record, "own_tracer_calls"))
            if staticexec:
                import staticexec.llmcompressor as integration

                stack.enter_context(integration.patch())
                stack.enter_context(counted(integration, "subgraphs", record, "staticexec_calls"))
            stack.enter_context(timed)
            oneshot(model=model, dataset=Dataset.from_dict(case.data()), recipe=recipe, processor=tokenizer(case.input_names),
                    num_calibration_samples=SAMPLES, pipeline="sequential", sequential_targets=case.sequential_targets,
                    shuffle_calibration_samples=False, **kwargs)
        return Run(model, time.perf_counter() - start, timed.seconds, record)


def _count_call(record: Record, name: str, *_: Any) -> None:
    record.target_calls[name] += 1


@contextlib.contextmanager
def counted(module: Any, name: str, record: Record, counter: str):
    """`module.name` replaced, for the block, by a wrapper that adds each call to `record.<counter>`."""
    inner = getattr(module, name)

    def counting(*args: Any, **kwargs: Any):
        setattr(record, counter, getattr(record, counter) + 1)
        return inner(*args, **kwargs)

    setattr(module, name, counting)
    try:
        yield
    finally:
        setattr(module, name, inner)


class _Timed:
    """Measures the time the pipeline spends in `trace_subgraphs`, whichever it is; records which
    function that is, and wraps each subgraph it returns to count the pipeline's runs of it."""

    def __init__(self, module: Any, record: Record | None = None) -> None:
        self.module = module
        self.record = Record() if record is None else record
        self.seconds = 0.0

    def __enter__(self) -> "_Timed":
        self.inner = self.module.trace_subgraphs
        self.record.traced_by = self.inner

        def timed(*args: Any, **kwargs: Any):
            self.record.trace_calls += 1
            start = time.perf_counter()
            before = dict(self.record.target_calls)
            try:
                subgraphs = self.inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.record.calls_while_tracing = {k: v - before.get(k, 0) for k, v in self.record.target_calls.items()}
            self.record.subgraph_runs = [0] * len(subgraphs)
            for index, subgraph in enumerate(subgraphs):
                subgraph.forward = self._counting(subgraph.forward, index)
            return subgraphs

        self.module.trace_subgraphs = timed
        return self

    def _counting(self, forward: Callable, index: int) -> Callable:
        def run_counted(*args: Any, **kwargs: Any):
            self.record.subgraph_runs[index] += 1
            return forward(*args, **kwargs)

        return run_counted

    def __exit__(self, *exc: object) -> None:
        self.module.trace_subgraphs = self.inner


def target_modules(model: Any, case: Case) -> list[str]:
    """The sequential targets the pipeline splits at (its default: `_no_split_modules`)."""
    from staticexec.emit.targets import select_targets

    targets = case.sequential_targets or list(model._no_split_modules)
    return list(select_targets(model, targets, warn=False).modules)


def quantizable(model: Any, case: Case):
    """(name, module) of every module the recipe quantizes (the sequential targets' Linear layers,
    and for GPT-2, whose blocks hold Conv1D only, lm_head)."""
    from compressed_tensors.utils.match import is_match

    for name, module in model.named_modules():
        if is_match(name, module, case.quant_targets, case.ignore):
            yield name, module


def unquantized(model: Any, case: Case) -> list[str]:
    """Quantizable modules whose weights GPTQ did not quantize:
    no weight_scale, or weights off the 4-bit grid the scale defines."""
    out = []
    for name, module in quantizable(model, case):
        scale = getattr(module, "weight_scale", None)
        if scale is None or not _on_grid(module.weight.detach(), scale.detach()):
            out.append(name)
    return out


def quantized_count(model: Any) -> int:
    return sum(1 for m in model.modules() if getattr(m, "weight_scale", None) is not None)


def _on_grid(weight: torch.Tensor, scale: torch.Tensor) -> bool:
    if weight.shape[0] != scale.shape[0]:  # Conv1D keeps its weight transposed
        weight = weight.t()
    groups = scale.shape[-1] if scale.dim() == 2 else 1
    q = weight.reshape(weight.shape[0], groups, -1) / scale.reshape(scale.shape[0], groups, 1)
    return bool(torch.all(q.abs() <= 8.001)) and torch.allclose(q, q.round(), atol=1e-3) and bool(torch.any(q != 0))
