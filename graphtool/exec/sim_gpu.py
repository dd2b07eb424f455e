"""A simulated GPU for tests: logical streams, events, copies and memory accounting over numpy.

`FakeGPUDevice` (devices.py) only presents numpy as a GPU. `SimulatedGPUDevice` adds what a real
GPU device (gpu.py) does besides computing, so that CI can check it without a GPU:

- streams and events: kernels launch on logical streams (streams.py decides which); every launch,
  event record and event wait is appended to `device.trace`, so tests can check that a consumer on
  one stream waited for an event recorded after its producer on another;
- copies: host->device and device->host transfers (feeds, fetches, `_Recv`/`_Send`, swaps) run on
  the copy stream, through a "pinned" host staging copy, and are counted;
- memory: every array a kernel or a copy leaves on the device is accounted until it is garbage
  (`memory_in_use()`, `peak_memory`), which drives the swap threshold;
- swapping: stacks are SwappingStacks (kernels/gpu_stack.py) with the device's Swapper;
- `strict=True`: arrays are cupy-like DeviceArrays (strict_xp.py), so kernels that would fail on
  cupy fail here too.

Everything here is synchronous (numpy computes at once), so every event is complete when recorded:
the ordering the trace shows is what a real GPU would be asked to respect.
"""
from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import numpy as np

from .devices import FakeGPUDevice
from .streams import DEFAULT_MAX_STREAMS, StreamRuntime
from .strict_xp import DeviceArray, StrictNumpy
from .swap import SwapPolicy, Swapper


class LogicalEvent:
    """A point in a logical stream: the number of launches queued on it when it was recorded."""

    __slots__ = ("stream", "position")
    done = True   # the simulated work is finished as soon as it is queued

    def __init__(self, stream: "LogicalStream", position: int):
        self.stream, self.position = stream, position


class StreamTrace:
    """The ordered log of launches, records and waits on a device's logical streams.

    Entries: ("launch", stream, what, position), ("record", stream, position),
    ("wait", stream, other_stream, position)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries: list[tuple] = []

    def add(self, entry: tuple) -> None:
        with self.lock:
            self.entries.append(entry)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()

    def launches(self, stream: str | None = None) -> list[str]:
        """What was launched (on `stream`, or anywhere), in order."""
        return [e[2] for e in self.entries if e[0] == "launch" and (stream is None or e[1] == stream)]


class LogicalStream:
    """A stream that records what would be queued on it."""

    def __init__(self, name: str, device: "SimulatedGPUDevice"):
        self.name = name
        self._device = device
        self.position = 0     # launches queued so far

    def launched(self, what: str, outputs=()) -> None:
        with self._device.trace.lock:
            self.position += 1
            self._device.trace.entries.append(("launch", self.name, what, self.position))
        for value in outputs:
            self._device.check_on_device(what, value)
            self._device.memory.track(value)

    def record(self) -> LogicalEvent:
        with self._device.trace.lock:
            event = LogicalEvent(self, self.position)
            self._device.trace.entries.append(("record", self.name, event.position))
        return event

    def wait(self, event: LogicalEvent) -> None:
        self._device.trace.add(("wait", self.name, event.stream.name, event.position))

    @contextmanager
    def activate(self):
        """Kernels run by this thread inside the block count as launched on this stream."""
        local = self._device.current
        previous = getattr(local, "stream", None)
        local.stream = self
        try:
            yield self
        finally:
            local.stream = previous

    def synchronize(self) -> None:
        """Nothing to wait for: simulated work completes when it is queued."""


class MemoryTracker:
    """Bytes of device arrays still alive (each buffer counted once, however many views)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._live: dict[int, int] = {}
        self.in_use = 0
        self.peak = 0

    def track(self, value) -> None:
        owner = _owner(value)
        if owner is None:
            return
        key = id(owner)
        with self._lock:
            if key in self._live:
                return
            self._live[key] = owner.nbytes
            self.in_use += owner.nbytes
            self.peak = max(self.peak, self.in_use)
        weakref.finalize(owner, self._free, key)

    def _free(self, key: int) -> None:
        with self._lock:
            self.in_use -= self._live.pop(key, 0)


def _owner(value) -> np.ndarray | None:
    """The numpy array that owns the memory of a device value (None for host metadata)."""
    array = value._host_view if isinstance(value, DeviceArray) else value
    if not isinstance(array, np.ndarray) or array.dtype.kind == "O":
        return None
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


class SimulatedGPUDevice(FakeGPUDevice):
    """A GPU test double with streams, copies, memory accounting and swapping (see module doc)."""

    def __init__(self, index: int = 0, *, strict: bool = False, max_streams: int = DEFAULT_MAX_STREAMS,
                 swap_threshold_bytes: int | None = None):
        super().__init__(index)
        self.trace = StreamTrace()
        self.current = threading.local()
        self.memory = MemoryTracker()
        self.max_streams = max_streams
        self.copy_stream = LogicalStream("copy", self)
        self._compute_streams: list[LogicalStream] = []
        self._strict_xp = StrictNumpy() if strict else None
        self.swapper = Swapper(self, SwapPolicy(swap_threshold_bytes))
        self.copies = {"to_device": 0, "to_host": 0, "pinned_bytes": 0}

    @property
    def xp(self):
        return self._strict_xp or np

    # --- streams ------------------------------------------------------------------------------------
    def compute_stream(self, index: int) -> LogicalStream:
        """The device's compute stream `index` (made on first use, shared by its executors)."""
        with self.trace.lock:
            while len(self._compute_streams) <= index:
                self._compute_streams.append(LogicalStream(f"compute:{len(self._compute_streams)}", self))
        return self._compute_streams[index]

    def current_stream(self) -> LogicalStream:
        """The stream the calling thread's kernel runs on (compute:0 outside a launch)."""
        return getattr(self.current, "stream", None) or self.compute_stream(0)

    def stream_runtime(self, plan) -> StreamRuntime:
        return StreamRuntime(plan, self, self.max_streams)

    # --- copies -------------------------------------------------------------------------------------
    def to_device(self, host_array):
        host = np.asarray(host_array)
        if host.dtype.kind not in "biufc":
            return host          # cupy cannot hold it: it stays in host memory, as on a real GPU
        staged = self._stage(host)
        value = DeviceArray(staged) if self._strict_xp is not None else staged
        self.copy_stream.launched("to_device", (value,))
        self.copies["to_device"] += 1
        return value

    def to_host(self, array) -> np.ndarray:
        if self._strict_xp is not None and isinstance(array, np.ndarray):
            return array         # already in host memory (strings, handles, another device's value)
        host = array._host_view if isinstance(array, DeviceArray) else np.asarray(array)
        if host.dtype.kind not in "biufc":
            return host          # host metadata (handles, strings) never left the host
        self._copy_stream_waits_for_compute()
        self.copy_stream.launched("to_host")
        self.copies["to_host"] += 1
        return self._stage(host)

    def check_on_device(self, what: str, value) -> None:
        """Strict mode: a numeric value in device code must be a device array (a kernel that
        returns a host array would make cupy fail in the kernel that consumes it)."""
        if (self._strict_xp is not None and isinstance(value, np.ndarray)
                and value.dtype.kind in "biufc"):
            raise TypeError(f"{what}: a host numpy array {value.dtype}{list(value.shape)} where the GPU "
                            f"holds device arrays (use ctx.xp to make it)")

    def _stage(self, array: np.ndarray) -> np.ndarray:
        """A copy through a 'pinned' staging buffer (a real copy, so a missing one shows up)."""
        self.copies["pinned_bytes"] += array.nbytes
        return np.array(array, copy=True)

    def _copy_stream_waits_for_compute(self) -> None:
        for stream in list(self._compute_streams):
            self.copy_stream.wait(stream.record())

    # --- swapping (the SwapCopies protocol of swap.py) --------------------------------------------
    def make_stack(self, name: str, dtype, max_size: int):
        from .kernels.gpu_stack import SwappingStack

        return SwappingStack(name, dtype, max_size, self.swapper)

    def swap_copy_out(self, array):
        self.copy_stream.wait(self.current_stream().record())
        self.copy_stream.launched("swap_out")
        host = self._stage(array._host_view if isinstance(array, DeviceArray) else array)
        return host, self.copy_stream.record()

    def swap_copy_in(self, host_buffer):
        staged = self._stage(host_buffer)
        value = DeviceArray(staged) if self._strict_xp is not None else staged
        self.copy_stream.launched("swap_in", (value,))
        return value, self.copy_stream.record()

    def wait_on_current_stream(self, event) -> None:
        self.current_stream().wait(event)

    def memory_in_use(self) -> int:
        return self.memory.in_use

    def synchronize(self) -> None:
        """Simulated work is complete when queued."""
