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
    "math_matrix",
    "array",
    "array_index",
    "nn",
    "nn_conv",
    "nn_extra",
    "control_flow",
    "tensor_array",
    "tensor_list",
    "state",
    "random",
    "training",
    "image",
    "strings",
    "state_scatter",
    "summary",
    "io",
    "data_flow",
)

for _module in FAMILY_MODULES:
    import_module(f"{__package__}.{_module}")
