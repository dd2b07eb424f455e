"""What the array family's modules share: dimension arithmetic, shape surgery, reading shape
and scalar inputs, static values, and registration under the family's name.

The dim helpers follow TensorFlow's InferenceContext (Add, Subtract, Multiply, Divide, Min, Merge,
Subshape, MergePrefix) so that our shape functions reach the same conclusions as TensorFlow's C++
ones on partially known shapes: a dim is an int or None (unknown), and a few rules make a result
known even with an unknown operand (0 * ? = 0, 1 * ? = ?, ? + 0 = ?).

The value helpers produce the (partial) static values that make shapes flow through chains such as
Shape -> StridedSlice -> Pack -> Reshape: numpy object arrays with None where an entry is unknown.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from . import registry
from .inference import InferenceContext, PerOutput

# Ops registered from any module of the family belong to the "array" family.
register = partial(registry.register, family="array")

INDEX_TYPES = "{int32, int64}"
INDEX_TYPES_INT32 = f"{INDEX_TYPES} = DT_INT32"     # ... defaulting to int32

# Inputs with no value stand in as all-unknown arrays only up to this size: beyond it they are data,
# not shape vectors, and an array of None would cost without telling anything.
_MAX_PLACEHOLDER_ELEMENTS = 64


# --- dim arithmetic -------------------------------------------------------------------------------

def add_dims(a, b):
    if a == 0:
        return b
    if b == 0:
        return a
    return None if a is None or b is None else a + b


def subtract_dims(a, b):
    if b == 0:
        return a
    if a is None or b is None:
        return None
    if a < b:
        raise ShapeError(f"negative dimension size caused by subtracting {b} from {a}")
    return a - b


def multiply_dims(a, b):
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return None if a is None or b is None else a * b


def divide_dim(dividend, divisor):
    """dividend / divisor, which must divide evenly when both are known."""
    if divisor == 1:
        return dividend
    if dividend is None or divisor is None:
        return None
    if divisor == 0:
        raise ShapeError("division by zero")
    if dividend % divisor:
        raise ShapeError(f"dimension size must be evenly divisible by {divisor} but is {dividend}")
    return dividend // divisor


def min_dims(a, b):
    if a == b:
        return a
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else min(a, b)


def merge_dims(a, b):
    """The more specific of two dims that must agree."""
    if a is not None and b is not None and a != b:
        raise ShapeError(f"dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


# --- shape surgery --------------------------------------------------------------------------------

def subshape(shape: Shape, start: int, end: int | None = None) -> Shape:
    """shape[start:end] with TensorFlow's Subshape rules: negative bounds count from the end,
    bounds past the rank are clamped, and a start past the end is an error."""
    if not has_rank(shape):
        return Shape.unknown()
    rank = shape.rank
    stop = rank if end is None else min(end, rank)
    begin = min(start, rank)
    if begin < 0:
        begin += rank
        if begin < 0:
            raise ShapeError(f"subshape start {start} is out of bounds for shape {shape}")
    if stop < 0:
        stop += rank
        if stop < 0:
            raise ShapeError(f"subshape end {end} is out of bounds for shape {shape}")
    if begin > stop:
        raise ShapeError(f"subshape of {shape} needs start <= end, got {start} and {end}")
    return Shape(shape.dims[begin:stop])


def replace_dim(shape: Shape, index: int, dim) -> Shape:
    if not has_rank(shape):
        return shape
    dims = list(shape.dims)
    dims[index] = dim
    return Shape(dims)


def merge_prefix(shape: Shape, prefix: Shape) -> Shape:
    """`shape` with its leading dims merged with `prefix` (which it must start with)."""
    if not has_rank(shape) or not has_rank(prefix):
        return shape
    if shape.rank < prefix.rank:
        raise ShapeError(f"shape {shape} must have rank at least {prefix.rank}")
    head = [merge_dims(a, b) for a, b in zip(shape.dims, prefix.dims)]
    return Shape(head + list(shape.dims[prefix.rank:]))


def element_count(shape: Shape) -> int | None:
    """The number of elements when known; a zero dim makes it known (0) despite unknown dims."""
    if not has_rank(shape):
        return None
    if 0 in shape.dims:
        return 0
    return shape.num_elements()


# --- reading inputs -------------------------------------------------------------------------------

def shape_tensor(ctx: InferenceContext, i: int) -> Shape:
    """Input i read as a shape vector (TensorFlow's MakeShapeFromShapeTensor): it must be 1-D;
    -1 or unknown entries are unknown dims and anything below -1 is invalid."""
    ctx.with_rank(i, 1)
    partial = ctx.partial_value(i)
    if partial is not None:
        invalid = [v for v in partial.ravel() if v is not None and v < -1]
        if invalid:
            ctx.fail(f"invalid value {invalid[0]} in the tensor used as a shape (input {i})")
    return ctx.shape_from_tensor(i)


def scalar_int(ctx: InferenceContext, i: int) -> int | None:
    """The value of a known single-element integer input (an axis, a count), else None."""
    value = ctx.value(i)
    if value is None:
        return None
    if value.size != 1:
        ctx.fail(f"input {i} must hold a single value, has shape {list(value.shape)}")
    return int(value.ravel()[0])


def scalar_dim(ctx: InferenceContext, i: int):
    """A scalar input used as a dimension size (depth, k, num_segments): known or None."""
    ctx.with_rank(i, 0)
    size = scalar_int(ctx, i)
    if size is not None and size < 0:
        ctx.fail(f"the dimension size given by input {i} must be non-negative, is {size}")
    return size


# --- static values --------------------------------------------------------------------------------

def partial_vector(items) -> np.ndarray:
    """A 1-D object array (None = unknown entry)."""
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def shape_value(shape: Shape) -> np.ndarray | None:
    """The value a Shape op produces for `shape`: its dims, None for unknown ones."""
    return partial_vector(shape.dims) if has_rank(shape) else None


def knows_nothing(value: np.ndarray | None) -> bool:
    return value is None or value.dtype == object and all(v is None for v in value.ravel())


def partial_or_unknown(ctx: InferenceContext, i: int) -> np.ndarray | None:
    """Input i's (partial) value; for an input with no value but a fully known small shape, an
    all-unknown array of that shape, so that e.g. Pack([?, 4]) still knows its second entry."""
    value = ctx.partial_value(i)
    if value is not None:
        return value
    count = element_count(ctx.shape(i))
    if count is None or count > _MAX_PLACEHOLDER_ELEMENTS:
        return None
    dims = [d for d in ctx.shape(i) if d is not None]   # all of them: the element count is known
    return np.full(dims, None, dtype=np.object_)


def per_output(values_fn):
    """A value function for a multi-output op from one that lists every output's value."""
    def value(ctx: InferenceContext):
        values = values_fn(ctx)
        return None if values is None else PerOutput(values)
    return value
