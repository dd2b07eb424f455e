"""Lowerings of the reductions (Sum, Prod, Mean, Max, Min, All, Any, EuclideanNorm), ArgMax /
ArgMin and the scans Cumsum / Cumprod, with the interpreter's semantics (kernels/math_reduce.py):
integer sums wrap in their type, an integer Mean sums in 64 bits and divides toward zero, empty
reductions give the identity (NaN for a float Mean, the lowest/highest value for Max/Min), Max
and Min propagate NaN, ArgMax/ArgMin skip NaN and return the first of ties.

The axes are static inputs: XLA compiles a reduction for fixed dimensions.
"""
from __future__ import annotations

import numpy as np

from ...exec.kernels.math_reduce import empty_extreme
from .common import const, is_integer, lowering, static_int, static_ints


def _axes(x, indices) -> tuple[int, ...]:
    return tuple(sorted({axis % x.ndim for axis in static_ints(indices)})) if x.ndim else ()


def _reduced_shape(x, axes, keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _real(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"{node.op} on {dtype} has no lowering"


@lowering("Sum", static_inputs=(1,), supports=_real)
def reduce_sum(ctx, x, indices):
    return ctx.jnp.sum(x, axis=_axes(x, indices), keepdims=ctx.attr("keep_dims", False), dtype=x.dtype)


@lowering("Prod", static_inputs=(1,), supports=_real)
def reduce_prod(ctx, x, indices):
    return ctx.jnp.prod(x, axis=_axes(x, indices), keepdims=ctx.attr("keep_dims", False), dtype=x.dtype)


@lowering("Mean", static_inputs=(1,), supports=_real)
def reduce_mean(ctx, x, indices):
    jnp, axes, keep_dims = ctx.jnp, _axes(x, indices), ctx.attr("keep_dims", False)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if count == 0:
        return jnp.full(_reduced_shape(x, axes, keep_dims), 0 if is_integer(x.dtype) else np.nan, x.dtype)
    if is_integer(x.dtype):
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        total = jnp.sum(x, axis=axes, keepdims=keep_dims, dtype=wide)
        return ctx.lax.div(total, jnp.full(total.shape, count, wide))   # toward zero
    return jnp.sum(x, axis=axes, keepdims=keep_dims, dtype=x.dtype) / const(ctx, count, x)


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    # An integer norm is sqrt of a wrapped sum cast back to an integer type, NaN included: not
    # worth matching bit for bit.
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering("EuclideanNorm", static_inputs=(1,), supports=_float)
def euclidean_norm(ctx, x, indices):
    total = ctx.jnp.sum(x * x, axis=_axes(x, indices), keepdims=ctx.attr("keep_dims", False), dtype=x.dtype)
    return ctx.jnp.sqrt(total)


def _extreme(ctx, x, indices, is_max: bool):
    jnp, axes, keep_dims = ctx.jnp, _axes(x, indices), ctx.attr("keep_dims", False)
    if x.size == 0:
        return jnp.full(_reduced_shape(x, axes, keep_dims), empty_extreme(x.dtype, is_max), x.dtype)
    return (jnp.max if is_max else jnp.min)(x, axis=axes, keepdims=keep_dims)


@lowering("Max", static_inputs=(1,), supports=_real)
def reduce_max(ctx, x, indices):
    return _extreme(ctx, x, indices, True)


@lowering("Min", static_inputs=(1,), supports=_real)
def reduce_min(ctx, x, indices):
    return _extreme(ctx, x, indices, False)


@lowering("All", static_inputs=(1,))
def reduce_all(ctx, x, indices):
    return ctx.jnp.all(x, axis=_axes(x, indices), keepdims=ctx.attr("keep_dims", False))


@lowering("Any", static_inputs=(1,))
def reduce_any(ctx, x, indices):
    return ctx.jnp.any(x, axis=_axes(x, indices), keepdims=ctx.attr("keep_dims", False))


@lowering("ArgMax", "ArgMin", static_inputs=(1,), supports=_real)
def arg_reduction(ctx, x, dimension):
    jnp, is_max = ctx.jnp, ctx.node.op == "ArgMax"
    axis = static_int(dimension) % x.ndim
    if x.dtype.kind == "f":   # a NaN is never selected: the lowest/highest value stands in for it
        x = jnp.where(jnp.isnan(x), const(ctx, -np.inf if is_max else np.inf, x), x)
    return jnp.argmax(x, axis=axis) if is_max else jnp.argmin(x, axis=axis)


# Scans: lax.associative_scan. Medians in ms (one run; numpy in the interpreter / jnp.cumsum /
# associative_scan): 4x100000 along the long axis 1.5 / 5.2 / 3.9; 1000x256 down the rows
# 0.9 / 2.0 / 0.67; 64x1000 0.23 / 0.47 / 0.39. XLA's CPU scans lose to numpy on long axes, but a
# scan is a small part of the graphs that have one (detection, ranking) and splitting their
# clusters around it costs more, so it stays compiled.
@lowering("Cumsum", "Cumprod", static_inputs=(1,), supports=_real)
def scan(ctx, x, axis_tensor):
    jnp, is_sum = ctx.jnp, ctx.node.op == "Cumsum"
    axis = static_int(axis_tensor) % x.ndim
    reverse, exclusive = ctx.attr("reverse", False), ctx.attr("exclusive", False)
    if reverse:
        x = jnp.flip(x, axis=axis)
    result = ctx.lax.associative_scan(jnp.add if is_sum else jnp.multiply, x, axis=axis) if x.size else x
    if exclusive and x.shape[axis]:
        all_but_last = tuple(slice(0, -1) if i == axis else slice(None) for i in range(x.ndim))
        first_shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
        identity = jnp.full(first_shape, 0 if is_sum else 1, x.dtype)
        result = jnp.concatenate([identity, result[all_but_last]], axis=axis)
    return jnp.flip(result, axis=axis) if reverse else result
