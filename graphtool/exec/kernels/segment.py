"""Kernels of the segment family: Segment{Sum, Mean, Max, Min, Prod} (sorted ids),
UnsortedSegment{Sum, Prod, Max, Min}, SparseSegment{Sum, Mean, SqrtN}[WithNumSegments] and their
*Grad and *GradV2 ops, Bincount and DenseBincount.

Empty segments follow TensorFlow, which differs between the two kinds: the unsorted ops give the
reduction's identity (0 for sums, 1 for products, the type's lowest value for maxima and highest
for minima); the sorted ops give 0 (1 for products), and the sparse ones 0. Unsorted ops drop rows
with negative ids; sorted ids must be non-decreasing and non-negative.
"""
from __future__ import annotations

import numpy as np

from .array_common import accumulate_at, first_true, highest, host_int, lowest, position_str, scatter_rows, shape_str
from .registry import CPU, kernel

# Half-precision segments are accumulated in float32 (TensorFlow's CPU kernels do the same for the
# sparse reductions), so a long segment does not lose the small terms.
_WIDER = ("float16", "bfloat16")


def _accumulator(xp, dtype):
    return np.dtype(np.float32) if dtype.name in _WIDER else dtype


# --- unsorted segment reductions -----------------------------------------------------------------

def _segment_rows(ctx, data, segment_ids):
    """data as [len(ids), *element] rows, checking that its shape starts with the ids' shape."""
    if data.shape[:segment_ids.ndim] != segment_ids.shape:
        ctx.fail(f"data.shape = {shape_str(data.shape)} does not start with segment_ids.shape = "
                 f"{shape_str(segment_ids.shape)}")
    element = data.shape[segment_ids.ndim:]
    return data.reshape((segment_ids.size,) + element), element


def unsorted_segment(mode: str, identity, scatter=scatter_rows):
    """A kernel reducing data rows into num_segments segments; negative ids drop their row.
    `scatter` combines the rows into the result (the GPU's multiply needs its own: gpu_segment.py)."""
    def reduce_segments(ctx, data, segment_ids, num_segments):
        xp = ctx.xp
        if num_segments.ndim != 0:
            ctx.fail(f"num_segments should be a scalar, not shape {shape_str(num_segments.shape)}")
        count = host_int(ctx, num_segments, "num_segments")
        if count < 0:
            ctx.fail(f"Input num_segments == {count} must not be negative.")
        rows, element = _segment_rows(ctx, data, segment_ids)
        bad = first_true(xp, segment_ids >= count)
        if bad is not None:
            ctx.fail(f"segment_ids{position_str(segment_ids.shape, bad)} = "
                     f"{int(segment_ids.reshape(-1)[bad])} is out of range [0, {count})")
        ids = segment_ids.reshape(-1)
        kept = ids >= 0
        result = xp.full((count,) + element, identity(data.dtype), dtype=data.dtype)
        scatter(xp, result, ids[kept][:, None], rows[kept], mode)
        return result
    return reduce_segments


kernel("UnsortedSegmentSum", devices=(CPU,))(unsorted_segment("add", lambda dtype: 0))
# The GPU kernels are in gpu_segment.py: cupy's ufunc.at has no multiply, and bfloat16 data
# stays on the host.
kernel("UnsortedSegmentProd", devices=(CPU,))(unsorted_segment("mul", lambda dtype: 1))
kernel("UnsortedSegmentMax", devices=(CPU,))(unsorted_segment("max", lowest))
kernel("UnsortedSegmentMin", devices=(CPU,))(unsorted_segment("min", highest))


# --- sorted segment reductions -------------------------------------------------------------------

def _sorted_segment_count(ctx, segment_ids, limit: int | None = None) -> int:
    """The number of output rows for sorted `segment_ids` (the last id + 1, or `limit`), checking
    that the ids never decrease and start at or above 0 (TensorFlow's messages)."""
    if segment_ids.size > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
        ctx.fail("segment ids are not increasing")
    count = limit if limit is not None else (int(segment_ids[-1]) + 1 if segment_ids.size else 0)
    if segment_ids.size and int(segment_ids[0]) < 0:
        ctx.fail(f"Segment id {int(segment_ids[0])} out of range [0, {count}), possibly because "
                 f"'segment_ids' input is not sorted.")
    return count


def _counts(xp, ids, count: int):
    """How many entries of `ids` name each of the `count` segments."""
    tally = xp.zeros((count,), dtype=xp.int64)
    if ids.size:
        accumulate_at(xp, "add", tally, ids.astype(xp.int64), 1)
    return tally


def _rows_shaped(counts, like):
    """counts [n] reshaped to broadcast over rows [n, *element]."""
    return counts.reshape((-1,) + (1,) * (like.ndim - 1))


def _divide(xp, total, counts, dtype):
    """total / counts per row, in TensorFlow's arithmetic for `dtype` (integers truncate); empty
    segments stay 0."""
    divisor = _rows_shaped(xp.maximum(counts, 1), total)
    if dtype.kind in "iu":
        quotient = xp.abs(total) // divisor.astype(total.dtype)
        return (xp.sign(total) * quotient).astype(dtype)
    return (total / divisor.astype(total.dtype)).astype(dtype)


def sorted_segment(mode: str, scatter=scatter_rows):
    """A kernel reducing rows into segments named by sorted ids (`scatter` as in unsorted_segment)."""
    def reduce_sorted(ctx, data, segment_ids):
        xp = ctx.xp
        if segment_ids.ndim != 1:
            ctx.fail("segment_ids should be a vector.")
        if data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
            ctx.fail("segment_ids should be the same size as dimension 0 of input.")
        count = _sorted_segment_count(ctx, segment_ids)
        ids = segment_ids.astype(xp.int64)[:, None]
        shape = (count,) + data.shape[1:]
        if mode in ("add", "mean"):
            accumulator = _accumulator(xp, data.dtype)
            total = xp.zeros(shape, dtype=accumulator)
            scatter_rows(xp, total, ids, data.astype(accumulator), "add")
            if mode == "add":
                return total.astype(data.dtype)
            return _divide(xp, total, _counts(xp, segment_ids, count), data.dtype)
        identity = {"mul": lambda dtype: 1, "max": lowest, "min": highest}[mode](data.dtype)
        result = xp.full(shape, identity, dtype=data.dtype)
        scatter(xp, result, ids, data, mode)
        if mode != "mul":   # an empty segment's max or min is 0 for the sorted ops
            empty = _rows_shaped(_counts(xp, segment_ids, count) == 0, result)
            result = xp.where(empty, xp.zeros((), dtype=data.dtype), result)
        return result
    return reduce_sorted


# GPU kernels: gpu_segment.py.
kernel("SegmentSum", devices=(CPU,))(sorted_segment("add"))
kernel("SegmentMean", devices=(CPU,))(sorted_segment("mean"))
kernel("SegmentMax", devices=(CPU,))(sorted_segment("max"))
kernel("SegmentMin", devices=(CPU,))(sorted_segment("min"))
kernel("SegmentProd", devices=(CPU,))(sorted_segment("mul"))


# --- sparse segment reductions -------------------------------------------------------------------

def _check_vectors(ctx, indices, segment_ids) -> None:
    if indices.ndim != 1:
        ctx.fail(f"indices should be a vector, got shape {shape_str(indices.shape)}")
    if segment_ids.ndim != 1:
        ctx.fail(f"segment_ids should be a vector, got shape {shape_str(segment_ids.shape)}")
    if indices.shape[0] != segment_ids.shape[0]:
        ctx.fail("segment_ids and indices should have same size.")


def _check_below(ctx, xp, values, limit: int, name: str) -> None:
    bad = first_true(xp, (values < 0) | (values >= limit))
    if bad is not None:
        ctx.fail(f"Bad: {name}[{bad}] == {int(values[bad])} out of range [0, {limit})")


def _scale(xp, counts, mode: str, dtype):
    """The factor each segment's sum is multiplied by: 1 / count (mean) or 1 / sqrt(count)."""
    safe = xp.maximum(counts, 1).astype(dtype)
    return 1 / safe if mode == "mean" else 1 / xp.sqrt(safe)


def sparse_segment(mode: str):
    def reduce_sparse(ctx, data, indices, segment_ids, num_segments=None, *, sparse_gradient):
        xp = ctx.xp
        _check_vectors(ctx, indices, segment_ids)
        if data.ndim < 1:
            ctx.fail("Shape must be at least rank 1")
        limit = None
        if num_segments is not None:
            limit = host_int(ctx, num_segments, "num_segments")
            if segment_ids.size and int(segment_ids[-1]) >= limit:
                ctx.fail("segment ids must be < num_segments")
        count = _sorted_segment_count(ctx, segment_ids, limit)
        _check_below(ctx, xp, indices, data.shape[0], "indices")
        accumulator = _accumulator(xp, data.dtype)
        total = xp.zeros((count,) + data.shape[1:], dtype=accumulator)
        rows = data[indices.astype(xp.int64)].astype(accumulator)
        scatter_rows(xp, total, segment_ids.astype(xp.int64)[:, None], rows, "add")
        if mode != "sum":
            total = total * _rows_shaped(_scale(xp, _counts(xp, segment_ids, count), mode, accumulator), total)
        return total.astype(data.dtype)
    return reduce_sparse


def sparse_segment_grad(mode: str):
    """output[indices[j]] += grad[segment_ids[j]] * scale(segment_ids[j]), output_dim0 rows."""
    def sparse_segment_grad(ctx, grad, indices, segment_ids, output_dim0):
        xp = ctx.xp
        _check_vectors(ctx, indices, segment_ids)
        rows = host_int(ctx, output_dim0, "output_dim0")
        if rows < 0:
            ctx.fail(f"output_dim0 must be non-negative, got {rows}")
        _check_below(ctx, xp, indices, rows, "indices")
        _check_below(ctx, xp, segment_ids, grad.shape[0], "segment_ids")
        accumulator = _accumulator(xp, grad.dtype)
        ids = segment_ids.astype(xp.int64)
        picked = grad[ids].astype(accumulator)
        if mode != "sum":
            scale = _scale(xp, _counts(xp, segment_ids, grad.shape[0]), mode, accumulator)
            picked = picked * _rows_shaped(scale[ids], picked)
        result = xp.zeros((rows,) + grad.shape[1:], dtype=accumulator)
        scatter_rows(xp, result, indices.astype(xp.int64)[:, None], picked, "add")
        return result.astype(grad.dtype)
    return sparse_segment_grad


def sparse_segment_grad_v2(mode: str):
    """The dense gradient's rows at the sorted distinct indices, and those indices."""
    dense_grad = sparse_segment_grad(mode)

    def sparse_segment_grad_v2(ctx, grad, indices, segment_ids, dense_output_dim0):
        dense = dense_grad(ctx, grad, indices, segment_ids, dense_output_dim0)
        unique = ctx.xp.unique(indices)
        return dense[unique.astype(np.int64)], unique.astype(indices.dtype)
    return sparse_segment_grad_v2


for _mode, _name in (("sum", "Sum"), ("mean", "Mean"), ("sqrtn", "SqrtN")):
    kernel(f"SparseSegment{_name}", f"SparseSegment{_name}WithNumSegments", devices=(CPU,))(sparse_segment(_mode))
    kernel(f"SparseSegment{_name}Grad", devices=(CPU,))(sparse_segment_grad(_mode))
    kernel(f"SparseSegment{_name}GradV2", devices=(CPU,))(sparse_segment_grad_v2(_mode))


# --- Bincount, DenseBincount ---------------------------------------------------------------------

def _bin_counts(ctx, values, size: int, weights, dtype, binary: bool):
    """Per row of `values` [rows, n], the count (or weight sum) of each value below `size`;
    larger values are ignored, negative ones are an error (TensorFlow's rules)."""
    xp = ctx.xp
    if size < 0:
        ctx.fail(f"size ({size}) must be non-negative")
    if values.size and bool((values < 0).any()):
        ctx.fail("Input arr must be non-negative!")
    if weights.size and weights.shape != values.shape:
        ctx.fail(f"Weights and input must have the same shape, got {shape_str(weights.shape)} and "
                 f"{shape_str(values.shape)}")
    table = values[None] if values.ndim == 1 else values
    result = xp.zeros((table.shape[0], size), dtype=dtype)
    kept = table < size
    row_ids = xp.broadcast_to(xp.arange(table.shape[0])[:, None], table.shape)
    if binary or not weights.size:
        amounts = xp.ones(table.shape, dtype=dtype)
    else:
        amounts = weights.reshape(table.shape).astype(dtype)
    position = (row_ids[kept].astype(xp.int64), table[kept].astype(xp.int64))
    if binary:
        result[position] = 1
    else:
        accumulate_at(xp, "add", result, position, amounts[kept])
    return result


@kernel("Bincount")
def bincount(ctx, arr, size, weights):
    if size.ndim != 0:
        ctx.fail(f"Shape must be rank 0 but is rank {size.ndim}")
    counts = _bin_counts(ctx, arr.reshape(-1), host_int(ctx, size, "size"), weights.reshape(-1) if
                         weights.size else weights, ctx.out_dtype(), binary=False)
    return counts[0]


@kernel("DenseBincount")
def dense_bincount(ctx, input, size, weights, *, binary_output):
    if input.ndim not in (1, 2):
        ctx.fail(f"input must be of rank 1 or 2, has shape {shape_str(input.shape)}")
    counts = _bin_counts(ctx, input, host_int(ctx, size, "size"), weights, ctx.out_dtype(),
                         binary=binary_output)
    return counts[0] if input.ndim == 1 else counts
