"""GPU kernels of the image ops whose kernels are host code: non-max suppression (a sequential
greedy loop), the codecs (Pillow, strings), the colour adjustments (per-pixel HSV round trips in
numpy), and crop-and-resize, bicubic and area resizing (the
scatters use np.add.at). Inputs are brought to the host, the CPU kernel runs there, and outputs
the device can hold go back up; strings stay in host memory as TensorFlow keeps them.
TensorFlow runs its NMS on the GPU too, with the same selection; these are small tensors.
"""
from __future__ import annotations

import inspect

import numpy as np

from . import image, image_codec, image_color, image_nms
from .gpu_host_memory import device_holds, host_context
from .registry import GPU, kernel


def _on_host(fn):
    def run(ctx, *inputs, **attrs):
        host_inputs = [x if isinstance(x, np.ndarray) or np.isscalar(x) else ctx.xp.asnumpy(x) for x in inputs]
        result = fn(host_context(ctx), *host_inputs, **attrs)
        outputs = result if isinstance(result, tuple) else (result,)
        uploaded = tuple(ctx.xp.asarray(v) if device_holds(np.asarray(v).dtype) else v for v in outputs)
        return uploaded if isinstance(result, tuple) else uploaded[0]
    run.__signature__ = inspect.signature(fn)   # the registry reads the attr names from it
    return run


for _op, _fn, _expensive in (
        ("CropAndResize", image.crop_and_resize, True),
        ("CropAndResizeGradImage", image.crop_and_resize_grad_image, True),
        ("CropAndResizeGradBoxes", image.crop_and_resize_grad_boxes, True),
        ("ResizeBicubic", image.resize_bicubic, True), ("ResizeBicubicGrad", image.resize_bicubic_grad, True),
        ("ResizeArea", image.resize_area, True),
        ("NonMaxSuppression", image_nms.non_max_suppression, False),
        ("NonMaxSuppressionV2", image_nms.non_max_suppression_v2, False),
        ("NonMaxSuppressionV3", image_nms.non_max_suppression_v3, False),
        ("NonMaxSuppressionV4", image_nms.non_max_suppression_v4, False),
        ("NonMaxSuppressionV5", image_nms.non_max_suppression_v5, False),
        ("CombinedNonMaxSuppression", image_nms.combined_non_max_suppression, False),
        ("DecodePng", image_codec.decode_png, False), ("DecodeJpeg", image_codec.decode_jpeg, False),
        ("EncodePng", image_codec.encode_png, False),
        ("AdjustContrastv2", image_color.adjust_contrast_v2, False),
        ("AdjustSaturation", image_color.adjust_saturation, False), ("AdjustHue", image_color.adjust_hue, False)):
    kernel(_op, devices=(GPU,), expensive=_expensive)(_on_host(_fn))
