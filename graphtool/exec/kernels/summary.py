"""Kernels of the summary ops (graphtool/ops/summary.py): each returns a scalar string holding a
serialized `Summary` (schemas/summary.proto) with TensorFlow's contents, so that event files a run
writes show in TensorBoard as TensorFlow's do.

Follows TensorFlow's kernels (core/kernels/summary_op.cc, summary_image_op.cc,
summary_audio_op.cc, summary_tensor_op.cc, c/kernels/histogram_summary_op.cc and
core/lib/histogram/histogram.cc): the same checks and messages, the histogram's default buckets
and its empty-bucket folding, the image scaling done in the image's own precision, and 16-bit WAV
audio. Images are PNG-encoded through Pillow (the `image` extra), so their bytes may differ from
libpng's while the decoded pixels are the same. Summaries live in host memory: on a GPU device
these kernels run on the host (host_kernel), as string ops do.

TensorFlow runs kernels with denormals flushed to zero (FTZ/DAZ): a conversion or comparison
reads a float or double denormal as 0, and a double converted to a float denormal becomes 0. The
kernels flush where TensorFlow converts (ScalarSummary from double, HistogramSummary's values,
ImageSummary's float32 min/max), and a float denormal that TensorFlow only copies stays.
"""
from __future__ import annotations

import io
import struct

import numpy as np
from google.protobuf.message import DecodeError

from ... import dtypes
from ...proto import summary_pb2
from ...tensor import from_ndarray
from .gpu_host_memory import host_kernel
from .math_common import BFLOAT16, flush_denormals
from .nn_common import shape_text
from .registry import KernelContext

_DBL_MAX = float(np.finfo(np.float64).max)


def _summary_output(summary: summary_pb2.Summary) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


def _text(ctx: KernelContext, value, what: str = "tag") -> str:
    """A string tensor element as the str a proto3 string field holds."""
    if isinstance(value, str):
        return value
    data = bytes(value)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        ctx.fail(f"{what} {data!r} is not valid UTF-8 (Summary tags are proto3 strings)")


def _scalar_tag(ctx, tag, message: str) -> str:
    array = np.asarray(tag, dtype=object)
    if array.ndim != 0:
        ctx.fail(message)
    return _text(ctx, array.item())


# --- ScalarSummary --------------------------------------------------------------------------

@host_kernel("ScalarSummary")
def scalar_summary(ctx, tags, values):
    tags = np.asarray(tags, dtype=object)
    values = np.asarray(values)
    if tags.shape != values.shape:
        single = f" (tag '{_text(ctx, tags.reshape(-1)[0])}')" if tags.size == 1 else ""
        ctx.fail(f"tags and values are not the same shape: {shape_text(tags.shape)} != "
                 f"{shape_text(values.shape)}{single}")
    summary = summary_pb2.Summary()
    # float(value): TensorFlow converts each value to a C float; only a conversion from double
    # is an instruction that flushes (other floats are copied or widened exactly).
    floats = values.reshape(-1).astype(np.float32)
    if values.dtype == np.float64:
        floats = flush_denormals(np, floats)
    for tag, value in zip(tags.reshape(-1), floats):
        summary.value.add(tag=_text(ctx, tag), simple_value=float(value))
    return _summary_output(summary)


# --- HistogramSummary -----------------------------------------------------------------------

def _default_bucket_limits() -> np.ndarray:
    """TensorFlow's default bucket limits: 1e-12 growing by 10% up to 1e20, mirrored to the
    negatives, with 0 between and +-DBL_MAX at the ends (histogram.cc InitDefaultBuckets)."""
    positive = []
    value = 1.0e-12
    while value < 1.0e20:
        positive.append(value)
        value *= 1.1
    positive.append(_DBL_MAX)
    negative = [-v for v in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


DEFAULT_BUCKET_LIMITS = _default_bucket_limits()


def histogram_proto(values: np.ndarray, limits: np.ndarray = DEFAULT_BUCKET_LIMITS) -> summary_pb2.HistogramProto:
    """The HistogramProto TensorFlow's Histogram encodes for finite float64 `values`, in order.

    Value v counts in the first bucket whose limit exceeds it; min and max start at the last
    limit and -DBL_MAX; sum and sum_squares are accumulated in order, one double at a time; runs
    of empty buckets fold into one entry carrying the run's last limit. Arithmetic and
    comparisons read denormals as 0 (DAZ), while min and max keep the value they copied."""
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    seen = flush_denormals(np, values)
    # A value equal to the last limit has no bucket above it (out of bounds in TensorFlow's
    # std::upper_bound indexing): it counts in the last one.
    index = np.minimum(np.searchsorted(limits, seen, side="right"), len(limits) - 1)
    counts = np.bincount(index, minlength=len(limits)).astype(np.float64)
    proto = summary_pb2.HistogramProto()
    proto.min, proto.max = float(limits[-1]), -_DBL_MAX
    if values.size:
        # argmin/argmax pick the first of equal values, as the strict comparisons in Add do
        # (0.0 before -0.0 stays 0.0).
        low, high = int(np.argmin(seen)), int(np.argmax(seen))
        if seen[low] < proto.min:
            proto.min = float(values[low])
        if seen[high] > proto.max:
            proto.max = float(values[high])
        proto.sum = float(np.add.accumulate(seen)[-1])
        proto.sum_squares = float(np.add.accumulate(flush_denormals(np, seen * seen))[-1])
    proto.num = float(values.size)
    bucket_limits, buckets = [], []
    i, n = 0, len(limits)
    nonzero = counts > 0.0
    while i < n:
        end, count = limits[i], counts[i]
        i += 1
        if not nonzero[i - 1]:
            while i < n and not nonzero[i]:
                end, count = limits[i], counts[i]
                i += 1
        bucket_limits.append(float(end))
        buckets.append(float(count))
    proto.bucket_limit.extend(bucket_limits)
    proto.bucket.extend(buckets)
    return proto


@host_kernel("HistogramSummary")
def histogram_summary(ctx, tag, values):
    tag_text = _scalar_tag(ctx, tag, "tags must be scalar")
    values = np.asarray(values).reshape(-1)
    # static_cast<double> of a float (or bfloat16, widened to float) denormal reads it as 0 (DAZ);
    # half and integers convert exactly.
    if values.dtype in (np.float32, BFLOAT16):
        values = flush_denormals(np, values.astype(np.float32))
    flat = values.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        if np.isnan(flat[bad[0]]):
            ctx.fail(f"Nan in summary histogram for: {ctx.node_name}")
        ctx.fail(f"Infinity in Histogram for: {ctx.node_name}")
    summary = summary_pb2.Summary()
    summary.value.add(tag=tag_text).histo.CopyFrom(histogram_proto(flat))
    return _summary_output(summary)


# --- ImageSummary ---------------------------------------------------------------------------

def _image_tags(tag: str, count: int, max_outputs: int, kind: str) -> list[str]:
    """'tag/image/0', 'tag/image/1', ... or 'tag/image' alone when at most one is asked for
    (the tags depend on the number requested, not the number produced)."""
    if max_outputs > 1:
        return [f"{tag}/{kind}/{i}" for i in range(count)]
    return [f"{tag}/{kind}"] * count


def normalize_float_image(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """One [h*w, depth] float image as uint8 the way TensorFlow's NormalizeFloatImage does it:
    min and max over the pixels whose channels are all finite (in float32); if any is negative
    the values are scaled by 127/max|v| and shifted by 128, else scaled by 255/max; the affine map
    is computed in the image's own dtype and truncated to uint8; other pixels get bad_color."""
    dtype = image.dtype
    finite = np.all(np.isfinite(image), axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        # In float32, compared with denormals read as 0.
        good = flush_denormals(np, image[finite].astype(np.float32))
    image_min = np.float32(good.min()) if good.size else np.float32(np.inf)
    image_max = np.float32(good.max()) if good.size else np.float32(-np.inf)
    threshold = np.float32(1e-6)
    if image_min < 0:
        max_val = max(abs(image_min), abs(image_max))
        scale32 = np.float32(0.0) if max_val < threshold else np.float32(127.0) / max_val
        offset32 = np.float32(128.0)
    else:
        scale32 = np.float32(0.0) if image_max < threshold else np.float32(255.0) / image_max
        offset32 = np.float32(0.0)
    scale, offset = dtype.type(scale32), dtype.type(offset32)
    out = np.empty(image.shape, dtype=np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):
        # One rounding per operation in the image's dtype (half arithmetic rounds each result).
        mapped = (image[finite] * scale).astype(dtype) + offset
        out[finite] = np.trunc(mapped.astype(np.float64)).astype(np.int64).astype(np.uint8)
    out[~finite] = bad_color[: image.shape[1]]
    return out


def _pillow(ctx):
    try:
        from PIL import Image
    except ImportError:
        ctx.fail(f"{ctx.op} needs Pillow to encode PNG images (install dftool[image] or pillow)")
    return Image


def _png(ctx, pixels: np.ndarray, height: int, width: int, depth: int) -> bytes:
    """8-bit PNG at zlib's default level (TensorFlow's compression -1)."""
    Image = _pillow(ctx)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[depth]
    shaped = pixels.reshape(height, width) if depth == 1 else pixels.reshape(height, width, depth)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(shaped), mode).save(buffer, "PNG", compress_level=6)
    return buffer.getvalue()


@host_kernel("ImageSummary")
def image_summary(ctx, tag, tensor, *, max_images, bad_color):
    if max_images >= 1 << 31:
        ctx.fail("max_images must be < 2^31")
    bad_color = np.asarray(bad_color)
    if bad_color.dtype != np.uint8:
        ctx.fail(f"bad_color must be uint8, got {dtypes.from_numpy(bad_color.dtype).name}")
    if bad_color.ndim != 1:
        ctx.fail(f"bad_color must be a vector, got shape {shape_text(bad_color.shape)}")
    base_tag = _scalar_tag(ctx, tag, "Tags must be a scalar")
    tensor = np.asarray(tensor)
    if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
        ctx.fail(f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape_text(tensor.shape)}")
    batch, height, width, depth = tensor.shape
    if max(batch, height, width) >= 1 << 31 or height * width >= 1 << 29:
        ctx.fail(f"Tensor too large for summary {shape_text(tensor.shape)}")
    if height * width <= 0:
        ctx.fail(f"input tensor must have non-zero dims. Found: [{batch}, {height}, {width}, {depth}].")
    is_float = tensor.dtype != np.uint8
    if is_float and bad_color.shape[0] < depth:
        ctx.fail(f"expected depth <= bad_color.size, got depth = {depth}, bad_color.size = {bad_color.shape[0]}")
    count = min(max_images, batch)
    summary = summary_pb2.Summary()
    for i, value_tag in enumerate(_image_tags(base_tag, count, max_images, "image")):
        pixels = tensor[i].reshape(height * width, depth)
        if is_float:
            pixels = normalize_float_image(pixels, bad_color)
        value = summary.value.add(tag=value_tag)
        value.image.height, value.image.width, value.image.colorspace = height, width, depth
        value.image.encoded_image_string = _png(ctx, pixels, height, width, depth)
    return _summary_output(summary)


# --- AudioSummaryV2 / AudioSummary ----------------------------------------------------------

def wav_s16le(ctx, audio: np.ndarray, sample_rate: int) -> bytes:
    """[frames, channels] float samples as a 16-bit PCM WAV file (TensorFlow's
    EncodeAudioAsS16LEWav): roundf(x * 32768), clamped to int16."""
    frames, channels = audio.shape
    if channels == 0:
        # TensorFlow hands the encoder no buffer for audio without channels (frames without
        # samples are fine).
        ctx.fail("audio is null")
    if sample_rate == 0 or sample_rate > 0xFFFFFFFF:
        ctx.fail(f"sample_rate must be in (0, 2^32), got: {sample_rate}")
    if channels > 0xFFFF:
        ctx.fail(f"num_channels must be in (0, 2^16), got: {channels}")
    data_size = frames * channels * 2
    file_size = 44 + data_size
    if file_size > 0xFFFFFFFF:
        ctx.fail("Provided channels and frames cannot be encoded as a WAV.")
    with np.errstate(invalid="ignore"):
        scaled = audio.astype(np.float32) * np.float32(32768.0)
        # roundf: half away from zero. NaN (undefined in TensorFlow) is written as 0, as
        # TensorFlow's x86 build does; +-inf clamp to the int16 range.
        rounded = np.where(np.isnan(scaled), 0.0, np.sign(scaled) * np.floor(np.abs(scaled) + 0.5))
    samples = np.clip(rounded, -32768, 32767).astype("<i2")
    header = (b"RIFF" + struct.pack("<I", file_size - 8) + b"WAVE" + b"fmt "
              + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * 2 * channels,
                            2 * channels, 16)
              + b"data" + struct.pack("<I", data_size))
    return header + samples.tobytes()


def _audio_summary(ctx, tag, tensor, sample_rate: float, max_outputs: int):
    base_tag = _scalar_tag(ctx, tag, "Tag must be a scalar")
    tensor = np.asarray(tensor)
    if tensor.ndim not in (2, 3):
        ctx.fail(f"Tensor must be 3-D or 2-D, got: {shape_text(tensor.shape)}")
    rate = np.float32(sample_rate)
    if not rate > 0:
        ctx.fail("sample_rate must be > 0")
    batch, frames = tensor.shape[0], tensor.shape[1]
    channels = 1 if tensor.ndim == 2 else tensor.shape[2]
    # lrintf: to the nearest integer, ties to even; a rate that rounds to 0 is written as 1. A
    # rate beyond a long (inf) comes out of lrintf as LONG_MIN, read as the size_t 2^63.
    rounded = np.rint(np.float64(rate))
    wav_rate = max(int(rounded), 1) if rounded < 2.0 ** 63 else 2 ** 63
    summary = summary_pb2.Summary()
    count = min(max_outputs, batch)
    for i, value_tag in enumerate(_image_tags(base_tag, count, max_outputs, "audio")):
        value = summary.value.add(tag=value_tag)
        audio = value.audio
        audio.sample_rate, audio.num_channels, audio.length_frames = float(rate), channels, frames
        audio.content_type = "audio/wav"
        audio.encoded_audio_string = wav_s16le(ctx, tensor[i].reshape(frames, channels), wav_rate)
    return _summary_output(summary)


@host_kernel("AudioSummaryV2")
def audio_summary_v2(ctx, tag, tensor, sample_rate, *, max_outputs):
    rate = np.asarray(sample_rate)
    if rate.size != 1:
        ctx.fail("sample_rate must be rank-0 or contain a single value")
    return _audio_summary(ctx, tag, tensor, float(rate.reshape(-1)[0]), max_outputs)


@host_kernel("AudioSummary")
def audio_summary(ctx, tag, tensor, *, sample_rate, max_outputs):
    return _audio_summary(ctx, tag, tensor, sample_rate, max_outputs)


# --- MergeSummary ---------------------------------------------------------------------------

@host_kernel("MergeSummary")
def merge_summary(ctx, *inputs):
    merged = summary_pb2.Summary()
    seen: set[str] = set()
    for value in inputs:
        for serialized in np.asarray(value, dtype=object).reshape(-1):
            part = summary_pb2.Summary()
            try:
                part.ParseFromString(bytes(serialized) if not isinstance(serialized, str) else serialized.encode())
            except DecodeError:
                ctx.fail("Could not parse one of the summary inputs")
            for entry in part.value:
                # TensorSummary values have no tag: they are never duplicates.
                if entry.tag and entry.tag in seen:
                    ctx.fail(f"Duplicate tag {entry.tag} found in summary inputs")
                seen.add(entry.tag)
                merged.value.append(entry)
    return _summary_output(merged)


# --- TensorSummaryV2 / TensorSummary --------------------------------------------------------

def _tensor_proto(ctx, tensor, dtype):
    """TensorFlow's encoding: strings as string_val, everything else as tensor_content."""
    if dtype.base.numpy is None or dtype.base in (dtypes.resource, dtypes.variant):
        ctx.fail(f"cannot summarize a {dtype.base.name} tensor")
    return from_ndarray(np.asarray(tensor), dtype.base, compact=False)


@host_kernel("TensorSummaryV2")
def tensor_summary_v2(ctx, tag, tensor, serialized_summary_metadata, *, T):
    tag_text = _scalar_tag(ctx, tag, "tag must be scalar")
    metadata = np.asarray(serialized_summary_metadata, dtype=object)
    if metadata.ndim != 0:
        ctx.fail("serialized_summary_metadata must be scalar")
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=tag_text)
    value.tensor.CopyFrom(_tensor_proto(ctx, tensor, T))
    value.metadata.SetInParent()
    try:
        value.metadata.ParseFromString(bytes(metadata.item()))
    except DecodeError:
        # TensorFlow ignores whether the metadata parsed; what it keeps of a bad one is empty.
        value.metadata.Clear()
        value.metadata.SetInParent()
    return _summary_output(summary)


@host_kernel("TensorSummary")
def tensor_summary(ctx, tensor, *, T):
    summary = summary_pb2.Summary()
    value = summary.value.add(node_name=ctx.node_name)
    value.tensor.CopyFrom(_tensor_proto(ctx, tensor, T))
    return _summary_output(summary)
