"""ZerosLike and AddN of `variant` tensors (TensorFlow's variant op registry, in small).

A variant tensor is an object array of values that know how to make their zeros and add
themselves (`zeros_like(ctx)`, `add(ctx, other)`, as TensorList does): the gradient of a list
used twice is the AddN of two lists, and a loop starts a list's gradient from its ZerosLike.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes


def is_variant(ctx, index: int = 0) -> bool:
    """Whether output `index` of the kernel's op is a variant tensor."""
    return ctx.output_dtypes[index].base is dtypes.variant


def zeros_like(ctx, x) -> np.ndarray:
    result = np.empty(x.shape, dtype=object)
    for index in np.ndindex(*x.shape):
        result[index] = _protocol(ctx, x[index], "zeros_like").zeros_like(ctx)
    return result


def add_n(ctx, inputs) -> np.ndarray:
    """Element-wise sum, left to right (variant addition has no rounding to order)."""
    result = np.empty(inputs[0].shape, dtype=object)
    for index in np.ndindex(*inputs[0].shape):
        total = _protocol(ctx, inputs[0][index], "add")
        for other in inputs[1:]:
            total = total.add(ctx, other[index])
        result[index] = total
    return result


def _protocol(ctx, value, method: str):
    if not hasattr(value, method):
        ctx.fail(f"{ctx.op} of a variant holding {type(value).__name__}, which has no {method}")
    return value
