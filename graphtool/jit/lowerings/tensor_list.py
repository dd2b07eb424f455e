"""Lowerings of TensorList ops: inside a compiled program a list of n elements is one array of shape
[n, *element_shape], so a loop that writes one element per iteration carries an array
(lax.dynamic_update_index_in_dim) and TensorListStack is free.

Only lists whose length is known when compiling (TensorListReserve's num_elements, a tensor's
leading dim) are arrays; a list reserved with an unknown element shape (TensorFlow's -1 dims, the
batch of a Keras RNN) is a PendingList until its first element is written (see control_flow.py
for lists carried by loops). Lists that grow (PushBack, a SetItem that may resize) stay in the interpreter, and so does a
cluster that scatters past a list's end.

TensorListElementShape is not lowered: it answers with the list's declared (partial) element
shape, which an array does not keep; the interpreter answers it from the TensorList a cluster
passes out (declared shape from shape inference, cluster_op.py).

XLA clamps an index out of range where TensorFlow fails the step; graphs that index inside their
list's length (every loop TensorFlow's own tf.while_loop/TensorArray code builds) agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .registry import lowers


@dataclass(frozen=True)
class PendingList:
    """A reserved list whose element shape is not known yet."""

    length: int
    dtype: np.dtype
    element_shape: tuple | None   # dims with None for unknown ones; None: unknown rank

    def fits(self, shape: tuple) -> bool:
        if self.element_shape is None:
            return True
        return len(shape) == len(self.element_shape) and \
            all(want is None or want == got for want, got in zip(self.element_shape, shape))


def _element_shape(value) -> tuple | None:
    array = np.asarray(value)
    if array.ndim == 0:   # -1: unknown rank
        return None
    return tuple(None if int(d) < 0 else int(d) for d in array)


def materialize(jnp, pending: PendingList, shaped):
    """An array of zeros for `pending`, shaped like `shaped` (what a loop body made of it)."""
    if isinstance(shaped, PendingList):
        raise ValueError("a TensorList whose element shape the loop never fixes")
    return jnp.zeros(shaped.shape, dtype=pending.dtype)


def _array(ctx, handle, item_shape=None):
    if isinstance(handle, PendingList):
        if item_shape is None or not handle.fits(item_shape):
            raise ValueError(f"node '{ctx.name}': a TensorList read before its element shape is known")
        return ctx.jnp.zeros((handle.length, *item_shape), dtype=handle.dtype)
    return handle


@lowers("TensorListReserve", static_inputs=(0, 1))
def reserve(ctx, element_shape, num_elements):
    dtype = np.dtype(ctx.attr("element_dtype").numpy)
    length, shape = int(num_elements), _element_shape(element_shape)
    if shape is not None and all(d is not None for d in shape):
        return ctx.jnp.zeros((length, *shape), dtype=dtype)
    return PendingList(length, dtype, shape)


@lowers("TensorListFromTensor")
def from_tensor(ctx, tensor, element_shape):
    return tensor


def _fixed_length(node):
    if node.attr("resize_if_index_out_of_bounds", False):
        return "resize_if_index_out_of_bounds grows the list"
    return None


@lowers("TensorListSetItem", supports=_fixed_length)
def set_item(ctx, handle, index, item):
    array = _array(ctx, handle, tuple(item.shape))
    return ctx.lax.dynamic_update_index_in_dim(array, ctx.jnp.asarray(item, dtype=array.dtype), index, 0)


@lowers("TensorListGetItem")
def get_item(ctx, handle, index, element_shape):
    array = _array(ctx, handle, _known(element_shape))
    return ctx.lax.dynamic_index_in_dim(array, index, 0, keepdims=False)


@lowers("TensorListStack")
def stack(ctx, handle, element_shape):
    return _array(ctx, handle, _known(element_shape))


@lowers("TensorListGather")
def gather(ctx, handle, indices, element_shape):
    return ctx.jnp.take(_array(ctx, handle, _known(element_shape)), indices, axis=0)


@lowers("TensorListScatterIntoExistingList", static_inputs=(2,))
def scatter_into(ctx, handle, tensor, indices):
    # Indices are known when compiling, so a scatter past the end (TensorFlow grows the list)
    # is refused here and the cluster runs interpreted.
    indices = np.asarray(indices).reshape(-1)
    length = handle.length if isinstance(handle, PendingList) else handle.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= length):
        raise ValueError(f"node '{ctx.name}': scatter index past the list's {length} elements")
    array = _array(ctx, handle, tuple(tensor.shape[1:]))
    return array.at[indices].set(tensor.astype(array.dtype))


@lowers("TensorListLength")
def length(ctx, handle):
    count = handle.length if isinstance(handle, PendingList) else handle.shape[0]
    return np.asarray(count, dtype=np.int32)


def _known(element_shape):
    """A fully known element shape from a concrete element_shape input, else None."""
    if not isinstance(element_shape, (np.ndarray, np.generic)):
        return None
    shape = _element_shape(element_shape)
    return shape if shape is not None and all(d is not None for d in shape) else None
