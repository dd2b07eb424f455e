"""Imports every family module of lowerings (each registers itself on import)."""
from . import math, nn, reduce  # noqa: F401
from . import control_flow  # noqa: F401
from . import tensor_list  # noqa: F401
