"""Kernels of the array family: shapes and sizes, reshaping, concatenation and splitting, packing
and tiling, Bitcast and EnsureShape. The rest of the family lives in siblings imported below:
array_index.py (Slice, StridedSlice, Gather*, UnravelIndex), array_scatter.py (ScatterNd,
TensorScatter*, segment reductions, DynamicStitch), array_create.py (Pad*, Fill, Range, LinSpace,
*Like, broadcasting), array_select.py (Reverse*, OneHot, TopKV2, Where, Unique*, ListDiff,
InvertPermutation) and array_diag.py (band and diagonal matrix ops).

Results match TensorFlow's CPU kernels, error wording included. Ops that only rearrange their
input (Reshape, Transpose, Split, ...) return views: inputs are read-only for every kernel, so a
view is as good as a copy and costs nothing.
"""
from __future__ import annotations

from ...shapes import has_rank
from . import array_create, array_diag, array_index, array_scatter, array_select  # noqa: F401
from .array_common import element_count, host_int, host_ints, shape_str, vector_of, wrap_axis
from .registry import KernelContext, kernel

# --- Shape, ShapeN, Size, Rank --------------------------------------------------------------------


@kernel("Shape")
def shape(ctx, x):
    return ctx.xp.asarray(x.shape, dtype=ctx.out_dtype())


@kernel("ShapeN")
def shape_n(ctx, *xs):
    return tuple(ctx.xp.asarray(x.shape, dtype=ctx.out_dtype(i)) for i, x in enumerate(xs))


@kernel("Size")
def size(ctx, x):
    return ctx.xp.asarray(x.size, dtype=ctx.out_dtype())


@kernel("Rank")
def rank(ctx, x):
    return ctx.xp.asarray(x.ndim, dtype=ctx.out_dtype())


# --- Reshape, Transpose, ExpandDims, Squeeze ------------------------------------------------------

def _reshape_target(ctx, requested: list[int], data_shape) -> list[int]:
    """The requested shape with its -1 worked out, as TensorFlow's ReshapeOp does. Zero sizes stay
    out of the product so the -1 can still be inferred next to them: [0, 3] to [-1, 0] is [3, 0]."""
    unknown, product, has_zero = None, 1, False
    for i, size in enumerate(requested):
        if size == -1:
            if unknown is not None:
                ctx.fail(f"Only one input size may be -1, not both {unknown} and {i}")
            unknown = i
        elif size < 0:
            ctx.fail(f"Size {i} must be non-negative, not {size}")
        elif size == 0:
            has_zero = True
        else:
            product *= size
    target = list(requested)
    if unknown is not None:
        known_input = element_count(d for d in data_shape if d > 0 or not has_zero)
        input_has_zero = has_zero and 0 in data_shape
        if not input_has_zero and known_input % product:
            ctx.fail(f"Input to reshape is a tensor with {known_input} values, but the requested "
                     f"shape requires a multiple of {product}")
        target[unknown] = known_input // product
    if element_count(target) != element_count(data_shape):
        ctx.fail(f"Input to reshape is a tensor with {element_count(data_shape)} values, but the "
                 f"requested shape has {element_count(target)}")
    return target


@kernel("Reshape")
def reshape(ctx, tensor, shape):
    if shape.ndim != 1:
        ctx.fail(f"sizes input must be 1-D, not {shape_str(shape.shape)}")
    target = _reshape_target(ctx, host_ints(shape), tensor.shape)
    return tensor.reshape(target)


@kernel("Transpose")
def transpose(ctx, x, perm):
    if perm.ndim != 1:
        ctx.fail(f"perm must be rank 1, got shape {shape_str(perm.shape)}")
    order = host_ints(perm)
    if len(order) != x.ndim:
        ctx.fail(f"transpose expects a vector of size {x.ndim}. But input(1) is a vector of size "
                 f"{len(order)}")
    order = [axis + x.ndim if axis < 0 else axis for axis in order]
    for axis in order:
        if not 0 <= axis < x.ndim:
            ctx.fail(f"{axis} is out of range [0 .. {x.ndim})")
    for axis in range(x.ndim):
        if axis not in order:
            ctx.fail(f"{axis} is missing from {{{','.join(map(str, order))}}}.")
    return ctx.xp.transpose(x, order)


@kernel("ConjugateTranspose")
def conjugate_transpose(ctx, x, perm):
    moved = transpose(ctx, x, perm)
    return ctx.xp.conj(moved) if moved.dtype.kind == "c" else moved


@kernel("ExpandDims")
def expand_dims(ctx, input, dim):
    if dim.size != 1:
        ctx.fail("'dim' must be a tensor with a single value")
    axis = host_ints(dim)[0]
    if not -input.ndim - 1 <= axis <= input.ndim:
        ctx.fail(f"Tried to expand dim index {axis} for tensor with {input.ndim} dimensions.")
    return ctx.xp.expand_dims(input, axis)


@kernel("Squeeze")
def squeeze(ctx, input, *, squeeze_dims):
    chosen = set()
    for axis in squeeze_dims:
        wrapped = wrap_axis(axis, input.ndim)
        if wrapped is None:
            ctx.fail(f"Tried to squeeze dim index {axis} for tensor with {input.ndim} dimensions.")
        if input.shape[wrapped] != 1:
            ctx.fail(f"Can not squeeze dim[{wrapped}], expected a dimension of 1, got "
                     f"{input.shape[wrapped]}")
        chosen.add(wrapped)
    if not squeeze_dims:
        chosen = {i for i, d in enumerate(input.shape) if d == 1}
    return input.reshape([d for i, d in enumerate(input.shape) if i not in chosen])


# --- Concat, ConcatOffset, Split, SplitV ----------------------------------------------------------

def _concat(ctx, values, axis_tensor):
    first = values[0]
    axis = host_int(ctx, axis_tensor, "axis", allow_vector=True)
    if first.ndim == 0:
        ctx.fail("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    wrapped = wrap_axis(axis, first.ndim)
    if wrapped is None:
        ctx.fail(f"ConcatOp : Expected concatenating dimensions in the range [{-first.ndim}, "
                 f"{first.ndim}), but got {axis}")
    for i, value in enumerate(values[1:], start=1):
        if value.ndim != first.ndim:
            ctx.fail(f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                     f"{shape_str(first.shape)} vs. shape[{i}] = {shape_str(value.shape)}")
        for d, (a, b) in enumerate(zip(first.shape, value.shape)):
            if d != wrapped and a != b:
                ctx.fail(f"ConcatOp : Dimension {d} in both shapes must be equal: shape[0] = "
                         f"{shape_str(first.shape)} vs. shape[{i}] = {shape_str(value.shape)}")
    return ctx.xp.concatenate(values, axis=wrapped)


@kernel("ConcatV2")
def concat_v2(ctx, *inputs):
    return _concat(ctx, inputs[:-1], inputs[-1])


@kernel("Concat")
def concat(ctx, concat_dim, *values):
    return _concat(ctx, values, concat_dim)


@kernel("ConcatOffset")
def concat_offset(ctx, concat_dim, *shapes):
    dims = [vector_of(ctx, s, f"input {i}") for i, s in enumerate(shapes)]
    rank, axis = len(dims[0]), host_int(ctx, concat_dim, "concat_dim")
    wrapped = wrap_axis(axis, rank)
    if wrapped is None:
        ctx.fail(f"Concat dim is out of range: {axis} vs. {rank}")
    offsets, position = [], 0
    for i, sizes in enumerate(dims):
        if len(sizes) != rank:
            ctx.fail(f"input {i} should contain {rank} elements, but got {len(sizes)}")
        if any(a != b for d, (a, b) in enumerate(zip(sizes, dims[0])) if d != wrapped):
            ctx.fail(f"All dimensions except {wrapped} must match. Input {i} has shape "
                     f"[{' '.join(map(str, sizes))}] and doesn't match input 0 with shape "
                     f"[{' '.join(map(str, dims[0]))}].")
        offset = [0] * rank
        offset[wrapped] = position
        offsets.append(ctx.xp.asarray(offset, dtype=ctx.out_dtype(i)))
        position += sizes[wrapped]
    return tuple(offsets)


def _split_axis(ctx: KernelContext, split_dim, value) -> int:
    axis = host_int(ctx, split_dim, "split_dim")
    wrapped = wrap_axis(axis, value.ndim)
    if wrapped is None:
        ctx.fail(f"-input rank(-{value.ndim}) <= split_dim < input rank ({value.ndim}), but got "
                 f"{axis}")
    return wrapped


@kernel("Split")
def split(ctx, split_dim, value, *, num_split):
    axis = _split_axis(ctx, split_dim, value)
    if value.shape[axis] % num_split:
        ctx.fail(f"Number of ways to split should evenly divide the split dimension, but got "
                 f"split_dim {axis} (size = {value.shape[axis]}) and num_split {num_split}")
    return tuple(ctx.xp.split(value, num_split, axis=axis))


def _split_sizes(ctx, requested: list[int], whole: int) -> list[int]:
    """SplitV's size_splits with its -1 worked out, checked as TensorFlow does."""
    if len(requested) == 1:
        if requested[0] != whole:
            ctx.fail(f"If there is only one output, it must have the same size as the input. "
                     f"Input size: {whole} output size: {requested[0]}")
        return requested
    inferred, determined = None, 0
    for i, size in enumerate(requested):
        if size == -1:
            if inferred is not None:
                ctx.fail("There can only be one -1 in the input.")
            inferred = i
        elif size < 0:
            ctx.fail(f"Split size at index {i} must be >= 0. Got: {size}")
        else:
            determined += size
    if determined > whole or (inferred is None and determined != whole):
        ctx.fail("Determined shape must either match input shape along split_dim exactly if fully "
                 "specified, or be less than the size of the input along split_dim if not fully "
                 f"specified.  Got: {determined}")
    sizes = list(requested)
    if inferred is not None:
        sizes[inferred] = whole - determined
    return sizes


@kernel("SplitV")
def split_v(ctx, value, size_splits, split_dim, *, num_split):
    axis = _split_axis(ctx, split_dim, value)
    requested = vector_of(ctx, size_splits, "size_splits")
    if len(requested) != num_split:
        ctx.fail(f"size_splits has {len(requested)} entries but num_split is {num_split}")
    sizes = _split_sizes(ctx, requested, value.shape[axis])
    bounds = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
    return tuple(ctx.xp.split(value, bounds, axis=axis))


# --- Pack, Unpack, Tile ---------------------------------------------------------------------------

@kernel("Pack")
def pack(ctx, *values, axis):
    first = values[0]
    wrapped = wrap_axis(axis, first.ndim + 1)
    if wrapped is None:
        ctx.fail(f"axis = {axis} not in [{-first.ndim - 1}, {first.ndim + 1})")
    for i, value in enumerate(values[1:], start=1):
        if value.shape != first.shape:
            ctx.fail(f"Shapes of all inputs must match: values[0].shape = {shape_str(first.shape)} "
                     f"!= values[{i}].shape = {shape_str(value.shape)}")
    return ctx.xp.stack(values, axis=wrapped)


@kernel("Unpack")
def unpack(ctx, value, *, num, axis):
    wrapped = wrap_axis(axis, value.ndim)
    if wrapped is None:
        ctx.fail(f"axis = {axis} not in [{-value.ndim}, {value.ndim})")
    if value.shape[wrapped] != num:
        ctx.fail(f"Input shape axis {wrapped} must equal {num}, got shape {shape_str(value.shape)}")
    before = (slice(None),) * wrapped
    # The trailing Ellipsis keeps a 0-d result an array (plain integer indexing gives a scalar).
    return tuple(value[before + (i, Ellipsis)] for i in range(num))


@kernel("Tile")
def tile(ctx, input, multiples):
    counts = vector_of(ctx, multiples, "multiples")
    if len(counts) != input.ndim:
        ctx.fail(f"Expected multiples argument to be a vector of length {input.ndim} but got "
                 f"length {len(counts)}")
    for i, count in enumerate(counts):
        if count < 0:
            ctx.fail(f"Expected multiples[{i}] >= 0, but got {count}")
    return ctx.xp.tile(input, counts) if counts else input


# --- Bitcast, EnsureShape -------------------------------------------------------------------------

@kernel("Bitcast")
def bitcast(ctx, input, *, T):
    target = ctx.out_dtype()
    source_size, target_size = input.dtype.itemsize, target.itemsize
    contiguous = ctx.xp.ascontiguousarray(input)
    if source_size == target_size:
        return contiguous.view(target)
    if source_size > target_size:  # each element becomes a new last dim of smaller ones
        return contiguous.reshape(input.shape + (1,)).view(target)
    if input.ndim == 0 or input.shape[-1] != target_size // source_size:
        ctx.fail(f"Cannot bitcast from {T.enum} to {ctx.output_dtypes[0].base.enum}")
    return contiguous.view(target).reshape(input.shape[:-1])


@kernel("EnsureShape")
def ensure_shape(ctx, input, *, shape):
    if has_rank(shape) and (input.ndim != shape.rank or any(
            want is not None and want != have for want, have in zip(shape.dims, input.shape))):
        ctx.fail(f"Shape of tensor input {shape_str(input.shape)} is not compatible with expected "
                 f"shape {shape}.")
    return input
