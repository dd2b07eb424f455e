"""Lowerings of the diagonal and band-layout ops (MatrixDiag, MatrixDiagPart, MatrixSetDiag and
their V2/V3 forms): the interpreter's kernels (kernels/array_diag.py) traced with jax.numpy. The
diagonal offsets k and the matrix sizes are static inputs, so the packed layout (which cell holds
which diagonal element, alignment included) is computed on the host as the interpreter computes
it, and the values move with one gather and one select.
"""
from __future__ import annotations

from .common import lowering, traced_kernel

@lowering("MatrixDiagPart", "MatrixDiag", "MatrixSetDiag", half=True, complex_ok=True)
def diag_v1(ctx, *inputs):
    return traced_kernel(ctx, *inputs)


@lowering("MatrixDiagPartV2", "MatrixDiagPartV3", static_inputs=(1,), half=True, complex_ok=True)
def diag_part(ctx, x, k, padding_value):
    return traced_kernel(ctx, x, k, padding_value)


@lowering("MatrixDiagV2", "MatrixDiagV3", static_inputs=(1, 2, 3), half=True, complex_ok=True)
def matrix_diag(ctx, diagonal, k, num_rows, num_cols, padding_value):
    return traced_kernel(ctx, diagonal, k, num_rows, num_cols, padding_value)


@lowering("MatrixSetDiagV2", "MatrixSetDiagV3", static_inputs=(2,), half=True, complex_ok=True)
def set_diag(ctx, x, diagonal, k):
    return traced_kernel(ctx, x, diagonal, k)
