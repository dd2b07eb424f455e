"""Array ops that make tensors from shapes or widen them: Pad*, Fill, Empty, Range, LinSpace,
ZerosLike, OnesLike and the broadcasting ops. Part of the "array" family (imported by
graphtool.ops.array).
"""
from __future__ import annotations

import numpy as np

from ..shapes import Shape, ShapeError, broadcast_shapes, has_rank
from .array_common import (INDEX_TYPES_INT32, add_dims, per_output, merge_dims, partial_vector,
                           register, scalar_int, shape_tensor, shape_value, subtract_dims)
from .inference import InferenceContext, element_product, may_build, unchanged


# --- Pad, PadV2, MirrorPad, MirrorPadGrad ---------------------------------------------------------

def _padded(ctx: InferenceContext, data: Shape, combine) -> Shape:
    """Each dim of `data` combined with the total padding of that dim where that is known.
    Partly known paddings count too: TensorFlow's Python pad() refines the shape with them, and
    gradient graphs (Slice's) build paddings from partial shape vectors."""
    paddings = ctx.partial_value(1)
    if paddings is None:
        return Shape.unknown_of_rank(data.rank) if has_rank(data) else Shape.unknown()
    if any(p is not None and p < 0 for p in paddings.ravel()):
        ctx.fail("paddings must be non-negative")
    data = data.with_rank(len(paddings))
    return Shape([None if None in (before, after) else combine(dim, int(before + after))
                  for dim, (before, after) in zip(data.dims, paddings)])


def _pad_shape(ctx: InferenceContext) -> Shape:
    paddings = ctx.with_rank(1, 2)
    merge_dims(paddings[1], 2)
    data, rank = ctx.shape(0), paddings[0]
    if rank is not None:
        data = ctx.with_rank(0, rank)
    return _padded(ctx, data, add_dims)


def _mirror_pad_grad_shape(ctx: InferenceContext) -> Shape:
    rank = ctx.with_rank(1, 2)[0]
    if rank is None:
        return Shape.unknown()
    data = ctx.with_rank(0, rank)
    ctx.shape(1).merge(Shape([rank, 2]))
    return _padded(ctx, data, subtract_dims)


# --- Fill, Empty, Range, LinSpace, ZerosLike, OnesLike --------------------------------------------

def _fill_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 0)
    dims = ctx.int_list(0)
    if dims is not None and min(dims, default=0) < 0:
        ctx.fail(f"Fill dimensions must be >= 0, got {dims}")
    return shape_tensor(ctx, 0)


def _fill_value(ctx: InferenceContext):
    shape, fill = _fill_shape(ctx), ctx.value(1)
    if fill is None or not shape.fully_defined or not may_build(element_product(shape.dims)):
        return None
    return np.full(shape.dims, fill)


def _empty_shape(ctx: InferenceContext) -> Shape:
    return shape_tensor(ctx, 0)


def _range_length(ctx: InferenceContext, start, limit, delta) -> int:
    if not all(np.isfinite(bound) for bound in (start, limit, delta)):
        ctx.fail(f"Range bounds must be finite, got {start}, {limit}, {delta}")
    if start > limit and delta > 0:
        ctx.fail(f"Range requires start <= limit when delta > 0: {start}/{limit}")
    if start < limit and delta < 0:
        ctx.fail(f"Range requires start >= limit when delta < 0: {start}/{limit}")
    if delta == 0:
        ctx.fail("Range requires delta != 0")
    if np.issubdtype(start.dtype, np.integer):
        return -(-abs(int(limit) - int(start)) // abs(int(delta)))
    return int(np.ceil(np.abs((limit - start) / delta)))  # in the element type, as the kernel does


def _range_shape(ctx: InferenceContext) -> Shape:
    for i in range(3):
        ctx.with_rank(i, 0)
    bounds = [ctx.value(i) for i in range(3)]
    if any(b is None for b in bounds):
        return Shape([None])
    return Shape([_range_length(ctx, *bounds)])


def _range_value(ctx: InferenceContext):
    start, limit, delta = (ctx.value(i) for i in range(3))
    if start is None or limit is None or delta is None:
        return None
    length = _range_length(ctx, start, limit, delta)  # from (limit - start) / delta: no array yet
    if not may_build(length):
        return None
    indices = np.arange(length).astype(start.dtype)
    return (start + indices * delta).astype(start.dtype)  # start + i * delta, as the kernel does


def _lin_space_shape(ctx: InferenceContext) -> Shape:
    for i in range(3):
        ctx.with_rank(i, 0)
    num = scalar_int(ctx, 2)
    if num is not None and num <= 0:
        ctx.fail(f"LinSpace requires num > 0, got {num}")
    return Shape([num])


def _constant_like_value(fill: int):
    def value(ctx: InferenceContext):
        shape, dtype = ctx.shape(0), ctx.output_dtypes[0]
        if not shape.fully_defined or not (dtype.is_numeric or dtype.is_bool):
            return None
        if not may_build(element_product(shape.dims)):
            return None
        return np.full(shape.dims, fill, dtype=dtype.numpy)
    return value


# --- broadcasting ---------------------------------------------------------------------------------

def _broadcast_to_shape(ctx: InferenceContext) -> Shape:
    target, data = shape_tensor(ctx, 1), ctx.shape(0)
    if not has_rank(target) or not has_rank(data):
        return target
    if data.rank > target.rank:
        ctx.fail(f"cannot broadcast a tensor of shape {data} to the lower rank shape {target}")
    dims = list(target.dims)
    for offset in range(1, data.rank + 1):
        if data[-offset] is not None and data[-offset] > 1:  # dims above 1 must match exactly
            dims[-offset] = merge_dims(data[-offset], dims[-offset])
    return Shape(dims)


def _broadcast_to_value(ctx: InferenceContext):
    data, target = ctx.partial_value(0), ctx.int_list(1)
    if data is None or target is None or not may_build(element_product(target)):
        return None
    return np.broadcast_to(data, target)


def _broadcast_args_shape(ctx: InferenceContext) -> Shape:
    lengths = [ctx.with_rank(i, 1)[0] for i in range(2)]
    return Shape([None if None in lengths else max(lengths)])


def _broadcast_args_value(ctx: InferenceContext):
    shapes = [s for s in (ctx.partial_value(i) for i in range(2)) if s is not None]
    if len(shapes) != 2:
        return None
    try:
        return shape_value(broadcast_shapes(Shape(list(shapes[0])), Shape(list(shapes[1]))))
    except ShapeError:
        return None  # the kernel reports incompatible shapes when it runs


def _broadcast_gradient_args_shapes(ctx: InferenceContext) -> list[Shape]:
    for i in range(2):
        ctx.with_rank(i, 1)
    return [Shape([None]), Shape([None])]


def _broadcast_gradient_args_values(ctx: InferenceContext) -> list | None:
    """The axes each input was broadcast along. Like TensorFlow's BCast: none for identical
    shapes, otherwise every axis where the 1-extended shape has a 1 (even where both have 1)."""
    shapes = [s for s in (ctx.int_list(i) for i in range(2)) if s is not None]
    if len(shapes) != 2:
        return None
    try:
        broadcast_shapes(Shape(shapes[0]), Shape(shapes[1]))
    except ShapeError:
        return None  # the kernel reports incompatible shapes when it runs
    if shapes[0] == shapes[1]:
        return [partial_vector([]), partial_vector([])]
    rank = max(len(s) for s in shapes)
    extended = [[1] * (rank - len(s)) + s for s in shapes]
    return [partial_vector([axis for axis, dim in enumerate(dims) if dim == 1])
            for dims in extended]


# --- registrations --------------------------------------------------------------------------------

_RANGE_TYPES = ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, uint16, uint32, "
                "uint64} = DT_INT32")
_ONES_LIKE_TYPES = ("{bfloat16, float16, float32, float64, int8, uint8, int16, uint16, int32, "
                    "uint32, int64, uint64, complex64, complex128, bool}")
_PAD_ATTRS = ["T: type", f"Tpaddings: {INDEX_TYPES_INT32}"]
_MIRROR_MODE = "mode: {'REFLECT', 'SYMMETRIC'}"
register("Pad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
         attrs=_PAD_ATTRS, shape=_pad_shape)
register("PadV2", inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
         outputs=["output: T"], attrs=_PAD_ATTRS, shape=_pad_shape)
register("MirrorPad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
         attrs=[*_PAD_ATTRS, _MIRROR_MODE], shape=_pad_shape)
register("MirrorPadGrad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
         attrs=[*_PAD_ATTRS, _MIRROR_MODE], shape=_mirror_pad_grad_shape)

register("Fill", inputs=["dims: index_type", "value: T"], outputs=["output: T"],
         attrs=["T: type", f"index_type: {INDEX_TYPES_INT32}"], shape=_fill_shape,
         value=_fill_value)
register("Empty", inputs=["shape: int32"], outputs=["output: dtype"],
         attrs=["dtype: type", "init: bool = false"], shape=_empty_shape, stateful=True)
register("Range", inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"], outputs=["output: Tidx"],
         attrs=[f"Tidx: {_RANGE_TYPES}"], shape=_range_shape, value=_range_value)
register("LinSpace", inputs=["start: T", "stop: T", "num: Tidx"], outputs=["output: T"],
         attrs=["T: {bfloat16, float16, float32, float64}", f"Tidx: {INDEX_TYPES_INT32}"],
         shape=_lin_space_shape)
register("ZerosLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"],
         shape=unchanged, value=_constant_like_value(0))
register("OnesLike", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {_ONES_LIKE_TYPES}"],
         shape=unchanged, value=_constant_like_value(1))

register("BroadcastTo", inputs=["input: T", "shape: Tidx"], outputs=["output: T"],
         attrs=["T: type", f"Tidx: {INDEX_TYPES_INT32}"], shape=_broadcast_to_shape,
         value=_broadcast_to_value)
register("BroadcastArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T"],
         attrs=[f"T: {INDEX_TYPES_INT32}"],
         shape=_broadcast_args_shape, value=_broadcast_args_value)
register("BroadcastGradientArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T", "r1: T"],
         attrs=[f"T: {INDEX_TYPES_INT32}"], shape=_broadcast_gradient_args_shapes,
         value=per_output(_broadcast_gradient_args_values))
