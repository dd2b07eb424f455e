"""Swap memory: values a while loop saves for its backward pass move to host memory and back.

The gradient of a while loop pushes each iteration's forward values onto stacks (StackPushV2) and
pops them, last first, in the backward loop (StackPopV2). On a GPU those saved values are what
exhausts device memory on long sequences (the paper's LSTM runs out at length ~600). TensorFlow's
answer, which we follow: a push whose `swap_memory` attr is set copies the value to pinned host
memory on the copy stream and lets the device copy go once the copy is done; a pop brings it back.
Because a stack is LIFO, the next value to be popped is known, so every pop starts copying the next
swapped value back in while the backward step computes (a prefetch), and the copy overlaps compute.

Besides the attr, a device may swap when its memory use passes a threshold (`SwapPolicy`), so
graphs built without `swap_memory` still fit.

`Swapper` holds the policy and the counters (`SwapStats`) of one device; the device supplies the
copies (see `SwapCopies`), asynchronous on a real GPU (gpu.py) and synchronous, but logged on the
copy stream, on the test double (sim_gpu.py). The stack kernels that use it are
kernels/gpu_stack.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol


class SwapCopies(Protocol):
    """What a device provides for swapping (events have a `done` property)."""

    def swap_copy_out(self, array):
        """Start copying `array` to pinned host memory after the calling stream's work:
        returns (host_buffer, event)."""

    def swap_copy_in(self, host_buffer):
        """Start copying `host_buffer` back into device memory: returns (array, event)."""

    def wait_on_current_stream(self, event) -> None:
        """Make the stream the calling kernel runs on wait for `event`."""

    def memory_in_use(self) -> int:
        """Bytes of device memory currently allocated."""


@dataclass
class SwapPolicy:
    """When a pushed value goes to host memory: always when the push's `swap_memory` attr is set;
    also when the device's memory in use passes `threshold_bytes` (None: never for that reason)."""

    threshold_bytes: int | None = None

    def should_swap(self, swap_memory: bool, memory_in_use: int) -> bool:
        if swap_memory:
            return True
        return self.threshold_bytes is not None and memory_in_use > self.threshold_bytes


@dataclass
class SwapStats:
    """What swapping did on one device (cumulative; `reset()` between measurements)."""

    swapped_out: int = 0          # values copied to host memory by a push
    swapped_in: int = 0           # values copied back for a pop (prefetched or not)
    prefetched: int = 0           # copies back started ahead of their pop
    prefetch_hits: int = 0        # pops whose value a prefetch had already started
    bytes_out: int = 0
    stack_device_bytes: int = 0   # device bytes stacks hold now
    peak_stack_device_bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def reset(self) -> None:
        with self.lock:
            self.swapped_out = self.swapped_in = self.prefetched = self.prefetch_hits = self.bytes_out = 0
            self.peak_stack_device_bytes = self.stack_device_bytes

    def held(self, delta: int) -> None:
        """Stacks took (`delta` > 0) or gave back device bytes."""
        with self.lock:
            self.stack_device_bytes += delta
            self.peak_stack_device_bytes = max(self.peak_stack_device_bytes, self.stack_device_bytes)

    def count(self, **increments: int) -> None:
        with self.lock:
            for name, amount in increments.items():
                setattr(self, name, getattr(self, name) + amount)


class SwappedValue:
    """A stack entry whose value lives in host memory.

    Until the copy out is done the device array stays referenced (the copy still reads it, and a
    freed block could be handed to new work at once); a prefetch keeps the copy coming back."""

    __slots__ = ("host", "nbytes", "out_event", "device_copy", "prefetch")

    def __init__(self, host, nbytes: int, out_event, device_copy):
        self.host = host
        self.nbytes = nbytes
        self.out_event = out_event
        self.device_copy = device_copy
        self.prefetch = None          # (array, event) once a copy back has started

    @property
    def device_bytes(self) -> int:
        """Device bytes this entry holds: the original until the copy out is done, plus a
        prefetched copy."""
        held = self.nbytes if self.device_copy is not None else 0
        return held + (self.nbytes if self.prefetch is not None else 0)


class Swapper:
    """Swap decisions, copies and counters for one device's stacks."""

    def __init__(self, copies: SwapCopies, policy: SwapPolicy | None = None):
        self.copies = copies
        self.policy = policy or SwapPolicy()
        self.stats = SwapStats()

    def should_swap(self, swap_memory: bool) -> bool:
        return self.policy.should_swap(swap_memory, self.copies.memory_in_use())

    def swap_out(self, array) -> SwappedValue:
        """Start moving `array` to host memory."""
        host, event = self.copies.swap_copy_out(array)
        self.stats.count(swapped_out=1, bytes_out=array.nbytes)
        return SwappedValue(host, array.nbytes, event, array)

    def release_copied(self, entry: SwappedValue) -> int:
        """Drop the device original once its copy out is done; returns the device bytes freed."""
        if entry.device_copy is not None and entry.out_event.done:
            entry.device_copy = None
            return entry.nbytes
        return 0

    def prefetch(self, entry: SwappedValue) -> int:
        """Start copying `entry` back ahead of its pop; returns the device bytes it takes."""
        if entry.prefetch is not None:
            return 0
        entry.prefetch = self.copies.swap_copy_in(entry.host)
        self.stats.count(prefetched=1)
        return entry.nbytes

    def swap_in(self, entry: SwappedValue):
        """The entry's value in device memory, ready for the calling stream to use."""
        if entry.device_copy is not None:
            # Popped before it ever left: the original is still there (and equal).
            array, event = entry.device_copy, entry.out_event
        elif entry.prefetch is not None:
            array, event = entry.prefetch
            self.stats.count(prefetch_hits=1)
        else:
            array, event = self.copies.swap_copy_in(entry.host)
        self.copies.wait_on_current_stream(event)
        self.stats.count(swapped_in=1)
        return array
