"""Image cases (family `image`): CropAndResize and its gradients, non-max suppression V3/V4/V5,
ResizeBicubic/ResizeArea, ExtractImagePatches, the colour ops, the PNG/JPEG codecs, and a
detection post-processing graph built with TensorFlow's own tf.image API."""
import numpy as np

from .registry import case
from .tf_v1 import tf

FAMILY = "image"
R = tf.raw_ops
CROP_TYPES = ["uint8", "uint16", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
RESIZE_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64",
                "bfloat16"]


def _as_float(tensor):
    """bfloat16/float16 results are fetched as float32 (npz has no bfloat16)."""
    return tf.cast(tensor, tf.float32) if tensor.dtype in (tf.bfloat16,) else tensor


def _image(b, dtype, *shape):
    values = b.uniform(0, 100, *shape) if not dtype.startswith("int") else b.uniform(-50, 100, *shape)
    if dtype == "bfloat16":
        return tf.cast(b.placeholder("image_bf16_src", values), tf.bfloat16)
    return b.placeholder(f"image_{dtype}", values.astype(dtype))


BOXES = np.array([[0.1, 0.2, 0.8, 0.9],      # inside
                  [-0.3, -0.2, 0.5, 1.4],    # partly outside: extrapolated rows and columns
                  [0.9, 0.8, 0.2, 0.1],      # flipped: sampled upside down
                  [0.5, 0.5, 0.5, 0.5],      # a point
                  [1.2, 1.1, 1.6, 1.9]],     # wholly outside
                 np.float32)
BOX_IND = np.array([0, 1, 1, 0, 1], np.int32)


@case("op_image_crop_and_resize", FAMILY,
      "CropAndResize bilinear and nearest on boxes inside, partly and wholly outside the image, "
      "flipped and degenerate, crop sizes 3x4 and 1x1 (box centres), extrapolation_value 0 and -1, "
      "an empty box list, every image type TensorFlow registers on the CPU; CropAndResizeGradImage "
      "(float16/32/64, bilinear and nearest) and CropAndResizeGradBoxes.", rtol=1e-5, atol=1e-4)
def op_image_crop_and_resize(b):
    image = b.placeholder("image", b.uniform(-5, 5, 2, 5, 6, 3))
    boxes = b.placeholder("boxes", BOXES)
    box_ind = tf.constant(BOX_IND, name="box_ind")   # a Const, so `optimize --verify`'s random feeds stay valid
    for method in ("bilinear", "nearest"):
        for label, size in (("3x4", [3, 4]), ("1x1", [1, 1])):
            for extrapolation in (0.0, -1.0):
                suffix = "" if extrapolation == 0 else "_extrapolate"
                b.raw("CropAndResize", f"crop_{method}_{label}{suffix}", image=image, boxes=boxes,
                      box_ind=box_ind, crop_size=size, method=method, extrapolation_value=extrapolation)
    b.raw("CropAndResize", "crop_empty", image=image, boxes=np.zeros([0, 4], np.float32),
          box_ind=np.zeros([0], np.int32), crop_size=[2, 2])
    for dtype in CROP_TYPES:
        typed = b.placeholder(f"image_{dtype}", b.uniform(0, 100, 2, 4, 5, 2).astype(dtype))
        b.raw("CropAndResize", f"crop_{dtype}", image=typed, boxes=boxes, box_ind=box_ind, crop_size=[3, 3])
    grads = b.placeholder("grads", b.normal(5, 3, 4, 3))
    for dtype in ("float16", "float32", "float64"):
        for method in ("bilinear", "nearest"):
            b.raw("CropAndResizeGradImage", f"grad_image_{dtype}_{method}", grads=grads, boxes=boxes,
                  box_ind=box_ind, image_size=[2, 5, 6, 3], T=tf.as_dtype(dtype), method=method)
    b.raw("CropAndResizeGradBoxes", "grad_boxes", grads=grads, image=image, boxes=boxes, box_ind=box_ind)
    b.raw("CropAndResizeGradBoxes", "grad_boxes_uint8",
          grads=grads, image=b.placeholder("image_u8", b.integers(0, 255, 2, 5, 6, 3).astype(np.uint8)),
          boxes=boxes, box_ind=box_ind)


@case("op_image_crop_and_resize_grad", FAMILY,
      "tf.gradients of tf.image.crop_and_resize (bilinear) with respect to the image and the boxes.",
      rtol=1e-4, atol=1e-4)
def op_image_crop_and_resize_grad(b):
    image = b.placeholder("image", b.uniform(-5, 5, 2, 5, 6, 3))
    boxes = b.placeholder("boxes", np.array([[0.1, 0.2, 0.8, 0.9], [0.05, 0.1, 0.45, 0.7],
                                             [0.3, 0.25, 0.9, 0.6]], np.float32))
    crops = tf.image.crop_and_resize(image, boxes, np.array([0, 1, 1], np.int32), [3, 4])
    weights = b.normal(3, 3, 4, 3)
    b.differentiate(tf.reduce_sum(crops * weights, name="loss"), [image, boxes])


NMS_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                      [1, 10.1, 0, 11.1],            # corners flipped
                      [0, 100, 1, 101], [5, 5, 5, 6],  # zero area overlaps nothing
                      [0, 0, 1, 1]], np.float32)
NMS_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.8, 0.9], np.float32)   # ties: 0.9 twice


@case("op_image_nms", FAMILY,
      "NonMaxSuppression (V1, V2 without score thresholds) and V3/V4/V5 on overlapping, flipped, zero-area and duplicate boxes with tied "
      "scores: iou thresholds 0.5/0/1, score thresholds, max_output_size 0 and larger than the box "
      "count, pad_to_max_output_size, soft-NMS (sigma 0.5) with selected_scores, float16, and an "
      "empty box list.", rtol=1e-3, atol=1e-3)
def op_image_nms(b):
    boxes = b.placeholder("boxes", NMS_BOXES)
    scores = b.placeholder("scores", NMS_SCORES)
    for label, size, iou, score in (("default", 10, 0.5, -np.inf), ("iou0", 10, 0.0, -np.inf),
                                    ("iou1", 10, 1.0, -np.inf), ("score_threshold", 10, 0.5, 0.55),
                                    ("max3", 3, 0.5, 0.0), ("max0", 0, 0.5, 0.0)):
        iou, score = np.float32(iou), np.float32(score)
        b.raw("NonMaxSuppressionV3", f"v3_{label}", boxes=boxes, scores=scores, max_output_size=size,
              iou_threshold=iou, score_threshold=score)
        for pad in (False, True):
            suffix = "_pad" if pad else ""
            b.raw("NonMaxSuppressionV4", f"v4_{label}{suffix}", boxes=boxes, scores=scores, max_output_size=size,
                  iou_threshold=iou, score_threshold=score, pad_to_max_output_size=pad)
            b.raw("NonMaxSuppressionV5", f"v5_{label}{suffix}", boxes=boxes, scores=scores, max_output_size=size,
                  iou_threshold=iou, score_threshold=score, soft_nms_sigma=np.float32(0),
                  pad_to_max_output_size=pad)
    for label, sigma, score in (("soft", 0.5, 0.0), ("soft_threshold", 0.5, 0.4), ("soft_narrow", 0.1, 0.1)):
        b.raw("NonMaxSuppressionV5", f"v5_{label}", boxes=boxes, scores=scores, max_output_size=8,
              iou_threshold=np.float32(0.5), score_threshold=np.float32(score), soft_nms_sigma=np.float32(sigma),
              pad_to_max_output_size=True)
    for label, iou in (("default", 0.5), ("iou0", 0.0)):
        b.raw("NonMaxSuppression", f"v1_{label}", boxes=boxes, scores=scores, max_output_size=6, iou_threshold=iou)
        b.raw("NonMaxSuppressionV2", f"v2_{label}", boxes=boxes, scores=scores, max_output_size=6,
              iou_threshold=np.float32(iou))
    half_boxes, half_scores = tf.cast(boxes, tf.float16), tf.cast(scores, tf.float16)
    b.raw("NonMaxSuppressionV2", "v2_half", boxes=half_boxes, scores=half_scores, max_output_size=5,
          iou_threshold=np.float16(0.5))
    b.raw("NonMaxSuppressionV4", "v4_half", boxes=half_boxes, scores=half_scores, max_output_size=5,
          iou_threshold=np.float16(0.5), score_threshold=np.float16(0.1), pad_to_max_output_size=True)
    v5_half = b.raw("NonMaxSuppressionV5", "v5_half_soft", take=[0, 2], boxes=half_boxes, scores=half_scores,
                    max_output_size=5, iou_threshold=np.float16(0.5), score_threshold=np.float16(0.1),
                    soft_nms_sigma=np.float16(0.5))
    b.fetch(tf.cast(v5_half[1], tf.float32), "v5_half_soft_scores")
    b.raw("NonMaxSuppressionV3", "v3_empty", boxes=np.zeros([0, 4], np.float32), scores=np.zeros([0], np.float32),
          max_output_size=4, iou_threshold=np.float32(0.5), score_threshold=np.float32(0))
    b.raw("NonMaxSuppressionV4", "v4_empty_pad", boxes=np.zeros([0, 4], np.float32),
          scores=np.zeros([0], np.float32), max_output_size=4, iou_threshold=np.float32(0.5),
          score_threshold=np.float32(0), pad_to_max_output_size=True)


@case("op_image_resize", FAMILY,
      "ResizeBicubic (plain, align_corners, half_pixel_centers; up, down, 1x1) and ResizeArea "
      "(plain, align_corners; up, down, non-integer ratios) on every type TensorFlow registers; "
      "ResizeBicubicGrad (float32/float64, each mode).", rtol=1e-5, atol=1e-4)
def op_image_resize(b):
    images = b.placeholder("images", b.uniform(-3, 3, 2, 5, 7, 3))
    for direction, size in (("up", [8, 11]), ("down", [3, 4]), ("point", [1, 1])):
        for mode, align, half in (("", False, False), ("_align_corners", True, False),
                                  ("_half_pixel", False, True)):
            b.raw("ResizeBicubic", f"bicubic_{direction}{mode}", images=images, size=size,
                  align_corners=align, half_pixel_centers=half)
        for mode, align in (("", False), ("_align_corners", True)):
            b.raw("ResizeArea", f"area_{direction}{mode}", images=images, size=size, align_corners=align)
    for dtype in RESIZE_TYPES:
        typed = _image(b, dtype, 1, 4, 5, 2)
        b.raw("ResizeBicubic", f"bicubic_{dtype}", images=typed, size=[6, 3], half_pixel_centers=True)
        b.raw("ResizeArea", f"area_{dtype}", images=typed, size=[3, 7])
    grads = b.placeholder("grads", b.normal(2, 8, 11, 3))
    for dtype in ("float32", "float64"):
        original = b.placeholder(f"original_{dtype}", np.zeros([2, 5, 7, 3], dtype))
        for mode, align, half in (("", False, False), ("_align_corners", True, False),
                                  ("_half_pixel", False, True)):
            b.raw("ResizeBicubicGrad", f"bicubic_grad_{dtype}{mode}", grads=grads, original_image=original,
                  align_corners=align, half_pixel_centers=half)


@case("op_image_resize_bicubic_grad", FAMILY,
      "tf.gradients through ResizeBicubic (half_pixel_centers) and ExtractImagePatches (SAME, strides 2, "
      "rates 2).", rtol=1e-4, atol=1e-4)
def op_image_resize_bicubic_grad(b):
    images = b.placeholder("images", b.uniform(-3, 3, 2, 5, 7, 3))
    resized = tf.image.resize(images, [9, 4], method="bicubic")
    patches = tf.image.extract_patches(images, [1, 3, 2, 1], [1, 2, 2, 1], [1, 2, 1, 1], "SAME")
    loss = tf.add(tf.reduce_sum(resized * b.normal(2, 9, 4, 3)),
                  tf.reduce_sum(patches * b.normal(*patches.shape.as_list())), name="loss")
    b.differentiate(loss, [images])


@case("op_image_patches", FAMILY,
      "ExtractImagePatches SAME and VALID with strides, rates, 1x1 patches and a patch larger than the "
      "image, on every type TensorFlow registers on the CPU (bool has no kernel).", rtol=1e-6, atol=1e-6)
def op_image_patches(b):
    images = b.placeholder("images", b.normal(2, 6, 7, 3))
    for label, ksizes, strides, rates in (("3x3", [3, 3], [1, 1], [1, 1]), ("2x3_stride2", [2, 3], [2, 2], [1, 1]),
                                          ("rates2", [2, 2], [1, 3], [2, 2]), ("1x1", [1, 1], [2, 3], [1, 1]),
                                          ("large", [7, 8], [1, 1], [1, 1])):
        for padding in ("SAME", "VALID"):
            b.raw("ExtractImagePatches", f"patches_{label}_{padding.lower()}", images=images,
                  ksizes=[1, *ksizes, 1], strides=[1, *strides, 1], rates=[1, *rates, 1], padding=padding)
    small = b.integers(-9, 9, 1, 4, 4, 2)
    for dtype in ("float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "complex64", "complex128"):
        value = np.abs(small) if dtype.startswith("uint") else small
        if dtype.startswith("complex"):
            value = small + 1j * small[..., ::-1]
        b.raw("ExtractImagePatches", f"patches_{dtype}", images=b.placeholder(f"images_{dtype}", value.astype(dtype)),
              ksizes=[1, 2, 2, 1], strides=[1, 1, 2, 1], rates=[1, 1, 1, 1], padding="SAME")
    bf16 = R.ExtractImagePatches(images=tf.cast(images, tf.bfloat16), ksizes=[1, 2, 2, 1], strides=[1, 1, 2, 1],
                                 rates=[1, 1, 1, 1], padding="SAME", name="patches_bfloat16")
    b.fetch(tf.cast(bf16, tf.float32), "patches_bfloat16_as_float")
    b.skip("ExtractImagePatches", "T=bool is in the op definition but TensorFlow registers no CPU kernel for it")


COLOURS = np.array([[[[0.2, 0.4, 0.6], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                     [[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.9, 0.1, 0.5]],
                     [[0.3, 0.3, 0.7], [1.0, 0.0, 1.0], [0.25, 0.75, 0.75], [0.7, 0.6, 0.2]]]], np.float32)


@case("op_image_color", FAMILY,
      "RGBToHSV and HSVToRGB (float16/bfloat16/float32/float64, greys and primaries where the hue is "
      "undefined or wraps), AdjustContrastv2, AdjustSaturation and AdjustHue (float32, the only CPU type; "
      "factors below, above 1 and negative, hue deltas wrapping both ways).", rtol=1e-5, atol=4e-3,
      notes="atol covers one bfloat16 ulp near 1 (0.0039) on one RGBToHSV hue: Eigen's rounding of the "
            "intermediate bfloat16 values is not reproduced exactly; float16/32/64 agree to 1e-5.")
def op_image_color(b):
    rgb = b.placeholder("rgb", np.concatenate([COLOURS, b.uniform(0, 1, 1, 3, 4, 3)], axis=0))
    hsv = b.placeholder("hsv", b.uniform(0, 1, 2, 3, 5, 3))
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        for op_type, value in (("RGBToHSV", rgb), ("HSVToRGB", hsv)):
            out = getattr(R, op_type)(images=tf.cast(value, dtype), name=f"{op_type.lower()}_{dtype}")
            b.fetch(tf.cast(out, tf.float32) if dtype == "bfloat16" else out)
    for op_type in ("AdjustContrastv2", "AdjustSaturation", "AdjustHue"):
        b.skip(op_type, "T=float16 is in the op definition but TensorFlow registers only float32 on the CPU")
    for dtype in ("float32",):
        images = tf.cast(rgb, dtype)
        for label, factor in (("half", 0.5), ("double", 2.0), ("negative", -0.7)):
            b.raw("AdjustContrastv2", f"contrast_{dtype}_{label}", images=images, contrast_factor=np.float32(factor))
            b.raw("AdjustSaturation", f"saturation_{dtype}_{label}", images=images, scale=np.float32(factor))
        for label, delta in (("plus", 0.3), ("minus", -0.45), ("wrap", 0.9), ("zero", 0.0)):
            b.raw("AdjustHue", f"hue_{dtype}_{label}", images=images, delta=np.float32(delta))


def _encoded(op_type, value, **attrs):
    """Bytes made by TensorFlow in a graph of their own (the case feeds them)."""
    with tf.Graph().as_default(), tf.Session() as session:
        return session.run(getattr(R, op_type)(image=value, **attrs))


@case("op_image_png", FAMILY,
      "DecodePng of TensorFlow-encoded grey, grey+alpha, RGB, RGBA PNGs in 8 and 16 bits with "
      "channels 0/1/3/4 and dtype uint8/uint16 (8-bit widened, 16-bit narrowed); EncodePng round "
      "trips (8- and 16-bit, compression 0 and 9) decoded again. PNG is lossless: exact.")
def op_image_png(b):
    rng = b.rng
    sources = {"grey": rng.integers(0, 256, (5, 7, 1)).astype(np.uint8),
               "grey_alpha": rng.integers(0, 256, (4, 3, 2)).astype(np.uint8),
               "rgb": rng.integers(0, 256, (6, 5, 3)).astype(np.uint8),
               "rgba": rng.integers(0, 256, (3, 4, 4)).astype(np.uint8),
               "grey16": rng.integers(0, 65536, (4, 6, 1)).astype(np.uint16),
               "rgb16": rng.integers(0, 65536, (5, 4, 3)).astype(np.uint16),
               # smooth ramps, for which libpng picks the Sub, Up, Average and Paeth row filters
               "rgba16": (np.mgrid[0:9, 0:7, 0:4].sum(0) * 3000 + rng.integers(0, 40, (9, 7, 4))).astype(np.uint16),
               "grey_alpha16": (np.mgrid[0:6, 0:8, 0:2].prod(0) * 900).astype(np.uint16)}
    for name, pixels in sources.items():
        # Consts, as files read into a graph are: random strings would not decode under --verify.
        contents = tf.constant(_encoded("EncodePng", pixels), name=f"png_{name}")
        for channels in (0, 1, 3, 4):
            for dtype in (tf.uint8, tf.uint16):
                b.raw("DecodePng", f"decode_{name}_c{channels}_{dtype.name}", contents=contents,
                      channels=channels, dtype=dtype)
    for name, pixels, level in (("rgb", sources["rgb"], 9), ("grey16", sources["grey16"], 0),
                                ("rgba", sources["rgba"], -1), ("rgb16", sources["rgb16"], 6),
                                ("grey_alpha16", sources["grey_alpha16"], -1)):
        image = b.placeholder(f"raw_{name}", pixels)
        encoded = R.EncodePng(image=image, compression=level, name=f"encode_{name}")
        b.raw("DecodePng", f"round_trip_{name}", contents=encoded, dtype=image.dtype)


@case("op_image_jpeg", FAMILY,
      "DecodeJpeg of TensorFlow-encoded JPEGs (RGB 4:2:0 and grey) with channels 0/1/3, ratio 2, "
      "dct_method INTEGER_ACCURATE/INTEGER_FAST and fancy_upscaling off, fetched as float32.",
      rtol=0.0, atol=6.0,
      notes="JPEG decoding depends on the libjpeg build and IDCT. Grey images, INTEGER_ACCURATE and "
            "fancy_upscaling=False decode bit-exactly; colour images with TensorFlow's defaults (fast "
            "IDCT with fancy upsampling, a pair Pillow cannot select) differ by up to 3 levels, so "
            "pixels are compared within 6 of 255; tests/ops/test_image_ops.py checks the exact ones "
            "exactly.")
def op_image_jpeg(b):
    y, x = np.mgrid[0:16, 0:24]
    smooth = np.stack([y * 12, x * 9, (x + y) * 5], axis=-1).astype(np.uint8)
    noisy = np.clip(smooth + b.rng.integers(0, 30, smooth.shape), 0, 255).astype(np.uint8)
    sources = {"rgb": _encoded("EncodeJpeg", noisy, quality=90),
               "grey": _encoded("EncodeJpeg", noisy[..., :1], quality=95)}
    for name, data in sources.items():
        contents = tf.constant(data, name=f"jpeg_{name}")
        for label, attrs in (("c0", {}), ("c1", {"channels": 1}), ("c3", {"channels": 3}),
                             ("ratio2", {"ratio": 2}), ("accurate", {"dct_method": "INTEGER_ACCURATE"}),
                             ("plain_upsampling", {"fancy_upscaling": False}),
                             ("fast_plain", {"dct_method": "INTEGER_FAST", "fancy_upscaling": False})):
            decoded = R.DecodeJpeg(contents=contents, name=f"decode_{name}_{label}", **attrs)
            b.fetch(tf.cast(decoded, tf.float32), f"decoded_{name}_{label}")


@case("detection_postprocess", FAMILY,
      "Detection post-processing as a TF model writes it: box deltas decoded against anchors, "
      "scores from a sigmoid, per-class tf.image.non_max_suppression_with_scores (V5) and "
      "NonMaxSuppressionV4 with pad_to_max_output_size, selected boxes gathered and clipped, ROI features "
      "by tf.image.crop_and_resize, and their mean.", rtol=1e-4, atol=1e-5)
def detection_postprocess(b):
    num_anchors, num_classes = 24, 3
    centres = b.rng.uniform(0.15, 0.85, (num_anchors, 2))
    sizes = b.rng.uniform(0.1, 0.35, (num_anchors, 2))
    anchors = tf.constant(np.concatenate([centres - sizes / 2, centres + sizes / 2], 1).astype(np.float32))
    deltas = b.placeholder("box_deltas", b.normal(num_anchors, 4, scale=0.2))
    logits = b.placeholder("class_logits", b.normal(num_anchors, num_classes, scale=2.0))
    features = b.placeholder("features", b.normal(1, 16, 16, 8))
    ay0, ax0, ay1, ax1 = tf.unstack(anchors, axis=1)
    height, width = ay1 - ay0, ax1 - ax0
    cy, cx = ay0 + 0.5 * height + deltas[:, 0] * height, ax0 + 0.5 * width + deltas[:, 1] * width
    h, w = height * tf.exp(deltas[:, 2]), width * tf.exp(deltas[:, 3])
    boxes = tf.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], axis=1, name="decoded_boxes")
    scores = tf.sigmoid(logits)
    selected_boxes, selected_scores, classes = [], [], []
    for k in range(num_classes):
        indices, class_scores = tf.image.non_max_suppression_with_scores(
            boxes, scores[:, k], max_output_size=5, iou_threshold=0.45, score_threshold=0.3,
            soft_nms_sigma=0.0 if k else 0.3)
        selected_boxes.append(tf.gather(boxes, indices))
        selected_scores.append(class_scores)
        classes.append(tf.fill(tf.shape(indices), k))
    # TF2's tf.image.non_max_suppression_padded is a Python loop in a function; TF1-era code (and
    # the Object Detection API) emitted the padded kernel itself.
    padded, valid = R.NonMaxSuppressionV4(boxes=boxes, scores=tf.reduce_max(scores, axis=1), max_output_size=6,
                                          iou_threshold=0.5, score_threshold=0.2, pad_to_max_output_size=True)
    b.fetch(padded, "padded_indices")
    b.fetch(valid, "padded_valid")
    detections = tf.clip_by_value(tf.concat(selected_boxes, 0), 0.0, 1.0, name="detections")
    b.fetch(detections)
    b.fetch(tf.concat(selected_scores, 0, name="detection_scores"))
    b.fetch(tf.concat(classes, 0, name="detection_classes"))
    rois = tf.image.crop_and_resize(features, detections, tf.zeros(tf.shape(detections)[:1], tf.int32), [4, 4])
    b.fetch(tf.reduce_mean(rois, axis=[1, 2], name="roi_features"))


@case("op_image_rgb_to_hsv_grad", FAMILY,
      "tf.gradients through tf.image.rgb_to_hsv (hue, saturation and value all weighted) on colours "
      "whose maximum is red, green or blue in turn.", rtol=1e-4, atol=1e-5)
def op_image_rgb_to_hsv_grad(b):
    rgb = b.placeholder("rgb", b.uniform(0.05, 1.0, 2, 3, 4, 3))
    hsv = tf.image.rgb_to_hsv(rgb)
    b.differentiate(tf.reduce_sum(hsv * b.normal(2, 3, 4, 3), name="loss"), [rgb])


@case("op_image_combined_nms", FAMILY,
      "CombinedNonMaxSuppression on a batch of 2 with boxes shared by the classes (q = 1) and per class "
      "(q = 3), boxes reaching outside [0, 1] (clipped or not), pad_per_class, a score threshold that "
      "empties a class, and max_total_size below and above what survives.", rtol=1e-6, atol=1e-6)
def op_image_combined_nms(b):
    centres = b.uniform(0.0, 1.0, 2, 12, 1, 2)
    sizes = b.uniform(0.1, 0.5, 2, 12, 1, 2)
    shared = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=-1)
    per_class = shared + b.normal(2, 12, 3, 4, scale=0.03)
    scores = b.uniform(0, 1, 2, 12, 3)
    scores[:, :, 2] *= 0.2            # class 2 stays below the 0.3 threshold
    shared_boxes = b.placeholder("boxes_shared", shared.astype(np.float32))
    class_boxes = b.placeholder("boxes_per_class", per_class.astype(np.float32))
    score_input = b.placeholder("scores", scores)
    for label, boxes, per_class_size, total, pad, clip in (
            ("shared", shared_boxes, 4, 7, False, True), ("per_class", class_boxes, 3, 20, False, True),
            ("pad_per_class", shared_boxes, 2, 20, True, True), ("unclipped", class_boxes, 5, 6, False, False),
            ("pad_small_total", class_boxes, 4, 3, True, False)):
        b.raw("CombinedNonMaxSuppression", f"combined_{label}", boxes=boxes, scores=score_input,
              max_output_size_per_class=per_class_size, max_total_size=total, iou_threshold=np.float32(0.4),
              score_threshold=np.float32(0.3), pad_per_class=pad, clip_boxes=clip)
