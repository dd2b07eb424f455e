"""Kernels of the matrix decompositions and solvers: MatrixInverse, MatrixDeterminant,
LogMatrixDeterminant, Cholesky, Qr, Svd, SelfAdjointEigV2, MatrixSolve, MatrixTriangularSolve,
MatrixSolveLs.

They use the array module's LAPACK-backed linalg (batched over the leading dims). half and
bfloat16 are computed in float32 and rounded at the end. Where TensorFlow refuses a matrix
(singular inverse/solve, rank-deficient fast least squares) the kernel fails with
TensorFlow's text; determinants of singular matrices are plain zeros and a Cholesky factor of a
matrix that is not positive definite is NaN, as in TensorFlow.
Cholesky and SelfAdjointEigV2 read only the lower triangle, as TensorFlow's Eigen solvers do.
"""
from __future__ import annotations

import numpy as np

from .math_common import compute_dtype, math_kernel, shape_text

LinAlgError = np.linalg.LinAlgError


def _matrices(ctx, x, square: bool = True, name: str = "Input"):
    """x in its compute dtype, after TensorFlow's rank and squareness checks."""
    if x.ndim < 2:
        ctx.fail(f"{name} must have rank >= 2, got {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        ctx.fail(f"{name} matrices must be squares, got {x.shape[-2]} != {x.shape[-1]}")
    return x.astype(compute_dtype(x.dtype), copy=False)


def _adjoint(xp, x):
    return xp.conj(xp.swapaxes(x, -1, -2))


@math_kernel("MatrixInverse", expensive=True)
def matrix_inverse(ctx, x, *, adjoint):
    xp = ctx.xp
    x = _matrices(ctx, x)
    if adjoint:
        x = _adjoint(xp, x)
    try:
        return xp.linalg.inv(x) if x.size else xp.zeros_like(x)
    except LinAlgError:
        ctx.fail("Input is not invertible.")


@math_kernel("MatrixDeterminant", expensive=True)
def matrix_determinant(ctx, x):
    xp = ctx.xp
    x = _matrices(ctx, x)
    if x.shape[-1] == 0:                 # the determinant of a 0x0 matrix is 1
        return xp.ones(x.shape[:-2], x.dtype)
    return xp.linalg.det(x) if x.size else xp.zeros(x.shape[:-2], x.dtype)


@math_kernel("LogMatrixDeterminant", expensive=True)
def log_matrix_determinant(ctx, x):
    """(sign, log|det|); a singular matrix gives sign 0 and -inf, as in TensorFlow."""
    xp = ctx.xp
    x = _matrices(ctx, x)
    if x.shape[-1] == 0 or not x.size:
        return xp.ones(x.shape[:-2], x.dtype), xp.zeros(x.shape[:-2], x.dtype)
    sign, log_abs = xp.linalg.slogdet(x)
    return sign, log_abs


@math_kernel("Cholesky", expensive=True)
def cholesky(ctx, x):
    """A matrix that is not positive definite gets NaN in its whole lower triangle (TensorFlow's
    CPU kernel no longer fails); the others are factored as usual."""
    xp = ctx.xp
    x = _matrices(ctx, x)
    if not x.size:
        return xp.zeros_like(x)
    # Only the lower triangle is read: the factorization sees its Hermitian completion.
    hermitian = xp.tril(x) + _adjoint(xp, xp.tril(x, -1))
    n = x.shape[-1]
    failed = xp.tril(xp.full((n, n), xp.nan, dtype=x.dtype))
    try:
        factors = xp.linalg.cholesky(hermitian)
    except LinAlgError:   # numpy: one failed matrix fails the batch; factor them one by one
        flat = hermitian.reshape((-1, n, n))
        each = []
        for matrix in flat:
            try:
                each.append(xp.linalg.cholesky(matrix))
            except LinAlgError:
                each.append(failed)
        return xp.stack(each).reshape(x.shape)
    # cupy does not raise (cuSOLVER's status is not checked unless asked): a matrix that is not
    # positive definite comes back partly factored, with a NaN or non-positive diagonal entry
    # where the factorization stopped. numpy's LAPACK fails on exactly those (a NaN pivot too).
    diagonal = xp.diagonal(factors, axis1=-2, axis2=-1).real
    not_factored = ~(diagonal > 0).all(axis=-1)
    if bool(not_factored.any()):
        factors = xp.where(not_factored[..., None, None], failed, factors)
    return factors


@math_kernel("Qr", expensive=True)
def qr(ctx, x, *, full_matrices):
    xp = ctx.xp
    x = _matrices(ctx, x, square=False)
    rows, cols = x.shape[-2:]
    p = rows if full_matrices else min(rows, cols)
    if not x.size:
        eye = xp.broadcast_to(xp.eye(rows, p, dtype=x.dtype), x.shape[:-2] + (rows, p))
        return xp.array(eye), xp.zeros(x.shape[:-2] + (p, cols), x.dtype)
    return tuple(xp.linalg.qr(x, mode="complete" if full_matrices else "reduced"))


@math_kernel("Svd", expensive=True)
def svd(ctx, x, *, compute_uv, full_matrices):
    """(s, u, v) with v, not its adjoint; without compute_uv u and v are empty vectors."""
    xp = ctx.xp
    x = _matrices(ctx, x, square=False)
    rows, cols = x.shape[-2:]
    batch, p = x.shape[:-2], min(rows, cols)
    real = x.real.dtype
    if not compute_uv:
        empty = xp.zeros((0,), x.dtype)
        s = xp.linalg.svd(x, compute_uv=False) if x.size else xp.zeros(batch + (p,), real)
        return s.astype(x.dtype), empty, empty
    if not x.size:
        u_cols, v_cols = (rows, cols) if full_matrices else (p, p)
        return (xp.zeros(batch + (p,), x.dtype),
                xp.array(xp.broadcast_to(xp.eye(rows, u_cols, dtype=x.dtype), batch + (rows, u_cols))),
                xp.array(xp.broadcast_to(xp.eye(cols, v_cols, dtype=x.dtype), batch + (cols, v_cols))))
    u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    return s.astype(x.dtype), u, _adjoint(xp, vh)


@math_kernel("SelfAdjointEigV2", expensive=True)
def self_adjoint_eig(ctx, x, *, compute_v):
    """Eigenvalues in ascending order (and the eigenvectors as columns)."""
    xp = ctx.xp
    x = _matrices(ctx, x)
    n = x.shape[-1]
    if not x.size:
        e = xp.zeros(x.shape[:-2] + (n,), x.dtype)
        return e, (xp.zeros_like(x) if compute_v else xp.zeros((0,), x.dtype))
    if not compute_v:
        return xp.linalg.eigvalsh(x, "L").astype(x.dtype), xp.zeros((0,), x.dtype)
    e, v = xp.linalg.eigh(x, "L")
    return e.astype(x.dtype), v


def _solve_operands(ctx, matrix, rhs):
    matrix = _matrices(ctx, matrix)
    rhs = _matrices(ctx, rhs, square=False, name="Rhs")
    if matrix.shape[-1] != rhs.shape[-2]:
        ctx.fail(f"Input matrix and right-hand side must have the same number of rows: "
                 f"{shape_text(matrix.shape)} vs. {shape_text(rhs.shape)}")
    return matrix, rhs


@math_kernel("MatrixSolve", expensive=True)
def matrix_solve(ctx, matrix, rhs, *, adjoint):
    xp = ctx.xp
    matrix, rhs = _solve_operands(ctx, matrix, rhs)
    if matrix.shape[:-2] != rhs.shape[:-2]:
        ctx.fail(f"All input tensors must have the same outer dimensions: "
                 f"{shape_text(matrix.shape)} vs. {shape_text(rhs.shape)}")
    if not matrix.size or not rhs.size:
        return xp.zeros(rhs.shape, rhs.dtype)
    if adjoint:
        matrix = _adjoint(xp, matrix)
    try:
        return xp.linalg.solve(matrix, rhs)
    except LinAlgError:
        ctx.fail("Input matrix is not invertible.")


@math_kernel("MatrixTriangularSolve", expensive=True)
def matrix_triangular_solve(ctx, matrix, rhs, *, lower, adjoint):
    """Forward or back substitution, one row at a time over the whole batch. Only the named
    triangle is read; a zero on the diagonal gives inf/NaN rather than an error, as in TensorFlow.
    The batch dims broadcast."""
    xp = ctx.xp
    matrix, rhs = _solve_operands(ctx, matrix, rhs)
    try:
        batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    except ValueError:
        ctx.fail(f"Incompatible batch dimensions: {shape_text(matrix.shape)} vs. {shape_text(rhs.shape)}")
    n = matrix.shape[-1]
    matrix = xp.broadcast_to(matrix, batch + (n, n))
    out = xp.zeros(batch + rhs.shape[-2:], rhs.dtype)
    if not out.size:
        return out
    rhs = xp.broadcast_to(rhs, out.shape)
    triangle = xp.tril(matrix) if lower else xp.triu(matrix)
    if adjoint:
        triangle, lower = _adjoint(xp, triangle), not lower
    rows = range(n) if lower else range(n - 1, -1, -1)
    for i in rows:
        known = slice(0, i) if lower else slice(i + 1, n)
        partial = xp.matmul(triangle[..., i:i + 1, known], out[..., known, :])
        out[..., i:i + 1, :] = (rhs[..., i:i + 1, :] - partial) / triangle[..., i:i + 1, i:i + 1]
    return out


@math_kernel("MatrixSolveLs", expensive=True)
def matrix_solve_ls(ctx, matrix, rhs, l2_regularizer, *, fast):
    """fast: the regularized normal equations through a Cholesky factorization (the smaller of
    AᴴA + λI and AAᴴ + λI, as TensorFlow chooses); otherwise the minimum-norm least-squares
    solution (TensorFlow ignores the regularizer then)."""
    xp = ctx.xp
    matrix = _matrices(ctx, matrix, square=False)
    rhs = _matrices(ctx, rhs, square=False, name="Rhs")
    if matrix.shape[:-2] != rhs.shape[:-2] or matrix.shape[-2] != rhs.shape[-2]:
        ctx.fail(f"Incompatible shapes: {shape_text(matrix.shape)} vs. {shape_text(rhs.shape)}")
    rows, cols = matrix.shape[-2:]
    out_shape = matrix.shape[:-2] + (cols, rhs.shape[-1])
    if not matrix.size or not rhs.size:
        return xp.zeros(out_shape, rhs.dtype)
    if not fast:
        flat_a = matrix.reshape((-1, rows, cols))
        flat_b = rhs.reshape((-1, rows, rhs.shape[-1]))
        solved = [xp.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(flat_a, flat_b)]
        return xp.stack(solved).reshape(out_shape)
    l2 = float(l2_regularizer)
    adjoint = _adjoint(xp, matrix)
    eye_n = xp.eye(min(rows, cols), dtype=matrix.dtype) * l2
    try:
        if rows >= cols:
            gram = xp.matmul(adjoint, matrix) + eye_n
            return _cholesky_solve(xp, gram, xp.matmul(adjoint, rhs))
        gram = xp.matmul(matrix, adjoint) + eye_n
        return xp.matmul(adjoint, _cholesky_solve(xp, gram, rhs))
    except LinAlgError:
        ctx.fail("Input matrix was rank deficient or ill-conditioned. Try setting fast=False or "
                 "provide a larger l2_regularizer > 0.")


def _cholesky_solve(xp, gram, rhs):
    factor = xp.linalg.cholesky(gram)
    return xp.linalg.solve(_adjoint(xp, factor), xp.linalg.solve(factor, rhs))
