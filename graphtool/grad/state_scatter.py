"""Gradient decisions of the ref-variable scatter updates (TensorFlow's state_grad.py declares
them not differentiable, as Assign): they return the reference, not a function of their inputs."""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable("ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax",
                   "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub", "ScatterNdMin", "ScatterNdMax",
                   "ScatterNdUpdate")
