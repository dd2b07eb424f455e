"""The state family: variables carry no gradients through their ops.

A variable's value is differentiated where it is read: pass the read (the VariableV2 output,
its Identity, or a ReadVariableOp output) as x. Assignments are side effects (TensorFlow's
state_grad.py declares them not differentiable too). Resource handles carry no gradients here.
The random-number ops of this op family are declared with the array gradients (array.py).
"""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable(
    "Variable", "VariableV2", "VarHandleOp", "ReadVariableOp", "ResourceGather", "VarIsInitializedOp",
    "IsVariableInitialized", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp",
    "AssignAddVariableOp", "AssignSubVariableOp", "CountUpTo", "ResourceCountUpTo",
)
