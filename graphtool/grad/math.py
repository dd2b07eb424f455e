"""Gradients of the element-wise math ops: unary functions, broadcasting binary arithmetic,
selection and casts (TensorFlow's math_grad.py semantics). Reductions, scans and segment ops are
in math_reduce.py, matrix products in math_linalg.py.

Conventions: `g` is the gradient of the op's output; an element-wise op's derivative is built
from the forward values through ctx.input/ctx.output (never node.inputs, so the driver can
substitute values saved inside while loops); broadcasting is undone only by
ctx.sum_to_inputs / ctx.sum_to_input.
"""
from __future__ import annotations

import math

from .op_utils import emit, fused_grad, mul, neg, scalar, unary_grad, zeros_like
from .registry import GradContext, gradient, not_differentiable

# Comparisons, logic, bit twiddling and index-valued ops: their outputs carry no gradient.
not_differentiable(
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "ApproximateEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "IsFinite", "IsInf", "IsNan",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift",
    "ArgMax", "ArgMin", "All", "Any", "Range", "LinSpace")


# --- unary functions: dx = dy * f'(x) ----------------------------------------------------------

def _x(ctx):
    return ctx.input(0)


def _one_plus(ctx, value):
    return emit(ctx, "AddV2", scalar(ctx, 1.0, value), value)


def _one_minus_square(ctx, value):
    return emit(ctx, "Sub", scalar(ctx, 1.0, value), emit(ctx, "Square", value))


def _erf_derivative(ctx, sign: float):
    # d/dx erf(x) = 2/sqrt(pi) exp(-x^2); erfc is its negative.
    x = _x(ctx)
    gaussian = emit(ctx, "Exp", neg(ctx, emit(ctx, "Square", x)))
    return mul(ctx, scalar(ctx, sign * 2.0 / math.sqrt(math.pi), x), gaussian)


# op -> f'(x) as a graph expression of the forward values.
_DERIVATIVES = {
    "Abs": lambda c: emit(c, "Sign", _x(c)),
    "Square": lambda c: mul(c, scalar(c, 2.0, _x(c)), _x(c)),
    "Exp": lambda c: c.output(0),
    "Expm1": lambda c: emit(c, "Exp", _x(c)),
    "Log": lambda c: emit(c, "Reciprocal", _x(c)),
    "Log1p": lambda c: emit(c, "Reciprocal", _one_plus(c, _x(c))),
    "Sin": lambda c: emit(c, "Cos", _x(c)),
    "Cos": lambda c: neg(c, emit(c, "Sin", _x(c))),
    "Tan": lambda c: emit(c, "Reciprocal", emit(c, "Square", emit(c, "Cos", _x(c)))),
    "Asin": lambda c: emit(c, "Rsqrt", _one_minus_square(c, _x(c))),
    "Acos": lambda c: neg(c, emit(c, "Rsqrt", _one_minus_square(c, _x(c)))),
    "Atan": lambda c: emit(c, "Reciprocal", _one_plus(c, emit(c, "Square", _x(c)))),
    "Sinh": lambda c: emit(c, "Cosh", _x(c)),
    "Cosh": lambda c: emit(c, "Sinh", _x(c)),
    # d asinh(x) = 1/cosh(asinh x), d acosh(x) = 1/sinh(acosh x): reuse the forward output.
    "Asinh": lambda c: emit(c, "Reciprocal", emit(c, "Cosh", c.output(0))),
    "Acosh": lambda c: emit(c, "Reciprocal", emit(c, "Sinh", c.output(0))),
    "Atanh": lambda c: emit(c, "Reciprocal", _one_minus_square(c, _x(c))),
    "Erf": lambda c: _erf_derivative(c, 1.0),
    "Erfc": lambda c: _erf_derivative(c, -1.0),
    "Lgamma": lambda c: emit(c, "Digamma", _x(c)),
    # From the output y: erfinv' = sqrt(pi)/2 exp(y^2), ndtri' = sqrt(2 pi) exp(y^2 / 2).
    "Erfinv": lambda c: mul(c, scalar(c, math.sqrt(math.pi) / 2, c.output(0)),
                            emit(c, "Exp", emit(c, "Square", c.output(0)))),
    "Ndtri": lambda c: mul(c, scalar(c, math.sqrt(2 * math.pi), c.output(0)),
                           emit(c, "Exp", mul(c, scalar(c, 0.5, c.output(0)), emit(c, "Square", c.output(0))))),
}
for _name, _derivative in _DERIVATIVES.items():
    gradient(_name)(unary_grad(_derivative))

# Ops with a dedicated backward kernel taking (y, dy).
for _name, _grad_op in (("Tanh", "TanhGrad"), ("Sigmoid", "SigmoidGrad"), ("Sqrt", "SqrtGrad"),
                        ("Rsqrt", "RsqrtGrad"), ("Reciprocal", "ReciprocalGrad"), ("Inv", "InvGrad")):
    gradient(_name)(fused_grad(_grad_op))


@gradient("Neg")
def _neg_grad(ctx, grads):
    return [neg(ctx, grads[0])]


@gradient("Sign")
def _sign_grad(ctx, grads):
    # Flat everywhere it is differentiable; TensorFlow returns zeros rather than no gradient.
    return [zeros_like(ctx, _x(ctx))]


@gradient("Floor", "Ceil", "Round", "Rint", "FloorDiv", "TruncateDiv")
def _piecewise_constant_grad(ctx, grads):
    """Step functions: zero derivative wherever one exists, so no gradient flows (as in TF)."""
    return [None] * ctx.num_inputs


# --- second derivatives of the (y, dy) backward kernels ----------------------------------------
# Each computes z = dy * h(y). z is linear in dy, so its dy-gradient is the same kernel applied
# to the incoming gradient; its y-gradient is g * dy * h'(y).
_BACKWARD_KERNEL_SLOPES = {
    "TanhGrad": lambda c, y: mul(c, scalar(c, -2.0, y), y),                       # h = 1 - y^2
    "SigmoidGrad": lambda c, y: emit(c, "Sub", scalar(c, 1.0, y), mul(c, scalar(c, 2.0, y), y)),  # h = y - y^2
    "SqrtGrad": lambda c, y: emit(c, "RealDiv", scalar(c, -0.5, y), emit(c, "Square", y)),  # h = 0.5 / y
    "RsqrtGrad": lambda c, y: mul(c, scalar(c, -1.5, y), emit(c, "Square", y)),    # h = -0.5 y^3
    "ReciprocalGrad": lambda c, y: mul(c, scalar(c, -2.0, y), y),                 # h = -y^2
    "InvGrad": lambda c, y: mul(c, scalar(c, -2.0, y), y),
}


def _backward_kernel_grad(ctx, grads):
    g, y, dy = grads[0], ctx.input(0), ctx.input(1)
    slope = _BACKWARD_KERNEL_SLOPES[ctx.node.op](ctx, y)
    return [mul(ctx, mul(ctx, g, dy), slope), ctx.b.op(ctx.node.op, [y, g])]


gradient(*_BACKWARD_KERNEL_SLOPES)(_backward_kernel_grad)


# --- broadcasting binary arithmetic ------------------------------------------------------------

def binary_grad(partials):
    """The gradient of a broadcasting binary op from `partials(ctx, g) -> (gx, gy)` computed at
    the output's (broadcast) shape; the sums over broadcast axes happen in ctx.sum_to_inputs."""
    def grad(ctx: GradContext, grads: list) -> list:
        gx, gy = partials(ctx, grads[0])
        return list(ctx.sum_to_inputs(gx, gy))
    return grad


def _xy(ctx):
    """The operands as the partials use them: conjugated for complex values (TensorFlow's
    convention: the gradient of x * y with respect to x is g * conj(y))."""
    x, y = ctx.input(0), ctx.input(1)
    if ctx.b.dtype(x).base.is_complex:
        return emit(ctx, "Conj", x), emit(ctx, "Conj", y)
    return x, y


def _div_partials(ctx, g):
    x, y = _xy(ctx)
    return emit(ctx, "RealDiv", g, y), mul(ctx, g, emit(ctx, "RealDiv", emit(ctx, "RealDiv", neg(ctx, x), y), y))


def _div_no_nan_partials(ctx, g):
    x, y = _xy(ctx)
    quotient = emit(ctx, "DivNoNan", emit(ctx, "DivNoNan", neg(ctx, x), y), y)
    return emit(ctx, "DivNoNan", g, y), mul(ctx, g, quotient)


def _pow_partials(ctx, g):
    # d/dx x^y = y x^(y-1); d/dy x^y = x^y log x, taken as 0 where x <= 0 (as TensorFlow does).
    x, y = _xy(ctx)
    z = ctx.output(0)
    gx = mul(ctx, g, mul(ctx, y, emit(ctx, "Pow", x, emit(ctx, "Sub", y, scalar(ctx, 1.0, y)))))
    positive = emit(ctx, "Greater", x, scalar(ctx, 0.0, x))
    safe_x = emit(ctx, "SelectV2", positive, x, scalar(ctx, 1.0, x))
    log_x = emit(ctx, "SelectV2", positive, emit(ctx, "Log", safe_x), scalar(ctx, 0.0, x))
    return gx, mul(ctx, g, mul(ctx, z, log_x))


def _select_partials(comparison: str):
    """Maximum/Minimum: the gradient goes to x where x wins (ties go to x, as in TF), else y."""
    def partials(ctx, g):
        x, y = _xy(ctx)
        x_wins = emit(ctx, comparison, x, y)
        zero = scalar(ctx, 0.0, g)
        return emit(ctx, "SelectV2", x_wins, g, zero), emit(ctx, "SelectV2", x_wins, zero, g)
    return partials


def _squared_difference_partials(ctx, g):
    x, y = _xy(ctx)
    gx = mul(ctx, mul(ctx, scalar(ctx, 2.0, g), g), emit(ctx, "Sub", x, y))
    return gx, neg(ctx, gx)


def _atan2_partials(ctx, g):
    # Inputs are (y, x): d/dy atan2 = x / (x^2 + y^2), d/dx atan2 = -y / (x^2 + y^2).
    y, x = _xy(ctx)
    scaled = emit(ctx, "RealDiv", g, emit(ctx, "AddV2", emit(ctx, "Square", x), emit(ctx, "Square", y)))
    return mul(ctx, scaled, x), neg(ctx, mul(ctx, scaled, y))


def _nonzero_indicator(ctx, x):
    return ctx.b.op("Cast", [emit(ctx, "NotEqual", x, scalar(ctx, 0.0, x))], DstT=ctx.b.dtype(x))


def _xlogy_partials(ctx, g):
    # x log y is defined as 0 at x = 0, so its x-derivative log y is masked there too.
    x, y = _xy(ctx)
    return (mul(ctx, g, emit(ctx, "Xlogy", _nonzero_indicator(ctx, x), y)),
            mul(ctx, g, emit(ctx, "Xdivy", x, y)))


def _xdivy_partials(ctx, g):
    x, y = _xy(ctx)
    return (mul(ctx, g, emit(ctx, "Xdivy", _nonzero_indicator(ctx, x), y)),
            mul(ctx, g, emit(ctx, "Xdivy", neg(ctx, x), emit(ctx, "Square", y))))


def _remainder_partials(ctx, g):
    # z = x - q y with q = floor(x/y) (FloorMod) or trunc(x/y) (Mod, TruncateMod), constant
    # between jumps: dz/dx = 1, dz/dy = -q, and q = (x - z) / y for either rounding.
    x, y = _xy(ctx)
    quotient = emit(ctx, "RealDiv", emit(ctx, "Sub", x, ctx.output(0)), y)
    return g, neg(ctx, mul(ctx, g, quotient))


_BINARY_PARTIALS = {
    "Add": lambda c, g: (g, g),
    "AddV2": lambda c, g: (g, g),
    "Sub": lambda c, g: (g, neg(c, g)),
    "Mul": lambda c, g: (mul(c, g, _xy(c)[1]), mul(c, _xy(c)[0], g)),
    "MulNoNan": lambda c, g: (emit(c, "MulNoNan", g, c.input(1)), emit(c, "MulNoNan", c.input(0), g)),
    "Div": _div_partials,
    "RealDiv": _div_partials,
    "DivNoNan": _div_no_nan_partials,
    "Pow": _pow_partials,
    "Maximum": _select_partials("GreaterEqual"),
    "Minimum": _select_partials("LessEqual"),
    "SquaredDifference": _squared_difference_partials,
    "Atan2": _atan2_partials,
    "Xlogy": _xlogy_partials,
    "Xdivy": _xdivy_partials,
    "FloorMod": _remainder_partials,
    "Mod": _remainder_partials,
    "TruncateMod": _remainder_partials,
}
for _name, _partials in _BINARY_PARTIALS.items():
    gradient(_name)(binary_grad(_partials))


@gradient("AddN", "AccumulateNV2")
def _add_n_grad(ctx, grads):
    return [grads[0]] * ctx.num_inputs


@gradient("ClipByValue")
def _clip_by_value_grad(ctx, grads):
    """Inside [lo, hi] the gradient goes to t; below it to lo, above it to hi (each summed to its
    own shape, since lo and hi may be scalars)."""
    g = grads[0]
    t, lo, hi = ctx.input(0), ctx.input(1), ctx.input(2)
    zero = scalar(ctx, 0.0, g)
    below, above = emit(ctx, "Less", t, lo), emit(ctx, "Greater", t, hi)
    clipped = emit(ctx, "LogicalOr", below, above)
    return [emit(ctx, "SelectV2", clipped, zero, g),
            ctx.sum_to_input(1, emit(ctx, "SelectV2", below, g, zero)),
            ctx.sum_to_input(2, emit(ctx, "SelectV2", above, g, zero))]


# --- selection and casts -----------------------------------------------------------------------

@gradient("Select")
def _select_grad(ctx, grads):
    # Select (v1) does not broadcast t and e; a vector condition picks whole rows, as it does here.
    g, cond = grads[0], ctx.input(0)
    zeros = zeros_like(ctx, g)
    return [None, emit(ctx, "Select", cond, g, zeros), emit(ctx, "Select", cond, zeros, g)]


@gradient("SelectV2")
def _select_v2_grad(ctx, grads):
    g, cond = grads[0], ctx.input(0)
    zero = scalar(ctx, 0.0, g)
    return [None, ctx.sum_to_input(1, emit(ctx, "SelectV2", cond, g, zero)),
            ctx.sum_to_input(2, emit(ctx, "SelectV2", cond, zero, g))]


def _is_real_or_complex_float(dtype) -> bool:
    return dtype.is_floating or dtype.is_complex


@gradient("Cast")
def _cast_grad(ctx, grads):
    """Cast the gradient back to the source type, but only between floating types: a cast to or
    from an integer type cuts the gradient (as in TensorFlow)."""
    source, target = ctx.input_dtype(0).base, ctx.output_dtype(0).base
    if not (_is_real_or_complex_float(source) and _is_real_or_complex_float(target)):
        return [None]
    return [ctx.b.op("Cast", [grads[0]], DstT=source)]
