"""Small builders shared by the gradient families (math, array, nn).

Gradient functions stay short when the recurring shapes of a gradient are named once:
`unary_grad` for element-wise ops whose derivative is a tensor expression, `fused_grad` for ops
that have a dedicated backward kernel (TanhGrad, ReluGrad, ...), and `shape_tensor` for the
shape of a forward value, a constant when it is statically known. Using a constant where possible
matters inside while loops: a Shape op on a forward value makes the driver save that value on a
stack just to measure it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from ..ir import TensorRef
from .registry import GradContext

INDEX = np.int32


def emit(ctx: GradContext, op_type: str, *inputs, **attrs):
    """One backward node: `op_type` on `inputs` (one per input arg) with `attrs`."""
    return ctx.b.op(op_type, list(inputs), **attrs)


def total(ctx: GradContext, value: TensorRef) -> TensorRef:
    """The sum of every element of `value` (any rank)."""
    every_axis = emit(ctx, "Range", int_const(ctx.b, 0), emit(ctx, "Rank", value), int_const(ctx.b, 1))
    return emit(ctx, "Sum", value, every_axis)


def int_const(b, values) -> TensorRef:
    """An int32 constant (a vector, or a scalar for a python int)."""
    return b.const(np.asarray(values, dtype=INDEX))


def scalar(ctx: GradContext, value: float, like: TensorRef) -> TensorRef:
    """A scalar constant of `like`'s dtype."""
    return ctx.b.const(value, dtype=ctx.b.dtype(like))


def static_value(ctx: GradContext, i: int) -> np.ndarray | None:
    """The statically known value of forward input `i` (axes, shapes, paddings), or None."""
    return ctx.b.value(ctx.node.inputs[i])


def shape_tensor(ctx: GradContext, static_shape, value: TensorRef) -> TensorRef:
    """The shape of `value` as an int32 vector: a Const when `static_shape` is fully known,
    else a Shape op on `value`."""
    if static_shape.fully_defined:
        return int_const(ctx.b, static_shape.as_list())
    return ctx.b.op("Shape", [value], out_type=INDEX)


def input_shape_tensor(ctx: GradContext, i: int) -> TensorRef:
    return shape_tensor(ctx, ctx.input_shape(i), ctx.input(i))


def output_shape_tensor(ctx: GradContext, i: int = 0) -> TensorRef:
    return shape_tensor(ctx, ctx.output_shape(i), ctx.output(i))


def zeros_like(ctx: GradContext, value: TensorRef) -> TensorRef:
    return ctx.b.op("ZerosLike", [value])


def grad_or_zeros(ctx: GradContext, grads: list, i: int) -> TensorRef:
    """grads[i], or zeros shaped like forward output `i` when no gradient reached that output
    (multi-output ops whose backward op needs every output's gradient)."""
    if grads[i] is not None:
        return grads[i]
    return zeros_like(ctx, ctx.output(i))


def mul(ctx: GradContext, x: TensorRef, y: TensorRef) -> TensorRef:
    return ctx.b.op("Mul", [x, y])


def neg(ctx: GradContext, x: TensorRef) -> TensorRef:
    return ctx.b.op("Neg", [x])


def unary_grad(derivative: Callable[[GradContext], TensorRef]):
    """The gradient of an element-wise op y = f(x): dx = dy * f'(x), with `derivative(ctx)`
    building f'(x) from the forward values."""
    def grad(ctx: GradContext, grads: list) -> list:
        return [mul(ctx, grads[0], derivative(ctx))]
    return grad


def fused_grad(op_type: str, forward: str = "output", grad_first: bool = False,
               attrs: tuple[str, ...] = ()):
    """The gradient of a single-input op with a dedicated backward op `op_type`, which takes the
    forward value (`forward` = "output" or "input") and dy, in the order TensorFlow declares
    (TanhGrad(y, dy) but ReluGrad(dy, x): `grad_first`). `attrs` are copied from the forward node."""
    def grad(ctx: GradContext, grads: list) -> list:
        value = ctx.output(0) if forward == "output" else ctx.input(0)
        inputs = [grads[0], value] if grad_first else [value, grads[0]]
        return [ctx.b.op(op_type, inputs, **{name: ctx.attr(name) for name in attrs})]
    return grad


def as_int32(ctx: GradContext, value: TensorRef) -> TensorRef:
    """`value` (an int32 or int64 index tensor) as int32, so it mixes with our int32 shapes."""
    if ctx.b.dtype(value).base is dtypes.int32:
        return value
    return ctx.b.op("Cast", [value], DstT=dtypes.int32)


def normalized_axes(ctx: GradContext, axes: TensorRef, rank: TensorRef) -> TensorRef:
    """`axes` (possibly negative) mapped into [0, rank) at run time."""
    b = ctx.b
    return b.op("FloorMod", [b.op("AddV2", [axes, rank]), rank])


def reduced_shape(ctx: GradContext, input_index: int, axes_index: int) -> TensorRef:
    """The shape of a reduction's input with the reduced axes set to 1 (the output shape with
    keep_dims=True), for reshaping the output gradient so it broadcasts over the input.
    Computed statically when the input shape and the axes are known, else with DynamicStitch
    (input shape, with ones stitched in at the reduced axes)."""
    b = ctx.b
    in_shape = ctx.input_shape(input_index)
    axes = static_value(ctx, axes_index)
    if in_shape.fully_defined and axes is not None:
        dims = in_shape.as_list()
        for axis in np.asarray(axes).reshape(-1):
            dims[int(axis) % len(dims)] = 1
        return int_const(b, dims)
    shape = b.op("Shape", [ctx.input(input_index)], out_type=INDEX)
    rank = b.op("Size", [shape], out_type=INDEX)
    axes_t = normalized_axes(ctx, as_int32(ctx, ctx.input(axes_index)), rank)
    ones = b.op("Fill", [b.op("Shape", [axes_t], out_type=INDEX), int_const(b, 1)])
    every_axis = b.op("Range", [int_const(b, 0), rank, int_const(b, 1)])
    return b.op("DynamicStitch", [[every_axis, axes_t], [shape, ones]])


def broadcast_reduction_grad(ctx: GradContext, grad: TensorRef, input_index: int = 0,
                             axes_index: int = 1) -> TensorRef:
    """The output gradient of a reduction (Sum, Mean, Max, ...) spread back over the input's
    shape: reshaped to the keep_dims shape, then broadcast."""
    b = ctx.b
    kept = b.op("Reshape", [grad, reduced_shape(ctx, input_index, axes_index)])
    return b.op("BroadcastTo", [kept, input_shape_tensor(ctx, input_index)])
