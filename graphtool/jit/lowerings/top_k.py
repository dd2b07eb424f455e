"""Lowerings of TopKV2 and InTopKV2 (k static), as the interpreter computes them
(kernels/array_select.py, nn.py): the k largest of each last-dim row, largest first, equal values
by lower index (lax.top_k's order); InTopKV2 counts ties in the target's favour and gives False
for a target out of range or a row with a non-finite prediction.

TopKV2 declines float rows: a row holding NaN follows the steps of TensorFlow's sorting
algorithms in the interpreter (cpp_order.py), which lax.top_k does not reproduce, and whether a
row holds NaN is known only when the graph runs.
"""
from __future__ import annotations

import numpy as np

from .common import lowering, static_int


def _integer_input(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iu" else (f"TopKV2 on {dtype}: rows holding NaN follow TensorFlow's sort "
                                            f"steps, which XLA's top_k does not")


# Never profitable: k=10 of 64x10000 int32 takes 198-325 ms with lax.top_k (a full argsort: 220 ms)
# against 51-68 ms for the interpreter's numpy sort (bench_lowerings.py top_k, two runs).
@lowering("TopKV2", static_inputs=(1,), supports=_integer_input, profitable=lambda node: False)
def top_k_v2(ctx, x, k):
    values, indices = ctx.lax.top_k(x, static_int(k))
    return values, indices


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering("InTopKV2", static_inputs=(2,), supports=_float)
def in_top_k(ctx, predictions, targets, k):
    jnp = ctx.jnp
    batch, classes = predictions.shape
    if classes == 0:
        return jnp.zeros(batch, bool)
    in_range = (targets >= 0) & (targets < classes)
    rows = jnp.where(in_range, targets, 0).astype(np.int64)[:, None]
    target_values = jnp.take_along_axis(predictions, rows, axis=1)
    more_probable = jnp.sum(predictions > target_values, axis=1)
    finite_rows = jnp.all(jnp.isfinite(predictions), axis=1)
    return in_range & finite_rows & (more_probable < static_int(k))
