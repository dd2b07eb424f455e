"""Cloning the training graph once per replica into a new graph.

Which nodes are per replica: in allreduce mode every variable and everything that reads a variable
or a split input (through data or control edges); in ps mode only what reads a split input, up to
the update ops, which stay single beside the variables. Observers (savers, summaries) and the rest
(constants, initial values, random initializers, restore ops) stay single, on the shared device, so
a random initial value is drawn once and every replica assigns the same one.

Names: replica 0 keeps the original names (variables and all, so savers, checkpoints and fetches
of variables keep working); replica i > 0 lives under `PREFIX_i/`. A node whose original name must
mean all replicas (the loss: their mean; a sink such as `init` or `train`: all of them) is "fronted":
its replica 0 copy moves to `PREFIX_0/name` and the name goes to a front node (fronts.py).

    before: x -> MatMul(x, w/read) -> loss          train = Apply(w, lr, grad)
    after:  x -> Split -> MatMul(x:0, w/read) -> PREFIX_0/loss --+
                     \\-> PREFIX_1/MatMul(x:1, PREFIX_1/w/read) -> PREFIX_1/loss --+-> loss = mean
"""
from __future__ import annotations

from typing import Any

from .. import dtypes
from ..dtypes import int32
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef
from ..ops.opaque import dtype_of
from .devices import ReplicaDevices
from .emit import Emitter
from .structure import VARIABLE_OPS, TrainingStructure, forward_closure

_FRAME_OPS = frozenset({"Enter", "RefEnter"})
_SHARED_NAME_OPS = VARIABLE_OPS


def replica_prefix(graph: Graph) -> str:
    """`replica`, unless the graph already has names under `replica_<k>/` (then a longer one)."""
    for candidate in ("replica", "dp_replica", "replicate_replica"):
        if not any(node.name.startswith(f"{candidate}_") for node in graph):
            return candidate
    raise InvalidGraphError("the graph already uses every replica name prefix (replica_, dp_replica_, "
                            "replicate_replica_)")


def replicated_nodes(structure: TrainingStructure, mode: str) -> set[Node]:
    observers = structure.observers
    splits = set(structure.splits)
    if mode == "allreduce":
        excluded = observers | splits
        seeds = [*structure.variables, *structure.splits]
        reached = forward_closure(seeds, control=True, stop=excluded.__contains__) | set(structure.variables)
    else:
        excluded = observers | splits | structure.update_nodes
        reached = forward_closure(structure.splits, control=True, stop=excluded.__contains__)
    return _complete(structure.graph, reached, excluded | set(structure.variables))


def _complete(graph: Graph, replicated: set[Node], excluded: set[Node]) -> set[Node]:
    """What else must be per replica once part of it is, to a fixed point:
    - a while loop that computes anything per replica, whole (its counter too): each replica runs
      its own loop, in its own frame, on its device;
    - a resource other than a variable (a gradient loop's stack, a TensorArray) that a replica
      uses: each replica pushes and pops its own."""
    frames = [frame for frame in graph.frames().frames.values() if not frame.is_root]
    changed = True
    while changed:
        changed = False
        new: set[Node] = set()
        for frame in frames:
            members = set(frame.nodes) | set(frame.enters) | set(frame.exits)
            if members & replicated:
                new |= members - replicated - excluded
        for node in graph:
            if node not in replicated and node not in excluded and _makes_resource(node) \
                    and any(user in replicated for user in node.consumers()):
                new.add(node)
        if new:
            replicated |= new
            replicated |= forward_closure(new, control=True, stop=excluded.__contains__)
            changed = True
    return replicated


def _makes_resource(node: Node) -> bool:
    return any(dtype_of(ref).base in (dtypes.resource, dtypes.variant) for ref in node.outputs)


class ReplicaCloner:
    """Builds the output graph: copies, singles, split slices and the wiring between them. The
    averaging and the fronts are added afterwards through `tensor`, `copy` and `original`."""

    def __init__(self, structure: TrainingStructure, mode: str, devices: ReplicaDevices, fronted: set[Node]):
        self.src = structure.graph
        self.structure = structure
        self.devices = devices
        self.count = len(devices.replicas)
        self.replicated = replicated_nodes(structure, mode)
        self.fronted = fronted
        self.prefix = replica_prefix(self.src)
        self.out = Graph()
        self.out.versions.CopyFrom(self.src.versions)
        self.out.deprecated_version = self.src.deprecated_version
        self.out.library.CopyFrom(self.src.library)
        self.emit = Emitter(self.out)
        self.copies: dict[Node, list[Node]] = {}
        self.single: dict[Node, Node] = {}
        self.fronts: dict[Node, Node] = {}
        self.splits: dict[Node, Node] = {}
        self._const_copies: dict[tuple[Node, int], Node] = {}

    # --- names and devices ---------------------------------------------------------------------
    def copy_name(self, node: Node, replica: int) -> str:
        if replica == 0 and node not in self.fronted:
            return node.name
        return f"{self.prefix}_{replica}/{node.name}"

    def create(self) -> None:
        """Every copy and single node and the split slices, not yet wired (fronts come between)."""
        for node in self.src:
            if node in self.replicated:
                self.copies[node] = [self._add_copy(node, i) for i in range(self.count)]
            else:
                self.single[node] = self._add_single(node)
        for node in self.structure.splits:
            self.splits[node] = self._add_split(node)

    def wire(self) -> Graph:
        for node in self.src:
            if node in self.replicated:
                for i, copied in enumerate(self.copies[node]):
                    self._wire(node, copied, i)
            else:
                self._wire(node, self.single[node], None)
        return self.out

    def _add_copy(self, node: Node, replica: int) -> Node:
        copied = self.out.add_node(node.op, self.copy_name(node, replica), device=self.devices.replicas[replica])
        self._copy_attrs(node, copied, replica)
        if replica > 0:
            if node.op in _SHARED_NAME_OPS and node.attr("shared_name", ""):
                copied.set_attr("shared_name", f"{self.prefix}_{replica}/{node.attr('shared_name')}")
            if node.op in _FRAME_OPS:
                copied.set_attr("frame_name", f"{self.prefix}_{replica}/{node.attr('frame_name')}")
        # Shapes recorded for the whole batch do not hold for a replica's slice.
        copied.del_attr("_output_shapes")
        return copied

    def _add_single(self, node: Node) -> Node:
        copied = self.out.add_node(node.op, node.name, device=self.devices.shared)
        self._copy_attrs(node, copied, None)
        return copied

    def _copy_attrs(self, node: Node, copied: Node, replica: int | None) -> None:
        for key, attr in node.attrs.items():
            value = type(attr)()
            value.CopyFrom(attr)
            copied.attrs[key] = value
        for key, value in node.extras.items():
            extra: Any = type(value)()
            extra.CopyFrom(value)
            copied.extras[key] = extra
        if "_class" in node.attrs:
            kept = [entry for entry in (self._colocation(text, replica) for text in node.attr("_class")) if entry]
            if kept:
                copied.set_attr("_class", kept, "list(string)")
            else:
                copied.del_attr("_class")

    def _colocation(self, entry, replica: int | None) -> str | None:
        """`loc:@X` for the copy in `replica` (None: a single node): X's copy there, or nothing
        when X's copy is on another device (explicit devices say where everything goes)."""
        text = entry.decode() if isinstance(entry, bytes) else str(entry)
        if not text.startswith("loc:@"):
            return text
        target = self.src.get(text[len("loc:@"):])
        if target is None:
            return text
        device = self.devices.shared if replica is None else self.devices.replicas[replica]
        if target in self.replicated:
            index = 0 if replica is None else replica
            if self.devices.replicas[index] != device:
                return None
            return f"loc:@{self.copy_name(target, index)}"
        return f"loc:@{target.name}" if device == self.devices.shared else None

    def _add_split(self, node: Node) -> Node:
        """`x/replicate_split`: dim 0 of the full batch in N equal slices, slice i for replica i
        (a fed batch that does not divide is the Split's error, naming this node)."""
        dim = self.emit.const(f"{node.name}/replicate_split/dim", 0, int32, device=self.devices.shared)
        return self.emit.node("Split", f"{node.name}/replicate_split", [dim, TensorRef(self.single[node], 0)],
                              device=self.devices.shared,
                              attrs={"num_split": self.count, "T": dtype_of(node.output(0)).base})

    # --- wiring --------------------------------------------------------------------------------
    def tensor(self, ref: TensorRef, replica: int | None) -> TensorRef:
        """Where a node of `replica` (None: a single node) reads the source tensor `ref`."""
        producer = ref.node
        if producer in self.splits and replica is not None:
            return self.splits[producer].output(replica)
        if producer in self.replicated:
            if replica is not None:
                return self.copies[producer][replica].output(ref.index)
            return self.original(ref)
        if replica is not None and producer.op == "Const" and not producer.control_inputs \
                and self.devices.replicas[replica] != self.devices.shared:
            return self._const_copy(producer, replica).output(0)
        return self.single[producer].output(ref.index)

    def original(self, ref: TensorRef) -> TensorRef:
        """What the source tensor's name means in the output: the front's, else replica 0's."""
        front = self.fronts.get(ref.node)
        if front is not None:
            return front.output(ref.index)
        return self.copies[ref.node][0].output(ref.index)

    def _const_copy(self, node: Node, replica: int) -> Node:
        """A constant read by replica `replica` lives on its device too (no transfer per step)."""
        key = (node, replica)
        if key not in self._const_copies:
            copied = self.out.add_node("Const", self.out.unique_name(f"{self.prefix}_{replica}/{node.name}"),
                                       device=self.devices.replicas[replica])
            self._copy_attrs(node, copied, replica)
            self._const_copies[key] = copied
        return self._const_copies[key]

    def _wire(self, node: Node, copied: Node, replica: int | None) -> None:
        for ref in node.inputs:
            copied.add_input(self.tensor(ref, replica))
        for control in node.control_inputs:
            for target in self._control_targets(control, replica):
                copied.add_control_input(target)

    def _control_targets(self, control: Node, replica: int | None) -> list[Node]:
        if control in self.replicated:
            if replica is not None:
                return [self.copies[control][replica]]
            front = self.fronts.get(control)
            return [front] if front is not None else list(self.copies[control])
        return [self.single[control]]

    @property
    def const_copies(self) -> int:
        return len(self._const_copies)

