"""Segment reductions and counting: Segment{Sum, Mean, Max, Min, Prod} (sorted ids),
UnsortedSegment{Sum, Prod, Max, Min}, SparseSegment{Sum, Mean, SqrtN} (with and without
num_segments) and their *Grad and *GradV2 ops, Bincount and DenseBincount.

TensorFlow has no UnsortedSegmentMean op: tf.math.unsorted_segment_mean is composed of
UnsortedSegmentSum and a count, so graphs never hold one.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from . import registry
from .array_common import INDEX_TYPES, INDEX_TYPES_INT32, merge_dims, merge_prefix, scalar_dim, subshape
from .inference import InferenceContext

register = partial(registry.register, family="segment")

# TensorFlow's numbertype, realnumbertype and the float types, spelled out.
_NUMBER_TYPES = ("{float32, float64, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
                 "qint32, bfloat16, qint16, quint16, uint16, complex128, float16, uint32, uint64}")
_REAL_TYPES = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, float16, "
               "uint32, uint64}")
_FLOAT_TYPES = "{bfloat16, float16, float32, float64}"


def _unsorted_segment_shape(ctx: InferenceContext) -> Shape:
    data, segment_ids = ctx.shape(0), ctx.shape(1)
    ctx.with_rank(2, 0)
    if not has_rank(segment_ids):
        return Shape.unknown()
    data = merge_prefix(data, segment_ids)
    return Shape([scalar_dim(ctx, 2)]).concatenate(subshape(data, segment_ids.rank))


def _segment_shape(ctx: InferenceContext) -> Shape:
    data = ctx.with_rank_at_least(0, 1)
    ctx.with_rank(1, 1)
    # The number of segments is the last (largest) id + 1: known when the ids are (constant
    # folding needs it to bound the output before running the kernel); unsorted or negative ids
    # are the kernel's to report.
    ids = ctx.value(1)
    segments = None
    if ids is not None and ids.ndim == 1:
        segments = 0 if ids.size == 0 else int(ids[-1]) + 1
        if ids.size and (int(ids[0]) < 0 or np.any(np.diff(ids.astype(np.int64)) < 0)):
            segments = None
    return Shape([segments]).concatenate(subshape(data, 1))


def _sparse_segment_shape(ctx: InferenceContext) -> Shape:
    """[num_segments or ?] + data.shape[1:]; indices and segment_ids are vectors of one length."""
    data = ctx.with_rank_at_least(0, 1)
    indices, segment_ids = ctx.with_rank(1, 1), ctx.with_rank(2, 1)
    try:
        indices.merge(segment_ids)
    except ShapeError:
        ctx.fail(f"indices {indices} and segment_ids {segment_ids} must have the same length")
    count = scalar_dim(ctx, 3) if ctx.num_inputs == 4 else None
    return Shape([count]).concatenate(subshape(data, 1))


def _sparse_segment_grad_shape(ctx: InferenceContext) -> Shape:
    """[output_dim0] + grad.shape[1:]."""
    grad = ctx.with_rank_at_least(0, 1)
    indices, segment_ids = ctx.with_rank(1, 1), ctx.with_rank(2, 1)
    if merge_dims(indices[0], segment_ids[0]) is None and None not in (indices[0], segment_ids[0]):
        ctx.fail(f"indices {indices} and segment_ids {segment_ids} must have the same length")
    return Shape([scalar_dim(ctx, 3)]).concatenate(subshape(grad, 1))


def _sparse_segment_grad_v2_shape(ctx: InferenceContext) -> list[Shape]:
    """[?] + grad.shape[1:] rows, one per distinct index, and those indices."""
    grad = ctx.with_rank_at_least(0, 1)
    ctx.with_rank(1, 1)
    ctx.with_rank(2, 1)
    ctx.with_rank(3, 0)
    return [Shape([None]).concatenate(subshape(grad, 1)), Shape([None])]


def _bincount_shape(ctx: InferenceContext) -> Shape:
    return Shape([scalar_dim(ctx, 1)])


def _dense_bincount_shape(ctx: InferenceContext) -> Shape:
    """[size] for a vector input, [rows, size] for a matrix (one count per row)."""
    data = ctx.shape(0)
    size = scalar_dim(ctx, 1)
    if not has_rank(data):
        return Shape.unknown()
    if data.rank == 1:
        return Shape([size])
    if data.rank == 2:
        return Shape([data[0], size])
    ctx.fail(f"input must be of rank 1 or 2, has shape {data}")


for _name, _types, _ids in (("UnsortedSegmentSum", _NUMBER_TYPES, "{int16, int32, int64}"),
                            ("UnsortedSegmentProd", _NUMBER_TYPES, INDEX_TYPES),
                            ("UnsortedSegmentMax", _REAL_TYPES, INDEX_TYPES),
                            ("UnsortedSegmentMin", _REAL_TYPES, INDEX_TYPES)):
    register(_name, inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
             outputs=["output: T"],
             attrs=[f"T: {_types}", f"Tindices: {_ids}", f"Tnumsegments: {INDEX_TYPES_INT32}"],
             shape=_unsorted_segment_shape)

for _name, _types in (("SegmentSum", _NUMBER_TYPES), ("SegmentMean", _NUMBER_TYPES),
                      ("SegmentProd", _NUMBER_TYPES), ("SegmentMax", _REAL_TYPES),
                      ("SegmentMin", _REAL_TYPES)):
    register(_name, inputs=["data: T", "segment_ids: Tindices"], outputs=["output: T"],
             attrs=[f"T: {_types}", f"Tindices: {INDEX_TYPES}"], shape=_segment_shape)

_SPARSE_ATTRS = [f"Tidx: {INDEX_TYPES_INT32}", f"Tsegmentids: {INDEX_TYPES_INT32}"]
for _reduction, _types in (("Sum", _REAL_TYPES), ("Mean", _FLOAT_TYPES), ("SqrtN", _FLOAT_TYPES)):
    _inputs = ["data: T", "indices: Tidx", "segment_ids: Tsegmentids"]
    register(f"SparseSegment{_reduction}", inputs=_inputs, outputs=["output: T"],
             attrs=[f"T: {_types}", *_SPARSE_ATTRS, "sparse_gradient: bool = false"],
             shape=_sparse_segment_shape)
    register(f"SparseSegment{_reduction}WithNumSegments",
             inputs=[*_inputs, "num_segments: Tnumsegments"], outputs=["output: T"],
             attrs=[f"T: {_types}", *_SPARSE_ATTRS, f"Tnumsegments: {INDEX_TYPES_INT32}",
                    "sparse_gradient: bool = false"],
             shape=_sparse_segment_shape)
    # The dense gradients TensorFlow's math_grad emits (sparse_gradient=False).
    register(f"SparseSegment{_reduction}Grad",
             inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "output_dim0: int32"],
             outputs=["output: T"], attrs=[f"T: {_FLOAT_TYPES}", *_SPARSE_ATTRS],
             shape=_sparse_segment_grad_shape)
    # sparse_gradient=True: the rows of the dense gradient at the distinct indices, sorted.
    register(f"SparseSegment{_reduction}GradV2",
             inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "dense_output_dim0: int32"],
             outputs=["output: T", "sorted_unique_indices: Tidx"], attrs=[f"T: {_FLOAT_TYPES}", *_SPARSE_ATTRS],
             shape=_sparse_segment_grad_v2_shape)

register("Bincount", inputs=["arr: int32", "size: int32", "weights: T"], outputs=["bins: T"],
         attrs=["T: {int32, int64, float32, float64}"], shape=_bincount_shape)
register("DenseBincount", inputs=["input: Tidx", "size: Tidx", "weights: T"], outputs=["output: T"],
         attrs=[f"Tidx: {INDEX_TYPES}", "T: {int32, int64, float32, float64}",
                "binary_output: bool = false"], shape=_dense_bincount_shape)
