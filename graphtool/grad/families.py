"""The gradient family modules; importing this registers every gradient function."""
from __future__ import annotations

from importlib import import_module

# One module per op family (graphtool/grad/<family>.py); each registers with registry.gradient
# and registry.not_differentiable when imported.
FAMILY_MODULES: tuple[str, ...] = (
    "math",
    "math_reduce",
    "segment",
    "sparse",
    "math_linalg",
    "array",
    "array_index",
    "nn",
    "nn_conv",
    "control_flow",
    "tensor_array",
    "tensor_list",
    "state",
    "state_scatter",
)

for _module in FAMILY_MODULES:
    import_module(f"{__package__}.{_module}")
