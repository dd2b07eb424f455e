"""Kernels of the image family: CropAndResize and its two gradients, ResizeBicubic and its
gradient, ResizeArea and ExtractImagePatches. Importing it registers the siblings too:
- image_nms: NonMaxSuppressionV3/V4/V5;
- image_color: AdjustContrastv2/Saturation/Hue, RGBToHSV, HSVToRGB;
- image_codec: DecodePng, DecodeJpeg, EncodePng (through Pillow).

Coordinates and weights are host metadata computed in float32 in TensorFlow's order of
operations (crop_and_resize_op.cc, resize_bicubic_op.cc, resize_area_op.cc), so the sampled
positions, and with them which pixels are read, agree bit for bit; pixels move with gathers.
The gradients scatter with np.add.at, which adds in index order as TensorFlow's loops do.
"""
from __future__ import annotations

import numpy as np

from . import image_codec, image_color, image_nms  # noqa: F401  (registration)
from .image_color import array_module_for
from .nn_common import host_ints, shape_text
from .nn_image import _check_resize, _output_size, _resize_scale
from .registry import CPU, kernel

_F32 = np.float32


# --- CropAndResize ----------------------------------------------------------------------------

def _crop_positions(low, high, crop: int, size: int):
    """Source coordinates [num_boxes, crop] along one axis for boxes spanning [low, high] in
    normalized coordinates, and whether each lies inside the image."""
    extent = _F32(size - 1)
    if crop > 1:
        scale = (high - low) * extent / _F32(crop - 1)
        positions = low[:, None] * extent + np.arange(crop, dtype=_F32)[None, :] * scale[:, None]
    else:   # the box's centre; TensorFlow multiplies by the double 0.5 and rounds once
        centre = 0.5 * (low.astype(np.float64) + high.astype(np.float64)) * (size - 1)
        positions = centre.astype(_F32)[:, None]
    positions = positions.astype(_F32)
    return positions, (positions >= 0) & (positions <= extent)


def _check_crop_inputs(ctx, boxes, box_ind, batch: int) -> None:
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        ctx.fail(f"boxes must be 2-D [num_boxes, 4]{shape_text(boxes.shape)}")
    if box_ind.ndim != 1 or box_ind.shape[0] != boxes.shape[0]:
        ctx.fail(f"box_index has incompatible shape {shape_text(box_ind.shape)}")
    if box_ind.size and (box_ind.min() < 0 or box_ind.max() >= batch):
        ctx.fail(f"box_index has values outside [0, batch_size) (batch_size {batch})")


def _sampling(boxes, crop_height: int, crop_width: int, height: int, width: int):
    """Per box, row and column: the source coordinates and their validity."""
    ys, y_valid = _crop_positions(boxes[:, 0], boxes[:, 2], crop_height, height)
    xs, x_valid = _crop_positions(boxes[:, 1], boxes[:, 3], crop_width, width)
    return ys, y_valid, xs, x_valid


def _bilinear_taps(positions, size: int):
    """floor, ceil (clamped into the image for gathering) and the fractional weight."""
    floor = np.floor(positions)
    lower = np.clip(floor, 0, size - 1).astype(np.int64)
    upper = np.clip(np.ceil(positions), 0, size - 1).astype(np.int64)
    return lower, upper, (positions - floor).astype(_F32)


def _nearest_taps(positions, size: int):
    # roundf: half away from zero (valid coordinates are never negative).
    return np.clip(np.floor(positions.astype(np.float64) + 0.5), 0, size - 1).astype(np.int64)


@kernel("CropAndResize", devices=(CPU,), expensive=True)
def crop_and_resize(ctx, image, boxes, box_ind, crop_size, *, method, extrapolation_value):
    if image.ndim != 4:
        ctx.fail(f"input image must be 4-D{shape_text(image.shape)}")
    batch, height, width, depth = image.shape
    if height <= 0 or width <= 0:
        ctx.fail("image dimensions must be positive")
    sizes = host_ints(crop_size)
    if len(sizes) != 2:
        ctx.fail(f"crop_size must be a 1-D tensor of length 2{shape_text(np.shape(crop_size))}")
    crop_height, crop_width = sizes
    if crop_height <= 0 or crop_width <= 0:
        ctx.fail("crop dimensions must be positive")
    boxes = np.asarray(boxes, _F32)
    box_ind = np.asarray(box_ind)
    _check_crop_inputs(ctx, boxes, box_ind, batch)
    ys, y_valid, xs, x_valid = _sampling(boxes, crop_height, crop_width, height, width)
    b = box_ind[:, None, None]
    if method == "nearest":
        crops = image[b, _nearest_taps(ys, height)[:, :, None], _nearest_taps(xs, width)[:, None, :]]
        crops = crops.astype(_F32)
    else:
        top, bottom, y_lerp = _bilinear_taps(ys, height)
        left, right, x_lerp = _bilinear_taps(xs, width)

        def row(rows):   # left/right blend along the crop's columns
            left_values = image[b, rows[:, :, None], left[:, None, :]].astype(_F32)
            right_values = image[b, rows[:, :, None], right[:, None, :]].astype(_F32)
            return left_values + (right_values - left_values) * x_lerp[:, None, :, None]
        upper = row(top)
        crops = upper + (row(bottom) - upper) * y_lerp[:, :, None, None]
    inside = (y_valid[:, :, None] & x_valid[:, None, :])[..., None]
    return np.where(inside, crops, _F32(extrapolation_value)).astype(_F32)


@kernel("CropAndResizeGradImage", devices=(CPU,), expensive=True)
def crop_and_resize_grad_image(ctx, grads, boxes, box_ind, image_size, *, method):
    sizes = host_ints(image_size)
    if len(sizes) != 4:
        ctx.fail(f"image_size must be 1-D with 4 elements{shape_text(np.shape(image_size))}")
    batch, height, width, depth = sizes
    if height <= 0 or width <= 0:
        ctx.fail("image dimensions must be positive")
    if grads.ndim != 4 or grads.shape[3] != depth:
        ctx.fail(f"image_size and grads are incompatible{shape_text(grads.shape)}")
    boxes = np.asarray(boxes, _F32)
    _check_crop_inputs(ctx, boxes, np.asarray(box_ind), batch)
    _, crop_height, crop_width, _ = grads.shape
    ys, y_valid, xs, x_valid = _sampling(boxes, crop_height, crop_width, height, width)
    dtype = ctx.out_dtype(0)
    out = np.zeros((batch, height, width, depth), dtype)
    inside = y_valid[:, :, None] & x_valid[:, None, :]
    b = np.broadcast_to(np.asarray(box_ind)[:, None, None], inside.shape)
    g = np.asarray(grads, _F32)
    if method == "nearest":
        rows = np.broadcast_to(_nearest_taps(ys, height)[:, :, None], inside.shape)
        cols = np.broadcast_to(_nearest_taps(xs, width)[:, None, :], inside.shape)
        np.add.at(out, (b[inside], rows[inside], cols[inside]), g[inside].astype(dtype))
        return out
    top, bottom, y_lerp = _bilinear_taps(ys, height)
    left, right, x_lerp = _bilinear_taps(xs, width)
    y_lerp, x_lerp = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
    d_top, d_bottom = (1 - y_lerp) * g, y_lerp * g
    # Per crop pixel, TensorFlow adds top-left, top-right, bottom-left, bottom-right in turn.
    corners = [(top, left, (1 - x_lerp) * d_top), (top, right, x_lerp * d_top),
               (bottom, left, (1 - x_lerp) * d_bottom), (bottom, right, x_lerp * d_bottom)]
    rows = np.stack([np.broadcast_to(r[:, :, None], inside.shape) for r, _, _ in corners], -1)
    cols = np.stack([np.broadcast_to(c[:, None, :], inside.shape) for _, c, _ in corners], -1)
    values = np.stack([v for _, _, v in corners], -2)          # [N, ch, cw, 4, depth]
    np.add.at(out, (np.repeat(b[inside], 4), rows[inside].ravel(), cols[inside].ravel()),
              values[inside].reshape(-1, depth).astype(dtype))
    return out


@kernel("CropAndResizeGradBoxes", devices=(CPU,), expensive=True)
def crop_and_resize_grad_boxes(ctx, grads, image, boxes, box_ind, *, method):
    if image.ndim != 4:
        ctx.fail(f"input image must be 4-D{shape_text(image.shape)}")
    batch, height, width, depth = image.shape
    boxes = np.asarray(boxes, _F32)
    box_ind = np.asarray(box_ind)
    _check_crop_inputs(ctx, boxes, box_ind, batch)
    if grads.ndim != 4 or grads.shape[0] != boxes.shape[0] or grads.shape[3] != depth:
        ctx.fail(f"grads and image are incompatible: {shape_text(grads.shape)} vs. {shape_text(image.shape)}")
    _, crop_height, crop_width, _ = grads.shape
    ys, y_valid, xs, x_valid = _sampling(boxes, crop_height, crop_width, height, width)
    top, bottom, y_lerp = _bilinear_taps(ys, height)
    left, right, x_lerp = _bilinear_taps(xs, width)
    b = box_ind[:, None, None]

    def at(rows, cols):
        return image[b, rows[:, :, None], cols[:, None, :]].astype(_F32)
    top_left, top_right = at(top, left), at(top, right)
    bottom_left, bottom_right = at(bottom, left), at(bottom, right)
    yl, xl = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
    g = np.asarray(grads, _F32)
    grad_y = ((1 - xl) * (bottom_left - top_left) + xl * (bottom_right - top_right)) * g
    grad_x = ((1 - yl) * (top_right - top_left) + yl * (bottom_right - bottom_left)) * g
    inside = (y_valid[:, :, None] & x_valid[:, None, :])[..., None]
    grad_y, grad_x = np.where(inside, grad_y, 0), np.where(inside, grad_x, 0)

    def ratio_factors(crop: int, size: int, positions_axis: int):
        """d(coordinate)/d(low) and d(coordinate)/d(high) per crop row (or column)."""
        shape = [1, 1, 1, 1]
        shape[positions_axis] = crop
        if crop > 1:
            ratio = _F32(size - 1) / _F32(crop - 1)
            step = np.arange(crop, dtype=_F32) * ratio
            return (_F32(size - 1) - step).reshape(shape), step.reshape(shape)
        half = np.full(shape, 0.5 * (size - 1), _F32)
        return half, half
    dy1, dy2 = ratio_factors(crop_height, height, 1)
    dx1, dx2 = ratio_factors(crop_width, width, 2)
    axes = (1, 2, 3)
    result = np.stack([(grad_y * dy1).sum(axes), (grad_x * dx1).sum(axes),
                       (grad_y * dy2).sum(axes), (grad_x * dx2).sum(axes)], axis=1)
    return result.astype(_F32)


# --- ResizeBicubic ----------------------------------------------------------------------------

_TABLE_SIZE = 1024


def _coefficients(a: float) -> np.ndarray:
    """TensorFlow's [1025, 2] float32 table of the cubic kernel at i/1024 and 1 + i/1024 (the
    polynomials are evaluated in double from a float32 x, then stored as float32)."""
    x = (np.arange(_TABLE_SIZE + 1) * 1.0 / _TABLE_SIZE).astype(_F32).astype(np.float64)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x = (x.astype(_F32) + _F32(1.0)).astype(np.float64)
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.stack([near, far], axis=1).astype(_F32)


# Keys' cubic (a = -0.5) with half-pixel centres, the legacy a = -0.75 otherwise.
_TABLES = {True: _coefficients(-0.5), False: _coefficients(-0.75)}


def _bicubic_taps(out_size: int, in_size: int, align_corners: bool, half_pixel_centers: bool):
    """Per output index: the four source indices [out, 4] and their float32 weights [out, 4]."""
    scale = _resize_scale(in_size, out_size, align_corners)
    positions = np.arange(out_size, dtype=_F32)
    source = (positions + _F32(0.5)) * scale - _F32(0.5) if half_pixel_centers else positions * scale
    base = np.floor(source)
    offset = np.rint((source - base).astype(_F32) * _F32(_TABLE_SIZE)).astype(np.int64)
    table = _TABLES[half_pixel_centers]
    weights = np.stack([table[offset, 1], table[offset, 0], table[_TABLE_SIZE - offset, 0],
                        table[_TABLE_SIZE - offset, 1]], axis=1)
    wanted = base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    indices = np.clip(wanted, 0, in_size - 1)
    if half_pixel_centers:
        # Taps outside the image get no weight and the rest are renormalized (TensorFlow
        # matched scale_and_translate's borders here instead of repeating edge pixels).
        weights = np.where(indices == wanted, weights, _F32(0))
        total = ((weights[:, 0] + weights[:, 1]) + weights[:, 2]) + weights[:, 3]
        usable = np.abs(total) >= _F32(1000) * np.finfo(_F32).tiny
        inverse = np.where(usable, _F32(1) / np.where(usable, total, _F32(1)), _F32(1))
        weights = np.where(usable[:, None], weights * inverse[:, None], weights)
    return indices, weights.astype(_F32)


def _weighted_taps(values, indices, weights, axis: int):
    """sum_k values[..., indices[:, k], ...] * weights[:, k] along `axis`, added left to right."""
    shape = [1] * values.ndim
    shape[axis] = -1
    total = None
    for k in range(4):
        term = np.take(values, indices[:, k], axis=axis) * weights[:, k].reshape(shape)
        total = term if total is None else total + term
    return total


@kernel("ResizeBicubic", devices=(CPU,), expensive=True)
def resize_bicubic(ctx, images, size, *, align_corners, half_pixel_centers):
    _check_resize(ctx, images, align_corners, half_pixel_centers)
    out_height, out_width = _output_size(ctx, size)
    _, in_height, in_width, _ = images.shape
    rows, row_weights = _bicubic_taps(out_height, in_height, align_corners, half_pixel_centers)
    cols, col_weights = _bicubic_taps(out_width, in_width, align_corners, half_pixel_centers)
    # Columns first blend four rows (in double for double images), then rows blend four columns.
    compute = np.float64 if images.dtype == np.float64 else _F32
    columns = _weighted_taps(images.astype(compute), rows, row_weights.astype(compute), 1).astype(_F32)
    return _weighted_taps(columns, cols, col_weights, 2).astype(_F32)


@kernel("ResizeBicubicGrad", devices=(CPU,), expensive=True)
def resize_bicubic_grad(ctx, grads, original_image, *, align_corners, half_pixel_centers):
    _check_resize(ctx, original_image, align_corners, half_pixel_centers)
    batch, in_height, in_width, channels = original_image.shape
    _, out_height, out_width, _ = grads.shape
    rows, row_weights = _bicubic_taps(out_height, in_height, align_corners, half_pixel_centers)
    cols, col_weights = _bicubic_taps(out_width, in_width, align_corners, half_pixel_centers)
    dtype = ctx.out_dtype(0)
    out = np.zeros((batch, in_height, in_width, channels), dtype)
    # (y, x, i, j) in TensorFlow's loop order: 16 terms per gradient pixel.
    g = np.asarray(grads, _F32)[:, :, :, None, None, :]
    terms = g * row_weights[None, :, None, :, None, None] * col_weights[None, None, :, None, :, None]
    target_rows = np.broadcast_to(rows[:, None, :, None], (out_height, out_width, 4, 4)).ravel()
    target_cols = np.broadcast_to(cols[None, :, None, :], (out_height, out_width, 4, 4)).ravel()
    np.add.at(out, (slice(None), target_rows, target_cols),
              terms.reshape(batch, -1, channels).astype(dtype))
    return out


# --- ResizeArea -------------------------------------------------------------------------------

def _area_taps(out_size: int, in_size: int, scale):
    """Per output index, the input cells it covers (clamped) and the covered fraction of each,
    padded with zero weights to a common count."""
    starts = (np.arange(out_size, dtype=_F32) * scale).astype(_F32)
    ends = (np.arange(1, out_size + 1, dtype=_F32) * scale).astype(_F32)
    first = np.floor(starts).astype(np.int64)
    count = int((np.ceil(ends).astype(np.int64) - first).max()) if out_size else 0
    cells = first[:, None] + np.arange(count)[None, :]
    cell = cells.astype(_F32)
    start, end = starts[:, None], ends[:, None]
    weights = np.where(cell < start, np.where(cell + 1 > end, scale, cell + 1 - start),
                       np.where(cell + 1 > end, end - cell, _F32(1.0))).astype(_F32)
    weights = np.where(cells < np.ceil(ends).astype(np.int64)[:, None], weights, _F32(0))
    return np.clip(cells, 0, in_size - 1), weights


@kernel("ResizeArea", devices=(CPU,), expensive=True)
def resize_area(ctx, images, size, *, align_corners):
    _check_resize(ctx, images, align_corners, False)
    out_height, out_width = _output_size(ctx, size)
    _, in_height, in_width, _ = images.shape
    height_scale = _resize_scale(in_height, out_height, align_corners)
    width_scale = _resize_scale(in_width, out_width, align_corners)
    rows, row_weights = _area_taps(out_height, in_height, height_scale)
    cols, col_weights = _area_taps(out_width, in_width, width_scale)
    values = images.astype(_F32)
    # Each covered row sums its covered columns, then the rows add up, as TensorFlow's loops do.
    per_row = None
    for k in range(cols.shape[1]):
        term = np.take(values, cols[:, k], axis=2) * col_weights[:, k][None, None, :, None]
        per_row = term if per_row is None else per_row + term
    total = np.zeros((images.shape[0], out_height, out_width, images.shape[3]), _F32)
    for k in range(rows.shape[1]):
        total = total + np.take(per_row, rows[:, k], axis=1) * row_weights[:, k][None, :, None, None]
    scale = _F32(1.0 / float(_F32(height_scale * width_scale)))
    return (total * scale).astype(_F32)


# --- ExtractImagePatches ----------------------------------------------------------------------

def _patch_axis(size: int, ksize: int, stride: int, rate: int, padding: str):
    """[out, ksize] source indices along one axis (-1 where the patch reads padding)."""
    effective = ksize + (ksize - 1) * (rate - 1)
    if padding == "VALID":
        out, before = max((size - effective + stride) // stride, 0), 0
    else:
        out = -(-size // stride)
        before = max((out - 1) * stride + effective - size, 0) // 2
    indices = (np.arange(out) * stride)[:, None] + (np.arange(ksize) * rate)[None, :] - before
    return np.where((indices >= 0) & (indices < size), indices, -1)


@kernel("ExtractImagePatches", expensive=True)
def extract_image_patches(ctx, images, *, ksizes, strides, rates, padding):
    xp = array_module_for(ctx, images)
    if images.ndim != 4:
        ctx.fail(f"input must be 4-dimensional{shape_text(images.shape)}")
    if any(v[0] != 1 or v[3] != 1 for v in (ksizes, strides, rates)):
        ctx.fail("Only support ksizes, strides and rates across rows and cols.")
    batch, height, width, depth = images.shape
    rows = _patch_axis(height, ksizes[1], strides[1], rates[1], padding)
    cols = _patch_axis(width, ksizes[2], strides[2], rates[2], padding)
    # A zero row and column appended at index -1 stand for the padding.
    padded = xp.pad(images, ((0, 0), (0, 1), (0, 1), (0, 0)))
    patches = padded[:, xp.asarray(rows)[:, None, :, None], xp.asarray(cols)[None, :, None, :]]
    # [B, out_rows, out_cols, k_rows, k_cols, depth] -> the patch flattened in (row, col, depth) order
    return patches.reshape(batch, rows.shape[0], cols.shape[0], rows.shape[1] * cols.shape[1] * depth)
