"""TensorList ops: the variant-valued lists TF2 control flow and Keras RNNs use (list_ops.cc).

A TensorList is a scalar `variant` tensor holding a list of tensors of one dtype. Unlike a
TensorArray it is a value: SetItem, PushBack, PopBack, Resize and the scatters return a new list
and leave their input as it was, so no op here is stateful and lists flow through Enter/Merge/
Switch/NextIteration/Exit like any loop variable.

What a list holds travels with it as HandleData (element shape and dtype, TensorFlow's
ShapeAndType): the creating ops (EmptyTensorList, Reserve, FromTensor, Scatter, Split) set it from
their element_shape input, the ops that derive one list from another copy it, and the readers
(GetItem, Stack, Gather, PopBack, Concat) merge it with their own element_shape input to give
static shapes. Each shape function here follows TensorFlow's: which shape a new list records,
which checks fail, and where TensorFlow leaves a shape unknown.
"""
from __future__ import annotations

import numpy as np

from ..shapes import Shape, ShapeError, has_rank
from .inference import HandleData, InferenceContext, scalar
from .registry import register

_SHAPE_TYPE = "shape_type: {int32, int64}"


# --- handle data ----------------------------------------------------------------------------------

def list_handle(ctx: InferenceContext, i: int = 0) -> HandleData | None:
    """The TensorList handle data of input i, if it carries one (TensorFlow's
    IsValidTensorListHandleData: one shape-and-type)."""
    handle = ctx.handle(i)
    return handle if handle is not None and handle.dtype is not None else None


def _checked_handle(ctx: InferenceContext) -> HandleData | None:
    """Input 0's handle data, whose dtype must be the op's element_dtype."""
    handle = list_handle(ctx)
    dtype = ctx.attr("element_dtype")
    if handle is not None and handle.dtype != dtype:
        ctx.fail(f"Expected list with element dtype {dtype} but got list with element dtype "
                 f"{handle.dtype}")
    return handle


def _merge(ctx: InferenceContext, a: Shape, b: Shape, what: str) -> Shape:
    try:
        return a.merge(b)
    except ShapeError:
        ctx.fail(f"{what}: shapes {a} and {b} are incompatible")


def _new_list(ctx: InferenceContext, element_shape: Shape, output: int = 0) -> Shape:
    """Output `output` is a list of element_dtype elements shaped `element_shape`."""
    ctx.output_handles[output] = HandleData(element_shape, ctx.attr("element_dtype"))
    return Shape.scalar()


def _copy_list(ctx: InferenceContext, handle: HandleData | None, output: int = 0) -> None:
    if handle is not None:
        ctx.output_handles[output] = handle


# --- creating lists -------------------------------------------------------------------------------

def _from_shape_input(index: int):
    """EmptyTensorList, TensorListReserve, TensorListScatter(V2): the element shape is the shape
    tensor at `index` (a scalar -1 is unknown rank)."""
    def shape_fn(ctx: InferenceContext) -> Shape:
        return _new_list(ctx, ctx.shape_from_tensor(index))
    return shape_fn


def _from_tensor_shape(ctx: InferenceContext) -> Shape:
    # TensorFlow checks the tensor's rows against element_shape but records element_shape as it is
    # (a later SetItem may store elements of another shape when it is less specific).
    element_shape = ctx.shape_from_tensor(1)
    rows = ctx.with_rank_at_least(0, 1)[1:]
    _merge(ctx, rows, element_shape, "tensor rows and element_shape")
    return _new_list(ctx, element_shape)


def _split_shape(ctx: InferenceContext) -> Shape:
    tensor = ctx.with_rank_at_least(0, 1)
    ctx.with_rank(2, 1)
    element_shape = ctx.shape_from_tensor(1)
    _merge(ctx, Shape([None]).concatenate(tensor[1:]), element_shape, "tensor and element_shape")
    return _new_list(ctx, element_shape)


# --- deriving one list from another ---------------------------------------------------------------

def _set_item_shape(ctx: InferenceContext) -> Shape:
    handle = list_handle(ctx)
    if handle is None:
        return _new_list(ctx, Shape.unknown())
    _merge(ctx, ctx.shape(2), handle.element_shape, "item and list element shape")
    _copy_list(ctx, handle)
    return Shape.scalar()


def _push_back_element(ctx: InferenceContext) -> Shape:
    """PushBack(Batch)'s new list: input 0's element shape, whatever the pushed tensor's shape."""
    handle = _checked_handle(ctx)
    return handle.element_shape if handle is not None else Shape.unknown()


def _push_back_shape(ctx: InferenceContext) -> Shape:
    return _new_list(ctx, _push_back_element(ctx))


def _push_back_batch_shape(ctx: InferenceContext) -> Shape:
    handles = ctx.with_rank(0, 1)
    tensor = ctx.with_rank_at_least(1, 1)
    batch = _merge(ctx, handles, tensor[:1], "input_handles and the tensor's first dimension")
    _new_list(ctx, _push_back_element(ctx))
    return batch


def _pop_back_shapes(ctx: InferenceContext) -> list[Shape]:
    handle = _checked_handle(ctx)
    if handle is None:
        return [Shape.scalar(), Shape.unknown()]
    _copy_list(ctx, handle)
    return [Shape.scalar(), handle.element_shape]


def _resize_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 0)
    _copy_list(ctx, list_handle(ctx))
    return Shape.scalar()


def _scatter_into_existing_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank_at_least(1, 1)
    ctx.with_rank(2, 1)
    handle = _checked_handle(ctx)
    return _new_list(ctx, handle.element_shape if handle is not None else Shape.unknown())


def _concat_lists_shape(ctx: InferenceContext) -> Shape:
    out = _merge(ctx, ctx.shape(0), ctx.shape(1), "input_a and input_b")
    dtype = ctx.attr("element_dtype")
    handles = [h for h in (list_handle(ctx, 0), list_handle(ctx, 1)) if h is not None]
    for handle, name in zip(handles, ("input_a", "input_b")):
        if handle.dtype != dtype:
            ctx.fail(f"{name}.type != element_dtype: {handle.dtype} vs. {dtype}")
    element = Shape.unknown()
    for handle in handles:
        element = _merge(ctx, element, handle.element_shape, "the lists' element shapes")
    ctx.output_handles[0] = HandleData(element, dtype)
    return out


# --- reading --------------------------------------------------------------------------------------

def _read_element_shape(ctx: InferenceContext, shape_input: int) -> Shape:
    """What every element read is: the handle's element shape merged with the op's element_shape
    input (TensorFlow fails when they disagree)."""
    handle = _checked_handle(ctx)
    known = handle.element_shape if handle is not None else Shape.unknown()
    return _merge(ctx, known, ctx.shape_from_tensor(shape_input), "list element shape and element_shape")


def _get_item_shape(ctx: InferenceContext) -> Shape:
    return _read_element_shape(ctx, 2)


def _stack_shape(ctx: InferenceContext) -> Shape:
    count = ctx.attr("num_elements")
    return Shape([None if count == -1 else count]).concatenate(_read_element_shape(ctx, 1))


def _gather_shape(ctx: InferenceContext) -> Shape:
    return ctx.shape(1).concatenate(_read_element_shape(ctx, 2))


def _concat_shapes(ctx: InferenceContext) -> list[Shape]:
    """[sum of the elements' first dims] + the elements' shape without its first dim."""
    if ctx.op == "TensorListConcat":
        element = ctx.attr("element_shape")
    else:
        element = ctx.shape_from_tensor(1)
    handle = _checked_handle(ctx)
    if handle is not None:
        element = _merge(ctx, element, handle.element_shape, "element_shape and the list's element shape")
    if not has_rank(element):
        return [Shape.unknown(), Shape([None])]
    if element.rank < 1:
        ctx.fail(f"Concat requires elements to be at least vectors, the element shape is {element}")
    return [Shape([None]).concatenate(element[1:]), Shape([None])]


def _element_shape_shape(ctx: InferenceContext) -> Shape:
    # A vector of the element rank, or TensorFlow's scalar -1 for an unknown rank: unknown here.
    handle = list_handle(ctx)
    if handle is None or not has_rank(handle.element_shape):
        return Shape.unknown()
    return Shape([handle.element_shape.rank])


def _element_shape_value(ctx: InferenceContext):
    """The element shape when the handle knows all of it: the list carries the same shape (every
    op that makes a list records the element_shape its kernel stores)."""
    import numpy as np

    handle = list_handle(ctx)
    if handle is None or not handle.element_shape.fully_defined:
        return None
    return np.asarray(handle.element_shape.dims, dtype=ctx.output_dtypes[0].numpy)


# --- registrations --------------------------------------------------------------------------------

_LIST_IN = "input_handle: variant"
_LIST_OUT = "output_handle: variant"
_DTYPE = "element_dtype: type"

register("EmptyTensorList", inputs=["element_shape: shape_type", "max_num_elements: int32"],
         outputs=["handle: variant"], attrs=[_DTYPE, _SHAPE_TYPE], shape=_from_shape_input(0))
register("TensorListReserve", inputs=["element_shape: shape_type", "num_elements: int32"],
         outputs=["handle: variant"], attrs=[_DTYPE, _SHAPE_TYPE], shape=_from_shape_input(0))
register("TensorListFromTensor", inputs=["tensor: element_dtype", "element_shape: shape_type"],
         outputs=[_LIST_OUT], attrs=[_DTYPE, _SHAPE_TYPE], shape=_from_tensor_shape)
register("TensorListScatter",
         inputs=["tensor: element_dtype", "indices: int32", "element_shape: shape_type"],
         outputs=[_LIST_OUT], attrs=[_DTYPE, _SHAPE_TYPE], shape=_from_shape_input(2))
register("TensorListScatterV2",
         inputs=["tensor: element_dtype", "indices: int32", "element_shape: shape_type",
                 "num_elements: int32"],
         outputs=[_LIST_OUT], attrs=[_DTYPE, _SHAPE_TYPE], shape=_from_shape_input(2))
register("TensorListSplit",
         inputs=["tensor: element_dtype", "element_shape: shape_type", "lengths: int64"],
         outputs=[_LIST_OUT], attrs=[_DTYPE, _SHAPE_TYPE], shape=_split_shape)

register("TensorListSetItem", inputs=[_LIST_IN, "index: int32", "item: element_dtype"],
         outputs=[_LIST_OUT], attrs=[_DTYPE, "resize_if_index_out_of_bounds: bool = false"],
         shape=_set_item_shape)
register("TensorListPushBack", inputs=[_LIST_IN, "tensor: element_dtype"], outputs=[_LIST_OUT],
         attrs=[_DTYPE], shape=_push_back_shape)
register("TensorListPushBackBatch", inputs=["input_handles: variant", "tensor: element_dtype"],
         outputs=["output_handles: variant"], attrs=[_DTYPE], shape=_push_back_batch_shape)
register("TensorListPopBack", inputs=[_LIST_IN, "element_shape: int32"],
         outputs=[_LIST_OUT, "tensor: element_dtype"], attrs=[_DTYPE], shape=_pop_back_shapes)
register("TensorListResize", inputs=[_LIST_IN, "size: int32"], outputs=[_LIST_OUT],
         shape=_resize_shape)
register("TensorListScatterIntoExistingList",
         inputs=[_LIST_IN, "tensor: element_dtype", "indices: int32"], outputs=[_LIST_OUT],
         attrs=[_DTYPE], shape=_scatter_into_existing_shape)
register("TensorListConcatLists", inputs=["input_a: variant", "input_b: variant"],
         outputs=["output: variant"], attrs=[_DTYPE], shape=_concat_lists_shape)

register("TensorListGetItem", inputs=[_LIST_IN, "index: int32", "element_shape: Tshape"],
         outputs=["item: element_dtype"], attrs=[_DTYPE, "Tshape: {int32, int64} = int32"],
         shape=_get_item_shape)
register("TensorListStack", inputs=[_LIST_IN, "element_shape: int32"],
         outputs=["tensor: element_dtype"], attrs=[_DTYPE, "num_elements: int = -1"],
         shape=_stack_shape)
register("TensorListGather", inputs=[_LIST_IN, "indices: int32", "element_shape: int32"],
         outputs=["values: element_dtype"], attrs=[_DTYPE], shape=_gather_shape)
register("TensorListConcat", inputs=[_LIST_IN], outputs=["tensor: element_dtype", "lengths: int64"],
         attrs=[_DTYPE, "element_shape: shape = unknown"], shape=_concat_shapes)
register("TensorListConcatV2",
         inputs=[_LIST_IN, "element_shape: shape_type", "leading_dims: int64"],
         outputs=["tensor: element_dtype", "lengths: int64"], attrs=[_DTYPE, _SHAPE_TYPE],
         shape=_concat_shapes)
register("TensorListLength", inputs=[_LIST_IN], outputs=["length: int32"], shape=scalar)
register("TensorListElementShape", inputs=[_LIST_IN], outputs=["element_shape: shape_type"],
         attrs=[_SHAPE_TYPE], shape=_element_shape_shape, value=_element_shape_value)
