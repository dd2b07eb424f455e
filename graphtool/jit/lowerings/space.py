"""Lowerings of the ops that move values between batch, spatial and depth dims: SpaceToDepth,
DepthToSpace, SpaceToBatchND and BatchToSpaceND (block shapes, paddings and crops are static).
Each is a reshape, a transpose and a reshape, in the interpreter's order (kernels/nn_space.py):
depth index (row_offset * block + column_offset) * C + c.
"""
from __future__ import annotations

from math import prod

from .common import lowering, static_ints


def _format_supported(node) -> str | None:
    data_format = node.attr("data_format", "NHWC")
    return None if data_format in ("NHWC", "NCHW") else f"{node.op} with data_format {data_format} has no lowering"


def _to_nhwc(ctx, x):
    return ctx.jnp.transpose(x, (0, 2, 3, 1)) if ctx.attr("data_format", "NHWC") == "NCHW" else x


def _from_nhwc(ctx, x):
    return ctx.jnp.transpose(x, (0, 3, 1, 2)) if ctx.attr("data_format", "NHWC") == "NCHW" else x


@lowering("SpaceToDepth", half=True, complex_ok=True, supports=_format_supported)
def space_to_depth(ctx, x):
    block = ctx.attr("block_size")
    image = _to_nhwc(ctx, x)
    n, h, w, c = image.shape
    blocks = image.reshape(n, h // block, block, w // block, block, c)
    out = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(n, h // block, w // block, block * block * c)
    return _from_nhwc(ctx, out)


@lowering("DepthToSpace", half=True, complex_ok=True, supports=_format_supported)
def depth_to_space(ctx, x):
    block = ctx.attr("block_size")
    image = _to_nhwc(ctx, x)
    n, h, w, c = image.shape
    depth = c // (block * block)
    blocks = image.reshape(n, h, w, block, block, depth)
    return _from_nhwc(ctx, blocks.transpose(0, 1, 3, 2, 4, 5).reshape(n, h * block, w * block, depth))


def _blocks_and_pairs(block_shape, pads):
    values = static_ints(pads)
    return static_ints(block_shape), [(values[2 * i], values[2 * i + 1]) for i in range(len(values) // 2)]


@lowering("SpaceToBatchND", static_inputs=(1, 2), half=True, complex_ok=True)
def space_to_batch_nd(ctx, x, block_shape, paddings):
    """[B, *spatial, *rest] -> [prod(block) * B, *spatial_padded / block, *rest]; the block
    offsets become the outer part of the new batch dim."""
    blocks, pads = _blocks_and_pairs(block_shape, paddings)
    m = len(blocks)
    padded = ctx.jnp.pad(x, [(0, 0)] + pads + [(0, 0)] * (x.ndim - 1 - m))
    batch, spatial, rest = padded.shape[0], padded.shape[1:1 + m], padded.shape[1 + m:]
    split = [batch]
    for dim, block in zip(spatial, blocks):
        split += [dim // block, block]
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    out = padded.reshape(*split, *rest).transpose(order)
    return out.reshape(batch * prod(blocks), *[d // b for d, b in zip(spatial, blocks)], *rest)


@lowering("BatchToSpaceND", static_inputs=(1, 2), half=True, complex_ok=True)
def batch_to_space_nd(ctx, x, block_shape, crops):
    blocks, cuts = _blocks_and_pairs(block_shape, crops)
    m = len(blocks)
    batch, spatial, rest = x.shape[0] // prod(blocks), x.shape[1:1 + m], x.shape[1 + m:]
    split = x.reshape(*blocks, batch, *spatial, *rest)
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    full = split.transpose(order).reshape(batch, *[d * b for d, b in zip(spatial, blocks)], *rest)
    index = (slice(None),) + tuple(slice(before, d * b - after)
                                   for d, b, (before, after) in zip(spatial, blocks, cuts))
    return full[index]
