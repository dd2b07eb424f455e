"""Lowerings of the complex-number ops (parts, conjugates, magnitudes) and the Fourier transforms
(FFT/IFFT, RFFT/IRFFT and their 2D/3D forms over the innermost dims; fft_length is static), as the
interpreter computes them (kernels/math.py, math_fft.py): the real transforms crop each
transformed dim to fft_length, complex64 stays single precision.
"""
from __future__ import annotations

from .common import lowering, static_ints

_PARTS = {"Real": "real", "Imag": "imag", "Conj": "conj", "ComplexAbs": "abs", "Angle": "angle"}


@lowering(*_PARTS, complex_ok=True)
def complex_part(ctx, x):
    return getattr(ctx.jnp, _PARTS[ctx.node.op])(x)


@lowering("Complex", complex_ok=True)
def complex_(ctx, real, imag):
    # lax.complex assembles the parts as they are: real + 1j * imag would make NaN of infinities.
    return ctx.lax.complex(*ctx.jnp.broadcast_arrays(real, imag))


@lowering("ConjugateTranspose", static_inputs=(1,), complex_ok=True, half=True)
def conjugate_transpose(ctx, x, perm):
    moved = ctx.jnp.transpose(x, [a + x.ndim if a < 0 else a for a in static_ints(perm)])
    return ctx.jnp.conj(moved) if moved.dtype.kind == "c" else moved


_RANKS = {"": 1, "2D": 2, "3D": 3}


def _axes(rank: int) -> tuple[int, ...]:
    return tuple(range(-rank, 0))


def _complex_fft(suffix: str, inverse: bool):
    rank = _RANKS[suffix]

    def transform(ctx, x):
        if not x.size:
            return ctx.jnp.zeros(x.shape, ctx.out_dtype(0))
        return (ctx.jnp.fft.ifftn if inverse else ctx.jnp.fft.fftn)(x, axes=_axes(rank))
    transform.__name__ = f"{'i' if inverse else ''}fft{suffix.lower()}"
    return transform


def _real_fft(suffix: str, inverse: bool):
    rank = _RANKS[suffix]

    def transform(ctx, x, fft_length):
        jnp = ctx.jnp
        lengths = static_ints(fft_length)
        out_dims = list(lengths)
        if not inverse:
            out_dims[-1] = lengths[-1] // 2 + 1
        out_shape = x.shape[:-rank] + tuple(out_dims)
        if not x.size or 0 in lengths or 0 in out_shape:
            return jnp.zeros(out_shape, ctx.out_dtype(0))
        if inverse:
            # Crop the input to what the transform reads (numpy's irfftn crops as TF's kernel does).
            needed = [*lengths[:-1], lengths[-1] // 2 + 1]
            x = x[(Ellipsis, *(slice(0, n) for n in needed))]
            return jnp.fft.irfftn(x, s=lengths, axes=_axes(rank))
        x = x[(Ellipsis, *(slice(0, n) for n in lengths))]
        return jnp.fft.rfftn(x, s=lengths, axes=_axes(rank))
    transform.__name__ = f"{'ir' if inverse else 'r'}fft{suffix.lower()}"
    return transform


for _suffix in _RANKS:
    lowering(f"FFT{_suffix}", complex_ok=True)(_complex_fft(_suffix, inverse=False))
    lowering(f"IFFT{_suffix}", complex_ok=True)(_complex_fft(_suffix, inverse=True))
    lowering(f"RFFT{_suffix}", static_inputs=(1,), complex_ok=True)(_real_fft(_suffix, inverse=False))
    lowering(f"IRFFT{_suffix}", static_inputs=(1,), complex_ok=True)(_real_fft(_suffix, inverse=True))
