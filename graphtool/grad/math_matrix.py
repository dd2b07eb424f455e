"""Gradients of the matrix decompositions and solvers, the Fourier transforms and the complex
parts (Real, Imag, Complex, Conj, ComplexAbs, Angle).

They follow TensorFlow's linalg_grad.py, spectral_grad.py and math_grad.py formulas. For complex
values the incoming gradient is dL/dRe + i dL/dIm, so a complex-linear map's gradient is its
adjoint applied to it (FFT's is n * IFFT). The real transforms' gradients are written as the
adjoint of "crop, then transform, then keep half the spectrum"; unlike TensorFlow's, they also
handle cropped outer dims. Matrix ops need the rank of their operand statically.
"""
from __future__ import annotations

import numpy as np

from ..shapes import has_rank
from .op_utils import emit, int_const
from .registry import gradient

_REAL_OF = {"complex64": "float32", "complex128": "float64"}
_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def _dtype_name(ctx, ref) -> str:
    return ctx.b.dtype(ref).base.name


def _matmul(ctx, a, b, adj_a=False, adj_b=False):
    return emit(ctx, "BatchMatMulV2", a, b, adj_x=adj_a, adj_y=adj_b)


def _rank(ctx, ref) -> int:
    shape = ctx.b.shape(ref)
    if not has_rank(shape):
        raise ValueError(f"the gradient of {ctx.node.op} node '{ctx.node.name}' needs its operand's rank")
    return shape.rank


def _adjoint(ctx, x):
    rank = _rank(ctx, x)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return emit(ctx, "ConjugateTranspose", x, int_const(ctx.b, perm))


def _scalar(ctx, value, like):
    return ctx.b.const(value, dtype=ctx.b.dtype(like).base)


def _lower(ctx, x):
    return emit(ctx, "MatrixBandPart", x, np.int64(-1), np.int64(0))


def _halve_diagonal(ctx, x):
    return emit(ctx, "MatrixSetDiag", x, emit(ctx, "Mul", _scalar(ctx, 0.5, x), emit(ctx, "MatrixDiagPart", x)))


def _zeros_if_none(ctx, grad, like):
    return emit(ctx, "ZerosLike", like) if grad is None else grad


# --- inverse, determinants ------------------------------------------------------------------

@gradient("MatrixInverse")
def _matrix_inverse_grad(ctx, grads):
    inverse, adjoint = ctx.output(0), ctx.attr("adjoint")
    inner = _matmul(ctx, grads[0], inverse, adj_a=adjoint, adj_b=not adjoint)
    return [emit(ctx, "Neg", _matmul(ctx, inverse, inner, adj_a=not adjoint))]


def _times_adjoint_inverse(ctx, multiplier):
    """multiplier[..., None, None] * inverse(a)ᴴ."""
    adjoint_inverse = emit(ctx, "MatrixInverse", ctx.input(0), adjoint=True)
    expanded = emit(ctx, "ExpandDims", emit(ctx, "ExpandDims", multiplier, np.int32(-1)), np.int32(-1))
    return emit(ctx, "Mul", expanded, adjoint_inverse)


@gradient("MatrixDeterminant")
def _matrix_determinant_grad(ctx, grads):
    return [_times_adjoint_inverse(ctx, emit(ctx, "Mul", grads[0], ctx.output(0)))]


@gradient("LogMatrixDeterminant")
def _log_matrix_determinant_grad(ctx, grads):
    """Only log|det| carries a gradient (the sign is piecewise constant)."""
    if grads[1] is None:
        return [None]
    return [_times_adjoint_inverse(ctx, grads[1])]


# --- decompositions -------------------------------------------------------------------------

@gradient("Cholesky")
def _cholesky_grad(ctx, grads):
    factor = ctx.output(0)
    n = ctx.b.shape(factor)[-1]
    if n is None:
        raise ValueError(f"the gradient of Cholesky node '{ctx.node.name}' needs its matrix size")
    eye = ctx.b.const(np.eye(n, dtype=ctx.b.dtype(factor).base.numpy))
    inverse = emit(ctx, "MatrixTriangularSolve", factor, eye, lower=True, adjoint=False)
    middle = _lower(ctx, _halve_diagonal(ctx, _matmul(ctx, factor, grads[0], adj_a=True)))
    grad = _matmul(ctx, _matmul(ctx, inverse, middle, adj_a=True), inverse)
    grad = emit(ctx, "AddV2", grad, _adjoint(ctx, grad))
    return [emit(ctx, "Mul", grad, _scalar(ctx, 0.5, grad))]


@gradient("SelfAdjointEigV2")
def _self_adjoint_eig_grad(ctx, grads):
    e = ctx.output(0)
    grad_e = _zeros_if_none(ctx, grads[0], e)
    if ctx.attr("compute_v"):
        v = ctx.output(1)
        differences = emit(ctx, "Sub", emit(ctx, "ExpandDims", e, np.int32(-2)),
                           emit(ctx, "ExpandDims", e, np.int32(-1)))
        f = emit(ctx, "MatrixSetDiag", emit(ctx, "Reciprocal", differences), emit(ctx, "ZerosLike", e))
        inner = emit(ctx, "MatrixDiag", grad_e)
        if grads[1] is not None:
            inner = emit(ctx, "AddV2", inner, emit(ctx, "Mul", f, _matmul(ctx, v, grads[1], adj_a=True)))
    else:
        v = emit(ctx, "SelfAdjointEigV2", ctx.input(0), compute_v=True)[1]
        inner = emit(ctx, "MatrixDiag", grad_e)
    grad = _matmul(ctx, v, _matmul(ctx, inner, v, adj_b=True))
    grad = _lower(ctx, emit(ctx, "AddV2", grad, _adjoint(ctx, grad)))
    return [_halve_diagonal(ctx, grad)]


def _solve_upper_on_right(ctx, x, r):
    """x r⁻ᴴ for upper-triangular r."""
    solved = emit(ctx, "MatrixTriangularSolve", r, _adjoint(ctx, x), lower=False, adjoint=False)
    return _adjoint(ctx, solved)


@gradient("Qr")
def _qr_grad(ctx, grads):
    """TensorFlow's formula for square and tall inputs (reduced Q)."""
    q, r = ctx.output(0), ctx.output(1)
    shape = ctx.input_shape(0)
    rows, cols = (shape[-2], shape[-1]) if has_rank(shape) else (None, None)
    if rows is None or cols is None or rows < cols or (ctx.attr("full_matrices") and rows > cols):
        raise ValueError(f"the gradient of Qr node '{ctx.node.name}' is implemented for matrices with "
                         f"statically known rows >= cols (and full_matrices=False unless square), "
                         f"as in TensorFlow; the input is {shape}")
    dq, dr = _zeros_if_none(ctx, grads[0], q), _zeros_if_none(ctx, grads[1], r)
    qdq = _matmul(ctx, q, dq, adj_a=True)
    rdr = _matmul(ctx, r, dr, adj_b=True)
    skew = emit(ctx, "AddV2", emit(ctx, "Sub", qdq, _adjoint(ctx, qdq)), emit(ctx, "Sub", rdr, _adjoint(ctx, rdr)))
    grad_a = _matmul(ctx, q, emit(ctx, "AddV2", dr, _solve_upper_on_right(ctx, _lower(ctx, skew), r)))
    grad_b = _solve_upper_on_right(ctx, emit(ctx, "Sub", dq, _matmul(ctx, q, qdq)), r)
    return [emit(ctx, "AddV2", grad_a, grad_b)]


def _safe_reciprocal(ctx, x):
    """x / (x² + 1e-20): 1/x away from zero, 0 at zero (repeated singular values)."""
    return emit(ctx, "Mul", x, emit(ctx, "Reciprocal", emit(ctx, "AddV2", emit(ctx, "Mul", x, x),
                                                                _scalar(ctx, 1e-20, x))))


def _columns(ctx, x, start: int, stop: int):
    """x[..., :, start:stop]."""
    rank = _rank(ctx, x)
    begin = [0] * (rank - 1) + [start]
    size = [-1] * (rank - 1) + [stop - start]
    return emit(ctx, "Slice", x, int_const(ctx.b, begin), int_const(ctx.b, size))


@gradient("Svd")
def _svd_grad(ctx, grads):
    """TensorFlow's formula (singular vectors too); the inner dims must be static, and with
    full_matrices they may differ by at most one, as in TensorFlow."""
    a = ctx.input(0)
    grad_s = _zeros_if_none(ctx, grads[0], ctx.output(0))
    grad_s_mat = emit(ctx, "MatrixDiag", grad_s)
    if not ctx.attr("compute_uv"):
        _, u, v = emit(ctx, "Svd", a, compute_uv=True, full_matrices=False)
        return [_matmul(ctx, u, _matmul(ctx, grad_s_mat, v, adj_b=True))]
    shape = ctx.input_shape(0)
    m, n = (shape[-2], shape[-1]) if has_rank(shape) else (None, None)
    if m is None or n is None:
        raise ValueError(f"the gradient of Svd node '{ctx.node.name}' needs its matrix dims statically, "
                         f"has {shape}")
    s, u, v = ctx.output(0), ctx.output(1), ctx.output(2)
    grad_u, grad_v = _zeros_if_none(ctx, grads[1], u), _zeros_if_none(ctx, grads[2], v)
    transposed = m > n
    if transposed:       # work on the adjoint, whose rows are fewer than its columns
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    full = ctx.attr("full_matrices")
    if full and abs(m - n) > 1:
        raise ValueError(f"the gradient of Svd node '{ctx.node.name}' with full_matrices=True needs "
                         f"|rows - cols| <= 1 (TensorFlow's limit), has {shape}")
    s_mat = emit(ctx, "MatrixDiag", s)
    s2 = emit(ctx, "Square", s)
    f = emit(ctx, "MatrixSetDiag", _safe_reciprocal(ctx, emit(ctx, "Sub", emit(ctx, "ExpandDims", s2, np.int32(-2)),
                                                             emit(ctx, "ExpandDims", s2, np.int32(-1)))),
             emit(ctx, "ZerosLike", s))
    s_inv_mat = emit(ctx, "MatrixDiag", _safe_reciprocal(ctx, s))
    v1, grad_v1 = _columns(ctx, v, 0, m), _columns(ctx, grad_v, 0, m)
    f_u = emit(ctx, "Mul", f, _matmul(ctx, u, grad_u, adj_a=True))
    v_gv = _matmul(ctx, v1, grad_v1, adj_a=True)
    f_v = emit(ctx, "Mul", f, v_gv)
    inner = emit(ctx, "AddV2", grad_s_mat, _matmul(ctx, emit(ctx, "AddV2", f_u, _adjoint(ctx, f_u)), s_mat))
    inner = emit(ctx, "AddV2", inner, _matmul(ctx, s_mat, emit(ctx, "AddV2", f_v, _adjoint(ctx, f_v))))
    grad = _matmul(ctx, u, _matmul(ctx, inner, v1, adj_b=True))
    if m != n:
        gv1t = _adjoint(ctx, grad_v1)
        rest = emit(ctx, "Sub", gv1t, _matmul(ctx, _matmul(ctx, gv1t, v1), v1, adj_b=True))
        if full:
            v2, grad_v2 = _columns(ctx, v, m, n), _columns(ctx, grad_v, m, n)
            rest = emit(ctx, "Sub", rest, _matmul(ctx, _matmul(ctx, v1, grad_v2, adj_a=True), v2, adj_b=True))
        grad = emit(ctx, "AddV2", grad, _matmul(ctx, _matmul(ctx, u, s_inv_mat), rest))
    if ctx.b.dtype(a).base.is_complex:
        # The phase freedom of complex singular vectors: the imaginary diagonal of vᴴ dv.
        eye = ctx.b.const(np.eye(m, dtype=ctx.b.dtype(a).base.numpy))
        l = emit(ctx, "Mul", eye, v_gv)
        phase = _matmul(ctx, s_inv_mat, emit(ctx, "Sub", _adjoint(ctx, l), l))
        grad = emit(ctx, "AddV2", grad, emit(ctx, "Mul", _scalar(ctx, 0.5, grad),
                                             _matmul(ctx, u, _matmul(ctx, phase, v1, adj_b=True))))
    return [_adjoint(ctx, grad) if transposed else grad]


# --- solvers --------------------------------------------------------------------------------

@gradient("MatrixSolve")
def _matrix_solve_grad(ctx, grads):
    adjoint, solution = ctx.attr("adjoint"), ctx.output(0)
    grad_rhs = emit(ctx, "MatrixSolve", ctx.input(0), grads[0], adjoint=not adjoint)
    if adjoint:
        grad_matrix = _matmul(ctx, solution, grad_rhs, adj_b=True)
    else:
        grad_matrix = _matmul(ctx, grad_rhs, solution, adj_b=True)
    return [emit(ctx, "Neg", grad_matrix), grad_rhs]


@gradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(ctx, grads):
    """As MatrixSolve's, kept to the triangle the op reads; broadcast batch dims are summed."""
    adjoint, lower, solution = ctx.attr("adjoint"), ctx.attr("lower"), ctx.output(0)
    grad_rhs = emit(ctx, "MatrixTriangularSolve", ctx.input(0), grads[0], lower=lower, adjoint=not adjoint)
    if adjoint:
        grad_matrix = _matmul(ctx, solution, grad_rhs, adj_b=True)
    else:
        grad_matrix = _matmul(ctx, grad_rhs, solution, adj_b=True)
    bands = (np.int64(-1), np.int64(0)) if lower else (np.int64(0), np.int64(-1))
    grad_matrix = emit(ctx, "MatrixBandPart", emit(ctx, "Neg", grad_matrix), *bands)
    return [ctx.sum_to_input(0, grad_matrix), ctx.sum_to_input(1, grad_rhs)]


def _cholesky_solve(ctx, factor, rhs):
    """(L Lᴴ)⁻¹ rhs for the lower factor L."""
    half = emit(ctx, "MatrixTriangularSolve", factor, rhs, lower=True, adjoint=False)
    return emit(ctx, "MatrixTriangularSolve", factor, half, lower=True, adjoint=True)


def _transpose_inner(ctx, x):
    rank = _rank(ctx, x)
    return emit(ctx, "Transpose", x, int_const(ctx.b, list(range(rank - 2)) + [rank - 1, rank - 2]))


@gradient("MatrixSolveLs")
def _matrix_solve_ls_grad(ctx, grads):
    """TensorFlow's formulas for the regularized normal equations of the first kind (rows >=
    cols) and the second kind; fast=False has none (TensorFlow neither). Static inner dims."""
    if not ctx.attr("fast"):
        raise ValueError(f"MatrixSolveLs node '{ctx.node.name}': gradient not defined for fast=False "
                         f"(as in TensorFlow)")
    a, b, grad = ctx.input(0), ctx.input(1), grads[0]
    shape = ctx.input_shape(0)
    rows, cols = (shape[-2], shape[-1]) if has_rank(shape) else (None, None)
    if rows is None or cols is None:
        raise ValueError(f"the gradient of MatrixSolveLs node '{ctx.node.name}' needs its matrix dims "
                         f"statically, has {shape}")
    dtype = ctx.b.dtype(a).base
    l2 = emit(ctx, "Cast", ctx.input(2), DstT=dtype.name)
    overdetermined = rows >= cols
    size = cols if overdetermined else rows
    eye = emit(ctx, "Mul", l2, ctx.b.const(np.eye(size, dtype=dtype.numpy)))
    gram = _matmul(ctx, a, a, adj_a=True) if overdetermined else _matmul(ctx, a, a, adj_b=True)
    factor = emit(ctx, "Cholesky", emit(ctx, "AddV2", gram, eye))
    if overdetermined:
        x = ctx.output(0)
        z = _cholesky_solve(ctx, factor, grad)
        xzt = _matmul(ctx, x, z, adj_b=True)
        symmetric = emit(ctx, "AddV2", xzt, _transpose_inner(ctx, xzt))
        grad_a = emit(ctx, "Sub", _matmul(ctx, b, z, adj_b=True), _matmul(ctx, a, symmetric))
        return [grad_a, _matmul(ctx, a, z), None]
    grad_b = _cholesky_solve(ctx, factor, _matmul(ctx, a, grad))
    tmp = _cholesky_solve(ctx, factor, b)
    first = emit(ctx, "Neg", _matmul(ctx, grad_b, _matmul(ctx, tmp, a, adj_a=True)))
    second = _matmul(ctx, tmp, emit(ctx, "Sub", grad, _matmul(ctx, a, grad_b, adj_a=True)), adj_b=True)
    return [emit(ctx, "AddV2", first, second), grad_b, None]


# --- complex parts --------------------------------------------------------------------------

def _complex(ctx, real, imag):
    return emit(ctx, "Complex", real, imag, Tout=_COMPLEX_OF[_dtype_name(ctx, real)])


def _real_part(ctx, z, op="Real"):
    return emit(ctx, op, z, Tout=_REAL_OF[_dtype_name(ctx, z)])


@gradient("Real")
def _real_grad(ctx, grads):
    return [_complex(ctx, grads[0], emit(ctx, "ZerosLike", grads[0]))]


@gradient("Imag")
def _imag_grad(ctx, grads):
    return [_complex(ctx, emit(ctx, "ZerosLike", grads[0]), grads[0])]


@gradient("Complex")
def _complex_grad(ctx, grads):
    return list(ctx.sum_to_inputs(_real_part(ctx, grads[0]), _real_part(ctx, grads[0], "Imag")))


@gradient("Conj")
def _conj_grad(ctx, grads):
    return [emit(ctx, "Conj", grads[0])]


@gradient("ComplexAbs")
def _complex_abs_grad(ctx, grads):
    """grad * z / |z| (0 where z is 0)."""
    magnitude = ctx.output(0)
    scaled = emit(ctx, "Mul", _complex(ctx, grads[0], emit(ctx, "ZerosLike", grads[0])), ctx.input(0))
    return [emit(ctx, "DivNoNan", scaled, _complex(ctx, magnitude, emit(ctx, "ZerosLike", magnitude)))]


@gradient("Angle")
def _angle_grad(ctx, grads):
    """d angle(z) = -grad / (Im z + i Re z)."""
    z = ctx.input(0)
    swapped = _complex(ctx, _real_part(ctx, z, "Imag"), _real_part(ctx, z))
    grad = _complex(ctx, grads[0], emit(ctx, "ZerosLike", grads[0]))
    return [emit(ctx, "Neg", emit(ctx, "Mul", grad, emit(ctx, "Reciprocal", swapped)))]


# --- Fourier transforms ---------------------------------------------------------------------

_SUFFIX_RANK = {"": 1, "2D": 2, "3D": 3}


def _split_fft_op(op: str) -> tuple[str, int]:
    """'IRFFT2D' -> ('IRFFT', 2)."""
    for suffix in ("2D", "3D"):
        if op.endswith(suffix):
            return op[:-2], _SUFFIX_RANK[suffix]
    return op, 1


def _transformed_dims(ctx, ref, rank: int) -> list[int]:
    shape = ctx.b.shape(ref)
    tail = shape.as_list()[-rank:] if has_rank(shape) else [None]
    dims = [d for d in tail if d is not None]
    if len(dims) != len(tail):
        raise ValueError(f"the gradient of {ctx.node.op} node '{ctx.node.name}' needs the sizes of the "
                         f"transformed dims statically, has {shape}")
    return dims


def _fft_name(kind: str, rank: int) -> str:
    return kind + ("" if rank == 1 else f"{rank}D")


def _pad_inner(ctx, x, rank: int, extra: list[int]):
    """x padded with zeros at the end of its innermost `rank` dims by `extra`."""
    if not any(extra):
        return x
    total_rank = _rank(ctx, x)
    paddings = [[0, 0]] * (total_rank - rank) + [[0, e] for e in extra]
    return emit(ctx, "Pad", x, int_const(ctx.b, paddings))


@gradient("FFT", "FFT2D", "FFT3D", "IFFT", "IFFT2D", "IFFT3D")
def _fft_grad(ctx, grads):
    kind, rank = _split_fft_op(ctx.node.op)
    size = float(np.prod(_transformed_dims(ctx, grads[0], rank)))
    if kind == "FFT":
        return [emit(ctx, "Mul", emit(ctx, _fft_name("IFFT", rank), grads[0]), _scalar(ctx, size, grads[0]))]
    return [emit(ctx, "Mul", emit(ctx, _fft_name("FFT", rank), grads[0]), _scalar(ctx, 1.0 / size, grads[0]))]


def _fft_lengths(ctx) -> list[int]:
    value = ctx.b.value(ctx.node.inputs[1])
    if value is None:
        raise ValueError(f"the gradient of {ctx.node.op} node '{ctx.node.name}' needs a constant fft_length")
    return [int(v) for v in np.asarray(value).reshape(-1)]


@gradient("RFFT", "RFFT2D")
def _rfft_grad(ctx, grads):
    """The adjoint of crop -> transform -> keep n // 2 + 1: fill the dropped frequencies with
    zeros, n * IFFT, real part, zeros where the input was cropped."""
    _, rank = _split_fft_op(ctx.node.op)
    lengths = _fft_lengths(ctx)
    half = lengths[-1] // 2 + 1
    full = _pad_inner(ctx, grads[0], rank, [0] * (rank - 1) + [lengths[-1] - half])
    size = float(np.prod(lengths))
    spatial = emit(ctx, "Mul", emit(ctx, _fft_name("IFFT", rank), full), _scalar(ctx, size, full))
    in_dims = _transformed_dims(ctx, ctx.input(0), rank)
    return [_pad_inner(ctx, _real_part(ctx, spatial), rank, [m - n for m, n in zip(in_dims, lengths)]), None]


@gradient("IRFFT", "IRFFT2D")
def _irfft_grad(ctx, grads):
    """The inverse real transform counts every frequency but the first (and the Nyquist one for
    even lengths) twice: its adjoint is RFFT of the gradient times those counts / n, padded
    where the input was cropped."""
    _, rank = _split_fft_op(ctx.node.op)
    lengths = _fft_lengths(ctx)
    n = lengths[-1]
    counts = np.full(n // 2 + 1, 2.0)
    counts[0] = 1.0
    if n % 2 == 0:
        counts[-1] = 1.0
    complex_dtype = ctx.b.dtype(ctx.input(0)).base
    spectrum = emit(ctx, _fft_name("RFFT", rank), grads[0], int_const(ctx.b, lengths),
                    Tcomplex=complex_dtype.name)
    weights = ctx.b.const((counts / np.prod(lengths)).astype(complex_dtype.numpy))
    grad = emit(ctx, "Mul", spectrum, weights)
    in_dims = _transformed_dims(ctx, ctx.input(0), rank)
    needed = lengths[:-1] + [n // 2 + 1]
    return [_pad_inner(ctx, grad, rank, [m - k for m, k in zip(in_dims, needed)]), None]

