"""Kernels that move values between the batch, spatial and depth dims: SpaceToDepth,
DepthToSpace, SpaceToBatchND and BatchToSpaceND. Each is a reshape, a transpose and a reshape
(plus zero padding or cropping), so they work for every dtype, strings included.

Depth order is TensorFlow's: depth index (row_offset * block + column_offset) * C + c.
"""
from __future__ import annotations

from math import prod

from .nn_common import check_supported_format, from_channels_last, host_ints, shape_text, to_channels_last
from .registry import kernel


def _check_rank4(ctx, x):
    if x.ndim != 4:
        ctx.fail(f"Input rank should be: 4 instead of: {x.ndim}")


@kernel("SpaceToDepth")
def space_to_depth(ctx, x, *, block_size, data_format):
    xp = ctx.xp
    check_supported_format(ctx, data_format)
    _check_rank4(ctx, x)
    image = to_channels_last(xp, x, data_format)
    n, h, w, c = image.shape
    if h % block_size or w % block_size:
        ctx.fail(f"Image width {w} and height {h} should be divisible by block_size: {block_size}")
    blocks = image.reshape(n, h // block_size, block_size, w // block_size, block_size, c)
    out = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(n, h // block_size, w // block_size, block_size * block_size * c)
    return from_channels_last(xp, xp.ascontiguousarray(out), data_format)


@kernel("DepthToSpace")
def depth_to_space(ctx, x, *, block_size, data_format):
    xp = ctx.xp
    check_supported_format(ctx, data_format)
    _check_rank4(ctx, x)
    image = to_channels_last(xp, x, data_format)
    n, h, w, c = image.shape
    if c % (block_size * block_size):
        ctx.fail(f"Input depth dimension {c} should be divisible by: {block_size * block_size}")
    blocks = image.reshape(n, h, w, block_size, block_size, c // (block_size * block_size))
    out = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(n, h * block_size, w * block_size, c // (block_size * block_size))
    return from_channels_last(xp, xp.ascontiguousarray(out), data_format)


def _blocks_and_pads(ctx, x, block_shape, pads, pads_name: str):
    blocks = host_ints(block_shape)
    pad_values = host_ints(pads)
    if tuple(pads.shape) != (len(blocks), 2):
        ctx.fail(f"{pads_name} should have shape [{len(blocks)}, 2] instead of {shape_text(pads.shape)}")
    if x.ndim < 1 + len(blocks):
        ctx.fail(f"input rank should be >= {1 + len(blocks)} instead of {x.ndim}")
    if any(b < 1 for b in blocks):
        ctx.fail(f"All values in block_shape must be positive, got value, {blocks}")
    if any(p < 0 for p in pad_values):
        ctx.fail(f"All values in {pads_name} must be non-negative")
    return blocks, [(pad_values[2 * i], pad_values[2 * i + 1]) for i in range(len(blocks))]


@kernel("SpaceToBatchND")
def space_to_batch_nd(ctx, x, block_shape, paddings):
    """[B, *spatial, *rest] -> [prod(block) * B, *spatial_padded / block, *rest]; the block
    offsets become the outer part of the new batch dim."""
    xp = ctx.xp
    blocks, pads = _blocks_and_pads(ctx, x, block_shape, paddings, "paddings")
    m = len(blocks)
    width = [(0, 0)] + pads + [(0, 0)] * (x.ndim - 1 - m)
    padded = xp.pad(x, width) if any(p != (0, 0) for p in pads) else x
    batch, spatial, rest = padded.shape[0], padded.shape[1:1 + m], padded.shape[1 + m:]
    for i, (dim, block) in enumerate(zip(spatial, blocks)):
        if dim % block:
            ctx.fail(f"padded_shape[{i}]={dim} is not divisible by block_shape[{i}]={block}")
    split = [batch]
    for dim, block in zip(spatial, blocks):
        split += [dim // block, block]
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    out = padded.reshape(*split, *rest).transpose(order)
    return xp.ascontiguousarray(out).reshape(batch * prod(blocks), *[d // b for d, b in zip(spatial, blocks)], *rest)


@kernel("BatchToSpaceND")
def batch_to_space_nd(ctx, x, block_shape, crops):
    """The inverse of SpaceToBatchND, with crops in place of paddings."""
    xp = ctx.xp
    blocks, cuts = _blocks_and_pads(ctx, x, block_shape, crops, "crops")
    m = len(blocks)
    product = prod(blocks)
    if x.shape[0] % product:
        ctx.fail(f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes ({product})")
    batch, spatial, rest = x.shape[0] // product, x.shape[1:1 + m], x.shape[1 + m:]
    for i, (dim, block, (before, after)) in enumerate(zip(spatial, blocks, cuts)):
        if before + after > dim * block:
            ctx.fail(f"crops must be less than or equal to the input dimension {i + 1}")
    split = x.reshape(*blocks, batch, *spatial, *rest)
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    full = xp.ascontiguousarray(split.transpose(order)).reshape(
        batch, *[d * b for d, b in zip(spatial, blocks)], *rest)
    index = (slice(None),) + tuple(slice(before, d * b - after) for d, b, (before, after) in zip(spatial, blocks, cuts))
    return xp.ascontiguousarray(full[index])
