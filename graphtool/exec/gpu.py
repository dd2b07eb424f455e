"""The CUDA GPU device, on cupy. Importing this module raises ImportError where cupy is missing
(create_device turns that into DeviceUnavailable, exit 4).

What the device adds to running the shared `xp` kernels with cupy:
- streams: a pool of compute streams (kernels launch on the stream streams.py assigns them, with
  events ordering cross-stream dependencies) and one copy stream for every host<->device transfer,
  so that copies overlap compute;
- pinned host memory: host->device copies go through a page-locked staging buffer (an async DMA
  needs one), device->host copies land in one; staging buffers come from cupy's pinned pool;
- device memory comes from cupy's memory pool; a value is freed (back to the pool) when its last
  consumer is done with it, the stream runtime holding cross-stream inputs until their reader has
  finished;
- swap memory: stacks swap saved values to pinned host memory (swap.py, kernels/gpu_stack.py), when
  a push asks for it (`swap_memory`) or when the pool's use passes a threshold (by default 80% of
  the device's memory, or of cupy's pool limit; `DFTOOL_GPU_SWAP_THRESHOLD` = bytes overrides it);
- TF32 is off: float32 matmuls are exact float32 (cuBLAS's default compute type), so results
  match the CPU at float32 tolerances. cupy picks TF32 only when CUPY_TF32=1 is set at its first
  matmul; we set the compute type explicitly, and `DFTOOL_GPU_TF32=1` (or allow_tf32=True) turns
  TF32 on for speed.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from contextlib import contextmanager

import numpy as np

from ..errors import DeviceUnavailable
from .devices import Device
from .streams import DEFAULT_MAX_STREAMS, StreamRuntime
from .swap import SwapPolicy, Swapper

import cupy  # noqa: E402  (ImportError here means: no GPU support installed)

_DEVICE_DTYPE_KINDS = "biufc"       # what cupy arrays can hold (no strings, objects, bfloat16)
_DEFAULT_SWAP_FRACTION = 0.8


class CupyStream:
    """A cupy stream with the interface streams.StreamRuntime expects."""

    def __init__(self, name: str, device_index: int, stream=None):
        self.name = name
        self.device_index = device_index
        self.stream = stream if stream is not None else cupy.cuda.Stream(non_blocking=True)

    def record(self):
        """An event after everything queued on the stream so far (has a `done` property)."""
        event = cupy.cuda.Event(block=False, disable_timing=True)
        event.record(self.stream)
        return event

    def wait(self, event) -> None:
        self.stream.wait_event(event)

    @contextmanager
    def activate(self):
        """cupy launches the calling thread's kernels on this stream, on this device."""
        with cupy.cuda.Device(self.device_index), self.stream:
            yield self

    def launched(self, what: str, outputs=()) -> None:
        """Nothing to note: the memory pool accounts for the outputs."""

    def synchronize(self) -> None:
        self.stream.synchronize()


class _InFlight:
    """Host buffers an asynchronous copy still reads or writes, kept until its event is done."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending: deque = deque()

    def keep(self, event, *buffers) -> None:
        with self._lock:
            self._pending.append((event, buffers))
            while self._pending and self._pending[0][0].done:
                self._pending.popleft()

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()


def pinned_empty(shape, dtype) -> np.ndarray:
    """A host array in page-locked memory (from cupy's pinned pool)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    memory = cupy.cuda.alloc_pinned_memory(max(count * dtype.itemsize, 1))
    return np.frombuffer(memory, dtype, count).reshape(shape)


def configure_tf32(allow: bool) -> None:
    """Set the cuBLAS compute type of float32/complex64 matmuls: TF32 only when allowed."""
    try:
        from cupy._core import _routines_linalg as linalg   # cupy's own switch (CUPY_TF32 reads into it)
    except ImportError:
        os.environ["CUPY_TF32"] = "1" if allow else "0"     # effective before the first matmul
        return
    compute_type = linalg.COMPUTE_TYPE_TF32 if allow else linalg.COMPUTE_TYPE_DEFAULT
    for dtype in (np.float32, np.complex64):
        linalg.set_compute_type(dtype, compute_type)


class GPUDevice(Device):
    device_type = "GPU"

    def __init__(self, index: int = 0, *, max_streams: int = DEFAULT_MAX_STREAMS,
                 swap_threshold_bytes: int | None = None, allow_tf32: bool | None = None):
        super().__init__(index)
        self.max_streams = max_streams
        self.allow_tf32 = os.environ.get("DFTOOL_GPU_TF32") == "1" if allow_tf32 is None else allow_tf32
        with cupy.cuda.Device(index):
            configure_tf32(self.allow_tf32)
            self.copy_stream = CupyStream("copy", index)
            self.total_memory = cupy.cuda.runtime.memGetInfo()[1]
        self._compute_streams: list[CupyStream] = []
        self._streams_lock = threading.Lock()
        self._in_flight = _InFlight()
        self.memory_pool = cupy.get_default_memory_pool()
        self.swapper = Swapper(self, SwapPolicy(self._swap_threshold(swap_threshold_bytes)))

    @classmethod
    def create(cls, index: int, **options) -> "GPUDevice":
        """The GPU `index`; DeviceUnavailable (exit 4) when there is no usable CUDA device."""
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except (cupy.cuda.runtime.CUDARuntimeError, RuntimeError, OSError) as exc:
            raise DeviceUnavailable(f"--device gpu: no usable CUDA device ({exc})",
                                    hint="run on a machine with an NVIDIA GPU and driver, or use --device cpu") from None
        if index >= count:
            raise DeviceUnavailable(f"--device gpu:{index}: only {count} CUDA device(s) present")
        return cls(index, **options)

    def _swap_threshold(self, explicit: int | None) -> int:
        if explicit is not None:
            return explicit
        configured = os.environ.get("DFTOOL_GPU_SWAP_THRESHOLD")
        if configured:
            return int(configured)
        # A pool limit (cupy's set_limit, CUPY_GPU_MEMORY_LIMIT) is the memory there really is.
        available = min(self.total_memory, self.memory_pool.get_limit() or self.total_memory)
        return int(available * _DEFAULT_SWAP_FRACTION)

    @property
    def xp(self):
        return cupy

    def allocate(self, shape, dtype):
        with cupy.cuda.Device(self.index):
            return cupy.empty(shape, dtype=dtype)

    # --- streams ------------------------------------------------------------------------------------
    def compute_stream(self, index: int) -> CupyStream:
        """Compute stream `index` of this device (made on first use, shared by its executors)."""
        with self._streams_lock:
            while len(self._compute_streams) <= index:
                with cupy.cuda.Device(self.index):
                    self._compute_streams.append(CupyStream(f"compute:{len(self._compute_streams)}", self.index))
            return self._compute_streams[index]

    def current_stream(self) -> CupyStream:
        """The stream the calling thread launches on now."""
        return CupyStream("current", self.index, cupy.cuda.get_current_stream())

    def stream_runtime(self, plan) -> StreamRuntime:
        return StreamRuntime(plan, self, self.max_streams)

    # --- copies -------------------------------------------------------------------------------------
    def to_device(self, host_array):
        """Copy to device memory on the copy stream, through a pinned staging buffer. Consumers
        on compute streams wait for the copy stream (streams.py). Values cupy cannot hold
        (strings, handles, bfloat16) stay in host memory."""
        host = np.asarray(host_array)
        if host.dtype.kind not in _DEVICE_DTYPE_KINDS:
            return host
        staged = pinned_empty(host.shape, host.dtype)
        staged[...] = host
        with cupy.cuda.Device(self.index), self.copy_stream.stream:
            array = cupy.empty(host.shape, dtype=host.dtype)
            array.set(staged, stream=self.copy_stream.stream)
        self._in_flight.keep(self.copy_stream.record(), staged)
        return array

    def to_host(self, array) -> np.ndarray:
        """Copy to host memory once every compute stream has finished the work queued so far
        (the value's producer among it), on the copy stream, into a pinned buffer."""
        if not isinstance(array, cupy.ndarray):
            return np.asarray(array)
        with cupy.cuda.Device(self.index):
            for stream in list(self._compute_streams) + [self.current_stream()]:
                self.copy_stream.wait(stream.record())
            host = pinned_empty(array.shape, array.dtype)
            array.get(stream=self.copy_stream.stream, out=host, blocking=True)
        return host

    # --- swapping (the SwapCopies protocol of swap.py) --------------------------------------------
    def make_stack(self, name: str, dtype, max_size: int):
        from .kernels.gpu_stack import SwappingStack

        return SwappingStack(name, dtype, max_size, self.swapper)

    def swap_copy_out(self, array):
        self.copy_stream.wait(self.current_stream().record())
        host = pinned_empty(array.shape, array.dtype)
        array.get(stream=self.copy_stream.stream, out=host, blocking=False)
        return host, self.copy_stream.record()

    def swap_copy_in(self, host_buffer):
        # Allocated on the calling (compute) stream, so the pool reuses its block in that
        # stream's order; the copy stream starts once that stream's earlier work is done.
        array = cupy.empty(host_buffer.shape, dtype=host_buffer.dtype)
        self.copy_stream.wait(self.current_stream().record())
        array.set(host_buffer, stream=self.copy_stream.stream)
        return array, self.copy_stream.record()

    def wait_on_current_stream(self, event) -> None:
        cupy.cuda.get_current_stream().wait_event(event)

    def memory_in_use(self) -> int:
        return self.memory_pool.used_bytes()

    def synchronize(self) -> None:
        with cupy.cuda.Device(self.index):
            cupy.cuda.Device(self.index).synchronize()
        self._in_flight.clear()
