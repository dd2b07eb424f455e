"""Fake quantization ops (imported by nn.py, registered as family "nn"): FakeQuantWithMinMaxArgs,
FakeQuantWithMinMaxVars, FakeQuantWithMinMaxVarsPerChannel and their gradient kernels. All take
and give float32; the per-channel variants quantize the last dim, which must match min and max.
"""
from __future__ import annotations

from functools import partial

from ..shapes import Shape
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
    depth = data[-1] if data.known_rank else None
    for i in (first, first + 1):
        depth = merge_dim(ctx, depth, ctx.with_rank(i, 1)[0])
    return depth


def _per_channel_shape(ctx: InferenceContext) -> Shape:
    data = ctx.with_rank_at_least(0, 1)
    if data.known_rank and data.rank > 4:
        ctx.fail(f"Shape must be at most rank 4 but is rank {data.rank}")
    depth = _channels(ctx, data, 1)
    return Shape(list(data.dims[:-1]) + [depth]) if data.known_rank else data


def _per_channel_gradient_shapes(ctx: InferenceContext) -> list[Shape]:
    data = merge_all(ctx, [0, 1])
    if data.known_rank and not 1 <= data.rank <= 4:
        ctx.fail(f"Shape must be rank 1 to 4 but is rank {data.rank}")
    depth = _channels(ctx, data, 2)
    return [Shape(list(data.dims[:-1]) + [depth]) if data.known_rank else data, Shape([depth]), Shape([depth])]


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
