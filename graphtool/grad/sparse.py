"""Gradients of the sparse family (TensorFlow's sparse_grad.py)."""
from __future__ import annotations

from .registry import gradient, not_differentiable
from .op_utils import emit

# Only integer outputs (indices and shapes).
not_differentiable("SparseReshape")


@gradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(ctx, grads):
    """The values' gradients come back from their new positions; the default value gets the
    filled-in positions' gradients."""
    if grads[1] is None:
        return [None] * 4
    d_values, d_default = emit(ctx, "SparseFillEmptyRowsGrad", ctx.output(3), grads[1])
    return [None, d_values, None, d_default]
