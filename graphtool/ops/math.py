"""The math family: elementwise arithmetic, comparisons, logic, casts, selects, reductions and
matrix products, with TensorFlow's signatures and shape functions.

Elementwise ops are declared from tables (name, allowed types, value function); reductions live
in math_reduce.py and matrix products in math_linalg.py, both imported at the end of this module.
Shape functions follow TensorFlow's C++ ones (same result for the same partially-known inputs).
"""
from __future__ import annotations

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from .inference import InferenceContext, broadcast_binary, merge_all, unchanged
from .math_common import (COMPLEX, FLOAT, NUMBER, REAL, SIGNED, UNSIGNED, broadcast,
                          elementwise_value, merge_dims, register_math, type_set)

INTEGER = SIGNED + UNSIGNED
ARITHMETIC = type_set(FLOAT, INTEGER, COMPLEX)
FLOAT_OR_COMPLEX = type_set(FLOAT, COMPLEX)

# Ops whose result does not depend on the order of their inputs (CSE may canonicalize them):
# the ones TensorFlow flags, plus Add, Maximum and Minimum.
# Add is listed although string Add concatenates: passes reordering inputs must skip strings.
COMMUTATIVE = {"Add", "AddV2", "Mul", "Maximum", "Minimum", "SquaredDifference", "Equal",
               "NotEqual", "ApproximateEqual", "LogicalAnd", "LogicalOr", "BitwiseAnd",
               "BitwiseOr", "BitwiseXor", "AddN", "AccumulateNV2"}


def _floor_divide(x, y):
    # numpy's float floor_divide rounds via divmod (1 // 0.1 == 9); TensorFlow takes floor(x / y).
    return np.floor_divide(x, y) if x.dtype.kind in "iub" else np.floor(x / y)


# --- binary elementwise ops with broadcasting ------------------------------------------------

# (name, allowed T, value function or None); inputs x, y and output z of type T.
BINARY_OPS = [
    ("Add", type_set(FLOAT, "uint8", SIGNED, COMPLEX, "string"), elementwise_value(np.add)),
    ("AddV2", ARITHMETIC, elementwise_value(np.add)),
    ("Sub", ARITHMETIC, elementwise_value(np.subtract)),
    ("Mul", ARITHMETIC, elementwise_value(np.multiply)),
    ("MulNoNan", FLOAT_OR_COMPLEX, None),
    ("Div", ARITHMETIC, None),
    ("DivNoNan", FLOAT_OR_COMPLEX, None),
    ("RealDiv", ARITHMETIC, None),
    ("FloorDiv", ARITHMETIC, elementwise_value(_floor_divide, arity=2, nonzero_divisor=True)),
    ("FloorMod", type_set(INTEGER, FLOAT), elementwise_value(np.mod, nonzero_divisor=True)),
    # TensorFlow's own list names half twice; the signature check compares lists as they are.
    ("Mod", type_set("int32", "int64", "half", "half", "bfloat16", "float", "double"), None),
    ("TruncateDiv", ARITHMETIC, None),
    ("TruncateMod", type_set("int32", "int64", FLOAT), None),
    ("Pow", type_set(FLOAT, SIGNED, COMPLEX), None),
    ("Maximum", type_set(REAL), elementwise_value(np.maximum)),
    ("Minimum", type_set(REAL), elementwise_value(np.minimum)),
    ("SquaredDifference", type_set(FLOAT, "int32", "int64", COMPLEX), None),
    ("Xdivy", FLOAT_OR_COMPLEX, None),
    ("Xlogy", FLOAT_OR_COMPLEX, None),
    ("BitwiseAnd", type_set(INTEGER), elementwise_value(np.bitwise_and)),
    ("BitwiseOr", type_set(INTEGER), elementwise_value(np.bitwise_or)),
    ("BitwiseXor", type_set(INTEGER), elementwise_value(np.bitwise_xor)),
    ("LeftShift", type_set(INTEGER), None),
    ("RightShift", type_set(INTEGER), None),
]

# Ordering comparisons: inputs x, y of type T (real numbers), output z: bool.
COMPARISON_OPS = [("Less", np.less), ("LessEqual", np.less_equal), ("Greater", np.greater),
                  ("GreaterEqual", np.greater_equal)]


def _lenient_broadcast(a: Shape, b: Shape) -> Shape:
    """Equal/NotEqual with incompatible_shape_error=false: shapes that cannot broadcast give a
    scalar (the op then returns a single False/True), and an unknown dim that might not broadcast
    makes the whole shape unknown. Dims are visited left to right, as TensorFlow does."""
    if not has_rank(a) or not has_rank(b):
        return Shape.unknown()
    rank = max(a.rank, b.rank)
    padded_a = (1,) * (rank - a.rank) + a.dims
    padded_b = (1,) * (rank - b.rank) + b.dims
    dims = []
    for x, y in zip(padded_a, padded_b):
        if x is None or y is None:
            if (x or 0) > 1 or (y or 0) > 1:
                return Shape.unknown()
            dims.append(y if x == 1 else x if y == 1 else None)
        elif x == 1 or y == 1 or x == y:
            dims.append(y if x == 1 else x)
        else:
            return Shape.scalar()
    return Shape(dims)


def _equality_shape(ctx: InferenceContext) -> Shape:
    if ctx.attr("incompatible_shape_error"):
        return broadcast_binary(ctx)
    return _lenient_broadcast(ctx.shape(0), ctx.shape(1))


def _approximate_equal_shape(ctx: InferenceContext) -> Shape:
    # TensorFlow checks that the shapes agree but returns input 0's shape unrefined.
    merge_all(ctx, (0, 1))
    return ctx.shape(0)


def _register_binary(name, types, value=None, *, output="T", args=("x", "y"), attrs=(),
                     shape=broadcast_binary):
    register_math(name, inputs=[f"{args[0]}: T", f"{args[1]}: T"], outputs=[f"z: {output}"],
                  attrs=[f"T: {types}", *attrs], shape=shape, value=value,
                  commutative=name in COMMUTATIVE)


for _name, _types, _value in BINARY_OPS:
    _register_binary(_name, _types, _value)
_register_binary("Atan2", type_set(FLOAT), args=("y", "x"))
_function: np.ufunc   # (each loop below registers one op per numpy function)
for _name, _function in COMPARISON_OPS:
    _register_binary(_name, type_set(REAL), elementwise_value(_function), output="bool")
for _name, _function in (("Equal", np.equal), ("NotEqual", np.not_equal)):
    _register_binary(_name, "type", elementwise_value(_function), output="bool",
                     attrs=["incompatible_shape_error: bool = true"], shape=_equality_shape)
_register_binary("ApproximateEqual", type_set(NUMBER), output="bool",
                 attrs=["tolerance: float = 1e-05"], shape=_approximate_equal_shape)
for _name, _function in (("LogicalAnd", np.logical_and), ("LogicalOr", np.logical_or)):
    register_math(_name, inputs=["x: bool", "y: bool"], outputs=["z: bool"],
                  shape=broadcast_binary, value=elementwise_value(_function), commutative=True)
register_math("Complex", inputs=["real: T", "imag: T"], outputs=["out: Tout"],
              attrs=["T: {float, double} = float", "Tout: {complex64, complex128} = complex64"],
              shape=broadcast_binary)

# --- unary elementwise ops (output shape = input shape) --------------------------------------

# Allowed T -> the ops taking x: T and giving y: T.
UNARY_OPS = {
    type_set(FLOAT, SIGNED): ["Abs"],
    type_set(FLOAT, SIGNED, COMPLEX): ["Neg", "Sign", "Reciprocal", "Inv", "Round"],
    type_set(FLOAT, INTEGER, COMPLEX): ["Square"],
    FLOAT_OR_COMPLEX: ["Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Sin", "Cos", "Tan",
                       "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Tanh",
                       "Sigmoid"],
    type_set(FLOAT): ["Erf", "Erfc", "Erfinv", "Ndtri", "Lgamma", "Digamma", "Floor", "Ceil", "Rint"],
    type_set(INTEGER): ["Invert"],
}
# The unary ops worth evaluating statically (integer and rounding arithmetic on shapes).
UNARY_VALUES = {"Abs": np.abs, "Neg": np.negative, "Sign": np.sign, "Square": np.square,
                "Floor": np.floor, "Ceil": np.ceil, "Round": np.rint, "Rint": np.rint,
                "Invert": np.invert}

for _types, _names in UNARY_OPS.items():
    for _name in _names:
        _value = elementwise_value(UNARY_VALUES[_name]) if _name in UNARY_VALUES else None
        register_math(_name, inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {_types}"],
                      shape=unchanged, value=_value)
for _name in ("IsNan", "IsInf", "IsFinite"):
    register_math(_name, inputs=["x: T"], outputs=["y: bool"], attrs=[f"T: {type_set(FLOAT)}"],
                  shape=unchanged)
register_math("LogicalNot", inputs=["x: bool"], outputs=["y: bool"], shape=unchanged,
              value=elementwise_value(np.logical_not))

# Complex parts: complex T in, real Tout out.
_COMPLEX_PART_ATTRS = ["T: {complex64, complex128} = complex64", "Tout: {float, double} = float"]
for _name in ("Real", "Imag", "Angle"):
    register_math(_name, inputs=["input: T"], outputs=["output: Tout"], attrs=_COMPLEX_PART_ATTRS,
                  shape=unchanged)
register_math("ComplexAbs", inputs=["x: T"], outputs=["y: Tout"], attrs=_COMPLEX_PART_ATTRS,
              shape=unchanged)
register_math("Conj", inputs=["input: T"], outputs=["output: T"],
              attrs=["T: {complex64, complex128, variant} = complex64"], shape=unchanged)

# Gradients of unary ops, computed from the forward output y and the incoming gradient dy.
# TensorFlow gives them y's shape without checking dy against it.
for _name in ("TanhGrad", "SigmoidGrad", "RsqrtGrad", "SqrtGrad", "ReciprocalGrad", "InvGrad"):
    register_math(_name, inputs=["y: T", "dy: T"], outputs=["z: T"],
                  attrs=[f"T: {FLOAT_OR_COMPLEX}"], shape=unchanged)

# --- sums of many, casts, clipping, selection ------------------------------------------------


def _explicit_shape(ctx: InferenceContext) -> Shape:
    return ctx.attr("shape")


def _select_shape(ctx: InferenceContext) -> Shape:
    """TensorFlow v1 Select: t and e have one shape; the condition is a scalar, has that shape,
    or is a vector choosing whole rows (matching the first dim)."""
    data = merge_all(ctx, (1, 2))
    condition = ctx.shape(0)
    if not has_rank(condition) or not has_rank(data) or condition.rank == 0:
        return data
    if condition.rank == 1 and data.rank > 0:
        merge_dims(ctx, condition[0], data[0], "the condition's length and the first dimension")
        return data
    try:
        return data.merge(condition)
    except ShapeError:
        ctx.fail(f"condition of shape {condition} does not match the data shape {data}")


def _select_v2_shape(ctx: InferenceContext) -> Shape:
    """SelectV2 broadcasts condition, t and e together."""
    return broadcast(ctx, ctx.shape(0), broadcast(ctx, ctx.shape(1), ctx.shape(2)))


register_math("AddN", inputs=["inputs: N * T"], outputs=["sum: T"],
              attrs=["N: int >= 1", f"T: {type_set(NUMBER, 'variant')}"], shape=merge_all,
              commutative=True)
# TensorFlow takes AccumulateNV2's output shape from its attr without looking at the inputs.
register_math("AccumulateNV2", inputs=["inputs: N * T"], outputs=["sum: T"],
              attrs=["N: int >= 1", f"T: {type_set(NUMBER)}", "shape: shape"],
              shape=_explicit_shape, commutative=True)
register_math("Cast", inputs=["x: SrcT"], outputs=["y: DstT"],
              attrs=["SrcT: type", "DstT: type", "Truncate: bool = false"], shape=unchanged,
              value=elementwise_value(np.asarray, arity=1))
# TensorFlow does not check the bounds' shapes statically (the kernel does).
register_math("ClipByValue", inputs=["t: T", "clip_value_min: T", "clip_value_max: T"],
              outputs=["output: T"], attrs=[f"T: {type_set(NUMBER)}"], shape=unchanged)
register_math("Select", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
              attrs=["T: type"], shape=_select_shape)
register_math("SelectV2", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
              attrs=["T: type"], shape=_select_v2_shape)

from . import math_fft, math_linalg, math_matrix, math_reduce  # noqa: E402,F401  (register the rest of the family)
