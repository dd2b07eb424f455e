"""DecodePng, DecodeJpeg and EncodePng through Pillow (an optional dependency: `pip install
dftool[image]`; graphs without these ops never import it).

PNG is lossless, so decoding agrees with TensorFlow bit for bit. JPEG decoding depends on the
IDCT (see decode_jpeg): bit-exact for grey images or output, INTEGER_ACCURATE and
fancy_upscaling=False;
colour images with TensorFlow's defaults differ by a few levels (the fixture measures at most 3). The string tensors are
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


def _open(ctx, data: bytes, kind: str, ratio: int = 1, fast_idct=None, grey: bool = False):
    """The decoded image. JPEGs are decoded at 1/ratio scale by the IDCT; `fast_idct(image)` says
    whether to use libjpeg's fast integer IDCT, which Pillow's decoder selects (together with
    plain chroma upsampling) in its draft mode; with `grey`, libjpeg decodes the luma only."""
    Image = _pillow(ctx)
    try:
        image = Image.open(io.BytesIO(data))
        if image.format != kind:
            ctx.fail(f"Got {image.format or 'unknown format'} data where {kind} was expected")
        if kind == "JPEG":
            image.draft("L" if grey else image.mode,
                        (-(-image.width // ratio), -(-image.height // ratio)) if ratio > 1 else None)
            if fast_idct(image):
                image.decoderconfig = (image.decoderconfig[0], 1)   # (scale, draft)
        image.load()
    except (OSError, SyntaxError, ValueError) as exc:
        ctx.fail(f"Invalid {kind} data: {exc}")
    return image


def _channels_of(mode: str) -> int:
    return {"1": 1, "L": 1, "P": 3, "I": 1, "I;16": 1, "I;16B": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4}.get(mode, 3)


def _check_channels(ctx, channels: int, allowed) -> None:
    if channels not in allowed:
        ctx.fail(f"channels must be one of {sorted(allowed)}, got {channels}")


def _to_grey(rgb, bits: int):
    """libpng's png_set_rgb_to_gray with TensorFlow's weights 0.299 and 0.587: libpng truncates
    them to 15-bit fixed point (9797, 19234, and 3737 for blue, the rest of 32768) and truncates
    the weighted sum."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    grey = (9797 * r + 19234 * g + 3737 * b) >> 15
    return grey.astype(np.uint16 if bits == 16 else np.uint8)[..., None]


def _png_channels(values, channels: int, bits: int):
    """[H, W, C] samples converted to `channels` as libpng's transforms do: grey expands to RGB,
    alpha is added opaque or stripped (never composited), colour becomes grey by luminance."""
    if channels == 0 or channels == values.shape[-1]:
        return values
    opaque = np.full(values.shape[:-1] + (1,), (1 << bits) - 1, values.dtype)
    has_alpha = values.shape[-1] in (2, 4)
    colour = values.shape[-1] >= 3
    base = values[..., :-1] if has_alpha else values
    alpha = values[..., -1:] if has_alpha else opaque
    if channels in (1, 2):
        grey = _to_grey(base, bits) if colour else base
        return grey if channels == 1 else np.concatenate([grey, alpha], axis=-1)
    rgb = base if colour else np.concatenate([base] * 3, axis=-1)
    return rgb if channels == 3 else np.concatenate([rgb, alpha], axis=-1)


@kernel("DecodePng", devices=(CPU,))
def decode_png(ctx, contents, *, channels, dtype):
    _check_channels(ctx, channels, (0, 1, 2, 3, 4))
    image = _open(ctx, _contents(ctx, contents), "PNG")
    if image.mode == "P":     # palette images expand to RGB, or RGBA when the palette has alpha
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif image.mode == "1":
        image = image.convert("L")
    sixteen_bit = image.mode.startswith("I")
    if sixteen_bit:
        values = np.asarray(image, dtype=np.uint32).astype(np.uint16)
    else:
        values = np.asarray(image if image.mode in ("L", "LA", "RGB", "RGBA") else image.convert("RGB"),
                            dtype=np.uint8)
    if values.ndim == 2:
        values = values[..., None]
    values = _png_channels(values, channels, 16 if sixteen_bit else 8)
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
    # TensorFlow's default IDCT is libjpeg's fast integer one (dct_method '' or INTEGER_FAST).
    # Pillow reaches it only with plain chroma upsampling, so it is bit-exact for grey JPEGs and
    # for fancy_upscaling=False; colour JPEGs with fancy upsampling use the accurate IDCT (a few
    # levels off the fast one), and INTEGER_ACCURATE is exact.
    fast = dct_method != "INTEGER_ACCURATE"

    def fast_idct(image):   # grey output needs no chroma upsampling
        return fast and (image.mode == "L" or not fancy_upscaling)
    image = _open(ctx, _contents(ctx, contents), "JPEG", ratio, fast_idct, grey=channels == 1)
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
        height, width = image.shape[:2]
        Image.frombytes("I;16", (width, height), image[..., 0].astype("<u2").tobytes()).save(
            buffer, "PNG", compress_level=level)
    else:
        mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
        pixels = image[..., 0] if channels == 1 else image
        Image.fromarray(np.ascontiguousarray(pixels), mode).save(buffer, "PNG", compress_level=level)
    return np.array(buffer.getvalue(), dtype=object)
