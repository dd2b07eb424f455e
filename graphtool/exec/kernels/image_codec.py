"""DecodePng, DecodeJpeg and EncodePng through Pillow (an optional dependency: `pip install
dftool[image]`; graphs without these ops never import it). Pillow has no 16-bit colour modes, so
16-bit grey+alpha/RGB/RGBA PNGs are decoded and every 16-bit PNG is written here with zlib.

PNG is lossless, so decoding agrees with TensorFlow bit for bit. JPEG decoding depends on the
IDCT (see decode_jpeg): bit-exact for grey images or output, INTEGER_ACCURATE and
fancy_upscaling=False;
colour images with TensorFlow's defaults differ by a few levels (the fixture measures at most 3). The string tensors are
numpy object arrays of bytes.
"""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np

from .registry import CPU, kernel


def _pillow(ctx):
    try:
        from PIL import Image
    except ImportError:
        ctx.fail(f"{ctx.op} needs Pillow (install dftool[image] or pillow)")
    # The size check is ours (_check_decoded_size, from --max-tensor-bytes): Pillow's own pixel
    # limit would warn on stderr below it and refuse pictures TensorFlow decodes above it.
    Image.MAX_IMAGE_PIXELS = None
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
        _check_decoded_size(ctx, image, kind)
        if kind == "JPEG":
            image.draft("L" if grey else image.mode,
                        (-(-image.width // ratio), -(-image.height // ratio)) if ratio > 1 else None)
            if fast_idct(image):
                image.decoderconfig = (image.decoderconfig[0], 1)   # (scale, draft)
        image.load()
    except (OSError, SyntaxError, ValueError) as exc:
        ctx.fail(f"Invalid {kind} data: {exc}")
    return image


def _check_decoded_size(ctx, image, kind: str) -> None:
    """Refuse, from the header alone, an image whose pixels would exceed the tensor bound: a few
    hundred bytes of PNG can declare a 65535 x 65535 picture (a decompression bomb)."""
    from ... import limits

    bound = limits.current().max_tensor_bytes
    needed = image.width * image.height * 4   # Pillow holds a pixel of any mode in 4 bytes
    if needed > bound:
        ctx.fail(f"{kind} image of {image.width}x{image.height} pixels would decode to up to "
                 f"{limits.describe_bytes(needed)}, more than the tensor bound of {limits.describe_bytes(bound)} "
                 f"(raise it with --max-tensor-bytes)")


def _channels_of(mode: str) -> int:
    return {"1": 1, "L": 1, "P": 3, "I": 1, "I;16": 1, "I;16B": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4}.get(mode, 3)


def _check_channels(ctx, channels: int, allowed) -> None:
    if channels not in allowed:
        ctx.fail(f"channels must be one of {sorted(allowed)}, got {channels}")


def _to_grey(rgb, bits: int):
    """libpng's png_set_rgb_to_gray with TensorFlow's weights 0.299 and 0.587: libpng truncates
    them to 15-bit fixed point (9797, 19234, and 3737 for blue, the rest of 32768); the weighted
    sum is truncated for 8-bit samples and rounded for 16-bit ones."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    grey = (9797 * r + 19234 * g + 3737 * b + (16384 if bits == 16 else 0)) >> 15
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


# PNG colour types with more than one 16-bit sample per pixel: Pillow reads them as 8-bit, so they
# are decoded here (zlib + the five row filters); grey 16-bit goes through Pillow's I;16 mode.
_WIDE_COLOUR_CHANNELS = {4: 2, 2: 3, 6: 4}   # grey+alpha, RGB, RGBA


def _png_chunks(data: bytes):
    position = 8
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        yield kind, data[position + 8:position + 8 + length]
        position += 12 + length


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """The PNG row filters undone: [height, stride] bytes."""
    rows = np.frombuffer(raw, np.uint8)[:height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].copy()
        if kind == 1:      # Sub: a running sum per byte lane
            line = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:    # Up
            line = line + prior
        elif kind in (3, 4):   # Average, Paeth: sequential along the row
            left = np.zeros(bpp, np.int32)
            up_left = np.zeros(bpp, np.int32)
            for x in range(0, stride, bpp):
                up = prior[x:x + bpp].astype(np.int32)
                if kind == 3:
                    predicted = (left + up) >> 1
                else:
                    estimate = left + up - up_left
                    pa, pb, pc = np.abs(estimate - left), np.abs(estimate - up), np.abs(estimate - up_left)
                    predicted = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, up_left))
                line[x:x + bpp] = (line[x:x + bpp].astype(np.int32) + predicted) & 0xFF
                left, up_left = line[x:x + bpp].astype(np.int32), up
        out[y] = line
        prior = line
    return out


def _wide_colour_png(ctx, data: bytes):
    """[H, W, C] uint16 samples of a non-interlaced 16-bit grey+alpha/RGB/RGBA PNG, or None for
    other PNGs."""
    chunks = list(_png_chunks(data))
    if not chunks or chunks[0][0] != b"IHDR":
        return None
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1][:13])
    if depth != 16 or colour not in _WIDE_COLOUR_CHANNELS:
        return None
    if interlace:
        ctx.fail("interlaced 16-bit colour PNGs are not supported")
    channels = _WIDE_COLOUR_CHANNELS[colour]
    try:
        raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    except zlib.error as exc:
        ctx.fail(f"Invalid PNG data: {exc}")
    if len(raw) < height * (width * channels * 2 + 1):
        ctx.fail("Invalid PNG data: image data is truncated")
    samples = _unfilter(raw, height, width * channels * 2, channels * 2)
    return samples.view(">u2").astype(np.uint16).reshape(height, width, channels)


@kernel("DecodePng", devices=(CPU,))
def decode_png(ctx, contents, *, channels, dtype):
    _check_channels(ctx, channels, (0, 1, 2, 3, 4))
    data = _contents(ctx, contents)
    image = _open(ctx, data, "PNG")
    wide = _wide_colour_png(ctx, data)
    if wide is not None:
        return _narrowed(ctx, _png_channels(wide, channels, 16), True)
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
    return _narrowed(ctx, _png_channels(values, channels, 16 if sixteen_bit else 8), sixteen_bit)


def _narrowed(ctx, values, sixteen_bit: bool):
    """Samples in the requested dtype."""
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
        return np.array(_encode_png16(image, level), dtype=object)
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
    pixels = image[..., 0] if channels == 1 else image
    Image.fromarray(np.ascontiguousarray(pixels), mode).save(buffer, "PNG", compress_level=level)
    return np.array(buffer.getvalue(), dtype=object)


def _encode_png16(image, level: int) -> bytes:
    """A 16-bit PNG written directly (Pillow has no 16-bit colour modes): unfiltered rows of
    big-endian samples, zlib-compressed."""
    height, width, channels = image.shape
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = image.astype(">u2").reshape(height, width * channels).view(np.uint8)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", width, height, 16, colour, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, level))
            + chunk(b"IEND", b""))
