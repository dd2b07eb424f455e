"""The training family: optimizer updates are side effects with no gradient (TensorFlow registers
none for them)."""
from __future__ import annotations

from ..ops import registry as op_registry
from ..ops.training import op_inputs
from .registry import not_differentiable

not_differentiable(*sorted(op for op in op_registry.all_ops() if op_inputs(op) is not None))
