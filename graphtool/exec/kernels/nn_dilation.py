"""Grayscale dilation kernels (TensorFlow's dilation_ops.cc): Dilation2D and its backprops.

out[b, y, x, c] = max over the filter taps (i, j) inside the input of
input[b, y * stride + i * rate - pad, x * stride + j * rate - pad, c] + filter[i, j, c], scanned
row-major from the type's lowest value and moving on only to a strictly greater sum. The
backprops send each output's gradient to the input element and filter tap of that maximum. A
window where no sum beats the lowest value (-inf inputs) has no maximum: TensorFlow then credits
filter tap (0, 0) and the window's first in-bounds input element; here the filter gradient does
the same and the input gradient goes to tap (0, 0) when it is in bounds (else it is dropped).
"""
from __future__ import annotations

import numpy as np

from .nn_common import lowest, shape_text
from .nn_window import Window, accumulate_taps, make_window, pad_spatial, tap_view
from .registry import kernel


def _window(ctx, image, filt, strides, rates, padding) -> Window:
    if image.ndim != 4:
        ctx.fail(f"input must be 4-dimensional: {shape_text(image.shape)}")
    if filt.ndim != 3:
        ctx.fail(f"filter must be 3-dimensional: {shape_text(filt.shape)}")
    if filt.shape[2] != image.shape[3]:
        ctx.fail(f"input and filter must have the same depth: {image.shape[3]} vs {filt.shape[2]}")
    if len(strides) != 4 or len(rates) != 4 or strides[0] != 1 or strides[3] != 1 or rates[0] != 1 or rates[3] != 1:
        ctx.fail("Only strides and rates in the row and column dimensions are supported")
    return make_window(ctx, image.shape[1:3], filt.shape[:2], strides[1:3], rates[1:3], padding)


def _best_taps(xp, image, filt, window: Window):
    """(maxima, tap index or -1) per output element, TensorFlow's row-major strict scan."""
    padded = pad_spatial(xp, image, window)
    shape = (image.shape[0], *window.out_sizes, image.shape[-1])
    best = xp.full(shape, lowest(image.dtype), image.dtype)
    taps = xp.full(shape, -1, np.int32)
    for index, tap in enumerate(window.tap_offsets()):
        value = tap_view(padded, window, tap) + filt[tap]
        take = value > best
        valid = window.tap_validity(xp, tap)
        if valid is not None:
            take &= valid
        best = xp.where(take, value, best)
        taps = xp.where(take, index, taps)
    return best, taps


@kernel("Dilation2D", expensive=True)
def dilation2d(ctx, image, filt, *, strides, rates, padding):
    return _best_taps(ctx.xp, image, filt, _window(ctx, image, filt, strides, rates, padding))[0]


def _grad_and_taps(ctx, image, filt, grad, strides, rates, padding):
    window = _window(ctx, image, filt, strides, rates, padding)
    expected = (image.shape[0], *window.out_sizes, image.shape[-1])
    if tuple(grad.shape) != expected:
        ctx.fail(f"out_backprop has shape {shape_text(grad.shape)}, expected {shape_text(expected)}")
    _, taps = _best_taps(ctx.xp, image, filt, window)
    return window, taps


@kernel("Dilation2DBackpropInput", expensive=True)
def dilation2d_backprop_input(ctx, image, filt, grad, *, strides, rates, padding):
    xp = ctx.xp
    window, taps = _grad_and_taps(ctx, image, filt, grad, strides, rates, padding)
    zero = grad.dtype.type(0)

    def tap_gradient(index, _):
        chosen = (taps == index) | ((taps == -1) & (index == 0))
        return xp.where(chosen, grad, zero)
    return accumulate_taps(xp, tap_gradient, window, image.shape[0], image.shape[-1], grad.dtype)


@kernel("Dilation2DBackpropFilter", expensive=True)
def dilation2d_backprop_filter(ctx, image, filt, grad, *, strides, rates, padding):
    xp = ctx.xp
    window, taps = _grad_and_taps(ctx, image, filt, grad, strides, rates, padding)
    taps = xp.where(taps == -1, 0, taps)
    zero = grad.dtype.type(0)
    result = xp.zeros(filt.shape, grad.dtype)
    for index, tap in enumerate(window.tap_offsets()):
        result[tap] = xp.where(taps == index, grad, zero).sum(axis=(0, 1, 2), dtype=grad.dtype)
    return result
