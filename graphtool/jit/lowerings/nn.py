"""Lowerings of the nn family's elementwise and per-channel ops: activations and their gradients,
BiasAdd and BiasAddGrad, Softmax / LogSoftmax, the softmax cross-entropy loss, L2Loss and
FusedBatchNorm (V1-V3, inference and training). Convolutions are in conv.py, pooling in pool.py.

Each follows the interpreter's kernel (kernels/nn_activation.py, nn.py, nn_norm.py), itself
TensorFlow's formula: the same comparisons at the kinks (ReluGrad passes nothing at exactly 0,
LeakyRelu selects rather than takes a max), exp(x) - 1 rather than expm1 in Elu/Selu,
TensorFlow's rounded SELU constants, and batch statistics taken as a sum times a rounded 1/count.
"""
from __future__ import annotations

import numpy as np

from .common import const, lowering

# SELU's scale and scale * alpha as tensorflow/core/kernels/relu_op_functor.h spells them.
SELU_SCALE = 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def _real(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind in "iuf" else f"{node.op} on {dtype} has no lowering"


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


def _exp_minus_one(ctx, x):
    """exp(x) - 1 on the negative part only (the positive part is never used, and would overflow)."""
    return ctx.jnp.exp(ctx.jnp.minimum(x, const(ctx, 0, x))) - const(ctx, 1, x)


# --- activations ----------------------------------------------------------------------------

@lowering("Relu", supports=_real)
def relu(ctx, x):
    return ctx.jnp.maximum(x, const(ctx, 0, x))   # NaN stays NaN


@lowering("Relu6", supports=_real)
def relu6(ctx, x):
    return ctx.jnp.minimum(ctx.jnp.maximum(x, const(ctx, 0, x)), const(ctx, 6, x))


@lowering("LeakyRelu", supports=_float)
def leaky_relu(ctx, x):
    return ctx.jnp.where(x > const(ctx, 0, x), x, x * const(ctx, ctx.attr("alpha", 0.2), x))


@lowering("Elu", supports=_float)
def elu(ctx, x):
    return ctx.jnp.where(x < const(ctx, 0, x), _exp_minus_one(ctx, x), x)


@lowering("Selu", supports=_float)
def selu(ctx, x):
    negative = _exp_minus_one(ctx, x) * const(ctx, SELU_SCALE_ALPHA, x)
    return ctx.jnp.where(x < const(ctx, 0, x), negative, x * const(ctx, SELU_SCALE, x))


@lowering("Softplus", supports=_float)
def softplus(ctx, x):
    jnp = ctx.jnp
    # log(epsilon) + 2: below it softplus(x) = exp(x), above its negation x (TensorFlow's cut).
    threshold = const(ctx, float(np.log(np.finfo(x.dtype).eps.astype(np.float64)) + 2), x)
    exp = jnp.exp(jnp.minimum(x, -threshold))
    return jnp.where(x > -threshold, x, jnp.where(x < threshold, exp, jnp.log1p(exp)))


@lowering("Softsign", supports=_float)
def softsign(ctx, x):
    return x / (const(ctx, 1, x) + ctx.jnp.abs(x))


def _masked(ctx, gradients, condition):
    """gradients * (0 or 1) as TensorFlow computes it, so a NaN or inf gradient outside the mask
    gives NaN. Written as a select of gradients * 0: XLA rewrites a product with a converted
    predicate into a select of 0, which would lose the NaN."""
    return ctx.jnp.where(condition, gradients, gradients * const(ctx, 0, gradients))


@lowering("ReluGrad", supports=_real)
def relu_grad(ctx, gradients, features):
    return _masked(ctx, gradients, features > const(ctx, 0, features))


@lowering("Relu6Grad", supports=_real)
def relu6_grad(ctx, gradients, features):
    inside = (features > const(ctx, 0, features)) & (features < const(ctx, 6, features))
    return _masked(ctx, gradients, inside)


@lowering("LeakyReluGrad", supports=_float)
def leaky_relu_grad(ctx, gradients, features):
    alpha = const(ctx, ctx.attr("alpha", 0.2), gradients)
    return ctx.jnp.where(features > const(ctx, 0, features), gradients, gradients * alpha)


@lowering("EluGrad", supports=_float)
def elu_grad(ctx, gradients, outputs):
    return ctx.jnp.where(outputs < const(ctx, 0, outputs), (outputs + const(ctx, 1, outputs)) * gradients, gradients)


@lowering("SeluGrad", supports=_float)
def selu_grad(ctx, gradients, outputs):
    negative = gradients * (outputs + const(ctx, SELU_SCALE_ALPHA, outputs))
    return ctx.jnp.where(outputs < const(ctx, 0, outputs), negative, gradients * const(ctx, SELU_SCALE, gradients))


@lowering("SoftplusGrad", supports=_float)
def softplus_grad(ctx, gradients, features):
    return gradients / (ctx.jnp.exp(-features) + const(ctx, 1, features))


@lowering("SoftsignGrad", supports=_float)
def softsign_grad(ctx, gradients, features):
    denominator = const(ctx, 1, features) + ctx.jnp.abs(features)
    return gradients / (denominator * denominator)


# --- bias -----------------------------------------------------------------------------------

def _bias_axis(ctx, ndim: int) -> int:
    return 1 if ctx.attr("data_format", "NHWC") == "NCHW" else ndim - 1


@lowering("BiasAdd", "BiasAddV1", supports=_real)
def bias_add(ctx, value, bias):
    axis = _bias_axis(ctx, value.ndim) if ctx.node.op == "BiasAdd" else value.ndim - 1
    return value + bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))


@lowering("BiasAddGrad", supports=_real)
def bias_add_grad(ctx, out_backprop):
    axis = _bias_axis(ctx, out_backprop.ndim)
    others = tuple(i for i in range(out_backprop.ndim) if i != axis)
    return ctx.jnp.sum(out_backprop, axis=others, dtype=out_backprop.dtype)


# --- softmax and losses ---------------------------------------------------------------------

def _shifted(ctx, logits):
    return logits - ctx.jnp.max(logits, axis=-1, keepdims=True)


@lowering("Softmax", supports=_float)
def softmax(ctx, logits):
    if logits.size == 0:
        return logits
    exp = ctx.jnp.exp(_shifted(ctx, logits))
    return exp / ctx.jnp.sum(exp, axis=-1, keepdims=True)


@lowering("LogSoftmax", supports=_float)
def log_softmax(ctx, logits):
    if logits.size == 0:
        return logits
    shifted = _shifted(ctx, logits)
    return shifted - ctx.jnp.log(ctx.jnp.sum(ctx.jnp.exp(shifted), axis=-1, keepdims=True))


@lowering("SoftmaxCrossEntropyWithLogits", supports=_float)
def softmax_cross_entropy_with_logits(ctx, features, labels):
    jnp = ctx.jnp
    shape = np.broadcast_shapes(features.shape, labels.shape)
    logits, targets = jnp.broadcast_to(features, shape), jnp.broadcast_to(labels, shape)
    if logits.size == 0:
        return jnp.zeros(shape[0], logits.dtype), jnp.zeros(shape, logits.dtype)
    shifted = _shifted(ctx, logits)
    exp = jnp.exp(shifted)
    total = jnp.sum(exp, axis=-1, keepdims=True)
    loss = jnp.sum(targets * (jnp.log(total) - shifted), axis=-1)
    return loss, exp / total - targets


@lowering("L2Loss", supports=_float)
def l2_loss(ctx, t):
    return ctx.jnp.sum(t * t) / const(ctx, 2, t)


# --- batch normalization --------------------------------------------------------------------

def _batch_norm_supported(node) -> str | None:
    return _float(node) or (None if node.attr("data_format", "NHWC") in ("NHWC", "NCHW") else
                            f"{node.op} with data_format {node.attr('data_format')} has no lowering")


@lowering("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", supports=_batch_norm_supported)
def fused_batch_norm(ctx, x, scale, offset, mean, variance):
    jnp = ctx.jnp
    axis = 1 if ctx.attr("data_format", "NHWC") == "NCHW" else x.ndim - 1
    vector_shape = (-1,) + (1,) * (x.ndim - 1 - axis)
    reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
    epsilon = const(ctx, ctx.attr("epsilon", 1e-4), x)
    extra = (jnp.zeros((), ctx.out_dtype(5)),) if ctx.node.op == "FusedBatchNormV3" else ()
    depth = x.shape[axis]
    if x.size == 0:   # the interpreter's (TensorFlow's) answer: NaN statistics, zero reserves
        nan = jnp.full(depth, np.nan, ctx.out_dtype(1))
        zeros = jnp.zeros(depth, ctx.out_dtype(1))
        return (jnp.zeros(x.shape, x.dtype), nan, nan, zeros, zeros, *extra)
    if not ctx.attr("is_training", True):
        scaling = const(ctx, 1, variance) / jnp.sqrt(variance + epsilon) * scale
        y = (x - mean.reshape(vector_shape)) * scaling.reshape(vector_shape) + offset.reshape(vector_shape)
        return (y, mean, variance, mean, variance, *extra)
    per_channel = x.size // depth
    inverse_count = np.asarray(1, x.dtype) / np.asarray(per_channel, x.dtype)   # rounded, as TF's rest_size_inv
    batch_mean = jnp.sum(x, axis=reduce_axes) * inverse_count
    centered = x - batch_mean.reshape(vector_shape)
    batch_variance = jnp.sum(centered * centered, axis=reduce_axes) * inverse_count
    scaling = const(ctx, 1, x) / jnp.sqrt(batch_variance + epsilon) * scale
    y = centered * scaling.reshape(vector_shape) + offset.reshape(vector_shape)
    corrected = batch_variance * const(ctx, per_channel / max(per_channel - 1, 1), x)
    factor = ctx.attr("exponential_avg_factor", 1.0)
    running_mean = batch_mean
    if factor != 1:
        keep = 1 - factor
        running_mean = const(ctx, keep, x) * mean + const(ctx, factor, x) * batch_mean
        corrected = const(ctx, keep, x) * variance + const(ctx, factor, x) * corrected
    return (y, running_mean, corrected, batch_mean, batch_variance, *extra)
