"""tf.Example parsing (tf.io.parse_example / parse_single_example): serialized Example protos in,
dense, sparse (COO indices/values/shape) and ragged (values/row splits) feature tensors out.

The kernels (graphtool/exec/kernels/parsing.py) read the protos with schemas/example.proto.
"""
from __future__ import annotations

from ..shapes import Shape, ShapeError, has_rank
from .inference import InferenceContext
from .registry import register

_FEATURE_TYPES = "{float, int64, string}"


def _dense_shapes(ctx: InferenceContext, batch: Shape) -> list[Shape]:
    """batch + each dense shape; a variable-length dense feature (leading -1) has an unknown
    first dim."""
    shapes = []
    for dense in ctx.attr("dense_shapes"):
        if not has_rank(batch) or not has_rank(dense):
            shapes.append(Shape.unknown())
        else:
            shapes.append(batch.concatenate(dense))
    return shapes


def _sparse_shapes(count: int, rank: int | None) -> list[Shape]:
    return ([Shape([None, rank])] * count + [Shape([None])] * count + [Shape([rank])] * count)


def _parse_example_v2_shapes(ctx: InferenceContext) -> list[Shape]:
    try:
        batch = ctx.shape(0)
        if has_rank(batch) and batch.rank > 1:
            raise ShapeError("")
    except ShapeError:
        ctx.fail(f"serialized must be a scalar or a vector, has shape {ctx.shape(0)}")
    rank = batch.rank + 1 if has_rank(batch) else None
    num_ragged = len(ctx.attr("ragged_value_types"))
    return (_sparse_shapes(ctx.attr("num_sparse"), rank) + _dense_shapes(ctx, batch)
            + [Shape([None])] * (2 * num_ragged))


def _parse_single_example_shapes(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    return _sparse_shapes(ctx.attr("num_sparse"), 1) + _dense_shapes(ctx, Shape.scalar())


register("ParseExampleV2",
         inputs=["serialized: string", "names: string", "sparse_keys: string", "dense_keys: string",
                 "ragged_keys: string", "dense_defaults: Tdense"],
         outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                  "sparse_shapes: num_sparse * int64", "dense_values: Tdense", "ragged_values: ragged_value_types",
                  "ragged_row_splits: ragged_split_types"],
         attrs=[f"Tdense: list({_FEATURE_TYPES}) >= 0", "num_sparse: int >= 0",
                f"sparse_types: list({_FEATURE_TYPES}) >= 0", f"ragged_value_types: list({_FEATURE_TYPES}) >= 0",
                "ragged_split_types: list({int32, int64}) >= 0", "dense_shapes: list(shape) >= 0"],
         shape=_parse_example_v2_shapes)
register("ParseSingleExample", inputs=["serialized: string", "dense_defaults: Tdense"],
         outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                  "sparse_shapes: num_sparse * int64", "dense_values: Tdense"],
         attrs=["num_sparse: int >= 0", "sparse_keys: list(string) >= 0", "dense_keys: list(string) >= 0",
                f"sparse_types: list({_FEATURE_TYPES}) >= 0", f"Tdense: list({_FEATURE_TYPES}) >= 0",
                "dense_shapes: list(shape) >= 0"],
         shape=_parse_single_example_shapes)
