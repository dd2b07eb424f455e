"""Array ops that pick, reorder or place elements: Reverse*, ReverseSequence, OneHot, TopKV2,
Where, Unique*, ListDiff, InvertPermutation, and the diagonal/band matrix ops. Part of the "array"
family (imported by graphtool.ops.array).
"""
from __future__ import annotations

import numpy as np

from ..shapes import Shape, has_rank
from .array_common import (INDEX_TYPES, INDEX_TYPES_INT32, per_output, merge_dims, min_dims,
                           partial_vector, register, replace_dim, scalar_dim, scalar_int, subshape)
from .inference import InferenceContext, normalize_axis, unchanged

# --- Reverse, ReverseSequence ---------------------------------------------------------------------

_MAX_REVERSE_RANK = 8


def _checked_reverse_rank(ctx: InferenceContext, data: Shape) -> Shape:
    if has_rank(data) and data.rank > _MAX_REVERSE_RANK:
        ctx.fail(f"reverse does not work on tensors with more than {_MAX_REVERSE_RANK} dimensions")
    return data


def _reverse_v2_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 1)
    data, axes = _checked_reverse_rank(ctx, ctx.shape(0)), ctx.int_list(1)
    if axes is not None and has_rank(data):
        canonical = [normalize_axis(ctx, axis, data.rank) for axis in axes]
        repeated = {axis for axis in canonical if canonical.count(axis) > 1}
        if repeated:
            ctx.fail(f"axis {min(repeated)} specified more than once")
    return data


def _reverse_shape(ctx: InferenceContext) -> Shape:
    count, data = ctx.with_rank(1, 1)[0], ctx.shape(0)
    if count is not None:
        data = ctx.with_rank(0, count)
    return _checked_reverse_rank(ctx, data)


def _reversed_value(axes_of):
    """Value function flipping input 0 along the axes `axes_of(value of input 1)` names."""
    def value(ctx: InferenceContext):
        data, axes = ctx.partial_value(0), ctx.value(1)
        return None if data is None or axes is None else np.flip(data, axes_of(axes))
    return value


def _reverse_sequence_shape(ctx: InferenceContext) -> Shape:
    data, lengths = ctx.shape(0), ctx.with_rank(1, 1)
    if not has_rank(data):
        return Shape.unknown()
    batch_dim = ctx.attr("batch_dim")
    for name in ("batch_dim", "seq_dim"):
        if ctx.attr(name) >= data.rank:
            ctx.fail(f"{name} must be < input rank: {ctx.attr(name)} vs. {data.rank}")
    return replace_dim(data, batch_dim, merge_dims(data[batch_dim], lengths[0]))


# --- OneHot, TopKV2, Where, Unique*, ListDiff, InvertPermutation ----------------------------------

def _one_hot_shape(ctx: InferenceContext) -> Shape:
    axis = ctx.attr("axis")
    if axis < -1:
        ctx.fail(f"axis must be >= -1, got {axis}")
    depth, indices = scalar_dim(ctx, 1), ctx.shape(0)
    if not has_rank(indices):
        return Shape.unknown()
    at = (axis + indices.rank + 1) % (indices.rank + 1)
    return Shape(indices.dims[:at] + (depth,) + indices.dims[at:])


def _top_k_shapes(ctx: InferenceContext) -> list[Shape]:
    data, k = ctx.with_rank_at_least(0, 1), scalar_dim(ctx, 1)
    last = data[-1] if has_rank(data) else None
    if last is not None and k is not None and last < k:
        ctx.fail(f"input must have last dimension >= k = {k} but is {last}")
    values = subshape(data, 0, -1).concatenate([k])
    return [values, values]


def _where_shape(ctx: InferenceContext) -> Shape:
    return Shape([None, ctx.shape(0).rank])


def _same_rank_unknown(shape: Shape) -> Shape:
    return Shape.unknown_of_rank(shape.rank) if has_rank(shape) else Shape.unknown()


def _unique_index_shape(ctx: InferenceContext, data: Shape) -> Shape:
    """UniqueV2's idx: one entry per slice along the axis; an empty axis means a vector input."""
    axis = ctx.int_list(1)
    if axis is None:
        return Shape([None])
    if not axis:
        return ctx.with_rank(0, 1)
    if not has_rank(data):
        return Shape([None])
    index = normalize_axis(ctx, axis[0], data.rank)
    return Shape([data[index]])


def _unique_shapes(counts: bool, along_axis: bool):
    """Unique / UniqueV2 / UniqueWithCounts(V2): the unique values (a vector of unknown length, or
    slices along an axis), the index of every input element (or slice), and maybe the counts."""
    def shapes(ctx: InferenceContext) -> list[Shape]:
        data = ctx.shape(0)
        if not along_axis and not counts:
            ctx.with_rank(0, 1)
        if along_axis:
            return [_same_rank_unknown(data), _unique_index_shape(ctx, data)] + ([Shape([None])] if counts else [])
        return [Shape([None]), data] + ([Shape([None])] if counts else [])
    return shapes


def _list_diff_shapes(ctx: InferenceContext) -> list[Shape]:
    for i in range(2):
        ctx.with_rank(i, 1)
    return [Shape([None]), Shape([None])]


def _list_diff_values(ctx: InferenceContext) -> list | None:
    """The entries of x not in y, and where they are in x. TensorFlow folds ListDiff of constants
    while inferring shapes (the Prod gradient builds a permutation with it)."""
    x, y = ctx.value(0), ctx.value(1)
    if x is None or y is None:
        return None
    excluded = set(y.tolist())
    kept = [i for i, entry in enumerate(x.tolist()) if entry not in excluded]
    return [x[kept], partial_vector(kept)]


def _vector_shape(ctx: InferenceContext) -> Shape:
    return ctx.with_rank(0, 1)


def _invert_permutation_value(ctx: InferenceContext):
    perm = ctx.int_list(0)
    if perm is None or sorted(perm) != list(range(len(perm))):
        return None
    return partial_vector(np.argsort(perm).tolist())


# --- diagonal and band matrix ops -----------------------------------------------------------------

def _diag_shape(ctx: InferenceContext) -> Shape:
    diagonal = ctx.with_rank_at_least(0, 1)
    return diagonal.concatenate(diagonal)


def _diag_part_shape(ctx: InferenceContext) -> Shape:
    data = ctx.shape(0)
    if not has_rank(data):
        return Shape.unknown()
    if data.rank == 0 or data.rank % 2:
        ctx.fail(f"input must have even and non-zero rank, input rank is {data.rank}")
    half = data.rank // 2
    return Shape([merge_dims(a, b) for a, b in zip(data.dims[:half], data.dims[half:])])


def _matrix_diag_shape(ctx: InferenceContext) -> Shape:
    diagonal = ctx.with_rank_at_least(0, 1)
    return diagonal.concatenate([diagonal[-1]]) if has_rank(diagonal) else Shape.unknown()


def _matrix_diag_part_shape(ctx: InferenceContext) -> Shape:
    matrix = ctx.with_rank_at_least(0, 2)
    if not has_rank(matrix):
        return Shape.unknown()
    return Shape(matrix.dims[:-2] + (min_dims(matrix[-2], matrix[-1]),))


def _diagonal_offsets(ctx: InferenceContext, slot: int) -> tuple[int, int] | None:
    """(lower, upper) from input `slot` (k: one offset or a pair) when known."""
    k_shape = ctx.shape(slot)
    if has_rank(k_shape) and k_shape.rank > 1:
        ctx.fail(f"k must be a scalar or a vector, has shape {ctx.shape(slot)}")
    k = ctx.int_list(slot)
    if k is None:
        return None
    if len(k) not in (1, 2):
        ctx.fail(f"k must hold 1 or 2 diagonal offsets, has {len(k)}")
    if k[0] > k[-1]:
        ctx.fail("lower_diag_index is greater than upper_diag_index")
    return k[0], k[-1]


def _check_offsets_fit(ctx: InferenceContext, lower: int, upper: int, rows, cols) -> None:
    if rows is None or cols is None:
        return
    for name, offset in (("lower", lower), ("upper", upper)):
        if offset != 0 and not -rows < offset < cols:
            ctx.fail(f"{name}_diag_index {offset} is out of bounds for a {rows}x{cols} matrix")


def _matrix_diag_v2_shape(ctx: InferenceContext) -> Shape:
    diagonal = ctx.with_rank_at_least(0, 1)
    for i in (2, 3, 4):
        ctx.with_rank(i, 0)
    offsets = _diagonal_offsets(ctx, 1)
    if not has_rank(diagonal) or offsets is None:
        return Shape.unknown()
    lower, upper = offsets
    band = lower < upper
    if band and diagonal.rank >= 2 and diagonal[-2] not in (None, upper - lower + 1):
        ctx.fail(f"diagonal has {diagonal[-2]} rows but k = ({lower}, {upper}) implies "
                 f"{upper - lower + 1}")
    rows, cols = scalar_int(ctx, 2), scalar_int(ctx, 3)
    length = diagonal[-1]
    if length is not None and rows is not None and cols is not None:
        rows, cols = _matrix_size(ctx, length, lower, upper, rows, cols)
    else:
        # TensorFlow computes with -1 for what is unknown here (it can infer 0x0 matrices); we
        # leave the sizes the graph does not give unknown.
        rows, cols = (None if size is None or size < 0 else size for size in (rows, cols))
    batch = diagonal.dims[:-2] if band else diagonal.dims[:-1]
    return Shape(batch + (rows, cols))


def _matrix_size(ctx, length: int, lower: int, upper: int, rows: int, cols: int) -> tuple[int, int]:
    """MatrixDiag's output rows and columns; -1 means "the smallest that fits the diagonals"."""
    min_rows, min_cols = length - min(upper, 0), length + max(lower, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if rows != min_rows and cols != min_cols:
        ctx.fail(f"num_rows = {rows} and num_cols = {cols} do not fit the diagonals "
                 f"(at least {min_rows} rows and {min_cols} columns)")
    return rows, cols


def _matrix_diag_part_v2_shape(ctx: InferenceContext) -> Shape:
    matrix = ctx.with_rank_at_least(0, 2)
    ctx.with_rank(2, 0)
    offsets = _diagonal_offsets(ctx, 1)
    if not has_rank(matrix) or offsets is None:
        return Shape.unknown()
    lower, upper = offsets
    rows, cols = matrix[-2], matrix[-1]
    _check_offsets_fit(ctx, lower, upper, rows, cols)
    length = None
    if rows is not None and cols is not None:
        length = min(rows + min(upper, 0), cols - max(lower, 0))
    count = (upper - lower + 1,) if lower < upper else ()
    return Shape(matrix.dims[:-2] + count + (length,))


def _with_diagonal_batch(matrix: Shape, diagonal: Shape, diagonal_dims: int) -> Shape:
    """The matrix shape refined by the batch dims of `diagonal` (whose last `diagonal_dims` dims
    are the diagonals themselves)."""
    if not has_rank(diagonal) or matrix.fully_defined:
        return matrix
    return matrix.merge(subshape(diagonal, 0, -diagonal_dims).concatenate([None, None]))


def _matrix_set_diag_shape(ctx: InferenceContext) -> Shape:
    matrix, diagonal = ctx.with_rank_at_least(0, 2), ctx.with_rank_at_least(1, 1)
    if has_rank(matrix):
        diagonal = ctx.with_rank(1, matrix.rank - 1)
    merge_dims(min_dims(matrix[-2], matrix[-1]), diagonal[-1])
    return _with_diagonal_batch(matrix, diagonal, 1)


def _matrix_set_diag_v2_shape(ctx: InferenceContext) -> Shape:
    matrix, diagonal = ctx.with_rank_at_least(0, 2), ctx.with_rank_at_least(1, 1)
    offsets = _diagonal_offsets(ctx, 2)
    lower, upper = offsets or (0, 0)
    if has_rank(matrix):
        if offsets is not None:
            diagonal = ctx.with_rank(1, matrix.rank - 1 if lower == upper else matrix.rank)
        elif has_rank(diagonal) and not matrix.rank - 1 <= diagonal.rank <= matrix.rank:
            ctx.fail(f"diagonal of shape {diagonal} does not fit a matrix of shape {matrix}")
        _check_offsets_fit(ctx, lower, upper, matrix[-2], matrix[-1])
    return _with_diagonal_batch(matrix, diagonal, 1 if lower == upper else 2)


# --- registrations --------------------------------------------------------------------------------

_REVERSE_TYPES = ("{uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, bfloat16, "
                  "float16, float32, float64, complex64, complex128, string}")
_TOP_K_TYPES = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, float16, "
                "uint32, uint64}")
_WHERE_TYPES = ("{float32, float64, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
                "qint32, bfloat16, qint16, quint16, uint16, complex128, float16, uint32, uint64, "
                "bool} = DT_BOOL")
_DIAG_TYPES = "{bfloat16, float16, float32, float64, int32, int64, complex64, complex128}"
_ALIGN = "align: {'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'} = 'RIGHT_LEFT'"
_OUT_IDX = f"out_idx: {INDEX_TYPES_INT32}"
_AXIS_TYPES = f"Taxis: {INDEX_TYPES} = DT_INT64"

register("ReverseV2", inputs=["tensor: T", "axis: Tidx"], outputs=["output: T"],
         attrs=[f"Tidx: {INDEX_TYPES_INT32}", f"T: {_REVERSE_TYPES}"], shape=_reverse_v2_shape,
         value=_reversed_value(lambda axes: tuple(int(a) for a in axes.ravel())))
register("Reverse", inputs=["tensor: T", "dims: bool"], outputs=["output: T"],
         attrs=[f"T: {_REVERSE_TYPES}"], shape=_reverse_shape,
         value=_reversed_value(lambda flags: tuple(np.flatnonzero(flags).tolist())))
register("ReverseSequence", inputs=["input: T", "seq_lengths: Tlen"], outputs=["output: T"],
         attrs=["seq_dim: int", "batch_dim: int = 0", "T: type", f"Tlen: {INDEX_TYPES} = DT_INT64"],
         shape=_reverse_sequence_shape)

register("OneHot", inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
         outputs=["output: T"],
         attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = DT_INT64"],
         shape=_one_hot_shape)
register("TopKV2", inputs=["input: T", "k: Tk"], outputs=["values: T", "indices: index_type"],
         attrs=["sorted: bool = true", f"T: {_TOP_K_TYPES}", "Tk: {int16, int32, int64} = DT_INT32",
                "index_type: {int16, int32, int64} = DT_INT32"],
         shape=_top_k_shapes)
register("Where", inputs=["input: T"], outputs=["index: int64"], attrs=[f"T: {_WHERE_TYPES}"],
         shape=_where_shape)

register("Unique", inputs=["x: T"], outputs=["y: T", "idx: out_idx"], attrs=["T: type", _OUT_IDX],
         shape=_unique_shapes(counts=False, along_axis=False))
register("UniqueV2", inputs=["x: T", "axis: Taxis"], outputs=["y: T", "idx: out_idx"],
         attrs=["T: type", _AXIS_TYPES, _OUT_IDX],
         shape=_unique_shapes(counts=False, along_axis=True))
register("UniqueWithCounts", inputs=["x: T"], outputs=["y: T", "idx: out_idx", "count: out_idx"],
         attrs=["T: type", _OUT_IDX], shape=_unique_shapes(counts=True, along_axis=False))
register("UniqueWithCountsV2", inputs=["x: T", "axis: Taxis"],
         outputs=["y: T", "idx: out_idx", "count: out_idx"],
         attrs=["T: type", _AXIS_TYPES, _OUT_IDX],
         shape=_unique_shapes(counts=True, along_axis=True))
register("ListDiff", inputs=["x: T", "y: T"], outputs=["out: T", "idx: out_idx"],
         attrs=["T: type", _OUT_IDX], shape=_list_diff_shapes,
         value=per_output(_list_diff_values))
register("InvertPermutation", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {INDEX_TYPES_INT32}"],
         shape=_vector_shape, value=_invert_permutation_value)

register("MatrixBandPart", inputs=["input: T", "num_lower: Tindex", "num_upper: Tindex"],
         outputs=["band: T"], attrs=["T: type", f"Tindex: {INDEX_TYPES} = DT_INT64"],
         shape=unchanged)
register("Diag", inputs=["diagonal: T"], outputs=["output: T"], attrs=[f"T: {_DIAG_TYPES}"],
         shape=_diag_shape)
register("DiagPart", inputs=["input: T"], outputs=["diagonal: T"], attrs=[f"T: {_DIAG_TYPES}"],
         shape=_diag_part_shape)
register("MatrixDiag", inputs=["diagonal: T"], outputs=["output: T"], attrs=["T: type"],
         shape=_matrix_diag_shape)
register("MatrixDiagPart", inputs=["input: T"], outputs=["diagonal: T"], attrs=["T: type"],
         shape=_matrix_diag_part_shape)
register("MatrixSetDiag", inputs=["input: T", "diagonal: T"], outputs=["output: T"],
         attrs=["T: type"],
         shape=_matrix_set_diag_shape)
for _version, _extra in (("V2", []), ("V3", [_ALIGN])):
    register(f"MatrixDiag{_version}",
             inputs=["diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32",
                     "padding_value: T"],
             outputs=["output: T"], attrs=["T: type", *_extra], shape=_matrix_diag_v2_shape)
    register(f"MatrixDiagPart{_version}", inputs=["input: T", "k: int32", "padding_value: T"],
             outputs=["diagonal: T"], attrs=["T: type", *_extra], shape=_matrix_diag_part_v2_shape)
    register(f"MatrixSetDiag{_version}", inputs=["input: T", "diagonal: T", "k: int32"],
             outputs=["output: T"], attrs=["T: type", *_extra], shape=_matrix_set_diag_v2_shape)
