"""Finite-difference cases for graphtool/grad/math_matrix.py (decompositions, solvers, real
Fourier transforms, Complex): op -> list of Case. Matrices are drawn well conditioned (a random
part plus a multiple of the identity) so that the finite differences are meaningful."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand, Value

_RNG = np.random.default_rng(1313)


def _well_conditioned(*batch, n=3):
    return Value(_RNG.uniform(-1, 1, (*batch, n, n)) + 3 * np.eye(n))


def _spd(*batch, n=3):
    a = _RNG.uniform(-1, 1, (*batch, n, n))
    return Value(a @ np.swapaxes(a, -1, -2) + n * np.eye(n))


def _upper(*batch, n=3):
    return Value(np.triu(_RNG.uniform(-1, 1, (*batch, n, n))) + 2 * np.eye(n))


# Double precision throughout: finite differences of single-precision outputs are too coarse.
_C128, _F64 = {"Tcomplex": "complex128"}, {"Treal": "float64"}

CASES = {
    "MatrixInverse": [Case([_well_conditioned(2)]), Case([_well_conditioned()], attrs={"adjoint": True})],
    "MatrixDeterminant": [Case([_well_conditioned(2)])],
    "LogMatrixDeterminant": [Case([_well_conditioned(2)], outputs=(1,))],
    # TensorFlow's Cholesky gradient is symmetric: checked along symmetric nudges.
    "Cholesky": [Case([_spd(2)], dynamic=False, symmetric=True)],
    "SelfAdjointEigV2": [Case([_spd(2)], outputs=(0,), label="eigenvalues"),
                         Case([_spd()], label="eigenvalues and vectors"),
                         Case([_spd()], attrs={"compute_v": False}, outputs=(0,), label="compute_v=False")],
    "Qr": [Case([Rand((2, 4, 3))], dynamic=False), Case([_well_conditioned()], dynamic=False, label="square")],
    "MatrixSolve": [Case([_well_conditioned(2), Rand((2, 3, 2))]),
                    Case([_well_conditioned(), Rand((3, 1))], attrs={"adjoint": True})],
    "MatrixTriangularSolve": [
        Case([_well_conditioned(2), Rand((2, 3, 2))]),
        Case([_upper(), Rand((3, 2))], attrs={"lower": False, "adjoint": True}),
        Case([_well_conditioned(), Rand((2, 3, 2))], label="broadcast matrix"),
        Case([_upper(2), Rand((3, 1))], attrs={"lower": False}, label="broadcast rhs")],
    "Svd": [Case([Rand((2, 4, 3))], dynamic=False, outputs=(0,), label="singular values"),
            Case([Rand((3, 3))], attrs={"compute_uv": False}, dynamic=False, outputs=(0,), label="compute_uv=False"),
            Case([Rand((2, 3, 4))], dynamic=False, label="wide, with vectors"),
            Case([Rand((4, 3))], dynamic=False, label="tall, with vectors"),
            Case([Rand((3, 3))], attrs={"full_matrices": True}, dynamic=False, label="full_matrices")],
    "MatrixSolveLs": [Case([Rand((2, 4, 3)), Rand((2, 4, 2)), np.float64(0.3)], dynamic=False, label="tall"),
                      Case([Rand((3, 4)), Rand((3, 2)), np.float64(0.2)], dynamic=False, label="wide")],
    "RFFT": [Case([Rand((2, 8)), np.array([8], np.int32)], attrs=_C128, dynamic=False),
             Case([Rand((2, 7)), np.array([5], np.int32)], attrs=_C128, dynamic=False, label="cropped, odd")],
    "RFFT2D": [Case([Rand((2, 4, 6)), np.array([3, 6], np.int32)], attrs=_C128, dynamic=False, label="outer cropped")],
    "IRFFT": [Case([Rand((2, 5)), np.array([8], np.int32)], dtype="complex128", attrs=_F64, dynamic=False),
              Case([Rand((2, 6)), np.array([7], np.int32)], dtype="complex128", attrs=_F64, dynamic=False,
                   label="cropped, odd")],
    "IRFFT2D": [Case([Rand((2, 4, 5)), np.array([3, 8], np.int32)], dtype="complex128", attrs=_F64, dynamic=False,
                     label="outer cropped")],
    **{op: [Case([Rand((2, 3, 4))], dtype="complex128", dynamic=False)]
       for op in ("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D")},
    # The complex parts: complex128 in (nudged along both parts), or Complex's two reals.
    "Complex": [Case([Rand((2, 3)), Rand((3,))], attrs={"Tout": "complex128"})],
    **{op: [Case([Rand((2, 3))], dtype="complex128", attrs={"Tout": "float64"})]
       for op in ("Real", "Imag", "ComplexAbs", "Angle")},
    "Conj": [Case([Rand((2, 3))], dtype="complex128")],
    "ConjugateTranspose": [Case([Rand((2, 3, 4)), np.array([0, 2, 1], np.int32)], dtype="complex128"),
                           Case([Rand((2, 3)), np.array([1, 0], np.int32)], label="real")],
}
