"""Ops that move values between the batch, spatial and depth dims without changing them
(imported by nn.py, registered as family "nn"): SpaceToDepth, DepthToSpace, SpaceToBatchND and
BatchToSpaceND. The shape functions follow TensorFlow's (array_ops.cc): exact divisibility is
checked where the dims are known, and block shapes, paddings and crops are used when their values
are statically known.
"""
from __future__ import annotations

from functools import partial

from ..shapes import Shape, has_rank
from . import registry
from .inference import InferenceContext
from .nn_conv import Layout, divide_dim_exactly, multiply_dim

register = partial(registry.register, family="nn")


def _depth_layout(ctx: InferenceContext) -> Layout:
    layout = Layout(ctx.attr("data_format", "NHWC"))
    if layout.vect_letter:
        ctx.fail("NCHW_VECT_C is only supported for int8 tensors on GPUs")
    return layout


def _space_to_depth_shape(ctx: InferenceContext) -> Shape:
    layout = _depth_layout(ctx)
    shape = ctx.with_rank(0, 4)
    block = ctx.attr("block_size")
    spatial = [divide_dim_exactly(ctx, dim, block) for dim in layout.spatial(shape)]
    depth = multiply_dim(layout.get(shape, "C"), block * block)
    return layout.build({"N": layout.get(shape, "N"), "C": depth}, spatial)


def _depth_to_space_shape(ctx: InferenceContext) -> Shape:
    layout = _depth_layout(ctx)
    shape = ctx.with_rank(0, 4)
    block = ctx.attr("block_size")
    spatial = [multiply_dim(dim, block) for dim in layout.spatial(shape)]
    depth = divide_dim_exactly(ctx, layout.get(shape, "C"), block * block)
    return layout.build({"N": layout.get(shape, "N"), "C": depth}, spatial)


def _block_shape(ctx: InferenceContext, pads_name: str):
    """(block shape values or None, number of block dims, paddings/crops values or None)."""
    blocks = ctx.with_rank(1, 1)
    pads = ctx.with_rank(2, 2)
    count = blocks[0] if blocks[0] is not None else pads[0]
    if blocks[0] is not None and pads[0] is not None and blocks[0] != pads[0]:
        ctx.fail(f"block_shape and {pads_name} must agree in dimension 0")
    if pads[1] is not None and pads[1] != 2:
        ctx.fail(f"{pads_name} must have 2 columns")
    block_values = ctx.int_list(1)
    if block_values is not None and any(b < 1 for b in block_values):
        ctx.fail(f"block_shape must be positive, got {block_values}")
    pad_values = ctx.int_list(2)
    if pad_values is not None and any(p < 0 for p in pad_values):
        ctx.fail(f"{pads_name} must be non-negative")
    return block_values, count, pad_values


def _space_batch_shape(ctx: InferenceContext, to_batch: bool) -> Shape:
    block_values, count, pad_values = _block_shape(ctx, "paddings" if to_batch else "crops")
    shape = ctx.shape(0)
    if count is not None:
        shape = ctx.with_rank_at_least(0, 1 + count)
    if not has_rank(shape):
        return Shape.unknown()
    dims = list(shape.dims)
    if block_values is None:
        # Batch and block dims depend on the block shape; only the trailing dims are known.
        return Shape([None] * (1 + (count or 0)) + dims[1 + (count or 0):]) if count is not None \
            else Shape.unknown_of_rank(shape.rank)
    product = 1
    for b in block_values:
        product *= b
    out = [multiply_dim(dims[0], product) if to_batch else divide_dim_exactly(ctx, dims[0], product)]
    for i, block in enumerate(block_values):
        dim = dims[1 + i]
        before, after = (pad_values[2 * i], pad_values[2 * i + 1]) if pad_values is not None else (None, None)
        if to_batch:
            padded = None if dim is None or before is None else dim + before + after
            out.append(divide_dim_exactly(ctx, padded, block) if padded is not None else None)
        else:
            full = multiply_dim(dim, block)
            if full is None or before is None:
                out.append(None)
            else:
                if before + after > full:
                    ctx.fail(f"crops must be less than or equal to input dimension {1 + i}")
                out.append(full - before - after)
    return Shape(out + dims[1 + len(block_values):])


_TYPE = "T: type"
_DEPTH_ATTRS = [_TYPE, "block_size: int >= 2", "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"]
_INDEX = "{int32, int64} = int32"

register("SpaceToDepth", inputs=["input: T"], outputs=["output: T"], attrs=_DEPTH_ATTRS,
         shape=_space_to_depth_shape)
register("DepthToSpace", inputs=["input: T"], outputs=["output: T"], attrs=_DEPTH_ATTRS,
         shape=_depth_to_space_shape)
register("SpaceToBatchND", inputs=["input: T", "block_shape: Tblock_shape", "paddings: Tpaddings"],
         outputs=["output: T"], attrs=[_TYPE, f"Tblock_shape: {_INDEX}", f"Tpaddings: {_INDEX}"],
         shape=lambda ctx: _space_batch_shape(ctx, to_batch=True))
register("BatchToSpaceND", inputs=["input: T", "block_shape: Tblock_shape", "crops: Tcrops"],
         outputs=["output: T"], attrs=[_TYPE, f"Tblock_shape: {_INDEX}", f"Tcrops: {_INDEX}"],
         shape=lambda ctx: _space_batch_shape(ctx, to_batch=False))
