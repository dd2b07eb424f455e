"""Imports every family module of lowerings (each registers itself on import)."""
from . import array, array_index, conv, math, nn, pool, reduce  # noqa: F401
