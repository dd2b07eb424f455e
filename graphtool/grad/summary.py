"""Gradient decisions of the summary family: none is differentiable. A summary is a serialized
proto for TensorBoard, not a value anything is trained through (TensorFlow declares the summary
ops NotDifferentiable in logging_ops.py and summary_ops.py)."""
from __future__ import annotations

from ..ops.summary import SUMMARY_OPS
from .registry import not_differentiable

not_differentiable(*sorted(SUMMARY_OPS))
