"""Array ops that index into a tensor: Slice, StridedSlice, Gather*, UnravelIndex, Scatter*,
DynamicStitch and DynamicPartition. Part of the "array" family (imported by graphtool.ops.array).

StridedSlice is canonicalized once, the way TensorFlow's ValidateStridedSliceOp does it (the
"sparse" spec of begin/end/strides and masks becomes one "dense" entry per input dim), and that one
plan serves both the shape function (dims may be unknown) and the value function (slicing a
partially known shape vector, which must give the partial slice).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from .array_common import (INDEX_TYPES, INDEX_TYPES_INT32, element_count, knows_nothing, merge_dims,
                           merge_prefix, partial_or_unknown, register, scalar_int,
                           shape_tensor, subshape, subtract_dims)
from .inference import InferenceContext, element_product, may_build

# --- Slice ----------------------------------------------------------------------------------------

def _slice_shape(ctx: InferenceContext) -> Shape:
    data = ctx.shape(0)
    count = merge_dims(ctx.with_rank(1, 1)[0], ctx.with_rank(2, 1)[0])
    if count is not None:
        data = ctx.with_rank(0, count)
    # TensorFlow reads `begin` as a shape tensor too, so a partly known begin still helps.
    begin = shape_tensor(ctx, 1)
    sizes = ctx.int_list(2)
    if sizes is None:
        # Partly known sizes: -1 entries are simply unknown dims.
        sizes_shape = shape_tensor(ctx, 2)
        if has_rank(sizes_shape):
            return sizes_shape
        return Shape.unknown_of_rank(data.rank) if has_rank(data) else Shape.unknown()
    begin = begin.with_rank(len(sizes))
    dims = []
    for i, size in enumerate(sizes):
        if size < -1:
            ctx.fail(f"sizes[{i}] = {size}: slice sizes cannot be below -1")
        dims.append(subtract_dims(data[i], begin[i]) if size == -1 else size)
    return Shape(dims)


def _slice_value(ctx: InferenceContext):
    data, begin, sizes = ctx.partial_value(0), ctx.int_list(1), ctx.int_list(2)
    if data is None or begin is None or sizes is None:
        return None
    ends = [dim if size == -1 else b + size for b, size, dim in zip(begin, sizes, data.shape)]
    if any(not 0 <= b <= end <= dim for b, end, dim in zip(begin, ends, data.shape)):
        return None  # out of bounds: the kernel reports it when it runs
    return data[tuple(slice(b, end) for b, end in zip(begin, ends))]


# --- StridedSlice ---------------------------------------------------------------------------------

_NEW_AXIS = -1      # markers in _DenseSpec.final_dims
_SHRINK_AXIS = -2


@dataclass(frozen=True)
class SliceMasks:
    begin: int
    end: int
    ellipsis: int
    new_axis: int
    shrink: int

    @classmethod
    def of(cls, ctx: InferenceContext) -> "SliceMasks":
        return cls(*(ctx.attr(f"{name}_mask") for name in
                     ("begin", "end", "ellipsis", "new_axis", "shrink_axis")))


@dataclass
class _DenseSpec:
    """One begin/end/stride per input dim, and how output dims map to input dims."""
    begin: list[int]
    end: list[int]
    strides: list[int]
    begin_mask: int = 0
    end_mask: int = 0
    shrink_mask: int = 0
    final_dims: list[int] = field(default_factory=list)  # input dim, or _NEW_AXIS / _SHRINK_AXIS


def _bit(mask: int, index: int) -> bool:
    return bool(mask >> index & 1)


def _dense_spec(ctx, rank: int, begin, end, strides: list[int], masks: SliceMasks) -> _DenseSpec:
    """Expand the ellipsis (explicit, or implied at the end) into full dims and place every other
    sparse entry on its input dim."""
    if masks.ellipsis & (masks.ellipsis - 1):
        ctx.fail("multiple ellipses in slice spec not allowed")
    sparse_count, ellipsis = len(strides), masks.ellipsis
    new_axes_after_ellipsis = sum(1 for i in range(sparse_count)
                                  if _bit(masks.new_axis, i) and ellipsis & ((1 << i) - 1))
    if not ellipsis:
        ellipsis, sparse_count = 1 << sparse_count, sparse_count + 1
    spec = _DenseSpec([0] * rank, [0] * rank, [1] * rank)
    full = 0
    for i in range(sparse_count):
        bit = 1 << i
        if ellipsis & bit:
            stop = min(rank - (sparse_count - i) + 1 + new_axes_after_ellipsis, rank)
            while full < stop:
                spec.begin_mask |= 1 << full
                spec.end_mask |= 1 << full
                spec.final_dims.append(full)
                full += 1
        elif masks.new_axis & bit:
            spec.final_dims.append(_NEW_AXIS)
        else:
            if full == rank:
                ctx.fail(f"index out of range using input dim {full}; input has only {rank} dims")
            spec.begin[full] = begin[i] if begin is not None else 0
            spec.end[full] = end[i] if end is not None else 0
            spec.strides[full] = strides[i]
            spec.begin_mask |= _bit(masks.begin, i) << full
            spec.end_mask |= _bit(masks.end, i) << full
            if masks.shrink & bit:
                spec.shrink_mask |= 1 << full
                spec.final_dims.append(_SHRINK_AXIS)
            else:
                spec.final_dims.append(full)
            full += 1
    return spec


@dataclass
class _DimSlice:
    begin: int
    end: int
    stride: int
    size: int | None

    def as_slice(self) -> slice:
        if self.begin < 0:  # "before the first element" going backwards: nothing to take
            return slice(0, 0)
        return slice(self.begin, None if self.end < 0 else self.end, self.stride)


def _interval_size(length: int, stride: int) -> int:
    if length == 0 or (length < 0) != (stride < 0):
        return 0
    return -(-abs(length) // abs(stride))


def _canonical_bound(value: int, masked: bool, dim: int, stride: int, is_end: bool) -> int:
    """A begin/end clamped into the dim; for negative strides -1 means "before index 0"."""
    low, high = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return high if is_end == (stride > 0) else low
    forward = value + dim if value < 0 else value
    return min(max(forward, low), high)


def _slice_dim(ctx, spec: _DenseSpec, i: int, dim, bounds_known: bool) -> _DimSlice:
    stride = spec.strides[i]
    if stride == 0:
        ctx.fail(f"strides[{i}] must be non-zero")
    shrink = _bit(spec.shrink_mask, i)
    if dim is None:
        return _DimSlice(0, 0, stride, 1 if shrink else None)
    begin_masked, end_masked = _bit(spec.begin_mask, i), _bit(spec.end_mask, i)
    if shrink and stride <= 0:
        ctx.fail("only stride 1 allowed on non-range indexing")
    if bounds_known and shrink:
        begin = spec.begin[i] + dim if spec.begin[i] < 0 else spec.begin[i]
        if not 0 <= begin < dim:
            ctx.fail(f"slice index {begin} of dimension {i} out of bounds")
        return _DimSlice(begin, begin + 1, 1, 1)
    if bounds_known:
        begin = _canonical_bound(spec.begin[i], begin_masked, dim, stride, is_end=False)
        end = _canonical_bound(spec.end[i], end_masked, dim, stride, is_end=True)
        return _DimSlice(begin, end, stride, _interval_size(end - begin, stride))
    if shrink:
        return _DimSlice(0, 0, stride, 1)
    if begin_masked and end_masked:
        return _DimSlice(0, 0, stride, _interval_size(-dim if stride < 0 else dim, stride))
    return _DimSlice(0, 0, stride, None)


@dataclass
class _SlicePlan:
    dims: list[_DimSlice]     # one per input dim
    final_shape: Shape


def plan_strided_slice(ctx, input_dims, begin, end, strides, masks: SliceMasks) -> _SlicePlan:
    """TensorFlow's ValidateStridedSliceOp for an input of known rank whose dims may be unknown.
    `begin`/`end` may be None (unknown values); `strides` must be known."""
    for name, values in (("begin", begin), ("end", end)):
        if values is not None and len(values) != len(strides):
            ctx.fail(f"{name} has {len(values)} entries but strides has {len(strides)}")
    if len(strides) >= 32:
        ctx.fail(f"strided slice specs are limited to 31 entries, got {len(strides)}")
    spec = _dense_spec(ctx, len(input_dims), begin, end, strides, masks)
    bounds_known = begin is not None and end is not None
    dims = [_slice_dim(ctx, spec, i, dim, bounds_known) for i, dim in enumerate(input_dims)]
    final = [1 if d == _NEW_AXIS else dims[d].size for d in spec.final_dims if d != _SHRINK_AXIS]
    return _SlicePlan(dims, Shape(final))


def _strided_slice_shape(ctx: InferenceContext) -> Shape:
    data = ctx.shape(0)
    begin_shape, end_shape, strides_shape = (ctx.with_rank(i, 1) for i in (1, 2, 3))
    try:
        spec_length = begin_shape.merge(end_shape).merge(strides_shape)[0]
    except ShapeError:
        ctx.fail(f"begin, end and strides must have the same length, got {ctx.shape(1)}, "
                 f"{ctx.shape(2)} and {ctx.shape(3)}")
    strides = ctx.int_list(3)
    if not has_rank(data) or spec_length is None or strides is None:
        return Shape.unknown()
    plan = plan_strided_slice(ctx, data.dims, ctx.int_list(1), ctx.int_list(2), strides,
                               SliceMasks.of(ctx))
    return plan.final_shape


def _strided_slice_value(ctx: InferenceContext):
    data = ctx.partial_value(0)
    begin, end, strides = (ctx.int_list(i) for i in (1, 2, 3))
    if data is None or begin is None or end is None or strides is None:
        return None
    plan = plan_strided_slice(ctx, data.shape, begin, end, strides, SliceMasks.of(ctx))
    sliced = data[tuple(d.as_slice() for d in plan.dims)]
    return sliced.reshape(plan.final_shape.dims)


def _strided_slice_grad_shape(ctx: InferenceContext) -> Shape:
    return shape_tensor(ctx, 0)


# --- Gather ---------------------------------------------------------------------------------------

def _gather_shape(ctx: InferenceContext) -> Shape:
    params = ctx.with_rank_at_least(0, 1)
    return ctx.shape(1).concatenate(subshape(params, 1))


def _gather_v2_shape(ctx: InferenceContext) -> Shape:
    params, indices = ctx.with_rank_at_least(0, 1), ctx.shape(1)
    ctx.with_rank(2, 0)
    axis = scalar_int(ctx, 2)
    if axis is None:
        if has_rank(params) and has_rank(indices):
            return Shape.unknown_of_rank(params.rank + indices.rank - 1)
        return Shape.unknown()
    ctx.with_rank_at_least(0, -axis if axis < 0 else axis + 1)
    batch_dims = ctx.attr("batch_dims")
    ctx.with_rank_at_least(1, abs(batch_dims))
    if batch_dims < 0:
        if not has_rank(indices):
            return Shape.unknown()
        batch_dims += indices.rank
    ctx.with_rank_at_least(0, batch_dims + 1)
    result = subshape(params, 0, axis).concatenate(subshape(indices, batch_dims))
    if axis != -1:  # axis + 1 == 0 would mean "from the start"
        result = result.concatenate(subshape(params, axis + 1))
    return result


def _gathered(params: np.ndarray | None, indices: np.ndarray | None, axis: int):
    """Gather of a (partial) value along `axis`, or None when indices are unknown or invalid."""
    if params is None or indices is None or params.ndim == 0:
        return None
    axis %= params.ndim
    if indices.size and not (0 <= indices.min() and indices.max() < params.shape[axis]):
        return None  # the kernel reports bad indices when it runs
    if not may_build(element_product([indices.size, *params.shape[:axis], *params.shape[axis + 1:]])):
        return None
    return np.take(params, indices.astype(np.int64), axis=axis)


def _gather_value(ctx: InferenceContext):
    return _gathered(ctx.partial_value(0), ctx.value(1), 0)


def _gather_v2_value(ctx: InferenceContext):
    axis = scalar_int(ctx, 2)
    if axis is None or ctx.attr("batch_dims") != 0:
        return None
    return _gathered(ctx.partial_value(0), ctx.value(1), axis)


def _gather_nd_shape(ctx: InferenceContext) -> Shape:
    params, indices = ctx.shape(0), ctx.with_rank_at_least(1, 1)
    depth = indices[-1] if has_rank(indices) else None
    if not has_rank(params) or depth is None:
        return Shape.unknown()
    if depth > params.rank:
        ctx.fail(f"indices.shape[-1] must be <= params.rank, but saw indices shape {indices} "
                 f"and params shape {params}")
    return subshape(indices, 0, -1).concatenate(subshape(params, depth))


def _unravel_index_shape(ctx: InferenceContext) -> Shape:
    dims, indices = ctx.with_rank(1, 1), ctx.shape(0)
    if not has_rank(indices):
        return Shape.unknown()
    if indices.rank == 0:
        return Shape([dims[0]])
    return Shape([dims[0], element_count(indices)])


# --- Scatter --------------------------------------------------------------------------------------

def _scattered_into(ctx, indices: Shape, updates: Shape, target: Shape) -> Shape:
    """Check that `updates` fit `indices` and `target` (ScatterNdShapeHelper); result: target."""
    if element_count(target) == 0 and ((element_count(indices) or 0) > 0
                                       or (element_count(updates) or 0) > 0):
        ctx.fail("indices and updates specified for an empty output")
    if not (has_rank(indices) and has_rank(updates) and updates.rank != 0):
        return target
    outer, depth = indices.rank - 1, indices[-1]
    if depth is None:
        return target
    try:
        subshape(indices, 0, outer).merge(subshape(updates, 0, outer))
    except ShapeError:
        ctx.fail(f"the outer {outer} dims of indices {indices} must match those of "
                 f"updates {updates}")
    try:
        subshape(target, depth).merge(subshape(updates, outer))
    except ShapeError:
        ctx.fail(f"dims [{depth}:] of the output {target} must match dims [{outer}:] of "
                 f"updates {updates}")
    return target


def _scatter_nd_shape(ctx: InferenceContext) -> Shape:
    indices, updates = ctx.with_rank_at_least(0, 1), ctx.with_rank_at_least(1, 1)
    return _scattered_into(ctx, indices, updates, shape_tensor(ctx, 2))


def _tensor_scatter_shape(ctx: InferenceContext) -> Shape:
    target = ctx.with_rank_at_least(0, 1)
    indices, updates = ctx.with_rank_at_least(1, 1), ctx.with_rank_at_least(2, 1)
    return _scattered_into(ctx, indices, updates, target)


# --- DynamicStitch, DynamicPartition -------------------------------------------------------------

def _dynamic_stitch_shape(ctx: InferenceContext) -> Shape:
    count = ctx.attr("N")
    element_shape, largest, all_indices_known = Shape.unknown(), -1, True
    for i in range(count):
        indices, data, index_values = ctx.shape(i), ctx.shape(count + i), ctx.value(i)
        all_indices_known &= index_values is not None
        if not has_rank(indices):
            continue
        data = merge_prefix(data, indices)
        element_shape = element_shape.merge(subshape(data, indices.rank))
        if index_values is not None and index_values.size:
            largest = max(largest, int(index_values.max()))
    return Shape([largest + 1 if all_indices_known else None]).concatenate(element_shape)


def _dynamic_stitch_value(ctx: InferenceContext):
    """TensorFlow's reduction gradients build their output shape with DynamicStitch of
    [range(rank), axes] and [Shape(x), ones]: the result is a partial shape vector."""
    count = ctx.attr("N")
    shape = _dynamic_stitch_shape(ctx)
    if not shape.fully_defined or not may_build(element_product(shape.dims)):
        return None
    dims = [d for d in shape if d is not None]   # all of them: the shape is fully defined
    merged = np.full(dims, None, dtype=np.object_)
    for i in range(count):
        indices, data = ctx.value(i), partial_or_unknown(ctx, count + i)
        if data is None or indices is None or indices.size and indices.min() < 0:
            return None
        merged[indices.astype(np.int64)] = data  # later partitions win, as in the kernel
    return None if knows_nothing(merged) else merged


def _dynamic_partition_shape(ctx: InferenceContext) -> list[Shape]:
    """Every output is [?] + data.shape[partitions.rank:]: how many rows land in each partition is
    known only when the graph runs."""
    data, partitions = ctx.shape(0), ctx.shape(1)
    count = ctx.attr("num_partitions")
    if not has_rank(partitions):
        return [Shape.unknown()] * count
    try:
        data = merge_prefix(data, partitions)
    except ShapeError:
        ctx.fail(f"data.shape {data} must start with partitions.shape {partitions}")
    return [Shape([None]).concatenate(subshape(data, partitions.rank))] * count


# --- registrations --------------------------------------------------------------------------------

_SLICE_MASKS = ["begin_mask: int = 0", "end_mask: int = 0", "ellipsis_mask: int = 0",
                "new_axis_mask: int = 0", "shrink_axis_mask: int = 0"]

register("Slice", inputs=["input: T", "begin: Index", "size: Index"], outputs=["output: T"],
         attrs=["T: type", f"Index: {INDEX_TYPES}"], shape=_slice_shape, value=_slice_value)
register("StridedSlice", inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
         outputs=["output: T"], attrs=["T: type", "Index: {int16, int32, int64}", *_SLICE_MASKS],
         shape=_strided_slice_shape, value=_strided_slice_value)
register("StridedSliceGrad",
         inputs=["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"],
         outputs=["output: T"], attrs=["T: type", f"Index: {INDEX_TYPES}", *_SLICE_MASKS],
         shape=_strided_slice_grad_shape)

register("Gather", inputs=["params: Tparams", "indices: Tindices"], outputs=["output: Tparams"],
         attrs=["validate_indices: bool = true", "Tparams: type", f"Tindices: {INDEX_TYPES}"],
         shape=_gather_shape, value=_gather_value)
register("GatherV2", inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
         outputs=["output: Tparams"],
         attrs=["batch_dims: int = 0", "Tparams: type", "Tindices: {int16, int32, int64}",
                f"Taxis: {INDEX_TYPES}"],
         shape=_gather_v2_shape, value=_gather_v2_value)
register("GatherNd", inputs=["params: Tparams", "indices: Tindices"], outputs=["output: Tparams"],
         attrs=["Tparams: type", "Tindices: {int16, int32, int64}",
                "bad_indices_policy: string = ''"],
         shape=_gather_nd_shape)

register("UnravelIndex", inputs=["indices: Tidx", "dims: Tidx"], outputs=["output: Tidx"],
         attrs=[f"Tidx: {INDEX_TYPES_INT32}"], shape=_unravel_index_shape)

register("ScatterNd", inputs=["indices: Tindices", "updates: T", "shape: Tindices"],
         outputs=["output: T"],
         attrs=["T: type", "Tindices: {int16, int32, int64}", "bad_indices_policy: string = ''"],
         shape=_scatter_nd_shape)
for _name, _index_types in (("TensorScatterUpdate", "{int16, int32, int64, uint16}"),
                            ("TensorScatterAdd", INDEX_TYPES), ("TensorScatterSub", INDEX_TYPES),
                            ("TensorScatterMin", INDEX_TYPES), ("TensorScatterMax", INDEX_TYPES)):
    register(_name, inputs=["tensor: T", "indices: Tindices", "updates: T"], outputs=["output: T"],
             attrs=["T: type", f"Tindices: {_index_types}", "bad_indices_policy: string = ''"],
             shape=_tensor_scatter_shape)

for _name in ("DynamicStitch", "ParallelDynamicStitch"):
    register(_name, inputs=["indices: N * int32", "data: N * T"], outputs=["merged: T"],
             attrs=["N: int >= 1", "T: type"], shape=_dynamic_stitch_shape,
             value=_dynamic_stitch_value)
register("DynamicPartition", inputs=["data: T", "partitions: int32"],
         outputs=["outputs: num_partitions * T"], attrs=["num_partitions: int >= 1", "T: type"],
         shape=_dynamic_partition_shape)
