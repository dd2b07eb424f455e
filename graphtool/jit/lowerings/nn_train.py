"""Lowerings of the nn ops training graphs add: FusedBatchNormGrad (V1-V3), the sparse softmax
cross-entropy loss, and local response normalization (LRN, LRNGrad), each in the order of
operations of the interpreter's kernel (kernels/nn_norm.py, nn.py).

Not matched, and so documented: a label out of [0, classes) is an error in the interpreter; in a
compiled cluster its row's loss is NaN and its gradient row all NaN, as XLA's gather of a NaN
fill gives it.
"""
from __future__ import annotations

import numpy as np

from .common import const, lowering


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


def _batch_norm_supported(node) -> str | None:
    return _float(node) or (None if node.attr("data_format", "NHWC") in ("NHWC", "NCHW") else
                            f"{node.op} with data_format {node.attr('data_format')} has no lowering")


@lowering("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3", supports=_batch_norm_supported)
def fused_batch_norm_grad(ctx, dy, x, scale, mean, variance, *_reserve_space_3):
    jnp = ctx.jnp
    axis = 1 if ctx.attr("data_format", "NHWC") == "NCHW" else x.ndim - 1
    vector_shape = (-1,) + (1,) * (x.ndim - 1 - axis)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    per_channel = x.size // x.shape[axis] if x.shape[axis] else 0

    def spread(vector):
        return vector.reshape(vector_shape)

    inverse_std = const(ctx, 1, variance) / jnp.sqrt(variance + const(ctx, ctx.attr("epsilon", 1e-4), variance))
    centered = x - spread(mean)
    offset_backprop = jnp.sum(dy, axis=axes)
    empty = jnp.zeros(0, ctx.out_dtype(1))
    if not ctx.attr("is_training", True):
        scale_backprop = jnp.sum(dy * centered, axis=axes) * inverse_std
        return dy * spread(scale * inverse_std), scale_backprop, offset_backprop, empty, empty
    # TensorFlow scales each term first in training; mean(dy) through a rounded 1 / count.
    scale_backprop = jnp.sum(dy * (centered * spread(inverse_std)), axis=axes)
    inverse_count = np.asarray(1, x.dtype) / np.asarray(max(per_channel, 1), x.dtype)
    dy_mean = jnp.sum(dy, axis=axes) * inverse_count
    correction = (inverse_std * inverse_std) * (jnp.sum(dy * centered, axis=axes) / const(ctx, per_channel, x))
    x_backprop = spread(scale * inverse_std) * (dy - spread(dy_mean) - centered * spread(correction))
    return x_backprop, scale_backprop, offset_backprop, empty, empty


@lowering("SparseSoftmaxCrossEntropyWithLogits", supports=_float)
def sparse_softmax_cross_entropy_with_logits(ctx, features, labels):
    jnp = ctx.jnp
    if features.size == 0:
        return jnp.zeros(features.shape[0], features.dtype), jnp.zeros(features.shape, features.dtype)
    shifted = features - jnp.max(features, axis=-1, keepdims=True)
    exp = jnp.exp(shifted)
    total = jnp.sum(exp, axis=-1, keepdims=True)
    rows = labels.astype(np.int64)[:, None]
    negative_log = jnp.log(total) - shifted
    loss = jnp.take_along_axis(negative_log, rows, axis=-1, mode="fill", fill_value=np.nan)[:, 0]
    hot = (jnp.arange(features.shape[1]) == rows).astype(features.dtype)
    return loss, exp / total - hot


def _depth_window_sum(ctx, values, radius: int):
    """For every channel c, the sum over the channels [c - radius, c + radius] that exist."""
    depth = values.shape[-1]
    radius = min(radius, max(depth - 1, 0))
    padded = ctx.jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(radius, radius)])
    total = padded[..., :depth]
    for offset in range(1, 2 * radius + 1):
        total = total + padded[..., offset:offset + depth]
    return total


def _lrn_norm(ctx, image):
    bias, alpha = const(ctx, ctx.attr("bias", 1.0), image), const(ctx, ctx.attr("alpha", 1.0), image)
    return bias + alpha * _depth_window_sum(ctx, image * image, ctx.attr("depth_radius", 5))


@lowering("LRN", supports=_float)
def lrn(ctx, image):
    return image * _lrn_norm(ctx, image) ** const(ctx, -ctx.attr("beta", 0.5), image)


@lowering("LRNGrad", supports=_float)
def lrn_grad(ctx, grads, image, output):
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 0.5)
    norm = _lrn_norm(ctx, image)
    spread = _depth_window_sum(ctx, grads * output / norm, ctx.attr("depth_radius", 5))
    return grads * norm ** const(ctx, -beta, image) - const(ctx, 2 * alpha * beta, image) * image * spread
