"""Kernels per op family. Importing this package registers every family's kernels.

See registry.py for the kernel contract; adding an op's kernel touches only its family module.
"""
from importlib import import_module

# gpu_* modules hold the GPU kernels of ops whose shared kernel cannot run on cupy.
FAMILY_MODULES = ("core", "math", "array", "nn", "tensor_array", "tensor_list", "state", "state_scatter", "segment", "sparse",
                  "gpu_host_memory", "gpu_segment", "functional", "random", "training", "image", "gpu_image",
                  "strings", "parsing", "lookup", "summary", "checkpoint_io", "queue", "readers")

FAMILIES = {family: import_module(f"{__name__}.{family}") for family in FAMILY_MODULES}

from .registry import (CPU, GPU, KernelContext, KernelDef, KernelError, all_kernels, bind,  # noqa: E402
                       has_kernel, kernel, lookup)

__all__ = ["CPU", "GPU", "FAMILIES", "KernelContext", "KernelDef", "KernelError", "all_kernels", "bind",
           "has_kernel", "kernel", "lookup"]
