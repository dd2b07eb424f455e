"""Gradients of the image family (TensorFlow's image_grad.py and array_grad.py semantics).

CropAndResize and ResizeBicubic have backward kernels. ExtractImagePatches has none: as in
TensorFlow, its gradient extracts patches of an image of pixel ids (1-based, 0 where a patch reads
padding) and adds every patch entry's gradient into the pixel it came from with
UnsortedSegmentSum. Non-max suppression selects (piecewise constant) and the codecs produce
integers or strings, so they are declared not differentiable.
"""
from __future__ import annotations

from .op_utils import emit, input_shape_tensor, int_const
from .registry import GradContext, gradient, not_differentiable

not_differentiable("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
                   "DecodePng", "DecodeJpeg", "EncodePng")

# CropAndResizeGradImage exists for these image types only.
_CROP_GRAD_IMAGE_TYPES = ("float16", "float32", "float64")


@gradient("CropAndResize")
def _crop_and_resize_grad(ctx: GradContext, grads):
    image, boxes, box_ind = ctx.input(0), ctx.input(1), ctx.input(2)
    image_grad = None
    if ctx.input_dtype(0).name in _CROP_GRAD_IMAGE_TYPES:
        image_grad = emit(ctx, "CropAndResizeGradImage", grads[0], boxes, box_ind, input_shape_tensor(ctx, 0),
                          T=ctx.input_dtype(0), method=ctx.attr("method"))
    # TensorFlow differentiates the boxes bilinearly whatever the method.
    boxes_grad = emit(ctx, "CropAndResizeGradBoxes", grads[0], image, boxes, box_ind)
    return [image_grad, boxes_grad, None, None]


@gradient("ResizeBicubic")
def _resize_bicubic_grad(ctx: GradContext, grads):
    if ctx.input_dtype(0).name not in ("float32", "float64"):
        return [None, None]
    return [emit(ctx, "ResizeBicubicGrad", grads[0], ctx.input(0), align_corners=ctx.attr("align_corners"),
                 half_pixel_centers=ctx.attr("half_pixel_centers")), None]


@gradient("ExtractImagePatches")
def _extract_image_patches_grad(ctx: GradContext, grads):
    """[B, rows, cols, k_rows * k_cols * C] gradients back onto [B, H, W, C]."""
    shape = input_shape_tensor(ctx, 0)
    height_width = emit(ctx, "Slice", shape, int_const(ctx.b, [1]), int_const(ctx.b, [2]))
    pixels = emit(ctx, "Prod", height_width, int_const(ctx.b, 0))
    one = int_const(ctx.b, 1)
    ids = emit(ctx, "Range", one, emit(ctx, "AddV2", pixels, one), one)
    id_image = emit(ctx, "Reshape", ids, emit(ctx, "ConcatV2", [int_const(ctx.b, [1]), height_width,
                                                                int_const(ctx.b, [1])], int_const(ctx.b, 0)))
    attrs = {name: ctx.attr(name) for name in ("ksizes", "strides", "rates", "padding")}
    id_patches = emit(ctx, "Reshape", emit(ctx, "ExtractImagePatches", id_image, **attrs), int_const(ctx.b, [-1]))
    batch = emit(ctx, "Slice", shape, int_const(ctx.b, [0]), int_const(ctx.b, [1]))
    channels = emit(ctx, "Slice", shape, int_const(ctx.b, [3]), int_const(ctx.b, [1]))
    # [B, rows * cols * k_rows * k_cols, C]: the middle axis runs in id_patches' order.
    flat = emit(ctx, "Reshape", grads[0], emit(ctx, "ConcatV2", [batch, int_const(ctx.b, [-1]), channels],
                                               int_const(ctx.b, 0)))
    per_entry = emit(ctx, "Transpose", flat, int_const(ctx.b, [1, 0, 2]))
    summed = emit(ctx, "UnsortedSegmentSum", per_entry, id_patches, emit(ctx, "AddV2", pixels, one))
    pixels_first = emit(ctx, "Slice", summed, int_const(ctx.b, [1, 0, 0]), int_const(ctx.b, [-1, -1, -1]))
    return [emit(ctx, "Reshape", emit(ctx, "Transpose", pixels_first, int_const(ctx.b, [1, 0, 2])), shape)]
