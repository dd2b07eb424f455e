"""Fake quantization kernels (TensorFlow's fake_quant_ops_functor.h), all in float32.

The range [min, max] is first nudged so that 0.0 is exactly representable: scale =
(max - min) / (quant_max - quant_min), zero point quant_min - min / scale clamped to
[quant_min, quant_max] and rounded half away from zero, nudged_min = (quant_min - zero_point) *
scale, nudged_max = (quant_max - zero_point) * scale. A value is clamped to the nudged range and
rounded to the nearest step as floor((x - nudged_min) / scale + 0.5) * scale + nudged_min, in
float32 with TensorFlow's order of operations (Args multiplies by 1 / scale, Vars divides by scale,
rank-1 per-channel inputs round with std::round instead of floor(+0.5)). min == max == 0 gives
zeros (TensorFlow checks for it) and lets the whole gradient through to the input. Gradients pass
where x lies in the nudged range; the Vars gradients send what lies below (above) it to min (max).
"""
from __future__ import annotations

import numpy as np

from .nn_common import shape_text
from .registry import kernel

F32 = np.float32


def _quant_range(ctx, num_bits: int, narrow_range: bool) -> tuple[int, int]:
    if not 2 <= num_bits <= 16:
        ctx.fail("num_bits must be between 2 and 16, inclusive")
    return (1 if narrow_range else 0), (1 << num_bits) - 1


def nudge(xp, low, high, quant_min: int, quant_max: int):
    """(nudged_min, nudged_max, scale) as float32 arrays shaped like low and high."""
    low, high = xp.asarray(low, F32), xp.asarray(high, F32)
    qmin, qmax = F32(quant_min), F32(quant_max)
    with np.errstate(all="ignore"):
        scale = (high - low) / (qmax - qmin)
        zero_from_min = qmin - low / scale
        whole = xp.floor(zero_from_min)
        rounded = whole + (zero_from_min - whole >= F32(0.5))   # std::round, half away from zero
        zero_point = xp.where(zero_from_min < qmin, qmin, xp.where(zero_from_min > qmax, qmax, rounded))
        zero_point = xp.where(xp.isnan(zero_from_min), F32(0), zero_point).astype(F32)
        return (qmin - zero_point) * scale, (qmax - zero_point) * scale, scale


def _quantize(xp, x, nudged_min, nudged_max, scale, divide: bool, std_round: bool = False):
    with np.errstate(all="ignore"):
        shifted = xp.maximum(xp.minimum(x, nudged_max), nudged_min) - nudged_min
        steps = shifted / scale if divide else shifted * (F32(1) / scale)
        if std_round:
            whole = xp.floor(steps)
            steps = whole + (steps - whole >= F32(0.5))
        else:
            steps = xp.floor(steps + F32(0.5))
        return (steps * scale + nudged_min).astype(F32)


def _zero_range(low, high):
    """TensorFlow returns zeros when min and max are both 0 (a range without a scale)."""
    return (low == 0) & (high == 0)


def _in_range(x, nudged_min, nudged_max):
    return (x >= nudged_min) & (x <= nudged_max)


@kernel("FakeQuantWithMinMaxArgs")
def fake_quant_args(ctx, x, *, min, max, num_bits, narrow_range):
    if not min < max:
        ctx.fail(f"min has to be smaller than max, was: {min:g} >= {max:g}")
    nudged_min, nudged_max, scale = nudge(ctx.xp, min, max, *_quant_range(ctx, num_bits, narrow_range))
    return _quantize(ctx.xp, x, nudged_min, nudged_max, scale, divide=False)


@kernel("FakeQuantWithMinMaxArgsGradient")
def fake_quant_args_gradient(ctx, dy, x, *, min, max, num_bits, narrow_range):
    if not min < max:
        ctx.fail(f"min has to be smaller than max, was: {min:g} >= {max:g}")
    if dy.shape != x.shape:
        ctx.fail(f"gradients and inputs must be the same size: {shape_text(dy.shape)} vs {shape_text(x.shape)}")
    nudged_min, nudged_max, _ = nudge(ctx.xp, min, max, *_quant_range(ctx, num_bits, narrow_range))
    return ctx.xp.where(_in_range(x, nudged_min, nudged_max), dy, F32(0))


def _check_scalars(ctx, low, high):
    if low.ndim or high.ndim:
        ctx.fail(f"min and max must be scalars: {shape_text(low.shape)}, {shape_text(high.shape)}")


@kernel("FakeQuantWithMinMaxVars")
def fake_quant_vars(ctx, x, low, high, *, num_bits, narrow_range):
    xp = ctx.xp
    _check_scalars(ctx, low, high)
    nudged_min, nudged_max, scale = nudge(xp, low, high, *_quant_range(ctx, num_bits, narrow_range))
    result = _quantize(xp, x, nudged_min, nudged_max, scale, divide=True)
    return xp.where(_zero_range(low, high), F32(0), result)


def _check_channels(ctx, x, low, high):
    if x.ndim < 1 or x.ndim > 4:
        ctx.fail(f"inputs must be of rank 1 to 4: {shape_text(x.shape)}")
    depth = x.shape[-1]
    for name, value in (("min", low), ("max", high)):
        if value.shape != (depth,):
            ctx.fail(f"{name} has shape {shape_text(value.shape)} but inputs have depth {depth}")


@kernel("FakeQuantWithMinMaxVarsPerChannel")
def fake_quant_per_channel(ctx, x, low, high, *, num_bits, narrow_range):
    xp = ctx.xp
    _check_channels(ctx, x, low, high)
    nudged_min, nudged_max, scale = nudge(xp, low, high, *_quant_range(ctx, num_bits, narrow_range))
    result = _quantize(xp, x, nudged_min, nudged_max, scale, divide=True, std_round=x.ndim == 1)
    return xp.where(_zero_range(low, high), F32(0), result)


def _vars_gradient(ctx, dy, x, low, high, num_bits, narrow_range, channel_sums: bool):
    xp = ctx.xp
    if dy.shape != x.shape:
        ctx.fail(f"gradients and inputs must be the same size: {shape_text(dy.shape)} vs {shape_text(x.shape)}")
    nudged_min, nudged_max, _ = nudge(xp, low, high, *_quant_range(ctx, num_bits, narrow_range))
    zero = F32(0)
    axes = tuple(range(x.ndim - 1)) if channel_sums else None
    unscaled = _zero_range(low, high)
    wrt_input = xp.where(_in_range(x, nudged_min, nudged_max) | unscaled, dy, zero)
    wrt_min = xp.where((x < nudged_min) & ~unscaled, dy, zero).sum(axis=axes, dtype=F32)
    wrt_max = xp.where((x > nudged_max) & ~unscaled, dy, zero).sum(axis=axes, dtype=F32)
    return wrt_input, xp.asarray(wrt_min, F32), xp.asarray(wrt_max, F32)


@kernel("FakeQuantWithMinMaxVarsGradient")
def fake_quant_vars_gradient(ctx, dy, x, low, high, *, num_bits, narrow_range):
    _check_scalars(ctx, low, high)
    return _vars_gradient(ctx, dy, x, low, high, num_bits, narrow_range, channel_sums=False)


@kernel("FakeQuantWithMinMaxVarsPerChannelGradient")
def fake_quant_per_channel_gradient(ctx, dy, x, low, high, *, num_bits, narrow_range):
    _check_channels(ctx, x, low, high)
    return _vars_gradient(ctx, dy, x, low, high, num_bits, narrow_range, channel_sums=True)
