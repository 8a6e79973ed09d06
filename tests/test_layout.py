"""Strided views given on with their layout (emit/layout.py)."""

import torch

from staticexec.emit.layout import Strided, laid_out


def _moved(strided: Strided) -> torch.Tensor:
    """As a cache that offloads gives it back: the span copied (`Tensor.to` keeps a dense tensor's strides)."""
    return Strided(strided.span.clone(), strided.size, strided.stride).rebuild()


def test_a_half_of_chunk_travels_with_its_layout_and_is_the_same_view_on_its_own_device():
    x = torch.randn(2, 5, 8)
    for half in x.chunk(2, dim=-1):
        assert half.clone().is_contiguous()  # what a move would make of it
        travelling = laid_out(half)
        assert isinstance(travelling, Strided) and travelling.span.numel() == 76
        again = travelling.rebuild()
        assert again.data_ptr() == half.data_ptr() and again.stride() == half.stride() and torch.equal(again, half)
        moved = _moved(travelling)
        assert moved.stride() == half.stride() and torch.equal(moved, half)


def test_an_expanded_tensor_travels_as_the_memory_it_has():
    row = torch.randn(5)
    travelling = laid_out(row.expand(3, 5))
    assert isinstance(travelling, Strided) and travelling.span.numel() == 5
    assert _moved(travelling).stride() == (0, 1)


def test_tensors_a_move_keeps_as_they_are_and_wide_views_are_given_as_they_are():
    x = torch.randn(2, 5, 8)
    for tensor in (x, x.transpose(1, 2), x[:, :, ::4], x[:, 1], torch.empty(0, 3)[:, :2], torch.nn.Parameter(x[..., :4])):
        assert laid_out(tensor) is tensor
