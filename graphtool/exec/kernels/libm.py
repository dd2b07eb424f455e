"""The C library's float32 math functions, element by element, for kernels that must reproduce
TensorFlow's scalar float code bit for bit: glibc's logf, sinf, cosf and powf are not correctly
rounded, and numpy's float32 versions differ from them by an ulp here and there. Without a C
library (or one lacking a function) we fall back to the double result rounded once, which agrees
except near rounding ties."""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

_ARITY = {"logf": 1, "sinf": 1, "cosf": 1, "powf": 2}


def _load() -> dict:
    try:
        library = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:
        return {}
    functions = {}
    for name, arity in _ARITY.items():
        function = getattr(library, name, None)
        if function is None:
            continue
        function.restype, function.argtypes = ctypes.c_float, [ctypes.c_float] * arity
        functions[name] = np.frompyfunc(function, arity, 1)
    return functions


_FUNCTIONS = _load()
_NUMPY = {"logf": np.log, "sinf": np.sin, "cosf": np.cos, "powf": np.power}


def float_function(name: str, *args: np.ndarray) -> np.ndarray:
    """name(*args) in float32 as the C library computes it (args broadcast together)."""
    args = tuple(np.asarray(arg, np.float32) for arg in args)
    if name in _FUNCTIONS and all(arg.size for arg in args):
        return np.asarray(_FUNCTIONS[name](*(arg.astype(np.float64) for arg in args))).astype(np.float32)
    return np.asarray(_NUMPY[name](*(arg.astype(np.float64) for arg in args))).astype(np.float32)
