"""Cases for the reductions, arg-reductions and scans: (op, inputs, attrs[, rtol])."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import F64, I32, I64, floats, ints

WITH_NAN = floats(3, 4)
WITH_NAN[1, 2] = np.nan
AXES = [np.array([1], I32), np.array(-1, I32), np.array([0, 2], I64), np.array([], I32)]

CASES = []
for op in ("Sum", "Prod", "Mean", "Max", "Min", "EuclideanNorm"):
    for axes in AXES:
        for keep in (False, True):
            CASES.append((op, [floats(2, 3, 4), axes], {"keep_dims": keep}, 1e-4))
    if op == "EuclideanNorm":
        continue
    CASES += [(op, [ints(3, 4, 5), np.array([0, 1], I32)], {"keep_dims": False}),
              (op, [ints(6, 5, dtype=I64, low=-2 ** 40, high=2 ** 40), np.array(0, I32)], {"keep_dims": True}),
              (op, [floats(0, 3, dtype=F64), np.array([0], I32)], {"keep_dims": False}),
              (op, [ints(0, 3), np.array([0], I32)], {"keep_dims": True}),
              (op, [WITH_NAN, np.array([1], I32)], {"keep_dims": False}, 1e-4),
              (op, [np.float32(2.5), np.array([], I32)], {"keep_dims": False})]
CASES += [("EuclideanNorm", [floats(0, 3, dtype=F64), np.array([0], I32)], {"keep_dims": False}),
          ("EuclideanNorm", [WITH_NAN, np.array([1], I32)], {"keep_dims": True}, 1e-4)]
for op in ("All", "Any"):
    flags = np.array([[True, False, True], [True, True, True]])
    CASES += [(op, [flags, np.array([1], I32)], {"keep_dims": False}),
              (op, [flags, np.array([0, -1], I32)], {"keep_dims": True}),
              (op, [np.zeros((0, 2), bool), np.array([0], I32)], {"keep_dims": False})]
for op in ("ArgMax", "ArgMin"):
    ties = np.array([[1, 3, 3, 0], [2, 2, -1, 2]], I32)
    CASES += [(op, [WITH_NAN, np.array(1, I32)], {"output_type": np.dtype(I64)}),
              (op, [ties, np.array(-1, I64)], {"output_type": np.dtype(I32)}),
              (op, [floats(3, 4, 5, dtype=F64), np.array(0, I32)], {"output_type": np.dtype(I64)})]
for op in ("Cumsum", "Cumprod"):
    for exclusive in (False, True):
        for reverse in (False, True):
            CASES += [(op, [floats(3, 4), np.array(1, I32)], {"exclusive": exclusive, "reverse": reverse}),
                      (op, [ints(4, 3, low=-3, high=4), np.array(-2, I32)],
                       {"exclusive": exclusive, "reverse": reverse})]
    CASES.append((op, [floats(0, 3), np.array(0, I32)], {"exclusive": True, "reverse": False}))
