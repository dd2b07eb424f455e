"""Image ops: crop-and-resize, non-max suppression, bicubic and area resizing, patch extraction,
colour adjustments and the PNG/JPEG codecs. (ResizeBilinear and ResizeNearestNeighbor predate this
family and live in nn.py.)

Shape functions follow TensorFlow's image_ops.cc and array_ops.cc (ExtractImagePatches).
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import InferenceContext
from .nn import _resize_shape
from .nn_conv import merge_dim
from .registry import register

_REAL = "{int8, uint8, int16, uint16, int32, int64, float16, float32, float64, bfloat16}"
_CROP_TYPES = "{uint8, uint16, int8, int16, int32, int64, float16, float32, float64}"


def _vector_value(ctx: InferenceContext, i: int, length: int, what: str) -> list[int | None]:
    """A 1-D int input of `length` elements: its known entries, None where unknown."""
    size = ctx.with_rank(i, 1)[0]
    if size not in (None, length):
        ctx.fail(f"{what} must have {length} elements, has {size}")
    known = ctx.int_list(i)
    if known is None:
        return [None] * length
    entries: list[int | None] = list(known)
    return entries


def _crop_and_resize_shape(ctx: InferenceContext) -> Shape:
    """[num_boxes, crop_height, crop_width, depth]; boxes are [num_boxes, 4], box_ind [num_boxes]."""
    image, boxes, box_ind = ctx.with_rank(0, 4), ctx.with_rank(1, 2), ctx.with_rank(2, 1)
    merge_dim(ctx, boxes[1], 4)
    num_boxes = merge_dim(ctx, boxes[0], box_ind[0])
    height, width = _vector_value(ctx, 3, 2, "crop_size")
    return Shape([num_boxes, height, width, image[3]])


def _crop_and_resize_grad_image_shape(ctx: InferenceContext) -> Shape:
    _vector_value(ctx, 3, 4, "image_size")
    return ctx.shape_from_tensor(3).with_rank(4)


def _nms_checks(ctx: InferenceContext) -> None:
    boxes, scores = ctx.with_rank(0, 2), ctx.with_rank(1, 1)
    merge_dim(ctx, boxes[1], 4)
    merge_dim(ctx, boxes[0], scores[0])
    for i in range(2, ctx.num_inputs):
        ctx.with_rank(i, 0)


def _nms_v3_shape(ctx: InferenceContext) -> Shape:
    _nms_checks(ctx)
    return Shape([None])


def _nms_padded_shapes(ctx: InferenceContext) -> list[Shape]:
    """V4 and V5: with pad_to_max_output_size the selection has exactly max_output_size entries."""
    _nms_checks(ctx)
    length = None
    if ctx.attr("pad_to_max_output_size"):
        known = ctx.int_list(2)
        length = known[0] if known else None
    selected = Shape([length])
    return [selected] * (ctx.num_outputs - 1) + [Shape.scalar()]


def _combined_nms_shapes(ctx: InferenceContext) -> list[Shape]:
    """[batch, size, 4], [batch, size] twice and [batch]; size is max_total_size, or with
    pad_per_class at most max_output_size_per_class * num_classes."""
    boxes, scores = ctx.with_rank(0, 4), ctx.with_rank(1, 3)
    for i in range(2, 6):
        ctx.with_rank(i, 0)
    batch = merge_dim(ctx, boxes[0], scores[0])
    merge_dim(ctx, boxes[1], scores[1])
    merge_dim(ctx, boxes[3], 4)
    if boxes[2] is not None and scores[2] is not None and boxes[2] not in (1, scores[2]):
        ctx.fail("third dimension of boxes must be either 1 or equal to the third dimension of scores")
    total, per_class = ctx.int_list(3), ctx.int_list(2)
    if total is not None and total[0] <= 0:
        ctx.fail("max_total_size should be > 0 ")
    size = total[0] if total is not None else None
    if ctx.attr("pad_per_class"):
        size = None if size is None or per_class is None or scores[2] is None else min(size, per_class[0] * scores[2])
    return [Shape([batch, size, 4]), Shape([batch, size]), Shape([batch, size]), Shape([batch])]


def _extract_image_patches_shape(ctx: InferenceContext) -> Shape:
    images = ctx.with_rank(0, 4)
    ksizes, strides, rates = (ctx.attr(n) for n in ("ksizes", "strides", "rates"))
    for name, values in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        if len(values) != 4:
            ctx.fail(f"ExtractImagePatches requires the {name} attribute to contain 4 values, "
                     f"but got: {len(values)}")
    if ksizes[0] != 1 or ksizes[3] != 1 or strides[0] != 1 or strides[3] != 1 or rates[0] != 1 \
            or rates[3] != 1:
        ctx.fail("ExtractImagePatches is only supported across rows and cols")
    depth = None if images[3] is None else images[3] * ksizes[1] * ksizes[2]
    out = [images[0]]
    # Like TensorFlow, one unknown spatial size leaves both output sizes unknown.
    known = images[1] is not None and images[2] is not None
    for axis in (1, 2):
        size, effective = images[axis], ksizes[axis] + (ksizes[axis] - 1) * (rates[axis] - 1)
        if not known:
            out.append(None)
        elif ctx.attr("padding") == "VALID":
            out.append(max((size - effective + strides[axis]) // strides[axis], 0))
        else:
            out.append(-(-size // strides[axis]))
    return Shape([*out, depth])


def _colour_shape(ctx: InferenceContext) -> Shape:
    """RGBToHSV / HSVToRGB: any rank >= 1 whose last dimension is 3."""
    images = ctx.with_rank_at_least(0, 1)
    if not has_rank(images):
        return images
    return Shape([*images.dims[:-1], merge_dim(ctx, images[-1], 3)])


def _adjust_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 0)
    return ctx.with_rank_at_least(0, 3)


def _decode_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(0, 0)
    channels = ctx.attr("channels")
    return Shape([None, None, channels or None])


def _encode_png_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(0, 3)
    return Shape.scalar()


def _like_input(i: int):
    return lambda ctx: ctx.shape(i)


# --- registrations --------------------------------------------------------------------------

register("CropAndResize", inputs=["image: T", "boxes: float32", "box_ind: int32", "crop_size: int32"],
         outputs=["crops: float32"],
         attrs=[f"T: {_CROP_TYPES}", "method: {'bilinear', 'nearest'} = 'bilinear'",
                "extrapolation_value: float = 0.0"],
         shape=_crop_and_resize_shape)
register("CropAndResizeGradImage",
         inputs=["grads: float32", "boxes: float32", "box_ind: int32", "image_size: int32"],
         outputs=["output: T"],
         attrs=["T: {float32, float16, float64}", "method: {'bilinear', 'nearest'} = 'bilinear'"],
         shape=_crop_and_resize_grad_image_shape)
register("CropAndResizeGradBoxes",
         inputs=["grads: float32", "image: T", "boxes: float32", "box_ind: int32"], outputs=["output: float32"],
         attrs=[f"T: {_CROP_TYPES}", "method: {'bilinear'} = 'bilinear'"], shape=_like_input(2))

_NMS_T = "T: {float16, float32} = float32"
_NMS_INPUTS = ["boxes: T", "scores: T", "max_output_size: int32"]
# V1 and V2 have no score threshold (every score above the lowest float counts).
register("NonMaxSuppression", inputs=["boxes: float32", "scores: float32", "max_output_size: int32"],
         outputs=["selected_indices: int32"], attrs=["iou_threshold: float = 0.5"], shape=_nms_v3_shape)
register("NonMaxSuppressionV2", inputs=[*_NMS_INPUTS, "iou_threshold: T_threshold"],
         outputs=["selected_indices: int32"],
         attrs=[_NMS_T, "T_threshold: {float16, float32} = float32"], shape=_nms_v3_shape)
register("NonMaxSuppressionV3", inputs=[*_NMS_INPUTS, "iou_threshold: T_threshold", "score_threshold: T_threshold"],
         outputs=["selected_indices: int32"],
         attrs=[_NMS_T, "T_threshold: {float16, float32} = float32"], shape=_nms_v3_shape)
register("NonMaxSuppressionV4", inputs=[*_NMS_INPUTS, "iou_threshold: T_threshold", "score_threshold: T_threshold"],
         outputs=["selected_indices: int32", "valid_outputs: int32"],
         attrs=[_NMS_T, "T_threshold: {float16, float32} = float32", "pad_to_max_output_size: bool = false"],
         shape=_nms_padded_shapes)
register("NonMaxSuppressionV5",
         inputs=[*_NMS_INPUTS, "iou_threshold: T", "score_threshold: T", "soft_nms_sigma: T"],
         outputs=["selected_indices: int32", "selected_scores: T", "valid_outputs: int32"],
         attrs=[_NMS_T, "pad_to_max_output_size: bool = false"], shape=_nms_padded_shapes)

register("CombinedNonMaxSuppression",
         inputs=["boxes: float32", "scores: float32", "max_output_size_per_class: int32", "max_total_size: int32",
                 "iou_threshold: float32", "score_threshold: float32"],
         outputs=["nmsed_boxes: float32", "nmsed_scores: float32", "nmsed_classes: float32",
                  "valid_detections: int32"],
         attrs=["pad_per_class: bool = false", "clip_boxes: bool = true"], shape=_combined_nms_shapes)

_RESIZE_ATTRS = ["align_corners: bool = false", "half_pixel_centers: bool = false"]
register("ResizeBicubic", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
         attrs=[f"T: {_REAL}", *_RESIZE_ATTRS], shape=_resize_shape)
register("ResizeBicubicGrad", inputs=["grads: float32", "original_image: T"], outputs=["output: T"],
         attrs=["T: {float32, float64}", *_RESIZE_ATTRS], shape=_like_input(1))
register("ResizeArea", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
         attrs=[f"T: {_REAL}", "align_corners: bool = false"], shape=_resize_shape)

register("ExtractImagePatches", inputs=["images: T"], outputs=["patches: T"],
         attrs=["ksizes: list(int) >= 4", "strides: list(int) >= 4", "rates: list(int) >= 4",
                "T: {bfloat16, float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, "
                "uint64, complex64, complex128, bool}",
                "padding: {'SAME', 'VALID'}"],
         shape=_extract_image_patches_shape)

_ADJUST_T = "T: {float16, float32} = float32"
register("AdjustContrastv2", inputs=["images: T", "contrast_factor: float32"], outputs=["output: T"],
         attrs=[_ADJUST_T], shape=_adjust_shape)
register("AdjustSaturation", inputs=["images: T", "scale: float32"], outputs=["output: T"],
         attrs=[_ADJUST_T], shape=_adjust_shape)
register("AdjustHue", inputs=["images: T", "delta: float32"], outputs=["output: T"],
         attrs=[_ADJUST_T], shape=_adjust_shape)
for _name in ("RGBToHSV", "HSVToRGB"):
    register(_name, inputs=["images: T"], outputs=["output: T"],
             attrs=["T: {float16, bfloat16, float32, float64} = float32"], shape=_colour_shape)

register("DecodePng", inputs=["contents: string"], outputs=["image: dtype"],
         attrs=["channels: int = 0", "dtype: {uint8, uint16} = uint8"], shape=_decode_shape)
register("DecodeJpeg", inputs=["contents: string"], outputs=["image: uint8"],
         attrs=["channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",
                "try_recover_truncated: bool = false", "acceptable_fraction: float = 1.0",
                "dct_method: string = ''"],
         shape=_decode_shape)
register("EncodePng", inputs=["image: T"], outputs=["contents: string"],
         attrs=["compression: int = -1", "T: {uint8, uint16} = uint8"], shape=_encode_png_shape)
