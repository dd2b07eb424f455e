"""Imports every family module of lowerings (each registers itself on import)."""
from . import math, nn, reduce  # noqa: F401
