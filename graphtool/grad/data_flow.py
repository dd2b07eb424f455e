"""Queues and readers have no gradients (TensorFlow declares them NotDifferentiable in
data_flow_grad.py and io_ops.py): they move values between steps, outside any backprop path."""
from __future__ import annotations

from ..ops import all_ops
from .registry import not_differentiable

not_differentiable(*sorted(name for name, spec in all_ops().items() if spec.family == "data_flow"))
