"""Fake quantization ops (imported by nn.py, registered as family "nn"): FakeQuantWithMinMaxArgs,
FakeQuantWithMinMaxVars, FakeQuantWithMinMaxVarsPerChannel and their gradient kernels. All take
and give float32; the per-channel variants quantize the last dim, which must match min and max.
"""
from __future__ import annotations

from functools import partial

from ..shapes import Shape, has_rank
from . import registry
from .inference import InferenceContext, merge_all
from .nn_conv import merge_dim

register = partial(registry.register, family="nn")


def _scalar_range(ctx: InferenceContext, first: int) -> None:
    ctx.with_rank(first, 0)
    ctx.with_rank(first + 1, 0)


def _vars_shape(ctx: InferenceContext) -> Shape:
    _scalar_range(ctx, 1)
    return ctx.shape(0)


def _vars_gradient_shapes(ctx: InferenceContext) -> list[Shape]:
    _scalar_range(ctx, 2)
    return [merge_all(ctx, [0, 1]), Shape.scalar(), Shape.scalar()]


def _channels(ctx: InferenceContext, data: Shape, first: int):
    """The channel count: the last dim of `data` merged with the sizes of min and max."""
    depth = data[-1] if has_rank(data) else None
    for i in (first, first + 1):
        depth = merge_dim(ctx, depth, ctx.with_rank(i, 1)[0])
    return depth


def _per_channel_shape(ctx: InferenceContext) -> Shape:
    data = ctx.with_rank_at_least(0, 1)
    if has_rank(data) and data.rank > 4:
        ctx.fail(f"Shape must be at most rank 4 but is rank {data.rank}")
    depth = _channels(ctx, data, 1)
    return Shape(list(data.dims[:-1]) + [depth]) if has_rank(data) else data


def _per_channel_gradient_shapes(ctx: InferenceContext) -> list[Shape]:
    data = merge_all(ctx, [0, 1])
    if has_rank(data) and not 1 <= data.rank <= 4:
        ctx.fail(f"Shape must be rank 1 to 4 but is rank {data.rank}")
    depth = _channels(ctx, data, 2)
    return [Shape(list(data.dims[:-1]) + [depth]) if has_rank(data) else data, Shape([depth]), Shape([depth])]


_BITS = ["num_bits: int = 8", "narrow_range: bool = false"]
_ARGS = ["min: float = -6", "max: float = 6", *_BITS]

register("FakeQuantWithMinMaxArgs", inputs=["inputs: float32"], outputs=["outputs: float32"], attrs=_ARGS,
         shape=lambda ctx: ctx.shape(0))
register("FakeQuantWithMinMaxArgsGradient", inputs=["gradients: float32", "inputs: float32"],
         outputs=["backprops: float32"], attrs=_ARGS, shape=merge_all)
register("FakeQuantWithMinMaxVars", inputs=["inputs: float32", "min: float32", "max: float32"],
         outputs=["outputs: float32"], attrs=_BITS, shape=_vars_shape)
register("FakeQuantWithMinMaxVarsGradient",
         inputs=["gradients: float32", "inputs: float32", "min: float32", "max: float32"],
         outputs=["backprops_wrt_input: float32", "backprop_wrt_min: float32", "backprop_wrt_max: float32"],
         attrs=_BITS, shape=_vars_gradient_shapes)
register("FakeQuantWithMinMaxVarsPerChannel", inputs=["inputs: float32", "min: float32", "max: float32"],
         outputs=["outputs: float32"], attrs=_BITS, shape=_per_channel_shape)
register("FakeQuantWithMinMaxVarsPerChannelGradient",
         inputs=["gradients: float32", "inputs: float32", "min: float32", "max: float32"],
         outputs=["backprops_wrt_input: float32", "backprop_wrt_min: float32", "backprop_wrt_max: float32"],
         attrs=_BITS, shape=_per_channel_gradient_shapes)


# --- QuantizeAndDequantize (V2, V3, V4): a float tensor rounded to num_bits levels ---------

def _qdq_shape(ctx: InferenceContext, range_inputs=(1, 2)) -> Shape:
    """The input's shape; min and max are scalars, or vectors of the `axis` dim's size."""
    data = ctx.shape(0)
    axis = ctx.attr("axis", -1)
    if axis < -1:
        ctx.fail(f"axis should be at least -1, got {axis}")
    if axis == -1:
        for i in range_inputs:
            ctx.with_rank(i, 0)
        return data
    if has_rank(data) and axis >= data.rank:
        ctx.fail(f"axis {axis} is out of range for a rank-{data.rank} input")
    depth = data[axis] if has_rank(data) else None
    for i in range_inputs:
        depth = merge_dim(ctx, depth, ctx.with_rank(i, 1)[0])
    return data if not has_rank(data) else Shape([depth if i == axis else d for i, d in enumerate(data.dims)])


def _qdq_v4_grad_shapes(ctx: InferenceContext) -> list[Shape]:
    data = merge_all(ctx, [0, 1])
    axis = ctx.attr("axis", -1)
    if axis == -1:
        ranges = [ctx.with_rank(2, 0), ctx.with_rank(3, 0)]
    else:
        ranges = [ctx.with_rank(2, 1), ctx.with_rank(3, 1)]
    return [data, *ranges]


_QDQ_TYPES = "T: {bfloat16, float16, float32, float64}"
_QDQ_COMMON = ["signed_input: bool = true", "range_given: bool = false"]
_ROUND_MODE = "round_mode: {'HALF_TO_EVEN', 'HALF_UP'} = 'HALF_TO_EVEN'"
_QDQ_ATTRS = [*_QDQ_COMMON[:1], "num_bits: int = 8", *_QDQ_COMMON[1:], _QDQ_TYPES, _ROUND_MODE,
              "narrow_range: bool = false", "axis: int = -1"]

register("QuantizeAndDequantizeV2", inputs=["input: T", "input_min: T", "input_max: T"], outputs=["output: T"],
         attrs=_QDQ_ATTRS, shape=_qdq_shape)
register("QuantizeAndDequantizeV4", inputs=["input: T", "input_min: T", "input_max: T"], outputs=["output: T"],
         attrs=_QDQ_ATTRS, shape=_qdq_shape)
register("QuantizeAndDequantizeV3", inputs=["input: T", "input_min: T", "input_max: T", "num_bits: int32"],
         outputs=["output: T"],
         attrs=[_QDQ_COMMON[0], "range_given: bool = true", _QDQ_TYPES, "narrow_range: bool = false",
                "axis: int = -1"],
         shape=lambda ctx: (ctx.with_rank(3, 0), _qdq_shape(ctx))[1])
register("QuantizeAndDequantizeV4Grad", inputs=["gradients: T", "input: T", "input_min: T", "input_max: T"],
         outputs=["input_backprop: T", "input_min_backprop: T", "input_max_backprop: T"],
         attrs=[_QDQ_TYPES, "axis: int = -1"], shape=_qdq_v4_grad_shapes)


# --- QuantizeV2 / Dequantize: float <-> quantized integer types ------------------------------

def _quantize_range_shapes(ctx: InferenceContext, data: Shape) -> Shape:
    """Scalar ranges, or vectors of the axis dim's size when `axis` is set."""
    axis = ctx.attr("axis", -1)
    if axis == -1:
        ctx.with_rank(1, 0)
        ctx.with_rank(2, 0)
        return Shape.scalar()
    if has_rank(data) and not 0 <= axis < data.rank:
        ctx.fail(f"axis {axis} is out of range for a rank-{data.rank} input")
    depth = data[axis] if has_rank(data) else None
    for i in (1, 2):
        depth = merge_dim(ctx, depth, ctx.with_rank(i, 1)[0])
    return Shape([depth])


def _quantize_v2_shapes(ctx: InferenceContext) -> list[Shape]:
    ranges = _quantize_range_shapes(ctx, ctx.shape(0))
    return [ctx.shape(0), ranges, ranges]


def _dequantize_shape(ctx: InferenceContext) -> Shape:
    _quantize_range_shapes(ctx, ctx.shape(0))
    return ctx.shape(0)


_QUANTIZED = "T: {qint8, quint8, qint32, qint16, quint16}"
_MODE = "mode: {'MIN_COMBINED', 'MIN_FIRST', 'SCALED'} = 'MIN_COMBINED'"

register("QuantizeV2", inputs=["input: float32", "min_range: float32", "max_range: float32"],
         outputs=["output: T", "output_min: float32", "output_max: float32"],
         attrs=[_QUANTIZED, _MODE, "round_mode: {'HALF_AWAY_FROM_ZERO', 'HALF_TO_EVEN'} = 'HALF_AWAY_FROM_ZERO'",
                "narrow_range: bool = false", "axis: int = -1", "ensure_minimum_range: float = 0.01"],
         shape=_quantize_v2_shapes)
register("Dequantize", inputs=["input: T", "min_range: float32", "max_range: float32"], outputs=["output: dtype"],
         attrs=[_QUANTIZED, _MODE, "narrow_range: bool = false", "axis: int = -1",
                "dtype: {bfloat16, float32} = float32"],
         shape=_dequantize_shape)
