"""The Cast kernel, with TensorFlow's CPU semantics (checked against TensorFlow 2.21):

- integers wrap into narrower integer types; anything to bool is `x != 0` (complex: real part);
  complex to real types takes the real part;
- half and bfloat16 convert from and to every other type through float32, as Eigen does, so
  float64 -> half rounds twice;
- float -> integer truncates toward zero. Out of range and NaN are undefined in C++; TensorFlow's
  scalar code path (used for every element of tensors smaller than a SIMD packet, and for all of
  int32/int64/uint64 outputs) does what x86-64 does, which is reproduced here: conversion to
  int32 (int64 for int64/uint32 outputs) gives the "integer indefinite" INT_MIN for NaN and out
  of range values, and the result wraps to narrower types; uint64 outputs wrap negative values
  and give 2**63 for NaN and out of range. (TensorFlow's SIMD path saturates some narrow types
  instead, so a large tensor's elements may differ there: TensorFlow itself is inconsistent.)
- Truncate=True zeroes the source mantissa bits the destination float type lacks before the
  conversion (rounding toward zero instead of to nearest), for the float and complex casts
  TensorFlow truncates; it leaves other casts alone.
"""
from __future__ import annotations

import numpy as np

from .math_common import (BFLOAT16, FLOAT16, FLOAT32, FLOAT64, LOW_PRECISION, is_complex, is_float,
                          is_integer, math_kernel)
from .registry import CPU

# Significand bits, implicit bit included (C++'s numeric_limits<T>::digits).
_SIGNIFICAND_BITS = {FLOAT16: 11, BFLOAT16: 8, FLOAT32: 24, FLOAT64: 53}
_UNSIGNED_OF_SIZE: dict[int, np.dtype] = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


@math_kernel("Cast", devices=(CPU,))   # GPU: gpu_host_memory.py (bfloat16 is cast on the host)
def cast(ctx, x, *, SrcT, DstT, Truncate):
    xp = ctx.xp
    destination = ctx.out_dtype(0)
    if x.dtype == destination:
        return x
    if x.dtype == object or destination == object:
        ctx.fail(f"Cast {SrcT.name} to {DstT.name} is not supported")
    if Truncate:
        x = _drop_missing_mantissa_bits(xp, x, destination)
    if destination == np.bool_:
        return (xp.real(x) if is_complex(x.dtype) else x) != 0
    if is_complex(x.dtype) and not is_complex(destination):
        x = xp.real(x)
    if _through_float32(x.dtype, destination):
        x = x.astype(FLOAT32)
    if is_integer(destination) and is_float(x.dtype):
        return _float_to_integer(xp, x, destination)
    return x.astype(destination)


def _through_float32(source: np.dtype, destination: np.dtype) -> bool:
    low = (source in LOW_PRECISION) or (destination in LOW_PRECISION)
    return low and FLOAT32 not in (source, destination)


def _component(dtype: np.dtype) -> np.dtype:
    """The float type of a complex type's parts; other types unchanged."""
    return np.dtype(dtype.char.lower()) if is_complex(dtype) else dtype


def _drop_missing_mantissa_bits(xp, x, destination: np.dtype):
    source_part, destination_part = _component(x.dtype), _component(destination)
    # Where TensorFlow truncates: to bfloat16 from float32 only; never from real to complex
    # (there it zeroes every significand bit and an exponent bit too, a bug not copied here).
    if destination_part == BFLOAT16 and x.dtype != FLOAT32:
        return x
    if is_complex(destination) and not is_complex(x.dtype):
        return x
    if not (is_float(source_part) and is_float(destination_part)):
        return x
    bits = _SIGNIFICAND_BITS[source_part] - _SIGNIFICAND_BITS[destination_part]
    if bits <= 0:
        return x
    unsigned = _UNSIGNED_OF_SIZE[source_part.itemsize]
    # Flattened and contiguous, so a complex array can be viewed as its float parts.
    parts = xp.ascontiguousarray(x).reshape(-1).view(source_part)
    mask = xp.asarray(~((1 << bits) - 1) & ((1 << (8 * unsigned.itemsize)) - 1), dtype=unsigned)
    truncated = (parts.view(unsigned) & mask).view(source_part)
    truncated = xp.where(xp.isnan(parts), parts, truncated)   # NaN payloads are left alone
    return truncated.view(x.dtype).reshape(x.shape)


def _float_to_integer(xp, x, destination: np.dtype):
    whole = xp.trunc(x.astype(FLOAT64))
    if destination == np.uint64:
        return _float_to_uint64(xp, whole)
    # x86-64 converts to int32 (int64 for wider outputs and uint32) and truncates the bits.
    wide = np.dtype(np.int64) if destination.itemsize == 8 or destination == np.uint32 \
        else np.dtype(np.int32)
    low, high = _signed_range(wide)
    converted = xp.where((whole >= low) & (whole < high), whole, low).astype(wide)
    return converted.astype(destination)


def _float_to_uint64(xp, whole):
    low, high = _signed_range(np.dtype(np.int64))
    fits_signed = (whole >= low) & (whole < high)
    fits_unsigned = (whole >= high) & (whole < 2.0 * high)
    from_signed = xp.where(fits_signed, whole, 0).astype(np.int64).astype(np.uint64)
    from_unsigned = xp.where(fits_unsigned, whole, 0).astype(np.uint64)
    indefinite = xp.asarray(2 ** 63, dtype=np.uint64)
    return xp.where(fits_signed, from_signed, xp.where(fits_unsigned, from_unsigned, indefinite))


def _signed_range(dtype: np.dtype) -> tuple[float, float]:
    """[low, high) of a signed integer type, as floats (exact powers of two)."""
    bits = 8 * dtype.itemsize - 1
    return -2.0 ** bits, 2.0 ** bits
