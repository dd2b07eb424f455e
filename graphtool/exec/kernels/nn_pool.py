"""Pooling kernels: MaxPool(V2), AvgPool, their gradients and MaxPoolWithArgmax.

All of them loop over the window's taps (a handful) with whole-array operations, never over
pixels. The max-pooling variants reproduce two TensorFlow CPU behaviours:
- MaxPool's reduction starts from the dtype's lowest finite value and ignores NaN, so a window of
  NaNs or -infs gives -FLT_MAX;
- MaxPoolGrad and MaxPoolWithArgmax scan each window row-major, starting from its first element
  inside the input and moving only to a strictly greater one: a gradient goes to the first
  maximum, and a NaN only wins as the window's first element.
AvgPool divides by the number of window elements inside the input, not the window size.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .nn_common import (batch_and_channel_entries, check_supported_format, from_channels_last, host_ints,
                        lowest, shape_text, spatial_entries, to_channels_last, upcast)
from .nn_window import (Window, accumulate_taps, explicit_pads, make_window, pad_spatial, tap_view,
                        windowed_average, windowed_average_grad)
from .registry import kernel


# --- geometry -------------------------------------------------------------------------------

def _pool_window(ctx, in_shape, ksize, strides, padding, data_format, explicit_paddings=()) -> Window:
    """The spatial Window of a pooling node (ksize, strides and explicit_paddings in data_format)."""
    for name, values in (("ksize", ksize), ("stride", strides)):
        if len(values) != len(in_shape):
            ctx.fail(f"Sliding window {name} field must specify {len(in_shape)} dimensions")
    for dim, size in enumerate(ksize):
        if size <= 0:
            ctx.fail(f"Sliding window ksize for dimension {dim} was zero.")
    if ksize[0] != 1 or strides[0] != 1:
        ctx.fail("Pooling is not yet supported on the batch dimension.")
    spatial_ksize = spatial_entries(ksize, data_format)
    return make_window(ctx, spatial_entries(in_shape, data_format), spatial_ksize,
                       spatial_entries(strides, data_format), [1] * len(spatial_ksize), padding,
                       explicit_pads(list(explicit_paddings), data_format))


def _depth_window(ksize, strides, data_format) -> tuple[int, int]:
    """(window, stride) across the channels."""
    return tuple(batch_and_channel_entries(values, data_format)[1] for values in (ksize, strides))


def _check_spatial_only(ctx, ksize, strides, data_format, message: str) -> None:
    if _depth_window(ksize, strides, data_format) != (1, 1):
        ctx.fail(message)


def _check_grad_shape(ctx, grad, expected) -> None:
    if tuple(grad.shape) != tuple(expected):
        ctx.fail(f"Expected grad shape to be {shape_text(expected)}, but got {shape_text(grad.shape)}")


# --- max pooling ----------------------------------------------------------------------------

def _max_over_taps(xp, image, window: Window):
    """MaxPool over channels-last `image`: NaN-ignoring maxima that start from the lowest value."""
    floor = lowest(image.dtype)
    padded = pad_spatial(xp, image, window, floor)
    result = xp.full((image.shape[0], *window.out_sizes, image.shape[-1]), floor, image.dtype)
    for tap in window.tap_offsets():
        xp.fmax(result, tap_view(padded, window, tap), out=result)
    return result


def _max_over_depth(ctx, image, depth_window: int, depth_stride: int, spatial_ksize):
    """Max pooling across channels (TensorFlow's depthwise max pooling), channels-last."""
    channels = image.shape[-1]
    if any(k != 1 for k in spatial_ksize):
        ctx.fail("MaxPooling supports exactly one of pooling across depth or pooling across width/height.")
    if channels % depth_window:
        ctx.fail("Depthwise max pooling requires the depth window to evenly divide the input depth")
    if depth_stride != depth_window:
        ctx.fail("Depthwise max pooling requires the depth window to equal the depth stride")
    groups = image.reshape(*image.shape[:-1], channels // depth_window, depth_window)
    result = ctx.xp.full(groups.shape[:-1], lowest(image.dtype), image.dtype)
    for i in range(depth_window):
        ctx.xp.fmax(result, groups[..., i], out=result)
    return result


def _max_pool(ctx, image, ksize, strides, padding, data_format, explicit_paddings=()):
    xp = ctx.xp
    check_supported_format(ctx, data_format)
    if image.ndim != 4:
        ctx.fail(f"input must be 4-dimensional: {shape_text(image.shape)}")
    window = _pool_window(ctx, image.shape, ksize, strides, padding, data_format, explicit_paddings)
    channels_last = to_channels_last(xp, image, data_format)
    depth_window, depth_stride = _depth_window(ksize, strides, data_format)
    if depth_window != 1:
        channels_last = _max_over_depth(ctx, channels_last, depth_window, depth_stride, window.taps)
    return from_channels_last(xp, _max_over_taps(xp, channels_last, window), data_format)


@kernel("MaxPool", expensive=True)
def max_pool(ctx, image, *, ksize, strides, padding, explicit_paddings, data_format):
    return _max_pool(ctx, image, ksize, strides, padding, data_format, explicit_paddings)


@kernel("MaxPoolV2", expensive=True)
def max_pool_v2(ctx, image, ksize, strides, *, padding, data_format):
    return _max_pool(ctx, image, host_ints(ksize), host_ints(strides), padding, data_format)


def first_max_taps(xp, image, window: Window):
    """(maxima, tap indices), both [N, *out, C], of TensorFlow's row-major window scan: start at
    the first tap inside the input, move on only to a strictly greater value."""
    padded = pad_spatial(xp, image, window)   # padded taps are masked out, whatever they hold
    shape = (image.shape[0], *window.out_sizes, image.shape[-1])
    best = xp.zeros(shape, image.dtype)
    taps = xp.zeros(shape, np.int32)
    seen = xp.zeros((1, *window.out_sizes, 1), bool)
    for index, tap in enumerate(window.tap_offsets()):
        value = tap_view(padded, window, tap)
        valid = window.tap_validity(xp, tap)
        take = (best < value) | ~seen
        if valid is None:
            seen = xp.ones_like(seen)
        else:
            take &= valid
            seen = seen | valid
        best = xp.where(take, value, best)
        taps = xp.where(take, index, taps)
    return best, taps


def _max_pool_grad(ctx, orig_input, grad, ksize, strides, padding, data_format, explicit_paddings=()):
    """Each window's gradient goes to its first maximum in orig_input (recomputed, as TensorFlow's
    CPU kernel does; orig_output is not needed)."""
    xp = ctx.xp
    if orig_input.ndim != 4:
        ctx.fail(f"orig_input must be 4-dimensional: {shape_text(orig_input.shape)}")
    _check_spatial_only(ctx, ksize, strides, data_format,
                        "MaxPoolingGrad is not yet supported on the depth dimension.")
    window = _pool_window(ctx, orig_input.shape, ksize, strides, padding, data_format, explicit_paddings)
    image = to_channels_last(xp, orig_input, data_format)
    grad_last = to_channels_last(xp, grad, data_format)
    _check_grad_shape(ctx, grad_last, (image.shape[0], *window.out_sizes, image.shape[-1]))
    _, taps = first_max_taps(xp, image, window)
    result = accumulate_taps(xp, lambda index, _: xp.where(taps == index, grad_last, 0), window,
                             image.shape[0], image.shape[-1], grad.dtype)
    return from_channels_last(xp, result, data_format)


@kernel("MaxPoolGrad", expensive=True)
def max_pool_grad(ctx, orig_input, orig_output, grad, *, ksize, strides, padding, explicit_paddings,
                  data_format):
    return _max_pool_grad(ctx, orig_input, grad, ksize, strides, padding, data_format, explicit_paddings)


@kernel("MaxPoolGradV2", expensive=True)
def max_pool_grad_v2(ctx, orig_input, orig_output, grad, ksize, strides, *, padding, data_format):
    return _max_pool_grad(ctx, orig_input, grad, host_ints(ksize), host_ints(strides), padding, data_format)


def _flat_input_index(xp, taps, window: Window, channels: int, batch_offset: int | None):
    """Input positions of window taps as TensorFlow's argmax: ((y * W + x) * C + c), plus
    b * H * W * C when the batch is included."""
    tap_coordinates = np.unravel_index(np.arange(window.tap_count), window.taps)
    index = 0
    spatial_rank = len(window.taps)
    for dim in range(spatial_rank):
        shape = [1] * (spatial_rank + 2)
        shape[dim + 1] = window.out_sizes[dim]
        starts = (xp.arange(window.out_sizes[dim]) * window.strides[dim] - window.pads[dim][0]).reshape(shape)
        offsets = xp.asarray(tap_coordinates[dim])[taps]
        index = index * window.in_sizes[dim] + starts + offsets
    index = index * channels + xp.arange(channels)
    if batch_offset is not None:
        index = index + xp.arange(taps.shape[0]).reshape(-1, *[1] * (spatial_rank + 1)) * batch_offset
    return index


@kernel("MaxPoolWithArgmax", expensive=True)
def max_pool_with_argmax(ctx, image, *, ksize, strides, padding, include_batch_in_index):
    xp = ctx.xp
    if image.ndim != 4:
        ctx.fail(f"input must be 4-dimensional: {shape_text(image.shape)}")
    _check_spatial_only(ctx, ksize, strides, "NHWC", "MaxPoolWithArgmax is not yet supported on the depth "
                        "dimension.")
    window = _pool_window(ctx, image.shape, ksize, strides, padding, "NHWC")
    values, taps = first_max_taps(xp, image, window)
    batch_offset = prod(image.shape[1:]) if include_batch_in_index else None
    argmax = _flat_input_index(xp, taps, window, image.shape[-1], batch_offset)
    return values, argmax.astype(ctx.out_dtype(1))


# --- average pooling ------------------------------------------------------------------------

def _avg_pool_window(ctx, in_shape, ksize, strides, padding, data_format) -> Window:
    if len(in_shape) != 4:
        ctx.fail(f"Input must be 4-dimensional: {shape_text(in_shape)}")
    window = _pool_window(ctx, in_shape, ksize, strides, padding, data_format)
    _check_spatial_only(ctx, ksize, strides, data_format,
                        "Non-spatial pooling is not yet supported. Volunteers? :)")
    return window


@kernel("AvgPool", expensive=True)
def avg_pool(ctx, value, *, ksize, strides, padding, data_format):
    window = _avg_pool_window(ctx, value.shape, ksize, strides, padding, data_format)
    return windowed_average(ctx, value, window, data_format)


@kernel("AvgPoolGrad", expensive=True)
def avg_pool_grad(ctx, orig_input_shape, grad, *, ksize, strides, padding, data_format):
    """Each window's gradient is shared equally among its elements inside the input."""
    xp = ctx.xp
    in_shape = host_ints(orig_input_shape)
    window = _avg_pool_window(ctx, in_shape, ksize, strides, padding, data_format)
    grad_last = to_channels_last(xp, upcast(grad), data_format)
    batch, channels = batch_and_channel_entries(in_shape, data_format)
    _check_grad_shape(ctx, grad_last, (batch, *window.out_sizes, channels))
    return windowed_average_grad(ctx, grad_last, window, batch, channels, data_format)
