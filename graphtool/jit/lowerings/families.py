"""Imports every family module of lowerings (each registers itself on import)."""
from importlib import import_module

from . import (array, array_index, complex_fft, conv, diag, fused, linalg, math, nn, nn_train,  # noqa: F401
               patches, pool, pool_grad, reduce, resize, segment, space, top_k, traced)

# The engine's own families (h-jitcore's branch): imported where present.
for _family in ("control_flow", "tensor_list"):
    try:
        import_module(f"{__package__}.{_family}")
    except ModuleNotFoundError as error:
        if error.name != f"{__package__}.{_family}":
            raise
