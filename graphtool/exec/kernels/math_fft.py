"""Kernels of the Fourier transforms: FFT/IFFT, RFFT/IRFFT and their 2D/3D forms, over the
innermost 1-3 dims, computed in the input's precision (complex64 stays single precision, as in
TensorFlow). The real transforms crop each transformed dim to `fft_length` (the innermost complex dim of
IRFFT's input to fft_length // 2 + 1), which is what the array module's rfftn/irfftn do with
`s`; a dim shorter than that is an error, as in TensorFlow's kernels.
"""
from __future__ import annotations

from .math_common import math_kernel, shape_text, to_host

_RANKS = {"": 1, "2D": 2, "3D": 3}


def _check_rank(ctx, x, rank: int):
    if x.ndim < rank:
        ctx.fail(f"Input must have rank of at least {rank} but got: {shape_text(x.shape)}")


def _axes(rank: int) -> tuple[int, ...]:
    return tuple(range(-rank, 0))


def _complex_kernel(suffix: str, inverse: bool):
    rank = _RANKS[suffix]

    def transform(ctx, x):
        xp = ctx.xp
        _check_rank(ctx, x, rank)
        if not x.size:
            return xp.zeros(x.shape, ctx.out_dtype())
        return (xp.fft.ifftn if inverse else xp.fft.fftn)(x, axes=_axes(rank))
    transform.__name__ = f"{'i' if inverse else ''}fft{suffix.lower()}"
    return transform


def _lengths(ctx, fft_length, rank: int) -> tuple[int, ...]:
    lengths = tuple(int(v) for v in to_host(fft_length).reshape(-1))
    if len(lengths) != rank:
        ctx.fail(f"fft_length must have {rank} element(s), got {len(lengths)}")
    if any(n < 0 for n in lengths):
        ctx.fail(f"fft_length must be non-negative, got {list(lengths)}")
    return lengths


def _real_kernel(suffix: str, inverse: bool):
    rank = _RANKS[suffix]

    def transform(ctx, x, fft_length):
        xp = ctx.xp
        _check_rank(ctx, x, rank)
        lengths = _lengths(ctx, fft_length, rank)
        out_dims = list(lengths)
        if not inverse:
            out_dims[-1] = lengths[-1] // 2 + 1
        out_shape = x.shape[:-rank] + tuple(out_dims)
        if not x.size or 0 in lengths or 0 in out_shape:
            # Nothing to transform (or all of it cropped away): zeros of the output shape.
            return xp.zeros(out_shape, ctx.out_dtype())
        # The kernels crop but never pad (tf.signal's wrappers pad before calling them).
        needed = list(lengths) if not inverse else [*lengths[:-1], lengths[-1] // 2 + 1]
        for axis, (have, need) in enumerate(zip(x.shape[-rank:], needed), start=x.ndim - rank):
            if have < need:
                ctx.fail(f"Input dimension {axis} must have length of at least {need} but got: {have}")
        if inverse:
            return xp.fft.irfftn(x, s=lengths, axes=_axes(rank))
        return xp.fft.rfftn(x, s=lengths, axes=_axes(rank))
    transform.__name__ = f"{'ir' if inverse else 'r'}fft{suffix.lower()}"
    return transform


for _suffix in _RANKS:
    math_kernel(f"FFT{_suffix}", expensive=True)(_complex_kernel(_suffix, inverse=False))
    math_kernel(f"IFFT{_suffix}", expensive=True)(_complex_kernel(_suffix, inverse=True))
    math_kernel(f"RFFT{_suffix}", expensive=True)(_real_kernel(_suffix, inverse=False))
    math_kernel(f"IRFFT{_suffix}", expensive=True)(_real_kernel(_suffix, inverse=True))
