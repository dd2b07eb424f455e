"""Gradients of the image family (TensorFlow's image_grad.py and array_grad.py semantics).

CropAndResize and ResizeBicubic have backward kernels; RGBToHSV's gradient is built from
element-wise ops. ExtractImagePatches has none: as in
TensorFlow, its gradient extracts patches of an image of pixel ids (1-based, 0 where a patch reads
padding) and adds every patch entry's gradient into the pixel it came from with
UnsortedSegmentSum. Non-max suppression selects (piecewise constant) and the codecs produce
integers or strings, so they are declared not differentiable.
"""
from __future__ import annotations

from .op_utils import emit, input_shape_tensor, int_const, scalar
from .registry import GradContext, gradient, not_differentiable

not_differentiable("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
                   "CombinedNonMaxSuppression",
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


@gradient("RGBToHSV")
def _rgb_to_hsv_grad(ctx: GradContext, grads):
    """Per pixel, with M and N the channels TensorFlow takes as max and min (ties: red, then
    green, win the max; blue, then green, win the min), v = M, d = M - N, s = d / v and
    h = num / (6 d) + const, where num is the difference of the two other channels in cyclic
    order. Divisions by v or d are zero where those are (the hue and saturation are constant there).
    """
    dtype = ctx.input_dtype(0)
    r, g, b = emit(ctx, "Unpack", ctx.input(0), num=3, axis=-1)
    grad_h, grad_s, grad_v = emit(ctx, "Unpack", grads[0], num=3, axis=-1)

    def mask(first, second):
        return emit(ctx, "Cast", emit(ctx, "LogicalAnd", first, second), DstT=dtype)

    def op(name, x, y):
        return emit(ctx, name, x, y)
    maxes = [mask(op("GreaterEqual", r, b), op("GreaterEqual", r, g)),
             mask(op("Greater", g, r), op("GreaterEqual", g, b)),
             mask(op("Greater", b, r), op("Greater", b, g))]
    mins = [mask(op("Less", r, b), op("Less", r, g)),
            mask(op("LessEqual", g, r), op("Less", g, b)),
            mask(op("LessEqual", b, r), op("LessEqual", b, g))]
    channels = [r, g, b]

    def weighted(weights):
        terms = [op("Mul", w, c) for w, c in zip(weights, channels)]
        return op("AddV2", op("AddV2", terms[0], terms[1]), terms[2])
    value, minimum = weighted(maxes), weighted(mins)
    spread = op("Sub", value, minimum)
    six_spread = op("Mul", scalar(ctx, 6.0, spread), spread)
    # num = rmax (g - b) + gmax (b - r) + bmax (r - g); d num / d channel is the difference of the
    # max masks of the next and the previous channel in that cycle.
    num = weighted([op("Sub", maxes[2], maxes[1]), op("Sub", maxes[0], maxes[2]), op("Sub", maxes[1], maxes[0])])
    result = []
    for c in range(3):
        d_num = op("Sub", maxes[(c + 2) % 3], maxes[(c + 1) % 3])
        d_spread = op("Sub", maxes[c], mins[c])
        d_hue = op("Sub", op("DivNoNan", d_num, six_spread),
                   op("DivNoNan", op("Mul", num, d_spread), op("Mul", six_spread, spread)))
        d_saturation = op("Sub", op("DivNoNan", op("Mul", maxes[c], minimum), op("Mul", value, value)),
                          op("DivNoNan", mins[c], value))
        total = op("AddV2", op("AddV2", op("Mul", grad_h, d_hue), op("Mul", grad_s, d_saturation)),
                   op("Mul", grad_v, maxes[c]))
        result.append(total)
    return [emit(ctx, "Pack", result, axis=-1)]
