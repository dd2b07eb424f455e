"""Convolutions as matrix products on the image itself, without an im2col copy: 1x1 convolutions
(a product per block of pixels), stride-1 convolutions of few channels (a product per window
tap) and stride-1 depthwise ones of few channels (a multiply-add per tap on whole rows).

The per-tap engine: with stride 1, window tap (i, j) of output position (h, w) reads padded pixel
(h + i*dh, w + j*dw). Flatten a padded image's pixels row-major (index h * Wp + w) and compute
the output at every padded column (w < Wp, not just w < Wo): then the tap reads flat pixel
p + (i*dh*Wp + j*dw), so its operand for a run of outputs is a contiguous [L, C] slice, a BLAS
matrix as it stands. The output is the sum over taps of slice @ filter[i, j]; the Wp - Wo extra
columns per row (which read into the next row) are computed and dropped: a few percent more
arithmetic for no copy.

Each block of output rows pads its own input rows into a scratch buffer its thread reuses: the
padded copy stays in the core's cache and never costs fresh pages (a whole padded [N, Hp, Wp, C]
array took 0.3-0.4 ms to fill plus ~550 page faults, 1-1.7 ms, per [8, 64, 64, 16] layer here).

Measured single-threaded, one BLAS thread, on a layer of the 4-layer 3x3 net (batch 8, 64x64,
16 -> 16, float32), CPU-time medians of 11-21 interleaved runs on a shared, loaded machine (its
speed drifts up to 2x between runs minutes apart; ratios within a run are steadier):
  im2col (window view reshaped to [M, 9C], one K=144 matmul per block)   5.3-10.9 ms per layer
  im2col by kernel rows (3 overlapping [M, 3C] views copied, K=144)       7.7-8.7 ms
  kernel-row products (one [M, 3C] copy, 3 products of K=3C)             0.98-1.20x per-tap
  one [L, C] @ [C, 9*O] product, then 9 shifted adds                       8.9-10 ms
  Winograd F(2x2, 3x3) (16 products of K=C, transforms as numpy passes)  1.8x per-tap (and
      1.1-5.9x at 64-512 channels: the transforms' passes and the filter's transform per call)
  per-tap products (this engine)                                          0.65-0.68x im2col
Nine products of K=C are not slower than one of K=9C here: OpenBLAS runs [2112, 144] @
[144, 16] at 45-58 GFLOP/s and [2112, 16] @ [16, 16] at 45-74 GFLOP/s.
Sums run over the taps, then the channels: within float32 rounding of the im2col product
(max relative error against float64 1.4e-7, im2col's 4-6e-7, on this net).
"""
from __future__ import annotations

import threading

import numpy as np

from .nn_window import Window
from ..thread_budget import parallel_for

# A block's working set (its padded input rows, the running sum and one tap's product) stays
# about this size (more only when one row is bigger), so the passes over it hit the core's L2
# cache; each thread keeps one such scratch buffer. Measured on the net above (paired against
# 512 KiB, CPU-time medians of 11): 256 KiB 1.09-1.15x, 1 MiB 0.96-1.23x, 2 MiB 0.98-1.28x; at
# 64 channels 256 KiB-2 MiB ran 0.82-0.93x, so nothing fits every shape and the net decides.
BLOCK_BYTES = 512 << 10

_SCRATCH = threading.local()


# Up to this many input channels the per-tap products beat im2col; above it im2col's one K=9C
# product is more efficient than nine K=C ones and its copy is small beside the product.
# Measured (per-tap time / im2col time, medians of 9-11 paired runs, one thread): C=16 0.81-0.86,
# C=32 0.88, C=64 0.93-0.95 (1x56x56), C=128 0.99-1.10 (1x28x28 and 8x28x28), C=256 1.01, C=512 1.03.
SHIFTED_MAX_CHANNELS = 64

# A pointwise (1x1) product runs in blocks of at least this many rows and about this many bytes
# of operands: measured against one whole-image product 0.4-0.8x at 16-32 channels (the blocks
# stay in cache), equal at 128-1024; against the im2col engine (a copy, then a product, then a
# copy into the output) 0.27-0.9x, bit-identical.
POINTWISE_MIN_ROWS = 1024
POINTWISE_BLOCK_BYTES = 512 << 10


def pointwise_applies(xp, window: Window, groups: int) -> bool:
    """A 1x1 ungrouped convolution without padding, of host arrays: a product on the image's
    pixels (every stride-th one)."""
    return xp is np and window.tap_count == 1 and groups == 1 and not window.is_padded and all(window.out_sizes)


def pointwise_forward(xp, image, filt, window: Window):
    """[N, H, W, C] times a [1, 1, C, O] filter (any stride) -> [N, Ho, Wo, O], block by block
    straight into the output."""
    pixels = image[(slice(None), *(slice(None, None, s) for s in window.strides), slice(None))]
    rows = pixels.reshape(-1, image.shape[-1])          # a copy only when strided
    weights = filt.reshape(filt.shape[-2], filt.shape[-1])
    result = xp.empty((image.shape[0], *window.out_sizes, filt.shape[-1]), image.dtype)
    out_rows = result.reshape(-1, filt.shape[-1])
    step = max(POINTWISE_MIN_ROWS, POINTWISE_BLOCK_BYTES // (sum(weights.shape) * image.itemsize))

    def compute(start):
        xp.matmul(rows[start:start + step], weights, out=out_rows[start:start + step])
    parallel_for(compute, list(range(0, rows.shape[0], step)), xp)
    return result


def shifted_applies(xp, window: Window, filter_shape, groups: int) -> bool:
    """This engine takes 2-D, stride-1, ungrouped convolutions of host (numpy) arrays with more
    than one tap and at most SHIFTED_MAX_CHANNELS input channels."""
    return (xp is np and len(window.taps) == 2 and window.strides == (1, 1) and groups == 1
            and window.tap_count > 1 and filter_shape[-2] <= SHIFTED_MAX_CHANNELS and all(window.out_sizes))


def _scratch(shape, dtype):
    """An uninitialized array of `shape` in this thread's reused buffer (grown when too small).
    The array is valid until this thread's next call: blocks use it and copy their results out."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = getattr(_SCRATCH, "buffer", None)
    if buffer is None or buffer.size < size:
        buffer = _SCRATCH.buffer = np.empty(size, np.uint8)
    return buffer[:size].view(dtype).reshape(shape)


def _blocks(batch: int, out_rows: int, padded_rows: int, row_bytes: int, span_rows: int) -> list[tuple[int, int, int, int]]:
    """(first image, end image, first output row, end row) blocks of about BLOCK_BYTES: several
    whole images when they are small, equal runs of one image's rows otherwise. Fixed by the
    shapes alone, never by the thread count, so the results are the same on any threads."""
    image_bytes = padded_rows * row_bytes
    if image_bytes <= BLOCK_BYTES:
        images = max(1, BLOCK_BYTES // image_bytes)
        return [(n, min(n + images, batch), 0, out_rows) for n in range(0, batch, images)]
    runs = -(-out_rows // max(1, BLOCK_BYTES // row_bytes - (span_rows - 1)))
    rows = -(-out_rows // runs)
    return [(n, n + 1, h, min(h + rows, out_rows)) for n in range(batch) for h in range(0, out_rows, rows)]


def shifted_forward(xp, image, filt, window: Window):
    """[N, H, W, C] convolved (stride 1) with [kh, kw, C, O] -> [N, Ho, Wo, O]."""
    batch, channels = image.shape[0], image.shape[-1]
    (top, _), (left, _) = window.pads
    padded_rows, padded_cols = window.padded_sizes
    kh, kw = window.taps
    dh, dw = window.dilations
    out_rows, out_cols = window.out_sizes
    out_channels = filt.shape[-1]
    span_rows = (kh - 1) * dh + 1
    offsets = [i * dh * padded_cols + j * dw for i in range(kh) for j in range(kw)]
    weights = filt.reshape(kh * kw, channels, out_channels)
    result = xp.empty((batch, out_rows, out_cols, out_channels), image.dtype)
    dtype = result.dtype

    def compute(block):
        first, end, row, end_row = block
        images, rows = end - first, end_row - row
        span = rows + span_rows - 1                     # padded rows the block reads per image
        # The outputs computed: every padded column of the block's rows, but for the last
        # image's last row only its out_cols (the rest would read past the block's input).
        count = ((images - 1) * span + rows - 1) * padded_cols + out_cols
        scratch = _scratch((images * span * padded_cols * (channels + 2 * out_channels),), dtype)
        inputs = scratch[:images * span * padded_cols * channels]
        _pad_rows(inputs.reshape(images, span, padded_cols, channels), image[first:end], row - top, left)
        flat = inputs.reshape(-1, channels)
        # room for `span` rows per image, so the valid outputs are a reshape's slice; the rows
        # past `count` are never computed nor read
        products = scratch[inputs.size:].reshape(2, images * span * padded_cols, out_channels)
        total, product = products[0, :count], products[1, :count]
        xp.matmul(flat[offsets[0]:offsets[0] + count], weights[0], out=total)
        for tap in range(1, len(offsets)):
            xp.matmul(flat[offsets[tap]:offsets[tap] + count], weights[tap], out=product)
            if tap < len(offsets) - 1:
                xp.add(total, product, out=total)
            else:   # the last tap's sum goes straight into the output, dropping the extra columns
                valid = products.reshape(2, images, span, padded_cols, out_channels)[:, :, :rows, :out_cols]
                xp.add(valid[0], valid[1], out=result[first:end, row:end_row])
    row_bytes = padded_cols * (channels + 2 * out_channels) * image.itemsize
    parallel_for(compute, _blocks(batch, out_rows, padded_rows, row_bytes, span_rows), xp)
    return result


def _pad_rows(target, images, first_row: int, left: int) -> None:
    """Fill target [n, span, Wp, C] with the padded input rows first_row.. (input coordinates;
    rows outside the input and the columns beside it are zeros)."""
    span, padded_cols = target.shape[1], target.shape[2]
    in_rows, in_cols = images.shape[1], images.shape[2]
    lo, hi = max(first_row, 0), min(first_row + span, in_rows)
    if lo >= hi:
        target[...] = 0
        return
    inside = slice(lo - first_row, hi - first_row)
    target[:, :inside.start] = 0
    target[:, inside.stop:] = 0
    target[:, inside, :left] = 0
    target[:, inside, left + in_cols:] = 0
    target[:, inside, left:left + in_cols] = images[:, lo:hi]


# --- depthwise, stride 1 -------------------------------------------------------------------------
# Up to this many channels a stride-1 depthwise convolution runs tap by tap on whole rows (a
# multiply and an add per tap, [rows, Wo * C] at a time, the filter tap tiled along the row)
# rather than as one einsum over the window view; both sum the taps in the same order (first to
# last, each product rounded), so the results are bit-identical. Measured (row engine / einsum
# with the channel axis before the taps, medians of 11 paired runs, one thread): 1x112x112x32
# 0.52-0.53, 1x112x112x64 0.79-0.81, 1x56x56x96 and 8x56x56x96 1.03-1.07, 1x56x56x144 1.18-1.21,
# 1x28x28x192 1.31-1.40: einsum's inner loop runs over the channels, long enough from ~96 of them.
DEPTHWISE_ROWS_MAX_CHANNELS = 64
DEPTHWISE_BLOCK_BYTES = 1 << 20     # 1 MiB blocks measured 0.6-0.7x the time of 64 KiB ones


def depthwise_rows_applies(xp, window: Window, filter_shape, groups: int) -> bool:
    """2-D stride-1 depthwise convolutions (channel multiplier 1) of few channels, host arrays."""
    return (xp is np and len(window.taps) == 2 and window.strides == (1, 1) and filter_shape[-2] == 1
            and groups == filter_shape[-1] and groups <= DEPTHWISE_ROWS_MAX_CHANNELS and all(window.out_sizes))


def depthwise_rows_forward(xp, image, filt, window: Window):
    """[N, H, W, C] convolved with the depthwise filter [kh, kw, 1, C] (stride 1) -> [N, Ho, Wo, C]."""
    batch, _, _, channels = image.shape
    (top, _), (left, _) = window.pads
    padded_cols = window.padded_sizes[1]
    dh, dw = window.dilations
    out_rows, out_cols = window.out_sizes
    taps = window.tap_offsets()
    span_rows = (window.taps[0] - 1) * dh + 1
    row_size = out_cols * channels
    tiled = xp.empty((len(taps), out_cols, channels), image.dtype)   # each tap's weights along a row
    tiled[...] = filt.reshape(len(taps), 1, channels)
    tiled = tiled.reshape(len(taps), row_size)
    result = xp.empty((batch, out_rows, out_cols, channels), image.dtype)
    row_bytes = (padded_cols + 2 * out_cols) * channels * image.itemsize
    rows = max(1, DEPTHWISE_BLOCK_BYTES // row_bytes)
    rows = -(-out_rows // -(-out_rows // rows))           # equal runs

    def compute(block):
        image_index, row = block
        count = min(rows, out_rows - row)
        span = count + span_rows - 1
        scratch = _scratch((span * padded_cols * channels + count * row_size,), image.dtype)
        padded = scratch[:span * padded_cols * channels].reshape(1, span, padded_cols, channels)
        _pad_rows(padded, image[image_index:image_index + 1], row - top, left)
        product = scratch[padded.size:].reshape(count, row_size)
        total = result[image_index, row:row + count].reshape(count, row_size)
        for index, (i, j) in enumerate(taps):
            source = padded[0, i * dh:i * dh + count, j * dw:j * dw + out_cols].reshape(count, row_size)
            if index == 0:
                xp.multiply(source, tiled[0], out=total)
            else:
                xp.multiply(source, tiled[index], out=product)
                xp.add(total, product, out=total)
    parallel_for(compute, [(n, h) for n in range(batch) for h in range(0, out_rows, rows)], xp)
    return result
