"""Grayscale morphological dilation (imported by nn.py, registered as family "nn"): Dilation2D
and its two backprops. The filter [rows, cols, depth] slides like a depthwise convolution's, with
`rates` as its dilation; TensorFlow's Dilation2DShape sizes the output."""
from __future__ import annotations

from functools import partial

from ..shapes import Shape
from . import registry
from .inference import InferenceContext
from .nn_conv import REAL_TYPES, Layout, merge_dim, read_window

register = partial(registry.register, family="nn")
NHWC = Layout("NHWC")


def _dilation_shape(ctx: InferenceContext) -> Shape:
    image, kernel = ctx.with_rank(0, 4), ctx.with_rank(1, 3)
    depth = merge_dim(ctx, image[3], kernel[2])
    window = read_window(ctx, NHWC, [kernel[0], kernel[1]], ctx.attr("strides"), ctx.attr("rates"))
    return Shape([image[0], *window.output_sizes(ctx, [image[1], image[2]]), depth])


_ATTRS = [f"T: {REAL_TYPES}", "strides: list(int) >= 4", "rates: list(int) >= 4", "padding: {'SAME', 'VALID'}"]

register("Dilation2D", inputs=["input: T", "filter: T"], outputs=["output: T"], attrs=_ATTRS, shape=_dilation_shape)
register("Dilation2DBackpropInput", inputs=["input: T", "filter: T", "out_backprop: T"], outputs=["in_backprop: T"],
         attrs=_ATTRS, shape=lambda ctx: ctx.with_rank(0, 4))
register("Dilation2DBackpropFilter", inputs=["input: T", "filter: T", "out_backprop: T"],
         outputs=["filter_backprop: T"], attrs=_ATTRS, shape=lambda ctx: ctx.with_rank(1, 3))
