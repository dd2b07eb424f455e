"""Kernels of array ops that pick or reorder elements: ReverseV2, Reverse, ReverseSequence, OneHot,
TopKV2, Where (the one-input op), Unique, UniqueV2, UniqueWithCounts(V2), ListDiff and
InvertPermutation.

Orders follow TensorFlow: TopKV2 breaks ties by the lower index, Where lists coordinates in
row-major order, Unique keeps values in order of first appearance (every NaN is its own value).
"""
from __future__ import annotations

import numpy as np

from .array_common import (element_count, first_true, host_int, host_ints, shape_str,
                           stable_argsort, wrap_axis)
from .cpp_order import top_k_row
from .registry import kernel

# --- ReverseV2, Reverse, ReverseSequence ----------------------------------------------------------


def _flipped(xp, tensor, axes):
    return xp.flip(tensor, axis=tuple(axes)) if axes else tensor


@kernel("ReverseV2")
def reverse_v2(ctx, tensor, axis):
    if axis.ndim != 1:
        ctx.fail(f"'axis' must be 1-D, not {shape_str(axis.shape)}")
    axes = []
    for i, requested in enumerate(host_ints(axis)):
        wrapped = wrap_axis(requested, tensor.ndim)
        if wrapped is None:
            # (sic: TensorFlow's message has no closing bracket)
            ctx.fail(f"'axis'[{i}] = {requested} is out of valid range [0, {tensor.ndim - 1}")
        if wrapped in axes:
            ctx.fail(f"axis {wrapped} specified more than once.")
        axes.append(wrapped)
    return _flipped(ctx.xp, tensor, axes)


@kernel("Reverse")
def reverse(ctx, tensor, dims):
    flags = host_ints(dims)
    if dims.ndim != 1 or len(flags) != tensor.ndim:
        ctx.fail(f"'dims' must have the same number of values as 'input' has dimensions. 'input' "
                 f"has {tensor.ndim}'dims' has {len(flags)} values")
    return _flipped(ctx.xp, tensor, [axis for axis, flag in enumerate(flags) if flag])


def _check_sequence_layout(ctx, input, lengths, seq_dim: int, batch_dim: int) -> None:
    if batch_dim == seq_dim:
        ctx.fail(f"batch_dim == seq_dim == {seq_dim}")
    for name, dim in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if not 0 <= dim < input.ndim:
            ctx.fail(f"{name} must be < input rank ( {dim} vs. {input.ndim})")
    if len(lengths) != input.shape[batch_dim]:
        ctx.fail(f"Length of seq_lengths != input.dims({batch_dim}), ({len(lengths)} vs. "
                 f"{input.shape[batch_dim]})")
    for b, length in enumerate(lengths):
        if length < 0:
            ctx.fail(f"seq_lens({b}) < 0")
        if length > input.shape[seq_dim]:
            ctx.fail(f"seq_lens({b}) > input.dims({seq_dim})")


@kernel("ReverseSequence")
def reverse_sequence(ctx, input, seq_lengths, *, seq_dim, batch_dim):
    """Reverse the first seq_lengths[b] elements along seq_dim of every batch entry b, as one
    gather: position j of entry b reads from length - 1 - j inside the prefix, from j after it."""
    xp = ctx.xp
    if seq_lengths.ndim != 1:
        ctx.fail(f"seq_lengths must be 1-dim, not {shape_str(seq_lengths.shape)}")
    lengths = host_ints(seq_lengths)
    _check_sequence_layout(ctx, input, lengths, seq_dim, batch_dim)
    positions = xp.arange(input.shape[seq_dim])[None, :]
    prefix = xp.asarray(lengths)[:, None]
    sources = xp.where(positions < prefix, prefix - 1 - positions, positions)  # [batch, seq]
    if batch_dim > seq_dim:
        sources = sources.T
    layout = [1] * input.ndim
    layout[batch_dim], layout[seq_dim] = input.shape[batch_dim], input.shape[seq_dim]
    sources = xp.broadcast_to(sources.reshape(layout), input.shape)
    return xp.take_along_axis(input, sources, axis=seq_dim)


# --- OneHot ---------------------------------------------------------------------------------------

def _scalar_operand(ctx, tensor, name: str):
    if tensor.ndim != 0:
        ctx.fail(f"{name} must be a scalar, but got: {shape_str(tensor.shape)}")
    return tensor


@kernel("OneHot")
def one_hot(ctx, indices, depth, on_value, off_value, *, axis):
    xp = ctx.xp
    if not -1 <= axis <= indices.ndim:
        ctx.fail(f"Expected axis to be -1 or between [0, {indices.ndim + 1}).  But received: "
                 f"{axis}")
    if depth.ndim != 0:
        ctx.fail(f"depth must be a scalar, but got: {shape_str(depth.shape)}")
    size = host_int(ctx, depth, "depth")
    if size < 0:
        ctx.fail(f"depth must be non-negative, got: {size}")
    on = _scalar_operand(ctx, on_value, "on_value")
    off = _scalar_operand(ctx, off_value, "off_value")
    # Indices outside [0, depth), negative ones included, match no position: all off.
    hot = indices.astype(np.int64)[..., None] == xp.arange(size)
    encoded = xp.where(hot, on, off)
    return encoded if axis == -1 else xp.moveaxis(encoded, -1, axis)


# --- TopKV2, Where --------------------------------------------------------------------------------

@kernel("TopKV2")
def top_k_v2(ctx, input, k, *, sorted):
    """The k largest entries of each last-dim row, largest first, equal values by lower index.
    (With sorted=False TensorFlow leaves the order unspecified: sorted order is a valid answer.)
    Rows holding NaN come out in TensorFlow's exact order (see cpp_order.py)."""
    xp = ctx.xp
    if k.ndim != 0:
        ctx.fail(f"k must be 0-D, got shape {shape_str(k.shape)}")
    count = host_int(ctx, k, "k")
    if count < 0:
        ctx.fail(f"Need k >= 0, got {count}")
    if input.ndim < 1:
        ctx.fail(f"input must be >= 1-D, got shape {shape_str(input.shape)}")
    columns = input.shape[-1]
    if columns < count:
        ctx.fail(f"input must have at least k columns. Had {columns}, needed {count}")
    # A stable ascending sort of the reversed row, read backwards, is descending with ties in
    # increasing index order, without negating values (which unsigned types cannot take).
    ascending = stable_argsort(xp, input[..., ::-1], axis=-1)
    indices = columns - 1 - ascending[..., ::-1][..., :count]
    if count and xp is np and (input.dtype.kind == "f" or input.dtype.name == "bfloat16"):
        _nan_rows_as_tensorflow(input, indices, count, sorted)
    values = xp.take_along_axis(input, indices, axis=-1)
    return values, indices.astype(ctx.out_dtype(1))


def _nan_rows_as_tensorflow(input, indices, count: int, is_sorted: bool) -> None:
    """NaN compares false with everything, so TensorFlow's order of a row holding one follows
    the steps of its sorting algorithms (cpp_order.py replays them); other rows are done."""
    rows = input.reshape(-1, input.shape[-1])
    flat = indices.reshape(-1, count)
    lanes = 4 if input.dtype.itemsize == 8 else 8   # values per 32-byte SIMD packet in Eigen
    for row in np.flatnonzero(np.isnan(rows).any(axis=-1)):
        flat[row] = top_k_row(rows[row].astype(np.float64).tolist(), count, is_sorted, lanes)


_MAX_WHERE_RANK = 8  # TensorFlow's kernel is instantiated for ranks 1 to 8


@kernel("Where")
def where(ctx, input):
    if not 1 <= input.ndim <= _MAX_WHERE_RANK:
        ctx.fail(f"WhereOp : Unhandled input dimensions: {input.ndim}")
    return ctx.xp.argwhere(input).astype(np.int64)


# --- Unique*, ListDiff, InvertPermutation ---------------------------------------------------------

def _unique(ctx, x, axis: int | None):
    """(unique values or slices in order of first appearance, index of each input element's value,
    count of each value)."""
    xp = ctx.xp
    if axis is None:
        keys = x
    else:  # each slice along `axis` becomes one row to compare whole
        keys = xp.moveaxis(x, axis, 0).reshape(x.shape[axis], element_count(x.shape) // max(
            x.shape[axis], 1))
    _, first, inverse, counts = xp.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True, axis=None if axis is None else 0,
                                          equal_nan=False)
    order = xp.argsort(first)                 # sorted rank -> rank of first appearance
    appearance = xp.empty_like(order)
    appearance[order] = xp.arange(order.size)
    values = xp.take(x, first[order], axis=axis or 0)
    index_type = ctx.out_dtype(1)
    return (values, appearance[inverse.reshape(-1)].astype(index_type),
            counts[order].astype(index_type))


def _unique_axis(ctx, x, axis_tensor) -> int | None:
    """UniqueV2's axis input: empty means a vector input, else one axis."""
    if axis_tensor.ndim != 1:
        ctx.fail("axis expects a 1D vector.")
    if axis_tensor.size > 1:
        ctx.fail("axis does not support input tensors larger than 1 elements")
    if axis_tensor.size == 0:
        return None
    requested = host_ints(axis_tensor)[0]
    wrapped = wrap_axis(requested, x.ndim)
    if wrapped is None:
        ctx.fail(f"axis has to be between [0, {x.ndim})")
    return wrapped


def _check_vector(ctx, x, name: str = "unique") -> None:
    if x.ndim != 1:
        ctx.fail(f"{name} expects a 1D vector.")


@kernel("Unique")
def unique(ctx, x):
    _check_vector(ctx, x)
    return _unique(ctx, x, None)[:2]


@kernel("UniqueWithCounts")
def unique_with_counts(ctx, x):
    _check_vector(ctx, x)
    return _unique(ctx, x, None)


def _unique_v2(ctx, x, axis):
    wrapped = _unique_axis(ctx, x, axis)
    if wrapped is None:
        _check_vector(ctx, x)
    return _unique(ctx, x, wrapped)


@kernel("UniqueV2")
def unique_v2(ctx, x, axis):
    return _unique_v2(ctx, x, axis)[:2]


@kernel("UniqueWithCountsV2")
def unique_with_counts_v2(ctx, x, axis):
    return _unique_v2(ctx, x, axis)


@kernel("ListDiff")
def list_diff(ctx, x, y):
    xp = ctx.xp
    for name, vector in (("x", x), ("y", y)):
        if vector.ndim != 1:
            ctx.fail(f"{name} should be a 1D vector.")
    kept = ~xp.isin(x, y)
    return x[kept], xp.flatnonzero(kept).astype(ctx.out_dtype(1))


@kernel("InvertPermutation")
def invert_permutation(ctx, x):
    xp = ctx.xp
    _check_vector(ctx, x, "invert_permutation")
    count = x.size
    outside = first_true(xp, (x < 0) | (x >= count))
    if outside is not None:
        ctx.fail(f"{int(x[outside])} is not between 0 and {count}")
    # A repeat shows as equal neighbours after a stable sort; the later of the two positions is
    # where TensorFlow's scan notices it.
    order = stable_argsort(xp, x)
    repeats = order[1:][x[order[1:]] == x[order[:-1]]]
    if repeats.size:
        ctx.fail(f"{int(x[int(repeats.min())])} is duplicated in the input.")
    inverse = xp.empty_like(x)
    inverse[x] = xp.arange(count, dtype=x.dtype)
    return inverse
