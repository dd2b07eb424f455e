"""Gradients of the control-flow ops (TensorFlow's control_flow_grad.py semantics).

cond: the gradient of a Merge is a Switch of its gradient on the same predicate, so only the
branch that ran gets a gradient (the other side of the Switch is dead); the gradient of a Switch
is a Merge of its two outputs' gradients. An output nobody differentiated gets zeros that are
live exactly when that output was, so the Merge always sees one live input and the value that
entered the cond gets zeros when its branch did not run.

while loops: Enter, Exit and NextIteration are differentiated by the driver as a whole loop
(see while_loop.py); the Switches and Merges of a loop never reach these functions.

These functions need the cond structure, so they get the driver's DriverGradContext (walk.py):
`ctx.forward(ref)` for any forward value and `ctx.merge_input_branch(slot)`.
"""
from __future__ import annotations

import numpy as np

from ..errors import RuntimeFailure
from ..ir import TensorRef
from .conds import is_loop_merge, is_loop_switch
from .registry import GradContext, gradient, not_differentiable, structural

structural("Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration")
not_differentiable("LoopCond", "ControlTrigger", "Abort", "ToBool")  # ToBool: a lowered predicate


@gradient("Switch", "RefSwitch")
def _switch_grad(ctx, grads: list) -> list:
    if is_loop_switch(ctx.node):
        raise RuntimeFailure(f"internal error: loop Switch '{ctx.node.name}' reached the per-op gradient")
    if grads[0] is None and grads[1] is None:
        return [None, None]
    parts = [grad if grad is not None else _zeros_on_port(ctx, port) for port, grad in enumerate(grads)]
    return [ctx.b.op("Merge", [parts], name="cond_grad")[0], None]


def _zeros_on_port(ctx: GradContext, port: int) -> TensorRef:
    """Zeros shaped like the Switch's input, live exactly when output `port` is: routed through a
    Switch on the same predicate."""
    b = ctx.b
    shape = ctx.input_shape(0)
    dtype = ctx.input_dtype(0).base
    if shape.fully_defined:
        zeros = b.op("Fill", [np.asarray(shape.as_list(), np.int32), np.zeros((), dtype.numpy)], name="zeros")
    else:
        zeros = b.op("ZerosLike", [ctx.input(0)])
    return b.op("Switch", [zeros, ctx.input(1)], name="zeros_switch")[port]


@gradient("Merge", "RefMerge")
def _merge_grad(ctx, grads: list) -> list:
    if is_loop_merge(ctx.node):
        raise RuntimeFailure(f"internal error: loop Merge '{ctx.node.name}' reached the per-op gradient")
    grad = grads[0]
    if grad is None:
        return [None] * ctx.num_inputs
    b = ctx.b
    switches: dict[TensorRef, list[TensorRef]] = {}
    result = []
    for slot in range(ctx.num_inputs):
        branch = ctx.merge_input_branch(slot)
        if branch is None:
            # Not a cond's Merge: send the gradient to the input that fired.
            fired = b.op("Equal", [ctx.output(1), np.int32(slot)])
            result.append(b.op("Switch", [grad, fired])[1])
            continue
        if branch.pred not in switches:
            switches[branch.pred] = b.op("Switch", [grad, ctx.forward(branch.pred)], name="cond_grad")
        result.append(switches[branch.pred][branch.branch])
    return result
