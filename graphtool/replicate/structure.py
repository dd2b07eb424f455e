"""Finding the training structure of a single-device training graph: the split inputs, the nodes
that depend on them (per-example computation), the variables, the update ops and which of their
inputs carry a gradient (or another per-batch value) to average, the observers (savers and
summaries, kept single) and the loss-like values whose names become the replicas' mean.

Nothing here changes the graph; `find_structure` answers what the rewrite needs to know.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InvalidGraphError, UsageError
from ..ir import Graph, Node, TensorRef
from ..ops.opaque import dtype_of
from ..ops.registry import lookup
from ..ops.training import op_inputs
from ..shape_inference import ShapeResult, infer_shapes
from ..suggest import did_you_mean

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
ASSIGN_OPS = frozenset({"Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp",
                        "AssignSubVariableOp"})
SPLITTABLE_OPS = frozenset({"Placeholder", "PlaceholderWithDefault", "PlaceholderV2"})
# Ops that watch the training state without being part of it: one copy reads replica 0's values
# (the variables keep their names there) or the replicas' mean (the loss), never one per replica.
_SAVE_OPS = frozenset({"SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints"})
# Scatter updates and sparse optimizers take per-row gradients: their average needs the rows of
# every replica, which an all-reduce of dense tensors does not give.
_SHAPE_ONLY_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike"})
_SPARSE_UPDATE_PREFIXES = ("Scatter", "ResourceScatter", "SparseApply", "ResourceSparseApply")


@dataclass
class UpdateOp:
    """A state update that reads per-batch values: `averaged` are its input slots whose values
    depend on the split inputs (the gradient of an optimizer op; the value of an Assign*)."""
    node: Node
    averaged: list[int]


@dataclass
class TrainingStructure:
    graph: Graph
    splits: list[Node]
    dependent: set[Node]                 # nodes that read a split input, through data edges
    variables: list[Node]
    updates: list[UpdateOp]
    observers: set[Node]
    losses: list[TensorRef]
    shapes: ShapeResult
    order: dict[Node, int] = field(default_factory=dict)

    @property
    def update_nodes(self) -> set[Node]:
        return {update.node for update in self.updates}


def is_observer(node: Node) -> bool:
    spec = lookup(node.op)
    return node.op in _SAVE_OPS or (spec is not None and spec.family == "summary")


def forward_closure(seeds: Iterable[Node], *, control: bool, stop=lambda node: False) -> set[Node]:
    """Every node reachable from `seeds` along data edges (and control edges with `control`),
    the seeds' consumers included, not passing into a node for which `stop` holds."""
    reached: set[Node] = set()
    queue = deque(seeds)
    while queue:
        node = queue.popleft()
        users = [user for user, _ in node.uses()] + (node.control_uses if control else [])
        for user in users:
            if user not in reached and not stop(user):
                reached.add(user)
                queue.append(user)
    return reached


def resolve_splits(graph: Graph, names: list[str]) -> list[Node]:
    """The --split placeholders; a name that is no node, or no placeholder, is a usage error."""
    if not names:
        raise UsageError("--split names no input", hint="name the batch inputs, e.g. --split x,labels")
    splits: list[Node] = []
    for name in names:
        base = name.split(":")[0]
        node = graph.get(base)
        if node is None:
            placeholders = [n.name for n in graph if n.op in SPLITTABLE_OPS]
            raise UsageError(f"--split: no node named '{name}' in the graph",
                             hint=did_you_mean(base, placeholders) or f"placeholders: {', '.join(placeholders[:8])}")
        if node.op not in SPLITTABLE_OPS:
            raise UsageError(f"--split: '{name}' is a {node.op}, not a placeholder",
                             hint="only fed inputs (Placeholder, PlaceholderWithDefault) can be split by batch")
        if node not in splits:
            splits.append(node)
    return splits


def check_batch(node: Node, shapes: ShapeResult, replicas: int) -> None:
    """A split input needs rank >= 1 and a batch (dim 0) divisible by the replicas, when known."""
    shape = shapes.shape(node.output(0))
    if shape.rank == 0:
        raise InvalidGraphError(f"--split: input '{node.name}' is a scalar; it has no batch dimension to split")
    dims = shape.dims if shape.rank is not None else None
    if dims and dims[0] is not None and dims[0] % replicas:
        raise InvalidGraphError(f"--split: input '{node.name}' has a batch of {dims[0]}, not divisible by "
                                f"{replicas} replicas",
                                hint="choose --replicas dividing the batch, or give the input an unknown batch")


def _update_op(node: Node, dependent: set[Node]) -> UpdateOp | None:
    """The update that `node` is, with its inputs to average; None for a node that updates no
    state from per-batch values. A sparse update of per-batch rows is refused."""
    reads = [slot for slot, ref in enumerate(node.inputs) if ref.node in dependent]
    if not reads:
        return None
    if node.op.startswith(_SPARSE_UPDATE_PREFIXES):
        raise InvalidGraphError(f"node '{node.name}' ({node.op}) updates rows of a variable from per-batch "
                                f"values; replicate averages dense gradients only",
                                hint="use a dense optimizer update (e.g. compute the dense gradient)")
    named = op_inputs(node.op)
    if named is not None:
        _, names = named
        slots = [slot for slot in reads if not names[slot].startswith("*")]
        return UpdateOp(node, slots) if slots else None
    if node.op in ASSIGN_OPS:
        return UpdateOp(node, [1]) if 1 in reads else None
    return None


def find_losses(graph: Graph, named: list[str], candidates: set[Node], dependent: set[Node],
                shapes: ShapeResult, observers: set[Node]) -> list[TensorRef]:
    """`--loss` tensors, or by default every scalar floating value computed from the split inputs
    whose value only observers (summaries) or nobody read: the values a user fetches per step
    (a gradient's seed may read the loss's shape, as `dftool grad` does)."""
    if named:
        refs = []
        for name in named:
            try:
                ref = graph.tensor(name)
            except UsageError as exc:
                raise UsageError(f"--loss: {exc}", hint=exc.hint) from None
            if ref.node not in dependent:
                raise UsageError(f"--loss: '{name}' does not depend on the split inputs; it is the same on every "
                                 f"replica and needs no averaging")
            refs.append(ref)
        return refs
    found = []
    for node in candidates:
        if node not in dependent or node.num_outputs != 1 or any(
                user not in observers and user.op not in _SHAPE_ONLY_OPS for user in node.consumers()):
            continue
        ref = node.output(0)
        dtype = dtype_of(ref).base
        if dtype.is_floating and shapes.shape(ref).rank == 0:
            found.append(ref)
    return found


def find_structure(graph: Graph, split_names: list[str], replicas: int, loss_names: list[str],
                   feed_shapes: dict | None = None) -> TrainingStructure:
    splits = resolve_splits(graph, split_names)
    shapes = infer_shapes(graph, feed_shapes)
    for node in splits:
        check_batch(node, shapes, replicas)
    order = {node: i for i, node in enumerate(graph.topological_order())}
    observers = {node for node in graph if is_observer(node)}
    dependent = forward_closure(splits, control=False, stop=lambda node: node in observers)
    updates = [u for node in sorted(dependent, key=order.__getitem__) if (u := _update_op(node, dependent))]
    if not updates:
        raise InvalidGraphError("no update op reads the split inputs: nothing to train data-parallel",
                                hint="the graph needs optimizer updates (Apply*/ResourceApply*) or Assign* "
                                     "ops whose values come from --split inputs")
    for update in updates:
        for slot in update.averaged:
            dtype = dtype_of(update.node.inputs[slot]).base
            if not dtype.is_floating:
                raise InvalidGraphError(f"node '{update.node.name}' ({update.node.op}): input {slot} is {dtype.name}; "
                                        f"only floating values are averaged across replicas")
    variables = [node for node in graph if node.op in VARIABLE_OPS]
    losses = find_losses(graph, loss_names, set(graph), dependent, shapes, observers)
    losses.sort(key=lambda ref: order[ref.node])
    return TrainingStructure(graph, splits, dependent, variables, updates, observers, losses, shapes, order)
