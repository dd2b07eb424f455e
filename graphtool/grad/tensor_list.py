"""Gradients of the TensorList ops (TensorFlow's list_ops.py semantics).

The gradient of a list is a list of the same length holding its elements' gradients (unset
where nothing flowed), so every op's gradient is its mirror image:

    FromTensor  <-> Stack          GetItem  <-> SetItem on a reserved list of zeros-to-be
    PushBack    <-> PopBack        Gather   <-> ScatterIntoExistingList on a reserved list
    Scatter     <-> Gather         Concat   <-> Split          Resize <-> Resize back

Several gradients of one list meet in AddN of variants (element-wise). Length, ElementShape,
ConcatLists and PushBackBatch carry no gradient, as in TensorFlow.

Element shapes a backward op needs come from the forward list's handle data when it is fully
known (a constant), else from a TensorListElementShape of the forward list: inside a while loop a
constant spares the driver saving that list on a stack.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir import TensorRef
from ..shapes import has_rank
from .op_utils import INDEX, emit, int_const
from .registry import GradContext, gradient, not_differentiable

not_differentiable("TensorListConcatLists", "TensorListElementShape", "TensorListLength",
                   "TensorListPushBackBatch", "EmptyTensorList", "TensorListReserve")


def _known_element_shape(ctx: GradContext, ref: TensorRef):
    info = ctx.b.shapes.info.get(ref)
    handle = info.handle if info is not None else None
    if handle is not None and handle.dtype is not None and handle.element_shape.fully_defined:
        return handle.element_shape
    return None


def _list_element_shape(ctx: GradContext, i: int) -> TensorRef:
    """The element shape of forward list input `i` as an int32 shape tensor."""
    known = _known_element_shape(ctx, ctx.node.inputs[i])
    if known is not None:
        return int_const(ctx.b, known.as_list())
    return emit(ctx, "TensorListElementShape", ctx.input(i), shape_type=dtypes.int32)


def _list_output_element_shape(ctx: GradContext, i: int) -> TensorRef:
    known = _known_element_shape(ctx, TensorRef(ctx.node, i))
    if known is not None:
        return int_const(ctx.b, known.as_list())
    return emit(ctx, "TensorListElementShape", ctx.output(i), shape_type=dtypes.int32)


def _shape_of_input(ctx: GradContext, i: int) -> TensorRef:
    shape = ctx.input_shape(i)
    if shape.fully_defined:
        return int_const(ctx.b, shape.as_list())
    return emit(ctx, "Shape", ctx.input(i), out_type=dtypes.int32)


def _row_shape_of_input(ctx: GradContext, i: int) -> TensorRef:
    """Forward input `i`'s shape without its first dim (the element shape of its rows)."""
    shape = ctx.input_shape(i)
    if shape.fully_defined:
        return int_const(ctx.b, shape.as_list()[1:])
    full = emit(ctx, "Shape", ctx.input(i), out_type=dtypes.int32)
    return emit(ctx, "Slice", full, int_const(ctx.b, [1]), int_const(ctx.b, [-1]))


def _static_element_shape(shape) -> np.ndarray:
    """TensorFlow's _build_element_shape of a static shape: dims with -1 unknown, or -1."""
    if not has_rank(shape):
        return np.asarray(-1, dtype=INDEX)
    return np.asarray([-1 if d is None else d for d in shape.dims], dtype=INDEX).reshape(-1)


def _length(ctx: GradContext, i: int) -> TensorRef:
    return emit(ctx, "TensorListLength", ctx.input(i))


def _element_dtype(ctx: GradContext):
    return ctx.attr("element_dtype")


# --- lists from and to tensors -------------------------------------------------------------------

@gradient("TensorListFromTensor")
def _from_tensor_grad(ctx, grads):
    count = ctx.input_shape(0)[0] if has_rank(ctx.input_shape(0)) else None
    tensor_grad = emit(ctx, "TensorListStack", grads[0], _row_shape_of_input(ctx, 0),
                       element_dtype=ctx.input_dtype(0), num_elements=-1 if count is None else count)
    return [tensor_grad, None]


@gradient("TensorListStack")
def _stack_grad(ctx, grads):
    rows = ctx.b.shape(grads[0])[1:]
    return [emit(ctx, "TensorListFromTensor", grads[0], ctx.b.const(_static_element_shape(rows))), None]


@gradient("TensorListConcat", "TensorListConcatV2")
def _concat_grad(ctx, grads):
    tensor_grad = grads[0]
    if tensor_grad is None:
        tensor_grad = emit(ctx, "ZerosLike", ctx.output(0))
    dlist = emit(ctx, "TensorListSplit", tensor_grad, _list_element_shape(ctx, 0), ctx.output(1))
    return [dlist] + [None] * (ctx.num_inputs - 1)


@gradient("TensorListSplit")
def _split_grad(ctx, grads):
    element_shape = emit(ctx, "ConcatV2", [int_const(ctx.b, [-1]), _row_shape_of_input(ctx, 0)],
                         int_const(ctx.b, 0))
    tensor_grad, _ = emit(ctx, "TensorListConcatV2", grads[0], element_shape, ctx.input(2),
                          element_dtype=ctx.input_dtype(0))
    return [tensor_grad, None, None]


# --- single elements -----------------------------------------------------------------------------

@gradient("TensorListGetItem")
def _get_item_grad(ctx, grads):
    reserved = emit(ctx, "TensorListReserve", _list_element_shape(ctx, 0), _length(ctx, 0),
                    element_dtype=_element_dtype(ctx))
    return [emit(ctx, "TensorListSetItem", reserved, ctx.input(1), grads[0]), None, None]


@gradient("TensorListSetItem")
def _set_item_grad(ctx, grads):
    dlist = grads[0]
    list_grad = emit(ctx, "TensorListSetItem", dlist, ctx.input(1), emit(ctx, "ZerosLike", ctx.input(2)))
    item_grad = emit(ctx, "TensorListGetItem", dlist, ctx.input(1), _shape_of_input(ctx, 2),
                     element_dtype=_element_dtype(ctx))
    if ctx.attr("resize_if_index_out_of_bounds"):
        list_grad = emit(ctx, "TensorListResize", list_grad, _length(ctx, 0))
    return [list_grad, None, item_grad]


@gradient("TensorListPushBack")
def _push_back_grad(ctx, grads):
    list_grad, tensor_grad = emit(ctx, "TensorListPopBack", grads[0], _shape_of_input(ctx, 1),
                                  element_dtype=_element_dtype(ctx))
    return [list_grad, tensor_grad]


@gradient("TensorListPopBack")
def _pop_back_grad(ctx, grads):
    dlist, delement = grads
    if dlist is None:
        # Nothing read the shorter list: its gradient is a list of its length with nothing set
        # (TensorFlow starts from an empty list, whose one pushed element then cannot add up with
        # the gradients of the input's other readers when the shorter list was not empty).
        dlist = emit(ctx, "TensorListReserve", _list_output_element_shape(ctx, 0),
                     emit(ctx, "TensorListLength", ctx.output(0)), element_dtype=_element_dtype(ctx))
    if delement is None:
        delement = emit(ctx, "ZerosLike", ctx.output(1))
    return [emit(ctx, "TensorListPushBack", dlist, delement), None]


@gradient("TensorListResize")
def _resize_grad(ctx, grads):
    return [emit(ctx, "TensorListResize", grads[0], _length(ctx, 0)), None]


# --- many elements -------------------------------------------------------------------------------

@gradient("TensorListGather")
def _gather_grad(ctx, grads):
    """The gathered rows' gradients scattered back into a list of the input's length. An index
    gathered twice gets both rows' gradients summed (TensorFlow scatters them as they are, so the
    last one wins); indices known to be distinct are scattered directly, as TensorFlow does."""
    reserved = emit(ctx, "TensorListReserve", _list_element_shape(ctx, 0), _length(ctx, 0),
                    element_dtype=_element_dtype(ctx))
    rows, indices = grads[0], ctx.input(1)
    known = ctx.b.value(ctx.node.inputs[1])
    if known is None or len(np.unique(known)) != np.size(known):
        indices, positions = emit(ctx, "Unique", indices, out_idx=dtypes.int32)
        rows = emit(ctx, "UnsortedSegmentSum", rows, positions, emit(ctx, "Size", indices, out_type=dtypes.int32))
    return [emit(ctx, "TensorListScatterIntoExistingList", reserved, rows, indices), None, None]


@gradient("TensorListScatter", "TensorListScatterV2")
def _scatter_grad(ctx, grads):
    tensor_grad = emit(ctx, "TensorListGather", grads[0], ctx.input(1), _row_shape_of_input(ctx, 0),
                       element_dtype=ctx.input_dtype(0))
    return [tensor_grad] + [None] * (ctx.num_inputs - 1)


@gradient("TensorListScatterIntoExistingList")
def _scatter_into_existing_grad(ctx, grads):
    dlist = grads[0]
    tensor_grad = emit(ctx, "TensorListGather", dlist, ctx.input(2), _row_shape_of_input(ctx, 1),
                       element_dtype=_element_dtype(ctx))
    list_grad = emit(ctx, "TensorListScatterIntoExistingList", dlist, emit(ctx, "ZerosLike", ctx.input(1)),
                     ctx.input(2))
    # A scatter past the end grew the list: its input's gradient has the input's length (TensorFlow
    # leaves it as long as the output, which then fails to add up with the input's other gradients).
    list_grad = emit(ctx, "TensorListResize", list_grad, _length(ctx, 0))
    return [list_grad, tensor_grad, None]
