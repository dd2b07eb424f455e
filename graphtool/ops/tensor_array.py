"""TensorArray (V3) and stack (V2) ops: resource-backed containers TensorFlow v1 while loops use.

A TensorArray holds one tensor per loop step (dynamic_rnn's inputs and outputs); the gradient of
a while loop pushes forward values onto stacks and pops them in the backward loop. Every op here
reads or mutates a resource, so all are stateful, exactly as TensorFlow declares them.

Handles are resources of shape [2] (TensorFlow's legacy (container, name) layout), and the float
`flow` scalars only order the ops that touch one TensorArray.

The element shape travels with the handle as HandleData (see ops/inference.py): TensorArrayV3
starts it from its element_shape attr, writes/scatters/splits and stack pushes refine it, reads,
gathers and pops report it. TensorFlow's graph construction tracks the same knowledge (and records
it in the `_output_shapes` of reads), so our shapes agree with graphs TensorFlow wrote.
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import HandleData, InferenceContext
from .registry import register

_HANDLE = Shape([2])


def vector_of_length(ctx: InferenceContext, i: int, length: int, what: str) -> Shape:
    """Input i as a vector that must be compatible with `length` elements (handles, seeds)."""
    shape = ctx.with_rank(i, 1)
    if shape[0] is not None and shape[0] != length:
        ctx.fail(f"{what} (input {i}) must be a vector of {length} elements, has shape {shape}")
    return shape


def _check_inputs(ctx: InferenceContext, scalars=(), vectors=()) -> None:
    """Input 0 is a handle; the inputs at `scalars` must be rank 0, those at `vectors` rank 1."""
    vector_of_length(ctx, 0, 2, "handle")
    for i in scalars:
        ctx.with_rank(i, 0)
    for i in vectors:
        ctx.with_rank(i, 1)


# --- TensorArray shape functions --------------------------------------------------------------

def _element_shape(ctx: InferenceContext, attr: str | None = None) -> Shape:
    """What is known of the elements: the handle's data merged with an op's own shape attr."""
    handle = ctx.handle(0)
    shape = handle.element_shape if handle is not None else Shape.unknown()
    if attr is not None:
        try:
            shape = shape.merge(ctx.attr(attr))
        except Exception:
            shape = ctx.attr(attr)
    return shape


def _learn_element(ctx: InferenceContext, shape: Shape) -> None:
    handle = ctx.handle(0)
    if handle is not None:
        handle.learn(shape)


def _tensor_array_shapes(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    ctx.output_handles[0] = HandleData(ctx.attr("element_shape"))
    return [_HANDLE, Shape.scalar()]


def _grad_shapes(ctx: InferenceContext) -> list[Shape]:
    # TensorFlow checks neither flow_in nor shape_to_prepend here. A gradient TensorArray holds
    # elements shaped like the forward one's (with shape_to_prepend's dims in front for
    # TensorArrayGradWithShape).
    _check_inputs(ctx)
    element = _element_shape(ctx)
    if ctx.op == "TensorArrayGradWithShape":
        prepend = ctx.shape(2)
        element = (Shape.unknown_of_rank(prepend[0]).concatenate(element)
                   if has_rank(prepend) and prepend.rank == 1 and prepend[0] is not None else Shape.unknown())
    ctx.output_handles[0] = HandleData(element)
    return [_HANDLE, Shape.scalar()]


def _read_shape(ctx: InferenceContext) -> Shape:
    _check_inputs(ctx, scalars=(1, 2))
    return _element_shape(ctx)


def _write_shape(ctx: InferenceContext) -> Shape:
    _check_inputs(ctx, scalars=(1, 3))
    _learn_element(ctx, ctx.shape(2))
    return Shape.scalar()


def _gather_shape(ctx: InferenceContext) -> Shape:
    """[len(indices)] + element_shape: one element per index along a new leading axis."""
    _check_inputs(ctx, scalars=(2,))
    indices = ctx.with_rank(1, 1)
    return indices.concatenate(_element_shape(ctx, "element_shape"))


def _scatter_shape(ctx: InferenceContext) -> Shape:
    """value's rows go to the TensorArray positions in indices, so their counts must agree."""
    _check_inputs(ctx, scalars=(3,))
    indices, value = ctx.with_rank(1, 1), ctx.with_rank_at_least(2, 1)
    rows, count = value[0], indices[0]
    if rows is not None and count is not None and rows != count:
        ctx.fail(f"value has {rows} rows but indices has {count} entries")
    _learn_element(ctx, value[1:])
    return Shape.scalar()


def _concat_shapes(ctx: InferenceContext) -> list[Shape]:
    """value: [sum of the elements' first dims] + element_shape_except0; lengths: one per element.
    TensorFlow's C++ function leaves value unknown, but its kernel enforces element_shape_except0
    and its Python wrapper sets this very shape, so graphs from TensorFlow carry it."""
    _check_inputs(ctx, scalars=(1,))
    except0 = ctx.attr("element_shape_except0")
    known = _element_shape(ctx)
    if has_rank(known) and known.rank >= 1:
        try:
            except0 = except0.merge(known[1:])
        except Exception:
            pass
    return [Shape([None]).concatenate(except0), Shape([None])]


def _split_shape(ctx: InferenceContext) -> Shape:
    _check_inputs(ctx, scalars=(3,), vectors=(2,))
    value = ctx.shape(1)
    if has_rank(value) and value.rank >= 1:
        _learn_element(ctx, Shape([None]).concatenate(value[1:]))
    return Shape.scalar()


def _size_shape(ctx: InferenceContext) -> Shape:
    _check_inputs(ctx)  # TensorFlow does not check flow_in here
    return Shape.scalar()


def _close_shapes(ctx: InferenceContext) -> list[Shape]:
    _check_inputs(ctx)
    return []


_TA_HANDLE_IN = "handle: resource"
_FLOW_IN = "flow_in: float"
_FLOW_OUT = "flow_out: float"

register("TensorArrayV3", inputs=["size: int32"], outputs=["handle: resource", "flow: float"],
         attrs=["dtype: type", "element_shape: shape = unknown", "dynamic_size: bool = false",
                "clear_after_read: bool = true", "identical_element_shapes: bool = false",
                "tensor_array_name: string = ''"],
         shape=_tensor_array_shapes, stateful=True)
register("TensorArrayReadV3", inputs=[_TA_HANDLE_IN, "index: int32", _FLOW_IN],
         outputs=["value: dtype"], attrs=["dtype: type"], shape=_read_shape, stateful=True)
register("TensorArrayWriteV3", inputs=[_TA_HANDLE_IN, "index: int32", "value: T", _FLOW_IN],
         outputs=[_FLOW_OUT], attrs=["T: type"], shape=_write_shape, stateful=True)
register("TensorArrayGatherV3", inputs=[_TA_HANDLE_IN, "indices: int32", _FLOW_IN],
         outputs=["value: dtype"], attrs=["dtype: type", "element_shape: shape = unknown"],
         shape=_gather_shape, stateful=True)
register("TensorArrayScatterV3", inputs=[_TA_HANDLE_IN, "indices: int32", "value: T", _FLOW_IN],
         outputs=[_FLOW_OUT], attrs=["T: type"], shape=_scatter_shape, stateful=True)
register("TensorArrayConcatV3", inputs=[_TA_HANDLE_IN, _FLOW_IN],
         outputs=["value: dtype", "lengths: int64"],
         attrs=["dtype: type", "element_shape_except0: shape = unknown"],
         shape=_concat_shapes, stateful=True)
register("TensorArraySplitV3", inputs=[_TA_HANDLE_IN, "value: T", "lengths: int64", _FLOW_IN],
         outputs=[_FLOW_OUT], attrs=["T: type"], shape=_split_shape, stateful=True)
register("TensorArraySizeV3", inputs=[_TA_HANDLE_IN, _FLOW_IN], outputs=["size: int32"],
         shape=_size_shape, stateful=True)
register("TensorArrayCloseV3", inputs=[_TA_HANDLE_IN], shape=_close_shapes, stateful=True)
register("TensorArrayGradV3", inputs=[_TA_HANDLE_IN, _FLOW_IN],
         outputs=["grad_handle: resource", _FLOW_OUT], attrs=["source: string"],
         shape=_grad_shapes, stateful=True)
register("TensorArrayGradWithShape", inputs=[_TA_HANDLE_IN, _FLOW_IN, "shape_to_prepend: int32"],
         outputs=["grad_handle: resource", _FLOW_OUT], attrs=["source: string"],
         shape=_grad_shapes, stateful=True)


# --- stacks -----------------------------------------------------------------------------------

def _stack_shape(ctx: InferenceContext) -> Shape:
    ctx.output_handles[0] = HandleData()
    return _HANDLE  # TensorFlow does not check max_size's rank


def _push_shape(ctx: InferenceContext) -> Shape:
    _learn_element(ctx, ctx.shape(1))
    return ctx.shape(1)  # the pushed element passes through


def _pop_shape(ctx: InferenceContext) -> Shape:
    # TensorFlow's while-loop gradient sets each pop's shape to the pushed value's.
    return _element_shape(ctx)


register("StackV2", inputs=["max_size: int32"], outputs=["handle: resource"],
         attrs=["elem_type: type", "stack_name: string = ''"], shape=_stack_shape, stateful=True)
register("StackPushV2", inputs=["handle: resource", "elem: T"], outputs=["output: T"],
         attrs=["T: type", "swap_memory: bool = false"], shape=_push_shape, stateful=True)
register("StackPopV2", inputs=["handle: resource"], outputs=["elem: elem_type"],
         attrs=["elem_type: type"], shape=_pop_shape, stateful=True)
register("StackCloseV2", inputs=["handle: resource"], shape=_close_shapes, stateful=True)
