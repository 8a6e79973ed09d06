"""Tiny random models: an architecture's model class built from its tiny config (configs.py).

A model is sized on the meta device before any weight is allocated (one that can't be made there is
counted while it is built, and stopped past the limit), seeded so two builds have the same weights, and
put in eval mode; `upstream_note` says when a failure is transformers' own.
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from collections.abc import Callable, Iterator

import torch
from torch import nn
from transformers import PretrainedConfig

from staticexec.analysis.session import current
from staticexec.check.configs import (MAX_MODEL_MB, TinyBuildError, class_defaults, config_class_for, model_class_for,
                                      one_line, tiny_config)

__all__ = ["OverLimit", "build_tiny_model", "built_within", "model_mb", "param_mb", "upstream_note"]


def build_tiny_model(
    arch: str,
    *,
    attn_implementation: str = "eager",
    config: PretrainedConfig | None = None,
    seed: int = 0,
) -> nn.Module:
    """A tiny float32 model in eval mode, seeded so two builds have the same weights.

    Its size is measured on the meta device first, so a config that failed to shrink
    never allocates a full-size model on a shared machine. When the model class
    rejects a stack with one layer of each kind (weights shared between the layers
    of a kind need two), it is built again with two of each.
    """
    model_class = model_class_for(arch)
    _missing_library().discard(arch)
    cfg = tiny_config(arch, config)
    try:
        return _build(model_class, cfg, attn_implementation, seed)
    except TinyBuildError as first:
        try:
            return _build(model_class, tiny_config(arch, config, sample_len=16, per_kind=2), attn_implementation, seed)
        except TinyBuildError:
            if _import_error(first):
                _missing_library().add(arch)
            raise first from first.__cause__


def _missing_library() -> set[str]:
    """Architectures whose last build in this session failed on an ImportError (see upstream_note)."""
    return current().value("check.missing_library", set)


def caused_by(error: BaseException | None, kind: type) -> bool:
    """Whether an exception is of `kind` or was raised while handling one (its cause or context chain)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, kind):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _import_error(error: BaseException | None) -> bool:
    return caused_by(error, ImportError)


def _build(model_class: type, cfg: PretrainedConfig, attn_implementation: str, seed: int) -> nn.Module:
    def build(config: PretrainedConfig) -> nn.Module:
        config._attn_implementation = attn_implementation
        return model_class._from_config(config, attn_implementation=attn_implementation, dtype=torch.float32)

    try:
        model = built_within(build, cfg, seed)
    except OverLimit as e:
        raise TinyBuildError(f"the tiny model {e.said()}") from e
    except Exception as e:
        raise TinyBuildError(f"{type(e).__name__}: {one_line(e)}") from e
    _open_gates(model)
    return model.float().eval()


def _open_gates(model: nn.Module) -> None:
    """Give gates initialised to exactly zero a nonzero value, as a trained checkpoint has.

    Mllama zeroes its cross-attention and tile-embedding gates (`tanh(gate) * x`), so a
    random tiny model would ignore the image entirely and a wrong vision state could
    never show in its output. Only small parameters named `*gate*` that are all zero change.
    """
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "gate" in name.rpartition(".")[2] and param.numel() <= 8 and not param.any():
                param.fill_(0.5)


class OverLimit(Exception):
    """A model over the size limit of a model staticexec builds, found on the meta device or while building it."""

    def __init__(self, mb: float, limit_mb: float, while_building: bool) -> None:
        super().__init__(mb, limit_mb, while_building)
        self.mb, self.limit_mb, self.while_building = mb, limit_mb, while_building

    def said(self, limit_of: str = "") -> str:
        """What was found, to follow the model's name: "has 26,954 MB of parameters and buffers, over the 32 MB
        limit", then `limit_of` (" of a model staticexec builds")."""
        mb = f"{self.mb:,.0f}" if self.mb >= 100 else f"{self.mb:.1f}"
        if self.while_building:
            return (f"passed {mb} MB of parameters and buffers while it was built, over the {self.limit_mb:.0f} MB "
                    f"limit{limit_of} (it can't be made on the meta device, where it is measured first)")
        return f"has {mb} MB of parameters and buffers, over the {self.limit_mb:.0f} MB limit{limit_of}"


def built_within(build: Callable[[object], nn.Module], config: object, seed: int = 0,
                 limit_mb: float = MAX_MODEL_MB) -> nn.Module:
    """`build(config)`, seeded, with never much more than `limit_mb` MB of parameters and buffers allocated: the
    model is made on the meta device first and measured (from a copy of the config); one that can't be made
    there is built with its parameters and buffers counted as they are registered, and stopped once those
    alive pass the limit.
    OverLimit when the model is larger; what `build` raises otherwise."""
    mb = meta_mb(lambda: build(copy.deepcopy(config)))
    if mb is not None and mb > limit_mb:
        raise OverLimit(mb, limit_mb, while_building=False)
    torch.manual_seed(seed)
    if mb is not None:
        return build(config)
    with _counted(limit_mb) as over:
        model = build(config)
    if over:  # the build went on past a refused parameter (its code caught the error)
        raise OverLimit(over[0], limit_mb, while_building=True)
    return model


@contextlib.contextmanager
def _counted(limit_mb: float) -> Iterator[list]:
    """Within it, every parameter and buffer registered on any module is counted (once, while it is alive);
    past `limit_mb` each registration raises OverLimit. Yields a list that then holds the MB counted."""
    from torch.nn.modules.module import (register_module_buffer_registration_hook,
                                         register_module_parameter_registration_hook)

    alive: dict[int, tuple[list, int]] = {}  # storage -> the tensors registered on it, its size
    total = [0]
    over: list = []

    def count(module: nn.Module, name: str, tensor: object) -> None:
        if not isinstance(tensor, torch.Tensor):  # a buffer registered as None
            return
        key, size = _storage(tensor)
        known = alive.get(key)
        if known is not None:
            if any(ref() is not None for ref in known[0]):  # the memory of one alive (tied, a view): counted once
                known[0].append(weakref.ref(tensor))
                return
            total[0] -= known[1]  # the key of one freed since
        alive[key] = ([weakref.ref(tensor)], size)
        total[0] += size
        if total[0] > limit_mb * 1e6:  # counted so far; those freed since (replaced) are taken off now
            for gone in [k for k, (refs, _) in alive.items() if all(ref() is None for ref in refs)]:
                total[0] -= alive.pop(gone)[1]
            if total[0] > limit_mb * 1e6:
                over[:] = [total[0] / 1e6]
                raise OverLimit(total[0] / 1e6, limit_mb, while_building=True)

    handles = [register_module_parameter_registration_hook(count), register_module_buffer_registration_hook(count)]
    try:
        yield over
    finally:
        for handle in handles:
            handle.remove()


def meta_mb(build: Callable[[], nn.Module]) -> float | None:
    """Size in MB of the parameters and buffers of the model `build` makes, made on the meta device (nothing
    is allocated); None when it can't be made there."""
    try:
        with torch.device("meta"):
            model = build()
    except Exception:
        return None
    return model_mb(model)


def model_mb(model: nn.Module) -> float:
    """Size in MB (10**6 bytes) of the memory a model's parameters and buffers hold, each counted once (tied
    weights, views): what it holds."""
    return _mb([*model.parameters(), *model.buffers()])


def param_mb(model: nn.Module) -> float:
    """Size in MB (10**6 bytes) of the memory a model's parameters hold, each counted once (tied weights)."""
    return _mb(model.parameters())


def _mb(tensors) -> float:
    return sum(dict(_storage(t) for t in tensors).values()) / 1e6


def _storage(tensor: torch.Tensor) -> tuple[int, int]:
    """The memory a tensor holds: a key the same for all tensors on it (a view, an expanded tensor), and its
    size in bytes. A tensor with no storage of its own (a subclass, sparse) is its own, of its elements' size."""
    try:
        storage = tensor.untyped_storage()
        return storage._cdata, storage.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return id(tensor), tensor.numel() * tensor.element_size()


def upstream_note(arch: str, attn_implementation: str = "eager", error: BaseException | None = None) -> str:
    """Why a build failed: a missing library, or class defaults that can't build the model either.

    A missing library shows as an ImportError while building: in `error`'s causes, in
    the last failed build of `arch` in this process, or building the defaults on meta
    (weight init that imports a library only runs off meta, so the first two count).
    """
    import torch

    if _import_error(error) or arch in _missing_library():
        return "needs a library: "
    try:
        config, _ = class_defaults(config_class_for(arch), {})
        with torch.device("meta"):
            model_class_for(arch)._from_config(config, attn_implementation=attn_implementation)
    except ImportError:
        return "needs a library: "
    except Exception:
        return "defaults broken upstream: "
    return ""
