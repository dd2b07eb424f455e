"""DecodePng, DecodeJpeg and EncodePng through Pillow (an optional dependency: `pip install
dftool[image]`; graphs without these ops never import it).

PNG is lossless, so decoding agrees with TensorFlow bit for bit. JPEG decoding depends on the
IDCT: TensorFlow's default dct_method is libjpeg's fast integer transform, Pillow's the accurate
one, so pixels may differ by a few levels (tests state the tolerance). The string tensors are
numpy object arrays of bytes.
"""
from __future__ import annotations

import io

import numpy as np

from .registry import CPU, kernel


def _pillow(ctx):
    try:
        from PIL import Image
    except ImportError:
        ctx.fail(f"{ctx.op} needs Pillow (install dftool[image] or pillow)")
    return Image


def _contents(ctx, contents) -> bytes:
    array = np.asarray(contents, dtype=object)
    if array.ndim != 0:
        ctx.fail(f"contents must be scalar, got shape {list(array.shape)}")
    value = array.item()
    return value if isinstance(value, bytes) else bytes(value)


def _open(ctx, data: bytes, kind: str):
    Image = _pillow(ctx)
    try:
        image = Image.open(io.BytesIO(data))
        if image.format != kind:
            ctx.fail(f"Got {image.format or 'unknown format'} data where {kind} was expected")
        image.load()
    except (OSError, SyntaxError, ValueError) as exc:
        ctx.fail(f"Invalid {kind} data: {exc}")
    return image


def _channels_of(mode: str) -> int:
    return {"1": 1, "L": 1, "P": 3, "I": 1, "I;16": 1, "I;16B": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4}.get(mode, 3)


def _check_channels(ctx, channels: int, allowed) -> None:
    if channels not in allowed:
        ctx.fail(f"channels must be one of {sorted(allowed)}, got {channels}")


@kernel("DecodePng", devices=(CPU,))
def decode_png(ctx, contents, *, channels, dtype):
    _check_channels(ctx, channels, (0, 1, 2, 3, 4))
    image = _open(ctx, _contents(ctx, contents), "PNG")
    if image.mode == "P":     # palette images expand to RGB, or RGBA when the palette has alpha
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    sixteen_bit = image.mode.startswith("I")
    if sixteen_bit:
        grey = np.asarray(image, dtype=np.uint32).astype(np.uint16)[..., None]
        opaque = np.full_like(grey, 65535)
        layout = {0: [grey], 1: [grey], 2: [grey, opaque], 3: [grey] * 3, 4: [grey] * 3 + [opaque]}
        values = np.concatenate(layout[channels], axis=-1)
    else:
        mode = {0: image.mode if image.mode in ("L", "LA", "RGB", "RGBA") else "RGB", 1: "L", 2: "LA",
                3: "RGB", 4: "RGBA"}[channels]
        values = np.asarray(image.convert(mode), dtype=np.uint8)
        if values.ndim == 2:
            values = values[..., None]
    want16 = np.dtype(ctx.out_dtype(0)) == np.uint16
    if want16 and not sixteen_bit:
        return values.astype(np.uint16) * np.uint16(257)     # 8-bit samples widen to 16 bits
    if sixteen_bit and not want16:
        return (values >> 8).astype(np.uint8)               # libpng strips the low byte
    return values


@kernel("DecodeJpeg", devices=(CPU,))
def decode_jpeg(ctx, contents, *, channels, ratio, fancy_upscaling, try_recover_truncated,
                acceptable_fraction, dct_method):
    _check_channels(ctx, channels, (0, 1, 3))
    if ratio not in (1, 2, 4, 8):
        ctx.fail(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    image = _open(ctx, _contents(ctx, contents), "JPEG")
    if ratio > 1:
        image.draft(image.mode, (-(-image.width // ratio), -(-image.height // ratio)))
    mode = {0: "L" if _channels_of(image.mode) == 1 else "RGB", 1: "L", 3: "RGB"}[channels]
    values = np.asarray(image.convert(mode), dtype=np.uint8)
    return values[..., None] if values.ndim == 2 else values


@kernel("EncodePng", devices=(CPU,))
def encode_png(ctx, image, *, compression):
    Image = _pillow(ctx)
    if image.ndim != 3:
        ctx.fail(f"image must be 3-dimensional{list(image.shape)}")
    channels = image.shape[2]
    if channels not in (1, 2, 3, 4):
        ctx.fail(f"image must have 1, 2, 3, or 4 channels, got {channels}")
    if not -1 <= compression <= 9:
        ctx.fail(f"compression should be in [-1,9], got {compression}")
    level = 6 if compression == -1 else compression
    buffer = io.BytesIO()
    if image.dtype == np.uint16:
        if channels != 1:
            ctx.fail("EncodePng of 16-bit images supports one channel only here (Pillow has no 16-bit colour)")
        Image.fromarray(np.ascontiguousarray(image[..., 0]).astype("<u2"), "I;16").save(
            buffer, "PNG", compress_level=level)
    else:
        mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
        pixels = image[..., 0] if channels == 1 else image
        Image.fromarray(np.ascontiguousarray(pixels), mode).save(buffer, "PNG", compress_level=level)
    return np.array(buffer.getvalue(), dtype=object)
