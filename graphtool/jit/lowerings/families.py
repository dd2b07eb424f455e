"""Imports every family module of lowerings (each registers itself on import)."""
from . import (array, array_index, complex_fft, conv, linalg, math, nn, nn_train, pool, pool_grad,  # noqa: F401
               fused, reduce, segment, space, top_k)
