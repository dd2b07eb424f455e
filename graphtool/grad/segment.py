"""Gradients of the segment family (TensorFlow's math_grad.py and data_flow_grad.py semantics):
the segment reductions, the sparse segment reductions (through TensorFlow's SparseSegment*Grad
ops) and DynamicPartition.

The sparse reductions' gradients are dense, whatever `sparse_gradient` says: TensorFlow then
returns IndexedSlices of the same values, which tf.gradients densifies.
"""
from __future__ import annotations

from .. import dtypes
from .op_utils import INDEX, emit, int_const, mul, scalar
from .registry import GradContext, gradient

# --- segment reductions ------------------------------------------------------------------------

def _gather_segments(ctx: GradContext, values, ids):
    """values[ids] for every data row, with rows whose id is negative (dropped by the unsorted
    segment ops) given zeros; also returns that 0/1 row mask, shaped to broadcast."""
    b = ctx.b
    clipped = emit(ctx, "Maximum", ids, scalar(ctx, 0, ids))
    gathered = emit(ctx, "GatherV2", values, clipped, int_const(b, 0))
    kept = emit(ctx, "Cast", emit(ctx, "GreaterEqual", ids, scalar(ctx, 0, ids)), DstT=b.dtype(values))
    extra_dims = emit(ctx, "Sub", emit(ctx, "Rank", gathered), emit(ctx, "Rank", ids))
    ones = emit(ctx, "Fill", emit(ctx, "Reshape", extra_dims, int_const(b, [1])), int_const(b, 1))
    mask_shape = emit(ctx, "ConcatV2", [emit(ctx, "Shape", ids, out_type=INDEX), ones], int_const(b, 0))
    mask = emit(ctx, "Reshape", kept, mask_shape)
    return mul(ctx, gathered, mask), mask


@gradient("SegmentSum")
def _segment_sum_grad(ctx, grads):
    return [emit(ctx, "GatherV2", grads[0], ctx.input(1), int_const(ctx.b, 0)), None]


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(ctx, grads):
    gathered, _ = _gather_segments(ctx, grads[0], ctx.input(1))
    return [gathered, None, None]


@gradient("UnsortedSegmentMax", "UnsortedSegmentMin")
def _unsorted_segment_extremum_grad(ctx, grads):
    """Like Max/Min: each segment's gradient is shared among the rows that attain its extremum."""
    data, ids, count = ctx.input(0), ctx.input(1), ctx.input(2)
    extremum, mask = _gather_segments(ctx, ctx.output(0), ids)
    chosen = mul(ctx, emit(ctx, "Cast", emit(ctx, "Equal", data, extremum), DstT=ctx.input_dtype(0)), mask)
    ties = emit(ctx, "UnsortedSegmentSum", chosen, ids, count)
    shares, _ = _gather_segments(ctx, emit(ctx, "DivNoNan", grads[0], ties), ids)
    return [mul(ctx, chosen, shares), None, None]


@gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(ctx, grads):
    """The product of the segment's other rows: the output divided by the row where the row is
    not zero; for a zero row, the product of the segment's non-zero rows (zero when the segment
    holds another zero)."""
    data, ids, count = ctx.input(0), ctx.input(1), ctx.input(2)
    dtype = ctx.input_dtype(0)
    is_zero = emit(ctx, "Equal", data, scalar(ctx, 0.0, data))
    zeros_per_segment = emit(ctx, "UnsortedSegmentSum", emit(ctx, "Cast", is_zero, DstT=dtype), ids, count)
    nonzero_data = emit(ctx, "SelectV2", is_zero, scalar(ctx, 1.0, data), data)
    nonzero_product = emit(ctx, "UnsortedSegmentProd", nonzero_data, ids, count)
    # A zero row's partial is the non-zero product only when it is its segment's single zero.
    single_zero = emit(ctx, "Cast", emit(ctx, "LessEqual", zeros_per_segment, scalar(ctx, 1.0, data)), DstT=dtype)
    zero_row_partial, _ = _gather_segments(ctx, mul(ctx, nonzero_product, single_zero), ids)
    product, _ = _gather_segments(ctx, ctx.output(0), ids)
    partial = emit(ctx, "SelectV2", is_zero, zero_row_partial, emit(ctx, "RealDiv", product, nonzero_data))
    gathered, _ = _gather_segments(ctx, grads[0], ids)
    return [mul(ctx, gathered, partial), None, None]


# --- sorted segment reductions -------------------------------------------------------------------

def _gather(ctx: GradContext, values, ids):
    return emit(ctx, "GatherV2", values, ids, int_const(ctx.b, 0))


def _segment_sum(ctx: GradContext, values, ids):
    return emit(ctx, "SegmentSum", values, ids)


@gradient("SegmentMean")
def _segment_mean_grad(ctx, grads):
    """Each row gets its segment's gradient divided by the segment's size."""
    data, ids = ctx.input(0), ctx.input(1)
    sizes = _segment_sum(ctx, emit(ctx, "OnesLike", data), ids)
    return [_gather(ctx, emit(ctx, "RealDiv", grads[0], sizes), ids), None]


@gradient("SegmentMax", "SegmentMin")
def _segment_extremum_grad(ctx, grads):
    """The segment's gradient is shared evenly among the rows that attain its extremum."""
    data, ids = ctx.input(0), ctx.input(1)
    chosen = emit(ctx, "Equal", data, _gather(ctx, ctx.output(0), ids))
    ties = _segment_sum(ctx, emit(ctx, "Cast", chosen, DstT=ctx.input_dtype(0)), ids)
    shares = _gather(ctx, emit(ctx, "RealDiv", grads[0], ties), ids)
    return [emit(ctx, "SelectV2", chosen, shares, emit(ctx, "ZerosLike", data)), None]


@gradient("SegmentProd")
def _segment_prod_grad(ctx, grads):
    """The product of the segment's other rows: the output over the row for segments without a
    zero; for a segment's single zero the product of its non-zero rows; zero for segments with
    two zeros or more."""
    data, ids = ctx.input(0), ctx.input(1)
    is_zero = emit(ctx, "Equal", data, scalar(ctx, 0.0, data))
    zeros = _segment_sum(ctx, emit(ctx, "Cast", is_zero, DstT=dtypes.int32), ids)
    grad = emit(ctx, "SelectV2", emit(ctx, "Greater", zeros, int_const(ctx.b, 1)),
                emit(ctx, "ZerosLike", grads[0]), grads[0])
    nonzero_data = emit(ctx, "SelectV2", is_zero, emit(ctx, "OnesLike", data), data)
    nonzero_product = emit(ctx, "SegmentProd", nonzero_data, ids)
    partial = emit(ctx, "SelectV2", is_zero, _gather(ctx, nonzero_product, ids),
                   emit(ctx, "RealDiv", _gather(ctx, ctx.output(0), ids), nonzero_data))
    return [mul(ctx, _gather(ctx, grad, ids), partial), None]


# --- sparse segment reductions -------------------------------------------------------------------

def _sparse_segment_grad(kind: str):
    """data gets SparseSegment<kind>Grad(grad, indices, segment_ids, data.shape[0])."""
    def sparse_segment_grad(ctx, grads):
        b = ctx.b
        rows = emit(ctx, "StridedSlice", emit(ctx, "Shape", ctx.input(0), out_type=INDEX),
                    int_const(b, [0]), int_const(b, [1]), int_const(b, [1]), shrink_axis_mask=1)
        grad = emit(ctx, f"SparseSegment{kind}Grad", grads[0], ctx.input(1), ctx.input(2), rows)
        return [grad] + [None] * (ctx.num_inputs - 1)
    return sparse_segment_grad


for _kind in ("Sum", "Mean", "SqrtN"):
    gradient(f"SparseSegment{_kind}", f"SparseSegment{_kind}WithNumSegments")(_sparse_segment_grad(_kind))


# --- DynamicPartition ----------------------------------------------------------------------------

@gradient("DynamicPartition")
def _dynamic_partition_grad(ctx, grads):
    """Partition the positions of data's rows as the rows were partitioned, and stitch the
    outputs' gradients back to those positions (an output without a gradient gives zeros)."""
    b = ctx.b
    data, partitions = ctx.input(0), ctx.input(1)
    count = ctx.attr("num_partitions")
    prefix = emit(ctx, "Shape", partitions, out_type=INDEX)
    positions = emit(ctx, "Reshape", emit(ctx, "Range", int_const(b, 0), emit(ctx, "Size", partitions, out_type=INDEX),
                                          int_const(b, 1)), prefix)
    parts = emit(ctx, "DynamicPartition", positions, partitions, num_partitions=count)
    parts = list(parts)
    pieces = [grads[i] if grads[i] is not None else
              emit(ctx, "ZerosLike", ctx.output(i)) for i in range(count)]
    stitched = emit(ctx, "ParallelDynamicStitch", parts, pieces)
    return [emit(ctx, "Reshape", stitched, emit(ctx, "Shape", data, out_type=INDEX)), None]
