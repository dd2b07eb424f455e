"""Kernels of the nn family. This module holds bias, softmax, the losses, L2Loss and InTopKV2;
importing it registers the siblings too:
- nn_activation: Relu, Elu, Selu, Softplus, ... and their gradients;
- nn_conv: Conv2D, Conv3D, the 2-D backprops and the depthwise family (nn_window has the
  window geometry and strided views they share with pooling);
- nn_pool: MaxPool, AvgPool, their gradients and MaxPoolWithArgmax;
- nn_norm: FusedBatchNorm(V2, V3) and their gradients, LRN and LRNGrad;
- nn_image: ResizeBilinear, ResizeNearestNeighbor and their gradients;
- nn_fused: the remapper's _FusedConv2D and _FusedMatMul;
- nn_volume: MaxPool3D, AvgPool3D, their gradients and the Conv3D backprops;
- nn_space: SpaceToDepth, DepthToSpace, SpaceToBatchND, BatchToSpaceND;
- nn_quant: fake quantization, QuantizeAndDequantize(V2-V4), QuantizeV2 and Dequantize;
- nn_dilation: Dilation2D and its backprops;
- nn_ctc: CTCLoss and the CTC greedy and beam search decoders (host kernels).
"""
from __future__ import annotations

import numpy as np

from . import (nn_activation, nn_conv, nn_ctc, nn_dilation, nn_fused,  # noqa: F401  (registration)
               nn_image, nn_norm, nn_pool, nn_quant, nn_space, nn_volume)
from .nn_common import compute_dtype, host_ints, shape_text, upcast
from .registry import kernel


# --- bias -----------------------------------------------------------------------------------

def _bias_axis(ctx, value, data_format: str) -> int:
    if value.ndim < 2:
        ctx.fail(f"Input tensor must be at least 2D: {shape_text(value.shape)}")
    return 1 if data_format == "NCHW" else value.ndim - 1


def _add_bias(ctx, value, bias, data_format: str):
    axis = _bias_axis(ctx, value, data_format)
    if bias.ndim != 1:
        ctx.fail(f"Biases must be 1D: {shape_text(bias.shape)}")
    if bias.shape[0] != value.shape[axis]:
        ctx.fail(f"Must provide as many biases as the last dimension of the input tensor: "
                 f"{shape_text(bias.shape)} vs. {shape_text(value.shape)}")
    return value + bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))


@kernel("BiasAdd")
def bias_add(ctx, value, bias, *, data_format):
    return _add_bias(ctx, value, bias, data_format)


@kernel("BiasAddV1")
def bias_add_v1(ctx, value, bias):
    return _add_bias(ctx, value, bias, "NHWC")


@kernel("BiasAddGrad")
def bias_add_grad(ctx, out_backprop, *, data_format):
    axis = _bias_axis(ctx, out_backprop, data_format)
    others = tuple(i for i in range(out_backprop.ndim) if i != axis)
    # Integers sum in their own type (wrapping as TensorFlow's do); half floats in float32.
    total = out_backprop.sum(axis=others, dtype=compute_dtype(out_backprop.dtype))
    return total.astype(ctx.out_dtype(0), copy=False)


# --- softmax and the cross-entropy losses ------------------------------------------------------

def _shifted_logits(logits):
    """logits minus each row's maximum (the last axis), so exp() cannot overflow."""
    return logits - logits.max(axis=-1, keepdims=True)


def _check_softmax_rank(ctx, logits) -> None:
    if not 1 <= logits.ndim <= 5:
        ctx.fail("Input dims must be <= 5 and >=1")


@kernel("Softmax")
def softmax(ctx, logits):
    _check_softmax_rank(ctx, logits)
    if logits.size == 0:
        return ctx.xp.empty_like(logits)
    exp = ctx.xp.exp(_shifted_logits(upcast(logits)))
    return (exp / exp.sum(axis=-1, keepdims=True)).astype(ctx.out_dtype(0), copy=False)


@kernel("LogSoftmax")
def log_softmax(ctx, logits):
    _check_softmax_rank(ctx, logits)
    if logits.size == 0:
        return ctx.xp.empty_like(logits)
    shifted = _shifted_logits(upcast(logits))
    log_total = ctx.xp.log(ctx.xp.exp(shifted).sum(axis=-1, keepdims=True))
    return (shifted - log_total).astype(ctx.out_dtype(0), copy=False)


def _softmax_loss(ctx, logits, labels_times):
    """(loss, softmax) of 2-D logits; the loss is sum(labels * -log softmax) with the labels
    applied by `labels_times(minus_log_softmax)` -> per-row loss."""
    xp = ctx.xp
    shifted = _shifted_logits(logits)
    exp = xp.exp(shifted)
    total = exp.sum(axis=-1, keepdims=True)
    loss = labels_times(xp.log(total) - shifted)
    return loss, exp / total


@kernel("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy_with_logits(ctx, features, labels):
    xp = ctx.xp
    try:
        shape = np.broadcast_shapes(features.shape, labels.shape)
    except ValueError:
        ctx.fail(f"logits and labels must be broadcastable: logits_size={shape_text(features.shape)} "
                 f"labels_size={shape_text(labels.shape)}")
    if len(shape) != 2:
        ctx.fail("logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional")
    logits = xp.broadcast_to(upcast(features), shape)
    targets = xp.broadcast_to(upcast(labels), shape)
    if logits.size == 0:
        return xp.zeros(shape[0], ctx.out_dtype(0)), xp.zeros(shape, ctx.out_dtype(1))
    loss, probabilities = _softmax_loss(ctx, logits, lambda nll: (targets * nll).sum(axis=-1))
    backprop = probabilities - targets
    return loss.astype(ctx.out_dtype(0), copy=False), backprop.astype(ctx.out_dtype(1), copy=False)


def _check_sparse_labels(ctx, features, labels) -> None:
    if features.ndim != 2:
        ctx.fail(f"logits must be 2-D, but got shape {shape_text(features.shape)}")
    if labels.ndim != 1:
        ctx.fail(f"labels must be 1-D, but got shape {shape_text(labels.shape)}")
    if features.shape[0] != labels.shape[0]:
        ctx.fail(f"logits and labels must have the same first dimension, got logits shape "
                 f"{shape_text(features.shape)} and labels shape {shape_text(labels.shape)}")
    classes = features.shape[1]
    if classes == 0 and labels.size:
        ctx.fail(f"Must have at least one class, but got logits shape {shape_text(features.shape)}")
    if labels.size == 0:
        return
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= classes:
        values = " ".join(str(v) for v in host_ints(labels))
        ctx.fail(f"Received a label value of {low if low < 0 else high} which is outside the valid "
                 f"range of [0, {classes}).  Label values: {values}")


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy_with_logits(ctx, features, labels):
    xp = ctx.xp
    _check_sparse_labels(ctx, features, labels)
    if features.size == 0:
        return xp.zeros(features.shape[0], ctx.out_dtype(0)), xp.zeros(features.shape, ctx.out_dtype(1))
    rows = labels.astype(np.int64)[:, None]
    loss, backprop = _softmax_loss(
        ctx, upcast(features), lambda nll: xp.take_along_axis(nll, rows, axis=-1)[:, 0])
    backprop = backprop - (xp.arange(features.shape[1]) == rows)
    return loss.astype(ctx.out_dtype(0), copy=False), backprop.astype(ctx.out_dtype(1), copy=False)


# --- small reductions -----------------------------------------------------------------------

@kernel("L2Loss")
def l2_loss(ctx, t):
    values = upcast(t)
    return ctx.xp.asarray((values * values).sum() / 2, dtype=ctx.out_dtype(0))


@kernel("InTopKV2")
def in_top_k(ctx, predictions, targets, k):
    """Whether each row's target class is among its k largest predictions, ties counting in its
    favour. A target out of range, or a row with any non-finite prediction, gives False."""
    xp = ctx.xp
    if predictions.ndim != 2:
        ctx.fail(f"predictions must be 2-dimensional, got: {shape_text(predictions.shape)}")
    if targets.ndim != 1:
        ctx.fail(f"targets must be 1-dimensional, got: {shape_text(targets.shape)}")
    batch, classes = predictions.shape
    if targets.shape[0] != batch:
        ctx.fail(f"First dimension of predictions {batch} must match length of targets {targets.shape[0]}")
    in_range = (targets >= 0) & (targets < classes)
    rows = xp.where(in_range, targets, 0).astype(np.int64)[:, None]
    if classes == 0:
        return xp.zeros(batch, dtype=bool)
    target_values = xp.take_along_axis(predictions, rows, axis=1)
    more_probable = (predictions > target_values).sum(axis=1)
    finite_rows = xp.isfinite(predictions).all(axis=1)
    return in_range & finite_rows & (more_probable < k)
