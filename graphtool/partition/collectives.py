"""Who takes part in each collective: the group's devices and ranks, decided from the placed graph.

TensorFlow resolves a collective's group at run time (each member announces its device to a
resolver and waits for the rest). dftool sees the whole placed graph before a step starts, as
OneFlow's compiler does, so it resolves groups statically: the members of group `group_key` are
the collective nodes with that key, one per device; their devices in canonical order (job,
replica, task, type, index; TensorFlow's resolver sorts the same way) give the ranks. Each member
is stamped with the result (`_collective_devices`, and `_collective_source` for a broadcast: the
sender's rank), which survives partitioning and registration on cluster workers, so every
executor knows its peers without asking anyone.

Everything a member can get wrong that the graph shows is refused here, before any step runs,
naming the node: keys that are not constants, a group whose node count differs from its
group_size, two members of one group on a device, members of one instance that disagree on the
operation, merge/final op or dtype, a broadcast with no sender or two. Shapes and dead inputs can
only be seen at run time; the executor checks those (exec/collective/).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidGraphError
from ..ir import Graph, Node
from ..placement.device_names import canonical_device_name, device_order

DEVICES_ATTR = "_collective_devices"
SOURCE_ATTR = "_collective_source"

# op -> what it computes (members of one instance must agree on it)
KINDS = {
    "CollectiveReduce": "reduce", "CollectiveReduceV2": "reduce",
    "CollectiveReduceScatterV2": "reduce_scatter",
    "CollectiveGather": "gather", "CollectiveGatherV2": "gather",
    "CollectiveAllToAllV2": "all_to_all",
    "CollectiveBcastSend": "broadcast", "CollectiveBcastRecv": "broadcast",
    "CollectiveBcastSendV2": "broadcast", "CollectiveBcastRecvV2": "broadcast",
}
COLLECTIVE_OPS = frozenset(KINDS)
_V2_KEY_INPUTS = {"CollectiveBcastRecvV2": 0}   # index of group_size; the other v2 ops: 1
_KEYS = ("group_size", "group_key", "instance_key")


def is_collective(node: Node) -> bool:
    return node.op in COLLECTIVE_OPS


def is_broadcast_sender(node: Node) -> bool:
    return node.op in ("CollectiveBcastSend", "CollectiveBcastSendV2")


@dataclass(frozen=True)
class Keys:
    """A member's group_size, group_key and instance_key."""

    group_size: int
    group_key: int
    instance_key: int


def member_keys(graph: Graph, node: Node) -> Keys:
    """The three keys: attrs of a v1 op, constant inputs of a v2 op (through Identity nodes and
    Send/Recv pairs); InvalidGraphError naming the node when an input is not a constant."""
    if not node.op.endswith("V2"):
        return Keys(*(int(node.attr(key)) for key in _KEYS))
    first = _V2_KEY_INPUTS.get(node.op, 1)
    values = [_constant_scalar(graph, node, first + i, key) for i, key in enumerate(_KEYS)]
    return Keys(*values)


def _constant_scalar(graph: Graph, node: Node, index: int, what: str) -> int:
    if index >= len(node.inputs):
        raise InvalidGraphError(f"node '{node.name}' ({node.op}) has no input {index} ({what})")
    producer = _through_forwarding(graph, node.inputs[index].node)
    if producer.op not in ("Const", "HostConst"):
        raise InvalidGraphError(f"node '{node.name}' ({node.op}): its {what} (input {index}) comes from "
                                f"'{producer.name}' ({producer.op}), not a constant",
                                hint="dftool resolves collective groups before running, so group_size, "
                                     "group_key and instance_key must be Const nodes")
    value = np.asarray(producer.attr("value"))
    if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
        raise InvalidGraphError(f"node '{node.name}' ({node.op}): its {what} (from '{producer.name}') must be an "
                                f"integer scalar, got {value.dtype}{list(value.shape)}")
    return int(value.reshape(()))


def _through_forwarding(graph: Graph, node: Node) -> Node:
    """The node whose value `node` forwards: Identity chains, a loop's Enter of a value from
    outside, and a _Recv's peer _Send's input."""
    seen = 0
    while seen < 1000:
        seen += 1
        if node.op in ("Identity", "Snapshot", "Enter", "RefEnter") and node.inputs:
            node = node.inputs[0].node
        elif node.op in ("_Recv", "_HostRecv"):
            peer = _peer_send(graph, node)
            if peer is None or not peer.inputs:
                return node
            node = peer.inputs[0].node
        else:
            return node
    return node


def _peer_send(graph: Graph, recv: Node) -> Node | None:
    wanted = (recv.attr("tensor_name"), recv.attr("send_device"), recv.attr("recv_device"))
    for node in graph.nodes:
        if node.op in ("_Send", "_HostSend") and \
                (node.attr("tensor_name"), node.attr("send_device"), node.attr("recv_device")) == wanted:
            return node
    return None


def instance_members(graph: Graph) -> dict[tuple[int, int], list[Node]]:
    """The collective nodes of `graph` by (group_key, instance_key): what must run together."""
    members: dict[tuple[int, int], list[Node]] = {}
    for node in graph.nodes:
        if is_collective(node):
            keys = member_keys(graph, node)
            members.setdefault((keys.group_key, keys.instance_key), []).append(node)
    return members


@dataclass
class _Member:
    node: Node
    device: str
    keys: Keys


def resolve_collective_groups(graph: Graph, default_device: str | None = None) -> int:
    """Stamp every collective node of `graph` with its group's devices in rank order (and a
    broadcast's sender rank); returns how many nodes were stamped. Nodes without a device count
    as `default_device`. Raises InvalidGraphError for a group the graph cannot form."""
    members = []
    for node in graph.nodes:
        if not is_collective(node):
            continue
        text = node.device.strip() or default_device
        if not text:
            raise InvalidGraphError(f"node '{node.name}' ({node.op}) has no device",
                                    hint="place the graph first: a collective's rank comes from its device")
        try:
            device = canonical_device_name(text)
        except Exception as exc:   # a malformed name: the message names it
            raise InvalidGraphError(f"node '{node.name}' ({node.op}): {exc}") from None
        members.append(_Member(node, device, member_keys(graph, node)))
    groups: dict[int, list[_Member]] = {}
    for member in members:
        groups.setdefault(member.keys.group_key, []).append(member)
    for group_key, group in groups.items():
        devices = _group_devices(group_key, group)
        instances: dict[int, list[_Member]] = {}
        for member in group:
            instances.setdefault(member.keys.instance_key, []).append(member)
        for instance_key, instance in instances.items():
            source = _check_instance(group_key, instance_key, instance, devices)
            for member in instance:
                member.node.set_attr(DEVICES_ATTR, list(devices), kind="list(string)")
                if source is not None:
                    member.node.set_attr(SOURCE_ATTR, source, kind="int")
    return len(members)


def _describe(member: _Member) -> str:
    return f"'{member.node.name}' on {member.device}"


def _group_devices(group_key: int, group: list[_Member]) -> tuple[str, ...]:
    sizes = {member.keys.group_size for member in group}
    if len(sizes) > 1:
        shown = ", ".join(f"{_describe(m)} says {m.keys.group_size}" for m in group[:4])
        raise InvalidGraphError(f"collective group {group_key}: members disagree on group_size ({shown})")
    size = sizes.pop()
    devices = tuple(sorted({member.device for member in group}, key=device_order))
    if size < 1:
        raise InvalidGraphError(f"collective group {group_key}: group_size is {size}, it must be at least 1 "
                                f"(node '{group[0].node.name}')")
    if len(devices) != size:
        names = ", ".join(devices[:8]) + (" ..." if len(devices) > 8 else "")
        raise InvalidGraphError(f"collective group {group_key} has group_size {size}, but its members run on "
                                f"{len(devices)} device(s): {names} (node '{group[0].node.name}')",
                                hint="a group needs exactly one member per device, on group_size devices; "
                                     "a member that is missing would leave the others waiting forever")
    return devices


def _check_instance(group_key: int, instance_key: int, instance: list[_Member],
                    devices: tuple[str, ...]) -> int | None:
    """Check one instance's members agree; returns the sender's rank for a broadcast."""
    where = f"collective group {group_key} instance {instance_key}"
    by_device: dict[str, _Member] = {}
    for member in instance:
        other = by_device.setdefault(member.device, member)
        if other is not member:
            raise InvalidGraphError(f"{where}: '{other.node.name}' and '{member.node.name}' both run on "
                                    f"{member.device}", hint="each member of a collective needs its own device")
    if len(by_device) != len(devices):
        missing = [d for d in devices if d not in by_device]
        raise InvalidGraphError(f"{where} has {len(by_device)} member(s) but its group has {len(devices)}: "
                                f"nothing on {', '.join(missing[:4])} (node '{instance[0].node.name}')",
                                hint="every device of the group must run a member of each instance")
    first = instance[0]
    signature = _signature(first.node)
    for member in instance[1:]:
        theirs = _signature(member.node)
        if theirs != signature:
            raise InvalidGraphError(f"{where}: {_describe(first)} is {_show(signature)} but {_describe(member)} "
                                    f"is {_show(theirs)}",
                                    hint="the members of one instance must run the same collective on the same dtype")
    if signature[0] != "broadcast":
        return None
    senders = [m for m in instance if is_broadcast_sender(m.node)]
    if len(senders) != 1:
        what = "no member sends" if not senders else \
            "several members send (" + ", ".join(_describe(m) for m in senders[:4]) + ")"
        raise InvalidGraphError(f"{where}: a broadcast needs exactly one CollectiveBcastSend; {what}")
    return devices.index(senders[0].device)


def _signature(node: Node) -> tuple:
    merge = (node.attr("merge_op", None), node.attr("final_op", None)) if "merge_op" in node.attrs else ()
    return (KINDS[node.op], node.attr("T"), *merge)


def _show(signature: tuple) -> str:
    kind, dtype, *merge = signature
    text = f"a {kind.replace('_', '-')} of {getattr(dtype, 'name', dtype)}"
    return text + (f" ({merge[0]}, {merge[1]})" if merge else "")
