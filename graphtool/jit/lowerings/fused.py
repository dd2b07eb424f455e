"""Lowerings of the remapper's fused ops (_FusedConv2D, _FusedMatMul: `dftool optimize` makes
them), as the interpreter computes them (kernels/nn_fused.py): the convolution or product, then
BiasAdd (or, for a convolution, FusedBatchNorm in inference form with the node's epsilon), then
optionally one activation. Each step is the unfused op's lowering, so XLA fuses them again.
"""
from __future__ import annotations

from .common import const, lowering
from .conv import conv2d, conv_supported
from .math import matmul

_CONV_ACTIVATIONS = ("Relu", "Relu6", "Elu", "LeakyRelu")
_MATMUL_ACTIVATIONS = _CONV_ACTIVATIONS + ("Tanh", "Sigmoid")


def _activation(ctx, name: str, x):
    jnp, zero = ctx.jnp, const(ctx, 0, x)
    if name == "Relu":
        return jnp.maximum(x, zero)
    if name == "Relu6":
        return jnp.minimum(jnp.maximum(x, zero), const(ctx, 6, x))
    if name == "Elu":
        return jnp.where(x < zero, jnp.exp(jnp.minimum(x, zero)) - const(ctx, 1, x), x)
    if name == "LeakyRelu":
        return jnp.where(x > zero, x, x * const(ctx, ctx.attr("leakyrelu_alpha", 0.2), x))
    if name == "Tanh":
        return jnp.tanh(x)
    return const(ctx, 1, x) / (const(ctx, 1, x) + jnp.exp(-x))   # Sigmoid, the interpreter's formula


def _fusion_problem(node, firsts, activations) -> str | None:
    fused = list(node.attr("fused_ops", []) or [])
    first, rest = (fused[0] if fused else ""), fused[1:]
    if first not in firsts or len(rest) > 1 or (rest and rest[0] not in activations):
        return f"{node.op} with fused_ops {fused} has no lowering"
    if node.attr("num_host_args", 0):
        return f"{node.op} with host args has no lowering"
    return None


def _fused_conv_supported(node) -> str | None:
    if node.attr("filter_format", "HWIO") not in ("HWIO", "OIHW"):
        return f"_FusedConv2D with filter_format {node.attr('filter_format')} has no lowering"
    return conv_supported(node) or _fusion_problem(node, ("BiasAdd", "FusedBatchNorm"), _CONV_ACTIVATIONS)


@lowering("_FusedConv2D", supports=_fused_conv_supported)
def fused_conv2d(ctx, image, filt, *args):
    if ctx.attr("filter_format", "HWIO") == "OIHW":
        filt = ctx.jnp.transpose(filt, (2, 3, 1, 0))
    value = conv2d(ctx, image, filt)
    channels_first = ctx.attr("data_format", "NHWC") == "NCHW"
    shape = (-1, 1, 1) if channels_first else (-1,)
    first, *activation = ctx.attr("fused_ops")
    args = args[:ctx.attr("num_args")]
    if first == "BiasAdd":
        value = value + args[0].reshape(shape)
    else:
        scale, offset, mean, variance = args
        epsilon = const(ctx, ctx.attr("epsilon", 1e-4), variance)
        scaling = const(ctx, 1, variance) / ctx.jnp.sqrt(variance + epsilon) * scale
        value = (value - mean.reshape(shape)) * scaling.reshape(shape) + offset.reshape(shape)
    return _activation(ctx, activation[0], value) if activation else value


def _fused_matmul_supported(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    if dtype.kind != "f":
        return f"_FusedMatMul on {dtype} has no lowering"
    return _fusion_problem(node, ("BiasAdd",), _MATMUL_ACTIVATIONS)


@lowering("_FusedMatMul", supports=_fused_matmul_supported)
def fused_matmul(ctx, a, b, *args):
    first, *activation = ctx.attr("fused_ops")
    value = matmul(ctx, a, b) + args[0]
    return _activation(ctx, activation[0], value) if activation else value
