"""Gradients of the nn activations, softmax and losses, BiasAdd and L2Loss (TensorFlow's
nn_grad.py semantics). Convolutions, pooling, normalization and resizing are in nn_conv.py.

Activations use their dedicated backward kernels (ReluGrad, EluGrad, ...); those kernels have
gradients here too, so a gradient graph can be differentiated again.
"""
from __future__ import annotations

from .op_utils import emit, fused_grad, input_shape_tensor, int_const, mul, scalar, zeros_like
from .registry import GradContext, gradient, not_differentiable

not_differentiable("InTopKV2")


# Activation -> (backward kernel, the forward value it takes, attrs it copies). The kernels take
# (dy, value); which value follows TensorFlow (ReluGrad and EluGrad the output, the rest the input).
_ACTIVATIONS = {
    "Relu": ("ReluGrad", "output", ()),
    "Relu6": ("Relu6Grad", "input", ()),
    "Elu": ("EluGrad", "output", ()),
    "Selu": ("SeluGrad", "output", ()),
    "LeakyRelu": ("LeakyReluGrad", "input", ("alpha",)),
    "Softplus": ("SoftplusGrad", "input", ()),
    "Softsign": ("SoftsignGrad", "input", ()),
}
for _name, (_kernel, _value, _attrs) in _ACTIVATIONS.items():
    gradient(_name)(fused_grad(_kernel, forward=_value, grad_first=True, attrs=_attrs))


# --- second derivatives of the activation backward kernels -------------------------------------
# Each kernel computes z = dy * h(v) for the saved value v: its dy-gradient is the same kernel
# applied to the incoming gradient g, its v-gradient is g * dy * h'(v).

def _kernel_again(ctx: GradContext, g):
    attrs = {"alpha": ctx.attr("alpha")} if ctx.node.op == "LeakyReluGrad" else {}
    return emit(ctx, ctx.node.op, g, ctx.input(1), **attrs)


@gradient("ReluGrad", "Relu6Grad", "LeakyReluGrad")
def _piecewise_linear_kernel_grad(ctx, grads):
    # h is piecewise constant: no gradient for the saved value (zeros, as TensorFlow gives).
    return [_kernel_again(ctx, grads[0]), zeros_like(ctx, ctx.input(1))]


@gradient("EluGrad", "SeluGrad")
def _exponential_kernel_grad(ctx, grads):
    """Below zero EluGrad is dy * (y + 1) and SeluGrad dy * (y + scale * alpha), both with slope
    dy in the saved output y; above zero h is constant."""
    g, dy, y = grads[0], ctx.input(0), ctx.input(1)
    negative = emit(ctx, "Less", y, scalar(ctx, 0.0, y))
    return [_kernel_again(ctx, g), emit(ctx, "SelectV2", negative, mul(ctx, g, dy), scalar(ctx, 0.0, y))]


@gradient("SoftplusGrad")
def _softplus_kernel_grad(ctx, grads):
    # h = sigmoid(x), h' = sigmoid(x) (1 - sigmoid(x)) = 1 / (e^-x + 2 + e^x).
    g, dy, x = grads[0], ctx.input(0), ctx.input(1)
    exp_plus_two = emit(ctx, "AddV2", emit(ctx, "Exp", emit(ctx, "Neg", x)), scalar(ctx, 2.0, x))
    denominator = emit(ctx, "AddV2", exp_plus_two, emit(ctx, "Exp", x))
    return [_kernel_again(ctx, g), emit(ctx, "RealDiv", mul(ctx, g, dy), denominator)]


@gradient("SoftsignGrad")
def _softsign_kernel_grad(ctx, grads):
    # h = 1 / (1 + |x|)^2, h' = -2 sign(x) / (1 + |x|)^3.
    g, dy, x = grads[0], ctx.input(0), ctx.input(1)
    one_plus_abs = emit(ctx, "AddV2", scalar(ctx, 1.0, x), emit(ctx, "Abs", x))
    slope = emit(ctx, "RealDiv", mul(ctx, scalar(ctx, -2.0, x), emit(ctx, "Sign", x)),
                emit(ctx, "Pow", one_plus_abs, scalar(ctx, 3.0, x)))
    return [_kernel_again(ctx, g), mul(ctx, mul(ctx, g, dy), slope)]


# --- softmax and losses ------------------------------------------------------------------------

def _sum_last(ctx: GradContext, value):
    return emit(ctx, "Sum", value, int_const(ctx.b, -1), keep_dims=True)


def _softmax_backward(ctx: GradContext, g, softmax):
    """The gradient through softmax: (g - sum(g * softmax)) * softmax along the last axis."""
    return mul(ctx, emit(ctx, "Sub", g, _sum_last(ctx, mul(ctx, g, softmax))), softmax)


@gradient("Softmax")
def _softmax_grad(ctx, grads):
    return [_softmax_backward(ctx, grads[0], ctx.output(0))]


@gradient("LogSoftmax")
def _log_softmax_grad(ctx, grads):
    g = grads[0]
    return [emit(ctx, "Sub", g, mul(ctx, _sum_last(ctx, g), emit(ctx, "Exp", ctx.output(0))))]


def _cross_entropy_logits_grad(ctx: GradContext, grads, loss_partial):
    """The logits gradient of both softmax cross-entropy ops: the loss gradient times
    `loss_partial()` (d loss / d logits), plus, when the backprop output (softmax - labels) is
    differentiated too, that gradient through the softmax (labels are constant in the logits)."""
    loss_grad, backprop_grad = grads[0], grads[1]
    terms = []
    if loss_grad is not None:
        terms.append(mul(ctx, emit(ctx, "ExpandDims", loss_grad, int_const(ctx.b, -1)), loss_partial()))
    if backprop_grad is not None:
        terms.append(_softmax_backward(ctx, backprop_grad, emit(ctx, "Softmax", ctx.input(0))))
    return terms[0] if len(terms) == 1 else emit(ctx, "AddV2", *terms)


@gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_cross_entropy_grad(ctx, grads):
    """loss = -sum(labels * log_softmax(logits)), so d loss / d logits = softmax * sum(labels) -
    labels, which is the saved backprop (softmax - labels) when each row of labels sums to 1
    (TensorFlow uses the backprop as is; this is the derivative for any labels). The labels
    gradient is -log_softmax(logits) * loss_grad - backprop_grad (TensorFlow omits the second
    term), summed back when the labels were broadcast."""
    loss_grad, backprop_grad = grads[0], grads[1]
    logits, labels = ctx.input(0), ctx.input(1)

    def loss_partial():
        return emit(ctx, "Sub", mul(ctx, emit(ctx, "Softmax", logits), _sum_last(ctx, labels)), labels)
    labels_terms = []
    if loss_grad is not None:
        neg_log_softmax = emit(ctx, "Neg", emit(ctx, "LogSoftmax", logits))
        labels_terms.append(mul(ctx, emit(ctx, "ExpandDims", loss_grad, int_const(ctx.b, -1)), neg_log_softmax))
    if backprop_grad is not None:
        labels_terms.append(emit(ctx, "Neg", backprop_grad))
    labels_grad = labels_terms[0] if len(labels_terms) == 1 else emit(ctx, "AddV2", *labels_terms)
    return [_cross_entropy_logits_grad(ctx, grads, loss_partial), ctx.sum_to_input(1, labels_grad)]


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_cross_entropy_grad(ctx, grads):
    # One-hot labels sum to 1: the saved backprop is exactly d loss / d logits.
    return [_cross_entropy_logits_grad(ctx, grads, lambda: ctx.output(1)), None]


@gradient("L2Loss")
def _l2_loss_grad(ctx, grads):
    # L2Loss = sum(x^2) / 2.
    return [mul(ctx, ctx.input(0), grads[0])]


# --- bias --------------------------------------------------------------------------------------

@gradient("BiasAdd", "BiasAddV1")
def _bias_add_grad(ctx, grads):
    data_format = ctx.attr("data_format") if ctx.node.op == "BiasAdd" else "NHWC"
    return [grads[0], emit(ctx, "BiasAddGrad", grads[0], data_format=data_format)]


@gradient("BiasAddGrad")
def _bias_add_grad_grad(ctx, grads):
    """BiasAddGrad sums over every axis but the channel one; its adjoint broadcasts the channel
    vector back: channels last (NHWC) broadcast directly, NCHW is reshaped to [1, C, 1, ...]."""
    b, g = ctx.b, grads[0]
    if ctx.attr("data_format") == "NCHW":
        rank = ctx.input_shape(0).rank
        if rank is not None:
            channel_shape = int_const(b, [1, -1] + [1] * (rank - 2))
        else:
            spatial_rank = emit(ctx, "Sub", emit(ctx, "Rank", ctx.input(0)), int_const(b, 2))
            ones = emit(ctx, "Fill", emit(ctx, "Reshape", spatial_rank, int_const(b, [1])), int_const(b, 1))
            channel_shape = emit(ctx, "ConcatV2", [int_const(b, [1, -1]), ones], int_const(b, 0))
        g = emit(ctx, "Reshape", g, channel_shape)
    return [emit(ctx, "BroadcastTo", g, input_shape_tensor(ctx, 0))]
