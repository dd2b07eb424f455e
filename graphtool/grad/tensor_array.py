"""Gradients of the TensorArray (V3) and stack ops (TensorFlow's tensor_array_grad.py semantics).

A forward TensorArray's gradient lives in a gradient TensorArray: TensorArrayGradV3(handle,
source=PREFIX) creates it on first use and returns the same one to every later op of the same
gradient computation (so the gradients of several reads of one element are summed there). What
flows between the backward ops is the gradient array's `flow`, a float scalar that orders them:

    read(i)       -> write gradient(i) into the gradient array      (its flow: d flow_in)
    write(i, v)   -> d v = read gradient(i)                          (d flow_in passes through)
    gather(idx)   -> scatter gradient(idx)          scatter(idx, v) -> d v = gather gradient(idx)
    concat        -> split gradient(lengths)        split(v, len)   -> d v = concat gradient

A write's gradient must read the gradient array only after the forward write happened (the
gradient array is sized from the forward one): its flow waits for the write's flow_out.
Stacks only exist to save values for backward loops; they carry no gradients.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import TensorRef
from ..shapes import has_rank
from .registry import GradContext, gradient, not_differentiable

if TYPE_CHECKING:
    from .walk import DriverGradContext

not_differentiable(
    "TensorArrayV3", "TensorArrayGradV3", "TensorArrayGradWithShape", "TensorArraySizeV3",
    "TensorArrayCloseV3",
    "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2",
)


def _gradient_array(ctx: DriverGradContext, flow: TensorRef) -> tuple[TensorRef, TensorRef]:
    """(handle, flow) of the gradient array of the forward op's array; the flow is made to wait
    for the gradient array's creation."""
    b = ctx.b
    handle, _ = b.op("TensorArrayGradV3", [ctx.input(0), flow], source=ctx.run.prefix, name="TensorArrayGrad")
    with b.control_dependencies([handle]):
        flow = b.op("Identity", [flow], name="gradient_flow")
    return handle, flow


def _after_forward_write(ctx: GradContext, flow_grad: TensorRef) -> TensorRef:
    """The incoming flow gradient, made to wait for the forward op's flow_out: the write must
    have happened before its gradient reads the gradient array."""
    b = ctx.b
    flow_out = b.op("Identity", [ctx.output(0)], name="flow_out")
    with b.control_dependencies([flow_out]):
        return b.op("Identity", [flow_grad], name="write_barrier")


@gradient("TensorArrayReadV3")
def _read_grad(ctx, grads: list) -> list:
    handle, flow = _gradient_array(ctx, ctx.input(2))
    written = ctx.b.op("TensorArrayWriteV3", [handle, ctx.input(1), grads[0], flow])
    return [None, None, written]


@gradient("TensorArrayGatherV3")
def _gather_grad(ctx, grads: list) -> list:
    handle, flow = _gradient_array(ctx, ctx.input(2))
    scattered = ctx.b.op("TensorArrayScatterV3", [handle, ctx.input(1), grads[0], flow])
    return [None, None, scattered]


@gradient("TensorArrayConcatV3")
def _concat_grad(ctx, grads: list) -> list:
    handle, flow = _gradient_array(ctx, ctx.input(1))
    split = ctx.b.op("TensorArraySplitV3", [handle, grads[0], ctx.output(1), flow])
    return [None, split]


@gradient("TensorArrayWriteV3")
def _write_grad(ctx, grads: list) -> list:
    flow = _after_forward_write(ctx, grads[0])
    handle, read_flow = _gradient_array(ctx, flow)
    value = ctx.b.op("TensorArrayReadV3", [handle, ctx.input(1), read_flow], dtype=ctx.attr("T"))
    return [None, None, value, flow]


@gradient("TensorArrayScatterV3")
def _scatter_grad(ctx, grads: list) -> list:
    flow = _after_forward_write(ctx, grads[0])
    handle, read_flow = _gradient_array(ctx, flow)
    value = ctx.b.op("TensorArrayGatherV3", [handle, ctx.input(1), read_flow], dtype=ctx.attr("T"),
                     element_shape=_element_shape(ctx, 2, drop=1))
    return [None, None, value, flow]


@gradient("TensorArraySplitV3")
def _split_grad(ctx, grads: list) -> list:
    flow = _after_forward_write(ctx, grads[0])
    handle, read_flow = _gradient_array(ctx, flow)
    value, _ = ctx.b.op("TensorArrayConcatV3", [handle, read_flow], dtype=ctx.attr("T"),
                        element_shape_except0=_element_shape(ctx, 1, drop=1))
    return [None, value, None, flow]


def _element_shape(ctx: GradContext, i: int, drop: int):
    """What the forward value input `i` says about the elements: its shape without the first
    `drop` dims (unknown when its rank is)."""
    from ..shapes import Shape

    shape = ctx.input_shape(i)
    return Shape(shape.dims[drop:]) if has_rank(shape) else Shape.unknown()
