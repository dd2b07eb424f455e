"""3-D pooling kernels and the Conv3D backprops: MaxPool3D, AvgPool3D, MaxPool3DGrad,
AvgPool3DGrad, Conv3DBackpropInputV2 and Conv3DBackpropFilterV2, on nn_window's windows (loops
over the window's taps, never over voxels) and nn_conv's convolution engines.

TensorFlow's CPU kernels for 3-D pooling are Eigen's cuboid pooling, which differs from its 2-D
MaxPool: the maximum starts from -inf (so an all -inf window gives -inf), pads with the lowest
finite value, and folds the window in row-major order as m = m > v ? m : v (a NaN wins where it is
met, and is replaced by the next element: what TensorFlow's results show). MaxPool3DGrad gives each window's gradient to every element within 1e-5 of the window's
recorded maximum (orig_output), not just the first. Averages divide by the number of window
elements inside the input.
"""
from __future__ import annotations

import numpy as np

from .nn_common import (batch_and_channel_entries, from_channels_last, host_ints, lowest, shape_text,
                        spatial_entries, to_channels_last, upcast)
from .nn_conv import ConvAttrs, conv_backprop_filter, conv_backprop_input, group_count
from .nn_window import (Window, accumulate_taps, make_window, pad_spatial, tap_view, windowed_average,
                        windowed_average_grad)
from .registry import kernel

# MaxPool3DGrad's tie tolerance: TensorFlow's CPU kernel compares |input - max| < 1e-5.
MAX_TIE_TOLERANCE = 1e-5


def _window(ctx, in_shape, ksize, strides, padding, data_format) -> Window:
    if len(in_shape) != 5:
        ctx.fail(f"tensor_in must be 5-dimensional: {shape_text(in_shape)}")
    for name, values in (("ksize", ksize), ("strides", strides)):
        if len(values) != 5:
            ctx.fail(f"Sliding window {name} field must specify 5 dimensions")
        if any(v != 1 for v in batch_and_channel_entries(values, data_format)):
            ctx.fail(f"Sliding window {name} field is not supported in the batch and depth dimensions")
    spatial_ksize = spatial_entries(ksize, data_format)
    return make_window(ctx, spatial_entries(in_shape, data_format), spatial_ksize,
                       spatial_entries(strides, data_format), [1] * 3, padding)


@kernel("MaxPool3D", expensive=True)
def max_pool3d(ctx, image, *, ksize, strides, padding, data_format):
    xp = ctx.xp
    window = _window(ctx, image.shape, ksize, strides, padding, data_format)
    values = to_channels_last(xp, upcast(image), data_format)
    padded = pad_spatial(xp, values, window, lowest(values.dtype))
    result = xp.full((values.shape[0], *window.out_sizes, values.shape[-1]), -np.inf, values.dtype)
    for tap in window.tap_offsets():
        value = tap_view(padded, window, tap)
        result = xp.where(result > value, result, value)
    return from_channels_last(xp, result, data_format).astype(ctx.out_dtype(0), copy=False)


@kernel("MaxPool3DGrad", expensive=True)
def max_pool3d_grad(ctx, orig_input, orig_output, grad, *, ksize, strides, padding, data_format):
    xp = ctx.xp
    window = _window(ctx, orig_input.shape, ksize, strides, padding, data_format)
    values = to_channels_last(xp, upcast(orig_input), data_format)
    maxima = to_channels_last(xp, upcast(orig_output), data_format)
    grad_last = to_channels_last(xp, upcast(grad), data_format)
    expected = (values.shape[0], *window.out_sizes, values.shape[-1])
    for name, tensor in (("orig_output", maxima), ("grad", grad_last)):
        if tuple(tensor.shape) != expected:
            ctx.fail(f"Expected {name} shape to be {shape_text(expected)}, but got {shape_text(tensor.shape)}")
    padded = pad_spatial(xp, values, window, np.nan)   # padding never matches a maximum

    def tap_gradient(_, tap):
        near = xp.abs(tap_view(padded, window, tap) - maxima) < MAX_TIE_TOLERANCE
        return xp.where(near, grad_last, 0)
    result = accumulate_taps(xp, tap_gradient, window, values.shape[0], values.shape[-1], grad_last.dtype)
    return from_channels_last(xp, result, data_format).astype(ctx.out_dtype(0), copy=False)


@kernel("AvgPool3D", expensive=True)
def avg_pool3d(ctx, image, *, ksize, strides, padding, data_format):
    window = _window(ctx, image.shape, ksize, strides, padding, data_format)
    return windowed_average(ctx, image, window, data_format)


@kernel("AvgPool3DGrad", expensive=True)
def avg_pool3d_grad(ctx, orig_input_shape, grad, *, ksize, strides, padding, data_format):
    xp = ctx.xp
    in_shape = host_ints(orig_input_shape)
    window = _window(ctx, in_shape, ksize, strides, padding, data_format)
    grad_last = to_channels_last(xp, upcast(grad), data_format)
    batch, channels = batch_and_channel_entries(in_shape, data_format)
    expected = (batch, *window.out_sizes, channels)
    if tuple(grad_last.shape) != expected:
        ctx.fail(f"Expected grad shape to be {shape_text(expected)}, but got {shape_text(grad_last.shape)}")
    return windowed_average_grad(ctx, grad_last, window, batch, channels, data_format)


def _check_rank5(ctx, **tensors):
    for name, tensor in tensors.items():
        if len(tensor) != 5:
            ctx.fail(f"{name} must be 5-dimensional: {shape_text(tensor)}")


@kernel("Conv3DBackpropInputV2", expensive=True)
def conv3d_backprop_input(ctx, input_sizes, filt, grad, *, strides, padding, data_format, dilations):
    xp = ctx.xp
    in_shape = host_ints(input_sizes)
    _check_rank5(ctx, input_sizes=in_shape, filter=filt.shape, out_backprop=grad.shape)
    attrs = ConvAttrs(strides, padding, [], data_format, dilations)
    batch, in_depth = batch_and_channel_entries(in_shape, data_format)
    groups = group_count(ctx, in_depth, filt.shape[3], filt.shape[4])
    window = attrs.window(ctx, in_shape, filt.shape[:3])
    grad_last = attrs.channels_last(xp, grad)
    if tuple(grad_last.shape[1:-1]) != tuple(window.out_sizes):
        ctx.fail(f"out_backprop has spatial dims {shape_text(grad_last.shape[1:-1])}, the convolution gives "
                 f"{shape_text(window.out_sizes)}")
    result = conv_backprop_input(xp, grad_last, upcast(filt), window, groups, batch, in_depth)
    return attrs.finish(ctx, result)


@kernel("Conv3DBackpropFilterV2", expensive=True)
def conv3d_backprop_filter(ctx, image, filter_sizes, grad, *, strides, padding, data_format, dilations):
    xp = ctx.xp
    filter_shape = host_ints(filter_sizes)
    _check_rank5(ctx, input=image.shape, filter_sizes=filter_shape, out_backprop=grad.shape)
    attrs = ConvAttrs(strides, padding, [], data_format, dilations)
    in_depth = batch_and_channel_entries(image.shape, data_format)[1]
    groups = group_count(ctx, in_depth, filter_shape[3], filter_shape[4])
    window = attrs.window(ctx, image.shape, filter_shape[:3])
    grad_last = attrs.channels_last(xp, grad)
    if tuple(grad_last.shape[1:-1]) != tuple(window.out_sizes):
        ctx.fail(f"out_backprop has spatial dims {shape_text(grad_last.shape[1:-1])}, the convolution gives "
                 f"{shape_text(window.out_sizes)}")
    result = conv_backprop_filter(xp, attrs.channels_last(xp, image), grad_last, window, groups, filter_shape)
    return result.astype(ctx.out_dtype(0), copy=False)
