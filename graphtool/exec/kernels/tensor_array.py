"""Kernels for TensorArrayV3 and the V2 stacks, with TensorFlow's semantics and error messages.

A TensorArray or a stack lives in the step's resource container (ctx.resources) under a unique
name. Its handle output is a [2] object array (container, name), as TensorFlow's [2] string
handle; a TensorArray's `flow` is a float32 scalar that only orders the ops touching it (every op
passes flow_in through). Kernels of one step run on several threads (loop iterations run in
parallel), so each resource guards its state with its own lock.

TensorArray rules (TensorFlow's tensor_array.h):
- an index is written at most once, and never after it was read; a gradient array instead SUMS
  the writes to one index (the partial gradients of the forward array's multiple reads);
- with clear_after_read (the default) an index can be read once;
- dynamic_size arrays grow on writes past the end;
- every write must fit the element shape; with identical_element_shapes the first write fixes it;
- reading an index never written gives zeros when the element shape is fully known (a gradient
  array starts with every index its forward array wrote "written" as zeros of that shape).
"""
from __future__ import annotations

import threading

import numpy as np

from ... import dtypes
from ...shapes import Shape, ShapeError, has_rank
from ..resources import unique_name
from .registry import KernelError, check_slots, kernel

_TENSOR_ARRAYS = "_tensor_arrays"
_STACKS = "_stacks"


# --- handles ------------------------------------------------------------------------------------

def _handle(container: str, name: str) -> np.ndarray:
    """A resource handle: host metadata, a numpy object array on every device."""
    return np.array([container, name], dtype=object)


def _lookup(ctx, handle, container: str):
    """The resource a handle names in this step; TensorFlow's error if it does not exist."""
    name = str(handle[1])
    resource = ctx.resources.lookup((container, name))
    if resource is None:
        ctx.fail(f"Container {container} does not exist. (Could not find resource: {container}/{name})")
    return resource


def _host_ints(array) -> list[int]:
    """A small integer tensor (indices, lengths, a shape) as Python ints, on any device."""
    return [int(v) for v in array.reshape(-1).tolist()]


def type_name(np_dtype) -> str:
    """The dtype's name in messages (float32, int64, ...)."""
    return dtypes.from_numpy(np_dtype).name


# --- the TensorArray resource -------------------------------------------------------------------

class _Element:
    __slots__ = ("value", "shape", "written", "read", "cleared")

    def __init__(self, shape: tuple | None = None, written: bool = False):
        self.value = None        # None while nothing is stored: reading gives zeros of `shape`
        self.shape = shape
        self.written = written
        self.read = False
        self.cleared = False     # read once with clear_after_read: reading again is an error


class TensorArray:
    """One TensorArray's elements and flags. Public methods take the array's lock; `_`-methods
    expect it held. Errors are KernelErrors with TensorFlow's wording."""

    def __init__(self, name: str, dtype: np.dtype, size: int, element_shape: Shape, *,
                 identical_element_shapes: bool = False, dynamic_size: bool = False,
                 clear_after_read: bool = True, is_grad: bool = False):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.element_shape = element_shape
        self.identical_element_shapes = identical_element_shapes
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        # Gradient arrays sum multiple writes to one index and read unwritten indices as zeros.
        self.is_grad = is_grad
        self.closed = False
        self.lock = threading.Lock()
        self._elements = [_Element() for _ in range(size)]

    def _error(self, message: str) -> KernelError:
        return KernelError(f"TensorArray {self.name}: {message}")

    def _check_open(self) -> None:
        if self.closed:
            raise KernelError(f"TensorArray {self.name} has already been closed.")

    # --- queries and flags ------------------------------------------------------------------
    def size(self) -> int:
        with self.lock:
            self._check_open()
            return len(self._elements)

    def merge_element_shape(self, shape: Shape) -> None:
        """Refine the element shape with an op's element_shape attr (they must agree)."""
        with self.lock:
            try:
                self.element_shape = self.element_shape.merge(shape)
            except ShapeError:
                raise KernelError(f"Incompatible shapes during merge: {self.element_shape} vs. {shape}") from None

    def close(self) -> None:
        """Release the elements; any later use fails (the handle still finds the array)."""
        with self.lock:
            self._elements.clear()
            self.closed = True

    # --- writes -----------------------------------------------------------------------------
    def write(self, index: int, value) -> None:
        with self.lock:
            self._write(index, value)

    def scatter(self, indices: list[int], values) -> None:
        """Write values[i] to indices[i] (TensorArrayScatterV3)."""
        with self.lock:
            if not self.dynamic_size and indices and max(indices) >= len(self._elements):
                raise KernelError(f"Max scatter index must be < array size ({max(indices)} vs. "
                                  f"{len(self._elements)})")
            for index, value in zip(indices, values):
                self._write(index, value)

    def split(self, pieces: list) -> None:
        """Write pieces[i] to index i (TensorArraySplitV3): a fixed-size array must have exactly
        one element per piece, a dynamic one may grow to that many."""
        with self.lock:
            size, count = len(self._elements), len(pieces)
            if size != count and not (self.dynamic_size and size < count):
                raise KernelError(f"TensorArray's size is not equal to the size of lengths ({size} vs. "
                                  f"{count}), and the TensorArray is not marked as dynamically resizeable")
            for index, piece in enumerate(pieces):
                self._write(index, piece)

    def _write(self, index: int, value) -> None:
        self._check_open()
        size = len(self._elements)
        if index < 0 or (not self.dynamic_size and index >= size):
            raise self._error(f"Tried to write to index {index} but array is not resizeable and size is: {size}")
        self._grow(index + 1)
        shape = Shape(value.shape)
        if not self.element_shape.is_compatible_with(shape):
            raise self._error(f"Could not write to TensorArray index {index} because the value shape is "
                              f"{shape} which is incompatible with the TensorArray's inferred element "
                              f"shape: {self.element_shape} (consider setting infer_shape=False).")
        if self.identical_element_shapes and not self.element_shape.fully_defined:
            self.element_shape = shape
        element = self._elements[index]
        if element.read:
            raise self._error(f"Could not write to TensorArray index {index} because it has already been read.")
        if not element.written:
            element.value, element.shape, element.written = value, tuple(value.shape), True
        elif self.is_grad:
            self._aggregate(element, index, value)
        else:
            raise self._error(f"Could not write to TensorArray index {index} because it has already been "
                              f"written to.")

    def _aggregate(self, element: _Element, index: int, value) -> None:
        if tuple(value.shape) != element.shape:
            raise self._error(f"Could not aggregate to TensorArray index {index} because the existing shape "
                              f"is {Shape(element.shape)} but the new input shape is {Shape(value.shape)}.")
        # A new array: the stored value may be an input another kernel still reads.
        stored = element.value
        element.value = value if stored is None or stored.size == 0 else stored + value

    def _grow(self, size: int) -> None:
        missing = size - len(self._elements)
        if missing > 0:
            check_slots(size, "a TensorArray")
            self._elements.extend(_Element() for _ in range(missing))

    # --- reads ------------------------------------------------------------------------------
    def read(self, xp, index: int):
        with self.lock:
            return self._read(xp, index)

    def read_many(self, xp, indices: list[int]) -> list:
        with self.lock:
            return [self._read(xp, index) for index in indices]

    def read_all(self, xp) -> list:
        with self.lock:
            self._check_open()
            return [self._read(xp, index) for index in range(len(self._elements))]

    def _read(self, xp, index: int):
        self._check_open()
        size = len(self._elements)
        if index < 0 or (not self.is_grad and index >= size):
            raise KernelError(f"Tried to read from index {index} but array size is: {size}")
        if index >= size or not self._elements[index].written:
            self._mark_zeros(index)
        element = self._elements[index]
        if element.cleared:
            raise self._error(f"Could not read index {index} twice because it was cleared after a previous "
                              f"read (perhaps try setting clear_after_read = false?).")
        if element.value is None:
            element.value = xp.zeros(element.shape, dtype=self.dtype)
        value = element.value
        if self.clear_after_read:
            element.value, element.cleared = None, True
        element.read = True
        return value

    def _mark_zeros(self, index: int) -> None:
        """An unwritten index (or, for a gradient array, one past the end) reads as zeros of the
        element shape, which must then be fully known."""
        if not self.element_shape.fully_defined:
            raise self._error(
                f"Could not read from TensorArray index {index}.  Furthermore, the element shape is not "
                f"fully defined: {self.element_shape}.  It is possible you are working with a resizeable "
                f"TensorArray and stop_gradients is not allowing the gradients to be written.  If you set "
                f"the full element_shape property on the forward TensorArray, the proper all-zeros tensor "
                f"will be returned instead of incurring this error.")
        size = len(self._elements)
        zeros: list[_Element]
        if index < size:
            zeros = [self._elements[index]]
        else:   # a gradient array read past its end grows, as TensorFlow's does
            self._grow(index + 1)
            zeros = self._elements[size:]
        for element in zeros:
            element.shape, element.written = tuple(self.element_shape), True

    # --- gradients --------------------------------------------------------------------------
    def gradient_array(self, name: str, shape_to_prepend: tuple[int, ...]) -> "TensorArray":
        """A new gradient array for this one: same size, no growth, writes aggregate, and every
        index this array wrote starts as zeros of its shape (with shape_to_prepend in front)."""
        with self.lock:
            self._check_open()
            self.dynamic_size = False   # once gradients exist, the forward array stops growing
            forward_shape = self.element_shape
            element_shape = (Shape(shape_to_prepend).concatenate(forward_shape) if has_rank(forward_shape)
                             else Shape.unknown())
            grad = TensorArray(name, self.dtype, len(self._elements), element_shape,
                               identical_element_shapes=self.identical_element_shapes, is_grad=True)
            for mine, theirs in zip(self._elements, grad._elements):
                if mine.written:
                    assert mine.shape is not None   # a written element has its shape
                    theirs.shape, theirs.written = tuple(shape_to_prepend) + mine.shape, True
            return grad


def _tensor_array(ctx, handle, dtype=None) -> TensorArray:
    """The array a handle names; with `dtype`, the op's dtype attr must be the array's."""
    array = _lookup(ctx, handle, _TENSOR_ARRAYS)
    if dtype is not None and dtype.numpy != array.dtype:
        ctx.fail(f"TensorArray dtype is {type_name(array.dtype)} but Op requested dtype {dtype.name}.")
    return array


def _check_write_dtype(ctx, array: TensorArray, value) -> None:
    if value.dtype != array.dtype:
        ctx.fail(f"TensorArray dtype is {type_name(array.dtype)} but Op is trying to write dtype "
                 f"{type_name(value.dtype)}.")


# --- TensorArray kernels ------------------------------------------------------------------------

@kernel("TensorArrayV3")
def tensor_array_v3(ctx, size, *, dtype, element_shape, dynamic_size, clear_after_read,
                    identical_element_shapes, tensor_array_name):
    count = int(size)
    if count < 0:
        ctx.fail("Size should be >= 0.")
    ctx.check_slots(count, "a TensorArray")
    name = unique_name(tensor_array_name or ctx.node_name)
    array = TensorArray(name, dtype.numpy, count, element_shape, dynamic_size=dynamic_size,
                        clear_after_read=clear_after_read, identical_element_shapes=identical_element_shapes)
    ctx.resources.lookup_or_create((_TENSOR_ARRAYS, name), lambda: array)
    return _handle(_TENSOR_ARRAYS, name), ctx.xp.zeros((), dtype=ctx.out_dtype(1))


@kernel("TensorArrayWriteV3")
def tensor_array_write(ctx, handle, index, value, flow_in):
    array = _tensor_array(ctx, handle)
    _check_write_dtype(ctx, array, value)
    array.write(int(index), value)
    return flow_in


@kernel("TensorArrayReadV3")
def tensor_array_read(ctx, handle, index, flow_in, *, dtype):
    return _tensor_array(ctx, handle, dtype).read(ctx.xp, int(index))


@kernel("TensorArrayGatherV3")
def tensor_array_gather(ctx, handle, indices, flow_in, *, dtype, element_shape):
    array = _tensor_array(ctx, handle, dtype)
    if indices.ndim != 1:
        ctx.fail(f"Expected indices to be a vector, but received shape: {Shape(indices.shape)}")
    array.merge_element_shape(element_shape)
    if indices.shape[0] == 0:
        # Like TensorFlow, only the op's own element_shape attr says what [0] + element_shape is.
        if not element_shape.fully_defined:
            raise KernelError(f"TensorArray has size zero, but element shape {element_shape} is not fully "
                              f"defined. Currently only static shapes are supported when packing zero-size "
                              f"TensorArrays.")
        return ctx.xp.zeros((0, *element_shape.dims), dtype=array.dtype)
    values = array.read_many(ctx.xp, _host_ints(indices))
    _check_identical_shapes(ctx, values, element_shape, lambda shape: shape, "")
    return ctx.xp.stack(values)


@kernel("TensorArrayConcatV3")
def tensor_array_concat(ctx, handle, flow_in, *, dtype, element_shape_except0):
    xp = ctx.xp
    array = _tensor_array(ctx, handle, dtype)
    values = array.read_all(xp)
    if not values:
        if not element_shape_except0.fully_defined:
            raise KernelError(f"TensorArray has size zero, but element_shape_except0 {element_shape_except0} "
                              f"is not fully defined. Currently only static shapes are supported when "
                              f"concatenating zero-size TensorArrays.")
        return xp.zeros((0, *element_shape_except0.dims), dtype=array.dtype), xp.zeros((0,), dtype=np.int64)
    for i, value in enumerate(values):
        if value.ndim == 0:
            ctx.fail(f"Concat saw a scalar shape at index {i} but requires at least vectors.  Did you mean "
                     f"to call pack?")
    _check_identical_shapes(ctx, values, element_shape_except0, lambda shape: shape[1:],
                            " (excepting dimension 0)")
    lengths = xp.asarray([value.shape[0] for value in values], dtype=np.int64)
    return xp.concatenate(values), lengths


def _check_identical_shapes(ctx, values, expected: Shape, part, excepting: str) -> None:
    """Gather and concat: `part` of every value's shape equals the first's, which fits the op's
    element shape attr (`expected`)."""
    first = Shape(part(values[0].shape))
    if not expected.is_compatible_with(first):
        if excepting:
            ctx.fail(f"TensorArray was passed element_shape_except0 {expected} but index 0 has{excepting} "
                     f"shape: {first} which does not match.")
        ctx.fail(f"TensorArray was passed element_shape {expected} which does not match the Tensor at "
                 f"index 0: {first}")
    for i, value in enumerate(values[1:], start=1):
        shape = Shape(part(value.shape))
        if shape != first:
            ctx.fail(f"TensorArray has inconsistent shapes.  Index 0 has{excepting} shape: {first} but index "
                     f"{i} has{excepting} shape: {shape}")


@kernel("TensorArrayScatterV3")
def tensor_array_scatter(ctx, handle, indices, value, flow_in):
    array = _tensor_array(ctx, handle)
    _check_write_dtype(ctx, array, value)
    if indices.ndim != 1:
        ctx.fail(f"Expected indices to be a vector, but received shape: {Shape(indices.shape)}")
    if value.ndim == 0:
        ctx.fail(f"Expected value to be at least a vector, but received shape: {Shape(value.shape)}")
    positions = _host_ints(indices)
    if len(positions) != value.shape[0]:
        ctx.fail(f"Expected len(indices) == values.shape[0], but saw: {len(positions)} vs. {value.shape[0]}")
    array.scatter(positions, [value[i] for i in range(len(positions))])
    return flow_in


@kernel("TensorArraySplitV3")
def tensor_array_split(ctx, handle, value, lengths, flow_in):
    array = _tensor_array(ctx, handle)
    _check_write_dtype(ctx, array, value)
    if lengths.ndim != 1:
        ctx.fail(f"Expected lengths to be a vector, received shape: {Shape(lengths.shape)}")
    if value.ndim == 0:
        ctx.fail(f"Expected value to be at least a vector, but received shape: {Shape(value.shape)}")
    sizes = _host_ints(lengths)
    if any(size < 0 for size in sizes) or sum(sizes) != value.shape[0]:
        ctx.fail(f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is {sum(sizes)} "
                 f"and value's shape is: {Shape(value.shape)}")
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
    array.split([value[start:end] for start, end in zip(offsets[:-1], offsets[1:])])
    return flow_in


@kernel("TensorArraySizeV3")
def tensor_array_size(ctx, handle, flow_in):
    return ctx.xp.asarray(_tensor_array(ctx, handle).size(), dtype=np.int32)


@kernel("TensorArrayCloseV3")
def tensor_array_close(ctx, handle):
    _tensor_array(ctx, handle).close()
    return ()


@kernel("TensorArrayGradV3", "TensorArrayGradWithShape")
def tensor_array_grad(ctx, handle, flow_in, shape_to_prepend=None, *, source):
    """The gradient array named `source` of the forward array: created by the first op that asks,
    shared by every later one (several backward ops write into the same gradient array)."""
    forward = _tensor_array(ctx, handle)
    prepend = () if shape_to_prepend is None else tuple(_host_ints(shape_to_prepend))
    name = f"{forward.name}@{source}"
    ctx.resources.lookup_or_create((_TENSOR_ARRAYS, name), lambda: forward.gradient_array(name, prepend))
    return _handle(_TENSOR_ARRAYS, name), flow_in


# --- stacks -------------------------------------------------------------------------------------

class Stack:
    """A LIFO of tensors (while-loop gradients push forward values and pop them backwards)."""

    def __init__(self, name: str, dtype: np.dtype, max_size: int):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.max_size = max_size      # negative: unbounded
        self.lock = threading.Lock()
        self._elements: list = []

    def push(self, value, swap_memory: bool = False) -> None:
        # swap_memory matters only to a device stack that can move values to host memory
        # (kernels/gpu_stack.py); host memory is where this one keeps them anyway.
        with self.lock:
            if 0 <= self.max_size <= len(self._elements):
                raise KernelError(f"Stack[{self.name}] overflowed its max_size ({self.max_size})")
            self._elements.append(value)

    def pop(self):
        with self.lock:
            if not self._elements:
                raise KernelError(f"Stack[{self.name}] is empty when calling Pop().")
            return self._elements.pop()

    def close(self) -> None:
        with self.lock:
            self._elements.clear()


@kernel("StackV2")
def stack_v2(ctx, max_size, *, elem_type, stack_name):
    name = unique_name(stack_name or ctx.node_name)
    # A device may supply its own stack (a GPU's swaps saved values to host memory).
    make_stack = getattr(ctx.device, "make_stack", Stack)
    stack = make_stack(name, elem_type.numpy, int(max_size))
    ctx.resources.lookup_or_create((_STACKS, name), lambda: stack)
    return _handle(_STACKS, name)


@kernel("StackPushV2")
def stack_push(ctx, handle, elem, *, swap_memory):
    # swap_memory lets a GPU stack move the value to host memory; on the CPU it is a no-op.
    _lookup(ctx, handle, _STACKS).push(elem, swap_memory)
    return elem


@kernel("StackPopV2")
def stack_pop(ctx, handle, *, elem_type):
    stack = _lookup(ctx, handle, _STACKS)
    value = stack.pop()
    if value.dtype != elem_type.numpy:
        ctx.fail(f"Stack[{stack.name}] popped a {type_name(value.dtype)} element but the op expects "
                 f"{elem_type.name}")
    return value


@kernel("StackCloseV2")
def stack_close(ctx, handle):
    _lookup(ctx, handle, _STACKS).close()
    return ()
