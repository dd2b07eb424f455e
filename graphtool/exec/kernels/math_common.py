"""What the math kernels share: their registration decorator, dtype predicates that know
ml_dtypes' bfloat16 (whose numpy kind is 'V', not 'f'), and input checks with TensorFlow's error
text.

The math kernels live in math.py (elementwise ops, selects, sums of many), math_cast.py (Cast),
math_special.py (erf, lgamma, digamma), math_reduce.py (reductions, arg-reductions, scans) and
math_linalg.py (matrix products, Einsum), math_matrix.py (decompositions and solvers) and
math_fft.py (Fourier transforms); math.py imports the others.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from .registry import CPU, GPU, kernel

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
# TensorFlow (Eigen) computes these in float32 and rounds after every operation.
LOW_PRECISION = (FLOAT16, BFLOAT16)


# TensorFlow runs its CPU kernels with denormals flushed to zero (the FTZ/DAZ bits), so float32,
# float64 and bfloat16 (computed in float32) results that underflow come out as 0. float16 is
# converted from a float32 result, which can round to a float16 denormal: those stay.
_FLUSHED = {FLOAT32: float(np.finfo(np.float32).tiny), FLOAT64: float(np.finfo(np.float64).tiny),
            BFLOAT16: float(np.finfo(np.float32).tiny)}


def flush_denormals(xp, values):
    """`values` with every denormal replaced by 0 (same sign), as TensorFlow's flush-to-zero
    arithmetic gives it; other dtypes unchanged."""
    tiny = _FLUSHED.get(values.dtype)
    if tiny is None:
        return values
    return xp.where(xp.abs(values) < values.dtype.type(tiny), values * values.dtype.type(0), values)


def is_integer(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == BFLOAT16


def math_kernel(*ops: str, devices=(CPU, GPU), expensive: bool = False):
    """Register the decorated function as the kernel of `ops`, with each result returned as an
    array of its output's dtype (numpy gives scalars for 0-d results). The executor runs kernels
    with numpy's floating-point warnings off (TensorFlow yields inf/NaN and wraps integers
    silently), once per thread rather than per call."""
    def register(fn):
        @functools.wraps(fn)
        def run(ctx, *inputs, **attrs):
            result = fn(ctx, *inputs, **attrs)
            # typed()'s first case inline (this wraps most kernels; a call is a good share of a
            # small kernel's time): already an array of the output's dtype.
            if type(result) is ctx.xp.ndarray and result.dtype is ctx.np_out_dtypes[0]:
                return result
            if isinstance(result, tuple):
                return tuple(typed(ctx, value, i) for i, value in enumerate(result))
            return typed(ctx, result)
        return kernel(*ops, devices=devices, expensive=expensive)(run)
    return register


def typed(ctx, value, index: int = 0):
    """`value` as an array of output `index`'s dtype (no copy when it already is one)."""
    want = ctx.np_out_dtypes[index]
    if isinstance(value, ctx.xp.ndarray) and value.dtype == want:
        return value
    if want == object and isinstance(value, np.ndarray):   # variants stay host objects on a GPU
        return value
    if type(value) is want.type:   # a numpy scalar of the right type (0-d results): no dtype to apply
        return ctx.xp.asarray(value)
    return ctx.xp.asarray(value, dtype=want)


def shape_text(shape) -> str:
    """A shape as TensorFlow prints it in errors: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def broadcast_shape(ctx, *arrays) -> tuple[int, ...]:
    """The broadcast shape of the arrays, or TensorFlow's "Incompatible shapes" error."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        ctx.fail("Incompatible shapes: " + " vs. ".join(shape_text(a.shape) for a in arrays))


def require_same_shape(ctx, arrays, op: str) -> None:
    """TensorFlow's check that every input of `op` has one shape (AddN, v1 Select)."""
    for index, array in enumerate(arrays[1:], start=1):
        if array.shape != arrays[0].shape:
            ctx.fail(f"Inputs to operation {op} of type {op} must have the same size and shape.  "
                     f"Input 0: {shape_text(arrays[0].shape)} != input {index}: "
                     f"{shape_text(array.shape)}")


def check_nonzero_divisor(ctx, y) -> None:
    """Integer division and remainder by zero are errors in TensorFlow."""
    if is_integer(y.dtype) and not ctx.xp.all(y != 0):
        ctx.fail("Integer division by zero")


def truncate_divide(xp, x, y):
    """Integer division rounding toward zero (C's `/`), from numpy's floor division."""
    quotient = xp.floor_divide(x, y)
    inexact = (quotient * y != x) & ((x < 0) != (y < 0))
    return quotient + inexact.astype(quotient.dtype)


def true_divide(xp, x, y):
    """x / y rounded as IEEE division, on any array module: the JIT's (jit/runtime.XlaNumpy)
    says how, since XLA would multiply by the reciprocal of a broadcast divisor instead."""
    exact = getattr(xp, "exact_divide", None)
    return x / y if exact is None else exact(x, y)


def to_host(array) -> np.ndarray:
    """A small metadata tensor (axes, a dimension) as a numpy array, wherever it lives."""
    return array.get() if hasattr(array, "get") else np.asarray(array)


def compute_dtype(dtype) -> np.dtype:
    """The dtype to evaluate a float function in: float32 for half and bfloat16 (rounded to the
    output dtype once, as Eigen does for its transcendental functions), else the dtype itself."""
    return FLOAT32 if np.dtype(dtype) in LOW_PRECISION else np.dtype(dtype)


# TensorFlow's AddN adds its first N % 8 inputs (8 when N % 8 == 0, 9 when N % 8 == 1) left to
# right, then each following group of 8 summed on its own: the order matters in half precision.
# Written with `+` only, so the JIT's lowering (jax arrays) sums in the same order.
_ADD_N_GROUP = 8


def add_in_tensorflow_order(inputs):
    """The sum of one or more same-shape arrays, in the order TensorFlow's AddN adds them."""
    if len(inputs) == 1:
        return inputs[0]
    first = len(inputs) % _ADD_N_GROUP
    first += _ADD_N_GROUP if first < 2 else 0
    total = _sum_left_to_right(inputs[:first])
    for start in range(first, len(inputs), _ADD_N_GROUP):
        total = total + _sum_left_to_right(inputs[start:start + _ADD_N_GROUP])
    return total


def _sum_left_to_right(arrays):
    total = arrays[0] + arrays[1]
    for array in arrays[2:]:
        total = total + array
    return total
