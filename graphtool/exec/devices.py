"""Devices: where kernels run and where their output buffers live.

A Device has a TensorFlow-style name, a type (CPU/GPU), an array module `xp` that kernels compute
with, and copies to and from host memory. The CPU device is numpy. `FakeGPUDevice` presents a
numpy-backed device as a GPU so that placement and host<->device copies are exercised where no GPU
exists (tests, CI); the real cupy GPU device lives in gpu.py, and device_factory.py picks one
from a name.
"""
from __future__ import annotations

import numpy as np

LOCAL_PREFIX = "/job:localhost/replica:0/task:0"


class Device:
    device_type = "CPU"

    def __init__(self, index: int = 0):
        self.index = index
        self.name = f"{LOCAL_PREFIX}/device:{self.device_type}:{index}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def xp(self):
        return np

    @property
    def kernel_device_type(self) -> str:
        """Which kernel registrations this device uses ("CPU" or "GPU")."""
        return self.device_type

    def allocate(self, shape, dtype):
        """An uninitialized buffer of this device's memory."""
        return self.xp.empty(shape, dtype=dtype)

    def has_kernel(self, op: str) -> bool:
        """Whether `op` can run here (control-flow ops run in the executor on every device)."""
        from .kernels import has_kernel
        from .plan import runs_without_kernel

        return runs_without_kernel(op) or has_kernel(op, self.kernel_device_type)

    def to_device(self, host_array):
        """Copy a host (numpy) array into this device's memory."""
        return host_array

    def to_host(self, array) -> np.ndarray:
        """Copy an array on this device to a host numpy array."""
        return array

    def synchronize(self) -> None:
        """Wait for queued work (a no-op on the CPU)."""

    def stream_runtime(self, plan):
        """What launches `plan`'s kernels on streams (streams.StreamRuntime), for devices that have
        streams; None: the executor calls kernels directly."""
        return None


class CPUDevice(Device):
    device_type = "CPU"


class FakeGPUDevice(Device):
    """A GPU for tests: GPU name and kernel registrations, numpy memory. Copies are real copies so
    that a missing host<->device copy shows up as aliasing bugs in tests."""

    device_type = "GPU"

    def to_device(self, host_array):
        return np.array(host_array, copy=True)

    def to_host(self, array) -> np.ndarray:
        return np.array(array, copy=True)

