"""Sparse-tensor plumbing that embedding lookups use: SparseFillEmptyRows (and its gradient op)
and SparseReshape. A SparseTensor travels as three tensors: int64 indices [N, rank], values [N]
and an int64 dense shape [rank]."""
from __future__ import annotations

from functools import partial

from ..shapes import Shape, has_rank
from . import registry
from .array_common import merge_dims, shape_tensor
from .inference import InferenceContext

register = partial(registry.register, family="sparse")


def _fill_empty_rows_shape(ctx: InferenceContext) -> list[Shape]:
    indices, values = ctx.with_rank(0, 2), ctx.with_rank(1, 1)
    ctx.with_rank(2, 1)
    ctx.with_rank(3, 0)
    if None not in (indices[0], values[0]) and indices[0] != values[0]:
        ctx.fail(f"indices {indices} and values {values} must have the same number of entries")
    count = merge_dims(indices[0], values[0])
    rank = ctx.shape(2)[0]
    if None not in (rank, indices[1]) and rank != indices[1]:
        ctx.fail(f"indices {indices} must have one column per entry of dense_shape {ctx.shape(2)}")
    if rank == 0:
        ctx.fail("dense_shape must not be empty")
    rows = shape_tensor(ctx, 2)
    return [Shape([None, merge_dims(rank, indices[1])]), Shape([None]),
            Shape([rows[0] if has_rank(rows) else None]), Shape([count])]


def _fill_empty_rows_grad_shape(ctx: InferenceContext) -> list[Shape]:
    reverse_map = ctx.with_rank(0, 1)
    ctx.with_rank(1, 1)
    return [reverse_map, Shape.scalar()]


def _sparse_reshape_shape(ctx: InferenceContext) -> list[Shape]:
    indices = ctx.with_rank(0, 2)
    ctx.with_rank(1, 1)
    new_shape = ctx.with_rank(2, 1)
    return [Shape([indices[0], new_shape[0]]), new_shape]


register("SparseFillEmptyRows",
         inputs=["indices: int64", "values: T", "dense_shape: int64", "default_value: T"],
         outputs=["output_indices: int64", "output_values: T", "empty_row_indicator: bool",
                  "reverse_index_map: int64"],
         attrs=["T: type"], shape=_fill_empty_rows_shape)
register("SparseFillEmptyRowsGrad", inputs=["reverse_index_map: int64", "grad_values: T"],
         outputs=["d_values: T", "d_default_value: T"], attrs=["T: type"],
         shape=_fill_empty_rows_grad_shape)
register("SparseReshape", inputs=["input_indices: int64", "input_shape: int64", "new_shape: int64"],
         outputs=["output_indices: int64", "output_shape: int64"], shape=_sparse_reshape_shape)
