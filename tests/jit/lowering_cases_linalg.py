"""Cases for complex numbers, Fourier transforms, matrix ops and top-k."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import F32, F64, I32, I64, floats, ints

C64, C128 = np.complex64, np.complex128


def complexes(*shape, dtype=C64):
    return (floats(*shape) + 1j * floats(*shape)).astype(dtype)


SPECIAL_COMPLEX = np.array([complex(np.inf, 0), complex(0, -np.inf), complex(np.nan, 1), 0j, -0j,
                            complex(-1, 0), complex(-1, -0.0), 3 + 4j], C64)
CASES = []
for op in ("Real", "Imag", "Conj", "ComplexAbs", "Angle"):
    CASES += [(op, [complexes(3, 4)], {}), (op, [SPECIAL_COMPLEX], {}), (op, [complexes(2, dtype=C128)], {})]
CASES += [("Complex", [floats(3, 4), floats(4)], {"Tout": np.dtype(C64)}),
          ("Complex", [np.array([np.inf, -np.inf, np.nan, 0.0]), np.array([np.inf, 1.0, 0.0, -0.0])],
           {"Tout": np.dtype(C128)}),
          ("ConjugateTranspose", [complexes(2, 3, 4), np.array([2, 0, 1], I32)], {}),
          ("ConjugateTranspose", [floats(2, 3), np.array([1, 0], I64)], {}),
          ("Add", [complexes(2, 3), complexes(3)], {}), ("Sub", [complexes(3), complexes(3)], {}),
          ("Mul", [complexes(2, 3, dtype=C128), complexes(2, 3, dtype=C128)], {})]
for suffix, rank in (("", 1), ("2D", 2), ("3D", 3)):
    shape = (2, 3, 4, 5)[-rank - 1:]
    CASES += [(f"FFT{suffix}", [complexes(*shape)], {}, 1e-4),
              (f"IFFT{suffix}", [complexes(*shape, dtype=C128)], {}),
              (f"FFT{suffix}", [complexes(0, *shape[1:])], {})]
    lengths = np.array([4, 3, 6][-rank:], I32)
    x = floats(2, 4, 5, 8)[(0,) * (3 - rank)] if rank < 3 else floats(2, 4, 5, 8)
    CASES += [(f"RFFT{suffix}", [x, lengths], {"Tcomplex": np.dtype(C64)}, 1e-4),
              (f"RFFT{suffix}", [x.astype(F64), lengths], {"Tcomplex": np.dtype(C128)}),
              (f"IRFFT{suffix}", [complexes(*x.shape), lengths], {"Treal": np.dtype(F32)}, 1e-4),
              (f"IRFFT{suffix}", [complexes(*x.shape, dtype=C128), lengths], {"Treal": np.dtype(F64)})]

CASES += [("MatrixBandPart", [floats(2, 4, 5), np.array(1, I64), np.array(-1, I64)], {"Tindex": np.dtype(I64)}),
          ("MatrixBandPart", [ints(5, 3), np.array(0, I32), np.array(0, I32)], {"Tindex": np.dtype(I32)}),
          ("MatrixBandPart", [floats(0, 3, 3), np.array(-1, I64), np.array(2, I64)], {"Tindex": np.dtype(I64)})]


def well_conditioned(*batch, n=4, dtype=F64):
    return (floats(*batch, n, n, dtype=dtype) + 4 * np.eye(n, dtype=dtype)).astype(dtype)


def positive_definite(*batch, n=4, dtype=F64):
    a = floats(*batch, n, n, dtype=dtype)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=dtype)).astype(dtype)


for lower in (True, False):
    for adjoint in (False, True):
        CASES += [("MatrixTriangularSolve", [well_conditioned(2), floats(2, 4, 3, dtype=F64)],
                   {"lower": lower, "adjoint": adjoint}),
                  ("MatrixTriangularSolve", [well_conditioned(n=3, dtype=F32), floats(2, 3, 2)],
                   {"lower": lower, "adjoint": adjoint}, 1e-4)]
CASES += [("MatrixTriangularSolve", [well_conditioned(n=3), floats(3, 0, dtype=F64)],
           {"lower": True, "adjoint": False}),
          ("Cholesky", [positive_definite(2)], {}), ("Cholesky", [positive_definite(n=3, dtype=F32)], {}, 1e-4),
          ("Cholesky", [np.array([[1.0, 0.0], [5.0, -3.0]])], {}),      # not positive definite: NaN
          ("Cholesky", [floats(0, 3, 3, dtype=F64)], {}),
          ("MatrixInverse", [well_conditioned(2)], {"adjoint": False}),
          ("MatrixInverse", [well_conditioned(n=3, dtype=F32)], {"adjoint": True}, 1e-4),
          ("MatrixSolve", [well_conditioned(2), floats(2, 4, 3, dtype=F64)], {"adjoint": False}),
          ("MatrixSolve", [well_conditioned(n=3, dtype=F32), floats(3, 2)], {"adjoint": True}, 1e-4),
          ("MatrixDeterminant", [well_conditioned(3)], {}), ("MatrixDeterminant", [floats(2, 0, 0, dtype=F64)], {}),
          ("MatrixDeterminant", [well_conditioned(n=3, dtype=F32)], {}, 1e-4),
          ("LogMatrixDeterminant", [floats(3, 4, 4, dtype=F64)], {}),
          ("LogMatrixDeterminant", [np.zeros((2, 2))], {})]

ROWS = np.array([[3, 1, 3, 2, 3], [0, -1, 5, 5, 2]], I32)
CASES += [("TopKV2", [ROWS, np.array(3, I32)], {"sorted": True}),
          ("TopKV2", [ints(2, 3, 6, dtype=I64), np.array(0, I32)], {"sorted": True}),
          ("TopKV2", [ROWS.astype(np.uint8), np.array(5, I32)], {"sorted": True}),
          ("InTopKV2", [np.array([[0.1, 0.5, 0.5], [np.nan, 1, 2], [3, 2, 1]], F32), np.array([2, 2, 5], I32),
                        np.array(1, I32)], {}),
          ("InTopKV2", [floats(4, 6), np.array([0, 1, 2, -1], I64), np.array(3, I64)], {})]

ALIGNS = ("LEFT_LEFT", "RIGHT_LEFT", "LEFT_RIGHT", "RIGHT_RIGHT")
CASES += [("MatrixDiagPart", [floats(2, 3, 4)], {}), ("MatrixDiag", [ints(2, 3)], {}),
          ("MatrixSetDiag", [floats(2, 4, 3), floats(2, 3)], {}),
          ("MatrixDiagPartV2", [floats(3, 4), np.array([-1, 1], I32), np.float32(9)], {}),
          ("MatrixDiagV2", [floats(2, 3), np.array(1, I32), np.array(-1, I32), np.array(-1, I32), np.float32(0)], {}),
          ("MatrixSetDiagV2", [floats(3, 3), floats(3), np.array(0, I32)], {})]
for align in ALIGNS:
    CASES += [("MatrixDiagPartV3", [floats(2, 4, 5), np.array([-2, 1], I32), np.float32(-1)], {"align": align}),
              ("MatrixDiagPartV3", [ints(3, 3), np.array(1, I32), np.int32(7)], {"align": align}),
              ("MatrixDiagV3", [floats(3, 4), np.array([-1, 1], I32), np.array(5, I32), np.array(-1, I32),
                                np.float32(2.5)], {"align": align}),
              ("MatrixSetDiagV3", [floats(2, 4, 5), floats(2, 4, 4), np.array([-2, 1], I32)], {"align": align})]
