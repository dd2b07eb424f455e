"""Kernels of the math family's reductions (Sum, Mean, Prod, EuclideanNorm, Max, Min, All, Any),
ArgMax/ArgMin and the scans Cumsum/Cumprod, with TensorFlow's semantics:

- integer sums and products wrap in the input type; an integer Mean sums in 64 bits and divides
  rounding toward zero; half and bfloat16 accumulate in float32 (TensorFlow's accumulation
  order is Eigen's and differs per case; float32 is at least as accurate);
- empty reductions give the reducer's identity: 0, 1, NaN for a float Mean (0 for integer and
  complex ones), the lowest/highest value for Max/Min;
- Max/Min propagate NaN; ArgMax/ArgMin skip NaN and return the first index of ties;
- scans accumulate sequentially in the input type, as TensorFlow does.
"""
from __future__ import annotations

import numpy as np

from .math_common import (compute_dtype, is_complex, is_float, is_integer, math_kernel, shape_text,
                          to_host, truncate_divide)

# --- reductions -----------------------------------------------------------------------------


def _reduction_axes(ctx, x, indices) -> tuple[int, ...]:
    """The sorted, non-negative axes named by a reduction_indices tensor."""
    axes = to_host(indices)
    if axes.ndim > 1:
        ctx.fail(f"reduction_indices must be a scalar or vector, got shape "
                 f"{shape_text(axes.shape)}")
    normalized = []
    for axis in axes.reshape(-1).tolist():
        if not -x.ndim <= axis < x.ndim:
            ctx.fail(f"Invalid reduction dimension ({axis} for input with {x.ndim} dimension(s)")
        axis %= x.ndim
        if axis in normalized:
            ctx.fail(f"Invalid reduction arguments: Axes contains duplicate dimension: {axis}")
        normalized.append(axis)
    return tuple(sorted(normalized))


def _reduced_shape(x, axes, keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _count(x, axes) -> int:
    """How many elements each output element reduces."""
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def _reduction(*ops: str):
    """Register fn(ctx, x, axes, keep_dims) as the kernel of reductions over reduction_indices."""
    def register(fn):
        # Not functools.wraps: the registry reads the attrs from the wrapper's own signature.
        def reduction(ctx, x, indices, *, keep_dims):
            return fn(ctx, x, _reduction_axes(ctx, x, indices), keep_dims)
        reduction.__name__ = fn.__name__
        math_kernel(*ops, expensive=True)(reduction)
        return fn
    return register


@_reduction("Sum")
def reduce_sum(ctx, x, axes, keep_dims):
    return ctx.xp.sum(x, axis=axes, keepdims=keep_dims, dtype=compute_dtype(x.dtype))


@_reduction("Prod")
def reduce_prod(ctx, x, axes, keep_dims):
    return ctx.xp.prod(x, axis=axes, keepdims=keep_dims, dtype=compute_dtype(x.dtype))


@_reduction("Mean")
def reduce_mean(ctx, x, axes, keep_dims):
    xp, count = ctx.xp, _count(x, axes)
    if count == 0:
        empty = xp.nan if is_float(x.dtype) else 0
        return xp.full(_reduced_shape(x, axes, keep_dims), empty, dtype=ctx.out_dtype(0))
    if is_integer(x.dtype):
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        total = xp.sum(x, axis=axes, keepdims=keep_dims, dtype=wide)
        return truncate_divide(xp, total, xp.asarray(count, dtype=wide))
    return xp.sum(x, axis=axes, keepdims=keep_dims, dtype=compute_dtype(x.dtype)) / count


@_reduction("EuclideanNorm")
def euclidean_norm(ctx, x, axes, keep_dims):
    xp = ctx.xp
    x = x.astype(compute_dtype(x.dtype), copy=False)
    squares = x * xp.conj(x) if is_complex(x.dtype) else x * x
    total = xp.sum(squares, axis=axes, keepdims=keep_dims, dtype=x.dtype)
    if is_integer(x.dtype):   # C++'s sqrt of an integer, truncated back to it
        return xp.trunc(xp.sqrt(total.astype(np.float64)))
    return xp.sqrt(total)


def _extreme_reduction(name: str, lowest_when_empty: bool):
    """Max/Min: NaN propagates; an empty reduction gives the type's lowest/highest value."""
    @_reduction(name)
    def reduce(ctx, x, axes, keep_dims):
        xp = ctx.xp
        if x.size == 0:
            return xp.full(_reduced_shape(x, axes, keep_dims), empty_extreme(x.dtype, lowest_when_empty),
                           dtype=x.dtype)
        return getattr(xp, name.lower())(x, axis=axes, keepdims=keep_dims)
    return reduce


reduce_max = _extreme_reduction("Max", lowest_when_empty=True)
reduce_min = _extreme_reduction("Min", lowest_when_empty=False)


@_reduction("All")
def reduce_all(ctx, x, axes, keep_dims):
    return ctx.xp.all(x, axis=axes, keepdims=keep_dims)


@_reduction("Any")
def reduce_any(ctx, x, axes, keep_dims):
    return ctx.xp.any(x, axis=axes, keepdims=keep_dims)


# --- arg-reductions -------------------------------------------------------------------------

def _scalar_axis(ctx, x, axis_tensor, not_scalar: str, out_of_range: str) -> int:
    """The axis named by a scalar tensor, checked against x's rank and made non-negative; the
    messages are formatted with the axis tensor's shape and the axis / rank."""
    value = to_host(axis_tensor)
    if value.ndim != 0:
        ctx.fail(not_scalar.format(shape=shape_text(value.shape)))
    axis = int(value)
    if not -x.ndim <= axis < x.ndim:
        ctx.fail(out_of_range.format(axis=axis, low=-x.ndim, rank=x.ndim))
    return axis % x.ndim


@math_kernel("ArgMax", "ArgMin", expensive=True)
def arg_reduction(ctx, x, dimension, *, output_type):
    xp = ctx.xp
    axis = _scalar_axis(ctx, x, dimension,
                        "dim must be a scalar, but received tensor of shape: {shape}",
                        "Expected dimension in the range [{low}, {rank}), but got {axis}")
    if x.shape[axis] == 0:
        ctx.fail(f"Reduction axis {axis} is empty in shape {shape_text(x.shape)}")
    is_max = ctx.op == "ArgMax"
    if is_float(x.dtype):
        # Eigen's comparisons never select a NaN; the lowest/highest value stands in for it.
        x = x.astype(compute_dtype(x.dtype), copy=False)
        x = xp.where(xp.isnan(x), -np.inf if is_max else np.inf, x)
    return xp.argmax(x, axis=axis) if is_max else xp.argmin(x, axis=axis)


# --- scans ----------------------------------------------------------------------------------

@math_kernel("Cumsum", "Cumprod", expensive=True)
def scan(ctx, x, axis_tensor, *, exclusive, reverse):
    xp = ctx.xp
    axis = _scalar_axis(ctx, x, axis_tensor, "ScanOp: axis must be a scalar, not {shape}",
                        "ScanOp: Expected scan axis in the range [{low}, {rank}), but got {axis}")
    is_sum = ctx.op == "Cumsum"
    if reverse:
        x = xp.flip(x, axis=axis)
    result = (xp.cumsum if is_sum else xp.cumprod)(x, axis=axis, dtype=x.dtype)
    if exclusive and x.shape[axis]:
        # Shift by one along the axis, starting from the identity (0 or 1).
        all_but_last = tuple(slice(0, -1) if i == axis else slice(None) for i in range(x.ndim))
        first_shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
        identity = xp.full(first_shape, 0 if is_sum else 1, dtype=x.dtype)
        result = xp.concatenate([identity, result[all_but_last]], axis=axis)
    return xp.flip(result, axis=axis) if reverse else result


def empty_extreme(dtype, is_max: bool):
    """What Max (is_max) or Min of no elements gives in TensorFlow: the type's lowest or highest
    value (-inf/inf for floats). The JIT's lowering uses it too."""
    if is_integer(dtype):
        limits = np.iinfo(dtype)
        return limits.min if is_max else limits.max
    return -np.inf if is_max else np.inf
