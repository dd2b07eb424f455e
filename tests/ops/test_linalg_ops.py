"""The linalg and FFT ops: inferred shapes agree with TensorFlow's shape functions, and the kernels
behave as TensorFlow's CPU kernels do where the fixtures cannot record it (errors, half precision).

Expected shapes were read from TensorFlow 2.21's C++ shape functions (v1 graphs of placeholders).
"""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

from .test_math_ops import build, ints

U = None
C64 = "complex64"


@pytest.mark.parametrize("op, inputs, attrs, expected", [
    ("Qr", [[2, 5, 3]], {}, [[2, 5, 3], [2, 3, 3]]),
    ("Qr", [[5, 3, U]], {"full_matrices": True}, [[5, 3, 3], [5, 3, U]]),
    ("Svd", [[2, 5, 3]], {"full_matrices": True}, [[2, 3], [2, 5, 5], [2, 3, 3]]),
    ("Svd", [[U, 5, 3]], {"compute_uv": False}, [[U, 3], [0], [0]]),
    ("SelfAdjointEigV2", [[U, 4, U]], {}, [[U, 4], [U, 4, 4]]),
    ("LogMatrixDeterminant", [[2, U, 3]], {}, [[2], [2]]),
    ("MatrixTriangularSolve", [[4, 1, 3, 3], [2, 3, 2]], {}, [[4, 2, 3, 2]]),
    ("MatrixSolveLs", [[2, 5, 3], [2, 5, 4], ("float64", [])], {}, [[2, 3, 4]]),
    ("MatrixSolve", [None, [2, 3, 4]], {}, [[2, 3, 4]]),
    ("RFFT2D", [[2, U, 9], ints(4, 8)], {}, [[2, 4, 5]]),
    ("IRFFT3D", [(C64, [2, 4, 5, 6]), ("int32", [3])], {}, [[2, U, U, U]]),
    ("FFT2D", [(C64, None)], {}, [None]),
])
def test_shapes_agree_with_tensorflow(op, inputs, attrs, expected):
    graph, node = build(op, inputs, attrs)
    info = infer_shapes(graph)
    got = [info.shape(node.output(i)) for i in range(node.num_outputs)]
    assert got == [Shape(s) if s is not None else Shape.unknown() for s in expected]


@pytest.mark.parametrize("op, inputs, message", [
    ("MatrixSolve", [[2, 3, 3], [2, 4, 1]], "must be equal"),
    ("Cholesky", [[2, 3, 4]], "must be equal"),
    ("RFFT", [[2, 8], ints(4, 4)], "fft_length must have 1 element"),
])
def test_bad_shapes_are_refused(op, inputs, message):
    graph, _ = build(op, inputs, {})
    with pytest.raises(Exception, match=message):
        infer_shapes(graph, strict=True)


def run_op(op, inputs, **attrs):
    b = GraphBuilder()
    b.op(op, inputs, name="op", **attrs)
    node = b.graph.get("op")
    return Session(b.graph, threads=1).run([f"op:{i}" for i in range(node.num_outputs)]).values


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("MatrixInverse", [np.zeros((2, 2), np.float32)], {}, "Input is not invertible."),
    ("MatrixSolve", [np.array([[1, 2], [2, 4]], np.float64), np.ones((2, 1))], {}, "Input matrix is not invertible."),
    ("MatrixSolveLs", [np.zeros((3, 2), np.float32), np.ones((3, 1), np.float32), np.float64(0)], {},
     "Input matrix was rank deficient or ill-conditioned"),
    ("RFFT", [np.ones((2, 6), np.float32), np.array([10], np.int32)], {}, "Input dimension 1 must have length of at least 10 but got: 6"),
    ("IRFFT", [np.ones((2, 5), np.complex64), np.array([12], np.int32)], {}, "Input dimension 1 must have length of at least 7 but got: 5"),
    ("RFFT2D", [np.ones((2, 6), np.float32), ints(3, 4)], {}, "Input dimension 0 must have length of at least 3 but got: 2"),
])
def test_kernel_errors_carry_tensorflows_text(op, inputs, attrs, message):
    with pytest.raises(RuntimeFailure, match=message):
        run_op(op, inputs, **attrs)


def test_singular_and_not_positive_definite_inputs_give_tensorflows_values():
    singular = np.array([[[1, 2], [2, 4]]], np.float32)
    assert run_op("MatrixDeterminant", [singular])[0].tolist() == [0.0]
    sign, log_abs = run_op("LogMatrixDeterminant", [singular])
    assert sign.tolist() == [0.0] and log_abs.tolist() == [-np.inf]
    # A zero on a triangular solve's diagonal divides by zero rather than failing.
    solved = run_op("MatrixTriangularSolve", [np.array([[0, 0], [1, 1]], np.float32), np.ones((2, 1), np.float32)])[0]
    assert solved.ravel().tolist() == [np.inf, -np.inf]
    # Cholesky: NaN in the lower triangle of a failed factorization, the others factored.
    batch = np.stack([np.eye(2) * 4, np.array([[1.0, 2.0], [2.0, 1.0]])])
    factor = run_op("Cholesky", [batch])[0]
    assert factor[0].tolist() == [[2, 0], [0, 2]]
    assert np.isnan(np.tril(factor[1])[np.tril_indices(2)]).all()


def test_half_precision_is_computed_in_float32():
    a = np.array([[2, 1], [1, 3]], np.float16)
    inverse = run_op("MatrixInverse", [a])[0]
    assert inverse.dtype == np.float16
    np.testing.assert_allclose(inverse, np.linalg.inv(a.astype(np.float32)).astype(np.float16))
    q, r = run_op("Qr", [a])
    assert q.dtype == r.dtype == np.float16
    np.testing.assert_allclose((q.astype(np.float32) @ r.astype(np.float32)), a, atol=2e-3)


def test_complex_operands_of_products_are_conjugated_in_gradients():
    """TensorFlow's convention: d(x * y)/dx seeded with g is g * conj(y)."""
    from graphtool.grad import add_gradients
    b = GraphBuilder()
    x = b.placeholder(dtypes.complex128, [2], name="x")
    y = b.const(np.array([1 + 2j, -1j]))
    b.op("Mul", [x, y], name="p")
    real = b.op("Real", [b.graph.get("p").output(0)], Tout="float64", name="re")
    b.op("Sum", [real, np.int32(0)], name="loss")
    report = add_gradients(b.graph, "loss", ["x"])
    grad = report.gradients[0].name
    value = Session(b.graph, threads=1).run([f"{grad}:0"], {"x": np.array([1 + 1j, 2 + 0j])}).values[0]
    np.testing.assert_allclose(value, np.conj([1 + 2j, -1j]))
