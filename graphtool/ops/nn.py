"""Neural-network ops: activations and their gradients, bias, softmax, batch normalization, LRN,
losses, image resizing, InTopKV2 and the remapper's _FusedMatMul. Sibling modules, imported here and
registered under this family: nn_conv (convolution and pooling), nn_volume (3-D pooling, Conv3D
backprops), nn_space (space/depth/batch moves), nn_quant (fake and real quantization), nn_dilation
(Dilation2D) and nn_ctc (CTC loss and decoders).

Shape functions reproduce TensorFlow's C++ ones (nn_ops.cc, image_ops.cc, common_shape_fns.cc),
including what they infer from partially known shapes.
"""
from __future__ import annotations

from ..shapes import Shape, ShapeError, has_rank
from .inference import InferenceContext, broadcast_binary, merge_all, scalar, unchanged
from . import nn_ctc, nn_dilation, nn_quant, nn_space, nn_volume  # noqa: F401  (registration)
from .nn_conv import DATA_FORMAT, FLOAT_TYPES, REAL_TYPES, data_layout, merge_dim
from .registry import register

# TensorFlow's numbertypes (BiasAdd accepts the quantized and complex ones too).
_NUMBER_TYPES = ("{float32, float64, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
                 "qint32, bfloat16, qint16, quint16, uint16, complex128, float16, uint32, uint64}")
_RELU_TYPES = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, float16, "
               "uint32, uint64, qint8}")


# --- shape functions ------------------------------------------------------------------------

def _merge_gradient_and_input(ctx: InferenceContext) -> Shape:
    """Activation gradients: the incoming gradient and the saved tensor have one shape."""
    return merge_all(ctx, (0, 1))


def _softmax_shape(ctx: InferenceContext) -> Shape:
    return ctx.with_rank_at_least(0, 1)


def _bias_axis(ctx: InferenceContext) -> tuple[int, int]:
    """(channel axis, minimum rank): NCHW puts the channels at axis 1 of a value of rank >= 3;
    NHWC (and BiasAddV1, which has no data_format) puts them last."""
    return (1, 3) if ctx.attr("data_format", "NHWC") == "NCHW" else (-1, 2)


def _bias_add_shape(ctx: InferenceContext) -> Shape:
    axis, min_rank = _bias_axis(ctx)
    value = ctx.with_rank_at_least(0, min_rank)
    bias = ctx.with_rank(1, 1)
    if not has_rank(value):
        return Shape.unknown()
    dims = list(value.dims)
    dims[axis] = merge_dim(ctx, dims[axis], bias[0])
    return Shape(dims)


def _bias_add_grad_shape(ctx: InferenceContext) -> Shape:
    axis, min_rank = _bias_axis(ctx)
    return Shape([ctx.with_rank_at_least(0, min_rank)[axis]])


def _fused_batch_norm_shapes(ctx: InferenceContext) -> list[Shape]:
    """y like x; batch mean, variance and the saved statistics are [channels]."""
    layout = data_layout(ctx)
    x = ctx.with_rank(0, layout.rank)
    # Training computes the statistics from the batch; the mean and variance inputs (usually
    # empty) only matter, and are only checked, when inferring or blending a running average.
    uses_statistics = not ctx.attr("is_training") or ctx.attr("exponential_avg_factor") != 1.0
    channels = layout.get(x, "C")
    for index in range(1, 5 if uses_statistics else 3):
        channels = merge_dim(ctx, channels, ctx.with_rank(index, 1)[0])
    vector = Shape([channels])
    # V3's reserve_space_3 is backend-specific scratch space: TensorFlow leaves it unknown.
    extra = [Shape.unknown()] * (ctx.num_outputs - 5)
    return [layout.replace(x, "C", channels), vector, vector, vector, vector, *extra]


def _fused_batch_norm_grad_shapes(ctx: InferenceContext) -> list[Shape]:
    """x_backprop like y_backprop; scale and offset gradients are [channels]."""
    layout = data_layout(ctx)
    grad, x = ctx.with_rank(0, layout.rank), ctx.with_rank(1, layout.rank)
    channels = merge_dim(ctx, layout.get(grad, "C"), layout.get(x, "C"))
    for index in (2, 3, 4):   # scale and the two saved statistics
        channels = merge_dim(ctx, channels, ctx.with_rank(index, 1)[0])
    vector = Shape([channels])
    # The last two outputs are unused placeholders that TensorFlow declares empty.
    return [layout.replace(grad, "C", channels), vector, vector, Shape([0]), Shape([0])]


def _lrn_grad_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(0, 4)
    merged = merge_all(ctx)
    try:
        return merged.with_rank(4)
    except ShapeError:
        ctx.fail(f"input shapes must have rank 4, got {merged}")


def _softmax_cross_entropy_shapes(ctx: InferenceContext) -> list[Shape]:
    """loss [batch] and backprop [batch, classes]. Labels normally have the logits' shape; when
    they do not, they are broadcast against the logits, and the result must be a matrix."""
    try:
        logits = ctx.shape(0).with_rank(2).merge(ctx.shape(1))
    except ShapeError:
        logits = broadcast_binary(ctx)
        if logits.rank != 2:
            rank = "unknown" if logits.rank is None else logits.rank
            ctx.fail(f"Shape must be broadcasted with rank 2, but is rank {rank}")
    return [Shape([logits[0]]), logits]


def _batch_dim(ctx: InferenceContext) -> tuple[Shape, int | None]:
    """For ops taking a [batch, classes] matrix and [batch] labels: (matrix shape, batch)."""
    matrix, labels = ctx.with_rank(0, 2), ctx.with_rank(1, 1)
    return matrix, merge_dim(ctx, matrix[0], labels[0])


def _sparse_softmax_cross_entropy_shapes(ctx: InferenceContext) -> list[Shape]:
    logits, batch = _batch_dim(ctx)
    return [Shape([batch]), Shape([batch, logits[1]])]


def _in_top_k_shape(ctx: InferenceContext) -> Shape:
    return Shape([_batch_dim(ctx)[1]])


def _resize_shape(ctx: InferenceContext) -> Shape:
    """ResizeBilinear, ResizeNearestNeighbor and ResizeNearestNeighborGrad: input 0's batch and
    channels, height and width from the value of the 2-element `size` input. Like TensorFlow,
    a size known only in part gives no height or width at all."""
    image = ctx.with_rank(0, 4)
    length = ctx.with_rank(1, 1)[0]
    if length not in (None, 2):
        ctx.fail(f"Dimension must be 2 but is {length}")
    size = ctx.int_list(1)
    height, width = (None, None) if size is None else size
    return Shape([image[0], height, width, image[3]])


def _like_input1(ctx: InferenceContext) -> Shape:
    return ctx.shape(1)


def _matmul_shape(ctx: InferenceContext) -> Shape:
    """[rows of a, columns of b] after the optional transposes; the inner dims must agree."""
    a, b = ctx.with_rank(0, 2), ctx.with_rank(1, 2)
    rows, inner_a = (a[1], a[0]) if ctx.attr("transpose_a") else (a[0], a[1])
    inner_b, cols = (b[1], b[0]) if ctx.attr("transpose_b") else (b[0], b[1])
    merge_dim(ctx, inner_a, inner_b)
    return Shape([rows, cols])


# --- registrations --------------------------------------------------------------------------

def _args(type_name: str, *names: str) -> list[str]:
    return [f"{name}: {type_name}" for name in names]


_ALPHA = "alpha: float = 0.2"

for _name, _types in (("Relu", _RELU_TYPES), ("Relu6", REAL_TYPES), ("Elu", FLOAT_TYPES),
                      ("Selu", FLOAT_TYPES), ("Softplus", FLOAT_TYPES), ("Softsign", FLOAT_TYPES)):
    register(_name, inputs=["features: T"], outputs=["activations: T"], attrs=[f"T: {_types}"],
             shape=unchanged)
register("LeakyRelu", inputs=["features: T"], outputs=["activations: T"],
         attrs=[_ALPHA, f"T: {FLOAT_TYPES} = float32"], shape=unchanged)

# Gradients take the forward op's input (features) or, where cheaper, its output (outputs).
for _name, _types, _saved in (("ReluGrad", REAL_TYPES, "features"), ("Relu6Grad", REAL_TYPES, "features"),
                              ("EluGrad", FLOAT_TYPES, "outputs"), ("SeluGrad", FLOAT_TYPES, "outputs"),
                              ("SoftplusGrad", FLOAT_TYPES, "features"),
                              ("SoftsignGrad", FLOAT_TYPES, "features")):
    register(_name, inputs=["gradients: T", f"{_saved}: T"], outputs=["backprops: T"],
             attrs=[f"T: {_types}"], shape=_merge_gradient_and_input)
register("LeakyReluGrad", inputs=["gradients: T", "features: T"], outputs=["backprops: T"],
         attrs=[_ALPHA, f"T: {FLOAT_TYPES} = float32"], shape=_merge_gradient_and_input)

register("Softmax", inputs=["logits: T"], outputs=["softmax: T"], attrs=[f"T: {FLOAT_TYPES}"],
         shape=_softmax_shape)
register("LogSoftmax", inputs=["logits: T"], outputs=["logsoftmax: T"], attrs=[f"T: {FLOAT_TYPES}"],
         shape=_softmax_shape)

register("BiasAdd", inputs=["value: T", "bias: T"], outputs=["output: T"],
         attrs=[f"T: {_NUMBER_TYPES}", DATA_FORMAT], shape=_bias_add_shape)
register("BiasAddV1", inputs=["value: T", "bias: T"], outputs=["output: T"],
         attrs=[f"T: {_NUMBER_TYPES}"], shape=_bias_add_shape)
register("BiasAddGrad", inputs=["out_backprop: T"], outputs=["output: T"],
         attrs=[f"T: {_NUMBER_TYPES}", DATA_FORMAT], shape=_bias_add_grad_shape)

_BN_STATISTICS_IN = ("scale", "offset", "mean", "variance")
_BN_STATISTICS_OUT = ("batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")
_BN_ATTRS = ["epsilon: float = 0.0001", "is_training: bool = true"]
_BN_FORWARD_ATTRS = [*_BN_ATTRS, "exponential_avg_factor: float = 1.0"]
_BN_TYPES = "T: {float16, bfloat16, float32}"
_BN_ANY_FORMAT = "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'"
register("FusedBatchNorm", inputs=_args("T", "x", *_BN_STATISTICS_IN),
         outputs=_args("T", "y", *_BN_STATISTICS_OUT),
         attrs=["T: {float32}", *_BN_FORWARD_ATTRS, DATA_FORMAT], shape=_fused_batch_norm_shapes)
register("FusedBatchNormV2", inputs=["x: T", *_args("U", *_BN_STATISTICS_IN)],
         outputs=["y: T", *_args("U", *_BN_STATISTICS_OUT)],
         attrs=[_BN_TYPES, "U: {float32}", *_BN_FORWARD_ATTRS, DATA_FORMAT],
         shape=_fused_batch_norm_shapes)
register("FusedBatchNormV3", inputs=["x: T", *_args("U", *_BN_STATISTICS_IN)],
         outputs=["y: T", *_args("U", *_BN_STATISTICS_OUT, "reserve_space_3")],
         attrs=[_BN_TYPES, "U: {bfloat16, float32}", *_BN_FORWARD_ATTRS, _BN_ANY_FORMAT],
         shape=_fused_batch_norm_shapes)

_BN_GRAD_OUT = ("scale_backprop", "offset_backprop")
register("FusedBatchNormGrad",
         inputs=_args("T", "y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"),
         outputs=_args("T", "x_backprop", *_BN_GRAD_OUT, "reserve_space_3", "reserve_space_4"),
         attrs=["T: {float32}", *_BN_ATTRS, DATA_FORMAT], shape=_fused_batch_norm_grad_shapes)
register("FusedBatchNormGradV2",
         inputs=["y_backprop: T", "x: T", "scale: float32",
                 *_args("U", "reserve_space_1", "reserve_space_2")],
         outputs=["x_backprop: T", *_args("U", *_BN_GRAD_OUT, "reserve_space_3", "reserve_space_4")],
         attrs=[_BN_TYPES, "U: {float32}", *_BN_ATTRS, DATA_FORMAT],
         shape=_fused_batch_norm_grad_shapes)
register("FusedBatchNormGradV3",
         inputs=["y_backprop: T", "x: T", "scale: float32",
                 *_args("U", "reserve_space_1", "reserve_space_2", "reserve_space_3")],
         outputs=["x_backprop: T", *_args("U", *_BN_GRAD_OUT, "reserve_space_4", "reserve_space_5")],
         attrs=[_BN_TYPES, "U: {float32}", *_BN_ATTRS, _BN_ANY_FORMAT],
         shape=_fused_batch_norm_grad_shapes)

_LRN_ATTRS = ["depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0", "beta: float = 0.5",
              "T: {float16, bfloat16, float32} = float32"]
register("LRN", inputs=["input: T"], outputs=["output: T"], attrs=_LRN_ATTRS,
         shape=lambda ctx: ctx.with_rank(0, 4))
register("LRNGrad", inputs=["input_grads: T", "input_image: T", "output_image: T"],
         outputs=["output: T"], attrs=_LRN_ATTRS, shape=_lrn_grad_shape)

register("SoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: T"],
         outputs=["loss: T", "backprop: T"], attrs=[f"T: {FLOAT_TYPES}"],
         shape=_softmax_cross_entropy_shapes)
register("SparseSoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: Tlabels"],
         outputs=["loss: T", "backprop: T"],
         attrs=[f"T: {FLOAT_TYPES}", "Tlabels: {int32, int64} = int64"],
         shape=_sparse_softmax_cross_entropy_shapes)
register("L2Loss", inputs=["t: T"], outputs=["output: T"], attrs=[f"T: {FLOAT_TYPES}"], shape=scalar)
register("InTopKV2", inputs=["predictions: float32", "targets: T", "k: T"], outputs=["precision: bool"],
         attrs=["T: {int32, int64} = int32"], shape=_in_top_k_shape)

_RESIZE_ATTRS = ["align_corners: bool = false", "half_pixel_centers: bool = false"]
# TensorFlow's own list for ResizeBilinear names bfloat16 twice; kept so the signatures compare equal.
register("ResizeBilinear", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
         attrs=["T: {int8, uint8, int16, uint16, int32, int64, bfloat16, float16, float32, float64, "
                "bfloat16}",
                *_RESIZE_ATTRS],
         shape=_resize_shape)
register("ResizeNearestNeighbor", inputs=["images: T", "size: int32"], outputs=["resized_images: T"],
         attrs=["T: {int8, uint8, int16, uint16, int32, int64, float16, float32, float64, bfloat16}",
                *_RESIZE_ATTRS],
         shape=_resize_shape)
register("ResizeBilinearGrad", inputs=["grads: float32", "original_image: T"], outputs=["output: T"],
         attrs=["T: {float32, bfloat16, float16, float64}", *_RESIZE_ATTRS], shape=_like_input1)
register("ResizeNearestNeighborGrad", inputs=["grads: T", "size: int32"], outputs=["output: T"],
         attrs=["T: {uint8, int8, int32, float16, float32, float64, bfloat16}", *_RESIZE_ATTRS],
         shape=_resize_shape)

# Produced by TensorFlow's remapper (and later by ours): MatMul followed by fused_ops such as
# BiasAdd and Relu, whose extra operands arrive in `args`.
register("_FusedMatMul", inputs=["a: T", "b: T", "args: num_args * T"], outputs=["product: T"],
         attrs=["transpose_a: bool = false", "transpose_b: bool = false", "T: {bfloat16, float16, float32}",
                "num_args: int >= 0", "fused_ops: list(string) = []", "epsilon: float = 0.0001",
                "leakyrelu_alpha: float = 0.2"],
         shape=_matmul_shape)
