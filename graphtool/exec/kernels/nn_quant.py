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

from .math_common import true_divide
from .nn_common import finfo, host_ints, shape_text
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
        scale = true_divide(xp, high - low, qmax - qmin)
        zero_from_min = qmin - true_divide(xp, low, scale)
        whole = xp.floor(zero_from_min)
        rounded = whole + (zero_from_min - whole >= F32(0.5))   # std::round, half away from zero
        zero_point = xp.where(zero_from_min < qmin, qmin, xp.where(zero_from_min > qmax, qmax, rounded))
        zero_point = xp.where(xp.isnan(zero_from_min), F32(0), zero_point).astype(F32)
        return (qmin - zero_point) * scale, (qmax - zero_point) * scale, scale


def _quantize(xp, x, nudged_min, nudged_max, scale, divide: bool, std_round: bool = False):
    with np.errstate(all="ignore"):
        shifted = xp.maximum(xp.minimum(x, nudged_max), nudged_min) - nudged_min
        steps = true_divide(xp, shifted, scale) if divide else shifted * true_divide(xp, F32(1), scale)
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


# --- QuantizeAndDequantize (V2, V3, V4) ------------------------------------------------------
# TensorFlow's quantize_and_dequantize_op.h, in the input's own type: the range is the given
# [input_min, input_max] (range_given) or the data's own; of the two scales that map min and max
# onto the integer range, the smaller is kept and the other end of the range follows from it, so
# 0 stays exact. Values are (clamped, when the range was given), scaled, rounded (half to even, or
# half up as floor(x + 0.5)) and scaled back. A non-negative `axis` does this per slice along it.

def _range_arrays(ctx, x, low, high, axis: int, range_given: bool):
    """(min, max) per channel, shaped to broadcast against x."""
    xp = ctx.xp
    if axis == -1:
        if low.ndim or high.ndim:
            ctx.fail(f"input_min and input_max must be scalars: {shape_text(low.shape)}, {shape_text(high.shape)}")
        reduce_axes, shape = None, ()
    else:
        if axis >= x.ndim:
            ctx.fail(f"axis {axis} is out of range for an input of rank {x.ndim}")
        depth = x.shape[axis]
        if range_given:
            # TensorFlow 2.21's CPU kernel wants scalar ranges here, then rank-1 ones: per-axis
            # given ranges always fail there, and so they do here.
            ctx.fail("input_min must be a scalar." if low.ndim else
                     "Shape must be rank 1 for input_min_tensor when the axis is specified")
        reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
        shape = tuple(depth if i == axis else 1 for i in range(x.ndim))
    if range_given:
        if bool(xp.any(low > high)):
            ctx.fail(f"Invalid range: input_min {low} > input_max {high}")
        return low.reshape(shape), high.reshape(shape)
    if x.size == 0:
        return xp.zeros(shape, x.dtype), xp.zeros(shape, x.dtype)
    return x.min(axis=reduce_axes).reshape(shape), x.max(axis=reduce_axes).reshape(shape)


def quantize_and_dequantize(ctx, x, low, high, *, signed_input, num_bits, range_given, round_mode, narrow_range,
                            axis):
    xp = ctx.xp
    if not 0 < num_bits < (62 if signed_input else 63):
        ctx.fail(f"num_bits is out of range: {num_bits} with signed_input {str(signed_input).lower()}")
    if axis < -1:
        ctx.fail(f"Axis must be at least -1. Found {axis}")
    t = x.dtype.type
    if signed_input:
        q_min = -(1 << (num_bits - 1)) + (1 if narrow_range else 0)
        q_max = (1 << (num_bits - 1)) - 1
    else:
        q_min, q_max = 0, (1 << num_bits) - 1
    q_min, q_max = t(q_min), t(q_max)
    min_range, max_range = _range_arrays(ctx, x, low, high, axis, range_given)
    largest = t(finfo(x.dtype).max)
    with np.errstate(all="ignore"):
        from_min = xp.where(q_min * min_range > 0, q_min / min_range, largest)
        from_max = xp.where(q_max * max_range > 0, q_max / max_range, largest)
        by_min = from_min < from_max
        scale = xp.where(by_min, from_min, from_max)
        inverse = xp.where(by_min, min_range / q_min, max_range / q_max)
        if range_given:
            clamp_max = xp.where(by_min, q_max * inverse, max_range)
            clamp_min = xp.where(by_min, min_range, q_min * inverse)
            x = xp.maximum(xp.minimum(x, clamp_max), clamp_min)
        scaled = x * scale
        rounded = xp.round(scaled) if round_mode == "HALF_TO_EVEN" else xp.floor(scaled + t(0.5))
        return (rounded * inverse).astype(x.dtype)


@kernel("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4")
def quantize_and_dequantize_v2(ctx, x, low, high, *, signed_input, num_bits, range_given, round_mode,
                               narrow_range, axis):
    return quantize_and_dequantize(ctx, x, low, high, signed_input=signed_input, num_bits=num_bits,
                                   range_given=range_given, round_mode=round_mode, narrow_range=narrow_range,
                                   axis=axis)


@kernel("QuantizeAndDequantizeV3")
def quantize_and_dequantize_v3(ctx, x, low, high, num_bits, *, signed_input, range_given, narrow_range, axis):
    return quantize_and_dequantize(ctx, x, low, high, signed_input=signed_input, num_bits=host_ints(num_bits)[0],
                                   range_given=range_given, round_mode="HALF_TO_EVEN", narrow_range=narrow_range,
                                   axis=axis)


@kernel("QuantizeAndDequantizeV4Grad")
def quantize_and_dequantize_v4_grad(ctx, dy, x, low, high, *, axis):
    """The straight-through gradient inside [input_min, input_max] (the inputs as given); min and
    max get zeros."""
    xp = ctx.xp
    if dy.shape != x.shape:
        ctx.fail(f"gradients and input must have the same shape: {shape_text(dy.shape)} vs {shape_text(x.shape)}")
    if axis == -1:
        lo, hi = low, high
    else:
        if axis >= x.ndim:
            ctx.fail(f"axis {axis} is out of range for an input of rank {x.ndim}")
        shape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
        if low.size != x.shape[axis] or high.size != x.shape[axis]:
            ctx.fail(f"input_min and input_max must have {x.shape[axis]} elements")
        lo, hi = low.reshape(shape), high.reshape(shape)
    inside = (x >= lo) & (x <= hi)
    return xp.where(inside, dy, dy.dtype.type(0)), xp.zeros_like(low), xp.zeros_like(high)


# --- QuantizeV2 / Dequantize (TensorFlow's quantize_op.cc, dequantize_op.cc) ------------------
# All arithmetic in float32 as TensorFlow's Eigen expressions. The given range is first widened
# to hold 0 and to span at least ensure_minimum_range * max(1, |min|, |max|). Then
# - MIN_COMBINED: (clamp(x) - min) * (T's span / range), minus half of T's span for signed types
#   and rounded half away from zero (unsigned: + 0.5 and truncated);
# - MIN_FIRST: round(x * scale) - round(min * scale) + T's lowest, clamped, with scale =
#   (2^bits - 1) / range;
# - SCALED: symmetric around 0: the scale of whichever range end is tighter, the other end moved
#   to match (returned as output_min/max), values clamped, scaled and rounded (round_mode).
# Dequantize inverts each mapping. A non-negative axis gives every slice along it its own range.

def _limits(dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _round_away(xp, x):
    return xp.where(x < 0, -xp.floor(F32(0.5) - x), xp.floor(x + F32(0.5))).astype(F32)


def _slice_ranges(ctx, x, low, high, axis: int):
    """min and max as float32 arrays broadcasting against x."""
    if axis == -1:
        if low.size != 1 or high.size != 1:
            ctx.fail(f"min_range and max_range must be scalars when axis is -1: {shape_text(low.shape)}")
        return low.reshape(()).astype(F32), high.reshape(()).astype(F32)
    if not 0 <= axis < x.ndim:
        ctx.fail(f"axis {axis} is out of range for an input of rank {x.ndim}")
    depth = x.shape[axis]
    if low.shape != (depth,) or high.shape != (depth,):
        ctx.fail(f"min_range and max_range must have shape [{depth}]: {shape_text(low.shape)}, "
                 f"{shape_text(high.shape)}")
    shape = tuple(depth if i == axis else 1 for i in range(x.ndim))
    return low.astype(F32).reshape(shape), high.astype(F32).reshape(shape)


def _scaled_factor(xp, min_range, max_range, low_q: int, high_q: int):
    largest = F32(np.finfo(np.float32).max)
    with np.errstate(all="ignore"):
        from_min = xp.where(F32(low_q) * min_range > 0, F32(low_q) / min_range, largest)
        from_max = xp.where(F32(high_q) * max_range > 0, F32(high_q) / max_range, largest)
    return xp.minimum(from_min, from_max).astype(F32)


@kernel("QuantizeV2")
def quantize_v2(ctx, x, low, high, *, mode, round_mode, narrow_range, axis, ensure_minimum_range):
    xp = ctx.xp
    out_dtype = np.dtype(ctx.out_dtype(0))
    if round_mode == "HALF_TO_EVEN" and mode != "SCALED":
        ctx.fail(f"Round mode 'HALF_TO_EVEN' is only supported for mode 'SCALED', but mode is '{mode}'.")
    if narrow_range and mode != "SCALED":
        ctx.fail(f"narrow_range is only supported for mode 'SCALED', but mode is '{mode}'.")
    lo, hi = _slice_ranges(ctx, x, low, high, axis)
    if bool(xp.any(hi < lo)):
        ctx.fail("input_max_range must be larger than input_min_range.")
    t_min, t_max = _limits(out_dtype)
    x = x.astype(F32, copy=False)
    min_range = xp.minimum(F32(0), lo)
    epsilon = xp.maximum(F32(1), xp.maximum(xp.abs(lo), xp.abs(hi))) * F32(ensure_minimum_range)
    max_range = xp.maximum(F32(0), xp.maximum(hi, min_range + epsilon)).astype(F32)
    with np.errstate(all="ignore"):
        if mode == "MIN_COMBINED":
            scale = (F32(float(t_max) - float(t_min)) / (max_range - min_range)).astype(F32)
            shifted = (xp.minimum(xp.maximum(x, min_range), max_range) - min_range) * scale
            if t_min < 0:
                half = F32((t_max - t_min + 1) / 2)
                q = _round_away(xp, shifted - half)
            else:
                q = xp.trunc(shifted + F32(0.5))
        elif mode == "MIN_FIRST":
            steps = float(1 << (8 * out_dtype.itemsize))
            span = (max_range - min_range).astype(np.float64)
            scale = xp.where(span == 0, 0.0, (steps - 1.0) / xp.where(span == 0, 1.0, span)).astype(F32)
            offset = _round_away(xp, (min_range * scale).astype(F32))
            q = _round_away(xp, x * scale) - offset + F32(t_min)
            q = xp.minimum(xp.maximum(q, max(F32(t_min), F32(-2.147483648e9))), min(F32(t_max), F32(2.14748352e9)))
        else:
            low_q = t_min + (1 if narrow_range else 0)
            scale = _scaled_factor(xp, min_range, max_range, low_q, t_max)
            min_range = (F32(low_q) / scale).astype(F32)
            max_range = (F32(t_max) / scale).astype(F32)
            scaled = xp.minimum(xp.maximum(x, min_range), max_range) * scale
            q = xp.round(scaled) if round_mode == "HALF_TO_EVEN" else _round_away(xp, scaled)
    shape = () if axis == -1 else (x.shape[axis],)
    return (q.astype(out_dtype), xp.asarray(min_range, F32).reshape(shape),
            xp.asarray(max_range, F32).reshape(shape))


@kernel("Dequantize")
def dequantize(ctx, q, low, high, *, mode, narrow_range, axis):
    xp = ctx.xp
    if narrow_range and mode != "SCALED":
        ctx.fail(f"narrow_range is only supported for mode 'SCALED', but mode is '{mode}'.")
    min_range, max_range = _slice_ranges(ctx, q, low, high, axis)
    t_min, t_max = _limits(q.dtype)
    values = q.astype(F32)
    with np.errstate(all="ignore"):
        if mode == "MIN_COMBINED":
            scale = (max_range - min_range) / (F32(t_max) - F32(t_min))
            half = F32((t_max - t_min + 1) / 2) if t_min < 0 else F32(0)
            result = (values + half) * scale + min_range
        elif mode == "MIN_FIRST":
            steps = float(1 << (8 * q.dtype.itemsize))
            scale = ((max_range - min_range).astype(np.float64) / (steps - 1.0)).astype(F32)
            rounded = xp.where(max_range == min_range, min_range, _round_away(xp, min_range / scale) * scale)
            result = (values - F32(t_min)) * scale + rounded
        else:
            low_q = t_min + (1 if narrow_range else 0)
            if t_min == 0:
                scale = max_range / F32(t_max)
            else:
                scale = xp.maximum(min_range / F32(low_q), max_range / F32(t_max))
            result = values * scale
    return result.astype(F32).astype(ctx.out_dtype(0))
