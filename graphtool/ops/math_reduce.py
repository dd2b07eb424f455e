"""The math family, continued: reductions (Sum, Mean, Max, ...), ArgMax/ArgMin and the
cumulative ops Cumsum/Cumprod. Imported by math.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..shapes import Shape, has_rank
from .inference import InferenceContext, normalize_axis, unchanged
from .math_common import NUMBER, QUANTIZED, REAL, reduction_value, register_math, type_set

if TYPE_CHECKING:
    from ..shapes import RankedShape

INDEX_ATTR = "Tidx: {int32, int64} = int32"

# Input type -> the reductions of `input` over `reduction_indices` with that input type.
REDUCTIONS = {
    type_set(NUMBER): ["Sum", "Mean", "Prod", "EuclideanNorm"],
    type_set(REAL, QUANTIZED): ["Max", "Min"],
    "bool": ["All", "Any"],
}
# Sums and products of shape vectors give static element counts (e.g. Prod(Shape(x))).
REDUCTION_VALUES = {"Sum": reduction_value(np.sum), "Prod": reduction_value(np.prod)}


def _axis_count(axes: Shape) -> int | None:
    """How many axes a reduction_indices tensor of this shape names, if its shape tells."""
    if axes.rank == 0:
        return 1
    return axes[0] if axes.rank == 1 else None


def _reduce_unknown_axes(data: RankedShape, axes: Shape, keep_dims: bool) -> Shape:
    """The result when the axes' values are unknown. TensorFlow keeps the rank with keep_dims and
    gives up otherwise; we also use the number of axes, since repeated axes are a runtime error."""
    count = _axis_count(axes)
    if count == 0:
        return data
    if keep_dims:
        return Shape.unknown_of_rank(data.rank)
    if count is not None and count <= data.rank:
        return Shape.unknown_of_rank(data.rank - count)
    return Shape.unknown()


def _reduction_shape(ctx: InferenceContext) -> Shape:
    data, axes_shape = ctx.shape(0), ctx.shape(1)
    if has_rank(axes_shape) and axes_shape.rank > 1:
        ctx.fail(f"reduction_indices must be a scalar or a vector, has shape {axes_shape}")
    keep_dims = bool(ctx.attr("keep_dims"))
    axes = ctx.int_list(1)
    if not has_rank(data):
        return Shape.unknown()
    if axes is None:
        return _reduce_unknown_axes(data, axes_shape, keep_dims)
    reduced = {normalize_axis(ctx, axis, data.rank, "reduction dimension") for axis in axes}
    dims = []
    for index, dim in enumerate(data.dims):
        if index not in reduced:
            dims.append(dim)
        elif keep_dims:
            dims.append(1)
    return Shape(dims)


def _arg_reduction_shape(ctx: InferenceContext) -> Shape:
    """ArgMax/ArgMin drop the one dimension named by the scalar `dimension` input."""
    ctx.with_rank(1, 0)
    data = ctx.shape(0)
    if not has_rank(data):
        return Shape.unknown()
    if data.rank <= 1:
        return Shape.scalar()
    dimension = ctx.int_list(1)
    if dimension is None:
        return Shape.unknown_of_rank(data.rank - 1)
    axis = normalize_axis(ctx, dimension[0], data.rank, "dimension")
    return Shape(data.dims[:axis] + data.dims[axis + 1:])


for _types, _names in REDUCTIONS.items():
    _input = "input: bool" if _types == "bool" else "input: T"
    _output = "output: bool" if _types == "bool" else "output: T"
    _type_attr = [] if _types == "bool" else [f"T: {_types}"]
    for _name in _names:
        register_math(_name, inputs=[_input, "reduction_indices: Tidx"], outputs=[_output],
                      attrs=["keep_dims: bool = false", *_type_attr, INDEX_ATTR],
                      shape=_reduction_shape, value=REDUCTION_VALUES.get(_name))

# ArgMax accepts more index and output types than ArgMin (TensorFlow added them to ArgMax only).
for _name, _index_types, _output_types in (
        ("ArgMax", "{int16, int32, int64}", "{int16, uint16, int32, int64}"),
        ("ArgMin", "{int32, int64}", "{int32, int64}")):
    register_math(_name, inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
                  attrs=[f"T: {type_set(REAL, QUANTIZED, 'bool')}", f"Tidx: {_index_types} = int32",
                         f"output_type: {_output_types} = int64"],
                  shape=_arg_reduction_shape)

# TensorFlow does not check the axis statically; the kernel does.
for _name in ("Cumsum", "Cumprod"):
    register_math(_name, inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
                  attrs=["exclusive: bool = false", "reverse: bool = false",
                         f"T: {type_set(NUMBER)}", INDEX_ATTR],
                  shape=unchanged)
