"""Kernels of the math family's matrix products: MatMul, BatchMatMul V1-V3 and Einsum.

MatMul's transposes are plain transposes; BatchMatMul's adjoints conjugate too. Batch dims must
be equal for BatchMatMul and broadcast for V2/V3 (V3 converts both operands to Tout first).
half and bfloat16 products accumulate in float32, as TensorFlow's CPU kernels do.
"""
from __future__ import annotations

import numpy as np

from .math_common import compute_dtype, is_complex, math_kernel, shape_text
from .registry import KernelContext

ELLIPSIS = "..."
# Einsum labels are any characters but '.'; numpy's einsum wants letters.
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _compute_type(*arrays):
    """The operands in the type the product is computed in."""
    return [a.astype(compute_dtype(a.dtype), copy=False) for a in arrays]


def _check_inner_dims(ctx, x, y, x_inner: int, y_inner: int) -> None:
    if x.shape[x_inner] != y.shape[y_inner]:
        ctx.fail(f"Matrix size-incompatible: In[0]: {shape_text(x.shape)}, "
                 f"In[1]: {shape_text(y.shape)}")


@math_kernel("MatMul", expensive=True)
def mat_mul(ctx, a, b, *, transpose_a, transpose_b):
    for index, matrix in enumerate((a, b)):
        if matrix.ndim != 2:
            ctx.fail(f"In[{index}] is not a matrix. Instead it has shape "
                     f"{shape_text(matrix.shape)}")
    _check_inner_dims(ctx, a, b, 0 if transpose_a else 1, 1 if transpose_b else 0)
    a, b = _compute_type(a, b)
    return ctx.xp.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


def _adjoint(xp, x):
    """The conjugate transpose of the innermost two dims."""
    swapped = xp.swapaxes(x, -1, -2)
    return xp.conj(swapped) if is_complex(x.dtype) else swapped


def _check_batch_dims(ctx, x, y) -> None:
    """BatchMatMul (V1): both operands have the same batch dims."""
    if x.ndim != y.ndim:
        ctx.fail(f"In[0] and In[1] has different ndims: {shape_text(x.shape)} vs. "
                 f"{shape_text(y.shape)}")
    for dim in range(x.ndim - 2):
        if x.shape[dim] != y.shape[dim]:
            ctx.fail(f"In[0].dim({dim}) and In[1].dim({dim}) must be the same: "
                     f"{shape_text(x.shape)} vs {shape_text(y.shape)}")


def _check_broadcast_batch_dims(ctx, x, y) -> None:
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        ctx.fail(f"In[0] and In[1] must have compatible batch dimensions: "
                 f"{shape_text(x.shape)} vs. {shape_text(y.shape)}")


@math_kernel("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", expensive=True)
def batch_mat_mul(ctx, x, y, *, adj_x, adj_y):
    xp = ctx.xp
    for index, operand in enumerate((x, y)):
        if operand.ndim < 2:
            ctx.fail(f"In[{index}] ndims must be >= 2: {operand.ndim}")
    if ctx.op == "BatchMatMul":
        _check_batch_dims(ctx, x, y)
    else:
        _check_broadcast_batch_dims(ctx, x, y)
    _check_inner_dims(ctx, x, y, -2 if adj_x else -1, -1 if adj_y else -2)
    if ctx.op == "BatchMatMulV3":
        x, y = x.astype(ctx.out_dtype(0), copy=False), y.astype(ctx.out_dtype(0), copy=False)
    x, y = _compute_type(x, y)
    return xp.matmul(_adjoint(xp, x) if adj_x else x, _adjoint(xp, y) if adj_y else y)


# --- einsum ---------------------------------------------------------------------------------

def _split_labels(ctx, subscript: str) -> list[str]:
    """One entry per label, the ellipsis as a single "..." entry."""
    before, found, after = subscript.partition(ELLIPSIS)
    if "." in before or "." in after:
        ctx.fail(f"Expected at most one ellipsis (...) in einsum subscript '{subscript}'")
    return list(before) + ([ELLIPSIS] if found else []) + list(after)


def _parse_equation(ctx, equation: str, operand_count: int):
    """'ab,bc->ac' -> ([['a', 'b'], ['b', 'c']], ['a', 'c'])."""
    if equation.count("->") != 1:
        ctx.fail(f"Expecting exactly one '->' in einsum equation: {equation}")
    inputs, output = equation.split("->")
    subscripts = inputs.split(",")
    if len(subscripts) not in (1, 2) or len(subscripts) != operand_count:
        ctx.fail(f"Expecting 1 or 2 input subscripts in equation '{equation}' but got: "
                 f"{len(subscripts)}")
    return [_split_labels(ctx, s) for s in subscripts], _split_labels(ctx, output)


def _ellipsis_span(labels, rank: int) -> tuple[int, int]:
    """[start, end) of the dims the ellipsis covers in an operand of this rank."""
    start = labels.index(ELLIPSIS)
    return start, rank - (len(labels) - start - 1)


def _label_dims(ctx: KernelContext, operands, input_labels) -> tuple[dict[str, int], tuple[int, ...]]:
    """The dimension of every named label (checked to agree) and the broadcast shape of the
    dims the ellipses cover."""
    dims: dict[str, int] = {}
    ellipsis_shapes = []
    for index, (operand, labels) in enumerate(zip(operands, input_labels)):
        named = [label for label in labels if label != ELLIPSIS]
        if ELLIPSIS in labels:
            if operand.ndim < len(named):
                ctx.fail(f"Expected input {index} to have rank at least {len(named)} but got: "
                         f"{operand.ndim}")
            start, end = _ellipsis_span(labels, operand.ndim)
            ellipsis_shapes.append(operand.shape[start:end])
            named_dims = operand.shape[:start] + operand.shape[end:]
        elif operand.ndim != len(named):
            ctx.fail(f"Expected input {index} to have rank {len(named)} but got: {operand.ndim}")
        else:
            named_dims = operand.shape
        for axis, (label, dim) in enumerate(zip(named, named_dims)):
            if dims.setdefault(label, dim) != dim:
                ctx.fail(f"Expected dimension {dims[label]} at axis {axis} of the input shaped "
                         f"{shape_text(operand.shape)} but got dimension {dim}")
    try:
        return dims, np.broadcast_shapes(*ellipsis_shapes)
    except ValueError:
        ctx.fail("Invalid broadcasting dimensions: "
                 + " vs. ".join(shape_text(o.shape) for o in operands))


def _check_output_labels(ctx, equation, output_labels, dims, batch_shape) -> None:
    if batch_shape and ELLIPSIS not in output_labels:
        ctx.fail(f"Output contains {len(batch_shape)} broadcasting dimension(s) but no ellipsis "
                 f"(...) was found in the output subscripts.")
    unknown = [label for label in output_labels if label != ELLIPSIS and label not in dims]
    if unknown:
        ctx.fail(f"Output subscript '{unknown[0]}' does not appear in the input subscripts of "
                 f"einsum equation: {equation}")
    repeats = len(output_labels) - len(set(output_labels))
    if len(dims) + len(batch_shape) + repeats > len(_LETTERS):
        ctx.fail(f"einsum equation '{equation}' needs more than {len(_LETTERS)} dimensions")


def _expand_ellipsis(xp, operand, labels, batch_shape):
    """The operand with its ellipsis dims broadcast to the full batch shape (a view), so that
    every operand spells them with the same letters."""
    if ELLIPSIS not in labels:
        return operand
    start, end = _ellipsis_span(labels, operand.ndim)
    missing = len(batch_shape) - (end - start)
    padded = operand.reshape(operand.shape[:start] + (1,) * missing + operand.shape[start:])
    return xp.broadcast_to(padded, operand.shape[:start] + batch_shape + operand.shape[end:])


@math_kernel("Einsum", expensive=True)
def einsum(ctx, *operands, equation):
    xp = ctx.xp
    input_labels, output_labels = _parse_equation(ctx, equation, len(operands))
    dims, batch_shape = _label_dims(ctx, operands, input_labels)
    _check_output_labels(ctx, equation, output_labels, dims, batch_shape)
    # Spell every dim with a letter, as numpy wants: the labels, then the ellipsis dims.
    letters = iter(_LETTERS)
    letter_of = {label: next(letters) for label in dims}
    letter_of[ELLIPSIS] = "".join(next(letters) for _ in batch_shape)
    operands = [_expand_ellipsis(xp, operand, labels, batch_shape)
                for operand, labels in zip(operands, input_labels)]
    # numpy wants each output label once; repeats (TensorFlow's "i->ii") make a diagonal after.
    distinct = list(dict.fromkeys(output_labels))
    inputs = ",".join(_spell(labels, letter_of) for labels in input_labels)
    result = xp.einsum(f"{inputs}->{_spell(distinct, letter_of)}", *_compute_type(*operands),
                       optimize=len(operands) > 1)
    if len(distinct) < len(output_labels):
        result = _spread_repeated_labels(xp, result, distinct, output_labels, dims, letter_of,
                                         letters)
    return result


def _spell(labels, letter_of) -> str:
    return "".join(letter_of[label] for label in labels)


def _spread_repeated_labels(xp, result, distinct, output_labels, dims, letter_of, spare_letters):
    """Multiply by one identity matrix per repeated output label, which puts the values on the
    diagonal of the repeated dims and zeros elsewhere."""
    seen, final, factors, factor_subscripts = set(), [], [], []
    for label in output_labels:
        if label not in seen:
            seen.add(label)
            final.append(letter_of[label])
            continue
        new = next(spare_letters)
        final.append(new)
        factors.append(xp.eye(dims[label], dtype=result.dtype))
        factor_subscripts.append(letter_of[label] + new)
    subscripts = ",".join([_spell(distinct, letter_of), *factor_subscripts])
    return xp.einsum(f"{subscripts}->{''.join(final)}", result, *factors)
