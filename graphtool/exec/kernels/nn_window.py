"""Sliding windows over the spatial dims of channels-last tensors [N, *spatial, C]: the geometry
convolutions and pooling share, a strided view of every window, and that view's adjoint.

Geometry follows TensorFlow's GetWindowedOutputSizeVerbose: a window of k taps dilated by d
spans (k - 1) * d + 1 elements; VALID adds no padding, SAME pads just enough for
ceil(size / stride) outputs and puts the odd element of padding after, EXPLICIT takes the pads
given. Kernels never loop over pixels: the view turns every window into array axes
(im2col without a copy until BLAS needs one), and the adjoint loops over the window's taps only.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

import numpy as np

from .nn_common import from_channels_last, spatial_entries, to_channels_last, upcast

# Convolutions unroll their windows (im2col) in blocks of about this size: it bounds the memory
# an im2col takes and keeps the copy and the matmul in cache (measured: 1-4 MiB blocks run
# 20-30% faster than 8 MiB and more).
CHUNK_BYTES = 4 << 20
# On a GPU a block costs kernel launches and Python calls, not cache misses: blocks are made as
# large as this (the unrolled windows of a whole batch, for typical layers), so a convolution is a
# few large products. Measured on an H200 (4 conv layers, 32x64x64x64): 4 MiB blocks made the
# step 5x the direct cupy im2col; whole-batch blocks match it.
DEVICE_CHUNK_BYTES = 512 << 20


def chunk_bytes(xp) -> int:
    """The block size for kernels computing with array module `xp`."""
    return CHUNK_BYTES if xp is None or getattr(xp, "__name__", "numpy") == "numpy" else DEVICE_CHUNK_BYTES


@dataclass(frozen=True)
class Window:
    """Where each output position's window sits over a channels-last input."""
    in_sizes: tuple[int, ...]
    taps: tuple[int, ...]                   # window size per spatial dim
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]       # (before, after) per spatial dim
    out_sizes: tuple[int, ...]

    @property
    def is_padded(self) -> bool:
        return any(before or after for before, after in self.pads)

    @property
    def padded_sizes(self) -> tuple[int, ...]:
        return tuple(size + before + after for size, (before, after) in zip(self.in_sizes, self.pads))

    @property
    def tap_count(self) -> int:
        return prod(self.taps)

    def tap_offsets(self) -> list[tuple[int, ...]]:
        """Every tap of the window as a per-dim index tuple, in row-major order (tap i of the
        flattened window is the i-th entry; TensorFlow scans windows in this order)."""
        return list(product(*(range(k) for k in self.taps)))

    def tap_slices(self, tap: tuple[int, ...]) -> tuple[slice, ...]:
        """The padded-input elements that `tap` reads for every output position, per spatial dim."""
        return tuple(slice(t * d, t * d + (out - 1) * s + 1, s) if out else slice(0, 0)
                     for t, d, s, out in zip(tap, self.dilations, self.strides, self.out_sizes))

    def tap_validity(self, xp, tap: tuple[int, ...]):
        """Boolean [1, *out, 1]: which output positions' `tap` falls inside the input rather than
        in the padding; None when all of them do. (Host metadata, one value per output position.)"""
        masks = []
        for t, d, s, out, size, (before, _) in zip(tap, self.dilations, self.strides, self.out_sizes,
                                                   self.in_sizes, self.pads):
            positions = np.arange(out) * s + t * d - before
            masks.append((positions >= 0) & (positions < size))
        if all(mask.all() for mask in masks):
            return None
        return xp.asarray(_outer(np.logical_and, masks).reshape(1, *self.out_sizes, 1))

    def valid_counts(self, xp, dtype):
        """[1, *out, 1]: how many of each window's taps fall inside the input (AvgPool's divisor)."""
        counts = []
        for k, d, s, out, size, (before, _) in zip(self.taps, self.dilations, self.strides,
                                                   self.out_sizes, self.in_sizes, self.pads):
            start = np.arange(out) * s - before
            counts.append(np.maximum(np.minimum(start + (k - 1) * d + 1, size) - np.maximum(start, 0), 0))
        return xp.asarray(_outer(np.multiply, counts).reshape(1, *self.out_sizes, 1), dtype=dtype)


def _outer(ufunc, vectors):
    """ufunc's outer product of per-dim vectors: an array with one axis per vector."""
    result = vectors[0]
    for vector in vectors[1:]:
        result = ufunc.outer(result, vector)
    return result


def _c_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as C++ does (TensorFlow's size arithmetic)."""
    quotient = abs(a) // b
    return quotient if a >= 0 else -quotient


def window_geometry(in_sizes, taps, strides, dilations, padding: str, pads=None):
    """((before, after) pads, output sizes) per spatial dim, as TensorFlow computes them (an
    output size may come out negative: make_window refuses it; the JIT checks it the same way)."""
    out_sizes, all_pads = [], []
    for i, (size, k, s, d) in enumerate(zip(in_sizes, taps, strides, dilations)):
        span = (k - 1) * d + 1
        if padding == "SAME":
            out = _c_div(size + s - 1, s)
            needed = max(0, (out - 1) * s + span - size)
            before, after = needed // 2, needed - needed // 2
        else:
            before, after = pads[i] if padding == "EXPLICIT" else (0, 0)
            out = _c_div(size + before + after - span + s, s)
        out_sizes.append(out)
        all_pads.append((before, after))
    return all_pads, out_sizes


def make_window(ctx, in_sizes, taps, strides, dilations, padding: str, pads=None) -> Window:
    """The window of a node: sizes, taps, strides, dilations and explicit (before, after) pads
    all per spatial dim. Fails as TensorFlow does when the output size would be negative."""
    if padding == "EXPLICIT" and len(pads) != len(in_sizes):
        ctx.fail(f"explicit_paddings attribute must contain {2 * (len(in_sizes) + 2)} values")
    for s, d in zip(strides, dilations):
        if s < 1 or d < 1:
            ctx.fail(f"Stride and dilation must be >= 1, got stride {s} and dilation {d}")
    all_pads, out_sizes = window_geometry(in_sizes, taps, strides, dilations, padding, pads)
    for size, k, s, d, out in zip(in_sizes, taps, strides, dilations, out_sizes):
        if out < 0:
            ctx.fail(f"Computed output size would be negative: {out} [input_size: {size}, "
                     f"effective_filter_size: {(k - 1) * d + 1}, stride: {s}]")
    return Window(tuple(in_sizes), tuple(taps), tuple(strides), tuple(dilations), tuple(all_pads),
                  tuple(out_sizes))


def explicit_pads(flat: list[int], data_format: str) -> list[tuple[int, int]]:
    """The spatial (before, after) pairs of an explicit_paddings attr given in data_format order."""
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)]
    return spatial_entries(pairs, data_format)


def pad_spatial(xp, x, window: Window, value=0):
    """`x` ([N, *in, C]) padded with `value` as the window requires."""
    if not window.is_padded:
        return x
    if xp.__name__ not in ("numpy", "cupy"):   # arrays without item assignment (the JIT traces with jax.numpy)
        return xp.pad(x, ((0, 0), *window.pads, (0, 0)), constant_values=value)
    # The interior copied once and only the border slabs filled: np.pad measured 1.3-1.6x slower
    # (0.42 against 0.27-0.35 ms for [8, 64, 64, 16] float32 padded by one pixel).
    padded = xp.empty((x.shape[0], *window.padded_sizes, x.shape[-1]), x.dtype)
    for dim, (before, after) in enumerate(window.pads):
        for border in (slice(0, before), slice(before + window.in_sizes[dim], None)):
            padded[(slice(None),) * (dim + 1) + (border,)] = value
    interior = tuple(slice(before, before + size) for (before, _), size in zip(window.pads, window.in_sizes))
    padded[(slice(None), *interior, slice(None))] = x
    return padded


def crop_padding(padded, window: Window):
    """The inverse of pad_spatial: the input region of a padded [N, *padded, C] tensor."""
    if not window.is_padded:
        return padded
    region = tuple(slice(before, before + size) for (before, _), size in zip(window.pads, window.in_sizes))
    return padded[(slice(None), *region, slice(None))]


def window_view(xp, padded, window: Window):
    """A [N, *out, *taps, C] view of a padded [N, *padded, C] tensor: element (n, o, t, c) is
    what tap t of output position o reads. No data moves; a reshape of it is an im2col."""
    batch_stride, *spatial_strides, channel_stride = padded.strides
    shape = (padded.shape[0], *window.out_sizes, *window.taps, padded.shape[-1])
    strides = (batch_stride,
               *(st * s for st, s in zip(spatial_strides, window.strides)),
               *(st * d for st, d in zip(spatial_strides, window.dilations)),
               channel_stride)
    return xp.lib.stride_tricks.as_strided(padded, shape, strides)


def tap_view(padded, window: Window, tap: tuple[int, ...]):
    """[N, *out, C]: what `tap` reads for every output position (one slice of window_view)."""
    return padded[(slice(None), *window.tap_slices(tap), slice(None))]


def accumulate_taps(xp, tap_values, window: Window, batch: int, channels: int, dtype,
                    last_tap_first: bool = False, out=None):
    """The adjoint of window_view: adds tap_values(i, tap) ([N, *out, C], or broadcastable to it)
    into the input elements that tap i reads, and returns the unpadded [N, *in, C] sum.
    `last_tap_first` adds the taps in reverse, the order of a col2im that walks the output
    positions forward (an input element meets the window's last tap at the first output).
    `out`: an [N, *in, C] array to write the sum into (saves a copy)."""
    padded = xp.zeros((batch, *window.padded_sizes, channels), dtype)
    taps = list(enumerate(window.tap_offsets()))
    for index, tap in (reversed(taps) if last_tap_first else taps):
        region = (slice(None), *window.tap_slices(tap), slice(None))
        padded[region] += tap_values(index, tap)
    if out is not None:
        out[...] = crop_padding(padded, window)
        return out
    return xp.ascontiguousarray(crop_padding(padded, window))


def output_blocks(window: Window, batch: int, bytes_per_output: int, at_least: int = 1,
                  chunk: int | None = None) -> list[tuple[slice, slice]]:
    """(batch slice, slice of the first output dim) index pairs that split [N, *out] into blocks
    whose unrolled windows (bytes_per_output per output position) take about `chunk` bytes:
    several images per block when they are small, slices of one image's rows when it is large;
    and `at_least` blocks where there are that many rows (one per thread working on them).
    `chunk` defaults to CHUNK_BYTES."""
    chunk = CHUNK_BYTES if chunk is None else chunk
    rows = window.out_sizes[0]
    row_bytes = max(1, bytes_per_output * prod(window.out_sizes[1:]))
    if batch >= at_least and (row_bytes * rows <= chunk or rows <= 1):
        images = max(1, min(chunk // (row_bytes * max(rows, 1)), -(-batch // at_least)))
        return [(slice(start, min(start + images, batch)), slice(None)) for start in range(0, batch, images)]
    per_block = max(1, min(chunk // row_bytes, -(-rows * batch // at_least)))
    return [(slice(image, image + 1), slice(start, min(start + per_block, rows)))
            for image in range(batch) for start in range(0, rows, per_block)]


def image_blocks(batch: int, bytes_per_image: int, at_least: int = 1, chunk: int | None = None) -> list[slice]:
    """Slices of the batch of about `chunk` bytes each (at least one image), and at least
    `at_least` of them where the batch has that many images (one per thread working on them)."""
    chunk = CHUNK_BYTES if chunk is None else chunk
    images = max(1, min(chunk // max(1, bytes_per_image), -(-batch // max(1, at_least))))
    return [slice(first, min(first + images, batch)) for first in range(0, batch, images)]


def windowed_average(ctx, value, window: Window, data_format: str):
    """AvgPool in any number of spatial dims: each window's mean over the taps inside the input
    (padding does not count), summed tap by tap in float32 or wider as TensorFlow does."""
    xp = ctx.xp
    padded = pad_spatial(xp, to_channels_last(xp, upcast(value), data_format), window)
    total = xp.zeros((padded.shape[0], *window.out_sizes, padded.shape[-1]), padded.dtype)
    for tap in window.tap_offsets():
        total += tap_view(padded, window, tap)
    result = total / window.valid_counts(xp, total.dtype)
    return from_channels_last(xp, result, data_format).astype(ctx.out_dtype(0), copy=False)


def windowed_average_grad(ctx, grad_last, window: Window, batch: int, channels: int, data_format: str):
    """The gradient of windowed_average: each window's gradient (channels last) is shared equally
    among its taps inside the input."""
    xp = ctx.xp
    share = grad_last / window.valid_counts(xp, grad_last.dtype)
    result = accumulate_taps(xp, lambda index, _: share, window, batch, channels, share.dtype)
    return from_channels_last(xp, result, data_format).astype(ctx.out_dtype(0), copy=False)
