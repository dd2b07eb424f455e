"""Devices by name: 'cpu:1' -> CPUDevice(1), 'gpu:0' -> the cupy GPUDevice (gpu.py), 'fakegpu'.

It sits above devices.py and gpu.py (gpu.py subclasses devices.Device), so that neither of those
imports the other to build one.
"""
from __future__ import annotations

from ..errors import DeviceUnavailable, UsageError
from .devices import CPUDevice, Device, FakeGPUDevice


def create_device(spec: str) -> Device:
    """A device from a short name: 'cpu', 'cpu:1', 'gpu', 'gpu:0', 'fakegpu' (test double)."""
    kind, _, index_text = spec.lower().partition(":")
    try:
        index = int(index_text) if index_text else 0
    except ValueError:
        raise UsageError(f"bad device '{spec}' (expected cpu, cpu:N, gpu or gpu:N)") from None
    if kind == "cpu":
        return CPUDevice(index)
    if kind == "fakegpu":
        return FakeGPUDevice(index)
    if kind == "gpu":
        try:
            from .gpu import GPUDevice
        except ImportError as exc:
            raise DeviceUnavailable(f"--device gpu: cupy is not installed ({exc})",
                                    hint="pip install 'dftool[gpu]' on a machine with a CUDA GPU") from None
        return GPUDevice.create(index)
    raise UsageError(f"unknown device '{spec}' (expected cpu or gpu)")
