"""What a plan knows about a collective node before any step: its group, its rank, its op."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidGraphError
from ...ir import Graph, Node
from ...partition.collectives import DEVICES_ATTR, KINDS, SOURCE_ATTR, member_keys, resolve_collective_groups
from ...placement.device_names import canonical_device_name


@dataclass(frozen=True)
class CollectiveSpec:
    node: str
    op: str
    kind: str                   # reduce, reduce_scatter, gather, all_to_all, broadcast
    devices: tuple[str, ...]    # the group's devices in rank order
    rank: int
    group_key: int
    instance_key: int
    dtype: np.dtype
    merge: str = "Add"
    final: str = "Id"
    source: int = 0             # a broadcast's sending rank
    timeout: float = 0.0        # seconds; 0: wait as long as the step does
    declared_shape: tuple | None = None   # a v1 broadcast receiver's `shape` attr
    receives: bool = False      # a broadcast receiver (it has no data input)

    @property
    def title(self) -> str:
        """'collective group 1 instance 7': how errors and rendezvous keys name the instance."""
        return f"collective group {self.group_key} instance {self.instance_key}"


def resolve_if_needed(graph: Graph, default_device: str) -> None:
    """Resolve the groups of `graph` unless partitioning did (a graph run whole on one device:
    groups of one, or an error naming a group that needs more devices)."""
    if any(node.op in KINDS and not node.has_attr(DEVICES_ATTR) for node in graph.nodes):
        resolve_collective_groups(graph, default_device)


def bind(graph: Graph, node: Node, device_name: str) -> CollectiveSpec:
    """The spec of a collective `node` (its group resolved already) running on its device, or on
    `device_name` when it names none."""
    devices = tuple(node.attr(DEVICES_ATTR))
    here = canonical_device_name(node.device.strip() or device_name)
    if here not in devices:
        raise InvalidGraphError(f"node '{node.name}' ({node.op}) runs on {here}, which is not in its group "
                                f"({', '.join(devices)})", hint="resolve the groups after placement")
    keys = member_keys(graph, node)
    kind = KINDS[node.op]
    declared = None
    if node.op == "CollectiveBcastRecv":
        shape = node.attr("shape")
        if not shape.fully_defined:
            raise InvalidGraphError(f"node '{node.name}' ({node.op}): its shape attr {shape} is not fully defined")
        declared = tuple(int(d) for d in shape.dims)
    return CollectiveSpec(
        node=node.name, op=node.op, kind=kind, devices=devices, rank=devices.index(here),
        group_key=keys.group_key, instance_key=keys.instance_key, dtype=np.dtype(node.attr("T").numpy_dtype),
        merge=node.attr("merge_op", "Add") if "merge_op" in node.attrs else "Add",
        final=node.attr("final_op", "Id") if "final_op" in node.attrs else "Id",
        source=int(node.attr(SOURCE_ATTR)) if node.has_attr(SOURCE_ATTR) else 0,
        timeout=float(node.attr("timeout_seconds", 0.0) or 0.0),
        declared_shape=declared, receives=node.op in ("CollectiveBcastRecv", "CollectiveBcastRecvV2"))
