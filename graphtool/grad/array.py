"""Gradients of the array ops that move values without combining them: identities, reshapes,
transposes, concatenation and splitting, padding and slicing, tiling and reversing
(TensorFlow's array_grad.py semantics). Index-driven ops (gather, scatter, stitch, diagonals)
are in array_index.py.

Shape, index and axis inputs never get a gradient (None).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .op_utils import (INDEX, as_int32, emit, grad_or_zeros, input_shape_tensor, int_const,
                       output_shape_tensor, static_value, total)
from .registry import GradContext, gradient, not_differentiable

# Sources (constants, feeds, random generators), shape queries and index computations: their
# outputs carry no gradient.
not_differentiable(
    "Const", "HostConst", "Placeholder", "PlaceholderV2", "StopGradient",
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal", "Multinomial",
    "RandomShuffle", "StatelessRandomUniform", "StatelessRandomNormal",
    "Shape", "ShapeN", "Size", "Rank", "BroadcastArgs", "BroadcastGradientArgs", "ConcatOffset",
    "InvertPermutation", "OneHot", "ZerosLike", "OnesLike", "Where", "UnravelIndex", "Empty")


def _none_for_rest(ctx: GradContext, grad) -> list:
    """[grad] for the data input, None for the index/shape inputs after it."""
    return [grad] + [None] * (ctx.num_inputs - 1)


# --- identities and reshapes -------------------------------------------------------------------

@gradient("Identity", "Snapshot", "PlaceholderWithDefault", "EnsureShape")
def _identity_grad(ctx, grads):
    return [grads[0]]


@gradient("Print")
def _print_grad(ctx, grads):
    # TensorFlow's _PrintGrad: the logged input passes its gradient through, the data gets none.
    return _none_for_rest(ctx, grads[0])


@gradient("IdentityN")
def _identity_n_grad(ctx, grads):
    return list(grads)


@gradient("CheckNumerics")
def _check_numerics_grad(ctx, grads):
    # The gradient is checked too, so a NaN born in the backward pass is caught where it starts.
    message = f"Not a number (NaN) or infinity (Inf) values detected in gradient. {ctx.attr('message')}"
    return [emit(ctx, "CheckNumerics", grads[0], message=message)]


@gradient("Reshape", "ExpandDims", "Squeeze")
def _reshape_grad(ctx, grads):
    return _none_for_rest(ctx, emit(ctx, "Reshape", grads[0], input_shape_tensor(ctx, 0)))


@gradient("Transpose", "ConjugateTranspose")
def _transpose_grad(ctx, grads):
    perm = static_value(ctx, 1)
    if perm is not None:
        inverse = int_const(ctx.b, np.argsort(np.asarray(perm).reshape(-1)))
    else:
        inverse = emit(ctx, "InvertPermutation", as_int32(ctx, ctx.input(1)))
    return [emit(ctx, ctx.node.op, grads[0], inverse), None]


@gradient("BroadcastTo")
def _broadcast_to_grad(ctx, grads):
    return [ctx.sum_to_input(0, grads[0]), None]


@gradient("Tile")
def _tile_grad(ctx, grads):
    """Output dim d holds multiples[d] copies of input dim d: reshape the gradient to interleaved
    [multiples[0], shape[0], multiples[1], shape[1], ...] and sum the copies (even axes)."""
    b = ctx.b
    multiples = as_int32(ctx, ctx.input(1))
    shape = input_shape_tensor(ctx, 0)
    interleaved = emit(ctx, "Reshape", emit(ctx, "Pack", [multiples, shape], axis=1), int_const(b, [-1]))
    split = emit(ctx, "Reshape", grads[0], interleaved)
    length = emit(ctx, "Size", interleaved, out_type=INDEX)
    copy_axes = emit(ctx, "Range", int_const(b, 0), length, int_const(b, 2))
    return [emit(ctx, "Sum", split, copy_axes, keep_dims=False), None]


# --- concatenation, stacking, splitting --------------------------------------------------------

def _concat_grads(ctx: GradContext, grad, axis_slot: int, value_slots: range) -> list:
    """Slices of `grad` at each concatenated value's offset (ConcatOffset) and shape."""
    b = ctx.b
    shapes = [input_shape_tensor(ctx, i) for i in value_slots]
    axis = as_int32(ctx, ctx.input(axis_slot))
    offsets = emit(ctx, "ConcatOffset", axis, shapes)
    result = [None] * ctx.num_inputs
    for slot, offset, shape in zip(value_slots, offsets, shapes):
        result[slot] = b.op("Slice", [grad, offset, shape])
    return result


@gradient("ConcatV2")
def _concat_v2_grad(ctx, grads):
    n = ctx.num_inputs - 1
    return _concat_grads(ctx, grads[0], n, range(n))


@gradient("Concat")
def _concat_grad(ctx, grads):
    return _concat_grads(ctx, grads[0], 0, range(1, ctx.num_inputs))


@gradient("Pack")
def _pack_grad(ctx, grads):
    pieces = emit(ctx, "Unpack", grads[0], num=ctx.num_inputs, axis=ctx.attr("axis"))
    return list(pieces)


@gradient("Unpack")
def _unpack_grad(ctx, grads):
    pieces = [grad_or_zeros(ctx, grads, i) for i in range(len(grads))]
    return [emit(ctx, "Pack", pieces, axis=ctx.attr("axis"))]


def _split_grad(ctx: GradContext, grads, axis) -> object:
    return emit(ctx, "ConcatV2", [grad_or_zeros(ctx, grads, i) for i in range(len(grads))], axis)


@gradient("Split")
def _split_v1_grad(ctx, grads):
    return [None, _split_grad(ctx, grads, ctx.input(0))]


@gradient("SplitV")
def _split_v_grad(ctx, grads):
    return [_split_grad(ctx, grads, ctx.input(2)), None, None]


# --- padding and slicing -----------------------------------------------------------------------

def _pad_before(ctx: GradContext) -> object:
    """The amount padded before each dim (paddings[:, 0]) as an int32 vector."""
    paddings = static_value(ctx, 1)
    if paddings is not None:
        return int_const(ctx.b, np.asarray(paddings)[:, 0])
    column = emit(ctx, "Slice", as_int32(ctx, ctx.input(1)), int_const(ctx.b, [0, 0]), int_const(ctx.b, [-1, 1]))
    return emit(ctx, "Reshape", column, int_const(ctx.b, [-1]))


def _unpadded(ctx: GradContext, grad):
    return emit(ctx, "Slice", grad, _pad_before(ctx), input_shape_tensor(ctx, 0))


@gradient("Pad")
def _pad_grad(ctx, grads):
    return [_unpadded(ctx, grads[0]), None]


@gradient("PadV2")
def _pad_v2_grad(ctx, grads):
    """The padding value fills every padded element, so its gradient is the gradient's total
    minus the part that reaches the input (TensorFlow returns none; this is the derivative)."""
    g = grads[0]
    inner = _unpadded(ctx, g)
    return [inner, None, emit(ctx, "Sub", total(ctx, g), total(ctx, inner))]


@gradient("MirrorPad")
def _mirror_pad_grad(ctx, grads):
    return [emit(ctx, "MirrorPadGrad", grads[0], ctx.input(1), mode=ctx.attr("mode")), None]


@gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(ctx, grads):
    # MirrorPadGrad folds the mirrored border back in: a linear map whose adjoint is MirrorPad.
    return [emit(ctx, "MirrorPad", grads[0], ctx.input(1), mode=ctx.attr("mode")), None]


@gradient("Slice")
def _slice_grad(ctx, grads):
    """Zero-pad the gradient back to the input's shape: begin before, the rest after."""
    begin = as_int32(ctx, ctx.input(1))
    after = emit(ctx, "Sub", emit(ctx, "Sub", input_shape_tensor(ctx, 0), begin), output_shape_tensor(ctx, 0))
    paddings = emit(ctx, "Pack", [begin, after], axis=1)
    return [emit(ctx, "Pad", grads[0], paddings), None, None]


_SLICE_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _masks(ctx: GradContext) -> dict:
    return {name: ctx.attr(name) for name in _SLICE_MASKS}


@gradient("StridedSlice")
def _strided_slice_grad(ctx, grads):
    index_dtype = ctx.input_dtype(1).base
    shape = input_shape_tensor(ctx, 0)
    if index_dtype is not dtypes.int32:
        shape = emit(ctx, "Cast", shape, DstT=index_dtype)
    grad = emit(ctx, "StridedSliceGrad", shape, ctx.input(1), ctx.input(2), ctx.input(3), grads[0], **_masks(ctx))
    return [grad, None, None, None]


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(ctx, grads):
    # StridedSliceGrad scatters dy into zeros; its adjoint takes the same slice of the gradient.
    sliced = emit(ctx, "StridedSlice", grads[0], ctx.input(1), ctx.input(2), ctx.input(3), **_masks(ctx))
    return [None, None, None, None, sliced]


# --- reversing ---------------------------------------------------------------------------------

@gradient("Reverse", "ReverseV2")
def _reverse_grad(ctx, grads):
    return [emit(ctx, ctx.node.op, grads[0], ctx.input(1)), None]


@gradient("ReverseSequence")
def _reverse_sequence_grad(ctx, grads):
    reversed_grad = emit(ctx, "ReverseSequence", grads[0], ctx.input(1),
                        seq_dim=ctx.attr("seq_dim"), batch_dim=ctx.attr("batch_dim"))
    return [reversed_grad, None]
