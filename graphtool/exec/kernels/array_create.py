"""Kernels of array ops that make tensors or widen them: Pad, PadV2, MirrorPad, MirrorPadGrad, Fill,
Empty, Range, LinSpace, ZerosLike, OnesLike, BroadcastTo, BroadcastArgs, BroadcastGradientArgs.

Range and LinSpace compute in the output type the way TensorFlow's kernels do (start + i * delta,
each step rounded to the type), so float results match bit for bit.
"""
from __future__ import annotations

import numpy as np

from .array_common import host_int, host_ints, host_value, output_shape, shape_str, vector_of
from . import variant
from .registry import kernel

# --- Pad, PadV2, MirrorPad, MirrorPadGrad ---------------------------------------------------------


def _paddings(ctx, input, paddings) -> list[tuple[int, int]]:
    """The paddings matrix [rank, 2] as (before, after) pairs, all non-negative."""
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        ctx.fail(f"paddings must be a matrix with 2 columns: {shape_str(paddings.shape)}")
    if paddings.shape[0] != input.ndim:
        ctx.fail(f"The first dimension of paddings must be the rank of inputs"
                 f"{shape_str(paddings.shape)} {shape_str(input.shape)}")
    values = host_ints(paddings)
    pairs = list(zip(values[0::2], values[1::2]))
    for before, after in pairs:
        if before < 0 or after < 0:
            ctx.fail(f"Paddings must be non-negative: {before} {after}")
    return pairs


def _constant_pad(ctx, input, pairs, fill):
    xp = ctx.xp
    shape = tuple(d + before + after for d, (before, after) in zip(input.shape, pairs))
    padded = xp.empty(shape, dtype=input.dtype)
    padded[...] = fill
    padded[tuple(slice(before, before + d) for d, (before, _) in zip(input.shape, pairs))] = input
    return padded


@kernel("Pad")
def pad(ctx, input, paddings):
    # TensorFlow pads strings with "" and everything else with zero.
    fill = b"" if input.dtype == object else ctx.xp.zeros((), dtype=input.dtype)
    return _constant_pad(ctx, input, _paddings(ctx, input, paddings), fill)


@kernel("PadV2")
def pad_v2(ctx, input, paddings, constant_values):
    if constant_values.ndim != 0:
        ctx.fail(f"constant_values must be a scalar. Found: {shape_str(constant_values.shape)}")
    return _constant_pad(ctx, input, _paddings(ctx, input, paddings), constant_values)


def _mirror_paddings(ctx, input, paddings, mode: str, room, which: str):
    """The paddings as (before, after) pairs, checked against `room` (the unpadded dims): REFLECT
    leaves out the edge element, so it can take one element fewer than SYMMETRIC."""
    if paddings.ndim != 2 or paddings.shape[1] != 2 or paddings.shape[0] != input.ndim:
        ctx.fail(f"paddings must be a matrix with 2 columns and {input.ndim} rows: "
                 f"{shape_str(paddings.shape)}")
    values = host_ints(paddings)
    pairs = list(zip(values[0::2], values[1::2]))
    for (before, after), dim in zip(pairs, room(pairs)):
        if before < 0 or after < 0:
            ctx.fail(f"paddings must be non-negative: {before} {after}")
        if mode == "REFLECT" and (before >= dim or after >= dim):
            ctx.fail(f"paddings must be less than the {which} size: {before}, {after} not less "
                     f"than {dim}")
        if mode == "SYMMETRIC" and (before > dim or after > dim):
            ctx.fail(f"paddings must be no greater than the {which} size: {before}, {after} "
                     f"greater than {dim}")
    return pairs


@kernel("MirrorPad")
def mirror_pad(ctx, input, paddings, *, mode):
    pairs = _mirror_paddings(ctx, input, paddings, mode, lambda _: input.shape, "dimension")
    return ctx.xp.pad(input, pairs, mode=mode.lower())


def _along(axis: int, start, stop) -> tuple:
    """An index taking [start:stop] of dimension `axis` and everything of the others."""
    return (slice(None),) * axis + (slice(start, stop),)


@kernel("MirrorPadGrad")
def mirror_pad_grad(ctx, input, paddings, *, mode):
    """Fold each padded border back onto the elements it mirrored, one dimension at a time."""
    xp = ctx.xp

    def unpadded(pairs):
        return [d - before - after for d, (before, after) in zip(input.shape, pairs)]

    pairs = _mirror_paddings(ctx, input, paddings, mode, unpadded, "output dimension")
    skip_edge = 1 if mode == "REFLECT" else 0
    grad = input
    for axis, (before, after) in enumerate(pairs):
        size = grad.shape[axis] - before - after
        core = grad[_along(axis, before, before + size)].copy()
        # Border element j before the core mirrors core element before - j (REFLECT) or
        # before - 1 - j (SYMMETRIC): flipped, each border lines up with the elements it copied.
        core[_along(axis, skip_edge, skip_edge + before)] += xp.flip(grad[_along(axis, 0, before)],
                                                                     axis)
        end = size - skip_edge
        core[_along(axis, end - after, end)] += xp.flip(grad[_along(axis, before + size, None)],
                                                        axis)
        grad = core
    return grad


# --- Fill, Empty, ZerosLike, OnesLike -------------------------------------------------------------

@kernel("Fill")
def fill(ctx, dims, value):
    if value.size != 1:
        ctx.fail(f"value must be a scalar, got shape {shape_str(value.shape)}")
    filled = ctx.xp.empty(output_shape(ctx, dims, "dims"), dtype=ctx.out_dtype())
    filled[...] = value.reshape(())
    return filled


@kernel("Empty")
def empty(ctx, shape, *, init):
    # Uninitialized memory would be as valid when init is false; zeros keep runs reproducible.
    return ctx.xp.zeros(output_shape(ctx, shape), dtype=ctx.out_dtype())


@kernel("ZerosLike")
def zeros_like(ctx, x):
    if variant.is_variant(ctx):
        return variant.zeros_like(ctx, x)
    return ctx.xp.zeros(x.shape, dtype=ctx.out_dtype())


@kernel("OnesLike")
def ones_like(ctx, x):
    return ctx.xp.ones(x.shape, dtype=ctx.out_dtype())


# --- Range, LinSpace ------------------------------------------------------------------------------

def _scalar_bound(ctx, tensor, name: str, allow_vector: bool):
    if tensor.ndim != 0 and not (allow_vector and tensor.shape == (1,)):
        ctx.fail(f"{name} must be a scalar, not shape {shape_str(tensor.shape)}")
    return host_value(tensor)


def _number(value) -> str:
    """A number as TensorFlow's StrCat prints it (six significant digits for floats)."""
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def _range_size(ctx, start, limit, delta) -> int:
    if delta == 0:
        ctx.fail(f"Requires delta != 0: {_number(delta)}")
    if delta > 0 and not start <= limit:
        ctx.fail(f"Requires start <= limit when delta > 0: {_number(start)}/{_number(limit)}")
    if delta < 0 and not start >= limit:
        ctx.fail(f"Requires start >= limit when delta < 0: {_number(start)}/{_number(limit)}")
    if np.issubdtype(start.dtype, np.integer):
        start, limit, delta = int(start), int(limit), int(delta)
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    size = np.ceil(np.abs((limit - start) / delta))  # in the element type, as TensorFlow does
    if not float(size) <= np.iinfo(np.int64).max:  # (float: half cannot hold the bound)
        ctx.fail(f"Requires ((limit - start) / delta) <= {np.iinfo(np.int64).max}")
    return int(size)


@kernel("Range")
def range_(ctx, start, limit, delta):
    first, last, step = (_scalar_bound(ctx, t, name, allow_vector=True)
                         for t, name in ((start, "start"), (limit, "limit"), (delta, "delta")))
    dtype = ctx.out_dtype()
    size = _range_size(ctx, first, last, step)
    positions = ctx.xp.arange(size, dtype=np.int64).astype(dtype)
    return (positions * dtype.type(step) + dtype.type(first)).astype(dtype, copy=False)


@kernel("LinSpace")
def lin_space(ctx, start, stop, num):
    first, last = (_scalar_bound(ctx, t, name, allow_vector=False)
                   for t, name in ((start, "start"), (stop, "stop")))
    count = host_int(ctx, num, "num")
    if count <= 0:
        ctx.fail(f"Requires num > 0: {count}")
    dtype = ctx.out_dtype()
    first, last = dtype.type(first), dtype.type(last)
    if count == 1:
        return ctx.xp.asarray([first], dtype=dtype)
    step = (last - first) / dtype.type(count - 1)
    values = (ctx.xp.arange(count, dtype=np.int64).astype(dtype) * step + first).astype(dtype)
    values[-1] = last  # TensorFlow sets the end exactly rather than trusting the arithmetic
    return values


# --- broadcasting ---------------------------------------------------------------------------------

def _broadcast_shape(ctx, a: list[int], b: list[int]) -> list[int]:
    """The shape both broadcast to (numpy rules, which are TensorFlow's)."""
    rank = max(len(a), len(b))
    a_ext, b_ext = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    result = []
    for x, y in zip(a_ext, b_ext):
        if x != y and 1 not in (x, y):
            ctx.fail(f"Incompatible shapes: {shape_str(a)} vs. {shape_str(b)}")
        result.append(y if x == 1 else x)
    return result


@kernel("BroadcastTo")
def broadcast_to(ctx, input, shape):
    target = list(output_shape(ctx, shape))
    if input.ndim > len(target):
        ctx.fail(f"Rank of input ({input.ndim}) must be no greater than rank of output shape "
                 f"({len(target)}).")
    if _broadcast_shape(ctx, list(input.shape), target) != target:
        ctx.fail(f"Incompatible shapes: {shape_str(input.shape)} vs. {shape_str(target)}")
    # A read-only view: kernels never write into their inputs, so nothing needs the copy.
    return ctx.xp.broadcast_to(input, target)


@kernel("BroadcastArgs")
def broadcast_args(ctx, s0, s1):
    shape = _broadcast_shape(ctx, vector_of(ctx, s0, "In[0]"), vector_of(ctx, s1, "In[1]"))
    return ctx.xp.asarray(shape, dtype=ctx.out_dtype())


@kernel("BroadcastGradientArgs")
def broadcast_gradient_args(ctx, s0, s1):
    """The axes each input was broadcast along (for summing its gradient), as TensorFlow's BCast
    gives them: none for identical shapes, else every axis where the 1-extended shape has a 1,
    even where the other shape has a 1 there too."""
    shapes = [vector_of(ctx, s0, "In[0]"), vector_of(ctx, s1, "In[1]")]
    _broadcast_shape(ctx, *shapes)
    if shapes[0] == shapes[1]:
        reduced = [[], []]
    else:
        rank = max(len(s) for s in shapes)
        extended = [[1] * (rank - len(s)) + s for s in shapes]
        reduced = [[axis for axis, dim in enumerate(dims) if dim == 1] for dims in extended]
    return tuple(ctx.xp.asarray(axes, dtype=ctx.out_dtype(i)) for i, axes in enumerate(reduced))
