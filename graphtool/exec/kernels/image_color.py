"""Colour kernels: RGBToHSV and HSVToRGB (colorspace_op.h, computed in the image type as
TensorFlow's Eigen expressions are), AdjustContrastv2, and AdjustSaturation / AdjustHue, which
TensorFlow computes per pixel in float32 through its own HSV round trip with hue in [0, 1)
(adjust_saturation_op.cc, adjust_hue_op.cc)."""
from __future__ import annotations

import numpy as np

from .nn_common import shape_text
from .registry import CPU, kernel

_F32 = np.float32


def _check_rgb(ctx, images, min_rank: int = 1) -> None:
    if images.ndim < min_rank:
        ctx.fail(f"input must be at least {min_rank}-D{shape_text(images.shape)}")
    if images.shape[-1] != 3:
        ctx.fail(f"input must have 3 channels but input only has {images.shape[-1]} channels.")


def _to_hsv(xp, images, dtype):
    """(h, s, v) in `dtype`, hue in [0, 1)."""
    t = images.astype(dtype, copy=False)
    r, g, b = t[..., 0], t[..., 1], t[..., 2]
    value = xp.maximum(xp.maximum(r, g), b)
    spread = value - xp.minimum(xp.minimum(r, g), b)
    zero = dtype(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        saturation = xp.where(value > zero, spread / value, zero)
        norm = dtype(1) / (dtype(6) * spread)
        hue = xp.where(r == value, norm * (g - b),
                       xp.where(g == value, norm * (b - r) + dtype(2.0 / 6.0), norm * (r - g) + dtype(4.0 / 6.0)))
    hue = xp.where(spread > zero, hue, zero)
    hue = xp.where(hue < zero, hue + dtype(1), hue)
    return hue.astype(dtype), saturation.astype(dtype), value


def array_module_for(ctx, images):
    """numpy for host arrays: on a GPU, bfloat16 images stay in host memory (cupy has no bfloat16)."""
    return np if isinstance(images, np.ndarray) else ctx.xp


@kernel("RGBToHSV")
def rgb_to_hsv(ctx, images):
    xp = array_module_for(ctx, images)
    _check_rgb(ctx, images)
    dtype = images.dtype.type
    return xp.stack(_to_hsv(xp, images, dtype), axis=-1).astype(images.dtype)


@kernel("HSVToRGB")
def hsv_to_rgb(ctx, images):
    xp = array_module_for(ctx, images)
    _check_rgb(ctx, images)
    dtype = images.dtype.type
    h, s, v = images[..., 0], images[..., 1], images[..., 2]
    dh = h * dtype(6)
    one, two = dtype(1), dtype(2)
    red = xp.clip(xp.abs(dh - dtype(3)) - one, dtype(0), one)
    green = xp.clip(-xp.abs(dh - two) + two, dtype(0), one)
    blue = xp.clip(-xp.abs(dh - dtype(4)) + two, dtype(0), one)
    grey = one - s
    rgb = [(grey + s * c) * v for c in (red, green, blue)]
    return xp.stack(rgb, axis=-1).astype(images.dtype)


def _hsv_to_rgb_pixels(h, s, v):
    """The float32 inverse adjust_saturation/hue use: six hue sectors, chroma c = s * v."""
    c = s * v
    m = v - c
    dh = h * _F32(6)
    sector = dh.astype(np.int32)    # static_cast<int> truncates; dh >= 0
    fmodu = np.mod(dh, _F32(2))
    fmodu = np.where(dh <= 0, dh + _F32(2), fmodu)     # TensorFlow's loop lifts 0 to 2
    x = c * (_F32(1) - np.abs(fmodu - _F32(1)))
    zero = np.zeros_like(c)
    table = {0: (c, x, zero), 1: (x, c, zero), 2: (zero, c, x), 3: (zero, x, c), 4: (x, zero, c),
             5: (c, zero, x)}
    channels = []
    for channel in range(3):
        value = zero
        for k, entries in table.items():
            value = np.where(sector == k, entries[channel], value)
        channels.append(value + m)
    return np.stack(channels, axis=-1).astype(_F32)


def _check_adjust(ctx, images, factor, name: str) -> np.float32:
    if images.ndim < 3:
        ctx.fail(f"input must be at least 3-D, got shape{shape_text(images.shape)}")
    if np.ndim(factor) != 0:
        ctx.fail(f"{name} must be scalar: {shape_text(np.shape(factor))}")
    return _F32(np.asarray(factor))


@kernel("AdjustSaturation", devices=(CPU,))
def adjust_saturation(ctx, images, scale):
    factor = _check_adjust(ctx, images, scale, "scale")
    _check_rgb(ctx, images, 3)
    h, s, v = _to_hsv(np, images, _F32)
    s = np.clip(s * factor, _F32(0), _F32(1))
    return _hsv_to_rgb_pixels(h, s, v).astype(images.dtype)


@kernel("AdjustHue", devices=(CPU,))
def adjust_hue(ctx, images, delta):
    factor = _check_adjust(ctx, images, delta, "delta")
    _check_rgb(ctx, images, 3)
    h, s, v = _to_hsv(np, images, _F32)
    h = np.fmod(h + factor, _F32(1))
    h = np.where(h < 0, h + _F32(1), h).astype(_F32)
    return _hsv_to_rgb_pixels(h, s, v).astype(images.dtype)


@kernel("AdjustContrastv2", devices=(CPU,))
def adjust_contrast_v2(ctx, images, contrast_factor):
    """(x - mean) * factor + mean per image and channel, the mean over height and width summed
    in float32 and rounded to the image type first."""
    factor = _check_adjust(ctx, images, contrast_factor, "contrast_factor")
    height, width = images.shape[-3], images.shape[-2]
    if height * width == 0:
        return images.copy()
    total = images.astype(_F32).sum(axis=(-3, -2), keepdims=True, dtype=_F32)
    mean = (total / _F32(height * width)).astype(images.dtype)
    adjusted = ((images - mean).astype(_F32) * factor).astype(images.dtype)
    return (mean + adjusted).astype(images.dtype)
