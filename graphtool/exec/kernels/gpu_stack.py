"""The stack a GPU device gives the StackV2 kernels: it swaps saved values to host memory.

The stack kernels (tensor_array.py) are shared by every device; they ask the device for the stack
object (`device.make_stack`), so a GPU device hands them a `SwappingStack` wired to its Swapper
(exec/swap.py): a push whose `swap_memory` attr is set, or made while device memory use is above the
swap threshold, keeps only a host copy, and every pop starts bringing the next swapped value back
(LIFO: the next pop is predictable), so the copy overlaps the backward step's compute.
"""
from __future__ import annotations

from collections import deque

from ..swap import SwappedValue, Swapper
from .tensor_array import Stack


class SwappingStack(Stack):
    """A Stack whose entries are device arrays or SwappedValues (host copies)."""

    def __init__(self, name: str, dtype, max_size: int, swapper: Swapper):
        super().__init__(name, dtype, max_size)
        self.swapper = swapper
        self._copying: deque[SwappedValue] = deque()   # swapped entries whose original is still held

    def push(self, value, swap_memory: bool = False) -> None:
        entry = self.swapper.swap_out(value) if self.swapper.should_swap(swap_memory) else value
        super().push(entry)
        self.swapper.stats.held(value.nbytes)
        if isinstance(entry, SwappedValue):
            with self.lock:
                self._copying.append(entry)
        self._release_copied()

    def pop(self):
        entry = super().pop()
        if not isinstance(entry, SwappedValue):
            self.swapper.stats.held(-entry.nbytes)
            return entry
        with self.lock:
            if entry.device_copy is not None:   # popped before its copy out was released
                self._copying.remove(entry)
        held = entry.device_bytes
        value = self.swapper.swap_in(entry)
        self.swapper.stats.held(-held)
        self._prefetch_top()
        self._release_copied()
        return value

    def close(self) -> None:
        with self.lock:
            held = sum(_device_bytes(entry) for entry in self._elements)
            self._copying.clear()
        super().close()
        self.swapper.stats.held(-held)

    def _prefetch_top(self) -> None:
        """Start copying back the value the next pop will return, if it is in host memory."""
        with self.lock:
            top = self._elements[-1] if self._elements else None
            if isinstance(top, SwappedValue):
                self.swapper.stats.held(self.swapper.prefetch(top))

    def _release_copied(self) -> None:
        """Let go of device originals whose copy out has finished (oldest first)."""
        freed = 0
        with self.lock:
            while self._copying and self._copying[0].out_event.done:
                freed += self.swapper.release_copied(self._copying.popleft())
        if freed:
            self.swapper.stats.held(-freed)


def _device_bytes(entry) -> int:
    return entry.device_bytes if isinstance(entry, SwappedValue) else entry.nbytes
