"""Kernels of the TensorList ops, with TensorFlow's checks and error messages (list_kernels.*).

A list is a scalar variant tensor: a 0-d object array holding a TensorList (tensor_list_value.py),
kept in host memory on every device while its elements live on the kernel's device (`xp`). Kernels
never change an input list; they derive a new version from it.

Elements never set read as zeros of the element shape, which must then be fully known: the list's
element shape merged with the op's element_shape input and, for GetItem/Stack/Gather, with the
shapes of the elements that are set (TensorFlow's rules, so a Keras loop that leaves no element
unset and one that does agree with TensorFlow on which shapes they need).
"""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...shapes import Shape, ShapeError, has_rank
from .registry import CPU, KernelContext, kernel
from .tensor_list_value import TensorList, local, variant_scalar

# --- helpers -----------------------------------------------------------------------------------


def _host_ints(array) -> list[int]:
    return [int(v) for v in (array.get() if hasattr(array, "get") else np.asarray(array)).reshape(-1).tolist()]


def _scalar_int(ctx, array, what: str) -> int:
    if array.ndim != 0:
        ctx.fail(f"{what} expected to be a scalar but got shape: {Shape(array.shape)}")
    return _host_ints(array)[0]


def shape_from_tensor(ctx, tensor) -> Shape:
    """A shape tensor as a partial shape: -1 dims are unknown, the scalar -1 is unknown rank."""
    if tensor.ndim == 0:
        if _host_ints(tensor)[0] == -1:
            return Shape.unknown()
        ctx.fail("The only valid scalar shape tensor is the fully unknown shape specified as -1.")
    if tensor.ndim != 1:
        ctx.fail(f"Shape must be a vector, got shape {Shape(tensor.shape)}")
    dims = _host_ints(tensor)
    for dim in dims:
        if dim < -1:
            ctx.fail(f"Dimension {dim} must be >= -1")
    return Shape(dims)


def _merge(ctx: KernelContext, a: Shape, b: Shape) -> Shape:
    try:
        return a.merge(b)
    except ShapeError:
        ctx.fail(f"PartialTensorShape: Incompatible shapes during merge: {a} vs. {b}")


def _input_list(ctx, handle) -> TensorList:
    if handle.ndim != 0:
        ctx.fail(f"Input list must be a scalar saw: {Shape(handle.shape)}")
    value = handle[()]
    if not isinstance(value, TensorList):
        ctx.fail(f"Input handle is not a list. Saw: '{type(value).__name__}'")
    return value


def _typed_list(ctx, handle, element_dtype) -> TensorList:
    """Input list whose element dtype must be the op's element_dtype."""
    tensor_list = _input_list(ctx, handle)
    if tensor_list.element_dtype != element_dtype:
        ctx.fail(f"Invalid data types; op elements {element_dtype.name} but list elements "
                 f"{tensor_list.element_dtype.name}")
    return tensor_list


def _dtype_of(array):
    return dtypes.from_numpy(array.dtype)


def _rows(value) -> list:
    """The rows of a tensor (views, not copies: kernels never write into their inputs)."""
    return [value[i, ...] for i in range(value.shape[0])]   # [i, ...]: a 0-d array, not a scalar


def _require_vector_or_higher(ctx, value, what: str = "Tensor") -> None:
    if value.ndim < 1:
        ctx.fail(f"{what} must be at least a vector, but saw shape: {Shape(value.shape)}")


def _read_shape(ctx, tensor_list: TensorList, shape_tensor, elements) -> Shape:
    """The shape an unset element reads as: the element_shape input merged with the list's and,
    when still partial, with every set element among `elements`."""
    shape = _merge(ctx, shape_from_tensor(ctx, shape_tensor), tensor_list.element_shape)
    if not tensor_list.element_shape.fully_defined:
        for element in elements:
            if element is not None:
                shape = _merge(ctx, shape, Shape(element.shape))
    return shape


def _filled(ctx, elements, shape: Shape, dtype, message: str) -> list:
    """`elements` with every unset one replaced by zeros of `shape` (which must be fully known)."""
    if all(element is not None for element in elements):
        return elements
    if not shape.fully_defined:
        ctx.fail(f"{message}: {shape}")
    zeros = ctx.xp.zeros(shape.dims, dtype=dtype.numpy)
    return [zeros if element is None else element for element in elements]


def _stacked(ctx, elements, shape: Shape, dtype):
    if not elements:
        return ctx.xp.zeros((0, *shape), dtype=dtype.numpy)
    return ctx.xp.stack(elements)


# --- creating lists ------------------------------------------------------------------------------

@kernel("EmptyTensorList")
def empty_tensor_list(ctx, element_shape, max_num_elements, *, element_dtype):
    maximum = _scalar_int(ctx, max_num_elements, "max_num_elements")
    return variant_scalar(TensorList(element_dtype, shape_from_tensor(ctx, element_shape), [], maximum))


@kernel("TensorListReserve")
def tensor_list_reserve(ctx, element_shape, num_elements, *, element_dtype):
    shape = shape_from_tensor(ctx, element_shape)
    count = _scalar_int(ctx, num_elements, "num_elements")
    if count < 0:
        ctx.fail(f"The num_elements to reserve must be a non negative number, but got {count}")
    ctx.check_slots(count, "a TensorList")
    return variant_scalar(TensorList(element_dtype, shape, [None] * count))


@kernel("TensorListFromTensor")
def tensor_list_from_tensor(ctx, tensor, element_shape):
    shape = shape_from_tensor(ctx, element_shape)
    _require_vector_or_higher(ctx, tensor)
    if not shape.is_compatible_with(Shape(tensor.shape[1:])):
        ctx.fail(f"Specified a list with shape {shape} from a tensor with shape {Shape(tensor.shape[1:])}")
    return variant_scalar(TensorList(_dtype_of(tensor), shape, _rows(tensor)))


@kernel("TensorListScatter", "TensorListScatterV2")
def tensor_list_scatter(ctx, tensor, indices, element_shape, num_elements=None):
    shape = shape_from_tensor(ctx, element_shape)
    count = -1 if num_elements is None else _host_ints(num_elements)[0]
    if count < -1:
        ctx.fail(f"TensorListScatter expects num_elements >= -1, found: {count}")
    _require_vector_or_higher(ctx, tensor)
    if not shape.is_compatible_with(Shape(tensor.shape[1:])):
        ctx.fail(f"Specified a list with shape {shape} from a tensor with shape {Shape(tensor.shape[1:])}")
    positions = _host_ints(indices)
    if len(positions) != tensor.shape[0]:
        ctx.fail(f"Invalid number of rows in input tensor. Expected: {len(positions)} Actual: {tensor.shape[0]}")
    for i in positions:
        if i < 0:
            ctx.fail("Indices in TensorListScatter must all be non-negative.")
        if count != -1 and i >= count:
            ctx.fail(f"TensorListScatter: Trying to scatter at index {i} in list with size {count}")
    ctx.check_slots(max(max(positions, default=-1) + 1, count), "a TensorList")
    elements = [None] * max(max(positions, default=-1) + 1, count)
    for row, i in enumerate(positions):
        elements[i] = tensor[row, ...]
    return variant_scalar(TensorList(_dtype_of(tensor), shape, elements))


@kernel("TensorListSplit")
def tensor_list_split(ctx, tensor, element_shape, lengths):
    shape = shape_from_tensor(ctx, element_shape)
    if has_rank(shape) and shape.rank < 1:
        ctx.fail(f"TensorListSplit requires element_shape to be at least of rank 1, but saw: {shape}")
    _require_vector_or_higher(ctx, tensor)
    rest = Shape(tensor.shape[1:])
    if has_rank(shape) and not Shape(shape.dims[1:]).is_compatible_with(rest):
        ctx.fail(f"tensor shape {Shape(tensor.shape)} is not compatible with element_shape {shape}")
    if lengths.ndim != 1:
        ctx.fail(f"Expected lengths to be a vector, received shape: {Shape(lengths.shape)}")
    elements, start, total = [], 0, tensor.shape[0]
    for length in _host_ints(lengths):
        if length < 0:
            ctx.fail(f"Invalid value in lengths: {length}")
        end = start + length
        if end > total:
            ctx.fail(f"Attempting to slice [{start}, {end}] from tensor with length {total}")
        elements.append(tensor[start:end])
        start = end
    if start != total:
        ctx.fail(f"Unused values in tensor. Length of tensor: {total} Values used: {start}")
    return variant_scalar(TensorList(_dtype_of(tensor), shape, elements))


# --- deriving lists ------------------------------------------------------------------------------

@kernel("TensorListSetItem")
def tensor_list_set_item(ctx, handle, index, item, *, element_dtype, resize_if_index_out_of_bounds):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    position = _host_ints(index)[0]
    if resize_if_index_out_of_bounds and position >= tensor_list.length:
        ctx.check_slots(position + 1, "a TensorList")
        tensor_list = tensor_list.resized(position + 1)
    if not 0 <= position < tensor_list.length:
        ctx.fail(f"Trying to modify element {position} in a list with {tensor_list.length} elements.")
    if not tensor_list.element_shape.is_compatible_with(Shape(item.shape)):
        ctx.fail(f"Tried to set a tensor with incompatible shape at a list index. Item element shape: "
                 f"{Shape(item.shape)} list shape: {tensor_list.element_shape}")
    return variant_scalar(tensor_list.set(position, item))


def _check_push(ctx, tensor_list: TensorList, tensor, element_dtype, where: str = "") -> None:
    if not tensor_list.element_shape.is_compatible_with(Shape(tensor.shape)):
        ctx.fail(f"Tried to append a tensor with incompatible shape to a list{where}. Op element shape: "
                 f"{Shape(tensor.shape)} list shape: {tensor_list.element_shape}")
    if tensor_list.element_dtype != element_dtype:
        ctx.fail(f"Invalid data types; op elements {element_dtype.name} but list elements "
                 f"{tensor_list.element_dtype.name}")
    if tensor_list.max_num_elements != -1 and tensor_list.length >= tensor_list.max_num_elements:
        ctx.fail(f"Tried to push item into a full list list size: {tensor_list.length} max_num_elements: "
                 f"{tensor_list.max_num_elements}")


@kernel("TensorListPushBack")
def tensor_list_push_back(ctx, handle, tensor, *, element_dtype):
    if _dtype_of(tensor) != element_dtype:
        ctx.fail(f"Invalid data types; list elements {element_dtype.name} but tried to append "
                 f"{_dtype_of(tensor).name}")
    tensor_list = _input_list(ctx, handle)
    _check_push(ctx, tensor_list, tensor, element_dtype)
    return variant_scalar(tensor_list.push(tensor))


# CPU only: a batch of lists is a vector of variants, which no GPU op here makes (Pack/Unpack of
# variants are host work); a GPU placement runs it on the host CPU.
@kernel("TensorListPushBackBatch", devices=(CPU,))
def tensor_list_push_back_batch(ctx, handles, tensor, *, element_dtype):
    if _dtype_of(tensor) != element_dtype:
        ctx.fail(f"Invalid data types; list elements {element_dtype.name} but tried to append "
                 f"{_dtype_of(tensor).name}")
    _require_vector_or_higher(ctx, tensor, "Expected tensor to be")
    if handles.ndim != 1:
        ctx.fail(f"Expected input_handles to be a vector, but saw shape: {Shape(handles.shape)}")
    if tensor.shape[0] != handles.shape[0]:
        ctx.fail(f"Expected tensor.shape[0] == input_handles.size, but saw {tensor.shape[0]} vs. "
                 f"{handles.shape[0]}")
    result = np.empty(handles.shape, dtype=object)
    for b in range(handles.shape[0]):
        tensor_list = handles[b]
        if not isinstance(tensor_list, TensorList):
            ctx.fail(f"Input handle at index {b} is not a list. Saw: '{type(tensor_list).__name__}'")
        _check_push(ctx, tensor_list, tensor[b, ...], element_dtype, f" at index {b}")
        result[b] = tensor_list.push(tensor[b, ...])
    return result


@kernel("TensorListPopBack")
def tensor_list_pop_back(ctx, handle, element_shape, *, element_dtype):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    if tensor_list.length == 0:
        ctx.fail("Trying to pop from an empty list.")
    last = local(ctx, tensor_list.get(tensor_list.length - 1))
    if last is None:
        shape = _merge(ctx, shape_from_tensor(ctx, element_shape), tensor_list.element_shape)
        if not shape.fully_defined:
            ctx.fail(f"Trying to read an uninitialized tensor but element_shape is not fully defined.{shape}")
        last = ctx.xp.zeros(shape.dims, dtype=element_dtype.numpy)
    return variant_scalar(tensor_list.popped()), last


@kernel("TensorListResize")
def tensor_list_resize(ctx, handle, size):
    tensor_list = _input_list(ctx, handle)
    count = _host_ints(size)[0]
    if count < 0:
        ctx.fail(f"TensorListSlice expects size to be non-negative. Got: {count}")
    ctx.check_slots(count, "a TensorList")
    return variant_scalar(tensor_list.resized(count))


@kernel("TensorListScatterIntoExistingList")
def tensor_list_scatter_into_existing_list(ctx, handle, tensor, indices):
    tensor_list = _input_list(ctx, handle)
    if _dtype_of(tensor) != tensor_list.element_dtype:
        ctx.fail(f"Invalid data types; input tensor type: {_dtype_of(tensor).name} list element_type: "
                 f"{tensor_list.element_dtype.name}")
    _require_vector_or_higher(ctx, tensor)
    if indices.ndim != 1:
        ctx.fail(f"Expected indices to be a vector, but received shape: {Shape(indices.shape)}")
    positions = _host_ints(indices)
    if len(positions) != tensor.shape[0]:
        ctx.fail(f"Expected len(indices) == tensor.shape[0], but saw: {len(positions)} vs. {tensor.shape[0]}")
    if any(i < 0 for i in positions):   # TensorFlow does not check (and crashes); we refuse
        ctx.fail("Indices in TensorListScatterIntoExistingList must all be non-negative.")
    grown = max(max(positions, default=-1) + 1, tensor_list.length)
    ctx.check_slots(grown, "a TensorList")
    elements = tensor_list.elements() + [None] * (grown - tensor_list.length)
    for row, i in enumerate(positions):
        elements[i] = tensor[row, ...]
    return variant_scalar(tensor_list.copy_with(elements))


@kernel("TensorListConcatLists")
def tensor_list_concat_lists(ctx, input_a, input_b, *, element_dtype):
    if input_a.shape != input_b.shape:
        ctx.fail(f"Incompatible input TensorList tensor shapes: {Shape(input_a.shape)} vs. {Shape(input_b.shape)}")
    result = np.empty(input_a.shape, dtype=object)
    for b in np.ndindex(*input_a.shape):
        a_list, b_list = input_a[b], input_b[b]
        at = int(np.ravel_multi_index(b, input_a.shape)) if b else 0
        for name, value in (("input_a", a_list), ("input_b", b_list)):
            if not isinstance(value, TensorList):
                ctx.fail(f"{name} is not a TensorList at index {at}.  Saw: '{type(value).__name__}'")
            if value.element_dtype != element_dtype:
                ctx.fail(f"{name}[{at}].dtype != element_dtype.  Saw: {value.element_dtype.name} vs. "
                         f"{element_dtype.name}")
        if a_list.element_shape != b_list.element_shape:
            ctx.fail(f"input_a and input_b TensorList element shapes are not identical at index {at}.  "
                     f"Saw {a_list.element_shape} vs. {b_list.element_shape}")
        result[b] = a_list.replaced(a_list.length, a_list.length, b_list.elements())
    return result


# --- reading -------------------------------------------------------------------------------------

@kernel("TensorListGetItem")
def tensor_list_get_item(ctx, handle, index, element_shape, *, element_dtype):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    position = _host_ints(index)[0]
    if not 0 <= position < tensor_list.length:
        ctx.fail(f"Trying to access element {position} in a list with {tensor_list.length} elements.")
    item = local(ctx, tensor_list.get(position))
    if item is not None:
        return item
    # Only when the op's and the list's shapes together leave it partial do the set elements say
    # what an unset one is (TensorFlow's GetItem; Stack and Gather look at them whenever the list's
    # own shape is partial).
    shape = _merge(ctx, shape_from_tensor(ctx, element_shape), tensor_list.element_shape)
    if not shape.fully_defined:
        shape = _read_shape(ctx, tensor_list, element_shape, tensor_list.elements())
    if not shape.fully_defined:
        ctx.fail(f"Trying to read an uninitialized tensor but element_shape is not fully defined: {shape} "
                 f"and no list element is set.")
    return ctx.xp.zeros(shape.dims, dtype=element_dtype.numpy)


@kernel("TensorListStack")
def tensor_list_stack(ctx, handle, element_shape, *, element_dtype, num_elements):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    if num_elements != -1 and tensor_list.length != num_elements:
        ctx.fail(f"Operation expected a list with {num_elements} elements but got a list with "
                 f"{tensor_list.length} elements.")
    elements = [local(ctx, e) for e in tensor_list.elements()]
    shape = _read_shape(ctx, tensor_list, element_shape, elements)
    if not elements and not shape.fully_defined:
        ctx.fail(f"Tried to stack elements of an empty list with non-fully-defined element_shape: {shape}")
    elements = _filled(ctx, elements, shape, element_dtype,
                       "Tried to stack list which only contains uninitialized tensors and has a "
                       "non-fully-defined element_shape")
    return _stacked(ctx, elements, shape, element_dtype)


@kernel("TensorListGather")
def tensor_list_gather(ctx, handle, indices, element_shape, *, element_dtype):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    positions = _host_ints(indices)
    for i in positions:
        if not 0 <= i < tensor_list.length:
            ctx.fail(f"Index {i} out o range; list only has {tensor_list.length} elements.")
    every = tensor_list.elements()
    elements = [local(ctx, every[i]) for i in positions]
    shape = _read_shape(ctx, tensor_list, element_shape, elements)
    if not positions and not shape.fully_defined:
        ctx.fail(f"Tried to gather 0-elements from a list with non-fully-defined shape: {shape}")
    elements = _filled(ctx, elements, shape, element_dtype,
                       "Tried to gather uninitialized tensors from a list with non-fully-defined "
                       "element_shape")
    result = _stacked(ctx, elements, shape, element_dtype)
    return result.reshape((*indices.shape, *result.shape[1:]))


@kernel("TensorListConcat")
def tensor_list_concat(ctx, handle, *, element_dtype, element_shape):
    rest = Shape(element_shape.dims[1:]) if has_rank(element_shape) else Shape.unknown()
    return _concat(ctx, _typed_list(ctx, handle, element_dtype), element_dtype, rest, None, None)


@kernel("TensorListConcatV2")
def tensor_list_concat_v2(ctx, handle, element_shape, leading_dims, *, element_dtype):
    tensor_list = _typed_list(ctx, handle, element_dtype)
    shape = _merge(ctx, shape_from_tensor(ctx, element_shape), tensor_list.element_shape)
    if has_rank(shape) and shape.rank < 1:
        ctx.fail("Concat requires elements to be at least vectors, found scalars instead.")
    if not has_rank(shape):
        return _concat(ctx, tensor_list, element_dtype, Shape.unknown(), None, leading_dims)
    return _concat(ctx, tensor_list, element_dtype, Shape(shape.dims[1:]), shape[0], leading_dims)


def _concat(ctx, tensor_list: TensorList, element_dtype, rest: Shape, first_dim, leading_dims):
    """The elements joined along their first dim; unset ones count as zeros `first_dim` (or
    leading_dims[i]) long. TensorListConcat (no leading_dims) cannot size unset elements."""
    elements = [local(ctx, e) for e in tensor_list.elements()]
    if not elements and not rest.fully_defined:
        ctx.fail(f"All except the first dimension must be fully defined when concating an empty tensor "
                 f"list. element_shape: {rest}")
    if not tensor_list.element_shape.fully_defined:
        rest, first_dim = _check_concat_elements(ctx, elements, rest, first_dim)
    if not rest.fully_defined:
        ctx.fail(f"Trying to concat list with only uninitialized tensors but element_shape_except_first_dim "
                 f"is not fully defined: {rest}")
    leading = [] if leading_dims is None else _host_ints(leading_dims)
    lengths = []
    for i, element in enumerate(elements):
        if element is not None:
            lengths.append(element.shape[0])
        elif i >= len(leading) and first_dim is not None:
            lengths.append(first_dim)
        elif leading_dims is None:
            ctx.fail("Concating lists with uninitialized tensors is not supported in this version of "
                     "TensorListConcat. Consider updating your GraphDef to run the newer version.")
        elif i >= len(leading):
            ctx.fail(f"List contains uninitialized tensor at index {i} but leading_dims has only "
                     f"{len(leading)} elements.")
        else:
            lengths.append(leading[i])
    xp = ctx.xp
    pieces = [xp.zeros((n, *rest), dtype=element_dtype.numpy) if e is None else e
              for e, n in zip(elements, lengths)]
    value = xp.concatenate(pieces) if pieces else xp.zeros((0, *rest), dtype=element_dtype.numpy)
    return value, xp.asarray(lengths, dtype=np.int64).reshape(-1)


def _check_concat_elements(ctx, elements, rest: Shape, first_dim):
    """TensorFlow's checks of a concat over a list whose element shape is partial: every set
    element is at least a vector fitting `rest` after its first dim, and matches a known
    first_dim; an unknown first_dim becomes the set elements' common first dim, if they share one."""
    inferred, checking = first_dim, first_dim is None
    for i, element in enumerate(elements):
        if element is None:
            continue
        if element.ndim < 1:
            ctx.fail(f"Concat saw a scalar shape at index {i} but requires at least vectors.")
        rest = _merge(ctx, rest, Shape(element.shape[1:]))
        if first_dim is not None and first_dim != element.shape[0]:
            ctx.fail(f"First entry of element_shape input does not match the first dim of list element at "
                     f"index: {i} Expected: {first_dim} Actual: {element.shape[0]}")
        if checking:
            if inferred is None:
                inferred = element.shape[0]
            elif inferred != element.shape[0]:
                inferred, checking = None, False
    return rest, inferred


@kernel("TensorListLength")
def tensor_list_length(ctx, handle):
    return ctx.xp.asarray(_input_list(ctx, handle).length, dtype=np.int32)


@kernel("TensorListElementShape")
def tensor_list_element_shape(ctx, handle, *, shape_type):
    shape = _input_list(ctx, handle).element_shape
    if not has_rank(shape):
        return ctx.xp.asarray(-1, dtype=shape_type.numpy)
    return ctx.xp.asarray([-1 if d is None else d for d in shape.dims], dtype=shape_type.numpy).reshape(-1)
