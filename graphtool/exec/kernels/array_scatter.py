"""Kernels of array ops that place values into a tensor: ScatterNd, TensorScatter{Update, Add, Sub,
Min, Max}, the segment reductions (UnsortedSegment{Sum, Prod, Max, Min}, SegmentSum) and
(Parallel)DynamicStitch.

Duplicate indices accumulate (ScatterNd adds them, segment reductions reduce them); empty segments
get the reduction's identity as in TensorFlow: 0 for sums, 1 for products, the lowest value of the
type for maxima and the highest for minima.
"""
from __future__ import annotations

from .array_common import (bad_index_rows, describe_index_row, first_true, highest, host_int,
                           index_rows, lowest, output_shape, position_str, scatter_rows,
                           shape_str)
from .registry import CPU, kernel

# --- ScatterNd, TensorScatter* --------------------------------------------------------------------


def _check_update_shape(ctx, target_shape, indices, updates) -> None:
    """TensorFlow's ValidateUpdateShape: updates = indices.shape[:-1] + target_shape[depth:]."""
    batch, depth = indices.ndim - 1, indices.shape[-1]
    expected_tail = tuple(target_shape[depth:])
    if updates.shape[:batch] != indices.shape[:batch] or updates.ndim < batch:
        ctx.fail(f"Dimensions [0,{batch}) of indices[shape={shape_str(indices.shape)}] must match "
                 f"dimensions [0,{batch}) of updates[shape={shape_str(updates.shape)}]")
    if updates.shape[batch:] != expected_tail:
        ctx.fail(f"Dimensions [{depth},{len(target_shape)}) of input[shape="
                 f"{shape_str(target_shape)}] must match dimensions [{batch},{updates.ndim}) of "
                 f"updates[shape={shape_str(updates.shape)}]")


def _scatter(ctx, target, indices, updates, mode: str, policy: str):
    """Scatter `updates` into `target` (a fresh array this kernel owns) and return it."""
    xp = ctx.xp
    if indices.ndim < 1:
        ctx.fail(f"Indices shape must have rank at least one. Found:{shape_str(indices.shape)}")
    depth = indices.shape[-1]
    if depth > target.ndim:
        ctx.fail(f"Index innermost dimension length must be <= output rank; saw: {depth} vs. "
                 f"{target.ndim}")
    _check_update_shape(ctx, target.shape, indices, updates)
    rows = index_rows(indices)
    # TensorFlow words rows of depth 0 (each would address the whole output) as below.
    if rows.shape[0] and (target.size == 0 or depth == 0):
        ctx.fail("Indices and updates specified for empty output shape")
    if depth == 0:
        ctx.fail("Only indices.shape[-1] values between 1 and 5 are currently supported.  "
                 "Requested rank: 0")
    bad = bad_index_rows(xp, rows, target.shape[:depth])
    values = updates.reshape((rows.shape[0],) + target.shape[depth:])
    if policy == "IGNORE":
        keep = ~bad
        rows, values = rows[keep], values[keep]
    else:
        first_bad = first_true(xp, bad)
        if first_bad is not None:
            ctx.fail(f"{describe_index_row(indices, first_bad)} does not index into shape "
                     f"{shape_str(target.shape)}")
    scatter_rows(xp, target, rows, values, mode)
    return target


@kernel("ScatterNd")
def scatter_nd(ctx, indices, updates, shape, *, bad_indices_policy):
    target = ctx.xp.zeros(output_shape(ctx, shape), dtype=updates.dtype)
    return _scatter(ctx, target, indices, updates, "add", bad_indices_policy)


def _tensor_scatter(mode: str):
    def scatter_into_copy(ctx, tensor, indices, updates, *, bad_indices_policy):
        return _scatter(ctx, tensor.copy(), indices, updates, mode, bad_indices_policy)
    return scatter_into_copy


for _op, _mode in (("TensorScatterUpdate", "update"), ("TensorScatterAdd", "add"),
                   ("TensorScatterSub", "sub"), ("TensorScatterMin", "min"),
                   ("TensorScatterMax", "max")):
    kernel(_op)(_tensor_scatter(_mode))


# --- segment reductions ---------------------------------------------------------------------------

def _segment_rows(ctx, data, segment_ids):
    """data as [len(ids), *element] rows, checking that its shape starts with the ids' shape."""
    if data.shape[:segment_ids.ndim] != segment_ids.shape:
        ctx.fail(f"data.shape = {shape_str(data.shape)} does not start with segment_ids.shape = "
                 f"{shape_str(segment_ids.shape)}")
    element = data.shape[segment_ids.ndim:]
    return data.reshape((segment_ids.size,) + element), element


def _unsorted_segment(mode: str, identity, scatter=scatter_rows):
    """A kernel reducing data rows into num_segments segments; negative ids drop their row.
    `scatter` combines the rows into the result (the GPU's multiply needs its own: gpu_segment.py)."""
    def reduce_segments(ctx, data, segment_ids, num_segments):
        xp = ctx.xp
        if num_segments.ndim != 0:
            ctx.fail(f"num_segments should be a scalar, not shape {shape_str(num_segments.shape)}")
        count = host_int(ctx, num_segments, "num_segments")
        if count < 0:
            ctx.fail(f"Input num_segments == {count} must not be negative.")
        rows, element = _segment_rows(ctx, data, segment_ids)
        bad = first_true(xp, segment_ids >= count)
        if bad is not None:
            ctx.fail(f"segment_ids{position_str(segment_ids.shape, bad)} = "
                     f"{int(segment_ids.reshape(-1)[bad])} is out of range [0, {count})")
        ids = segment_ids.reshape(-1)
        kept = ids >= 0
        result = xp.full((count,) + element, identity(data.dtype), dtype=data.dtype)
        scatter(xp, result, ids[kept][:, None], rows[kept], mode)
        return result
    return reduce_segments


kernel("UnsortedSegmentSum")(_unsorted_segment("add", lambda dtype: 0))
# CPU only: cupy's ufunc.at covers add, subtract, maximum and minimum, not multiply; the GPU
# kernel (gpu_segment.py) multiplies by sorting instead.
kernel("UnsortedSegmentProd", devices=(CPU,))(_unsorted_segment("mul", lambda dtype: 1))
kernel("UnsortedSegmentMax")(_unsorted_segment("max", lowest))
kernel("UnsortedSegmentMin")(_unsorted_segment("min", highest))


@kernel("SegmentSum")
def segment_sum(ctx, data, segment_ids):
    xp = ctx.xp
    if segment_ids.ndim != 1:
        ctx.fail("segment_ids should be a vector.")
    if data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
        ctx.fail("segment_ids should be the same size as dimension 0 of input.")
    count = int(segment_ids[-1]) + 1 if segment_ids.size else 0
    if segment_ids.size > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
        ctx.fail("segment ids are not increasing")
    if segment_ids.size and int(segment_ids[0]) < 0:
        ctx.fail(f"Segment id {int(segment_ids[0])} out of range [0, {count}), possibly because "
                 f"'segment_ids' input is not sorted.")
    result = xp.zeros((count,) + data.shape[1:], dtype=data.dtype)
    scatter_rows(xp, result, segment_ids[:, None], data, "add")
    return result


# --- DynamicStitch --------------------------------------------------------------------------------

@kernel("DynamicStitch", "ParallelDynamicStitch")
def dynamic_stitch(ctx, *inputs):
    xp = ctx.xp
    count = len(inputs) // 2
    indices, data = inputs[:count], inputs[count:]
    element = data[0].shape[indices[0].ndim:]
    for i, (index, values) in enumerate(zip(indices, data)):
        if values.shape[:index.ndim] != index.shape:
            ctx.fail(f"data[{i}].shape = {shape_str(values.shape)} does not start with "
                     f"indices[{i}].shape = {shape_str(index.shape)}")
        if values.shape[index.ndim:] != element:
            ctx.fail(f"Need data[0].shape[{indices[0].ndim}:] = data[{i}].shape[{index.ndim}:], "
                     f"got data[0].shape = {shape_str(data[0].shape)}, data[{i}].shape = "
                     f"{shape_str(values.shape)}")
        bad = first_true(xp, index < 0)
        if bad is not None:
            ctx.fail(f"indices[{bad}] is out of range")
    largest = max((int(index.max()) for index in indices if index.size), default=-1)
    merged = xp.zeros((largest + 1,) + element, dtype=data[0].dtype)
    for index, values in zip(indices, data):  # later inputs win where indices repeat
        merged[index.reshape(-1)] = values.reshape((index.size,) + element)
    return merged

