"""Lowerings of the array family that make, reshape, join and split tensors: Reshape, Transpose,
ExpandDims, Squeeze, Concat(V2), Split(V), Pack, Unpack, Tile, Pad(V2), MirrorPad, Fill,
ZerosLike/OnesLike, Range, BroadcastTo, Bitcast. Reading parts of tensors (slices, gathers,
reversal, one-hot) is in array_index.py. Const, the identities and Shape/ShapeN/Size/Rank need
no lowering: the engine evaluates them itself (constants and shapes are compile-time values).

What XLA needs at compile time (target shapes, axes, permutations, paddings, multiples, split
sizes, Range's bounds) are static inputs. The size arithmetic reuses the interpreter's helpers
(kernels/array*.py), so a -1 in a shape or a split resolves the same way. These ops only move
or select values, so every dtype with a jax equivalent is taken, half precision included.
"""
from __future__ import annotations

from typing import NoReturn

import numpy as np

from ...exec.kernels import array as array_kernels
from ...exec.kernels import array_create as create_kernels
from .common import lowering, static_int, static_ints


class _SizeContext:
    """What the interpreter's size helpers need of a kernel context: a way to fail (at trace
    time, so the cluster falls back to the interpreter, which reports the error itself)."""

    def fail(self, message: str) -> NoReturn:
        raise ValueError(message)


_SIZES = _SizeContext()


def _wrap(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


# --- reshaping ------------------------------------------------------------------------------

@lowering("Reshape", static_inputs=(1,), half=True, complex_ok=True)
def reshape(ctx, tensor, target):
    return tensor.reshape(array_kernels._reshape_target(_SIZES, static_ints(target), tensor.shape))


@lowering("Transpose", static_inputs=(1,), half=True, complex_ok=True)
def transpose(ctx, x, perm):
    return ctx.jnp.transpose(x, [_wrap(a, x.ndim) for a in static_ints(perm)])


@lowering("ExpandDims", static_inputs=(1,), half=True, complex_ok=True)
def expand_dims(ctx, x, dim):
    return ctx.jnp.expand_dims(x, static_ints(dim)[0])


@lowering("Squeeze", half=True, complex_ok=True)
def squeeze(ctx, x):
    dims = list(ctx.attr("squeeze_dims", []) or [])
    chosen = {_wrap(a, x.ndim) for a in dims} if dims else {i for i, d in enumerate(x.shape) if d == 1}
    return x.reshape([d for i, d in enumerate(x.shape) if i not in chosen])


# --- joining and splitting ------------------------------------------------------------------

# The axis is the last input (-1: static inputs may count from the end).
@lowering("ConcatV2", static_inputs=(-1,), half=True, complex_ok=True)
def concat_v2(ctx, *inputs):
    values = inputs[:-1]
    return ctx.jnp.concatenate(values, axis=_wrap(static_int(inputs[-1]), values[0].ndim))


@lowering("Concat", static_inputs=(0,), half=True, complex_ok=True)
def concat(ctx, axis, *values):
    return ctx.jnp.concatenate(values, axis=_wrap(static_int(axis), values[0].ndim))


@lowering("Split", static_inputs=(0,), half=True, complex_ok=True)
def split(ctx, axis, value):
    return tuple(ctx.jnp.split(value, ctx.attr("num_split"), axis=_wrap(static_int(axis), value.ndim)))


@lowering("SplitV", static_inputs=(1, 2), half=True, complex_ok=True)
def split_v(ctx, value, size_splits, axis):
    axis = _wrap(static_int(axis), value.ndim)
    sizes = array_kernels._split_sizes(_SIZES, static_ints(size_splits), value.shape[axis])
    bounds = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
    return tuple(ctx.jnp.split(value, bounds, axis=axis))


@lowering("Pack", half=True, complex_ok=True)
def pack(ctx, *values):
    return ctx.jnp.stack(values, axis=_wrap(ctx.attr("axis", 0), values[0].ndim + 1))


@lowering("Unpack", half=True, complex_ok=True)
def unpack(ctx, value):
    axis = _wrap(ctx.attr("axis", 0), value.ndim)
    return tuple(ctx.jnp.take(value, i, axis=axis) for i in range(value.shape[axis]))


@lowering("Tile", static_inputs=(1,), half=True, complex_ok=True)
def tile(ctx, x, multiples):
    counts = static_ints(multiples)
    return ctx.jnp.tile(x, counts) if counts else x


# --- padding and filling --------------------------------------------------------------------

def _pairs(paddings) -> list[tuple[int, int]]:
    values = static_ints(paddings)
    return list(zip(values[0::2], values[1::2]))


@lowering("Pad", static_inputs=(1,), half=True, complex_ok=True)
def pad(ctx, x, paddings):
    return ctx.jnp.pad(x, _pairs(paddings))


@lowering("PadV2", static_inputs=(1,), half=True, complex_ok=True)
def pad_v2(ctx, x, paddings, constant_value):
    return ctx.jnp.pad(x, _pairs(paddings), constant_values=constant_value.reshape(()))


@lowering("MirrorPad", static_inputs=(1,), half=True, complex_ok=True)
def mirror_pad(ctx, x, paddings):
    return ctx.jnp.pad(x, _pairs(paddings), mode=ctx.attr("mode").lower())


@lowering("Fill", static_inputs=(0,), half=True, complex_ok=True)
def fill(ctx, dims, value):
    return ctx.jnp.full(static_ints(dims), value.reshape(()), ctx.out_dtype(0))


@lowering("ZerosLike", half=True, complex_ok=True)
def zeros_like(ctx, x):
    return ctx.jnp.zeros(x.shape, ctx.out_dtype(0))


@lowering("OnesLike", half=True, complex_ok=True)
def ones_like(ctx, x):
    return ctx.jnp.ones(x.shape, ctx.out_dtype(0))


@lowering("Range", static_inputs=(0, 1, 2), half=True)
def range_(ctx, start, limit, delta):
    """A constant: the interpreter's kernel on the static bounds (start + i * delta in the type)."""
    first, last, step = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    dtype = np.dtype(ctx.out_dtype(0))
    count = create_kernels._range_size(_SIZES, first, last, step)
    positions = np.arange(count, dtype=np.int64).astype(dtype)
    return (positions * dtype.type(step) + dtype.type(first)).astype(dtype)


@lowering("BroadcastTo", static_inputs=(1,), half=True, complex_ok=True)
def broadcast_to(ctx, x, target):
    return ctx.jnp.broadcast_to(x, static_ints(target))


@lowering("Bitcast", half=True, complex_ok=True)
def bitcast(ctx, x):
    """Reinterpret the bytes (little-endian on both sides): a wider source gains a last dim of
    the narrower elements, a narrower one loses its last dim (lax's rule is TensorFlow's)."""
    return ctx.lax.bitcast_convert_type(x, ctx.out_dtype(0))
