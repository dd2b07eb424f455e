"""Imports every family module of lowerings (each registers itself on import)."""
from . import conv, math, nn, pool, reduce  # noqa: F401
