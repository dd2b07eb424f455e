"""3-D pooling and the Conv3D backprops (imported by nn.py, registered as family "nn"):
MaxPool3D, AvgPool3D, MaxPool3DGrad, AvgPool3DGrad, Conv3DBackpropInputV2 and
Conv3DBackpropFilterV2. Shapes come from nn_conv's window arithmetic (TensorFlow's Pool3DShape
pools only the spatial dims) or from the size inputs' values.
"""
from __future__ import annotations

from functools import partial

from . import registry
from .inference import InferenceContext
from .nn_conv import _avg_pool_shape as spatial_pool_shape
from .nn_conv import shape_from_input

register = partial(registry.register, family="nn")

_FORMAT = "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'"
_WINDOW = ["ksize: list(int) >= 5", "strides: list(int) >= 5", "padding: {'SAME', 'VALID'}", _FORMAT]
_CONV = ["strides: list(int) >= 5", "padding: {'SAME', 'VALID'}", _FORMAT, "dilations: list(int) = [1, 1, 1, 1, 1]"]
_HALF_AND_FLOAT = "{float16, bfloat16, float32}"


def _like_input0_rank5(ctx: InferenceContext):
    return ctx.with_rank(0, 5)


register("MaxPool3D", inputs=["input: T"], outputs=["output: T"], attrs=[*_WINDOW, f"T: {_HALF_AND_FLOAT}"],
         shape=spatial_pool_shape)
register("AvgPool3D", inputs=["input: T"], outputs=["output: T"],
         attrs=[*_WINDOW, "T: {float16, bfloat16, float32, float64}"], shape=spatial_pool_shape)
register("MaxPool3DGrad", inputs=["orig_input: TInput", "orig_output: TInput", "grad: T"], outputs=["output: T"],
         attrs=[*_WINDOW, f"T: {_HALF_AND_FLOAT} = float32", f"TInput: {_HALF_AND_FLOAT} = float32"],
         shape=_like_input0_rank5)
register("AvgPool3DGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
         attrs=[*_WINDOW, "T: {float16, bfloat16, float32, float64}"], shape=shape_from_input(0, 5))
register("Conv3DBackpropInputV2", inputs=["input_sizes: Tshape", "filter: T", "out_backprop: T"],
         outputs=["output: T"],
         attrs=["T: {float16, bfloat16, float32, float64}", *_CONV, "Tshape: {int32, int64} = int32"],
         shape=shape_from_input(0, 5))
register("Conv3DBackpropFilterV2", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
         outputs=["output: T"], attrs=["T: {float16, bfloat16, float32, float64}", *_CONV],
         shape=shape_from_input(1, 5))
