"""Kernels of array ops that read parts of a tensor: Slice, StridedSlice, StridedSliceGrad, Gather,
GatherV2, GatherNd and UnravelIndex.

StridedSlice is canonicalized by the same code that infers its shape (graphtool.ops.array_index:
TensorFlow's ValidateStridedSliceOp), so the shape inference and the kernel cannot disagree about
masks, clamping or negative strides.
"""
from __future__ import annotations

from ...ops.array_index import SliceMasks as SliceMasks
from ...ops.array_index import plan_strided_slice as plan_strided_slice
from .array_common import (bad_index_rows, check_indices_below, describe_index_row, element_count,
                           first_true, host_int, host_ints, index_rows, shape_str, vector_of,
                           wrap_axis)
from .registry import KernelContext, kernel

# --- Slice ----------------------------------------------------------------------------------------


@kernel("Slice")
def slice_(ctx, input, begin, size):
    starts, sizes = host_ints(begin), host_ints(size)
    if begin.ndim != 1 or size.ndim != 1 or len(starts) != input.ndim or len(sizes) != input.ndim:
        ctx.fail(f"Expected begin and size arguments to be 1-D tensors of size {input.ndim}, but "
                 f"got shapes {shape_str(begin.shape)} and {shape_str(size.shape)} instead.")
    window = []
    for i, (start, count, dim) in enumerate(zip(starts, sizes, input.shape)):
        if count == -1:
            count = dim - start
        if not 0 <= start <= dim:
            ctx.fail(f"Expected begin[{i}] in [0, {dim}], but got {start}")
        if not 0 <= count <= dim - start:
            ctx.fail(f"Expected size[{i}] in [0, {dim - start}], but got {sizes[i]}")
        window.append(slice(start, start + count))
    return input[tuple(window)]


# --- StridedSlice, StridedSliceGrad ---------------------------------------------------------------

def _strided_plan(ctx, dims, begin, end, strides, masks: SliceMasks):
    if not (begin.ndim == end.ndim == strides.ndim == 1
            and begin.shape == end.shape == strides.shape):
        ctx.fail(f"Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                 f"{shape_str(begin.shape)}, {shape_str(end.shape)}, and "
                 f"{shape_str(strides.shape)} instead.")
    return plan_strided_slice(ctx, list(dims), host_ints(begin), host_ints(end), host_ints(strides),
                              masks)


def _window(plan) -> tuple[slice, ...]:
    return tuple(dim.as_slice() for dim in plan.dims)


@kernel("StridedSlice")
def strided_slice(ctx, input, begin, end, strides, *, begin_mask, end_mask, ellipsis_mask,
                  new_axis_mask, shrink_axis_mask):
    masks = SliceMasks(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    plan = _strided_plan(ctx, input.shape, begin, end, strides, masks)
    # Slicing keeps every input dim; the reshape then drops shrunk dims and adds new axes.
    return input[_window(plan)].reshape(plan.final_shape.dims)


@kernel("StridedSliceGrad")
def strided_slice_grad(ctx, shape, begin, end, strides, dy, *, begin_mask, end_mask,
                       ellipsis_mask, new_axis_mask, shrink_axis_mask):
    dims = vector_of(ctx, shape, "shape")
    masks = SliceMasks(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    plan = _strided_plan(ctx, dims, begin, end, strides, masks)
    if tuple(dy.shape) != plan.final_shape.dims:
        ctx.fail(f"shape of dy was {shape_str(dy.shape)} instead of {plan.final_shape}")
    grad = ctx.xp.zeros(dims, dtype=dy.dtype)
    grad[_window(plan)] = dy.reshape([dim.size for dim in plan.dims])
    return grad


# --- Gather, GatherV2 -----------------------------------------------------------------------------

def _batched_take(xp, params, indices, axis: int, batch_dims: int):
    """Gather along `axis` where the first `batch_dims` dims of params and indices pair up: each
    batch entry takes from its own slice of params. Done as one fancy index over
    [batch, outer, axis, ...inner] views of the operands."""
    batch = params.shape[:batch_dims]
    outer = params.shape[batch_dims:axis]
    inner = params.shape[axis + 1:]
    batch_count, outer_count = element_count(batch), element_count(outer)
    per_batch = element_count(indices.shape[batch_dims:])
    grouped = params.reshape((batch_count, outer_count, params.shape[axis]) + inner)
    picks = indices.reshape(batch_count, per_batch)
    taken = grouped[xp.arange(batch_count)[:, None, None], xp.arange(outer_count)[None, :, None],
                    picks[:, None, :]]
    return taken.reshape(batch + outer + indices.shape[batch_dims:] + inner)


def _checked_batch_dims(ctx, params, indices, axis: int, batch_dims: int) -> int:
    if batch_dims == 0:
        return 0
    if not -indices.ndim <= batch_dims <= indices.ndim:
        ctx.fail(f"Expected batch_dims in the range [{-indices.ndim}, {indices.ndim}], but got "
                 f"{batch_dims}")
    if batch_dims < 0:
        batch_dims += indices.ndim
    if batch_dims >= params.ndim:
        ctx.fail(f"batch_dims ({batch_dims}) must be less than rank(params) ({params.ndim}).")
    if axis < batch_dims:
        ctx.fail(f"batch_dims ({batch_dims}) must be less than or equal to axis ({axis}).")
    for i in range(batch_dims):
        if params.shape[i] != indices.shape[i]:
            ctx.fail(f"params.shape[{i}]: {params.shape[i]} should be equal to "
                     f"indices.shape[{i}]: {indices.shape[i]}")
    return batch_dims


def _gather(ctx: KernelContext, params, indices, axis: int, batch_dims: int):
    if params.ndim < 1:
        ctx.fail("params must be at least 1 dimensional")
    wrapped = wrap_axis(axis, params.ndim)
    if wrapped is None:
        ctx.fail(f"Expected axis in the range [{-params.ndim}, {params.ndim}), but got {axis}")
    batch_dims = _checked_batch_dims(ctx, params, indices, wrapped, batch_dims)
    check_indices_below(ctx, indices, params.shape[wrapped])
    if batch_dims == 0:
        return ctx.xp.take(params, indices, axis=wrapped)
    return _batched_take(ctx.xp, params, indices, wrapped, batch_dims)


@kernel("Gather")
def gather(ctx, params, indices):
    return _gather(ctx, params, indices, 0, 0)


@kernel("GatherV2")
def gather_v2(ctx, params, indices, axis, *, batch_dims):
    return _gather(ctx, params, indices, host_int(ctx, axis, "axis", allow_vector=True),
                   batch_dims)


# --- GatherNd -------------------------------------------------------------------------------------

@kernel("GatherNd")
def gather_nd(ctx, params, indices, *, bad_indices_policy):
    xp = ctx.xp
    if indices.ndim < 1:
        ctx.fail("indices must be at least a vector")
    depth = indices.shape[-1]
    if depth > params.ndim:
        ctx.fail(f"index innermost dimension length must be <= params rank; saw: {depth} vs. "
                 f"{params.ndim}")
    rows = index_rows(indices)
    result_shape = indices.shape[:-1] + params.shape[depth:]
    if rows.shape[0] and params.size == 0:
        ctx.fail(f"Requested more than 0 entries, but params is empty.  Params shape: "
                 f"{shape_str(params.shape)}")
    bad = bad_index_rows(xp, rows, params.shape[:depth])
    ignore = bad_indices_policy == "IGNORE"
    first_bad = None if ignore else first_true(xp, bad)
    if first_bad is not None:
        ctx.fail(f"{describe_index_row(indices, first_bad)} does not index into param shape "
                 f"{shape_str(params.shape)}, node name: {ctx.node_name}")
    if depth == 0:  # every row names the whole of params
        return xp.broadcast_to(params, result_shape).copy()
    safe = xp.where(bad[:, None], 0, rows) if ignore else rows
    gathered = params[tuple(safe[:, k] for k in range(depth))]
    if ignore:
        gathered[bad] = 0  # TensorFlow's IGNORE policy gives zeros for rows that index outside
    return gathered.reshape(result_shape)


# --- UnravelIndex ---------------------------------------------------------------------------------

@kernel("UnravelIndex")
def unravel_index(ctx, indices, dims):
    xp = ctx.xp
    sizes = vector_of(ctx, dims, "dims")
    for i, size in enumerate(sizes):
        if size == 0:
            ctx.fail(f"Input dims cannot contain a dim of zero, but dims contains zero at index "
                     f"{i}")
        if size < 0:
            ctx.fail(f"Input dims cannot be negative. Got dim = {size} at index {i}")
    total = element_count(sizes)
    if bool((indices >= total).any()):
        ctx.fail("index is out of bound as with dims")
    flat = indices.reshape(-1)
    # C++ integer division and remainder, as TensorFlow's kernel computes them: a negative index
    # gives negative coordinates instead of wrapping around.
    magnitude_sign = xp.where(flat < 0, -1, 1).astype(flat.dtype)
    coordinates, stride = [], total
    for size in sizes:
        stride //= size
        quotient = (xp.abs(flat) // stride) * magnitude_sign
        coordinates.append(xp.fmod(quotient, size))
    result = xp.stack(coordinates).astype(ctx.out_dtype())
    return result.reshape(len(sizes)) if indices.ndim == 0 else result
