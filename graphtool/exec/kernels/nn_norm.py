"""Normalization kernels: FusedBatchNorm (V1, V2, V3) and their gradients, LRN and LRNGrad,
following TensorFlow's CPU kernels (fused_batch_norm_op.cc, lrn_op.cc).

FusedBatchNorm in training normalizes with the batch's biased variance, but reports the
Bessel-corrected one (times n / (n - 1)) as batch_variance, blended into the running variance
when exponential_avg_factor < 1. The reserve spaces keep what the gradient needs: the batch
mean and the biased variance in training, the given mean and variance in inference.
"""
from __future__ import annotations

import numpy as np

from .nn_common import channel_axis, shape_text, upcast
from .registry import kernel


# --- batch normalization --------------------------------------------------------------------

class Channels:
    """How per-channel vectors line up with x for a data_format: the axes statistics reduce
    over, and the shape that broadcasts a [C] vector against x."""

    def __init__(self, x, data_format: str):
        axis = channel_axis(data_format) % x.ndim
        self.count = x.shape[axis]
        self.reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
        self.vector_shape = (-1,) + (1,) * (x.ndim - 1 - axis)
        self.per_channel = x.size // self.count if self.count else 0   # TensorFlow's rest_size

    def spread(self, vector):
        return vector.reshape(self.vector_shape)

    def mean(self, values):
        """The per-channel mean as TensorFlow's CPU kernel takes it: the sum times a rounded
        1 / count (rest_size_inv), not divided by the count."""
        return values.sum(axis=self.reduce_axes) * self.inverse_count(values.dtype)

    def inverse_count(self, dtype):
        return (dtype.type(1) / dtype.type(self.per_channel)) if self.per_channel else dtype.type(float("inf"))

    def sum(self, values):
        return values.sum(axis=self.reduce_axes)


def _check_batch_norm_inputs(ctx, x, data_format: str, **vectors) -> Channels:
    rank = 5 if "D" in data_format else 4
    if x.ndim != rank:
        ctx.fail(f"input must be {rank}-dimensional{shape_text(x.shape)}")
    channels = Channels(x, data_format)
    for name, vector in vectors.items():
        if vector.ndim != 1:
            ctx.fail(f"{name} must be 1-dimensional{shape_text(vector.shape)}")
        if vector.shape[0] != channels.count:
            ctx.fail(f"{name} must have the same number of elements as the channels of x, got "
                     f"{vector.shape[0]} and {channels.count}")
    return channels


def _rsqrt(xp, values):
    return 1 / xp.sqrt(values)


def batch_norm_inference(xp, x, scale, offset, mean, variance, epsilon: float, channels: Channels):
    """(x - mean) * (rsqrt(variance + epsilon) * scale) + offset, in TensorFlow's order."""
    scaling = _rsqrt(xp, variance + epsilon) * scale
    return (x - channels.spread(mean)) * channels.spread(scaling) + channels.spread(offset)


def _batch_norm_training(xp, x, scale, offset, mean, variance, epsilon, exponential_avg_factor,
                         channels: Channels):
    """(y, running mean, running variance, batch mean, biased batch variance)."""
    batch_mean = channels.mean(x)
    centered = x - channels.spread(batch_mean)
    batch_variance = channels.mean(centered * centered)
    y = centered * channels.spread(_rsqrt(xp, batch_variance + epsilon) * scale) + channels.spread(offset)
    corrected = batch_variance * (channels.per_channel / max(channels.per_channel - 1, 1))
    if exponential_avg_factor != 1:
        keep = 1 - exponential_avg_factor
        batch_mean_out = keep * mean + exponential_avg_factor * batch_mean
        corrected = keep * variance + exponential_avg_factor * corrected
    else:
        batch_mean_out = batch_mean
    return y, batch_mean_out, corrected, batch_mean, batch_variance


def _fused_batch_norm(ctx, x, scale, offset, mean, variance, epsilon, exponential_avg_factor,
                      is_training, data_format):
    """The five outputs common to every version: y, batch mean and variance, reserve spaces 1-2."""
    xp = ctx.xp
    statistics = {} if is_training and exponential_avg_factor == 1 else {"mean": mean, "variance": variance}
    channels = _check_batch_norm_inputs(ctx, x, data_format, scale=scale, offset=offset, **statistics)
    if x.size == 0:
        return _empty_batch_norm(ctx, x, scale.shape[0])
    values, scale, offset, mean, variance = (upcast(v) for v in (x, scale, offset, mean, variance))
    if is_training:
        y, batch_mean, batch_variance, saved_mean, saved_variance = _batch_norm_training(
            xp, values, scale, offset, mean, variance, epsilon, exponential_avg_factor, channels)
    else:
        y = batch_norm_inference(xp, values, scale, offset, mean, variance, epsilon, channels)
        batch_mean = saved_mean = mean
        batch_variance = saved_variance = variance
    vector_type = ctx.out_dtype(1)
    return (y.astype(ctx.out_dtype(0), copy=False),
            *(v.astype(vector_type) for v in (batch_mean, batch_variance, saved_mean, saved_variance)))


def _empty_batch_norm(ctx, x, depth: int):
    """TensorFlow's CPU kernel on an x without elements (training or not): an empty y, NaN batch
    mean and variance (statistics of nothing), and reserve spaces it leaves unwritten (zeros here)."""
    xp, vector_type = ctx.xp, ctx.out_dtype(1)
    nan = xp.full(depth, np.nan, vector_type)
    return (xp.zeros(x.shape, ctx.out_dtype(0)), nan, nan.copy(), xp.zeros(depth, vector_type),
            xp.zeros(depth, vector_type))


@kernel("FusedBatchNorm", "FusedBatchNormV2", expensive=True)
def fused_batch_norm(ctx, x, scale, offset, mean, variance, *, epsilon, exponential_avg_factor,
                     is_training, data_format):
    return _fused_batch_norm(ctx, x, scale, offset, mean, variance, epsilon, exponential_avg_factor,
                             is_training, data_format)


@kernel("FusedBatchNormV3", expensive=True)
def fused_batch_norm_v3(ctx, x, scale, offset, mean, variance, *, epsilon, exponential_avg_factor,
                        is_training, data_format):
    outputs = _fused_batch_norm(ctx, x, scale, offset, mean, variance, epsilon, exponential_avg_factor,
                                is_training, data_format)
    # reserve_space_3 is scratch space only cuDNN uses; TensorFlow's CPU kernel gives a scalar.
    return (*outputs, ctx.xp.zeros((), ctx.out_dtype(5)))


def _training_x_backprop(channels: Channels, dy, centered, scale, inverse_std):
    """The input gradient when the statistics came from the batch itself:
    scale * rsqrt(var + eps) * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) / (var + eps)),
    rounded as TensorFlow's CPU kernel does: mean(dy) through 1 / count, the other mean divided
    by the count, and rsqrt squared before it multiplies that mean."""
    dy_mean = channels.mean(dy)
    correction = (inverse_std * inverse_std) * (channels.sum(dy * centered) / channels.per_channel)
    return channels.spread(scale * inverse_std) * (
        dy - channels.spread(dy_mean) - centered * channels.spread(correction))


def _batch_norm_grad(ctx, y_backprop, x, scale, saved_mean, saved_variance, epsilon, is_training,
                     data_format):
    """(x_backprop, scale_backprop, offset_backprop) from the statistics the forward op saved."""
    xp = ctx.xp
    channels = _check_batch_norm_inputs(ctx, x, data_format, scale=scale, reserve_space_1=saved_mean,
                                        reserve_space_2=saved_variance)
    if y_backprop.shape != x.shape:
        ctx.fail(f"x and y_backprop must have same shape, but x has shape {shape_text(x.shape)} and "
                 f"y_backprop has shape {shape_text(y_backprop.shape)}")
    dy, x, scale, mean, variance = (upcast(v) for v in (y_backprop, x, scale, saved_mean, saved_variance))
    inverse_std = _rsqrt(xp, variance + epsilon)
    centered = x - channels.spread(mean)
    offset_backprop = channels.sum(dy)
    if is_training:  # TensorFlow scales each term first in training, the sum in inference
        scale_backprop = channels.sum(dy * (centered * channels.spread(inverse_std)))
    else:
        scale_backprop = channels.sum(dy * centered) * inverse_std
    if is_training:
        x_backprop = _training_x_backprop(channels, dy, centered, scale, inverse_std)
    else:
        x_backprop = dy * channels.spread(scale * inverse_std)
    vector_type = ctx.out_dtype(1)
    # The last two outputs are placeholders TensorFlow leaves empty.
    empty = xp.zeros(0, vector_type)
    return (x_backprop.astype(ctx.out_dtype(0), copy=False), scale_backprop.astype(vector_type),
            offset_backprop.astype(vector_type), empty, empty)


@kernel("FusedBatchNormGrad", "FusedBatchNormGradV2", expensive=True)
def fused_batch_norm_grad(ctx, y_backprop, x, scale, reserve_space_1, reserve_space_2, *, epsilon,
                          is_training, data_format):
    return _batch_norm_grad(ctx, y_backprop, x, scale, reserve_space_1, reserve_space_2, epsilon,
                            is_training, data_format)


@kernel("FusedBatchNormGradV3", expensive=True)
def fused_batch_norm_grad_v3(ctx, y_backprop, x, scale, reserve_space_1, reserve_space_2, reserve_space_3,
                             *, epsilon, is_training, data_format):
    return _batch_norm_grad(ctx, y_backprop, x, scale, reserve_space_1, reserve_space_2, epsilon,
                            is_training, data_format)


# --- local response normalization -------------------------------------------------------------

def _depth_window_sum(xp, values, radius: int):
    """For every channel c, the sum of values over channels [c - radius, c + radius] that exist
    (a loop over the 2 * radius + 1 window offsets, not over elements)."""
    depth = values.shape[-1]
    radius = min(radius, max(depth - 1, 0))
    padded = xp.pad(values, [(0, 0)] * (values.ndim - 1) + [(radius, radius)])
    total = padded[..., :depth].copy()
    for offset in range(1, 2 * radius + 1):
        total += padded[..., offset:offset + depth]
    return total


def _lrn_norm(xp, image, depth_radius, bias, alpha):
    """bias + alpha * (sum of squares over each channel's window)."""
    return bias + alpha * _depth_window_sum(xp, image * image, depth_radius)


def _check_lrn(ctx, **tensors) -> None:
    shapes = {tensor.shape for tensor in tensors.values()}
    for name, tensor in tensors.items():
        if tensor.ndim != 4:
            ctx.fail(f"{name} must be 4-dimensional")
    if len(shapes) > 1:
        ctx.fail("input_grads, input_image, and out_image should have the same shape")


@kernel("LRN", expensive=True)
def lrn(ctx, image, *, depth_radius, bias, alpha, beta):
    """image / (bias + alpha * sum of squares over the depth window) ** beta, channels last."""
    xp = ctx.xp
    if image.ndim != 4:
        ctx.fail("in must be 4-dimensional")
    values = upcast(image)
    norm = _lrn_norm(xp, values, depth_radius, bias, alpha)
    return (values * norm ** -beta).astype(ctx.out_dtype(0), copy=False)


@kernel("LRNGrad", expensive=True)
def lrn_grad(ctx, input_grads, input_image, output_image, *, depth_radius, bias, alpha, beta):
    """TensorFlow's LRNGrad: for every channel k,
    grads[k] * norm[k] ** -beta - 2 * alpha * beta * in[k] * sum over j in k's window of
    grads[j] * out[j] / norm[j] (the windows are symmetric, so j sees k exactly when k sees j)."""
    xp = ctx.xp
    _check_lrn(ctx, input_grads=input_grads, input_image=input_image, output_image=output_image)
    grads, image, output = (upcast(v) for v in (input_grads, input_image, output_image))
    norm = _lrn_norm(xp, image, depth_radius, bias, alpha)
    spread = _depth_window_sum(xp, grads * output / norm, depth_radius)
    result = grads * norm ** -beta - (2 * alpha * beta) * image * spread
    return result.astype(ctx.out_dtype(0), copy=False)
