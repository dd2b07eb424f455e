"""What the math family's modules share: TensorFlow's type sets and static value evaluation.

The math family is split over math.py (elementwise ops, casts, selects), math_reduce.py
(reductions, arg-reductions, cumulative ops), math_linalg.py (MatMul, BatchMatMul, Einsum),
math_matrix.py (decompositions and solvers) and math_fft.py (Fourier transforms); every op they
declare belongs to the family "math".

Value functions evaluate ops on statically known (possibly partial) small tensors, so that shape
arithmetic such as `Prod(Shape(x))` or `Shape(x)[0] * 2` gives static shapes downstream. A partial
value is an object array with None for unknown entries; unknown entries are carried through
elementwise ops and reductions as unknown results.
"""
from __future__ import annotations

import functools

import numpy as np

from ..dtypes import DType
from ..shapes import Shape, ShapeError, broadcast_shapes
from .inference import InferenceContext, element_product, may_build
from .registry import register

register_math = functools.partial(register, family="math")

# TensorFlow's type groups, as the entries of a REGISTER_OP type list.
FLOAT = ("bfloat16", "half", "float", "double")
COMPLEX = ("complex64", "complex128")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
QUANTIZED = ("qint8", "quint8", "qint32", "qint16", "quint16")
REAL = FLOAT + SIGNED + UNSIGNED                       # TensorFlow's realnumbertype
NUMBER = REAL + COMPLEX + QUANTIZED                     # TensorFlow's numbertype


def type_set(*groups) -> str:
    """`{a, b, ...}` from type groups and single type names."""
    names = [name for group in groups for name in ((group,) if isinstance(group, str) else group)]
    return "{" + ", ".join(names) + "}"


# --- static values --------------------------------------------------------------------------

def evaluable(dtype: DType) -> bool:
    """Whether values of this dtype are worth computing statically (numbers and bools)."""
    return dtype.numpy is not None and (dtype.is_integer or dtype.is_floating or dtype.is_bool)


def split_partial(partial: np.ndarray, dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, known): the partial value as a typed array with unknown entries filled by 1
    (harmless in every op, including as a divisor), and the mask of known entries."""
    known = np.vectorize(lambda v: v is not None, otypes=[bool])(partial)
    return np.where(known, partial, 1).astype(dtype.numpy), known


def join_partial(numbers: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Inverse of split_partial: a typed array when every entry is known, else an object array
    with None where unknown."""
    if known.all():
        return numbers
    joined = numbers.astype(object)
    joined[~known] = None
    return joined


def _partial_inputs(ctx: InferenceContext, count: int):
    """[(numbers, known)] for the first `count` inputs, or None when one is unknown or is not a
    number/bool tensor."""
    split = []
    for i in range(count):
        partial = ctx.partial_value(i)
        if partial is None or not evaluable(ctx.dtype(i)):
            return None
        split.append(split_partial(partial, ctx.dtype(i)))
    return split


def elementwise_value(function, *, arity: int | None = None, nonzero_divisor: bool = False):
    """A value function applying numpy's `function` to the op's first `arity` inputs (default:
    the ufunc's own arity), cast to the output dtype. With `nonzero_divisor`, an integer division
    by zero (an error in TensorFlow) gives an unknown entry rather than numpy's 0."""
    arity = function.nin if arity is None else arity

    def value(ctx: InferenceContext):
        inputs = _partial_inputs(ctx, arity)
        if inputs is None or not evaluable(ctx.output_dtypes[0]):
            return None
        numbers = [n for n, _ in inputs]
        try:  # broadcasting [4096, 1] against [1, 4096] would make 16M elements from 8K
            if not may_build(element_product(np.broadcast_shapes(*(n.shape for n in numbers)))):
                return None
        except ValueError:
            return None  # incompatible shapes: the shape function reports them
        known = functools.reduce(np.logical_and, [k for _, k in inputs])
        if nonzero_divisor and ctx.dtype(1).is_integer:
            known = known & (numbers[1] != 0)
            numbers[1] = np.where(numbers[1] == 0, 1, numbers[1])
        # Integer wrap-around and float overflow behave as in TensorFlow, so numpy's warnings are
        # noise; a type numpy cannot apply the function to leaves the value unknown (the node's
        # attrs are checked elsewhere, and a value is never a reason for a shape error).
        with np.errstate(all="ignore"):
            try:
                result = np.asarray(function(*numbers)).astype(ctx.output_dtypes[0].numpy)
            except (TypeError, ValueError, OverflowError):
                return None
        return join_partial(result, np.broadcast_to(known, result.shape))

    return value


def reduction_value(function):
    """A value function for a reduction (np.sum, np.prod) over the axes in input 1, honouring
    keep_dims; an output entry is unknown when any entry it reduces is unknown."""
    def value(ctx: InferenceContext):
        inputs, axes = _partial_inputs(ctx, 1), ctx.int_list(1)
        if inputs is None or axes is None:
            return None
        (numbers, known), = inputs
        if any(not -numbers.ndim <= a < numbers.ndim for a in axes):
            return None
        axis_tuple = tuple(sorted({a % numbers.ndim for a in axes})) if numbers.ndim else ()
        keep = bool(ctx.attr("keep_dims"))
        with np.errstate(all="ignore"):
            try:
                result = function(numbers, axis=axis_tuple, keepdims=keep, dtype=numbers.dtype)
            except (TypeError, ValueError, OverflowError):
                return None
        return join_partial(np.asarray(result), np.all(known, axis=axis_tuple, keepdims=keep))

    return value


# --- shape helpers --------------------------------------------------------------------------

def merge_dims(ctx: InferenceContext, a: int | None, b: int | None, what: str) -> int | None:
    """The more specific of two dims that must be equal (None is unknown)."""
    if a is not None and b is not None and a != b:
        ctx.fail(f"{what} must be equal, but are {a} and {b}")
    return a if a is not None else b


def broadcast(ctx: InferenceContext, a: Shape, b: Shape) -> Shape:
    """Broadcast two shapes as TensorFlow's binary ops do, failing with both shapes named."""
    try:
        return broadcast_shapes(a, b)
    except ShapeError:
        ctx.fail(f"shapes {a} and {b} are not broadcast-compatible")
