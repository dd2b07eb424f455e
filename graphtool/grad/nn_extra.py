"""Gradients of the nn ops real graphs add to the common set (TensorFlow's array_grad.py and
nn_grad.py): the space/depth/batch rearrangements, whose gradients are their inverses (index
inputs such as block_shape, paddings and crops get none), and fake quantization."""
from __future__ import annotations

from .op_utils import emit
from .registry import gradient


@gradient("SpaceToDepth", "DepthToSpace")
def _depth_rearrangement_grad(ctx, grads):
    inverse = "DepthToSpace" if ctx.node.op == "SpaceToDepth" else "SpaceToDepth"
    return [emit(ctx, inverse, grads[0], block_size=ctx.attr("block_size"),
                 data_format=ctx.attr("data_format"))]


@gradient("SpaceToBatchND")
def _space_to_batch_grad(ctx, grads):
    return [emit(ctx, "BatchToSpaceND", grads[0], ctx.input(1), ctx.input(2)), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_grad(ctx, grads):
    return [emit(ctx, "SpaceToBatchND", grads[0], ctx.input(1), ctx.input(2)), None, None]


# --- fake quantization (TensorFlow's array_grad.py): the straight-through estimator, done by
# each op's gradient kernel ------------------------------------------------------------------

@gradient("FakeQuantWithMinMaxArgs")
def _fake_quant_args_grad(ctx, grads):
    attrs = {name: ctx.attr(name) for name in ("min", "max", "num_bits", "narrow_range")}
    return [emit(ctx, "FakeQuantWithMinMaxArgsGradient", grads[0], ctx.input(0), **attrs)]


@gradient("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")
def _fake_quant_vars_grad(ctx, grads):
    attrs = {name: ctx.attr(name) for name in ("num_bits", "narrow_range")}
    return list(emit(ctx, f"{ctx.node.op}Gradient", grads[0], ctx.input(0), ctx.input(1), ctx.input(2),
                     **attrs))
