"""Keep freed host memory in the process, as TensorFlow's CPU allocator does.

Kernels allocate a fresh output per node per step. glibc's malloc serves blocks above its mmap
threshold (128 KiB to start) with fresh mmaps and gives freed heap tops back to the system, so a
2 MB activation costs 500-1,100 page faults every time it is made: measured 1-2 ms per layer of
the conv-net benchmark (10.2 -> 7.8 ms per layer, 45 -> 31-35 ms for the net, once the blocks are
kept). Raising the two thresholds keeps blocks up to 32 MiB (glibc's ceiling) in the heap and
up to 256 MiB of free heap top before trimming, so a step reuses the memory of the last one.
Applied once per process, on glibc only (other C libraries keep their own policy).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 256 << 20
_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Set glibc's malloc thresholds (once); True when they are in effect."""
    global _applied
    if _applied is None:
        _applied = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                mallopt = libc.mallopt
            except (OSError, AttributeError):   # not glibc (musl has no mallopt)
                return False
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            _applied = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and \
                bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    return _applied
