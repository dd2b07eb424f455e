"""Linear algebra, Fourier transform and complex-part cases (families `linalg`, `fft`):
decompositions and solvers on batches of matrices in every CPU dtype, singular and empty
inputs; FFT/IFFT/RFFT/IRFFT in 1-3 dims with cropping and padding fft_length; and two graphs
as real code builds them (an STFT log-mel feature graph, a least-squares/eigen graph), with
TensorFlow's gradients as data."""
import numpy as np

from .builder import snake
from .registry import case
from .tf_v1 import tf

LINALG_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
_SHORT = {np.float32: "f32", np.float64: "f64", np.complex64: "c64", np.complex128: "c128"}


def _matrices(b, *shape, dtype=np.float32):
    value = b.normal(*shape, dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * b.normal(*shape, dtype=np.float64)
    return value.astype(dtype)


def _hermitian_pd(b, batch, n, dtype):
    """A well-conditioned Hermitian positive-definite batch."""
    a = _matrices(b, *batch, n, n, dtype=dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


@case("op_linalg_square", "linalg",
      "MatrixInverse (adjoint), MatrixDeterminant, LogMatrixDeterminant on [2,3,3] batches in "
      "float32/float64/complex64/complex128, a singular matrix (determinant 0, sign 0 and -inf), "
      "an empty batch and 0x0 matrices.", rtol=1e-4, atol=1e-5)
def op_linalg_square(b):
    for dtype in LINALG_DTYPES:
        tag = _SHORT[dtype]
        x = b.placeholder(f"x_{tag}", _matrices(b, 2, 3, 3, dtype=dtype) + np.eye(3, dtype=dtype))
        b.raw("MatrixInverse", f"inverse_{tag}", input=x)
        b.raw("MatrixInverse", f"inverse_adjoint_{tag}", input=x, adjoint=True)
        b.raw("MatrixDeterminant", f"determinant_{tag}", input=x)
        b.raw("LogMatrixDeterminant", f"log_determinant_{tag}", input=x)
    singular = b.placeholder("singular", np.array([[[1, 2], [2, 4]], [[0, 0], [0, 0]]], np.float32))
    b.raw("MatrixDeterminant", "determinant_singular", input=singular)
    b.raw("LogMatrixDeterminant", "log_determinant_singular", input=singular)
    empty = b.placeholder("empty_batch", np.zeros((0, 3, 3), np.float32))
    b.raw("MatrixInverse", "inverse_empty_batch", input=empty)
    b.raw("MatrixDeterminant", "determinant_empty_batch", input=empty)
    zero_by_zero = b.placeholder("zero_by_zero", np.zeros((2, 0, 0), np.float64))
    b.raw("MatrixDeterminant", "determinant_0x0", input=zero_by_zero)
    b.raw("MatrixInverse", "inverse_0x0", input=zero_by_zero)


@case("op_linalg_decompositions", "linalg",
      "Cholesky (reads only the lower triangle), Qr (tall, wide, square; full_matrices), Svd "
      "singular values and SelfAdjointEigV2 eigenvalues in every CPU dtype; their vectors where "
      "TensorFlow and LAPACK agree on signs (reconstructions otherwise).", rtol=1e-4, atol=1e-5)
def op_linalg_decompositions(b):
    for dtype in LINALG_DTYPES:
        tag = _SHORT[dtype]
        spd = _hermitian_pd(b, (2,), 4, dtype)
        garbage_upper = np.triu(_matrices(b, 2, 4, 4, dtype=dtype), 1)
        x = b.placeholder(f"spd_{tag}", (np.tril(spd) + garbage_upper).astype(dtype))
        b.raw("Cholesky", f"cholesky_{tag}", input=x)
        e, v = b.raw("SelfAdjointEigV2", f"eig_{tag}", take=[0], input=x)
        # eigenvectors are defined up to a phase: fetch v diag(e) v^H and |v|.
        vh = tf.linalg.adjoint(v)
        b.fetch(tf.matmul(v * tf.expand_dims(e, -2), vh), f"eig_rebuilt_{tag}")
        b.fetch(tf.abs(v), f"eig_vectors_abs_{tag}")
        b.raw("SelfAdjointEigV2", f"eigvals_{tag}", input=x, compute_v=False, take=[0])
        for shape_tag, shape in (("tall", (2, 5, 3)), ("wide", (2, 3, 5)), ("square", (3, 3))):
            a = b.placeholder(f"a_{shape_tag}_{tag}", _matrices(b, *shape, dtype=dtype))
            for full in (False, True):
                suffix = "_full" if full else ""
                b.raw("Qr", f"qr_{shape_tag}{suffix}_{tag}", input=a, full_matrices=full)
            b.raw("Svd", f"svd_values_{shape_tag}_{tag}", input=a, compute_uv=False, take=[0])
            s, u, v = b.raw("Svd", f"svd_{shape_tag}_{tag}", input=a, take=[0])
            rebuilt = tf.matmul(tf.cast(s, u.dtype)[..., None, :] * u, v, adjoint_b=True)
            b.fetch(rebuilt, f"svd_rebuilt_{shape_tag}_{tag}")
            b.fetch(tf.abs(u), f"svd_u_abs_{shape_tag}_{tag}")
            b.fetch(tf.abs(v), f"svd_v_abs_{shape_tag}_{tag}")
            for full in (True,):
                b.raw("Svd", f"svd_full_{shape_tag}_{tag}", input=a, full_matrices=full, take=[0])
    not_pd = b.placeholder("not_pd", np.array([[[4, 1], [1, 3]], [[1, 2], [2, 1]], [[-1, 0], [0, 1]]],
                                              np.float64))
    # TensorFlow leaves the upper triangle of a failed factorization unwritten: fetch the lower.
    b.fetch(tf.linalg.band_part(tf.raw_ops.Cholesky(input=not_pd, name="cholesky_not_pd"), -1, 0),
            "cholesky_not_pd_lower")
    empty = b.placeholder("empty_batch", np.zeros((0, 3, 3), np.float32))
    b.raw("Cholesky", "cholesky_empty_batch", input=empty)
    b.raw("Qr", "qr_empty_batch", input=empty)
    b.raw("SelfAdjointEigV2", "eig_empty_batch", input=empty)


@case("op_linalg_solve", "linalg",
      "MatrixSolve (adjoint), MatrixTriangularSolve (lower/upper, adjoint, broadcasting batch "
      "dims, garbage in the unread triangle), MatrixSolveLs (tall and wide, l2_regularizer, "
      "fast and not) in every CPU dtype; empty right-hand sides.", rtol=1e-4, atol=1e-5)
def op_linalg_solve(b):
    for dtype in LINALG_DTYPES:
        tag = _SHORT[dtype]
        a = b.placeholder(f"a_{tag}", _matrices(b, 2, 3, 3, dtype=dtype) + 3 * np.eye(3, dtype=dtype))
        rhs = b.placeholder(f"rhs_{tag}", _matrices(b, 2, 3, 2, dtype=dtype))
        b.raw("MatrixSolve", f"solve_{tag}", matrix=a, rhs=rhs)
        b.raw("MatrixSolve", f"solve_adjoint_{tag}", matrix=a, rhs=rhs, adjoint=True)
        broadcast_rhs = b.placeholder(f"rhs_broadcast_{tag}", _matrices(b, 4, 1, 3, 2, dtype=dtype))
        for lower in (True, False):
            for adjoint in (False, True):
                name = f"triangular_{'lower' if lower else 'upper'}{'_adjoint' if adjoint else ''}_{tag}"
                b.raw("MatrixTriangularSolve", name, matrix=a, rhs=rhs, lower=lower, adjoint=adjoint)
            b.raw("MatrixTriangularSolve", f"triangular_broadcast_{'lower' if lower else 'upper'}_{tag}",
                  matrix=a, rhs=broadcast_rhs, lower=lower)
        tall = b.placeholder(f"tall_{tag}", _matrices(b, 2, 5, 3, dtype=dtype))
        wide = b.placeholder(f"wide_{tag}", _matrices(b, 2, 3, 5, dtype=dtype))
        rhs5 = b.placeholder(f"rhs5_{tag}", _matrices(b, 2, 5, 2, dtype=dtype))
        for l2 in (0.0, 0.5):
            l2_tag = "l2" if l2 else "plain"
            b.raw("MatrixSolveLs", f"solve_ls_tall_{l2_tag}_{tag}", matrix=tall, rhs=rhs5,
                  l2_regularizer=np.float64(l2))
            b.raw("MatrixSolveLs", f"solve_ls_wide_{l2_tag}_{tag}", matrix=wide, rhs=rhs,
                  l2_regularizer=np.float64(l2))
        if dtype in (np.float32, np.float64):
            b.raw("MatrixSolveLs", f"solve_ls_tall_exact_{tag}", matrix=tall, rhs=rhs5,
                  l2_regularizer=np.float64(0.0), fast=False)
    empty_rhs = b.placeholder("empty_rhs", np.zeros((2, 3, 0), np.float32))
    a32 = tf.get_default_graph().get_tensor_by_name("a_f32:0")
    b.raw("MatrixSolve", "solve_empty_rhs", matrix=a32, rhs=empty_rhs)
    b.raw("MatrixTriangularSolve", "triangular_empty_rhs", matrix=a32, rhs=empty_rhs)


FFT_OPS = ["FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D"]


@case("op_fft_complex", "fft",
      "FFT/IFFT/FFT2D/IFFT2D/FFT3D/IFFT3D on complex64 and complex128 with batch dims, and an "
      "empty batch.", rtol=1e-4, atol=1e-4)
def op_fft_complex(b):
    for dtype in (np.complex64, np.complex128):
        x = b.placeholder(f"x_{_SHORT[dtype]}", _matrices(b, 2, 3, 4, 6, dtype=dtype))
        for op_type in FFT_OPS:
            b.raw(op_type, f"{snake(op_type)}_{_SHORT[dtype]}", input=x)
    empty = b.placeholder("empty", np.zeros((0, 2, 3, 4), np.complex64))
    for op_type in FFT_OPS:
        b.raw(op_type, f"{snake(op_type)}_empty", input=empty)


@case("op_fft_real", "fft",
      "RFFT/IRFFT in 1, 2 and 3 dims, float32 and float64: fft_length equal to and shorter than "
      "the input (the kernels crop; tf.signal pads before calling them), odd and even lengths, "
      "an empty batch.",
      rtol=1e-4, atol=1e-4)
def op_fft_real(b):
    for real, cplx in ((np.float32, np.complex64), (np.float64, np.complex128)):
        tag = _SHORT[real]
        x = b.placeholder(f"x_{tag}", b.normal(2, 4, 6, 9, dtype=real))
        z = b.placeholder(f"z_{tag}", _matrices(b, 2, 4, 6, 5, dtype=cplx))
        for suffix, rank in (("", 1), ("2D", 2), ("3D", 3)):
            for length_tag, lengths in (("same", [4, 6, 8]), ("crop", [3, 5, 7]), ("odd", [3, 5, 9])):
                fft_length = np.array(lengths[-rank:], np.int32)
                b.raw(f"RFFT{suffix}", f"rfft{suffix.lower()}_{length_tag}_{tag}", input=x,
                      fft_length=fft_length, Tcomplex=tf.as_dtype(cplx))
                b.raw(f"IRFFT{suffix}", f"irfft{suffix.lower()}_{length_tag}_{tag}", input=z,
                      fft_length=fft_length, Treal=tf.as_dtype(real))
    empty = b.placeholder("empty", np.zeros((0, 8), np.float32))
    b.raw("RFFT", "rfft_empty", input=empty, fft_length=np.array([8], np.int32))
    empty_z = b.placeholder("empty_z", np.zeros((0, 5), np.complex64))
    b.raw("IRFFT", "irfft_empty", input=empty_z, fft_length=np.array([8], np.int32))


@case("graph_stft_logmel", "fft",
      "An STFT log-mel feature graph as audio front ends build it: tf.signal.stft (Hann window, "
      "frame 64, step 32, fft 64) -> abs -> linear_to_mel_weight_matrix matmul -> log -> MFCCs "
      "(a DCT through RFFT); a padded STFT resynthesized by inverse_stft (IRFFT, overlap-add); "
      "gradients w.r.t. the signal.", rtol=1e-4, atol=1e-4)
def graph_stft_logmel(b):
    signal = b.placeholder("signal", b.normal(2, 400))
    stft = tf.signal.stft(signal, frame_length=64, frame_step=32, fft_length=64)
    magnitude = tf.abs(stft)
    # The mel matrix is a constant of the model (a frozen graph holds it folded).
    with tf.Graph().as_default():
        weights = tf.signal.linear_to_mel_weight_matrix(num_mel_bins=8, num_spectrogram_bins=33,
                                                        sample_rate=8000, lower_edge_hertz=50.0,
                                                        upper_edge_hertz=3800.0)
        with tf.Session() as session:
            mel_value = session.run(weights)
    mel = tf.constant(mel_value, name="mel_matrix")
    log_mel = tf.math.log(tf.tensordot(magnitude, mel, 1) + 1e-3, name="log_mel")
    b.fetch(log_mel)
    b.fetch(tf.math.angle(stft[:, :2, :5]), "phase")
    b.fetch(tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :4], "mfcc")
    padded = tf.signal.stft(signal, frame_length=48, frame_step=16, fft_length=64, pad_end=True)
    b.fetch(tf.signal.inverse_stft(padded, frame_length=48, frame_step=16, fft_length=64,
                                   window_fn=tf.signal.inverse_stft_window_fn(16)), "resynthesis")
    loss = tf.reduce_sum(log_mel * np.linspace(0.5, 1.5, 8).astype(np.float32), name="loss")
    b.differentiate(loss, [signal])


@case("graph_complex_spectral_grad", "fft",
      "Gradients through complex values: Complex -> FFT2D -> Conj/Real/Imag/ComplexAbs/Angle, "
      "IFFT, FFT3D, RFFT2D/IRFFT2D with cropping and padding, float32 (TensorFlow has no "
      "gradient for RFFT3D/IRFFT3D).", rtol=1e-4, atol=1e-4)
def graph_complex_spectral_grad(b):
    re = b.placeholder("re", b.normal(2, 4, 6))
    im = b.placeholder("im", b.normal(2, 4, 6))
    z = tf.complex(re, im)
    spectrum = tf.signal.fft2d(z)
    back = tf.signal.ifft(tf.math.conj(spectrum) * tf.complex(re, 0.0 * re))
    part = tf.math.real(back) * 0.3 + tf.math.imag(spectrum) * 0.01 + tf.math.angle(back + 1.0)
    magnitude = tf.abs(spectrum) * 0.02
    rfft = tf.signal.rfft2d(re * im, fft_length=[4, 8])
    irfft = tf.signal.irfft2d(tf.signal.fft3d(z)[:, :, :4], fft_length=[4, 6])
    loss = (tf.reduce_sum(part) + tf.reduce_sum(magnitude) + tf.reduce_sum(tf.abs(rfft) * 0.1)
            + tf.reduce_sum(irfft * np.linspace(-1, 1, 6).astype(np.float32)))
    b.differentiate(tf.identity(loss, name="loss"), [re, im])


@case("graph_linalg_least_squares", "linalg",
      "A linalg-heavy graph: Cholesky solve of the normal equations, QR least squares, an "
      "eigendecomposition, log-determinant, inverse, MatrixSolve, SVD (values and vectors) and "
      "ridge regression (MatrixSolveLs), float64; gradients w.r.t. the design matrix and the "
      "targets.", rtol=1e-6, atol=1e-8)
def graph_linalg_least_squares(b):
    a = b.placeholder("a", b.normal(6, 3, dtype=np.float64))
    y = b.placeholder("y", b.normal(6, 2, dtype=np.float64))
    gram = tf.matmul(a, a, transpose_a=True) + 0.5 * tf.eye(3, dtype=tf.float64)
    chol = tf.linalg.cholesky(gram)
    rhs = tf.matmul(a, y, transpose_a=True)
    chol_solution = tf.linalg.cholesky_solve(chol, rhs)
    q, r = tf.linalg.qr(a)
    qr_solution = tf.linalg.triangular_solve(r, tf.matmul(q, y, transpose_a=True), lower=False)
    e, v = tf.linalg.eigh(gram)
    whitened = tf.matmul(v / tf.sqrt(e)[None, :], v, transpose_b=True)
    _, log_det = tf.linalg.slogdet(gram)
    inverse = tf.linalg.inv(gram)
    solved = tf.linalg.solve(gram, rhs, adjoint=True)
    det = tf.linalg.det(gram[:2, :2])
    singular_values = tf.linalg.svd(a, compute_uv=False)
    s, u, v = tf.linalg.svd(a)
    # |u| and |v| do not depend on the signs LAPACK and Eigen pick.
    singular_vectors = tf.reduce_sum(tf.abs(u) * s[None, :]) + tf.reduce_sum(tf.abs(v))
    ridge = tf.linalg.lstsq(a, y, l2_regularizer=0.1)
    for tensor, name in ((chol_solution, "chol_solution"), (qr_solution, "qr_solution"),
                         (e, "eigenvalues"), (whitened, "whitened"), (log_det, "log_det"),
                         (inverse, "inverse"), (solved, "solved"), (det, "det"),
                         (singular_values, "singular_values"), (singular_vectors, "singular_vectors"),
                         (ridge, "ridge")):
        b.fetch(tensor, name)
    loss = (tf.reduce_sum(chol_solution) + tf.reduce_sum(qr_solution * qr_solution)
            + tf.reduce_sum(e * [1.0, 2.0, 3.0]) + tf.reduce_sum(whitened) + log_det
            + tf.reduce_sum(inverse) + tf.reduce_sum(solved) + det + tf.reduce_sum(singular_values)
            + singular_vectors + tf.reduce_sum(ridge * ridge))
    b.differentiate(tf.identity(loss, name="loss"), [a, y])


ALIGNS = ["LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT"]


@case("op_linalg_diag", "linalg",
      "MatrixDiag/MatrixDiagPart/MatrixSetDiag in their three versions: batch dims, non-square "
      "matrices, single diagonals and k ranges (sub- and super-diagonals), every align, explicit "
      "num_rows/num_cols, padding values; float32, int32 and complex64; gradients w.r.t. the "
      "diagonals and the matrix.")
def op_linalg_diag(b):
    m = b.placeholder("m", b.normal(2, 3, 4))
    diagonal = b.placeholder("d", b.normal(2, 3))
    bands = b.placeholder("bands", b.normal(2, 3, 4))        # k = (-1, 1): 3 diagonals of length <= 4
    b.raw("MatrixDiag", "diag_v1", diagonal=diagonal)
    b.raw("MatrixDiagPart", "diag_part_v1", input=m)
    b.raw("MatrixSetDiag", "set_diag_v1", input=m, diagonal=diagonal)
    b.raw("MatrixDiagV2", "diag_v2_super", diagonal=diagonal, k=1, num_rows=-1, num_cols=-1,
          padding_value=0.0)
    b.raw("MatrixDiagV2", "diag_v2_shape", diagonal=diagonal, k=-1, num_rows=4, num_cols=5,
          padding_value=9.0)
    b.raw("MatrixDiagPartV2", "diag_part_v2_band", input=m, k=[-1, 1], padding_value=-1.0)
    b.raw("MatrixSetDiagV2", "set_diag_v2_band", input=m, diagonal=bands[:, :, :3], k=[-1, 1])
    for align in ALIGNS:
        tag = align.lower()
        b.raw("MatrixDiagV3", f"diag_v3_{tag}", diagonal=bands, k=[-1, 1], num_rows=-1, num_cols=-1,
              padding_value=0.5, align=align)
        b.raw("MatrixDiagPartV3", f"diag_part_v3_{tag}", input=m, k=[-1, 2], padding_value=7.0,
              align=align)
        b.raw("MatrixSetDiagV3", f"set_diag_v3_{tag}", input=m, diagonal=bands[:, :, :3], k=[-1, 1],
              align=align)
    ints = b.placeholder("m_int", b.integers(-5, 5, 3, 3))
    b.raw("MatrixDiagPartV3", "diag_part_v3_int", input=ints, k=[0, 1], padding_value=-9)
    b.raw("MatrixSetDiagV3", "set_diag_v3_int", input=ints, diagonal=np.array([1, 2, 3], np.int32), k=0)
    cplx = b.placeholder("m_c64", _matrices(b, 2, 3, 3, dtype=np.complex64))
    b.raw("MatrixDiagPartV3", "diag_part_v3_c64", input=cplx, k=0, padding_value=np.complex64(0))
    b.raw("MatrixDiagV3", "diag_v3_c64", diagonal=tf.linalg.diag_part(cplx), k=0, num_rows=-1,
          num_cols=-1, padding_value=np.complex64(0))
    empty = b.placeholder("empty_batch", np.zeros((0, 3, 3), np.float32))
    b.raw("MatrixDiagPartV3", "diag_part_v3_empty", input=empty, k=0, padding_value=0.0)
    weights = np.linspace(0.5, 1.5, 4).astype(np.float32)
    loss = (tf.reduce_sum(tf.linalg.diag(bands, k=(-1, 1), align="LEFT_RIGHT") * 0.3)
            + tf.reduce_sum(tf.linalg.diag_part(m, k=(-1, 2), padding_value=0.0) ** 2)
            + tf.reduce_sum(tf.linalg.set_diag(m, bands[:, :, :3], k=(-1, 1)) * weights))
    b.differentiate(tf.identity(loss, name="loss"), [m, bands])


@case("op_complex_parts", "fft",
      "Complex (broadcasting), Real, Imag, Angle, Conj, ComplexAbs, ConjugateTranspose on complex64 "
      "and complex128 with zeros, signed zeros, infinities, NaN and values whose squares overflow.")
def op_complex_parts(b):
    for real, cplx in ((np.float32, np.complex64), (np.float64, np.complex128)):
        tag = _SHORT[cplx]
        big = np.finfo(real).max / 4
        re = np.array([0, -0.0, 1, -1, 3, np.inf, -np.inf, np.nan, big, -2.5], real)
        im = np.array([0, -0.0, -0.0, 0, -4, 1, np.inf, 1, big, np.nan], real)
        value = np.empty(re.shape, cplx)     # re + 1j * im would turn 1j * inf into NaN
        value.real, value.imag = re, im
        z = b.placeholder(f"z_{tag}", value)
        for op_type in ("Real", "Imag", "Angle"):
            b.raw(op_type, f"{snake(op_type)}_{tag}", input=z, Tout=tf.as_dtype(real))
        b.raw("ComplexAbs", f"complex_abs_{tag}", x=z, Tout=tf.as_dtype(real))
        b.raw("Conj", f"conj_{tag}", input=z)
        rows = b.placeholder(f"re_{tag}", b.normal(2, 1, 3, dtype=real))
        cols = b.placeholder(f"im_{tag}", b.normal(4, 1, dtype=real))
        b.raw("Complex", f"complex_broadcast_{tag}", real=rows, imag=cols, Tout=tf.as_dtype(cplx))
        matrices = b.placeholder(f"m_{tag}", _matrices(b, 2, 3, 4, dtype=cplx))
        b.raw("ConjugateTranspose", f"conjugate_transpose_{tag}", x=matrices, perm=np.array([2, 0, 1], np.int32))
    floats = b.placeholder("floats", b.normal(2, 3))
    b.raw("ConjugateTranspose", "conjugate_transpose_real", x=floats, perm=np.array([1, 0], np.int32))
