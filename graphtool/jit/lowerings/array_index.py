"""Lowerings of array ops that read parts of a tensor: Slice, StridedSlice, Gather, GatherV2,
GatherNd, ReverseV2, OneHot, InvertPermutation, plus Einsum's contractions.

StridedSlice is planned by the code the interpreter and shape inference share
(graphtool.ops.array_index.plan_strided_slice), so masks, clamping and negative strides agree.

Not matched, and so documented: an index out of range in a gather or in a slice at a traced
position, or a repeated or missing entry of a permutation, is an error in the interpreter (and
TensorFlow); in a compiled cluster the values are only known when it runs, and XLA clamps
instead of failing.
"""
from __future__ import annotations

import numpy as np

from ...ops.array_index import SliceMasks, plan_strided_slice
from .array import _SIZES, _wrap
from .common import lowering, static_int, static_ints
from .registry import is_static


@lowering("Slice", static_inputs=(1, 2), traced_ok=(1,), half=True, complex_ok=True)
def slice_(ctx, x, begin, size):
    sizes = static_ints(size)
    if not is_static(begin):   # a start computed in the cluster (a loop counter): fixed sizes
        if -1 in sizes:
            raise ValueError("Slice with a traced begin needs every size given (no -1)")
        return ctx.lax.dynamic_slice(x, [begin[i] for i in range(x.ndim)], sizes)
    window = []
    for start, count, dim in zip(static_ints(begin), sizes, x.shape):
        window.append(slice(start, dim if count == -1 else start + count))
    return x[tuple(window)]


def _slice_masks(ctx) -> SliceMasks:
    return SliceMasks(*(ctx.attr(name, 0) for name in
                        ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")))


def _dynamic_strided_slice(ctx, x, begin, strides, masks: SliceMasks):
    """x[i] / x[:, i] with i traced: every spec entry either takes one element (shrink_axis) at a
    traced position or the whole dim (begin and end masks), with stride 1. Other forms have an
    output shape that depends on the traced values."""
    jnp, lax = ctx.jnp, ctx.lax
    if masks.ellipsis or masks.new_axis or any(s != 1 for s in static_ints(strides)) or len(begin) > x.ndim:
        raise ValueError("StridedSlice with a traced begin takes only x[i]-like slices")
    starts, sizes = [], []
    for axis, dim in enumerate(x.shape):
        bit = 1 << axis
        if axis < len(begin) and masks.shrink & bit:
            start = begin[axis]
            starts.append(jnp.where(start < 0, start + dim, start))
            sizes.append(1)
        elif axis >= len(begin) or (masks.begin & bit and masks.end & bit):
            starts.append(jnp.zeros((), begin.dtype))
            sizes.append(dim)
        else:
            raise ValueError("StridedSlice with a traced begin takes only x[i]-like slices")
    taken = lax.dynamic_slice(x, starts, sizes)
    return taken.reshape([d for axis, d in enumerate(x.shape) if not (axis < len(begin) and masks.shrink & 1 << axis)])


# begin and end may be traced for x[i]-like slices (a loop counter indexing a tensor).
@lowering("StridedSlice", static_inputs=(1, 2, 3), traced_ok=(1, 2), half=True, complex_ok=True)
def strided_slice(ctx, x, begin, end, strides):
    masks = _slice_masks(ctx)
    if not (is_static(begin) and is_static(end)):
        return _dynamic_strided_slice(ctx, x, begin, strides, masks)
    plan = plan_strided_slice(_SIZES, list(x.shape), static_ints(begin), static_ints(end),
                              static_ints(strides), masks)
    # Slicing keeps every input dim; the reshape then drops shrunk dims and adds new axes.
    return x[tuple(dim.as_slice() for dim in plan.dims)].reshape(plan.final_shape.dims)


def _gather(ctx, params, indices, axis: int, batch_dims: int):
    jnp = ctx.jnp
    axis = _wrap(axis, params.ndim)
    batch_dims = _wrap(batch_dims, indices.ndim) if batch_dims < 0 else batch_dims
    if batch_dims == 0:
        return jnp.take(params, indices, axis=axis, mode="clip")
    # Batch entry b takes from its own slice of params (the interpreter's fancy index).
    batch, outer, inner = params.shape[:batch_dims], params.shape[batch_dims:axis], params.shape[axis + 1:]
    batch_count, outer_count = int(np.prod(batch, dtype=np.int64)), int(np.prod(outer, dtype=np.int64))
    per_batch = int(np.prod(indices.shape[batch_dims:], dtype=np.int64))
    grouped = params.reshape((batch_count, outer_count, params.shape[axis]) + inner)
    picks = jnp.clip(indices.reshape(batch_count, per_batch), 0, params.shape[axis] - 1)
    taken = grouped[jnp.arange(batch_count)[:, None, None], jnp.arange(outer_count)[None, :, None],
                    picks[:, None, :]]
    return taken.reshape(batch + outer + indices.shape[batch_dims:] + inner)


@lowering("Gather", half=True, complex_ok=True)
def gather(ctx, params, indices):
    return _gather(ctx, params, indices, 0, 0)


@lowering("GatherV2", static_inputs=(2,), half=True, complex_ok=True)
def gather_v2(ctx, params, indices, axis):
    return _gather(ctx, params, indices, static_int(axis), ctx.attr("batch_dims", 0))


def _gather_nd_supported(node) -> str | None:
    policy = node.attr("bad_indices_policy", "")
    return None if policy in ("", "DEFAULT", "ERROR", None) else f"GatherNd with bad_indices_policy={policy}"


@lowering("GatherNd", half=True, complex_ok=True, supports=_gather_nd_supported)
def gather_nd(ctx, params, indices):
    jnp = ctx.jnp
    depth = indices.shape[-1]
    result_shape = indices.shape[:-1] + params.shape[depth:]
    if depth == 0:
        return jnp.broadcast_to(params, result_shape)
    rows = indices.reshape(-1, depth)
    gathered = params[tuple(jnp.clip(rows[:, k], 0, params.shape[k] - 1) for k in range(depth))]
    return gathered.reshape(result_shape)


@lowering("ReverseV2", static_inputs=(1,), half=True, complex_ok=True)
def reverse_v2(ctx, x, axis):
    axes = tuple(_wrap(a, x.ndim) for a in static_ints(axis))
    return ctx.jnp.flip(x, axis=axes) if axes else x


@lowering("OneHot", static_inputs=(1,), half=True, complex_ok=True)
def one_hot(ctx, indices, depth, on_value, off_value):
    jnp = ctx.jnp
    # Indices outside [0, depth), negative ones included, match no position: all off.
    hot = indices.astype(np.int64)[..., None] == jnp.arange(static_int(depth))
    encoded = jnp.where(hot, on_value, off_value)
    axis = ctx.attr("axis", -1)
    return encoded if axis == -1 else jnp.moveaxis(encoded, -1, axis)


@lowering("InvertPermutation")
def invert_permutation(ctx, x):
    return ctx.jnp.zeros_like(x).at[x].set(ctx.jnp.arange(x.size, dtype=x.dtype))


def _einsum_supported(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"Einsum on {dtype} has no lowering"


@lowering("Einsum", supports=_einsum_supported)
def einsum(ctx, *inputs):
    return ctx.jnp.einsum(ctx.attr("equation"), *inputs, precision=ctx.lax.Precision.HIGHEST)
