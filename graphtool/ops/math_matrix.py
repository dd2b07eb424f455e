"""The math family, continued: matrix decompositions and solvers (MatrixInverse, MatrixDeterminant,
LogMatrixDeterminant, Cholesky, Qr, Svd, SelfAdjointEigV2, MatrixSolve, MatrixTriangularSolve,
MatrixSolveLs). Every op works on the innermost two dims; the leading dims are a batch.
Imported by math.py."""
from __future__ import annotations

from ..shapes import Shape, ShapeError, has_rank
from .inference import InferenceContext
from .math_common import broadcast, merge_dims, register_math

_LINALG_TYPES = "{double, float, half, complex64, complex128}"


def _matrices(ctx: InferenceContext, i: int = 0, square: bool = False) -> tuple[Shape, int | None, int | None]:
    """(batch dims, rows, cols) of input i, a batch of matrices; unknown rank gives unknown batch."""
    shape = ctx.with_rank_at_least(i, 2)
    if not has_rank(shape):
        return Shape.unknown(), None, None
    rows, cols = shape[-2], shape[-1]
    if square:
        rows = cols = merge_dims(ctx, rows, cols, f"the dimensions of input {i}'s matrices")
    return shape[:-2], rows, cols


def _square_shape(ctx: InferenceContext) -> Shape:
    batch, rows, cols = _matrices(ctx, square=True)
    return batch.concatenate([rows, cols]) if has_rank(batch) else Shape.unknown()


def _determinant_shape(ctx: InferenceContext) -> Shape:
    return _matrices(ctx, square=True)[0]


def _log_determinant_shapes(ctx: InferenceContext) -> list[Shape]:
    batch = _matrices(ctx, square=True)[0]
    return [batch, batch]


def _with(batch: Shape, *dims) -> Shape:
    return batch.concatenate(list(dims)) if has_rank(batch) else Shape.unknown()


def _smaller(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def _qr_shapes(ctx: InferenceContext) -> list[Shape]:
    batch, rows, cols = _matrices(ctx)
    if ctx.attr("full_matrices"):
        return [_with(batch, rows, rows), _with(batch, rows, cols)]
    p = _smaller(rows, cols)
    return [_with(batch, rows, p), _with(batch, p, cols)]


def _svd_shapes(ctx: InferenceContext) -> list[Shape]:
    """s [..., p]; u and v [..., m|n, p] (square with full_matrices), or empty vectors without
    compute_uv, as TensorFlow declares them."""
    batch, rows, cols = _matrices(ctx)
    p = _smaller(rows, cols)
    if not ctx.attr("compute_uv"):
        return [_with(batch, p), Shape([0]), Shape([0])]
    if ctx.attr("full_matrices"):
        return [_with(batch, p), _with(batch, rows, rows), _with(batch, cols, cols)]
    return [_with(batch, p), _with(batch, rows, p), _with(batch, cols, p)]


def _eig_shapes(ctx: InferenceContext) -> list[Shape]:
    batch, n, _ = _matrices(ctx, square=True)
    return [_with(batch, n), _with(batch, n, n) if ctx.attr("compute_v") else Shape([0])]


def _solve_shape(ctx: InferenceContext) -> Shape:
    """MatrixSolve: matrix [..., M, M], rhs [..., M, K] with equal batch dims -> [..., M, K]."""
    batch, rows, _ = _matrices(ctx, 0, square=True)
    rhs_batch, rhs_rows, k = _matrices(ctx, 1)
    rows = merge_dims(ctx, rows, rhs_rows, "the matrix rows and the rhs rows")
    try:
        batch = batch.merge(rhs_batch)
    except ShapeError:
        ctx.fail(f"batch dimensions {batch} and {rhs_batch} must be equal")
    return _with(batch, rows, k)


def _triangular_solve_shape(ctx: InferenceContext) -> Shape:
    """MatrixTriangularSolve: as MatrixSolve, but the batch dims broadcast."""
    batch, rows, _ = _matrices(ctx, 0, square=True)
    rhs_batch, rhs_rows, k = _matrices(ctx, 1)
    rows = merge_dims(ctx, rows, rhs_rows, "the matrix rows and the rhs rows")
    if not has_rank(batch) or not has_rank(rhs_batch):
        return Shape.unknown()
    return _with(broadcast(ctx, batch, rhs_batch), rows, k)


def _solve_ls_shape(ctx: InferenceContext) -> Shape:
    """MatrixSolveLs: matrix [..., M, N], rhs [..., M, K], scalar l2_regularizer -> [..., N, K]."""
    batch, rows, cols = _matrices(ctx, 0)
    rhs_batch, rhs_rows, k = _matrices(ctx, 1)
    ctx.with_rank(2, 0)
    merge_dims(ctx, rows, rhs_rows, "the matrix rows and the rhs rows")
    try:
        batch = batch.merge(rhs_batch)
    except ShapeError:
        ctx.fail(f"batch dimensions {batch} and {rhs_batch} must be equal")
    return _with(batch, cols, k)


_T = f"T: {_LINALG_TYPES}"
register_math("MatrixInverse", inputs=["input: T"], outputs=["output: T"],
              attrs=["adjoint: bool = false", _T], shape=_square_shape)
register_math("MatrixDeterminant", inputs=["input: T"], outputs=["output: T"], attrs=[_T],
              shape=_determinant_shape)
register_math("LogMatrixDeterminant", inputs=["input: T"],
              outputs=["sign: T", "log_abs_determinant: T"], attrs=[_T],
              shape=_log_determinant_shapes)
register_math("Cholesky", inputs=["input: T"], outputs=["output: T"], attrs=[_T],
              shape=_square_shape)
register_math("Qr", inputs=["input: T"], outputs=["q: T", "r: T"],
              attrs=["full_matrices: bool = false", _T], shape=_qr_shapes)
register_math("Svd", inputs=["input: T"], outputs=["s: T", "u: T", "v: T"],
              attrs=["compute_uv: bool = true", "full_matrices: bool = false", _T],
              shape=_svd_shapes)
register_math("SelfAdjointEigV2", inputs=["input: T"], outputs=["e: T", "v: T"],
              attrs=["compute_v: bool = true", _T], shape=_eig_shapes)
register_math("MatrixSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
              attrs=["adjoint: bool = false", _T], shape=_solve_shape)
register_math("MatrixTriangularSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
              attrs=["lower: bool = true", "adjoint: bool = false",
                     "T: {bfloat16, double, float, half, complex64, complex128}"],
              shape=_triangular_solve_shape)
register_math("MatrixSolveLs", inputs=["matrix: T", "rhs: T", "l2_regularizer: double"],
              outputs=["output: T"], attrs=[_T, "fast: bool = true"], shape=_solve_ls_shape)
