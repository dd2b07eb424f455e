"""The math family, continued: matrix products (MatMul, BatchMatMul V1-V3) and Einsum.
Imported by math.py."""
from __future__ import annotations

from collections.abc import Sequence

from ..shapes import Shape, ShapeError, has_rank
from .inference import InferenceContext
from .math_common import (COMPLEX, FLOAT, UNSIGNED, broadcast, merge_dims, register_math,
                          type_set)

ELLIPSIS = "..."


# --- matrix products ------------------------------------------------------------------------

def _matmul_shape(ctx: InferenceContext) -> Shape:
    a, b = ctx.with_rank(0, 2), ctx.with_rank(1, 2)
    transpose_a, transpose_b = ctx.attr("transpose_a"), ctx.attr("transpose_b")
    rows, inner_a = (a[1], a[0]) if transpose_a else (a[0], a[1])
    inner_b, cols = (b[1], b[0]) if transpose_b else (b[0], b[1])
    merge_dims(ctx, inner_a, inner_b, "the inner dimensions")
    return Shape([rows, cols])


def _batch_operands(ctx: InferenceContext) -> tuple[Shape, Shape, Shape]:
    """(batch dims of x, batch dims of y, [rows, cols]) after checking the inner dimensions;
    a shape of unknown rank gives unknown batch dims and unknown matrix dims."""
    x, y = ctx.with_rank_at_least(0, 2), ctx.with_rank_at_least(1, 2)
    adj_x, adj_y = ctx.attr("adj_x"), ctx.attr("adj_y")
    rows, inner_x = (x[-1], x[-2]) if adj_x else (x[-2], x[-1])
    inner_y, cols = (y[-1], y[-2]) if adj_y else (y[-2], y[-1])
    merge_dims(ctx, inner_x, inner_y, "the inner dimensions")
    return x[:-2], y[:-2], Shape([rows, cols])


def _batch_matmul_shape(ctx: InferenceContext) -> Shape:
    """BatchMatMul (V1): the batch dims of x and y must be equal (no broadcasting)."""
    x_batch, y_batch, matrix = _batch_operands(ctx)
    try:
        batch = x_batch.merge(y_batch)
    except ShapeError:
        ctx.fail(f"batch dimensions {x_batch} and {y_batch} must be equal")
    return batch.concatenate(matrix)


def _broadcast_batch_matmul_shape(ctx: InferenceContext) -> Shape:
    """BatchMatMulV2/V3: the batch dims of x and y broadcast."""
    x_batch, y_batch, matrix = _batch_operands(ctx)
    return broadcast(ctx, x_batch, y_batch).concatenate(matrix)


register_math("MatMul", inputs=["a: T", "b: T"], outputs=["product: T"],
              attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                     f"T: {type_set(FLOAT, 'int32', 'int64', UNSIGNED, COMPLEX)}",
                     "grad_a: bool = false", "grad_b: bool = false"],
              shape=_matmul_shape)

# grad_x/grad_y only tell kernels that the product is part of a gradient.
_BATCH_MATMUL_FLAGS = ["adj_x: bool = false", "adj_y: bool = false", "grad_x: bool = false",
                       "grad_y: bool = false"]
for _name, _types, _shape in (
        ("BatchMatMul", type_set(FLOAT, "int32", "int64", COMPLEX), _batch_matmul_shape),
        ("BatchMatMulV2", type_set(FLOAT, "int16", "int32", "int64", UNSIGNED, COMPLEX),
         _broadcast_batch_matmul_shape)):
    register_math(_name, inputs=["x: T", "y: T"], outputs=["output: T"],
                  attrs=[f"T: {_types}", *_BATCH_MATMUL_FLAGS], shape=_shape)
# V3 takes operands of different types (e.g. int8 x int8 -> int32).
_V3_OPERAND_TYPES = type_set(FLOAT, "uint8", "int8", "int16", "int32", "int64", COMPLEX)
register_math("BatchMatMulV3", inputs=["x: Ta", "y: Tb"], outputs=["output: Tout"],
              attrs=[f"Ta: {_V3_OPERAND_TYPES}", f"Tb: {_V3_OPERAND_TYPES}",
                     f"Tout: {type_set(FLOAT, 'int16', 'int32', 'int64', COMPLEX)}",
                     *_BATCH_MATMUL_FLAGS],
              shape=_broadcast_batch_matmul_shape)


# --- einsum ---------------------------------------------------------------------------------

def _subscript_labels(ctx: InferenceContext, subscript: str) -> list[str]:
    """One label per dimension, with the ellipsis kept as a single "..." entry. As in
    TensorFlow, any character but '.' is a label (spaces included)."""
    before, found, after = subscript.partition(ELLIPSIS)
    if "." in before or "." in after:
        ctx.fail(f"expected at most one ellipsis (...) in the einsum subscript '{subscript}'")
    return list(before) + ([ELLIPSIS] if found else []) + list(after)


def _parse_equation(ctx: InferenceContext) -> tuple[list[list[str]], list[str]]:
    """'ab,bc->ac' -> ([[a, b], [b, c]], [a, c]). TensorFlow's op needs the explicit '->' form
    (tf.einsum rewrites the implicit one before building the op)."""
    equation = ctx.attr("equation")
    parts = equation.split("->")
    if len(parts) != 2:
        ctx.fail(f"expected exactly one '->' in the einsum equation '{equation}'")
    inputs = parts[0].split(",")
    if len(inputs) not in (1, 2):
        ctx.fail(f"expected 1 or 2 input subscripts in the einsum equation '{equation}', "
                 f"got {len(inputs)}")
    if len(inputs) != ctx.num_inputs:
        ctx.fail(f"the einsum equation '{equation}' has {len(inputs)} input(s), the node "
                 f"{ctx.num_inputs}")
    return [_subscript_labels(ctx, s) for s in inputs], _subscript_labels(ctx, parts[1])


def _bind_labels(ctx: InferenceContext, index: int, labels: list[str],
                 label_dims: dict[str, int | None]) -> Shape:
    """Record the dims input `index` gives its named labels (merging with earlier ones) and
    return the dims its ellipsis covers (a scalar shape without ellipsis)."""
    named = [label for label in labels if label != ELLIPSIS]
    has_ellipsis = len(named) < len(labels)
    shape = ctx.shape(index)
    if not has_rank(shape):
        dims: Sequence[int | None] = [None] * len(named)
        batch = Shape.unknown() if has_ellipsis else Shape.scalar()
    elif has_ellipsis:
        ctx.with_rank_at_least(index, len(named))   # (the rank is known: the same shape, checked)
        start = labels.index(ELLIPSIS)
        end = shape.rank - (len(labels) - start - 1)
        dims, batch = shape.dims[:start] + shape.dims[end:], shape[start:end]
    else:
        dims, batch = ctx.with_rank(index, len(named)).dims, Shape.scalar()
    for label, dim in zip(named, dims):
        label_dims[label] = merge_dims(ctx, label_dims.get(label), dim,
                                       f"the dimensions labelled '{label}'")
    return batch


def _einsum_shape(ctx: InferenceContext) -> Shape:
    inputs, output = _parse_equation(ctx)
    label_dims: dict[str, int | None] = {}
    batches = [_bind_labels(ctx, i, labels, label_dims) for i, labels in enumerate(inputs)]
    batch = batches[0] if len(batches) == 1 else broadcast(ctx, *batches)
    if ELLIPSIS not in output:
        if has_rank(batch) and batch.rank > 0:
            ctx.fail(f"the einsum output has no ellipsis (...) but the inputs' ellipsis covers "
                     f"dimensions {batch}")
        batch = Shape.scalar()
    elif not has_rank(batch):
        return Shape.unknown()
    dims: list[int | None] = []
    for label in output:
        if label == ELLIPSIS:
            dims.extend(batch)
        elif label in label_dims:
            dims.append(label_dims[label])
        else:
            ctx.fail(f"the einsum output label '{label}' is not among the input labels")
    return Shape(dims)


register_math("Einsum", inputs=["inputs: N * T"], outputs=["output: T"],
              attrs=["equation: string", "N: int >= 1", "T: type"], shape=_einsum_shape)
