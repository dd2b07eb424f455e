"""Ops lowered by tracing the interpreter's own kernel with jax.numpy (common.traced_kernel):
kernels written against `xp` that read their metadata from attrs or static inputs and never write
into arrays, so the compiled op has the interpreter's semantics by construction. Each was checked
to trace (tests/jit/lowering_cases_traced.py compares it with the kernel); kernels that write in
place (Diag, LinSpace, the depthwise backprops), read traced values on the host (ReverseSequence,
AdjustHue/Saturation/Contrast, QuantizeAndDequantize) or use numpy-only views (Conv3D) are not here.
"""
from __future__ import annotations

from .common import lowering, traced_kernel


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


# Fake quantization (kernels/nn_quant.py): float32 arithmetic in TensorFlow's order.
@lowering("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVars",
          "FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannel",
          "FakeQuantWithMinMaxVarsPerChannelGradient")
def fake_quant(ctx, *inputs):
    return traced_kernel(ctx, *inputs)


# Colour-space conversions (kernels/image_color.py).
@lowering("RGBToHSV", "HSVToRGB", supports=_float)
def color_space(ctx, images):
    return traced_kernel(ctx, images)


def _channels_last(node) -> str | None:
    # The channels-first layout goes through a numpy-only contiguous copy in the kernel.
    data_format = node.attr("data_format", "NDHWC")
    return _float(node) or (None if data_format == "NDHWC" else f"{node.op} with {data_format} has no lowering")


# Windows the interpreter computes tap by tap (kernels/nn_dilation.py, nn_volume.py).
@lowering("Dilation2D", "MaxPool3D", "AvgPool3D", supports=_channels_last)
def windowed(ctx, *inputs):
    return traced_kernel(ctx, *inputs)


def _argmax_supported(node) -> str | None:
    return _float(node) or (None if node.attr("padding") in ("SAME", "VALID") else
                            f"MaxPoolWithArgmax with padding {node.attr('padding')} has no lowering")


# The first maximum of each window and its flat index (kernels/nn_pool.py).
@lowering("MaxPoolWithArgmax", supports=_argmax_supported)
def max_pool_with_argmax(ctx, image):
    return traced_kernel(ctx, image)


@lowering("DiagPart", half=True, complex_ok=True)
def diag_part(ctx, x):
    return traced_kernel(ctx, x)


@lowering("Reverse", static_inputs=(1,), half=True, complex_ok=True)
def reverse(ctx, x, dims):
    return traced_kernel(ctx, x, dims)
