"""The state family: variables and random numbers carry no gradients through their ops.

A variable's value is differentiated where it is read: pass the read (the VariableV2 output,
its Identity, or a ReadVariableOp output) as x. Assignments are side effects (TensorFlow's
state_grad.py declares them not differentiable too), and random draws do not depend
differentiably on their shape and seed inputs. Resource handles carry no gradients here.
"""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable(
    "Variable", "VariableV2", "VarHandleOp", "ReadVariableOp", "VarIsInitializedOp",
    "IsVariableInitialized", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp",
    "AssignAddVariableOp", "AssignSubVariableOp",
    "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "Multinomial",
    "StatelessRandomUniform", "StatelessRandomNormal",
)
