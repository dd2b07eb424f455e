"""arithmetic's FoldTransposeIntoMatMul: a (conjugate) transpose feeding a matrix product becomes the
product's flag, only where the flag computes exactly the same (transpose vs adjoint, real vs
complex), and never for permutations other than swapping the two innermost dims."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder

from .pass_check import check_pass, ops

SWAP = np.array([0, 2, 1], np.int32)


def _feeds(dtype, *shapes):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s) + (1j * rng.standard_normal(s) if dtype.is_complex else 0) for s in shapes]
    return {name: v.astype(dtype.numpy) for name, v in zip(("x", "y"), values)}


@pytest.mark.parametrize("op, transpose, dtype, changed", [
    ("BatchMatMulV2", "Transpose", dtypes.float32, True),
    ("BatchMatMulV2", "ConjugateTranspose", dtypes.float64, True),
    ("BatchMatMulV2", "ConjugateTranspose", dtypes.complex64, True),
    ("BatchMatMulV2", "Transpose", dtypes.complex64, False),      # adj_y would also conjugate
    ("BatchMatMul", "Transpose", dtypes.float64, True),
])
def test_a_transposed_operand_becomes_the_products_flag(op, transpose, dtype, changed):
    b = GraphBuilder()
    x = b.placeholder(dtype, [2, 3, 4], name="x")
    y = b.placeholder(dtype, [2, 5, 4], name="y")
    b.op(op, [x, b.op(transpose, [y, SWAP], name="t")], name="product")
    b.identity(b.graph.node("product").output(0), name="out")

    def structure(g):
        assert "t" not in g and transpose not in ops(g)
        product = g.node("product")
        assert [r.name for r in product.inputs] == ["x", "y"] and product.attr("adj_y") is True

    result = check_pass("arithmetic", b.graph, ["out"], feeds=_feeds(dtype, (2, 3, 4), (2, 5, 4)),
                        structure=structure if changed else None, expect_changed=changed)
    if changed:
        assert result.stats == {"transpose_folded_into_matmul": 1}


def test_matmul_flags_are_plain_transposes_and_both_operands_fold():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4, 3], name="x")
    y = b.placeholder(dtypes.float32, [5, 4], name="y")
    perm = np.array([1, 0], np.int32)
    b.op("MatMul", [b.op("Transpose", [x, perm]), b.op("Transpose", [y, perm])], name="product")
    b.identity(b.graph.node("product").output(0), name="out")

    def structure(g):
        product = g.node("product")
        assert "Transpose" not in ops(g)
        assert product.attr("transpose_a") is True and product.attr("transpose_b") is True

    check_pass("arithmetic", b.graph, ["out"], structure=structure)


def test_other_permutations_and_used_transposes_stay():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3, 3, 3], name="x")
    moved = b.op("Transpose", [x, np.array([1, 0, 2], np.int32)], name="moved")
    b.identity(b.op("BatchMatMulV2", [x, moved]), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False)
    b2 = GraphBuilder()
    x = b2.placeholder(dtypes.float32, [2, 3, 3], name="x")
    t = b2.op("Transpose", [x, SWAP], name="t")
    b2.identity(b2.op("BatchMatMulV2", [x, t], name="product"), name="out")
    b2.identity(t, name="t_out")

    def structure(g):
        assert g.node("product").attr("adj_y") is True and "t" in g   # still fetched through t_out

    check_pass("arithmetic", b2.graph, ["out", "t_out"], structure=structure)
