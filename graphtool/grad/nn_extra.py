"""Gradients of the nn ops real graphs add to the common set (TensorFlow's array_grad.py and
nn_grad.py): the space/depth/batch rearrangements, whose gradients are their inverses (index
inputs such as block_shape, paddings and crops get none), and fake quantization."""
from __future__ import annotations

from .op_utils import emit, input_shape_tensor, int_const, mul
from .registry import gradient, not_differentiable


@gradient("SpaceToDepth", "DepthToSpace")
def _depth_rearrangement_grad(ctx, grads):
    inverse = "DepthToSpace" if ctx.node.op == "SpaceToDepth" else "SpaceToDepth"
    return [emit(ctx, inverse, grads[0], block_size=ctx.attr("block_size"),
                 data_format=ctx.attr("data_format"))]


@gradient("SpaceToBatchND")
def _space_to_batch_grad(ctx, grads):
    return [emit(ctx, "BatchToSpaceND", grads[0], ctx.input(1), ctx.input(2)), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_grad(ctx, grads):
    return [emit(ctx, "SpaceToBatchND", grads[0], ctx.input(1), ctx.input(2)), None, None]


# --- fake quantization (TensorFlow's array_grad.py): the straight-through estimator, done by
# each op's gradient kernel ------------------------------------------------------------------

@gradient("FakeQuantWithMinMaxArgs")
def _fake_quant_args_grad(ctx, grads):
    attrs = {name: ctx.attr(name) for name in ("min", "max", "num_bits", "narrow_range")}
    return [emit(ctx, "FakeQuantWithMinMaxArgsGradient", grads[0], ctx.input(0), **attrs)]


@gradient("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")
def _fake_quant_vars_grad(ctx, grads):
    attrs = {name: ctx.attr(name) for name in ("num_bits", "narrow_range")}
    return list(emit(ctx, f"{ctx.node.op}Gradient", grads[0], ctx.input(0), ctx.input(1), ctx.input(2),
                     **attrs))


# --- 3-D convolution and pooling (TensorFlow's nn_grad.py) ----------------------------------

def _attrs(ctx, *names) -> dict:
    return {name: ctx.attr(name) for name in names}


_CONV3D = ("strides", "padding", "data_format", "dilations")
_POOL3D = ("ksize", "strides", "padding", "data_format")


@gradient("Conv3D")
def _conv3d_grad(ctx, grads):
    attrs, image, kernel = _attrs(ctx, *_CONV3D), ctx.input(0), ctx.input(1)
    return [emit(ctx, "Conv3DBackpropInputV2", input_shape_tensor(ctx, 0), kernel, grads[0], **attrs),
            emit(ctx, "Conv3DBackpropFilterV2", image, input_shape_tensor(ctx, 1), grads[0], **attrs)]


@gradient("Conv3DBackpropInputV2")
def _conv3d_backprop_input_grad(ctx, grads):
    """Linear in filter and out_backprop: a filter gradient and a forward convolution."""
    attrs, kernel, out_backprop = _attrs(ctx, *_CONV3D), ctx.input(1), ctx.input(2)
    return [None, emit(ctx, "Conv3DBackpropFilterV2", grads[0], input_shape_tensor(ctx, 1), out_backprop, **attrs),
            emit(ctx, "Conv3D", grads[0], kernel, **attrs)]


@gradient("Conv3DBackpropFilterV2")
def _conv3d_backprop_filter_grad(ctx, grads):
    attrs, image, out_backprop = _attrs(ctx, *_CONV3D), ctx.input(0), ctx.input(2)
    return [emit(ctx, "Conv3DBackpropInputV2", input_shape_tensor(ctx, 0), grads[0], out_backprop, **attrs),
            None, emit(ctx, "Conv3D", image, grads[0], **attrs)]


@gradient("MaxPool3D")
def _max_pool3d_grad(ctx, grads):
    return [emit(ctx, "MaxPool3DGrad", ctx.input(0), ctx.output(0), grads[0], **_attrs(ctx, *_POOL3D))]


@gradient("AvgPool3D")
def _avg_pool3d_grad(ctx, grads):
    return [emit(ctx, "AvgPool3DGrad", input_shape_tensor(ctx, 0), grads[0], **_attrs(ctx, *_POOL3D))]


@gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(ctx, grads):
    return [None, emit(ctx, "AvgPool3D", grads[0], **_attrs(ctx, *_POOL3D))]


# QuantizeAndDequantize V2/V3 pass the gradient straight through; V4 only inside [min, max].
@gradient("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3")
def _quantize_and_dequantize_grad(ctx, grads):
    return [grads[0], None, None] + ([None] if ctx.node.op == "QuantizeAndDequantizeV3" else [])


@gradient("QuantizeAndDequantizeV4")
def _quantize_and_dequantize_v4_grad(ctx, grads):
    return list(emit(ctx, "QuantizeAndDequantizeV4Grad", grads[0], ctx.input(0), ctx.input(1), ctx.input(2),
                     axis=ctx.attr("axis")))


# --- CTC (TensorFlow's ctc_ops.py) ----------------------------------------------------------
not_differentiable("CTCGreedyDecoder", "CTCBeamSearchDecoder")


@gradient("CTCLoss")
def _ctc_loss_grad(ctx, grads):
    """The loss gradient the op computed, scaled per batch entry by the incoming gradient (the
    gradient output's own gradient is ignored, as in TensorFlow)."""
    scale = emit(ctx, "ExpandDims", grads[0], int_const(ctx.b, -1))
    return [mul(ctx, scale, ctx.output(1)), None, None, None]


# --- Dilation2D: gradients to the maximum's input element and filter tap ---------------------
@gradient("Dilation2D")
def _dilation2d_grad(ctx, grads):
    attrs = _attrs(ctx, "strides", "rates", "padding")
    image, kernel = ctx.input(0), ctx.input(1)
    return [emit(ctx, "Dilation2DBackpropInput", image, kernel, grads[0], **attrs),
            emit(ctx, "Dilation2DBackpropFilter", image, kernel, grads[0], **attrs)]
