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
