"""Gradients of index-driven array ops: gathers, scatters, stitching, top-k, diagonals, bands and
Fill (TensorFlow's array_grad.py semantics, with dense gradients where TF uses IndexedSlices).

The adjoint of reading at indices is adding at those indices (UnsortedSegmentSum, ScatterNd) and
the adjoint of writing at indices is reading there (GatherNd); index inputs get no gradient.
"""
from __future__ import annotations

from ..errors import RuntimeFailure
from ..shapes import has_rank
from .op_utils import (INDEX, as_int32, emit, grad_or_zeros, input_shape_tensor, int_const, mul, neg,
                       scalar, static_value, total)
from .registry import GradContext, gradient


class _ShapeOf:
    """Pieces of forward input i's shape as int32 tensors: Consts when statically known, else
    slices of a Shape op."""

    def __init__(self, ctx: GradContext, i: int):
        self.ctx, self.static = ctx, ctx.input_shape(i)
        self._dynamic = None
        self._value = ctx.input(i)

    def _shape(self):
        if self._dynamic is None:
            self._dynamic = self.ctx.b.op("Shape", [self._value], out_type=INDEX)
        return self._dynamic

    def dims(self, start: int, stop: int):
        """shape[start:stop] as an int32 vector."""
        known = self.static.as_list()[start:stop]
        if all(d is not None for d in known):
            return int_const(self.ctx.b, known)
        b = self.ctx.b
        return emit(self.ctx, "Slice", self._shape(), int_const(b, [start]), int_const(b, [stop - start]))

    def size(self, start: int, stop: int):
        """The product of shape[start:stop] as an int32 scalar."""
        known = self.static.as_list()[start:stop]
        if all(d is not None for d in known):
            product = 1
            for d in known:
                product *= d
            return int_const(self.ctx.b, product)
        return emit(self.ctx, "Prod", self.dims(start, stop), int_const(self.ctx.b, 0))


def _concat(ctx: GradContext, pieces: list):
    return emit(ctx, "ConcatV2", pieces, int_const(ctx.b, 0))


def _gather_grad(ctx: GradContext, grad, axis: int, batch_dims: int):
    """The params gradient of gathering along `axis` with `batch_dims` leading batch dims.

    The gradient g is laid out [batch, outer, indices, inner] (outer: params dims between the
    batch dims and axis). Moving the indices dims before outer and flattening makes it
    [B*I, outer, inner]; row r of it adds into params row indices[r] of batch r // I, so one
    UnsortedSegmentSum over ids offset by batch * P (P = params.shape[axis]) sums every
    gathered row. The result, [B*P, outer, inner], is reshaped and transposed back."""
    params_rank, indices_rank = ctx.input_shape(0).rank, ctx.input_shape(1).rank
    n_outer, n_indices = axis - batch_dims, indices_rank - batch_dims
    n_inner = params_rank - axis - 1
    batch = list(range(batch_dims))
    outer = list(range(batch_dims, axis))
    index_dims = list(range(axis, axis + n_indices))
    inner = list(range(axis + n_indices, axis + n_indices + n_inner))
    moved = emit(ctx, "Transpose", grad, int_const(ctx.b, batch + index_dims + outer + inner))
    params, indices = _ShapeOf(ctx, 0), _ShapeOf(ctx, 1)
    batch_size, rows = params.size(0, batch_dims), params.dims(axis, axis + 1)
    rest = _concat(ctx, [params.dims(batch_dims, axis), params.dims(axis + 1, params_rank)])
    flat_grad = emit(ctx, "Reshape", moved, _concat(ctx, [int_const(ctx.b, [-1]), rest]))
    grid = emit(ctx, "Reshape", as_int32(ctx, ctx.input(1)),
               emit(ctx, "Pack", [batch_size, indices.size(batch_dims, indices_rank)], axis=0))
    batch_offsets = mul(ctx, emit(ctx, "Range", int_const(ctx.b, 0), batch_size, int_const(ctx.b, 1)),
                        emit(ctx, "Reshape", rows, int_const(ctx.b, [])))
    ids = emit(ctx, "AddV2", grid, emit(ctx, "ExpandDims", batch_offsets, int_const(ctx.b, 1)))
    segments = mul(ctx, batch_size, emit(ctx, "Reshape", rows, int_const(ctx.b, [])))
    flat_ids = emit(ctx, "Reshape", ids, int_const(ctx.b, [-1]))
    summed = emit(ctx, "UnsortedSegmentSum", flat_grad, flat_ids, segments)
    unflat = emit(ctx, "Reshape", summed, _concat(ctx, [params.dims(0, batch_dims), rows, rest]))
    # unflat is [batch, P, outer, inner]; params are [batch, outer, P, inner].
    back = batch + [batch_dims + 1 + i for i in range(n_outer)] + [batch_dims] \
        + list(range(axis + 1, params_rank))
    return emit(ctx, "Transpose", unflat, int_const(ctx.b, back))


def _require_static_gather(ctx: GradContext, axis) -> None:
    if axis is None or ctx.input_shape(0).rank is None or ctx.input_shape(1).rank is None:
        raise RuntimeFailure(
            f"node '{ctx.node.name}' ({ctx.node.op}): its gradient needs a constant axis and params "
            f"and indices of known rank")


@gradient("Gather")
def _gather_v1_grad(ctx, grads):
    _require_static_gather(ctx, 0)
    return [_gather_grad(ctx, grads[0], 0, 0), None]


@gradient("GatherV2")
def _gather_v2_grad(ctx, grads):
    axis = static_value(ctx, 2)
    _require_static_gather(ctx, axis)
    params_rank, indices_rank = ctx.input_shape(0).rank, ctx.input_shape(1).rank
    batch_dims = ctx.attr("batch_dims")
    batch_dims = batch_dims + indices_rank if batch_dims < 0 else batch_dims
    return [_gather_grad(ctx, grads[0], int(axis) % params_rank, batch_dims), None, None]


def _shape_in_index_type(ctx: GradContext, i: int, index_slot: int):
    """Forward input i's shape in the dtype of the index input at `index_slot` (ScatterNd wants
    its shape and indices in one type)."""
    shape = input_shape_tensor(ctx, i)
    index_dtype = ctx.input_dtype(index_slot).base
    return shape if index_dtype.name == "int32" else emit(ctx, "Cast", shape, DstT=index_dtype)


@gradient("GatherNd")
def _gather_nd_grad(ctx, grads):
    return [emit(ctx, "ScatterNd", ctx.input(1), grads[0], _shape_in_index_type(ctx, 0, 1)), None]


@gradient("ScatterNd")
def _scatter_nd_grad(ctx, grads):
    return [None, emit(ctx, "GatherNd", grads[0], ctx.input(0)), None]


@gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(ctx, grads):
    # Overwritten elements of the tensor get no gradient; the updates get what reached them.
    g, indices = grads[0], ctx.input(1)
    cleared = emit(ctx, "TensorScatterUpdate", g, indices, emit(ctx, "ZerosLike", ctx.input(2)))
    return [cleared, None, emit(ctx, "GatherNd", g, indices)]


@gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(ctx, grads):
    return [grads[0], None, emit(ctx, "GatherNd", grads[0], ctx.input(1))]


@gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(ctx, grads):
    return [grads[0], None, neg(ctx, emit(ctx, "GatherNd", grads[0], ctx.input(1)))]


@gradient("TensorScatterMax", "TensorScatterMin")
def _tensor_scatter_extremum_grad(ctx, grads):
    """Each output element's gradient is shared among the candidates (the tensor's element and
    the updates written there) equal to the result."""
    g, tensor, indices, updates = grads[0], ctx.input(0), ctx.input(1), ctx.input(2)
    dtype, output = ctx.input_dtype(0), ctx.output(0)
    tensor_won = emit(ctx, "Cast", emit(ctx, "Equal", tensor, output), DstT=dtype)
    update_won = emit(ctx, "Cast", emit(ctx, "Equal", updates, emit(ctx, "GatherNd", output, indices)), DstT=dtype)
    winners = emit(ctx, "AddV2", tensor_won,
                  emit(ctx, "ScatterNd", indices, update_won, _shape_in_index_type(ctx, 0, 1)))
    share = emit(ctx, "RealDiv", g, winners)
    return [mul(ctx, share, tensor_won), None, mul(ctx, emit(ctx, "GatherNd", share, indices), update_won)]


@gradient("DynamicStitch", "ParallelDynamicStitch")
def _dynamic_stitch_grad(ctx, grads):
    """data[i] gets the gradient at the slots indices[i] names, except where a later data element
    was written to the same slot: stitching element ids instead of data finds each slot's
    winner."""
    b, g = ctx.b, grads[0]
    n = ctx.num_inputs // 2
    indices = [ctx.input(i) for i in range(n)]
    ids, offset = [], int_const(b, 0)
    for index in indices:
        count = emit(ctx, "Size", index, out_type=INDEX)
        span = emit(ctx, "Range", offset, emit(ctx, "AddV2", offset, count), int_const(b, 1))
        ids.append(emit(ctx, "Reshape", span, emit(ctx, "Shape", index, out_type=INDEX)))
        offset = emit(ctx, "AddV2", offset, count)
    winners = emit(ctx, "DynamicStitch", indices, ids)
    result = [None] * n
    for i, (index, element_ids) in enumerate(zip(indices, ids)):
        won = emit(ctx, "Equal", emit(ctx, "GatherV2", winners, index, int_const(b, 0)), element_ids)
        gathered = emit(ctx, "GatherV2", g, index, int_const(b, 0))
        result.append(mul(ctx, gathered, _broadcast_rows(ctx, won, index, gathered)))
    return result


def _broadcast_rows(ctx: GradContext, mask, index, like):
    """A boolean mask shaped like `index` as a 0/1 tensor that broadcasts over `like`'s trailing
    dims."""
    b = ctx.b
    extra = emit(ctx, "Sub", emit(ctx, "Rank", like), emit(ctx, "Rank", index))
    ones = emit(ctx, "Fill", emit(ctx, "Reshape", extra, int_const(b, [1])), int_const(b, 1))
    shape = _concat(ctx, [emit(ctx, "Shape", index, out_type=INDEX), ones])
    return emit(ctx, "Reshape", emit(ctx, "Cast", mask, DstT=b.dtype(like)), shape)


@gradient("TopKV2")
def _top_k_grad(ctx, grads):
    """Each top value's gradient goes back to the input position it came from: one-hot rows of
    the indices, weighted by the gradient and summed over the k picks."""
    b = ctx.b
    values_grad = grad_or_zeros(ctx, grads, 0)
    shape = ctx.input_shape(0)
    if has_rank(shape) and shape[-1] is not None:
        depth = int_const(b, shape[-1])
    else:
        depth = emit(ctx, "StridedSlice", emit(ctx, "Shape", ctx.input(0), out_type=INDEX), int_const(b, [-1]),
                    int_const(b, [0]), int_const(b, [1]), end_mask=1, shrink_axis_mask=1)
    dtype = ctx.input_dtype(0)
    one_hot = emit(ctx, "OneHot", ctx.output(1), depth, b.const(1.0, dtype=dtype), b.const(0.0, dtype=dtype))
    spread = mul(ctx, emit(ctx, "ExpandDims", values_grad, int_const(b, -1)), one_hot)
    return [emit(ctx, "Sum", spread, int_const(b, -2)), None]


@gradient("Fill")
def _fill_grad(ctx, grads):
    return [None, total(ctx, grads[0])]


# --- diagonals and bands -----------------------------------------------------------------------

@gradient("Diag")
def _diag_grad(ctx, grads):
    return [emit(ctx, "DiagPart", grads[0])]


@gradient("DiagPart")
def _diag_part_grad(ctx, grads):
    return [emit(ctx, "Diag", grads[0])]


@gradient("MatrixDiag")
def _matrix_diag_grad(ctx, grads):
    return [emit(ctx, "MatrixDiagPart", grads[0])]


@gradient("MatrixDiagPart")
def _matrix_diag_part_grad(ctx, grads):
    # MatrixSetDiag into zeros also covers non-square matrices.
    return [emit(ctx, "MatrixSetDiag", emit(ctx, "ZerosLike", ctx.input(0)), grads[0])]


@gradient("MatrixSetDiag")
def _matrix_set_diag_grad(ctx, grads):
    g = grads[0]
    return [emit(ctx, "MatrixSetDiag", g, emit(ctx, "ZerosLike", ctx.input(1))), emit(ctx, "MatrixDiagPart", g)]


def _versioned(ctx: GradContext, base: str) -> tuple[str, dict]:
    """The V2 or V3 spelling of a diagonal op matching the forward op, with V3's align attr."""
    if ctx.node.op.endswith("V3"):
        return base + "V3", {"align": ctx.attr("align")}
    return base + "V2", {}


def _diag_part(ctx: GradContext, value, k):
    op, attrs = _versioned(ctx, "MatrixDiagPart")
    return emit(ctx, op, value, k, scalar(ctx, 0.0, value), **attrs)


@gradient("MatrixDiagV2", "MatrixDiagV3")
def _matrix_diag_v2_grad(ctx, grads):
    """The diagonals' gradient is the same band of g; the padding value fills everything off the
    band, so it gets the rest of g's total (TensorFlow returns none for it)."""
    g = grads[0]
    part = _diag_part(ctx, g, ctx.input(1))
    return [part, None, None, None, emit(ctx, "Sub", total(ctx, g), total(ctx, part))]


@gradient("MatrixDiagPartV2", "MatrixDiagPartV3")
def _matrix_diag_part_v2_grad(ctx, grads):
    """g goes back onto the band of a zero matrix; the entries of g that are padding (beyond a
    short diagonal's end) go to the padding value instead."""
    g, k = grads[0], ctx.input(1)
    op, attrs = _versioned(ctx, "MatrixSetDiag")
    placed = emit(ctx, op, emit(ctx, "ZerosLike", ctx.input(0)), g, k, **attrs)
    on_band = _diag_part(ctx, placed, k)
    return [placed, None, emit(ctx, "Sub", total(ctx, g), total(ctx, on_band))]


@gradient("MatrixSetDiagV2", "MatrixSetDiagV3")
def _matrix_set_diag_v2_grad(ctx, grads):
    g, k = grads[0], ctx.input(2)
    op, attrs = _versioned(ctx, "MatrixSetDiag")
    cleared = emit(ctx, op, g, emit(ctx, "ZerosLike", ctx.input(1)), k, **attrs)
    return [cleared, _diag_part(ctx, g, k), None]


@gradient("MatrixBandPart")
def _matrix_band_part_grad(ctx, grads):
    return [emit(ctx, "MatrixBandPart", grads[0], ctx.input(1), ctx.input(2)), None, None]
