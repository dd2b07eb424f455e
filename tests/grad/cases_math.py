"""Finite-difference cases for graphtool/grad/math*.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand, Value

# Shape pairs every broadcasting binary op is checked at: equal shapes, a trailing vector,
# two-sided broadcasting, and a scalar against a matrix.
BROADCAST_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2))]


def binary(low=-2.0, high=2.0, y_low=None, y_high=None, signed=False, y_signed=None, **extra) -> list[Case]:
    """A case per broadcasting shape pair, x in [low, high] and y in [y_low, y_high]."""
    y_low = low if y_low is None else y_low
    y_high = high if y_high is None else y_high
    y_signed = signed if y_signed is None else y_signed
    return [Case([Rand(sx, low, high, signed=signed), Rand(sy, y_low, y_high, signed=y_signed)], **extra)
            for sx, sy in BROADCAST_SHAPES]


def unary(low=-2.0, high=2.0, shape=(2, 3), **extra) -> list[Case]:
    return [Case([Rand(shape, low, high, **extra)])]


def backward_kernel(low=-0.9, high=0.9) -> list[Case]:
    """(y, dy) backward kernels: y in the forward output's range, dy anywhere."""
    return [Case([Rand((2, 3), low, high), Rand((2, 3))])]


ELEMENTWISE = {
    "Abs": unary(0.2, 2.0, signed=True),
    "Neg": unary(),
    "Square": unary(),
    "Exp": unary(),
    "Expm1": unary(),
    "Log": unary(0.2, 3.0),
    "Log1p": unary(-0.8, 3.0),
    "Sin": unary(),
    "Cos": unary(),
    "Tan": unary(-1.2, 1.2),
    "Asin": unary(-0.9, 0.9),
    "Acos": unary(-0.9, 0.9),
    "Atan": unary(),
    "Sinh": unary(),
    "Cosh": unary(),
    "Asinh": unary(),
    "Acosh": unary(1.2, 3.0),
    "Atanh": unary(-0.9, 0.9),
    "Erf": unary(),
    "Erfc": unary(),
    "Lgamma": unary(0.3, 4.0),
    "Erfinv": unary(-0.9, 0.9),
    "Ndtri": unary(0.05, 0.95),
    "Tanh": unary(),
    "Sigmoid": unary(),
    "Sqrt": unary(0.2, 3.0),
    "Rsqrt": unary(0.2, 3.0),
    "Reciprocal": unary(0.3, 2.0, signed=True),
    "Inv": unary(0.3, 2.0, signed=True),
    "Sign": unary(0.2, 2.0, signed=True),
    # Step functions: checked to be flat away from their jumps (x + 0.5 stays off integers).
    "Floor": [Case([Value(np.array([[-1.7, -0.3, 0.4], [1.2, 2.6, -2.2]]))])],
    "Ceil": [Case([Value(np.array([[-1.7, -0.3, 0.4], [1.2, 2.6, -2.2]]))])],
    "Round": [Case([Value(np.array([[-1.7, -0.3, 0.4], [1.2, 2.6, -2.2]]))])],
    "Rint": [Case([Value(np.array([[-1.7, -0.3, 0.4], [1.2, 2.6, -2.2]]))])],
    "TanhGrad": backward_kernel(),
    "SigmoidGrad": backward_kernel(0.1, 0.9),
    "SqrtGrad": backward_kernel(0.3, 2.0),
    "RsqrtGrad": backward_kernel(0.3, 2.0),
    "ReciprocalGrad": backward_kernel(0.3, 2.0),
    "InvGrad": backward_kernel(0.3, 2.0),
}

BINARY = {
    "Add": binary(),
    "AddV2": binary(),
    "Sub": binary(),
    "Mul": binary() + [Case([Rand((2, 3)), Rand((3,))], dtype="complex128", label="complex")],
    "MulNoNan": binary() + [Case([Rand((2, 2)), Value([[0.0, 1.5], [-0.7, 0.0]])], label="zeros in y")],
    "Div": binary(y_low=0.5, y_high=2.0, y_signed=True)
    + [Case([Rand((2, 3)), Rand((3,), 0.5, 2.0)], dtype="complex128", label="complex")],
    "RealDiv": binary(y_low=0.5, y_high=2.0, y_signed=True)
    + [Case([Rand((2, 3)), Rand((3,), 0.5, 2.0)], dtype="complex128", label="complex")],
    "DivNoNan": binary(y_low=0.5, y_high=2.0, y_signed=True),
    "Pow": binary(0.3, 2.0, y_low=-1.5, y_high=1.5),
    "Maximum": [Case([Rand((2, 3), distinct=True), Rand((2, 3), -1.93, 1.97, distinct=True)]),
                Case([Rand((2, 3), distinct=True), Rand((3,), -1.93, 1.97, distinct=True)]),
                Case([Rand((), -0.55, -0.45), Rand((2, 2), 0.1, 1.0, signed=True)])],
    "Minimum": [Case([Rand((2, 3), distinct=True), Rand((2, 3), -1.93, 1.97, distinct=True)]),
                Case([Rand((2, 1), distinct=True), Rand((1, 3), -1.93, 1.97, distinct=True)]),
                Case([Rand((), 0.45, 0.55), Rand((2, 2), 0.1, 1.0, signed=True)])],
    "SquaredDifference": binary(),
    "Atan2": binary(0.3, 2.0, signed=True),
    # At x = 0 TensorFlow's gradient masks the x-partial to 0 by convention (finite differences
    # would give log y), so the cases keep x off zero.
    "Xlogy": binary(0.2, 2.0, signed=True, y_low=0.3, y_high=2.0, y_signed=False),
    "Xdivy": binary(y_low=0.4, y_high=2.0, y_signed=True),
    # Remainders: values keep x/y well away from integers, where the remainder jumps.
    "FloorMod": [Case([Value([[2.3, -3.1, 5.4]]), Value([1.5, 2.0, -2.5])]),
                 Case([Value([[7.3, -4.1], [0.7, 3.3]]), Value(2.2)])],
    "Mod": [Case([Value([2.3, -3.1, 5.4]), Value([1.5, 2.0, -2.5])])],
    "TruncateMod": [Case([Value([2.3, -3.1, 5.4]), Value([1.5, 2.0, -2.5])])],
    "FloorDiv": [Case([Value([2.3, -3.1, 5.4]), Value([1.5, 2.0, -2.5])])],
    "TruncateDiv": [Case([Value([2.3, -3.1, 5.4]), Value([1.5, 2.0, -2.5])])],
    "AddN": [Case([[Rand((2, 3)), Rand((2, 3)), Rand((2, 3))]])],
    "AccumulateNV2": [Case([[Rand((2, 2)), Rand((2, 2))]], attrs={"shape": [2, 2]})],
    "ClipByValue": [
        Case([Rand((2, 3), distinct=True), Value(-0.53), Value(0.61)], label="scalar bounds"),
        Case([Rand((2, 3), distinct=True), Value([[-1.05, 0.2, -0.3], [-0.1, -2.5, 0.44]]),
              Value([[1.2, 0.9, 0.35], [2.5, -1.3, 1.57]])], label="tensor bounds"),
    ],
    "Select": [Case([np.array([[True, False, True], [False, False, True]]), Rand((2, 3)), Rand((2, 3))]),
               Case([np.array([False, True]), Rand((2, 3)), Rand((2, 3))], label="vector condition")],
    "SelectV2": [Case([np.array([[True, False, True], [False, False, True]]), Rand((2, 3)), Rand((2, 3))]),
                 Case([np.array([True, False, False]), Rand((2, 1)), Rand(())], label="broadcasting")],
    "Cast": [Case([Rand((2, 3))], attrs={"DstT": "float32"},
                  tolerance={"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}, label="float64 -> float32"),
             Case([Rand((2, 3))], attrs={"DstT": "int32"}, label="to int32: no gradient")],
}

CASES: dict[str, list[Case]] = {**ELEMENTWISE, **BINARY}


def reduction(op_rand=None, **extra) -> list[Case]:
    """Reductions over one axis, a negative axis, all axes with keep_dims, and an axis list."""
    x = op_rand or Rand((2, 3, 2))
    return [Case([x, np.array(1, np.int32)], attrs={"keep_dims": False}, **extra),
            Case([x, np.array([-1], np.int64)], attrs={"keep_dims": True}, **extra),
            Case([x, np.array([0, 1, 2], np.int32)], attrs={"keep_dims": True}, **extra),
            Case([x, np.array([0, 2], np.int32)], attrs={"keep_dims": False}, **extra)]


REDUCE = {
    "Sum": reduction(),
    "Mean": reduction(),
    "Prod": reduction(Rand((2, 3, 2), 0.5, 1.5, signed=True))
    + [Case([Value([[0.0, 1.5, -2.0], [0.7, 0.0, 0.0]]), np.array(1, np.int32)],
            label="zeros: one and two per row")],
    "Max": reduction(Rand((2, 3, 2), distinct=True))
    + [Case([Value([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]]), np.array(1, np.int32)], points=1,
            tolerance={"eps": 1e-9}, label="a tie")],
    "Min": reduction(Rand((2, 3, 2), distinct=True)),
    "EuclideanNorm": reduction(),
    "Cumsum": [Case([Rand((2, 3)), np.array(1, np.int32)], attrs=attrs)
               for attrs in ({}, {"exclusive": True}, {"reverse": True},
                             {"exclusive": True, "reverse": True})],
    "Cumprod": [Case([Rand((2, 3), 0.5, 1.5, signed=True), np.array(axis, np.int32)], attrs=attrs)
                for axis, attrs in ((1, {}), (0, {"exclusive": True}), (-1, {"reverse": True}),
                                    (1, {"exclusive": True, "reverse": True}))],
}

LINALG = {
    "MatMul": [Case([Rand((2, 3)), Rand((3, 4))]),
               Case([Rand((3, 2)), Rand((3, 4))], attrs={"transpose_a": True}),
               Case([Rand((2, 3)), Rand((4, 3))], attrs={"transpose_b": True}),
               Case([Rand((3, 2)), Rand((4, 3))], attrs={"transpose_a": True, "transpose_b": True})],
    "BatchMatMul": [Case([Rand((2, 2, 3)), Rand((2, 3, 2))]),
                    Case([Rand((2, 3, 2)), Rand((2, 2, 3))], attrs={"adj_x": True, "adj_y": True})],
    "BatchMatMulV2": [Case([Rand((2, 2, 3)), Rand((3, 2))], label="broadcast y"),
                      Case([Rand((1, 3, 2)), Rand((2, 1, 2, 3))], attrs={"adj_x": True, "adj_y": True}),
                      Case([Rand((2, 2, 3)), Rand((2, 2, 3))], attrs={"adj_y": True})],
    "BatchMatMulV3": [Case([Rand((2, 2, 3)), Rand((1, 3, 2))], attrs={"Tout": "float64"}),
                      Case([Rand((2, 3, 2)), Rand((3, 2))], attrs={"Tout": "float64", "adj_x": True})],
    "Einsum": [Case([[Rand((2, 3)), Rand((3, 4))]], attrs={"equation": "ij,jk->ik"}),
               Case([[Rand((2, 2, 3)), Rand((2, 3))]], attrs={"equation": "bij,bj->bi"}),
               Case([[Rand((2, 3)), Rand((4,))]], attrs={"equation": "ij,k->jik"}, label="outer product"),
               Case([[Rand((2, 3, 4))]], attrs={"equation": "ijk->ki"}, label="summed label"),
               Case([[Rand((3, 3))]], attrs={"equation": "ii->"}, label="trace"),
               Case([[Rand((3, 3))]], attrs={"equation": "ii->i"}, label="diagonal"),
               Case([[Rand((2, 3)), Rand((2, 3))]], attrs={"equation": "ij,ij->"}, label="dot"),
               Case([[Rand((2, 1, 2, 3)), Rand((3, 3, 2))]], attrs={"equation": "...ij,...jk->...ik"},
                    label="broadcast ellipsis")],
}

CASES.update(REDUCE)
CASES.update(LINALG)
