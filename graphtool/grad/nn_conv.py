"""Gradients of convolutions, pooling, batch and local response normalization and image resizing
(TensorFlow's nn_grad.py and image_grad.py semantics), built from the backward kernels
(Conv2DBackpropInput/Filter, MaxPoolGrad, AvgPoolGrad, FusedBatchNormGrad*, LRNGrad, ...).

A convolution is bilinear in (input, filter), and each backward kernel is linear in its two
tensor operands, so the gradients of the backward kernels are again convolutions and backward
kernels with the roles exchanged.
"""
from __future__ import annotations

from ..errors import RuntimeFailure
from ..shapes import has_rank
from .op_utils import INDEX, emit, grad_or_zeros, input_shape_tensor, int_const, static_value, zeros_like
from .registry import GradContext, gradient


def _copy_attrs(ctx: GradContext, *names: str) -> dict:
    return {name: ctx.attr(name) for name in names}


# --- convolutions ------------------------------------------------------------------------------

_CONV_ATTRS = ("strides", "padding", "explicit_paddings", "data_format", "dilations")
# Forward convolution -> (its input-gradient kernel, its filter-gradient kernel, extra attrs).
_CONVOLUTIONS = {
    "Conv2D": ("Conv2DBackpropInput", "Conv2DBackpropFilter", ("use_cudnn_on_gpu",)),
    "DepthwiseConv2dNative": ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", ()),
}
_FORWARD_OF = {kernel: forward for forward, (inp, filt, _) in _CONVOLUTIONS.items() for kernel in (inp, filt)}


def _conv_family(op: str) -> tuple[str, str, str, tuple[str, ...]]:
    forward = _FORWARD_OF.get(op, op)
    backprop_input, backprop_filter, extra = _CONVOLUTIONS[forward]
    return forward, backprop_input, backprop_filter, extra


def _conv_attrs(ctx: GradContext) -> dict:
    _, _, _, extra = _conv_family(ctx.node.op)
    return _copy_attrs(ctx, *_CONV_ATTRS, *extra)


@gradient(*_CONVOLUTIONS)
def _conv_grad(ctx, grads):
    _, backprop_input, backprop_filter, _ = _conv_family(ctx.node.op)
    attrs, g = _conv_attrs(ctx), grads[0]
    image, kernel = ctx.input(0), ctx.input(1)
    return [emit(ctx, backprop_input, input_shape_tensor(ctx, 0), kernel, g, **attrs),
            emit(ctx, backprop_filter, image, input_shape_tensor(ctx, 1), g, **attrs)]


@gradient(*(inp for inp, _, _ in _CONVOLUTIONS.values()))
def _conv_backprop_input_grad(ctx, grads):
    """z = BackpropInput(sizes, filter, dy) is the transpose of convolving with filter: its
    dy-gradient convolves g with the filter, its filter-gradient correlates g with dy."""
    forward, _, backprop_filter, _ = _conv_family(ctx.node.op)
    attrs, g = _conv_attrs(ctx), grads[0]
    kernel, dy = ctx.input(1), ctx.input(2)
    return [None, emit(ctx, backprop_filter, g, input_shape_tensor(ctx, 1), dy, **attrs),
            emit(ctx, forward, g, kernel, **attrs)]


@gradient(*(filt for _, filt, _ in _CONVOLUTIONS.values()))
def _conv_backprop_filter_grad(ctx, grads):
    forward, backprop_input, _, _ = _conv_family(ctx.node.op)
    attrs, g = _conv_attrs(ctx), grads[0]
    image, dy = ctx.input(0), ctx.input(2)
    return [emit(ctx, backprop_input, input_shape_tensor(ctx, 0), g, dy, **attrs), None,
            emit(ctx, forward, image, g, **attrs)]


# --- pooling -----------------------------------------------------------------------------------

_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


@gradient("MaxPool")
def _max_pool_grad(ctx, grads):
    attrs = _copy_attrs(ctx, *_POOL_ATTRS, "explicit_paddings")
    return [emit(ctx, "MaxPoolGrad", ctx.input(0), ctx.output(0), grads[0], **attrs)]


@gradient("MaxPoolV2")
def _max_pool_v2_grad(ctx, grads):
    attrs = _copy_attrs(ctx, "padding", "data_format")
    return [emit(ctx, "MaxPoolGradV2", ctx.input(0), ctx.output(0), grads[0], ctx.input(1), ctx.input(2), **attrs),
            None, None]


def _window_attr(ctx: GradContext, name: str, slot: int | None) -> list[int]:
    """ksize or strides: the attr, or (MaxPoolGradV2) the constant value of input `slot`."""
    if slot is None:
        return list(ctx.attr(name))
    value = static_value(ctx, slot)
    if value is None:
        raise RuntimeFailure(f"node '{ctx.node.name}' ({ctx.node.op}): its gradient needs constant {name}")
    return [int(v) for v in value.reshape(-1)]


def _to_nhwc(ctx: GradContext, value, data_format: str):
    return emit(ctx, "Transpose", value, int_const(ctx.b, [0, 2, 3, 1])) if data_format == "NCHW" else value


def _from_nhwc(ctx: GradContext, value, data_format: str):
    return emit(ctx, "Transpose", value, int_const(ctx.b, [0, 3, 1, 2])) if data_format == "NCHW" else value


def _nhwc_window(window: list[int], data_format: str) -> list[int]:
    return [window[0], window[2], window[3], window[1]] if data_format == "NCHW" else window


@gradient("MaxPoolGrad", "MaxPoolGradV2")
def _max_pool_grad_grad(ctx, grads):
    """MaxPoolGrad routes each window's dy to the window's maximum, so its gradient reads g at
    each window's maximum: MaxPoolWithArgmax finds those positions (flat over the batch) and a
    gather reads them. orig_input and orig_output only choose positions: zeros for them."""
    v2 = ctx.node.op == "MaxPoolGradV2"
    data_format = ctx.attr("data_format")
    if ctx.attr("padding") == "EXPLICIT":
        raise RuntimeFailure(f"node '{ctx.node.name}' ({ctx.node.op}): no gradient with EXPLICIT padding")
    ksize = _nhwc_window(_window_attr(ctx, "ksize", 3 if v2 else None), data_format)
    strides = _nhwc_window(_window_attr(ctx, "strides", 4 if v2 else None), data_format)
    _, argmax = emit(ctx, "MaxPoolWithArgmax", _to_nhwc(ctx, ctx.input(0), data_format), ksize=ksize,
                    strides=strides, padding=ctx.attr("padding"), include_batch_in_index=True)
    flat_grad = emit(ctx, "Reshape", _to_nhwc(ctx, grads[0], data_format), int_const(ctx.b, [-1]))
    picked = emit(ctx, "GatherV2", flat_grad, argmax, int_const(ctx.b, 0))
    gg = _from_nhwc(ctx, picked, data_format)
    rest = [None, None] if v2 else []
    return [zeros_like(ctx, ctx.input(0)), zeros_like(ctx, ctx.input(1)), gg, *rest]


@gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(ctx, grads):
    """Scatter-add each window's gradient at its argmax (flat NHWC positions, offset by the batch
    index times H*W*C unless the batch is already included)."""
    b, x = ctx.b, ctx.input(0)
    g = grad_or_zeros(ctx, grads, 0)
    argmax = emit(ctx, "Cast", ctx.output(1), DstT="int64")
    shape = emit(ctx, "Shape", x, out_type="int64")
    if not ctx.attr("include_batch_in_index"):
        image_dims = emit(ctx, "Slice", shape, int_const(b, [1]), int_const(b, [3]))
        per_image = emit(ctx, "Prod", image_dims, int_const(b, 0))
        batch = emit(ctx, "Range", b.const(0, dtype="int64"), emit(ctx, "StridedSlice", shape, int_const(b, [0]),
                    int_const(b, [1]), int_const(b, [1]), shrink_axis_mask=1), b.const(1, dtype="int64"))
        offsets = emit(ctx, "Reshape", emit(ctx, "Mul", batch, per_image), int_const(b, [-1, 1, 1, 1]))
        argmax = emit(ctx, "AddV2", argmax, offsets)
    size = emit(ctx, "Reshape", emit(ctx, "Size", x, out_type="int64"), int_const(b, [1]))
    scattered = emit(ctx, "ScatterNd", emit(ctx, "Reshape", argmax, int_const(b, [-1, 1])),
                    emit(ctx, "Reshape", g, int_const(b, [-1])), size)
    return [emit(ctx, "Reshape", scattered, shape)]


@gradient("AvgPool")
def _avg_pool_grad(ctx, grads):
    return [emit(ctx, "AvgPoolGrad", input_shape_tensor(ctx, 0), grads[0], **_copy_attrs(ctx, *_POOL_ATTRS))]


@gradient("AvgPoolGrad")
def _avg_pool_grad_grad(ctx, grads):
    # AvgPoolGrad spreads each window's value evenly; its adjoint averages the windows again.
    return [None, emit(ctx, "AvgPool", grads[0], **_copy_attrs(ctx, *_POOL_ATTRS))]


# --- normalization -----------------------------------------------------------------------------

_BATCH_NORM_GRAD_OP = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
                       "FusedBatchNormV3": "FusedBatchNormGradV3"}


@gradient(*_BATCH_NORM_GRAD_OP)
def _fused_batch_norm_grad(ctx, grads):
    """dx, dscale and doffset from the saved statistics: the batch's (reserve spaces) when
    training, the population mean and variance inputs in inference. As in TensorFlow, only y's
    gradient is used (not that of the batch mean/variance outputs), and mean and variance
    inputs get none."""
    op = ctx.node.op
    training = ctx.attr("is_training")
    saved = [ctx.output(3), ctx.output(4)] if training else [ctx.input(3), ctx.input(4)]
    if op == "FusedBatchNormV3":
        saved.append(ctx.output(5))
    dx, dscale, doffset, _, _ = emit(ctx, _BATCH_NORM_GRAD_OP[op], grad_or_zeros(ctx, grads, 0), ctx.input(0),
                                    ctx.input(1), *saved, epsilon=ctx.attr("epsilon"),
                                    data_format=ctx.attr("data_format"), is_training=training)
    return [dx, dscale, doffset, None, None]


@gradient("LRN")
def _lrn_grad(ctx, grads):
    attrs = _copy_attrs(ctx, "depth_radius", "bias", "alpha", "beta")
    return [emit(ctx, "LRNGrad", grads[0], ctx.input(0), ctx.output(0), **attrs)]


# --- resizing ----------------------------------------------------------------------------------

def _spatial_size(ctx: GradContext, i: int):
    """Forward input i's [height, width] (NHWC) as an int32 vector."""
    shape = ctx.input_shape(i)
    if has_rank(shape) and shape[1] is not None and shape[2] is not None:
        return int_const(ctx.b, [shape[1], shape[2]])
    full = emit(ctx, "Shape", ctx.input(i), out_type=INDEX)
    return emit(ctx, "Slice", full, int_const(ctx.b, [1]), int_const(ctx.b, [2]))


_RESIZE_ATTRS = ("align_corners", "half_pixel_centers")


@gradient("ResizeBilinear")
def _resize_bilinear_grad(ctx, grads):
    # ResizeBilinear's output (and so its gradient) is float32 whatever the image type.
    return [emit(ctx, "ResizeBilinearGrad", grads[0], ctx.input(0), **_copy_attrs(ctx, *_RESIZE_ATTRS)), None]


@gradient("ResizeBilinearGrad")
def _resize_bilinear_grad_grad(ctx, grads):
    """ResizeBilinearGrad is the adjoint of resizing to the grads' size, so its own adjoint is
    that resize (TensorFlow declares it not differentiable)."""
    resized = emit(ctx, "ResizeBilinear", grads[0], _spatial_size(ctx, 0), **_copy_attrs(ctx, *_RESIZE_ATTRS))
    return [resized, None]


@gradient("ResizeNearestNeighbor")
def _resize_nearest_grad(ctx, grads):
    return [emit(ctx, "ResizeNearestNeighborGrad", grads[0], _spatial_size(ctx, 0),
                **_copy_attrs(ctx, *_RESIZE_ATTRS)), None]


@gradient("ResizeNearestNeighborGrad")
def _resize_nearest_grad_grad(ctx, grads):
    resized = emit(ctx, "ResizeNearestNeighbor", grads[0], _spatial_size(ctx, 0),
                   **_copy_attrs(ctx, *_RESIZE_ATTRS))
    return [resized, None]
