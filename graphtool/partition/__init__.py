"""Partitioning: one subgraph per device, joined by `_Send`/`_Recv` pairs (`dftool partition`).

    >>> report = partition(graph)                 # every node placed; mutates `graph`
    >>> parts = split_by_device(graph)            # {device: Graph}, each valid on its own

    before: x (cpu:0) -> MatMul (cpu:1) -> y (cpu:1)
    after:  x -> x/_send_to_cpu_1 (cpu:0) ┄┄ x/_recv_on_cpu_1 (cpu:1) -> MatMul -> y

The steps, each in its own module:
1. devices.py: every node must carry a device; names are made canonical.
2. normalize.py: Enter and NextIteration nodes move to the devices that consume them, so no
   edge is cut between a value and the frame or iteration it is handed to.
3. control_flow.py: every device taking part in a loop that spans devices gets a control
   skeleton of the loop, driven by the predicate the loop's LoopCond device sends it.
4. edges.py: every cross-device data and control edge becomes a Send/Recv pair (compress.py
   narrows float32 transfers with --compress).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import DftoolError, InvalidGraphError
from ..ir import Graph, from_graphdef, to_graphdef
from ..proto.graph_pb2 import GraphDef
from ..shape_inference import ShapeResult, infer_shapes
from .collectives import resolve_collective_groups
from .compress import COMPRESSED_DTYPES, Compressor, compressed_dtype
from .control_flow import LoopSkeletons
from .devices import canonical_device_of, canonicalize_devices, device_labels
from .edges import SEND_DEVICE_INCARNATION, EdgeCutter, Transfer, crossing_edges
from .normalize import Relocation, relocate_loop_plumbing

TRANSFER_OPS = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv"})


@dataclass
class DevicePartition:
    """What one device ends up with."""

    device: str
    label: str
    nodes: int
    sends: int
    recvs: int
    frames: list[str]     # loop frames this device holds a control skeleton of


@dataclass
class PartitionReport:
    devices: list[DevicePartition]
    transfers: list[Transfer]
    control_edges: int                        # cross-device control edges carried
    skeletons: dict[str, list[str]]           # frame -> devices given a control skeleton
    relocation: Relocation = field(default_factory=Relocation)
    compress: str = "none"

    @property
    def sends(self) -> int:
        return len(self.transfers)

    @property
    def recvs(self) -> int:
        return len(self.transfers)

    def bytes(self) -> dict:
        """Bytes moved by one execution of each transfer whose shape is fully known (a transfer
        inside a loop moves that much per iteration)."""
        known = [(t.bytes_sent, t.bytes_uncompressed) for t in self.transfers if t.elements is not None]
        sent = sum(s for s, _ in known if s is not None)   # (both are known with the shape)
        uncompressed = sum(u for _, u in known if u is not None)
        return {"sent": sent, "uncompressed": uncompressed, "saved": uncompressed - sent,
                "transfers_of_unknown_size": len(self.transfers) - len(known)}

    def to_dict(self) -> dict:
        """The JSON report's body (see cli/partition_cmd.py)."""
        return {
            "devices": [vars(d) for d in self.devices],
            "sends": self.sends, "recvs": self.recvs,
            "control_edges": self.control_edges,
            "control_transfers": sum(t.is_control for t in self.transfers),
            "frames": self.skeletons,
            "moved": self.relocation.moved, "copied": self.relocation.copied,
            "compress": self.compress, "bytes": self.bytes(),
            "transfers": [{"tensor_name": t.tensor_name, "carries": t.carries, "send": t.send.name,
                           "recv": t.recv.name, "from": t.send.device, "to": t.recv.device,
                           "frame": t.frame, "dtype": t.sent_dtype.name, "bytes": t.bytes_sent}
                          for t in self.transfers],
        }


def partition(graph: Graph, *, compress: str = "none", compress_across_tasks_only: bool = False) -> PartitionReport:
    """Cut `graph` (modified in place) into per-device parts joined by `_Send`/`_Recv` pairs.

    Every node must carry a device (InvalidGraphError naming the first that does not: run
    `dftool place` first); short or partial names (`cpu:1`, `/device:CPU:1`) are made canonical.
    `compress` is 'none', 'bf16' or 'fp16' (float32 transfers travel as that type; with
    `compress_across_tasks_only`, only those between two tasks of a cluster). A graph
    without cross-device edges (one device, or partitioned already) is left as it is."""
    compressed_dtype(compress)  # a bad mode fails before anything changes
    graph.verify()
    devices = canonicalize_devices(graph)
    resolve_collective_groups(graph)   # members learn their peers while the whole graph is here
    labels = device_labels(devices)
    data, control = crossing_edges(graph)
    if not data and not control:
        return _report(graph, labels, [], 0, None, Relocation(), compress)
    relocation = relocate_loop_plumbing(graph, labels)
    skeletons = LoopSkeletons(graph, labels)
    skeletons.build()
    cutter = EdgeCutter(graph, labels, skeletons, Compressor(graph, compress, compress_across_tasks_only), _shapes(graph))
    cutter.cut_all()
    graph.verify()
    return _report(graph, labels, cutter.transfers, cutter.control_edges, skeletons, relocation, compress)


def split_by_device(graph: Graph) -> dict[str, Graph]:
    """One graph per device (canonical full name -> Graph, in order of first appearance), each
    passing verify() on its own. The graph must be partitioned: an edge between devices is an
    InvalidGraphError naming it."""
    device_of = {node.name: canonical_device_of(node) for node in graph.nodes}
    data, control = crossing_edges(graph)
    for consumer, producer in [(c, ref.node) for c, _, ref in data] + control:
        if device_of[consumer.name] != device_of[producer.name]:
            raise InvalidGraphError(f"edge '{producer.name}' -> '{consumer.name}' crosses from "
                                    f"{producer.device} to {consumer.device}",
                                    hint="run dftool partition first")
    whole = to_graphdef(graph)
    header = GraphDef()            # versions, library, debug info: every part gets them
    header.CopyFrom(whole)
    del header.node[:]
    parts: dict[str, GraphDef] = {}
    for node_def in whole.node:
        device = device_of[node_def.name]
        if device not in parts:
            parts[device] = GraphDef()
            parts[device].CopyFrom(header)
        added = parts[device].node.add()
        added.CopyFrom(node_def)
        added.device = device
    return {device: from_graphdef(part, f"partition for {device}") for device, part in parts.items()}


def _shapes(graph: Graph) -> ShapeResult:
    """Inferred shapes for the `_output_shapes` hints; none when inference itself fails."""
    try:
        return infer_shapes(graph)
    except DftoolError:
        return ShapeResult()


def _report(graph, labels, transfers, control_edges, skeletons, relocation, compress) -> PartitionReport:
    nodes = Counter(n.device for n in graph.nodes)
    sends = Counter(n.device for n in graph.nodes if n.op in ("_Send", "_HostSend"))
    recvs = Counter(n.device for n in graph.nodes if n.op in ("_Recv", "_HostRecv"))
    frames = skeletons.by_frame() if skeletons else {}
    per_device = [DevicePartition(device, label, nodes[device], sends[device], recvs[device],
                                  [f for f, held in frames.items() if device in held])
                  for device, label in labels.items()]
    return PartitionReport(per_device, transfers, control_edges, frames, relocation, compress)


__all__ = ["COMPRESSED_DTYPES", "DevicePartition", "PartitionReport", "SEND_DEVICE_INCARNATION",
           "TRANSFER_OPS", "Transfer", "device_labels", "partition", "split_by_device"]
