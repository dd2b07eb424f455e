"""Activation kernels and their gradients, with TensorFlow's formulas (relu_op_functor.h,
softplus_op.h, softsign_op.h): the same comparisons at the kinks (ReluGrad and Relu6Grad pass
nothing at exactly 0 or 6, LeakyReluGrad passes alpha at 0), multiplication by a 0/1 mask where
TensorFlow multiplies (so a NaN or inf gradient stays NaN), exp(x) - 1 rather than expm1, and
TensorFlow's float-rounded SELU constants.
"""
from __future__ import annotations

import numpy as np

from .math_common import flush_denormals
from .nn_common import finfo
from .registry import kernel

# SELU's scale and scale * alpha as tensorflow/core/kernels/relu_op_functor.h spells them.
SELU_SCALE = 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def _mask(condition, like):
    """A boolean condition as 0/1 in `like`'s dtype, for TensorFlow's `gradients * mask`."""
    return condition.astype(like.dtype)


def _exp_minus_one(xp, x):
    """exp(x) - 1 on the negative part only (the positive part is never used, and would overflow)."""
    return xp.exp(xp.minimum(x, 0)) - 1


@kernel("Relu")
def relu(ctx, features):
    return ctx.xp.maximum(features, 0)      # NaN stays NaN, as Eigen's cwiseMax(0) gives


@kernel("Relu6")
def relu6(ctx, features):
    return ctx.xp.minimum(ctx.xp.maximum(features, 0), 6)


@kernel("LeakyRelu")
def leaky_relu(ctx, features, *, alpha):
    # A select, not max(x, alpha * x): TensorFlow gives alpha * x for x <= 0 even when alpha > 1.
    return ctx.xp.where(features > 0, features, features * alpha)


@kernel("Elu")
def elu(ctx, features):
    return ctx.xp.where(features < 0, _exp_minus_one(ctx.xp, features), features)


@kernel("Selu")
def selu(ctx, features):
    negative = _exp_minus_one(ctx.xp, features) * SELU_SCALE_ALPHA
    return ctx.xp.where(features < 0, negative, features * SELU_SCALE)


def _softplus_threshold(dtype) -> float:
    """log(epsilon) + 2 in the dtype: below it softplus(x) = exp(x), above its negation x."""
    return float(np.log(finfo(dtype).eps.astype(np.float64)) + 2)


@kernel("Softplus")
def softplus(ctx, features):
    xp = ctx.xp
    threshold = features.dtype.type(_softplus_threshold(features.dtype))
    exp = xp.exp(xp.minimum(features, -threshold))
    return flush_denormals(xp, xp.where(features > -threshold, features,
                                        xp.where(features < threshold, exp, xp.log1p(exp))))


@kernel("Softsign")
def softsign(ctx, features):
    return features / (1 + ctx.xp.abs(features))


# --- gradients ------------------------------------------------------------------------------

@kernel("ReluGrad")
def relu_grad(ctx, gradients, features):
    return gradients * _mask(features > 0, gradients)


@kernel("Relu6Grad")
def relu6_grad(ctx, gradients, features):
    return gradients * _mask((features > 0) & (features < 6), gradients)


@kernel("LeakyReluGrad")
def leaky_relu_grad(ctx, gradients, features, *, alpha):
    return ctx.xp.where(features > 0, gradients, gradients * alpha)


@kernel("EluGrad")
def elu_grad(ctx, gradients, outputs):
    return ctx.xp.where(outputs < 0, (outputs + 1) * gradients, gradients)


@kernel("SeluGrad")
def selu_grad(ctx, gradients, outputs):
    return ctx.xp.where(outputs < 0, gradients * (outputs + SELU_SCALE_ALPHA), gradients * SELU_SCALE)


@kernel("SoftplusGrad")
def softplus_grad(ctx, gradients, features):
    # exp(-x) overflows to inf for very negative x: the gradient is then 0
    return gradients / (ctx.xp.exp(-features) + 1)


@kernel("SoftsignGrad")
def softsign_grad(ctx, gradients, features):
    denominator = 1 + ctx.xp.abs(features)
    return gradients / (denominator * denominator)
