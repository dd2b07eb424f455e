"""The op registry and its families. Importing this package registers every op.

Each family module declares its ops with registry.register (signature, attrs, flags, shape and
value functions); adding an op touches only its family module here.
"""
from importlib import import_module

FAMILY_MODULES = ("core", "math", "array", "nn", "control_flow", "tensor_array", "tensor_list", "state",
                  "segment", "sparse", "send_recv", "collective", "functional", "random", "training", "image", "strings",
                  "parsing", "lookup", "io", "compiled", "summary", "data_flow")

FAMILIES = {family: import_module(f"{__name__}.{family}") for family in FAMILY_MODULES}

from .registry import OpSpec, all_ops, get, lookup, register  # noqa: E402

__all__ = ["FAMILIES", "OpSpec", "all_ops", "get", "lookup", "register"]
