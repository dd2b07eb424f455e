"""Lowerings of 2-D pooling (MaxPool, AvgPool) with the interpreter's semantics
(kernels/nn_pool.py): max pooling ignores NaN and starts from the type's lowest finite value
(so a window of -inf gives that value, as TensorFlow's does), padding never takes part, and an
average divides by the number of taps inside the input.
"""
from __future__ import annotations

import numpy as np

from .common import lowering
from .conv import window_geometry


def _pool_geometry(ctx, shape):
    data_format = ctx.attr("data_format", "NHWC")
    first = data_format.startswith("NC")
    spatial = (lambda v: list(v)[2:]) if first else (lambda v: list(v)[1:-1])
    flat = list(ctx.attr("explicit_paddings", []) or [])
    explicit = spatial([(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)])
    ksize, strides = spatial(ctx.attr("ksize")), spatial(ctx.attr("strides"))
    pads, out_sizes = window_geometry(spatial(shape), ksize, strides, [1] * len(ksize),
                                      ctx.attr("padding"), explicit)
    full = lambda values, fill: ([fill, fill, *values] if first else [fill, *values, fill])  # noqa: E731
    return full(ksize, 1), full(strides, 1), full(pads, (0, 0)), out_sizes, first


def _pool_supported(node) -> str | None:
    data_format = node.attr("data_format", "NHWC")
    if data_format not in ("NHWC", "NCHW"):
        return f"{node.op} with data_format {data_format} has no lowering"
    for name in ("ksize", "strides"):
        values = list(node.attr(name))
        batch, channel = values[0], values[1 if data_format == "NCHW" else -1]
        if len(values) != 4 or batch != 1 or channel != 1 or min(values) < 1:
            return f"{node.op} with {name}={values} (pooling beyond the spatial dims) has no lowering"
    if node.attr("padding") == "EXPLICIT" and len(node.attr("explicit_paddings", []) or []) != 8:
        return f"{node.op}: explicit_paddings must hold 8 values"
    dtype = node.spec.output_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering("MaxPool", supports=_pool_supported)
def max_pool(ctx, image):
    jnp = ctx.jnp
    window, strides, pads, _, _ = _pool_geometry(ctx, image.shape)
    floor = jnp.asarray(np.finfo(image.dtype).min, image.dtype)
    # fmax from the lowest finite value: NaN and -inf never win.
    image = jnp.where(jnp.isnan(image), floor, jnp.maximum(image, floor))
    return ctx.lax.reduce_window(image, floor, ctx.lax.max, window, strides, pads)


def _valid_counts(ctx, shape, dtype):
    """How many taps of each window lie inside the input, shaped to broadcast (a constant)."""
    window, strides, pads, out_sizes, first = _pool_geometry(ctx, shape)
    spatial = [2, 3] if first else [1, 2]
    counts = np.ones((1, 1), np.float64)
    per_dim = []
    for axis, out in zip(spatial, out_sizes):
        k, s, (before, _) = window[axis], strides[axis], pads[axis]
        start = np.arange(out) * s - before
        per_dim.append(np.minimum(start + k, shape[axis]) - np.maximum(start, 0))
    counts = np.outer(per_dim[0], per_dim[1])
    counts = counts[None, None] if first else counts[None, :, :, None]
    return ctx.jnp.asarray(counts, dtype)


@lowering("AvgPool", supports=_pool_supported)
def avg_pool(ctx, value):
    window, strides, pads, _, _ = _pool_geometry(ctx, value.shape)
    total = ctx.lax.reduce_window(value, ctx.jnp.zeros((), value.dtype), ctx.lax.add, window, strides, pads)
    return total / _valid_counts(ctx, value.shape, value.dtype)
