"""The math family, continued: discrete Fourier transforms over the innermost 1, 2 or 3 dims
(FFT/IFFT, RFFT/IRFFT and their 2D/3D forms). Imported by math.py.

The real transforms take `fft_length`, one length per transformed dim: RFFT crops each
transformed input dim to its length and keeps the fft_length // 2 + 1 non-negative frequencies
of the innermost; IRFFT crops its input to those sizes and returns fft_length real values per
dim (the kernels refuse shorter dims; tf.signal pads before calling them).
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import InferenceContext
from .math_common import register_math

_COMPLEX_ATTR = "Tcomplex: {complex64, complex128} = complex64"
_REAL_ATTR = "Treal: {float, double} = float"
_SUFFIXES = {1: "", 2: "2D", 3: "3D"}


def _complex_shape(rank: int):
    def shape(ctx: InferenceContext) -> Shape:
        return ctx.with_rank_at_least(0, rank)
    return shape


def _real_shape(rank: int, inverse: bool):
    """RFFT*: the innermost dims become fft_length with the last halved (+1); IRFFT*: exactly
    fft_length. Unknown fft_length entries give unknown dims."""
    def shape(ctx: InferenceContext) -> Shape:
        data = ctx.with_rank_at_least(0, rank)
        length_shape = ctx.with_rank(1, 1)
        if length_shape[0] is not None and length_shape[0] != rank:
            ctx.fail(f"fft_length must have {rank} element(s), has shape {length_shape}")
        if not has_rank(data):
            return data
        partial = ctx.partial_value(1)
        lengths = [None] * rank if partial is None else [None if v is None else int(v) for v in partial]
        if not inverse and lengths[-1] is not None:
            lengths[-1] = lengths[-1] // 2 + 1
        return data[:-rank].concatenate(lengths)
    return shape


for _rank, _suffix in _SUFFIXES.items():
    for _name in (f"FFT{_suffix}", f"IFFT{_suffix}"):
        register_math(_name, inputs=["input: Tcomplex"], outputs=["output: Tcomplex"],
                      attrs=[_COMPLEX_ATTR], shape=_complex_shape(_rank))
    register_math(f"RFFT{_suffix}", inputs=["input: Treal", "fft_length: int32"],
                  outputs=["output: Tcomplex"], attrs=[_REAL_ATTR, _COMPLEX_ATTR],
                  shape=_real_shape(_rank, inverse=False))
    register_math(f"IRFFT{_suffix}", inputs=["input: Tcomplex", "fft_length: int32"],
                  outputs=["output: Treal"], attrs=[_REAL_ATTR, _COMPLEX_ATTR],
                  shape=_real_shape(_rank, inverse=True))
