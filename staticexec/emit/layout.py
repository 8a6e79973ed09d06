"""Stage 6, run: a strided view given on with its layout.

A cache that offloads to another device moves each tensor with `Tensor.to`, which keeps the strides
of a tensor whose elements fill the memory they span (non-overlapping and dense) and makes any other
contiguous. The values are equal, but an operation whose rounding depends on the memory layout (`gelu`
on the CPU, vectorized over contiguous memory) can then differ in the last bits from the model's own
forward, as a half of `chunk(2, dim=-1)` carried past a cut did. So a subgraph gives such a view on
as a `Strided`: the memory it spans, as a one-dimensional tensor (dense, so moved as it is), with its
sizes and strides, and the subgraph that takes it makes the view again. On the model's own device
nothing is copied: the span is a view of the same memory, and so is the view made again. An expanded
tensor (a stride of 0) travels as the memory it has, not as the elements it shows. A view whose span
is more than twice its elements (`x[:, ::4]`) is given on as it is, which keeps what the cache holds
for it within twice its values; it comes back contiguous.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

_MOST_SPAN = 2  # a span of at most this many times the view's elements travels with the view


@dataclass
class Strided:
    """A view on its way to a later subgraph: the memory it spans, from its first element, and its layout."""

    span: Any  # a one-dimensional tensor over that memory
    size: tuple
    stride: tuple

    def rebuild(self) -> Any:
        """The view, made again over the span (where it is now)."""
        return self.span.as_strided(self.size, self.stride, self.span.storage_offset())


@functools.lru_cache(maxsize=1)
def _torch() -> tuple:
    """torch's tensor class and its strided layout, looked up once."""
    import torch

    return torch.Tensor, torch.strided


def laid_out(tensor: Any) -> Any:
    """The tensor, or a `Strided` for it where a move to another device would change its layout."""
    tensor_type, strided = _torch()
    if type(tensor) is not tensor_type or tensor.layout is not strided or tensor.is_contiguous():
        return tensor
    size, stride = tuple(tensor.shape), tuple(tensor.stride())
    count = tensor.numel()
    if count == 0 or _dense(size, stride):
        return tensor
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if span > _MOST_SPAN * count:
        return tensor
    return Strided(tensor.as_strided((span,), (1,), tensor.storage_offset()), size, stride)


def _dense(size: tuple, stride: tuple) -> bool:
    """Whether the elements fill the memory they span, each once, in some order of the dimensions."""
    expected = 1
    for step, n in sorted((s, n) for n, s in zip(size, stride) if n != 1):
        if step != expected:
            return False
        expected *= n
    return True
