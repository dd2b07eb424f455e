"""The TensorList value a `variant` tensor holds (TensorFlow's TensorList struct), with value
semantics and O(1) updates.

A list has an element dtype, an element shape (partial: what every element must fit), an optional
maximum length, and its elements; an element never set is None (TensorFlow's DT_INVALID tensor),
read as zeros of the element shape. Every op that "changes" a list returns a new one and the input
stays valid: another consumer, or a loop's backward pass, may still read it.

TensorFlow gets O(1) SetItem/PushBack in loops by reusing the input's buffer when nothing else
holds it (buffer forwarding). Python cannot see that, so versions share one element store instead
(a persistent array with rerooting, after Baker): the newest version owns the store's Python list;
an older version is a small diff against a newer one (which slice to put back). Deriving a list
from the store's owner is O(1) (one slice assignment); reading an older version first reroots the
store to it, undoing the diffs on the way, so a loop that reads and writes the current version
stays O(1) per step, and walking back through old versions (a backward loop) is O(1) per step too.
All versions of one store share a lock: loop iterations run on several threads.
"""
from __future__ import annotations

import threading

import numpy as np

from ...shapes import Shape


class _Store:
    __slots__ = ("lock", "data")

    def __init__(self, data: list):
        self.lock = threading.Lock()
        self.data = data


class TensorList:
    """One immutable list version. Public methods are thread-safe; `_`-methods expect the lock."""

    __slots__ = ("element_dtype", "element_shape", "max_num_elements", "length", "_store", "_diff")

    def __init__(self, element_dtype, element_shape: Shape, elements: list | None = None,
                 max_num_elements: int = -1, *, _store: _Store | None = None):
        self.element_dtype = element_dtype          # a graphtool DType
        self.element_shape = element_shape
        self.max_num_elements = max_num_elements
        if _store is None:
            _store = _Store(list(elements or ()))
        self._store = _store
        self.length = len(_store.data)
        # None: this version owns the store's data. Else (start, end, items, newer): this version is
        # `newer` with newer[start:end] replaced by items.
        self._diff: tuple[int, int, list, TensorList] | None = None

    def __repr__(self) -> str:
        return f"TensorList({self.element_dtype.name}, {self.element_shape}, length={self.length})"

    def __reduce__(self):
        # Crossing to another process (a cluster task) sends this version alone, as its elements:
        # the shared store and its lock stay behind.
        return (TensorList, (self.element_dtype, self.element_shape, self.elements(), self.max_num_elements))

    # --- reading ----------------------------------------------------------------------------------
    def get(self, index: int):
        """The element at `index` (None when it was never set); the index must be in range."""
        with self._store.lock:
            return self._reroot()[index]

    def elements(self) -> list:
        """A snapshot of every element (None where unset)."""
        with self._store.lock:
            return list(self._reroot())

    # --- deriving new versions --------------------------------------------------------------------
    def replaced(self, start: int, end: int, items: list, element_shape: Shape | None = None) -> "TensorList":
        """A new list: this one with [start:end] replaced by `items` (set, push, pop, resize and
        scatter are all such a replacement). O(len(items) + end - start) when this version owns
        the store."""
        with self._store.lock:
            data = self._reroot()
            newer = TensorList(self.element_dtype, self.element_shape if element_shape is None else element_shape,
                               max_num_elements=self.max_num_elements, _store=self._store)
            removed = data[start:end]
            data[start:end] = items
            newer.length = len(data)
            self._diff = (start, start + len(items), removed, newer)
            return newer

    def set(self, index: int, value) -> "TensorList":
        return self.replaced(index, index + 1, [value])

    def push(self, value) -> "TensorList":
        return self.replaced(self.length, self.length, [value])

    def popped(self) -> "TensorList":
        return self.replaced(self.length - 1, self.length, [])

    def resized(self, size: int) -> "TensorList":
        if size >= self.length:
            return self.replaced(self.length, self.length, [None] * (size - self.length))
        return self.replaced(size, self.length, [])

    def copy_with(self, elements: list, element_shape: Shape | None = None) -> "TensorList":
        """A list with this one's dtype, shape and maximum but new elements (its own store)."""
        return TensorList(self.element_dtype, self.element_shape if element_shape is None else element_shape,
                          elements, self.max_num_elements)

    def _reroot(self) -> list:
        """Make this version the store's owner and return the store's data."""
        path: list[tuple[TensorList, tuple[int, int, list, TensorList]]] = []   # (version, its diff)
        version = self
        while version._diff is not None:
            path.append((version, version._diff))
            version = version._diff[3]
        data = self._store.data
        for older, (start, end, items, newer) in reversed(path):   # from the owner's side back to this version
            removed = data[start:end]
            data[start:end] = items
            newer._diff = (start, start + len(items), removed, older)
            older._diff = None
        return data

    # --- the variant protocol: what ZerosLike and AddN do with a list ------------------------------
    def zeros_like(self, ctx) -> "TensorList":
        """Same length and element shape, every set element replaced by zeros (unset stay unset)."""
        xp = ctx.xp
        return self.copy_with([None if t is None else xp.zeros(t.shape, dtype=np.dtype(t.dtype))
                               for t in self.elements()])

    def add(self, ctx, other: "TensorList") -> "TensorList":
        """Element-wise sum of two lists (how gradients of one list from several consumers meet);
        an unset element adds as nothing."""
        if not isinstance(other, TensorList):
            ctx.fail(f"Trying to add a TensorList and a {type(other).__name__}")
        if self.element_dtype != other.element_dtype:
            ctx.fail(f"Trying to add two lists of tensors of different dtypes. One is "
                     f"{self.element_dtype.name} and the other is {other.element_dtype.name}")
        if not self.element_shape.is_compatible_with(other.element_shape):
            ctx.fail(f"Trying to add two tensors with incompatible element shapes. One is "
                     f"{self.element_shape} and the other is {other.element_shape}")
        if self.length != other.length:
            ctx.fail(f"Trying to add two lists of tensors with different lengths. One is {self.length} "
                     f"and the other is {other.length}")
        summed = []
        for a, b in zip(self.elements(), other.elements()):
            a, b = local(ctx, a), local(ctx, b)
            if a is None or b is None:
                summed.append(b if a is None else a)
            elif a.shape != b.shape:
                ctx.fail(f"Trying to add two tensors with incompatible shapes. One is {Shape(a.shape)} "
                         f"and the other is {Shape(b.shape)}")
            else:
                summed.append(a + b)
        return self.copy_with(summed, self.element_shape.merge(other.element_shape))


def local(ctx, element):
    """A list element as an array of the kernel's device. A list keeps its elements where they
    were made; one that crossed devices (a Send/Recv moves only the host-side variant) brings them
    along on first use, as TensorFlow's device copy of a TensorList copies its elements."""
    xp = ctx.xp
    if element is None or isinstance(element, xp.ndarray):
        return element
    if isinstance(element, (np.ndarray, np.generic)):
        return xp.asarray(element)  # a host value read on a device (or a numpy scalar)
    return element.get()            # a device array read on the host


def variant_scalar(value) -> np.ndarray:
    """A scalar variant tensor holding `value` (variant tensors stay host objects on every device)."""
    holder = np.empty((), dtype=object)
    holder[()] = value
    return holder
