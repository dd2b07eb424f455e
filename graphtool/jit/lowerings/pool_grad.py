"""Lowerings of the 2-D pooling gradients (MaxPoolGrad, AvgPoolGrad), in the interpreter's terms
(kernels/nn_pool.py, nn_window.py): each window's gradient goes to its first maximum in the
original input (TensorFlow's row-major scan that moves on only to a strictly greater value), or
is shared equally among its taps inside the input. A tap's values are placed back into the input
with lax.pad (interior padding = stride - 1), so the whole gradient is a sum of pads XLA fuses.
"""
from __future__ import annotations

import numpy as np

from .common import lowering, static_ints
from .conv import window_geometry
from .pool import _pool_supported


class _Window:
    """Spatial geometry of a pooling node over a channels-last input of `in_shape`."""

    def __init__(self, ctx, in_shape_nhwc):
        channels_first = ctx.attr("data_format", "NHWC") == "NCHW"
        spatial = (lambda v: list(v)[2:]) if channels_first else (lambda v: list(v)[1:-1])
        flat = list(ctx.attr("explicit_paddings", []) or [])
        explicit = spatial([(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)])
        self.in_sizes = list(in_shape_nhwc[1:3])
        self.taps, self.strides = spatial(ctx.attr("ksize")), spatial(ctx.attr("strides"))
        self.pads, self.out_sizes = window_geometry(self.in_sizes, self.taps, self.strides, [1, 1],
                                                    ctx.attr("padding"), explicit)

    def tap_offsets(self):
        return [(i, j) for i in range(self.taps[0]) for j in range(self.taps[1])]

    def validity(self, tap) -> np.ndarray:
        """[1, oh, ow, 1]: whether this tap of each output position reads inside the input."""
        masks = []
        for t, out, s, (before, _), size in zip(tap, self.out_sizes, self.strides, self.pads, self.in_sizes):
            position = np.arange(out) * s + t - before
            masks.append((position >= 0) & (position < size))
        return np.logical_and.outer(masks[0], masks[1])[None, :, :, None]

    def tap_slice(self, ctx, padded, tap):
        (i, j), (oh, ow), (sh, sw) = tap, self.out_sizes, self.strides
        n, _, _, c = padded.shape
        return ctx.lax.slice(padded, (0, i, j, 0), (n, i + (oh - 1) * sh + 1, j + (ow - 1) * sw + 1, c),
                             (1, sh, sw, 1))

    def place(self, ctx, values, tap):
        """[N, oh, ow, C] values put where `tap` reads them, in an unpadded [N, H, W, C] input
        (what falls in the padding is cut off by negative edge padding)."""
        zero = ctx.jnp.zeros((), values.dtype)
        config = [(0, 0, 0)]
        for t, out, s, (before, _), size in zip(tap, self.out_sizes, self.strides, self.pads, self.in_sizes):
            low = t - before
            high = size - (low + (out - 1) * s + 1)
            config.append((low, high, s - 1))
        config.append((0, 0, 0))
        return ctx.lax.pad(values, zero, config)


def _nhwc(ctx, x):
    return ctx.jnp.transpose(x, (0, 2, 3, 1)) if ctx.attr("data_format", "NHWC") == "NCHW" else x


def _back(ctx, x):
    return ctx.jnp.transpose(x, (0, 3, 1, 2)) if ctx.attr("data_format", "NHWC") == "NCHW" else x


@lowering("MaxPoolGrad", supports=_pool_supported)
def max_pool_grad(ctx, orig_input, orig_output, grad):
    jnp = ctx.jnp
    image, grad = _nhwc(ctx, orig_input), _nhwc(ctx, grad)
    window = _Window(ctx, image.shape)
    if 0 in window.out_sizes or image.size == 0:
        return jnp.zeros(orig_input.shape, grad.dtype)
    padded = jnp.pad(image, ((0, 0), *window.pads, (0, 0)))
    best = first = None
    seen = np.zeros((1, *window.out_sizes, 1), bool)
    for index, tap in enumerate(window.tap_offsets()):
        value = window.tap_slice(ctx, padded, tap)
        valid = window.validity(tap)
        if best is None:
            best, first = value, jnp.zeros(value.shape, np.int32)
            take = jnp.asarray(valid)
        else:
            take = ((best < value) | ~seen) & valid
        best = jnp.where(take, value, best)
        first = jnp.where(take, np.int32(index), first)
        seen = seen | valid
    total = None
    for index, tap in enumerate(window.tap_offsets()):
        share = jnp.where(first == index, grad, jnp.zeros((), grad.dtype))
        placed = window.place(ctx, share, tap)
        total = placed if total is None else total + placed
    return _back(ctx, total)


@lowering("AvgPoolGrad", static_inputs=(0,), supports=_pool_supported)
def avg_pool_grad(ctx, orig_input_shape, grad):
    jnp = ctx.jnp
    shape = static_ints(orig_input_shape)
    if ctx.attr("data_format", "NHWC") == "NCHW":
        shape = [shape[0], shape[2], shape[3], shape[1]]
    grad = _nhwc(ctx, grad)
    window = _Window(ctx, shape)
    if 0 in window.out_sizes or 0 in shape:
        return _back(ctx, jnp.zeros(shape, grad.dtype))
    counts = sum(window.validity(tap).astype(np.int64) for tap in window.tap_offsets())
    share = grad / jnp.asarray(np.maximum(counts, 1), grad.dtype)
    total = None
    for tap in window.tap_offsets():
        placed = window.place(ctx, jnp.where(window.validity(tap), share, jnp.zeros((), grad.dtype)), tap)
        total = placed if total is None else total + placed
    return _back(ctx, total)
