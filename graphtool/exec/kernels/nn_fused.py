"""The remapper's fused kernels: _FusedConv2D and _FusedMatMul, a convolution or matmul followed
by the fused_ops TensorFlow's remapper folds into it, with their operands in `args`:
- "BiasAdd" (args: bias), or for _FusedConv2D "FusedBatchNorm" (args: scale, offset, mean,
  variance; inference form with the node's epsilon);
- then optionally one activation: Relu, Relu6, Elu, LeakyRelu (leakyrelu_alpha), and for
  _FusedMatMul also Tanh and Sigmoid.
The result equals running the unfused ops one after another.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .nn_activation import elu, leaky_relu, relu, relu6
from .nn_common import check_supported_format, upcast
from .nn_conv import ConvAttrs, convolve
from .nn_norm import Channels, batch_norm_inference
from .registry import kernel


# activation -> f(ctx, x, leakyrelu_alpha)
_ACTIVATIONS = {
    "Relu": lambda ctx, x, _: relu(ctx, x),
    "Relu6": lambda ctx, x, _: relu6(ctx, x),
    "Elu": lambda ctx, x, _: elu(ctx, x),
    "LeakyRelu": lambda ctx, x, alpha: leaky_relu(ctx, x, alpha=alpha),
    "Tanh": lambda ctx, x, _: ctx.xp.tanh(x),
    "Sigmoid": lambda ctx, x, _: 1 / (1 + ctx.xp.exp(-x)),
}
_ARG_COUNTS = {"BiasAdd": 1, "FusedBatchNorm": 4}     # fused op -> how many args it takes


@dataclass(frozen=True)
class Fusions:
    """The fused_ops lists a kernel implements: one of `first`, then optionally one activation
    (TensorFlow's CPU kernels: conv_ops_fused_impl.h, matmul_op_fused.cc)."""
    first: tuple[str, ...]
    activations: tuple[str, ...]

    def parse(self, ctx, fused_ops: list[str], args) -> tuple[str, str | None]:
        """(the first op, the activation or None); fails for lists TensorFlow does not implement."""
        first, *rest = fused_ops or [""]
        if first not in self.first or len(rest) > 1 or (rest and rest[0] not in self.activations):
            ctx.fail(f"Fusion is not implemented: [{','.join(fused_ops)}]")
        if len(args) != _ARG_COUNTS[first]:
            ctx.fail(f"{ctx.op} with {first} must have {_ARG_COUNTS[first]} extra argument(s), "
                     f"got {len(args)}")
        return first, rest[0] if rest else None


_CONV_FUSIONS = Fusions(("BiasAdd", "FusedBatchNorm"), ("Relu", "Relu6", "Elu", "LeakyRelu"))
_MATMUL_FUSIONS = Fusions(("BiasAdd",), ("Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"))


def _apply_fused_ops(ctx, value, args, fused_ops, fusions: Fusions, *, epsilon, leakyrelu_alpha):
    """The fused ops applied to a channels-last result `value` (compute dtype)."""
    first, activation = fusions.parse(ctx, fused_ops, args)
    args = [upcast(arg) for arg in args]
    # `value` is the kernel's own new array: where the result keeps its shape and dtype, the bias
    # and a Relu or Relu6 (the common fusions) update it in place, the same operations without a
    # new output-sized array each (fresh pages cost ~0.5 ms per 2 MiB on a busy machine).
    in_place = (first == "BiasAdd" and args[0].dtype == value.dtype
                and np.broadcast_shapes(value.shape, args[0].shape) == value.shape)
    if in_place:
        value += args[0]
    elif first == "BiasAdd":
        value = value + args[0]
    else:
        scale, offset, mean, variance = args   # (parse checked there are 4)
        value = batch_norm_inference(ctx.xp, value, scale, offset, mean, variance, epsilon, Channels(value, "NHWC"))
    if activation is None:
        return value
    if in_place and activation in ("Relu", "Relu6"):
        ctx.xp.maximum(value, 0, out=value)      # NaN stays NaN, as in relu()
        if activation == "Relu6":
            ctx.xp.minimum(value, 6, out=value)
        return value
    # Sigmoid's exp(-x) may overflow to inf, giving the right 0
    return _ACTIVATIONS[activation](ctx, value, leakyrelu_alpha)


@kernel("_FusedConv2D", expensive=True, intra_op=True)
def fused_conv2d(ctx, image, filt, *args, num_args, strides, padding, explicit_paddings, data_format,
                 filter_format, dilations, fused_ops, epsilon, leakyrelu_alpha):
    check_supported_format(ctx, data_format)
    if filter_format == "OIHW":
        filt = ctx.xp.transpose(filt, (2, 3, 1, 0))
    elif filter_format != "HWIO":
        ctx.fail(f"{ctx.op} with filter_format {filter_format} is only supported on GPU for int8 tensors")
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    value = convolve(ctx, image, filt, attrs)
    value = _apply_fused_ops(ctx, value, args[:num_args], fused_ops, _CONV_FUSIONS,
                             epsilon=epsilon, leakyrelu_alpha=leakyrelu_alpha)
    return attrs.finish(ctx, value)


@kernel("_FusedMatMul", expensive=True)
def fused_matmul(ctx, a, b, *args, transpose_a, transpose_b, num_args, fused_ops, epsilon,
                 leakyrelu_alpha):
    a, b = upcast(a), upcast(b)
    product = ctx.xp.matmul(a.T if transpose_a else a, b.T if transpose_b else b)
    value = _apply_fused_ops(ctx, product, args[:num_args], fused_ops, _MATMUL_FUSIONS, epsilon=epsilon,
                             leakyrelu_alpha=leakyrelu_alpha)
    return value.astype(ctx.out_dtype(0), copy=False)
