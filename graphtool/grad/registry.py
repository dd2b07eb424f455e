"""The gradient registry: one function per differentiable op, declared per op family.

A gradient function receives a GradContext (the forward node, a builder that emits backward nodes
in the right place, and the forward values it may use) and the gradients of the node's outputs
(None for an output nothing downstream depends on). It returns one gradient per input, or None
for an input that gets no gradient (integer indices, shapes, ...):

    @gradient("Tanh")
    def _tanh_grad(ctx, grads):
        return [ctx.b.op("TanhGrad", [ctx.output(0), grads[0]])]

Ops whose outputs carry no gradient (shapes, comparisons, argmax, integer arithmetic) are declared
with `not_differentiable`, so the driver treats them as cut points instead of failing.
"""
from __future__ import annotations

from typing import Callable

from ..ir import Node, TensorRef

GradFunction = Callable[["GradContext", list], list]

_GRADIENTS: dict[str, GradFunction] = {}
_NOT_DIFFERENTIABLE: set[str] = set()


def gradient(*ops: str):
    """Register the decorated function as the gradient of each op in `ops`."""
    def register(fn: GradFunction) -> GradFunction:
        for op in ops:
            if op in _GRADIENTS or op in _NOT_DIFFERENTIABLE:
                raise ValueError(f"gradient of '{op}' registered twice")
            _GRADIENTS[op] = fn
        return fn
    return register


def not_differentiable(*ops: str) -> None:
    """Declare that no gradient flows through any output of these ops."""
    for op in ops:
        if op in _GRADIENTS or op in _NOT_DIFFERENTIABLE:
            raise ValueError(f"gradient of '{op}' registered twice")
        _NOT_DIFFERENTIABLE.add(op)


def lookup(op: str) -> GradFunction | None:
    """The gradient function of `op` (None when it has none or is declared not differentiable)."""
    _load_families()
    return _GRADIENTS.get(op)


def is_not_differentiable(op: str) -> bool:
    _load_families()
    return op in _NOT_DIFFERENTIABLE


def registered() -> dict[str, GradFunction]:
    """Every op with a gradient function (a copy)."""
    _load_families()
    return dict(_GRADIENTS)


def declared_not_differentiable() -> frozenset[str]:
    _load_families()
    return frozenset(_NOT_DIFFERENTIABLE)


# Ops whose gradient the driver builds from the graph's structure instead of op by op: a while
# loop's Enter/Exit/NextIteration become a backward loop as a whole (graphtool/grad/while_loop.py).
_STRUCTURAL: set[str] = set()


def structural(*ops: str) -> None:
    """Declare ops that carry gradients but are differentiated by the driver as part of a larger
    structure (a while loop), never through a per-op gradient function."""
    for op in ops:
        if op in _GRADIENTS or op in _NOT_DIFFERENTIABLE or op in _STRUCTURAL:
            raise ValueError(f"gradient of '{op}' registered twice")
        _STRUCTURAL.add(op)


def is_structural(op: str) -> bool:
    _load_families()
    return op in _STRUCTURAL


def _load_families() -> None:
    # Importing the family modules registers their gradients (once).
    from . import families  # noqa: F401


class GradContext:
    """What a gradient function sees of the forward node and where it builds.

    `b` is a GraphBuilder whose name scope (and, inside loops, control-flow context) the driver
    has set up for this node's backward nodes. `input(i)`/`output(i)` give the forward values as
    tensors usable from the backward computation: the forward tensors themselves at the root;
    inside a while loop the driver substitutes values saved on a stack during the forward pass
    (it passes `forward_value` for that).
    """

    def __init__(self, builder, node: Node, forward_value: Callable[[TensorRef], TensorRef] | None = None):
        self.b = builder
        self.node = node
        self._forward_value = forward_value or (lambda ref: ref)

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    def input(self, i: int) -> TensorRef:
        """Forward input `i`, usable in the backward computation."""
        return self._forward_value(self.node.inputs[i])

    def output(self, i: int = 0) -> TensorRef:
        """Forward output `i`, usable in the backward computation."""
        return self._forward_value(TensorRef(self.node, i))

    def attr(self, name: str, *default):
        return self.node.attr(name, *default)

    def input_shape(self, i: int):
        """The statically known Shape of forward input `i`."""
        return self.b.shape(self.node.inputs[i])

    def input_dtype(self, i: int):
        return self.b.dtype(self.node.inputs[i])

    def output_shape(self, i: int = 0):
        """The statically known Shape of forward output `i`."""
        return self.b.shape(TensorRef(self.node, i))

    def output_dtype(self, i: int = 0):
        return self.b.dtype(TensorRef(self.node, i))

    def sum_to_input(self, i: int, grad: TensorRef | None):
        """Reduce `grad`, shaped like forward input `i` broadcast to a larger shape (SelectV2's
        branches, BroadcastTo's input, a batched MatMul's operand), back to input `i`'s shape.
        With both static shapes fully known the reduction axes are computed here; otherwise
        BroadcastGradientArgs finds them at run time."""
        if grad is None:
            return None
        b = self.b
        in_shape, grad_shape = self.input_shape(i), b.shape(grad)
        if in_shape.fully_defined and grad_shape.fully_defined:
            if in_shape == grad_shape:
                return grad
            axes = _broadcast_axes(in_shape.as_list(), grad_shape.as_list())
            summed = b.op("Sum", [grad, _int32(axes)], keep_dims=False)
            return b.op("Reshape", [summed, _int32(in_shape.as_list())])
        s_in = b.op("Shape", [self.input(i)], out_type=_index_dtype())
        s_grad = b.op("Shape", [grad], out_type=_index_dtype())
        axes, _ = b.op("BroadcastGradientArgs", [s_in, s_grad])
        return b.op("Reshape", [b.op("Sum", [grad, axes], keep_dims=False), s_in])

    def sum_to_inputs(self, grad_x: TensorRef | None, grad_y: TensorRef | None):
        """Reduce the gradients of a broadcasting binary op's two inputs to those inputs' shapes
        (the one place broadcasting is undone: BroadcastGradientArgs, Sum over the broadcast axes,
        Reshape). Skipped when both static shapes are fully known and equal."""
        shape_x, shape_y = self.input_shape(0), self.input_shape(1)
        if shape_x.fully_defined and shape_x == shape_y:
            return grad_x, grad_y
        b = self.b
        sx = b.op("Shape", [self.input(0)], out_type=_index_dtype())
        sy = b.op("Shape", [self.input(1)], out_type=_index_dtype())
        rx, ry = b.op("BroadcastGradientArgs", [sx, sy])
        reduced: list[TensorRef | None] = []
        for grad, axes, shape in ((grad_x, rx, sx), (grad_y, ry, sy)):
            if grad is None:
                reduced.append(None)
                continue
            summed = b.op("Sum", [grad, axes], keep_dims=False)
            reduced.append(b.op("Reshape", [summed, shape]))
        return reduced[0], reduced[1]


def _index_dtype():
    from .. import dtypes

    return dtypes.int32


def _int32(values):
    import numpy as np

    return np.asarray(values, dtype=np.int32).reshape(-1)


def _broadcast_axes(small: list[int], big: list[int]) -> list[int]:
    """The axes of `big` along which `small` was broadcast (numpy rules: leading axes `small`
    lacks, and axes where `small` has size 1 but `big` does not)."""
    offset = len(big) - len(small)
    return [axis for axis, size in enumerate(big)
            if axis < offset or (small[axis - offset] == 1 and size != 1)]
