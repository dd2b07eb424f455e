"""Convolution kernels: Conv2D, Conv3D, their 2-D backprops and the depthwise family.

Every convolution here is a grouped convolution on channels-last data: the input's C channels
form G groups of the filter's input depth Cg, and output channel o belongs to group
o // (O / G). An ordinary convolution has G = 1; a depthwise one with channel multiplier m is
G = C groups of Cg = 1 with the filter [*taps, C, m] read as [*taps, 1, C * m]. Three engines
compute all of them without looping over pixels:
- forward: the strided window view, reshaped block by block into an im2col matrix
  [M, taps * Cg], times the filter (one matmul per block of output rows);
- backprop input: per window tap, the output gradient times that tap's filter, added onto the
  input elements the tap read (a loop over the taps only: measured 1.5-4x faster than one big
  matmul followed by the same scatter, as it never materializes the columns);
- backprop filter: the im2col matrix's transpose times the output gradient.
Depthwise-style convolutions (Cg = 1) would make skinny per-group matmuls; they use einsum sums
over the window taps instead (measured 2-10x faster).
Host (numpy) forward convolutions that need no im2col copy take nn_conv_shifted's engines: 1x1
ones a blocked product, stride-1 2-D ones of up to 64 channels a product per tap on the flattened
image, stride-1 depthwise ones of up to 64 channels a multiply-add per tap on whole rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .nn_common import (batch_and_channel_entries, from_channels_last, host_ints, is_channels_first,
                        shape_text, spatial_entries, to_channels_last, upcast)
from .nn_conv_shifted import (depthwise_rows_applies, depthwise_rows_forward, pointwise_applies, pointwise_forward,
                              shifted_applies, shifted_forward)
from .nn_window import (Window, accumulate_taps, chunk_bytes, explicit_pads, image_blocks, make_window, output_blocks,
                        pad_spatial, window_view)
from .registry import kernel
from ..thread_budget import granted_threads, parallel_for


# --- the engines (channels-last, compute dtype) ---------------------------------------------

def _group_matmul(xp, a, b):
    """Per-group products: a [M, G, K] times b [G, K, N] -> [M, G, N]."""
    if a.shape[1] == 1:
        rows, inner = a.shape[0], a.shape[2]
        return xp.matmul(a.reshape(rows, inner), b[0]).reshape(rows, 1, b.shape[2])
    return xp.matmul(a.transpose(1, 0, 2), b).transpose(1, 0, 2)


def _grouped_filter(filt, groups: int):
    """[*taps, Cg, O] as [G, taps * Cg, O / G]: each group's filter as one matrix."""
    out_channels = filt.shape[-1]
    return filt.reshape(filt.size // out_channels, groups, out_channels // groups).transpose(1, 0, 2)


def _im2col(patches, groups: int):
    """[n, *out, *taps, C] windows as [M, G, taps * Cg] rows (one copy)."""
    leading = patches.ndim // 2                       # n and the out dims
    rows, per_row = prod(patches.shape[:leading]), prod(patches.shape[leading:])
    channels = patches.shape[-1]
    if groups == 1:
        return patches.reshape(rows, 1, per_row)
    split = patches.reshape(*patches.shape[:-1], groups, channels // groups)
    tap_axes = tuple(range(leading, split.ndim - 2))
    grouped = split.transpose(*range(leading), split.ndim - 2, *tap_axes, split.ndim - 1)
    return grouped.reshape(rows, groups, per_row // groups)


def _is_depthwise(filter_shape, groups: int) -> bool:
    """One input channel per group: the einsum paths below beat skinny per-group matmuls."""
    return filter_shape[-2] == 1 and groups > 1


def _depthwise_subscripts(spatial_rank: int) -> tuple[str, str]:
    """einsum letters for the output dims and the window taps."""
    return "pqr"[:spatial_rank], "ijk"[:spatial_rank]


def _depthwise_forward(xp, patches, filt, out_block):
    """[n, *out, *taps, C] windows, filter [*taps, 1, C * m] -> out_block [n, *out, C * m]."""
    out, taps = _depthwise_subscripts((patches.ndim - 2) // 2)
    channels = patches.shape[-1]
    if filt.shape[-1] == channels:
        # Multiplier 1, the taps' axes after the channel's: the same sums in the same order,
        # 0.63-0.88x the time of the general form below (MobileNet layers, 112x112x32 to 7x7x960).
        spatial = len(out)
        moved = xp.moveaxis(patches, -1, 1 + spatial)
        xp.einsum(f"n{out}c{taps},{taps}c->n{out}c", moved, filt.reshape(*filt.shape[:-2], channels), out=out_block)
        return
    weights = filt.reshape(*filt.shape[:-2], channels, filt.shape[-1] // channels)
    result = xp.einsum(f"n{out}{taps}c,{taps}cm->n{out}cm", patches, weights)
    out_block[...] = result.reshape(*result.shape[:-2], filt.shape[-1])


def _depthwise_filter_gradient(xp, patches, grad):
    """[n, *out, *taps, C] windows, gradient [n, *out, C * m] -> [*taps, 1, C * m]."""
    out, taps = _depthwise_subscripts((patches.ndim - 2) // 2)
    channels = patches.shape[-1]
    grad = grad.reshape(*grad.shape[:-1], channels, grad.shape[-1] // channels)
    result = xp.einsum(f"n{out}{taps}c,n{out}cm->{taps}cm", patches, grad)
    return result.reshape(*result.shape[:-2], 1, grad.shape[-2] * grad.shape[-1])


def _depthwise_tap_gradients(xp, grad, filt, channels: int):
    """tap index -> the input gradient that tap passes back: [n, *out, C]."""
    out, _ = _depthwise_subscripts(grad.ndim - 2)
    grad = grad.reshape(*grad.shape[:-1], channels, grad.shape[-1] // channels)
    taps = filt.reshape(-1, channels, grad.shape[-1])
    return lambda index, _: xp.einsum(f"n{out}cm,cm->n{out}c", grad, taps[index])


def conv_forward(xp, image, filt, window: Window, groups: int):
    """[N, *in, C] convolved with [*taps, Cg, O] -> [N, *out, O]: an im2col matmul per block of
    output rows, so the unrolled windows never take more than about chunk_bytes(xp). Stride-1 2-D
    convolutions of few channels take the per-tap engine instead, 1x1 ones a plain product and
    stride-1 depthwise ones of few channels a row engine (no im2col copy: nn_conv_shifted)."""
    if shifted_applies(xp, window, filt.shape, groups):
        return shifted_forward(xp, image, filt, window)
    if pointwise_applies(xp, window, groups):
        return pointwise_forward(xp, image, filt, window)
    if depthwise_rows_applies(xp, window, filt.shape, groups):
        return depthwise_rows_forward(xp, image, filt, window)
    patches = window_view(xp, pad_spatial(xp, image, window), window)
    batch, out_channels = image.shape[0], filt.shape[-1]
    result = xp.empty((batch, *window.out_sizes, out_channels), image.dtype)
    if _is_depthwise(filt.shape, groups):
        def compute(block):
            _depthwise_forward(xp, patches[block], filt, result[block])
    else:
        weights = _grouped_filter(filt, groups)

        def compute(block):
            target = result[block]
            target[...] = _group_matmul(xp, _im2col(patches[block], groups), weights).reshape(target.shape)
    # Blocks of output rows are independent: they run on the threads granted to the kernel.
    parallel_for(compute, output_blocks(window, batch, window.tap_count * image.shape[-1] * image.itemsize,
                                        granted_threads(), chunk_bytes(xp)), xp)
    return result


def conv_backprop_input(xp, grad, filt, window: Window, groups: int, batch: int, channels: int):
    """The gradient of conv_forward with respect to its [N, *in, C] input, a block of images at a
    time on the threads granted to the kernel (each image's sums are its own: any split gives the
    same bits)."""
    blocks = image_blocks(batch, prod(window.padded_sizes) * channels * grad.itemsize, granted_threads(),
                          chunk_bytes(xp))
    if len(blocks) <= 1:   # allocated last, the result reuses the freed tap products' memory
        return _backprop_input_images(xp, grad, filt, window, groups, channels, None)
    result = xp.empty((batch, *window.in_sizes, channels), grad.dtype)

    def compute(block):
        _backprop_input_images(xp, grad[block], filt, window, groups, channels, result[block])
    parallel_for(compute, blocks, xp)
    return result


def _backprop_input_images(xp, grad, filt, window: Window, groups: int, channels: int, out):
    """conv_backprop_input for the images of `grad`, written into `out` (or a new array): for each tap, the output
    gradient times that tap's filter, added onto the input elements the tap read."""
    batch = grad.shape[0]
    if _is_depthwise(filt.shape, groups):
        return accumulate_taps(xp, _depthwise_tap_gradients(xp, grad, filt, channels), window, batch,
                               channels, grad.dtype, out=out)
    rows, out_channels = prod(grad.shape[:-1]), grad.shape[-1]
    grad_groups = grad.reshape(rows, groups, out_channels // groups)
    tap_filters = filt.reshape(window.tap_count, channels // groups, groups, out_channels // groups)

    def tap_gradient(index, _):     # [G, Og, Cg] per tap
        weights = tap_filters[index].transpose(1, 2, 0)
        return _group_matmul(xp, grad_groups, weights).reshape(*grad.shape[:-1], channels)
    # TensorFlow's CPU kernel multiplies into columns and folds them back with col2im; adding
    # the taps last to first sums each input element's terms in the same order.
    return accumulate_taps(xp, tap_gradient, window, batch, channels, grad.dtype, last_tap_first=True, out=out)


def conv_backprop_filter(xp, image, grad, window: Window, groups: int, filter_shape):
    """The gradient of conv_forward with respect to its [*taps, Cg, O] filter: the im2col rows'
    transpose times the output gradient, one product per block (on the threads granted to the
    kernel), the blocks' products summed in block order (so any threads give the same bits)."""
    patches = window_view(xp, pad_spatial(xp, image, window), window)
    if _is_depthwise(filter_shape, groups):
        return _depthwise_filter_gradient(xp, patches, grad)
    out_channels = filter_shape[-1]
    bytes_per_output = window.tap_count * image.shape[-1] * image.itemsize
    blocks = output_blocks(window, image.shape[0], bytes_per_output, chunk=chunk_bytes(xp))
    parts: list = [None] * len(blocks)   # each block's product, filled by compute()

    def compute(index):
        block = blocks[index]
        columns = _im2col(patches[block], groups)                       # [M, G, taps * Cg]
        grad_rows = grad[block].reshape(columns.shape[0], groups, out_channels // groups)
        parts[index] = xp.matmul(columns.transpose(1, 2, 0), grad_rows.transpose(1, 0, 2))
    parallel_for(compute, list(range(len(blocks))), xp)
    if not parts:   # an empty batch or output
        return xp.zeros(filter_shape, image.dtype)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    # [G, taps * Cg, Og] -> [taps * Cg, G, Og] = [*taps, Cg, O]
    return total.transpose(1, 0, 2).reshape(filter_shape)


# --- node geometry --------------------------------------------------------------------------

@dataclass(frozen=True)
class ConvAttrs:
    """The window attrs every convolution node carries (in its data_format's dim order)."""
    strides: list[int]
    padding: str
    explicit_paddings: list[int]
    data_format: str
    dilations: list[int]

    def window(self, ctx, in_shape, filter_taps) -> Window:
        """The Window over an input of `in_shape` (in data_format) for a filter of `filter_taps`."""
        for name, values in (("strides", self.strides), ("dilations", self.dilations)):
            if any(v != 1 for v in batch_and_channel_entries(values, self.data_format)):
                ctx.fail(f"Current implementation does not yet support {name} in the batch and depth "
                         "dimensions.")
        return make_window(ctx, spatial_entries(in_shape, self.data_format), filter_taps,
                           spatial_entries(self.strides, self.data_format),
                           spatial_entries(self.dilations, self.data_format), self.padding,
                           explicit_pads(self.explicit_paddings, self.data_format))

    def channels_last(self, xp, x):
        """`x` (in data_format) as a channels-last array in its compute dtype."""
        return to_channels_last(xp, upcast(x), self.data_format)

    def finish(self, ctx, channels_last):
        """A channels-last result back in data_format and the node's output dtype."""
        result = from_channels_last(ctx.xp, channels_last, self.data_format)
        return result.astype(ctx.out_dtype(0), copy=False)


def group_count(ctx, in_depth: int, filter_depth: int, out_depth: int) -> int:
    if filter_depth == 0 or in_depth % filter_depth:
        ctx.fail(f"input depth must be evenly divisible by filter depth: {in_depth} vs {filter_depth}")
    groups = in_depth // filter_depth
    if out_depth % groups:
        ctx.fail(f"output depth must be evenly divisible by number of groups: {out_depth} vs {groups}")
    return groups


def _check_ranks(ctx, rank: int, **tensors) -> None:
    for name, tensor in tensors.items():
        if tensor.ndim != rank:
            ctx.fail(f"{name} must be {rank}-dimensional: {shape_text(tensor.shape)}")


def _check_out_backprop(ctx, grad_last, window: Window) -> None:
    """The output gradient must have the forward op's output size (TensorFlow's wording)."""
    for dim, (actual, computed) in enumerate(zip(grad_last.shape[1:-1], window.out_sizes)):
        if actual != computed:
            ctx.fail(f"{ctx.op}: Size of out_backprop doesn't match computed: actual = {actual}, "
                     f"computed = {computed} spatial_dim: {dim + 1} input: {window.in_sizes[dim]} "
                     f"filter: {window.taps[dim]} output: {actual} stride: {window.strides[dim]} "
                     f"dilation: {window.dilations[dim]}")


def convolve(ctx, image, filt, attrs: ConvAttrs):
    """A convolution node's output, channels-last and in the compute dtype (_FusedConv2D applies
    its fused ops before the layout goes back). `filt` is [*taps, Cg, O]."""
    xp = ctx.xp
    _check_ranks(ctx, image.ndim, filter=filt)
    window = attrs.window(ctx, image.shape, filt.shape[:-2])
    channels_last = attrs.channels_last(xp, image)
    groups = group_count(ctx, channels_last.shape[-1], filt.shape[-2], filt.shape[-1])
    return conv_forward(xp, channels_last, upcast(filt), window, groups)


# --- Conv2D / Conv3D ------------------------------------------------------------------------

@kernel("Conv2D", expensive=True, intra_op=True)
def conv2d(ctx, image, filt, *, strides, padding, explicit_paddings, data_format, dilations):
    _check_ranks(ctx, 4, input=image, filter=filt)
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    return attrs.finish(ctx, convolve(ctx, image, filt, attrs))


@kernel("Conv3D", expensive=True, intra_op=True)
def conv3d(ctx, image, filt, *, strides, padding, data_format, dilations):
    _check_ranks(ctx, 5, input=image, filter=filt)
    attrs = ConvAttrs(strides, padding, [], data_format, dilations)
    return attrs.finish(ctx, convolve(ctx, image, filt, attrs))


# --- 2-D backprops, ordinary and depthwise ---------------------------------------------------
# Each takes the forward op's grouped form: `groups` and a [kh, kw, Cg, O] filter (shape).

def _backprop_input(ctx, in_shape, grouped_filter, grad, groups: int, attrs: ConvAttrs):
    xp = ctx.xp
    _check_ranks(ctx, 4, filter=grouped_filter, out_backprop=grad)
    batch, in_depth = batch_and_channel_entries(in_shape, attrs.data_format)
    window = attrs.window(ctx, in_shape, grouped_filter.shape[:2])
    grad_last = attrs.channels_last(xp, grad)
    _check_out_backprop(ctx, grad_last, window)
    result = conv_backprop_input(xp, grad_last, upcast(grouped_filter), window, groups, batch, in_depth)
    return attrs.finish(ctx, result)


def _backprop_filter(ctx, image, filter_shape, grad, groups: int, attrs: ConvAttrs):
    """The grouped-form filter gradient, in the compute dtype."""
    xp = ctx.xp
    _check_ranks(ctx, 4, input=image, out_backprop=grad)
    window = attrs.window(ctx, image.shape, filter_shape[:2])
    grad_last = attrs.channels_last(xp, grad)
    _check_out_backprop(ctx, grad_last, window)
    return conv_backprop_filter(xp, attrs.channels_last(xp, image), grad_last, window, groups, filter_shape)


def _input_shape(ctx, sizes, grad, in_depth: int, data_format: str) -> list[int]:
    """Conv2DBackpropInput's input_sizes: all 4 dims in data_format, or just the 2 spatial ones
    (then the batch comes from out_backprop and the depth from the filter)."""
    sizes = host_ints(sizes)
    if len(sizes) == 4:
        return sizes
    if len(sizes) != 2:
        ctx.fail(f"Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: "
                 f"{len(sizes)}")
    batch = grad.shape[0]
    return [batch, in_depth, *sizes] if is_channels_first(data_format) else [batch, *sizes, in_depth]


@kernel("Conv2DBackpropInput", expensive=True, intra_op=True)
def conv2d_backprop_input(ctx, input_sizes, filt, grad, *, strides, padding, explicit_paddings,
                          data_format, dilations):
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    _check_ranks(ctx, 4, filter=filt)
    in_shape = _input_shape(ctx, input_sizes, grad, filt.shape[2], data_format)
    in_depth = batch_and_channel_entries(in_shape, data_format)[1]
    groups = group_count(ctx, in_depth, filt.shape[2], filt.shape[3])
    return _backprop_input(ctx, in_shape, filt, grad, groups, attrs)


@kernel("Conv2DBackpropFilter", expensive=True, intra_op=True)
def conv2d_backprop_filter(ctx, image, filter_sizes, grad, *, strides, padding, explicit_paddings,
                           data_format, dilations):
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    filter_shape = host_ints(filter_sizes)
    if len(filter_shape) != 4:
        ctx.fail(f"filter_sizes must be 4-dimensional, got: {len(filter_shape)}")
    in_depth = batch_and_channel_entries(image.shape, data_format)[1]
    groups = group_count(ctx, in_depth, filter_shape[2], filter_shape[3])
    result = _backprop_filter(ctx, image, filter_shape, grad, groups, attrs)
    return result.astype(ctx.out_dtype(0), copy=False)


def _depthwise_as_grouped(ctx, filt, in_depth: int):
    """A depthwise filter [kh, kw, C, m] as a grouped one [kh, kw, 1, C * m] (C groups)."""
    _check_ranks(ctx, 4, filter=filt)
    kh, kw, channels, multiplier = filt.shape
    if channels != in_depth:
        ctx.fail(f"input and filter must have the same depth: {in_depth} vs {channels}")
    return filt.reshape(kh, kw, 1, channels * multiplier)


@kernel("DepthwiseConv2dNative", expensive=True, intra_op=True)
def depthwise_conv2d(ctx, image, filt, *, strides, padding, explicit_paddings, data_format, dilations):
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    _check_ranks(ctx, 4, input=image)
    in_depth = batch_and_channel_entries(image.shape, data_format)[1]
    return attrs.finish(ctx, convolve(ctx, image, _depthwise_as_grouped(ctx, filt, in_depth), attrs))


@kernel("DepthwiseConv2dNativeBackpropInput", expensive=True, intra_op=True)
def depthwise_conv2d_backprop_input(ctx, input_sizes, filt, grad, *, strides, padding,
                                    explicit_paddings, data_format, dilations):
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    in_shape = host_ints(input_sizes)
    if len(in_shape) != 4:
        ctx.fail(f"input_sizes must be 4-dimensional, got: {len(in_shape)}")
    in_depth = batch_and_channel_entries(in_shape, data_format)[1]
    return _backprop_input(ctx, in_shape, _depthwise_as_grouped(ctx, filt, in_depth), grad, in_depth,
                           attrs)


@kernel("DepthwiseConv2dNativeBackpropFilter", expensive=True)
def depthwise_conv2d_backprop_filter(ctx, image, filter_sizes, grad, *, strides, padding,
                                     explicit_paddings, data_format, dilations):
    attrs = ConvAttrs(strides, padding, explicit_paddings, data_format, dilations)
    filter_shape = host_ints(filter_sizes)
    if len(filter_shape) != 4:
        ctx.fail(f"filter_sizes must be 4-dimensional, got: {len(filter_shape)}")
    kh, kw, channels, multiplier = filter_shape
    result = _backprop_filter(ctx, image, [kh, kw, 1, channels * multiplier], grad, channels, attrs)
    return result.reshape(filter_shape).astype(ctx.out_dtype(0), copy=False)
