"""Lowerings of the math family's elementwise ops: arithmetic, comparisons, logic, unary
functions and their gradients, selects, clipping, sums of many, Cast, and matrix products.

They follow the interpreter's kernels (graphtool/exec/kernels/math*.py), which follow
TensorFlow: integer Div/TruncateDiv round toward zero and FloorDiv/FloorMod toward -inf, float
FloorMod is TensorFlow's fmod-based formula, NaN propagates through Maximum/Minimum, Round is
half to even, ArgMax skips NaN (reduce.py). jax runs with x64 enabled, so int64/float64 stay exact.

Not matched, and so documented: an integer division or remainder by zero, and an integer Pow with
a negative exponent, are errors in the interpreter (and TensorFlow) but give XLA's value (no
error) in a compiled cluster; the values are known only when the cluster runs.
"""
from __future__ import annotations

import numpy as np

from ...exec.kernels.math_common import add_in_tensorflow_order
from .common import const, is_integer, lowering

# --- binary arithmetic ----------------------------------------------------------------------


def _int_or_float(node) -> str | None:
    """Integer and real dtypes only (bitwise ops, divisions): bool has no arithmetic here."""
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"{node.op} on {dtype} has no lowering"


def _numeric(node) -> str | None:
    """Integer, real and complex dtypes (the ring operations)."""
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iufc" else f"{node.op} on {dtype} has no lowering"


def _float_only(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


def _integer_only(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iu" else f"{node.op} on {dtype} has no lowering"


@lowering("Add", "AddV2", complex_ok=True, supports=_numeric)
def add(ctx, x, y):
    return ctx.jnp.add(x, y)


@lowering("Sub", complex_ok=True, supports=_numeric)
def sub(ctx, x, y):
    return ctx.jnp.subtract(x, y)


@lowering("Mul", complex_ok=True, supports=_numeric)
def mul(ctx, x, y):
    return ctx.jnp.multiply(x, y)


@lowering("Div", "RealDiv", supports=_int_or_float)
def div(ctx, x, y):
    # lax.div rounds integer quotients toward zero (C's `/`), as TensorFlow's Div does.
    return ctx.lax.div(*ctx.jnp.broadcast_arrays(x, y)) if is_integer(x.dtype) else ctx.jnp.exact_divide(x, y)


@lowering("TruncateDiv", supports=_int_or_float)
def truncate_div(ctx, x, y):
    if is_integer(x.dtype):
        return ctx.lax.div(*ctx.jnp.broadcast_arrays(x, y))
    return ctx.jnp.trunc(ctx.jnp.exact_divide(x, y))


@lowering("FloorDiv", supports=_int_or_float)
def floor_div(ctx, x, y):
    if is_integer(x.dtype):
        return ctx.jnp.floor_divide(x, y)
    return ctx.jnp.floor(ctx.jnp.exact_divide(x, y))   # TensorFlow's floor(x / y), not numpy's fmod-based rounding


@lowering("FloorMod", supports=_int_or_float)
def floor_mod(ctx, x, y):
    jnp = ctx.jnp
    if is_integer(x.dtype):
        return jnp.remainder(x, y)
    x, y = jnp.broadcast_arrays(x, y)
    remainder = ctx.lax.rem(x, y)   # C's fmod
    zero = const(ctx, 0, remainder)
    return jnp.where((remainder != zero) & ((remainder < zero) != (y < zero)), remainder + y, remainder)


@lowering("Mod", "TruncateMod", supports=_int_or_float)
def truncate_mod(ctx, x, y):
    return ctx.lax.rem(*ctx.jnp.broadcast_arrays(x, y))


@lowering("Pow", supports=_int_or_float)
def pow_(ctx, x, y):
    return ctx.jnp.power(x, y)


@lowering("Maximum", supports=_int_or_float)
def maximum(ctx, x, y):
    return ctx.jnp.maximum(x, y)   # propagates NaN, as TensorFlow's does


@lowering("Minimum", supports=_int_or_float)
def minimum(ctx, x, y):
    return ctx.jnp.minimum(x, y)


@lowering("SquaredDifference", supports=_int_or_float)
def squared_difference(ctx, x, y):
    difference = x - y
    return difference * difference


@lowering("Atan2", supports=_float_only)
def atan2(ctx, y, x):
    return ctx.jnp.arctan2(y, x)


@lowering("DivNoNan", supports=_float_only)
def div_no_nan(ctx, x, y):
    return ctx.jnp.where(y == const(ctx, 0, y), const(ctx, 0, x), x / y)


@lowering("MulNoNan", supports=_float_only)
def mul_no_nan(ctx, x, y):
    return ctx.jnp.where(y == const(ctx, 0, y), const(ctx, 0, x), x * y)


@lowering("Xdivy", supports=_float_only)
def xdivy(ctx, x, y):
    return ctx.jnp.where(x == const(ctx, 0, x), x, x / y)


@lowering("Xlogy", supports=_float_only)
def xlogy(ctx, x, y):
    return ctx.jnp.where(x == const(ctx, 0, x), x, x * ctx.jnp.log(y))


# --- bits -----------------------------------------------------------------------------------

@lowering("BitwiseAnd", supports=_integer_only)
def bitwise_and(ctx, x, y):
    return x & y


@lowering("BitwiseOr", supports=_integer_only)
def bitwise_or(ctx, x, y):
    return x | y


@lowering("BitwiseXor", supports=_integer_only)
def bitwise_xor(ctx, x, y):
    return x ^ y


def _shift_amount(ctx, x, y):
    """TensorFlow clamps shift amounts to [0, bits - 1]."""
    bits = np.dtype(x.dtype).itemsize * 8
    return ctx.jnp.clip(y, 0, bits - 1).astype(x.dtype)


@lowering("LeftShift", supports=_integer_only)
def left_shift(ctx, x, y):
    return ctx.jnp.left_shift(x, _shift_amount(ctx, x, y))


@lowering("RightShift", supports=_integer_only)
def right_shift(ctx, x, y):
    return ctx.jnp.right_shift(x, _shift_amount(ctx, x, y))


@lowering("Invert", supports=_integer_only)
def invert(ctx, x):
    return ctx.jnp.invert(x)


# --- comparisons and logic ------------------------------------------------------------------

_PREDICATES = {"Less": "less", "LessEqual": "less_equal", "Greater": "greater",
               "GreaterEqual": "greater_equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or"}


@lowering(*_PREDICATES, half=True)
def compare(ctx, x, y):
    return getattr(ctx.jnp, _PREDICATES[ctx.node.op])(x, y)


@lowering("Equal", "NotEqual", half=True, complex_ok=True)
def equal(ctx, x, y):
    is_equal = ctx.node.op == "Equal"
    if not ctx.attr("incompatible_shape_error", True):
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:   # TensorFlow's scalar answer for shapes that cannot broadcast
            return ctx.jnp.asarray(not is_equal)
    return ctx.jnp.equal(x, y) if is_equal else ctx.jnp.not_equal(x, y)


@lowering("LogicalNot")
def logical_not(ctx, x):
    return ctx.jnp.logical_not(x)


# --- unary functions ------------------------------------------------------------------------

# Ops computed by one jax.numpy function of the same meaning (and the same special values).
_UNARY = {"Neg": "negative", "Abs": "abs", "Sqrt": "sqrt", "Exp": "exp", "Expm1": "expm1",
          "Log": "log", "Log1p": "log1p", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "arcsin",
          "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "arcsinh",
          "Acosh": "arccosh", "Atanh": "arctanh", "Tanh": "tanh", "Floor": "floor", "Ceil": "ceil",
          "Rint": "rint", "IsNan": "isnan", "IsInf": "isinf", "IsFinite": "isfinite", "Sign": "sign"}
# Of those, the ones defined for integers too (the rest are float-only in TensorFlow).
_INTEGER_UNARY = {"Neg", "Abs", "Sign"}


def _unary_dtypes(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    if dtype.kind == "f" or (dtype.kind in "iu" and node.op in _INTEGER_UNARY | {"Square", "Round"}):
        return None
    return f"{node.op} on {dtype} has no lowering"


@lowering(*_UNARY, supports=_unary_dtypes)
def unary(ctx, x):
    return getattr(ctx.jnp, _UNARY[ctx.node.op])(x)


@lowering("Square", supports=_unary_dtypes)
def square(ctx, x):
    return x * x


@lowering("Round", supports=_unary_dtypes)
def round_(ctx, x):
    return x if is_integer(x.dtype) else ctx.jnp.round(x)   # half to even


@lowering("Reciprocal", "Inv", supports=_float_only)
def reciprocal(ctx, x):
    return const(ctx, 1, x) / x


@lowering("Rsqrt", supports=_float_only)
def rsqrt(ctx, x):
    return const(ctx, 1, x) / ctx.jnp.sqrt(x)   # the interpreter's 1 / sqrt(x), not lax.rsqrt


@lowering("Sigmoid", supports=_float_only)
def sigmoid(ctx, x):
    return ctx.lax.logistic(x)


# The special functions: XLA's own implementations, accurate to float32/float64 rounding
# (the tests compare them with the interpreter's series at float32 rtol 1e-5).
_SPECIAL = {"Erf": "erf", "Erfc": "erfc", "Lgamma": "lgamma", "Digamma": "digamma", "Erfinv": "erf_inv"}


@lowering(*_SPECIAL, supports=_float_only)
def special(ctx, x):
    return getattr(ctx.lax, _SPECIAL[ctx.node.op])(x)


# --- gradients of unary ops, from the forward output y and the incoming gradient dy ---------

@lowering("TanhGrad", supports=_float_only)
def tanh_grad(ctx, y, dy):
    return dy.reshape(y.shape) * (const(ctx, 1, y) - y * y)


@lowering("SigmoidGrad", supports=_float_only)
def sigmoid_grad(ctx, y, dy):
    return dy.reshape(y.shape) * y * (const(ctx, 1, y) - y)


@lowering("SqrtGrad", supports=_float_only)
def sqrt_grad(ctx, y, dy):
    return const(ctx, 0.5, y) * dy.reshape(y.shape) / y


@lowering("RsqrtGrad", supports=_float_only)
def rsqrt_grad(ctx, y, dy):
    return const(ctx, -0.5, y) * (dy.reshape(y.shape) * y) * (y * y)


@lowering("ReciprocalGrad", "InvGrad", supports=_float_only)
def reciprocal_grad(ctx, y, dy):
    return -dy.reshape(y.shape) * y * y


# --- selection, clipping, sums of many ------------------------------------------------------

@lowering("Select", half=True)
def select(ctx, condition, t, e):
    """v1 Select: a scalar condition picks a whole input, a vector one picks rows."""
    if condition.ndim == 1 and t.ndim > 1:
        condition = condition.reshape(condition.shape + (1,) * (t.ndim - 1))
    return ctx.jnp.where(condition, t, e)


@lowering("SelectV2", half=True)
def select_v2(ctx, condition, t, e):
    return ctx.jnp.where(condition, t, e)


@lowering("ClipByValue", supports=_int_or_float)
def clip_by_value(ctx, t, low, high):
    # std::max(std::min(t, high), low): a NaN bound is ignored, low wins when low > high.
    below_high = ctx.jnp.where(high < t, high, t)
    return ctx.jnp.where(below_high < low, low, below_high)


# AddN sums in TensorFlow's order (the interpreter's helper), so float results agree to the last bit.
@lowering("AddN", supports=_int_or_float)
def add_n(ctx, *inputs):
    return add_in_tensorflow_order(inputs)


# --- Cast -----------------------------------------------------------------------------------

def _cast_supported(node) -> str | None:
    source, destination = (d.base.numpy for d in (node.attr("SrcT"), node.attr("DstT")))
    if node.attr("Truncate", False) and source != destination:
        return "Cast with Truncate=True has no lowering"
    if destination == np.uint64 and source.kind == "f":
        return "Cast from float to uint64 has no lowering"
    return None


@lowering("Cast", supports=_cast_supported)
def cast(ctx, x):
    destination = np.dtype(ctx.out_dtype(0))
    if x.dtype == destination:
        return x
    if destination == np.bool_:
        return x != const(ctx, 0, x)
    if x.dtype == np.bool_:
        # A select, not a convert: XLA rewrites y * convert(p) as select(p, y, 0), which loses
        # TensorFlow's NaN * 0 = NaN (a mask multiplied into NaN or inf values); y * select(p, 1, 0)
        # it leaves alone.
        return ctx.jnp.where(x, np.ones((), destination), np.zeros((), destination))
    if is_integer(destination) and x.dtype.kind == "f":
        # As x86-64 does (the interpreter's rule): truncate toward zero in int32 (int64 for wide
        # outputs and uint32), NaN and out of range giving INT_MIN, then wrap to the destination.
        wide = np.dtype(np.int64) if destination.itemsize == 8 or destination == np.uint32 else np.dtype(np.int32)
        whole = ctx.jnp.trunc(x.astype(np.float64))
        bits = 8 * wide.itemsize - 1
        low, high = -2.0 ** bits, 2.0 ** bits
        in_range = (whole >= low) & (whole < high)
        return ctx.jnp.where(in_range, whole, low).astype(wide).astype(destination)
    return x.astype(destination)


# --- matrix products ------------------------------------------------------------------------

def _matmul_dtypes(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"{node.op} on {dtype} has no lowering"


@lowering("MatMul", supports=_matmul_dtypes)
def matmul(ctx, a, b):
    if ctx.attr("transpose_a", False):
        a = a.T
    if ctx.attr("transpose_b", False):
        b = b.T
    return ctx.jnp.matmul(a, b, precision=ctx.lax.Precision.HIGHEST)


@lowering("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", supports=_matmul_dtypes)
def batch_matmul(ctx, x, y):
    jnp = ctx.jnp
    if ctx.node.op == "BatchMatMulV3":
        x, y = x.astype(ctx.out_dtype(0)), y.astype(ctx.out_dtype(0))
    if ctx.attr("adj_x", False):
        x = jnp.swapaxes(x, -1, -2)
    if ctx.attr("adj_y", False):
        y = jnp.swapaxes(y, -1, -2)
    return jnp.matmul(x, y, precision=ctx.lax.Precision.HIGHEST)

