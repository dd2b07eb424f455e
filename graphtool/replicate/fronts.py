"""Fronts: the nodes that take over an original name meaning all replicas.

- A loss (or another per-batch scalar the user fetches): the name becomes the mean of the replicas'
  values, `name = RealDiv(AddN(PREFIX_0/name, PREFIX_1/name, ...), N)`, which is the full-batch value
  of a mean over the batch when the slices are equal.
- A target (a node nothing reads, run for its effect: `init`, `train`, `save/restore_all`): running the name runs every
  replica's copy; `NoOp(^copies)` for a node without outputs, else `Identity(PREFIX_0/name, ^others)`
  (IdentityN for several outputs), whose value is replica 0's.
"""
from __future__ import annotations

from ..errors import InvalidGraphError
from ..ir import Node
from ..ops.opaque import dtype_of
from ..ops.training import op_inputs
from .clone import ReplicaCloner
from .structure import ASSIGN_OPS, VARIABLE_OPS, TrainingStructure


# Stateful only in that they read a variable: a dangling one is a value like any other.
_READ_OPS = frozenset({"ReadVariableOp", "VarIsInitializedOp", "IsVariableInitialized"})


def choose_fronted(structure: TrainingStructure, replicated: set[Node]) -> tuple[list[Node], list[Node]]:
    """(losses, sinks) among the replicated nodes, in graph order."""
    losses: list[Node] = []
    for ref in structure.losses:
        if ref.node.num_outputs != 1:
            raise InvalidGraphError(f"--loss: node '{ref.node.name}' ({ref.node.op}) has {ref.node.num_outputs} "
                                    f"outputs; a replicated loss must be a node of one output")
        if ref.node not in replicated:
            raise InvalidGraphError(f"--loss: node '{ref.node.name}' is not computed per replica")
        if ref.node not in losses:
            losses.append(ref.node)
    sinks = [node for node in structure.graph if node in replicated and not node.has_users
             and node.op not in VARIABLE_OPS and node not in losses and _is_target(node)]
    return losses, sinks


def _is_target(node: Node) -> bool:
    """A node run for its effect: a NoOp, a stateful op, an update of a ref variable (TensorFlow
    does not mark Assign or Apply* stateful), or one carrying control inputs (a pure
    value nobody reads, such as a dangling gradient piece, keeps replica 0's copy under its name)."""
    spec = node.spec
    if node.op in _READ_OPS:
        return False
    return node.op == "NoOp" or node.num_outputs == 0 or bool(node.control_inputs) \
        or (spec is not None and spec.stateful) or node.op in ASSIGN_OPS or op_inputs(node.op) is not None


def add_fronts(cloner: ReplicaCloner, losses: list[Node], sinks: list[Node]) -> None:
    emit, device, count = cloner.emit, cloner.devices.shared, cloner.count
    for node in losses:
        copies = cloner.copies[node]
        dtype = dtype_of(node.output(0)).base
        total = emit.node("AddN", f"{node.name}/replicate_sum", [c.output(0) for c in copies], device=device,
                          attrs={"N": count, "T": dtype})
        divisor = emit.const(f"{node.name}/replicate_count", count, dtype, device=device)
        cloner.fronts[node] = emit.node("RealDiv", node.name, [total.output(0), divisor], device=device,
                                        attrs={"T": dtype}, exact_name=True)
    for node in sinks:
        first, *others = cloner.copies[node]
        outputs = node.num_outputs
        if outputs == 0:
            front = emit.node("NoOp", node.name, device=device, control=[first, *others], exact_name=True)
        elif outputs == 1:
            front = emit.node("Identity", node.name, [first.output(0)], device=device, control=others,
                              attrs={"T": dtype_of(node.output(0)).base}, exact_name=True)
        else:
            front = emit.node("IdentityN", node.name, first.outputs, device=device, control=others,
                              attrs={"T": [dtype_of(ref).base for ref in node.outputs]}, exact_name=True)
        cloner.fronts[node] = front
