"""Kernels of the sparse family: SparseFillEmptyRows, SparseFillEmptyRowsGrad, SparseReshape.

SparseFillEmptyRows orders its output by row and keeps the input order within a row, as
TensorFlow's CPU kernel does; a row without entries gets one entry (row, 0, ..., 0) holding the
default value, placed where the row starts.
"""
from __future__ import annotations

import numpy as np

from .array_common import accumulate_at, first_true, host_ints, shape_str, stable_argsort
from .registry import kernel


@kernel("SparseFillEmptyRows")
def sparse_fill_empty_rows(ctx, indices, values, dense_shape, default_value):
    xp = ctx.xp
    if indices.ndim != 2 or values.ndim != 1 or dense_shape.ndim != 1:
        ctx.fail(f"indices must be a matrix, values and dense_shape vectors, got shapes "
                 f"{shape_str(indices.shape)}, {shape_str(values.shape)}, {shape_str(dense_shape.shape)}")
    if default_value.ndim != 0:
        ctx.fail(f"default_value must be a scalar, got shape {shape_str(default_value.shape)}")
    if indices.shape[0] != values.shape[0]:
        ctx.fail(f"The length of `values` ({values.shape[0]}) must match the first dimension of "
                 f"`indices` ({indices.shape[0]}).")
    shape = host_ints(dense_shape)
    if not shape:
        ctx.fail("dense_shape must not be empty")
    if indices.shape[1] != len(shape):
        ctx.fail(f"indices have {indices.shape[1]} columns but dense_shape has {len(shape)} entries")
    rows = indices[:, 0]
    bad = first_true(xp, (rows < 0) | (rows >= shape[0]))
    if bad is not None:
        ctx.fail(f"indices({bad}, 0) is invalid: {int(rows[bad])} >= {shape[0]}")
    per_row = xp.zeros((shape[0],), dtype=np.int64)
    accumulate_at(xp, "add", per_row, rows, 1)
    empty = per_row == 0
    # Every row takes max(count, 1) slots; entries of a row follow each other in input order.
    slots = xp.maximum(per_row, 1)
    starts = xp.cumsum(slots) - slots
    order = stable_argsort(xp, rows)
    rank_in_row = xp.arange(rows.shape[0]) - (xp.cumsum(per_row) - per_row)[rows[order]]
    reverse_map = xp.empty((rows.shape[0],), dtype=np.int64)
    reverse_map[order] = starts[rows[order]] + rank_in_row
    total = int(slots.sum())
    output_indices = xp.zeros((total, len(shape)), dtype=np.int64)
    output_values = xp.full((total,), default_value, dtype=values.dtype)
    filled = starts[empty]
    output_indices[filled, 0] = xp.arange(shape[0], dtype=np.int64)[empty]
    output_indices[reverse_map] = indices
    output_values[reverse_map] = values
    return output_indices, output_values, empty, reverse_map


@kernel("SparseFillEmptyRowsGrad")
def sparse_fill_empty_rows_grad(ctx, reverse_index_map, grad_values):
    """d_values: the gradients of the entries' new positions; d_default_value: the sum of the
    gradients at the filled-in positions."""
    xp = ctx.xp
    bad = first_true(xp, (reverse_index_map < 0) | (reverse_index_map >= grad_values.shape[0]))
    if bad is not None:
        ctx.fail(f"Elements in reverse index must be in [0, {grad_values.shape[0]}) but got "
                 f"{int(reverse_index_map[bad])}")
    filled = xp.ones(grad_values.shape, dtype=bool)
    filled[reverse_index_map] = False
    return grad_values[reverse_index_map], grad_values[filled].sum(dtype=grad_values.dtype)


@kernel("SparseReshape")
def sparse_reshape(ctx, input_indices, input_shape, new_shape):
    xp = ctx.xp
    old, new = host_ints(input_shape), host_ints(new_shape)
    if input_indices.ndim != 2 or input_indices.shape[1] != len(old):
        ctx.fail(f"Input shape should be a vector of the indices' rank, got indices "
                 f"{shape_str(input_indices.shape)} and shape {shape_str(input_shape.shape)}")
    dense_size = int(np.prod(old, dtype=np.int64))
    unknown = [i for i, dim in enumerate(new) if dim == -1]
    if len(unknown) > 1:
        ctx.fail(f"only one output dimension may be -1, not both {unknown[0]} and {unknown[1]}")
    if any(dim < -1 for dim in new):
        ctx.fail(f"size {min(new)} must be non-negative, not {min(new)}")
    known = int(np.prod([dim for dim in new if dim != -1], dtype=np.int64))
    if unknown:
        if known == 0 or dense_size % known:
            ctx.fail(f"Input to reshape is a SparseTensor with {dense_size} dense values, but the "
                     f"requested shape requires a multiple of {known}.")
        new[unknown[0]] = dense_size // known
    elif known != dense_size:
        ctx.fail(f"Input to reshape is a tensor with {dense_size} dense values, but the requested "
                 f"shape has {known}")
    output_shape = xp.asarray(np.array(new, np.int64))
    if input_indices.shape[0] == 0:
        return xp.zeros((0, len(new)), dtype=np.int64), output_shape
    linear = xp.zeros((input_indices.shape[0],), dtype=np.int64)
    for column, dim in enumerate(old):
        linear = linear * dim + input_indices[:, column]
    columns = []
    for dim in reversed(new):
        columns.append(linear % dim if dim else linear)
        linear = linear // dim if dim else linear
    return xp.stack(columns[::-1], axis=1).astype(np.int64), output_shape
