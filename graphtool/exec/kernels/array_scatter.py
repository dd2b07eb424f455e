"""Kernels of array ops that place values into a tensor: ScatterNd, TensorScatter{Update, Add, Sub,
Min, Max}, (Parallel)DynamicStitch and DynamicPartition (the segment reductions are in segment.py).

Duplicate ScatterNd indices add up.
"""
from __future__ import annotations

from .array_common import (bad_index_rows, describe_index_row, first_true, index_rows, output_shape,
                           position_str, scatter_rows, shape_str)
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


def scatter_nd_into(ctx, target, indices, updates, mode: str, policy: str):
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
    return scatter_nd_into(ctx, target, indices, updates, "add", bad_indices_policy)


def _tensor_scatter(mode: str):
    def scatter_into_copy(ctx, tensor, indices, updates, *, bad_indices_policy):
        return scatter_nd_into(ctx, tensor.copy(), indices, updates, mode, bad_indices_policy)
    return scatter_into_copy


for _op, _mode in (("TensorScatterUpdate", "update"), ("TensorScatterAdd", "add"),
                   ("TensorScatterSub", "sub"), ("TensorScatterMin", "min"),
                   ("TensorScatterMax", "max")):
    kernel(_op)(_tensor_scatter(_mode))


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


@kernel("DynamicPartition", devices=(CPU,))
def dynamic_partition(ctx, data, partitions, *, num_partitions):
    """outputs[i]: the rows of data whose partition is i, in their order."""
    xp = ctx.xp
    if data.shape[:partitions.ndim] != partitions.shape:
        ctx.fail(f"data.shape must start with partitions.shape, got data.shape = "
                 f"{shape_str(data.shape)}, partitions.shape = {shape_str(partitions.shape)}")
    flat = partitions.reshape(-1)
    bad = first_true(xp, (flat < 0) | (flat >= num_partitions))
    if bad is not None:
        ctx.fail(f"partitions{position_str(partitions.shape, bad)} = {int(flat[bad])} is not in "
                 f"[0, {num_partitions})")
    rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
    return tuple(rows[flat == i] for i in range(num_partitions))
