"""Array ops: shapes and sizes, reshaping, concatenation and splitting, packing and tiling,
Bitcast and EnsureShape. The rest of the family lives in siblings this module imports:
array_index.py (Slice, StridedSlice, Gather*, Scatter*, segment reductions, DynamicStitch),
array_select.py (Reverse*, OneHot, TopKV2, Where, Unique*, diagonal and band matrix ops) and
array_create.py (Pad*, Fill, Empty, Range, LinSpace, ZerosLike, OnesLike, broadcasting); shared
helpers are in array_common.py.

Shape functions follow TensorFlow's C++ shape functions, unknown dims and unknown rank included.
Value functions give the static value of output 0 for ops that carry shape-like integers, so that
Shape -> StridedSlice -> Pack -> Reshape chains give static shapes as in TensorFlow.
"""
from __future__ import annotations

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from . import array_create, array_index, array_select  # noqa: F401  (the rest of the family)
from .array_common import (INDEX_TYPES_INT32, add_dims, divide_dim, element_count, per_output,
                           knows_nothing, merge_dims, multiply_dims, partial_or_unknown,
                           partial_vector, register, replace_dim, scalar_int, shape_tensor,
                           shape_value, subshape)
from .inference import InferenceContext, element_product, may_build, merge_all, normalize_axis, scalar


def _passthrough_value(ctx: InferenceContext):
    return ctx.partial_value(0)


def _reshaped_value(shape_fn):
    """Value function for ops that only rearrange input 0 into the shape `shape_fn` infers."""
    def value(ctx: InferenceContext):
        data = ctx.partial_value(0)
        if data is None:
            return None
        shape = shape_fn(ctx)
        return data.reshape(shape.dims) if shape.fully_defined else None
    return value


# --- Shape, ShapeN, Size, Rank --------------------------------------------------------------------

def _shape_of_each_input(ctx: InferenceContext) -> list[Shape]:
    return [Shape([shape.rank]) for shape in ctx.shapes()]


def _shape_values(ctx: InferenceContext) -> list:
    return [shape_value(shape) for shape in ctx.shapes()]


def _size_value(ctx: InferenceContext):
    count = element_count(ctx.shape(0))
    return None if count is None else np.array(count, dtype=object)


def _rank_value(ctx: InferenceContext):
    rank = ctx.shape(0).rank
    return None if rank is None else np.array(rank, dtype=object)


# --- Reshape, Transpose, ExpandDims, Squeeze ------------------------------------------------------

def _known_product(shape: Shape) -> tuple[int, list[int]]:
    """(product of the known dims, indices of the unknown dims); a zero dim makes the count 0."""
    dims = tuple(shape)   # (callers know the rank)
    if 0 in dims:
        return 0, []
    product, unknown = 1, []
    for i, dim in enumerate(dims):
        if dim is None:
            unknown.append(i)
        else:
            product *= dim
    return product, unknown


def _reshape_shape(ctx: InferenceContext) -> Shape:
    target, source = shape_tensor(ctx, 1), ctx.shape(0)
    if not has_rank(target) or not has_rank(source):
        return target
    out_count, out_unknown = _known_product(target)
    in_count, in_unknown = _known_product(source)
    if len(out_unknown) > 1 or len(in_unknown) > 1:
        return target
    if not in_unknown and not out_unknown and in_count != out_count:
        ctx.fail(f"cannot reshape a tensor with {in_count} elements to shape {target} "
                 f"({out_count} elements)")
    if not in_unknown and out_unknown and out_count > 0:
        return replace_dim(target, out_unknown[0], divide_dim(in_count, out_count))
    if in_unknown and not out_unknown and in_count != 0:
        divide_dim(out_count, in_count)  # the input's unknown dim must come out whole
    return target


def _transpose_shape(ctx: InferenceContext) -> Shape:
    data, perm, perm_count = ctx.shape(0), ctx.int_list(1), ctx.shape(1).num_elements()
    if has_rank(data):
        rank = data.rank
    elif perm_count is not None:
        rank = perm_count
    elif perm is not None:
        rank = len(perm)
    else:
        return Shape.unknown()
    if not has_rank(data) and rank < 2:
        return data  # one perm entry fits a scalar as well as a vector
    data = ctx.with_rank(0, rank)
    merge_dims(ctx.with_rank(1, 1)[0], rank)
    if perm is None:
        return Shape.unknown_of_rank(rank)
    for axis in perm:
        if not -rank <= axis < rank:
            ctx.fail(f"perm dim {axis} is out of range of input rank {rank}")
    return Shape([data[axis] for axis in perm])


def _transpose_value(ctx: InferenceContext):
    data, perm = ctx.partial_value(0), ctx.int_list(1)
    if data is None or perm is None:
        return None
    if sorted(axis % data.ndim for axis in perm) != list(range(data.ndim)):
        return None  # not a permutation: the kernel reports it when it runs
    return np.transpose(data, perm)


def _expand_dims_shape(ctx: InferenceContext) -> Shape:
    axis, data = scalar_int(ctx, 1), ctx.shape(0)
    if axis is None or not has_rank(data):
        return Shape.unknown()
    axis = normalize_axis(ctx, axis, data.rank + 1, "dim")
    return Shape(data.dims[:axis] + (1,) + data.dims[axis:])


def _squeeze_shape(ctx: InferenceContext) -> Shape:
    data = ctx.shape(0)
    if not has_rank(data):
        return Shape.unknown()
    chosen = {normalize_axis(ctx, axis, data.rank, "squeeze dim")
              for axis in ctx.attr("squeeze_dims")}
    kept = []
    for i, dim in enumerate(data.dims):
        if i in chosen:
            if dim is not None and dim != 1:
                ctx.fail(f"cannot squeeze dim {i}: expected a dimension of 1, got {dim}")
            continue  # an unknown dim named explicitly must be 1 when the graph runs
        if not chosen and dim is None:
            return Shape.unknown()  # squeezing all 1s: whether this one goes is unknown
        if not chosen and dim == 1:
            continue
        kept.append(dim)
    return Shape(kept)


# --- Concat, ConcatOffset, Split ------------------------------------------------------------------

def _around_axis(shape: Shape, axis: int) -> tuple[Shape, int | None, Shape]:
    """(dims before `axis`, the dim at `axis`, dims after it); axis may be negative."""
    after = Shape.scalar() if axis == -1 else subshape(shape, axis + 1)
    return subshape(shape, 0, axis), shape[axis] if has_rank(shape) else None, after


def _concat_layout(ctx: InferenceContext) -> tuple[range, int]:
    """(the value inputs, the axis input): ConcatV2 takes the axis last, Concat first."""
    if ctx.op == "Concat":
        return range(1, ctx.num_inputs), 0
    return range(ctx.num_inputs - 1), ctx.num_inputs - 1


def _concat_shape(ctx: InferenceContext) -> Shape:
    values, axis_slot = _concat_layout(ctx)
    ctx.with_rank(axis_slot, 0)
    axis = scalar_int(ctx, axis_slot)
    if axis is None:
        rank = next((ctx.shape(i).rank for i in values if has_rank(ctx.shape(i))), None)
        if rank is None:
            return Shape.unknown()
        if rank == 0:
            ctx.fail("cannot concatenate scalars (use Pack)")
        for i in values:
            ctx.with_rank(i, rank)
        return Shape.unknown_of_rank(rank)
    min_rank = -axis if axis < 0 else axis + 1
    before, middle, after = _around_axis(ctx.with_rank_at_least(values[-1], min_rank), axis)
    for i in reversed(values[:-1]):
        other = ctx.with_rank_at_least(i, min_rank)
        other_before, other_middle, other_after = _around_axis(other, axis)
        try:
            before, after = before.merge(other_before), after.merge(other_after)
        except ShapeError as error:
            ctx.fail(f"input {i} does not fit the other inputs: {error}")
        middle = add_dims(middle, other_middle)
    return before.concatenate([middle]).concatenate(after)


def _concat_value(ctx: InferenceContext):
    values, axis_slot = _concat_layout(ctx)
    axis = scalar_int(ctx, axis_slot)
    if axis is None or not may_build(*(ctx.shape(i).num_elements() for i in values)):
        return None
    parts = [p for p in (partial_or_unknown(ctx, i) for i in values) if p is not None]
    if len(parts) != len(values):
        return None
    joined = np.concatenate(parts, axis=axis)
    return None if knows_nothing(joined) else joined


def _concat_offset_shapes(ctx: InferenceContext) -> list[Shape]:
    return ctx.shapes()[1:]


def _concat_offset_values(ctx: InferenceContext) -> list | None:
    """Where each input starts in the concatenation: 0 except along the axis, where it is the sum
    of the earlier inputs' sizes (known as long as those are)."""
    shapes = [s for s in (partial_or_unknown(ctx, i) for i in range(1, ctx.num_inputs)) if s is not None]
    axis = scalar_int(ctx, 0)
    if axis is None or len(shapes) != ctx.num_inputs - 1 or any(s.ndim != 1 for s in shapes):
        return None
    rank = len(shapes[0])
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return None
    offsets = []
    position: int | None = 0   # None once an earlier input's size is unknown
    for shape in shapes:
        offset = partial_vector([0] * rank)
        offset[axis] = position
        offsets.append(offset)
        position = None if position is None or shape[axis] is None else position + shape[axis]
    return offsets


def _split_axis(ctx: InferenceContext, slot: int, rank: int | None) -> int | None:
    """A known split axis made non-negative (TensorFlow's
    MakeDimForScalarInputWithNegativeIndexing)."""
    axis = scalar_int(ctx, slot)
    if axis is None:
        return None
    if axis < 0:
        if rank is None:
            return None
        if axis + rank < 0:
            ctx.fail(f"split dimension {axis} must be in range [{-rank}, {rank})")
        return axis + rank
    if rank is not None and 0 < rank <= axis:
        ctx.fail(f"split dimension {axis} must be in range [{-rank}, {rank})")
    return axis


def _split_shapes(ctx: InferenceContext) -> list[Shape]:
    data = ctx.shape(1)
    axis = _split_axis(ctx, 0, data.rank)
    if axis is None:
        piece = Shape.unknown_of_rank(data.rank) if has_rank(data) else Shape.unknown()
    else:
        data = ctx.with_rank_at_least(1, axis + 1)
        try:
            piece = replace_dim(data, axis, divide_dim(data[axis], ctx.num_outputs))
        except ShapeError as error:
            ctx.fail(f"the number of splits must evenly divide the split dimension: {error}")
    return [piece] * ctx.num_outputs


def _split_v_shapes(ctx: InferenceContext) -> list[Shape]:
    data, count = ctx.shape(0), ctx.num_outputs
    axis, sizes = _split_axis(ctx, 2, data.rank), ctx.int_list(1)
    if not has_rank(data):
        return [Shape.unknown()] * count
    if data.rank == 0:
        ctx.fail("cannot split a scalar")
    if sizes is None:
        if axis is None:
            return [Shape.unknown_of_rank(data.rank)] * count
        return [replace_dim(data, axis, None)] * count
    # With known sizes but an unknown axis TensorFlow splits the last axis; we do the same so
    # our shapes never know less than TensorFlow's.
    axis = data.rank - 1 if axis is None else axis
    if len(sizes) != count:
        ctx.fail(f"size_splits has {len(sizes)} entries for {count} outputs")
    if sizes.count(-1) > 1 or min(sizes, default=0) < -1:
        ctx.fail(f"size_splits {sizes} may hold only one -1 and no other negative size")
    total, whole = sum(s for s in sizes if s != -1), data[axis]
    if whole is not None and (total > whole if -1 in sizes else total != whole):
        ctx.fail(f"cannot split an axis of size {whole} into pieces of size {sizes}")
    inferred = None if whole is None else whole - total
    return [replace_dim(data, axis, inferred if s == -1 else s) for s in sizes]


def _split_values(ctx: InferenceContext) -> list | None:
    data, axis = ctx.partial_value(1), scalar_int(ctx, 0)
    if data is None or axis is None:
        return None
    return np.split(data, ctx.num_outputs, axis=axis)


def _split_v_values(ctx: InferenceContext) -> list | None:
    data, axis = ctx.partial_value(0), scalar_int(ctx, 2)
    if data is None or axis is None or ctx.int_list(1) is None:
        return None
    sizes = [piece[axis] for piece in _split_v_shapes(ctx)]  # with the -1 entry worked out
    return np.split(data, np.cumsum(sizes[:-1]), axis=axis)


# --- Pack, Unpack, Tile ---------------------------------------------------------------------------

def _pack_shape(ctx: InferenceContext) -> Shape:
    element = merge_all(ctx)
    if not has_rank(element):
        return Shape.unknown()
    axis = normalize_axis(ctx, ctx.attr("axis"), element.rank + 1)
    return Shape(element.dims[:axis] + (ctx.num_inputs,) + element.dims[axis:])


def _pack_value(ctx: InferenceContext):
    if not may_build(*(ctx.shape(i).num_elements() for i in range(ctx.num_inputs))):
        return None
    parts = [p for p in (partial_or_unknown(ctx, i) for i in range(ctx.num_inputs)) if p is not None]
    if len(parts) != ctx.num_inputs:
        return None
    stacked = np.stack(parts, axis=ctx.attr("axis"))
    return None if knows_nothing(stacked) else stacked


def _unpack_shapes(ctx: InferenceContext) -> list[Shape]:
    data = ctx.shape(0)
    if not has_rank(data):
        return [Shape.unknown()] * ctx.num_outputs
    axis = normalize_axis(ctx, ctx.attr("axis"), data.rank)
    merge_dims(data[axis], ctx.num_outputs)
    return [Shape(data.dims[:axis] + data.dims[axis + 1:])] * ctx.num_outputs


def _unpack_values(ctx: InferenceContext) -> list | None:
    data = ctx.partial_value(0)
    if data is None:
        return None
    return [np.take(data, i, axis=ctx.attr("axis")) for i in range(ctx.num_outputs)]


def _tile_shape(ctx: InferenceContext) -> Shape:
    data, multiples = ctx.shape(0), shape_tensor(ctx, 1)
    if has_rank(data):
        multiples = multiples.with_rank(data.rank)
        merge_dims(ctx.shape(1)[0], data.rank)
    if not has_rank(multiples):
        return Shape.unknown()
    data = ctx.with_rank(0, multiples.rank)
    return Shape([multiply_dims(d, m) for d, m in zip(data, multiples.dims)])


def _tile_value(ctx: InferenceContext):
    data, multiples = ctx.partial_value(0), ctx.int_list(1)
    if data is None or multiples is None or min(multiples, default=0) < 0:
        return None
    if not may_build(element_product([data.size, *multiples])):
        return None
    return np.tile(data, multiples)


# --- Bitcast, EnsureShape -------------------------------------------------------------------------

def _bitcast_shape(ctx: InferenceContext) -> Shape:
    data = ctx.shape(0)
    if not has_rank(data):
        return Shape.unknown()
    size_in, size_out = ctx.attr("T").itemsize, ctx.attr("type").itemsize
    if size_in == size_out:
        return data
    if size_in > size_out:
        return data.concatenate([size_in // size_out])
    data, ratio = ctx.with_rank_at_least(0, 1), size_out // size_in
    if data[-1] is not None and data[-1] != ratio:
        ctx.fail(f"cannot bitcast due to shape: last dimension {data[-1]} does not match {ratio}")
    return data[:-1]


def _ensure_shape_shape(ctx: InferenceContext) -> Shape:
    desired = ctx.attr("shape")
    if not has_rank(desired):
        # TensorFlow's shape function rejects this (asks for "rank -1"); nothing to check here.
        return ctx.shape(0)
    data = ctx.with_rank(0, desired.rank)
    try:
        return desired.merge(data)
    except ShapeError:
        ctx.fail(f"the input's shape {data} does not match the expected shape {desired}")


# --- registrations --------------------------------------------------------------------------------

_BITCAST_TYPES = ("{bfloat16, float16, float32, float64, int64, int32, uint8, uint16, uint32, "
                  "uint64, int8, int16, complex64, complex128, qint8, quint8, qint16, quint16, "
                  "qint32}")

register("Shape", inputs=["input: T"], outputs=["output: out_type"],
         attrs=["T: type", f"out_type: {INDEX_TYPES_INT32}"], shape=_shape_of_each_input,
         value=per_output(_shape_values))
register("ShapeN", inputs=["input: N * T"], outputs=["output: N * out_type"],
         attrs=["N: int >= 1", "T: type", f"out_type: {INDEX_TYPES_INT32}"],
         shape=_shape_of_each_input, value=per_output(_shape_values))
register("Size", inputs=["input: T"], outputs=["output: out_type"],
         attrs=["T: type", f"out_type: {INDEX_TYPES_INT32}"], shape=scalar, value=_size_value)
register("Rank", inputs=["input: T"], outputs=["output: int32"], attrs=["T: type"],
         shape=scalar, value=_rank_value)

register("Reshape", inputs=["tensor: T", "shape: Tshape"], outputs=["output: T"],
         attrs=["T: type", f"Tshape: {INDEX_TYPES_INT32}"],
         shape=_reshape_shape, value=_reshaped_value(_reshape_shape))
register("Transpose", inputs=["x: T", "perm: Tperm"], outputs=["y: T"],
         attrs=["T: type", f"Tperm: {INDEX_TYPES_INT32}"], shape=_transpose_shape,
         value=_transpose_value)
# Transpose that also conjugates complex values (tf.linalg.adjoint).
register("ConjugateTranspose", inputs=["x: T", "perm: Tperm"], outputs=["y: T"],
         attrs=["T: type", f"Tperm: {INDEX_TYPES_INT32}"], shape=_transpose_shape)
register("ExpandDims", inputs=["input: T", "dim: Tdim"], outputs=["output: T"],
         attrs=["T: type", f"Tdim: {INDEX_TYPES_INT32}"],
         shape=_expand_dims_shape, value=_reshaped_value(_expand_dims_shape))
register("Squeeze", inputs=["input: T"], outputs=["output: T"],
         attrs=["T: type", "squeeze_dims: list(int) >= 0 = []"],
         shape=_squeeze_shape, value=_reshaped_value(_squeeze_shape))

register("ConcatV2", inputs=["values: N * T", "axis: Tidx"], outputs=["output: T"],
         attrs=["N: int >= 2", "T: type", f"Tidx: {INDEX_TYPES_INT32}"],
         shape=_concat_shape, value=_concat_value)
register("Concat", inputs=["concat_dim: int32", "values: N * T"], outputs=["output: T"],
         attrs=["N: int >= 2", "T: type"], shape=_concat_shape, value=_concat_value)
register("ConcatOffset", inputs=["concat_dim: int32", "shape: N * shape_type"],
         outputs=["offset: N * shape_type"],
         attrs=["N: int >= 2", f"shape_type: {INDEX_TYPES_INT32}"],
         shape=_concat_offset_shapes, value=per_output(_concat_offset_values))
register("Split", inputs=["split_dim: int32", "value: T"], outputs=["output: num_split * T"],
         attrs=["num_split: int >= 1", "T: type"], shape=_split_shapes,
         value=per_output(_split_values))
register("SplitV", inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
         outputs=["output: num_split * T"],
         attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = DT_INT64"],
         shape=_split_v_shapes, value=per_output(_split_v_values))

register("Pack", inputs=["values: N * T"], outputs=["output: T"],
         attrs=["N: int >= 1", "T: type", "axis: int = 0"], shape=_pack_shape, value=_pack_value)
register("Unpack", inputs=["value: T"], outputs=["output: num * T"],
         attrs=["num: int >= 0", "T: type", "axis: int = 0"], shape=_unpack_shapes,
         value=per_output(_unpack_values))
register("Tile", inputs=["input: T", "multiples: Tmultiples"], outputs=["output: T"],
         attrs=["T: type", f"Tmultiples: {INDEX_TYPES_INT32}"], shape=_tile_shape,
         value=_tile_value)

register("Bitcast", inputs=["input: T"], outputs=["output: type"],
         attrs=[f"T: {_BITCAST_TYPES}", f"type: {_BITCAST_TYPES}"], shape=_bitcast_shape)
register("EnsureShape", inputs=["input: T"], outputs=["output: T"],
         attrs=["shape: shape", "T: type"],
         shape=_ensure_shape_shape, value=_passthrough_value)
