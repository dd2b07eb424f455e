"""Cases for the math family's lowerings: (op, inputs, attrs[, rtol]) run by test_lowerings.py."""
from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(15)
F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64


def floats(*shape, dtype=F32, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def ints(*shape, dtype=I32, low=-9, high=10):
    return RNG.integers(low, high, shape).astype(dtype)


# Special values every float elementwise op meets: NaN, infinities, signed zeros, halves.
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-3, 7.0], F32)
NONZERO_INTS = np.array([-7, -3, -1, 1, 2, 3, 5, 7], I32)
BOOLS = np.array([[True, False, True], [False, False, True]])

CASES = []
for op in ("Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "RealDiv", "Div",
           "FloorDiv", "FloorMod", "Mod", "TruncateMod", "TruncateDiv", "Pow"):
    CASES += [(op, [floats(2, 3), floats(3)], {}),                    # broadcasting
              (op, [SPECIAL, SPECIAL[::-1].copy()], {}),               # NaN, inf, zeros
              (op, [floats(0, 3, dtype=F64), floats(1, 3, dtype=F64)], {})]  # empty
    if op not in ("Pow",):
        CASES += [(op, [ints(4, 8), NONZERO_INTS], {}), (op, [ints(8, dtype=I64), NONZERO_INTS.astype(I64)], {})]
CASES += [("Pow", [ints(3, 4, low=-3, high=4), ints(4, low=0, high=5)], {}),
          ("Pow", [floats(5, low=0.1, high=3), floats(5)], {})]
for op in ("Atan2", "DivNoNan", "MulNoNan", "Xdivy", "Xlogy"):
    CASES += [(op, [SPECIAL, SPECIAL[::-1].copy()], {}), (op, [floats(2, 3, dtype=F64), floats(3, dtype=F64)], {})]
for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"):
    CASES += [(op, [ints(3, 4, low=-100, high=100), ints(4, low=-2, high=40)], {})]
CASES += [("Invert", [ints(6, dtype=np.uint8, low=0, high=255)], {})]
for op in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"):
    CASES += [(op, [SPECIAL, SPECIAL[::-1].copy()], {}), (op, [ints(2, 3), ints(3)], {})]
CASES += [("Equal", [ints(2, 3), ints(4)], {"incompatible_shape_error": False}),
          ("NotEqual", [BOOLS, BOOLS[:, ::-1].copy()], {})]
for op in ("LogicalAnd", "LogicalOr"):
    CASES += [(op, [BOOLS, np.array([True, False, False])], {})]
CASES += [("LogicalNot", [BOOLS], {})]

UNARY = ["Neg", "Abs", "Sqrt", "Exp", "Expm1", "Log", "Log1p", "Sin", "Cos", "Tan", "Asin", "Acos",
         "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Tanh", "Floor", "Ceil", "Rint", "IsNan",
         "IsInf", "IsFinite", "Sign", "Square", "Round", "Reciprocal", "Inv", "Rsqrt", "Sigmoid",
         "Erf", "Erfc", "Lgamma", "Digamma", "Erfinv"]
for op in UNARY:
    domain = floats(3, 4, low=-0.99, high=0.99) if op in ("Erfinv", "Asin", "Acos", "Atanh") else floats(3, 4)
    CASES += [(op, [SPECIAL], {}), (op, [domain], {}), (op, [floats(0, 2, dtype=F64)], {}),
              (op, [floats(7, dtype=F64, low=0.1, high=4)], {})]
for op in ("Neg", "Abs", "Sign", "Square", "Round"):
    CASES += [(op, [ints(3, 4)], {}), (op, [ints(5, dtype=I64)], {})]

for op in ("TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "InvGrad"):
    CASES += [(op, [floats(3, 4, low=0.2, high=2), floats(3, 4)], {}),
              (op, [floats(6, dtype=F64, low=0.2, high=2), floats(6, dtype=F64)], {})]

CASES += [("Select", [np.array(True), floats(2, 3), floats(2, 3)], {}),
          ("Select", [np.array([True, False]), floats(2, 3), floats(2, 3)], {}),
          ("Select", [BOOLS, ints(2, 3), ints(2, 3)], {}),
          ("SelectV2", [np.array([True, False, True]), floats(2, 3), floats(2, 1)], {}),
          ("SelectV2", [BOOLS, np.float64(1.5), floats(2, 3, dtype=F64)], {}),
          ("ClipByValue", [SPECIAL, np.float32(-1), np.float32(2)], {}),
          ("ClipByValue", [ints(3, 4), ints(3, 4, low=-5, high=0), ints(3, 4, low=0, high=5)], {}),
          ("ClipByValue", [floats(4), np.float32(np.nan), np.float32(1)], {}),
          ("AddN", [floats(2, 3)], {}),
          ("AddN", [floats(2, 3) for _ in range(3)], {}),
          ("AddN", [floats(4) for _ in range(17)], {}),
          ("AddN", [ints(2, 2, dtype=I64) for _ in range(10)], {})]

CAST_SOURCES = [SPECIAL, np.array([3e9, -3e9, 1e20, 2.7, -2.7, 300.5, -129.0, np.nan], F64),
                ints(3, 4), ints(5, dtype=I64, low=-2 ** 40, high=2 ** 40), BOOLS,
                np.array([0, 1, 200, 255], np.uint8)]
for source in CAST_SOURCES:
    for destination in (F32, F64, I32, I64, np.int8, np.uint8, np.uint32, np.bool_):
        CASES.append(("Cast", [source], {"DstT": np.dtype(destination), "SrcT": source.dtype,
                                         "Truncate": False}))

CASES += [("MatMul", [floats(3, 4), floats(4, 5)], {}, 1e-4),
          ("MatMul", [floats(4, 3), floats(5, 4)], {"transpose_a": True, "transpose_b": True}, 1e-4),
          ("MatMul", [floats(0, 4, dtype=F64), floats(4, 2, dtype=F64)], {}),
          ("MatMul", [ints(3, 4), ints(4, 2)], {}),
          ("MatMul", [floats(3, 0), floats(0, 2)], {}),
          ("BatchMatMul", [floats(2, 3, 4), floats(2, 4, 5)], {"adj_x": False, "adj_y": False}, 1e-4),
          ("BatchMatMulV2", [floats(2, 1, 3, 4), floats(5, 5, 4)], {"adj_y": True}, 1e-4),
          ("BatchMatMulV2", [floats(3, 4, dtype=F64), floats(2, 4, 5, dtype=F64)], {"adj_x": False}),
          ("BatchMatMulV3", [floats(2, 3, 4), floats(2, 4, 5)], {"Ta": np.dtype(F32), "Tb": np.dtype(F32),
                                                                 "Tout": np.dtype(F32)}, 1e-4)]
