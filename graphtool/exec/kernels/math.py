"""Kernels of the math family's elementwise ops: arithmetic, comparisons, logic, unary functions,
complex parts, the gradients of unary ops, selects, clipping and sums of many tensors.

They follow TensorFlow's CPU kernels: integer division and remainder by zero are errors, other
overflow wraps silently, NaN propagates through Maximum/Minimum, and half/bfloat16 arithmetic is
numpy's (each operation evaluated in float32 and rounded, as Eigen does). Cast, the special
functions, reductions and matrix products live in sibling modules imported at the end.
"""
from __future__ import annotations

import functools

import numpy as np

from . import math_special, variant
from .math_common import (LOW_PRECISION, add_in_tensorflow_order, broadcast_shape, check_nonzero_divisor, compute_dtype, flush_denormals,
                          is_complex, is_integer, math_kernel, require_same_shape, shape_text,
                          truncate_divide, typed)
from .registry import kernel

# --- binary arithmetic ----------------------------------------------------------------------


def _binary(*ops: str):
    """Register fn(ctx, x, y) as the kernel of binary ops whose inputs broadcast (checked first,
    for TensorFlow's error message, when the shapes differ and neither is a scalar)."""
    def register(fn):
        @functools.wraps(fn)
        def binary(ctx, x, y):
            if x.shape != y.shape and x.ndim and y.ndim:
                broadcast_shape(ctx, x, y)
            result = fn(ctx, x, y)
            # math_kernel's wrapper, inline (these are the commonest small kernels, and a call is
            # a good share of their time): the result as an array of the output's dtype.
            want = ctx.np_out_dtypes[0]
            if type(result) is ctx.xp.ndarray and result.dtype is want:
                return result
            if type(result) is want.type:   # a numpy scalar (0-d inputs): typed()'s last case
                return ctx.xp.asarray(result)
            return typed(ctx, result)
        kernel(*ops)(binary)
        return fn
    return register


@_binary("Add", "AddV2")
def add(ctx, x, y):
    return ctx.xp.add(x, y)   # strings (object arrays of bytes) concatenate


@_binary("Sub")
def sub(ctx, x, y):
    return x - y


@_binary("Mul")
def mul(ctx, x, y):
    return x * y


@_binary("Div", "RealDiv")
def div(ctx, x, y):
    # TensorFlow has no integer RealDiv on CPU; it gets Div's C semantics here.
    if is_integer(x.dtype):
        check_nonzero_divisor(ctx, y)
        return truncate_divide(ctx.xp, x, y)
    return x / y


@_binary("TruncateDiv")
def truncate_div(ctx, x, y):
    if is_integer(x.dtype):
        check_nonzero_divisor(ctx, y)
        return truncate_divide(ctx.xp, x, y)
    return ctx.xp.trunc(x / y)


@_binary("FloorDiv")
def floor_div(ctx, x, y):
    if is_integer(x.dtype):
        check_nonzero_divisor(ctx, y)
        return ctx.xp.floor_divide(x, y)
    # numpy's float floor_divide rounds via fmod (1 // 0.1 == 9); TensorFlow takes floor(x / y).
    return ctx.xp.floor(x / y)


@_binary("FloorMod")
def floor_mod(ctx, x, y):
    xp = ctx.xp
    if is_integer(x.dtype):
        check_nonzero_divisor(ctx, y)
        return xp.mod(x, y)
    # TensorFlow's formula: the C remainder, moved by y when its sign differs from y's.
    remainder = xp.fmod(x, y)
    return xp.where((remainder != 0) & ((remainder < 0) != (y < 0)), remainder + y, remainder)


@_binary("Mod", "TruncateMod")
def truncate_mod(ctx, x, y):
    check_nonzero_divisor(ctx, y)
    return ctx.xp.fmod(x, y)   # C's remainder (sign of x) for integers and floats alike


@_binary("Pow")
def pow_(ctx, x, y):
    xp = ctx.xp
    if is_integer(x.dtype):
        if xp.any(y < 0):
            ctx.fail("Integers to negative integer powers are not allowed")
        return xp.power(x, y)
    if is_complex(x.dtype):
        # C's cpow, which TensorFlow calls: exp(y log x), so 0 ** 0 is NaN rather than numpy's 1.
        return xp.exp(y * xp.log(x))
    return xp.power(x, y)


@_binary("Maximum")
def maximum(ctx, x, y):
    return ctx.xp.maximum(x, y)   # NaN in either input gives NaN, as in TensorFlow


@_binary("Minimum")
def minimum(ctx, x, y):
    return ctx.xp.minimum(x, y)


@_binary("SquaredDifference")
def squared_difference(ctx, x, y):
    difference = x - y
    return difference * ctx.xp.conj(difference) if is_complex(x.dtype) else difference * difference


@_binary("Atan2")
def atan2(ctx, y, x):
    return ctx.xp.arctan2(y, x)


# The "no NaN" ops: a zero decides the result whatever the other operand (NaN included).
# Where x is zero, Xdivy and Xlogy give x itself (TensorFlow keeps the sign of -0.0).

@_binary("DivNoNan")
def div_no_nan(ctx, x, y):
    return ctx.xp.where(y == 0, 0, x / y)


@_binary("MulNoNan")
def mul_no_nan(ctx, x, y):
    return ctx.xp.where(y == 0, 0, x * y)


@_binary("Xdivy")
def xdivy(ctx, x, y):
    return ctx.xp.where(x == 0, x, x / y)


@_binary("Xlogy")
def xlogy(ctx, x, y):
    return ctx.xp.where(x == 0, x, x * ctx.xp.log(y))


# --- bits -----------------------------------------------------------------------------------

@_binary("BitwiseAnd")
def bitwise_and(ctx, x, y):
    return x & y


@_binary("BitwiseOr")
def bitwise_or(ctx, x, y):
    return x | y


@_binary("BitwiseXor")
def bitwise_xor(ctx, x, y):
    return x ^ y


def _shift_amount(xp, x, y):
    """TensorFlow clamps shift amounts to [0, bits - 1] (C leaves larger shifts undefined)."""
    return xp.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(x.dtype)


@_binary("LeftShift")
def left_shift(ctx, x, y):
    return ctx.xp.left_shift(x, _shift_amount(ctx.xp, x, y))


@_binary("RightShift")
def right_shift(ctx, x, y):
    return ctx.xp.right_shift(x, _shift_amount(ctx.xp, x, y))   # arithmetic for signed types


# --- comparisons and logic ------------------------------------------------------------------

# Broadcasting ops with a bool result, by the array-module function computing them.
_PREDICATES = {"Less": "less", "LessEqual": "less_equal", "Greater": "greater",
               "GreaterEqual": "greater_equal", "LogicalAnd": "logical_and",
               "LogicalOr": "logical_or"}


@_binary(*_PREDICATES)
def compare(ctx, x, y):
    return getattr(ctx.xp, _PREDICATES[ctx.op])(x, y)


@math_kernel("Equal", "NotEqual")
def equal(ctx, x, y, *, incompatible_shape_error):
    xp = ctx.xp
    equal_op = ctx.op == "Equal"
    if not incompatible_shape_error:
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:  # TensorFlow's answer for shapes that cannot broadcast
            return xp.asarray(not equal_op)
    broadcast_shape(ctx, x, y)
    return xp.equal(x, y) if equal_op else xp.not_equal(x, y)


@math_kernel("ApproximateEqual")
def approximate_equal(ctx, x, y, *, tolerance):
    if x.shape != y.shape:
        ctx.fail(f"x and y must be of the same shape. x shape: {shape_text(x.shape)}. "
                 f"y shape: {shape_text(y.shape)}")
    return ctx.xp.abs(x - y) < ctx.xp.asarray(tolerance, dtype=x.dtype)


@math_kernel("LogicalNot")
def logical_not(ctx, x):
    return ctx.xp.logical_not(x)


# --- unary functions ------------------------------------------------------------------------

# Ops computed by one array-module function of the same meaning.
_UNARY = {"Abs": "abs", "Neg": "negative", "Square": "square", "Sqrt": "sqrt", "Exp": "exp",
          "Expm1": "expm1", "Log": "log", "Sin": "sin", "Cos": "cos",
          "Tan": "tan", "Asin": "arcsin", "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh",
          "Cosh": "cosh", "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh",
          "Tanh": "tanh", "Floor": "floor", "Ceil": "ceil", "Rint": "rint", "Invert": "invert",
          "IsNan": "isnan", "IsInf": "isinf", "IsFinite": "isfinite", "Conj": "conj",
          "Real": "real", "Imag": "imag", "Angle": "angle", "ComplexAbs": "abs"}


@math_kernel(*_UNARY)
def unary(ctx, x):
    return getattr(ctx.xp, _UNARY[ctx.op])(x)


@math_kernel("Sign")
def sign(ctx, x):
    return ctx.xp.sign(x)   # NaN for NaN, x / |x| for complex numbers


@math_kernel("Round")
def round_(ctx, x):
    # Half to even. Integers are already round (TensorFlow 2.21's CPU kernel returns zeros for
    # int32/int64, a bug not copied here).
    return x if is_integer(x.dtype) else ctx.xp.round(x)


def _float_function(fn):
    """A kernel computing fn(xp, x) in float32 for half/bfloat16 inputs (rounded once, as Eigen
    rounds its functions of half) and in the input's own type otherwise."""
    def kernel(ctx, x):
        return fn(ctx.xp, x.astype(compute_dtype(x.dtype), copy=False))
    kernel.__name__ = fn.__name__
    return kernel


def _reciprocal(xp, x):
    if is_integer(x.dtype):   # no TensorFlow CPU kernel; integer 1 / x
        return truncate_divide(xp, xp.ones_like(x), x)
    return 1 / x


def _rsqrt(xp, x):
    return 1 / xp.sqrt(x)


def _log1p(xp, x):
    if not is_complex(x.dtype):
        return xp.log1p(x)
    # numpy's complex log1p computes log|1 + z| directly, losing all digits for small z:
    # |1 + z|^2 = 1 + (x (2 + x) + y^2) keeps them.
    real, imag = x.real, x.imag
    result = xp.empty_like(x)
    result.real = 0.5 * xp.log1p(real * (2 + real) + imag * imag)
    result.imag = xp.arctan2(imag, 1 + real)
    return result


@math_kernel("Sigmoid")
def sigmoid(ctx, x):
    xp = ctx.xp
    if is_complex(x.dtype):
        return 1 / (1 + xp.exp(-x))
    if x.dtype in LOW_PRECISION:
        # Eigen's formula for half and bfloat16, each operation rounded in the type.
        e = xp.exp(x)
        return flush_denormals(xp, xp.where(xp.isinf(e), 1, e / (1 + e)).astype(x.dtype, copy=False))
    # exp of a non-positive number only: no overflow, full relative precision for x << 0.
    e = xp.exp(-xp.abs(x))
    return flush_denormals(xp, xp.where(x >= 0, 1 / (1 + e), e / (1 + e)))


def _in_float64(fn):
    """A float64 special function applied to any float input (cast back by the kernel)."""
    return lambda xp, x: fn(xp, x.astype(np.float64))


def _error_function(fn):
    """erf/erfc in float64, with just the precision the input type keeps."""
    def apply(xp, x):
        precision = "double" if x.dtype == np.float64 else "single"
        return fn(xp, x.astype(np.float64), precision)
    return apply


for _ops, _fn in ((("Reciprocal", "Inv"), _reciprocal), (("Rsqrt",), _rsqrt),
                  (("Log1p",), _log1p), (("Erf",), _error_function(math_special.erf)),
                  (("Erfc",), _error_function(math_special.erfc)),
                  (("Lgamma",), _in_float64(math_special.lgamma)),
                  (("Digamma",), _in_float64(math_special.digamma))):
    math_kernel(*_ops)(_float_function(_fn))


@math_kernel("Erfinv", "Ndtri")
def inverse_normal(ctx, x):
    # Not through _float_function: Erfinv rounds x / 2 + 1/2 in x's own type, half included.
    if ctx.op == "Erfinv":
        return math_special.erfinv(ctx.xp, x).astype(x.dtype)
    return math_special.ndtri(ctx.xp, x.astype(np.float64)).astype(x.dtype)


# --- gradients of unary ops, from the forward output y and the incoming gradient dy ---------
# Written in TensorFlow's order of operations and with constants of y's type (a Python float
# would promote bfloat16 to float32), so half precision rounds the same way.

def _gradient(*ops: str):
    """Register fn(xp, y, dy) as the kernel of unary-op gradients (y's shape, dy's size)."""
    def register(fn):
        @functools.wraps(fn)
        def gradient(ctx, y, dy):
            if y.size != dy.size:
                ctx.fail(f"The two arguments to a cwise op must have same number of elements, "
                         f"got {y.size} and {dy.size}")
            return fn(ctx.xp, y, dy.reshape(y.shape))
        math_kernel(*ops)(gradient)
        return fn
    return register


@_gradient("TanhGrad")
def tanh_grad(xp, y, dy):
    return dy * (1 - y * y)


@_gradient("SigmoidGrad")
def sigmoid_grad(xp, y, dy):
    return dy * y * (1 - y)


@_gradient("SqrtGrad")
def sqrt_grad(xp, y, dy):
    return xp.asarray(0.5, dtype=y.dtype) * dy / xp.conj(y)


@_gradient("RsqrtGrad")
def rsqrt_grad(xp, y, dy):
    y_conj = xp.conj(y)
    return xp.asarray(-0.5, dtype=y.dtype) * (dy * y_conj) * (y_conj * y_conj)


@_gradient("ReciprocalGrad", "InvGrad")
def reciprocal_grad(xp, y, dy):
    y_conj = xp.conj(y)
    return -dy * y_conj * y_conj


# --- complex numbers from parts -------------------------------------------------------------

@math_kernel("Complex")
def complex_(ctx, real, imag):
    xp = ctx.xp
    # Assigning the parts keeps infinities intact (real + 1j * imag would make NaNs of them).
    out = xp.empty(broadcast_shape(ctx, real, imag), dtype=ctx.out_dtype(0))
    out.real = real
    out.imag = imag
    return out


# --- selection, clipping, sums of many ------------------------------------------------------

@math_kernel("Select")
def select(ctx, condition, t, e):
    """TensorFlow v1 Select: a scalar condition picks a whole input, a vector condition picks
    rows of higher-rank inputs, any other condition has the inputs' shape."""
    if t.shape != e.shape:
        ctx.fail(f"'then' and 'else' must have the same size.  but received: "
                 f"{shape_text(t.shape)} vs. {shape_text(e.shape)}")
    if condition.ndim == 0:
        return t if bool(condition) else e
    if condition.ndim == 1 and t.ndim != 1:
        if t.ndim == 0:
            ctx.fail(f"'then' must be at least a vector, but saw shape: {shape_text(t.shape)}")
        if t.shape[0] != condition.shape[0]:
            ctx.fail(f"Number of batches of 'then' must match size of 'cond', but saw: "
                     f"{t.shape[0]} vs. {condition.shape[0]}")
        condition = condition.reshape(condition.shape + (1,) * (t.ndim - 1))
    else:
        require_same_shape(ctx, [condition, t, e], "Select")
    return ctx.xp.where(condition, t, e)


@math_kernel("SelectV2")
def select_v2(ctx, condition, t, e):
    try:
        np.broadcast_shapes(condition.shape, t.shape, e.shape)
    except ValueError:
        ctx.fail(f"condition {shape_text(condition.shape)}, then {shape_text(t.shape)}, and else "
                 f"{shape_text(e.shape)} must be broadcastable")
    return ctx.xp.where(condition, t, e)


@math_kernel("ClipByValue")
def clip_by_value(ctx, t, low, high):
    if any(bound.ndim and bound.shape != t.shape for bound in (low, high)):
        ctx.fail(f"clip_value_min and clip_value_max must be either of the same shape as input, "
                 f"or a scalar. input shape: {shape_text(t.shape)}clip_value_min shape: "
                 f"{shape_text(low.shape)}clip_value_max shape: {shape_text(high.shape)}")
    xp = ctx.xp
    # max(min(t, high), low) with C++'s std::min/std::max comparisons: a NaN bound is ignored,
    # a NaN t stays NaN, and low wins when low > high.
    below_high = xp.where(high < t, high, t)
    return xp.where(below_high < low, low, below_high)


@math_kernel("AddN", "AccumulateNV2")
def add_n(ctx, *inputs):
    require_same_shape(ctx, inputs, ctx.op)
    if variant.is_variant(ctx):
        return variant.add_n(ctx, inputs)
    return add_in_tensorflow_order(inputs)


# Register the rest of the family.
from . import math_cast, math_fft, math_linalg, math_matrix, math_reduce  # noqa: E402,F401
