"""Lowerings of the unsorted segment reductions and ScatterNd (num_segments and the output shape
are static inputs). As in the interpreter (kernels/segment.py, array_scatter.py): rows with a
negative segment id are dropped, and an empty segment holds the reduction's identity (0, 1, the
type's lowest value for Max, its highest for Min).

The sorted Segment* ops are not lowered: their output size is the last id + 1, a value known only
when the graph runs.

Not matched, and so documented: an id or index out of range is an error in the interpreter; in a
compiled cluster XLA drops that row.
"""
from __future__ import annotations

import numpy as np

from .common import lowering, static_int, static_ints


def _real(node) -> str | None:
    dtype = node.spec.output_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"{node.op} on {dtype} has no lowering"


def _identity(op: str, dtype):
    dtype = np.dtype(dtype)
    limits = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
    return {"UnsortedSegmentSum": 0, "UnsortedSegmentProd": 1,
            "UnsortedSegmentMax": limits.min, "UnsortedSegmentMin": limits.max}[op]


_COMBINE = {"UnsortedSegmentSum": "add", "UnsortedSegmentProd": "multiply",
            "UnsortedSegmentMax": "max", "UnsortedSegmentMin": "min"}


@lowering(*_COMBINE, static_inputs=(2,), supports=_real)
def unsorted_segment(ctx, data, segment_ids, num_segments):
    jnp, op = ctx.jnp, ctx.node.op
    count = static_int(num_segments)
    element = data.shape[segment_ids.ndim:]
    rows = data.reshape((segment_ids.size,) + element)
    ids = segment_ids.reshape(-1)
    ids = jnp.where(ids < 0, count, ids)   # past the end: dropped (jax would wrap a negative index)
    result = jnp.full((count,) + element, _identity(op, data.dtype), data.dtype)
    return getattr(result.at[ids], _COMBINE[op])(rows, mode="drop")


@lowering("ScatterNd", static_inputs=(2,), supports=_real)
def scatter_nd(ctx, indices, updates, shape):
    jnp = ctx.jnp
    target = static_ints(shape)
    depth = indices.shape[-1]
    rows = indices.reshape(-1, depth)
    values = updates.reshape((rows.shape[0],) + tuple(target[depth:]))
    result = jnp.zeros(target, updates.dtype)
    if depth == 0:
        return result + jnp.sum(values, axis=0, dtype=updates.dtype)
    position = tuple(jnp.where(rows[:, k] < 0, target[k], rows[:, k]) for k in range(depth))
    return result.at[position].add(values, mode="drop")


# --- sparse segment reductions with a static number of segments, and their gradients -----------

_SPARSE_MODES = {"Sum": "sum", "Mean": "mean", "SqrtN": "sqrtn"}


def _scale(jnp, counts, mode: str, dtype):
    """1 / count (mean) or 1 / sqrt(count) per segment, empty segments counting as one."""
    safe = jnp.maximum(counts, 1).astype(dtype)
    return 1 / safe if mode == "mean" else 1 / jnp.sqrt(safe)


def _float(node) -> str | None:
    dtype = node.spec.output_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering(*(f"SparseSegment{name}WithNumSegments" for name in _SPARSE_MODES), static_inputs=(3,), supports=_float)
def sparse_segment(ctx, data, indices, segment_ids, num_segments):
    jnp = ctx.jnp
    mode = _SPARSE_MODES[ctx.node.op.removeprefix("SparseSegment").removesuffix("WithNumSegments")]
    count = static_int(num_segments)
    rows = jnp.take(data, indices.astype(np.int64), axis=0)
    ids = segment_ids.astype(np.int64)
    total = jnp.zeros((count,) + data.shape[1:], data.dtype).at[ids].add(rows, mode="drop")
    if mode != "sum":
        counts = jnp.zeros(count, np.int64).at[ids].add(1, mode="drop")
        total = total * _scale(jnp, counts, mode, data.dtype).reshape((-1,) + (1,) * (data.ndim - 1))
    return total


@lowering(*(f"SparseSegment{name}Grad" for name in _SPARSE_MODES), static_inputs=(3,), supports=_float)
def sparse_segment_grad(ctx, grad, indices, segment_ids, output_dim0):
    """output[indices[j]] += grad[segment_ids[j]] * scale(segment_ids[j])."""
    jnp = ctx.jnp
    mode = _SPARSE_MODES[ctx.node.op.removeprefix("SparseSegment").removesuffix("Grad")]
    ids = segment_ids.astype(np.int64)
    picked = jnp.take(grad, ids, axis=0)
    if mode != "sum":
        counts = jnp.zeros(grad.shape[0], np.int64).at[ids].add(1, mode="drop")
        scale = _scale(jnp, counts, mode, grad.dtype)
        picked = picked * jnp.take(scale, ids).reshape((-1,) + (1,) * (grad.ndim - 1))
    result = jnp.zeros((static_int(output_dim0),) + grad.shape[1:], grad.dtype)
    return result.at[indices.astype(np.int64)].add(picked, mode="drop")
