"""Lowerings of the matrix ops with a single well-defined answer: MatrixBandPart,
MatrixTriangularSolve, Cholesky, MatrixInverse, MatrixSolve, MatrixDeterminant and
LogMatrixDeterminant (real dtypes). The decompositions whose factors are defined only up to signs
or order (Qr, Svd, SelfAdjointEig) are not lowered: XLA's and LAPACK's choices differ.

As in the interpreter (kernels/math_matrix.py): only the named triangle of a triangular or
Cholesky input is read, a zero pivot gives inf/NaN, a matrix that is not positive definite gets
NaN in its Cholesky factor. Not matched, and so documented: a singular matrix is an error for
MatrixInverse and MatrixSolve in the interpreter; a compiled cluster gives XLA's inf/NaN values.
"""
from __future__ import annotations

import numpy as np

from .common import lowering, static_int


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering("MatrixBandPart", static_inputs=(1, 2), half=True, complex_ok=True)
def matrix_band_part(ctx, x, num_lower, num_upper):
    rows, cols = x.shape[-2:]
    lower, upper = static_int(num_lower), static_int(num_upper)
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]   # column - row
    keep = np.ones((rows, cols), bool)
    if lower >= 0:   # a negative count keeps the whole triangle
        keep &= -offset <= lower
    if upper >= 0:
        keep &= offset <= upper
    return ctx.jnp.where(keep, x, ctx.jnp.zeros((), x.dtype))


@lowering("MatrixTriangularSolve", supports=_float)
def matrix_triangular_solve(ctx, matrix, rhs):
    jnp, lower = ctx.jnp, ctx.attr("lower", True)
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    n = matrix.shape[-1]
    if 0 in batch or 0 in rhs.shape[-2:]:
        return jnp.zeros(batch + rhs.shape[-2:], rhs.dtype)
    matrix = jnp.broadcast_to(matrix, batch + (n, n))
    rhs = jnp.broadcast_to(rhs, batch + rhs.shape[-2:])
    triangle = jnp.tril(matrix) if lower else jnp.triu(matrix)
    return ctx.lax.linalg.triangular_solve(triangle, rhs, left_side=True, lower=lower,
                                           transpose_a=ctx.attr("adjoint", False))


@lowering("Cholesky", supports=_float)
def cholesky(ctx, x):
    jnp = ctx.jnp
    if not x.size:
        return x
    hermitian = jnp.tril(x) + jnp.swapaxes(jnp.tril(x, -1), -1, -2)
    factor = ctx.lax.linalg.cholesky(hermitian, symmetrize_input=False)
    return jnp.tril(factor)   # NaN (not positive definite) stays in the lower triangle only


# MatrixInverse: jnp.linalg.inv. 64 x 32x32 float32, ms, three runs (bench_lowerings.py and a
# side script): interpreter (numpy's LAPACK) 1.7-3.2, jnp.linalg.inv 2.5-8.8, an explicit LU and
# two triangular solves 2.5-14; within this machine's noise none is reliably faster.
@lowering("MatrixInverse", supports=_float)
def matrix_inverse(ctx, x):
    if not x.size:
        return x
    if ctx.attr("adjoint", False):
        x = ctx.jnp.swapaxes(x, -1, -2)
    return ctx.jnp.linalg.inv(x)


@lowering("MatrixSolve", supports=_float)
def matrix_solve(ctx, matrix, rhs):
    if not matrix.size or not rhs.size:
        return ctx.jnp.zeros(rhs.shape, rhs.dtype)
    if ctx.attr("adjoint", False):
        matrix = ctx.jnp.swapaxes(matrix, -1, -2)
    return ctx.jnp.linalg.solve(matrix, rhs)


@lowering("MatrixDeterminant", supports=_float)
def matrix_determinant(ctx, x):
    if x.shape[-1] == 0:
        return ctx.jnp.ones(x.shape[:-2], x.dtype)
    if not x.size:
        return ctx.jnp.zeros(x.shape[:-2], x.dtype)
    return ctx.jnp.linalg.det(x)


@lowering("LogMatrixDeterminant", supports=_float)
def log_matrix_determinant(ctx, x):
    if x.shape[-1] == 0 or not x.size:
        return ctx.jnp.ones(x.shape[:-2], x.dtype), ctx.jnp.zeros(x.shape[:-2], x.dtype)
    sign, log_abs = ctx.jnp.linalg.slogdet(x)
    return sign, log_abs
