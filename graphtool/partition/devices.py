"""Device names as partitioning needs them: every node placed on exactly one device, written in
one canonical spelling, plus a short label per device for node and file names.

    before: a (device "cpu:1"), b (device "/device:CPU:1"), c (device "")
    canonicalize_devices(graph)  -> InvalidGraphError: node 'c' (Const) has no device
    after placing c:  a and b both read "/job:localhost/replica:0/task:0/device:CPU:1"
"""
from __future__ import annotations

import re

from ..errors import DftoolError, InvalidGraphError
from ..ir import Graph, Node
from ..placement.device_names import parse_device_name, short_device_name

_PLACE_HINT = "run dftool place first"


def canonicalize_devices(graph: Graph) -> list[str]:
    """Rewrite every node's device to its full canonical name; return the devices in the order
    they first appear. A node without a device, or whose device does not name one concrete device
    (`gpu`, `/device:CPU:*`), is an InvalidGraphError naming the first such node."""
    devices: dict[str, None] = {}
    for node in graph.nodes:
        node.device = canonical_device_of(node)
        devices[node.device] = None
    return list(devices)


def canonical_device_of(node: Node) -> str:
    """The canonical full name of `node`'s device (the node is not changed); InvalidGraphError
    when it has none or names no single device."""
    where = f"node '{node.name}' ({node.op})"
    if not node.device.strip():
        raise InvalidGraphError(f"{where} has no device", hint=_PLACE_HINT)
    try:
        parsed = parse_device_name(node.device)
    except DftoolError as exc:
        raise InvalidGraphError(f"{where}: {exc}", hint=_PLACE_HINT) from None
    # A missing job/replica/task means the local task, as everywhere in dftool; a missing type
    # or index (or `*`) would leave the choice between devices open.
    if parsed.type is None or parsed.index is None:
        raise InvalidGraphError(f"{where} has device '{node.device}', which does not name one device",
                                hint=_PLACE_HINT)
    return parsed.completed().to_string()


def device_labels(devices: list[str]) -> dict[str, str]:
    """A short name per device usable in node and file names: its short name made safe ('cpu_0',
    'worker_1_cpu_0' for task 1 of job worker); should two still clash, the job, replica and task
    are put in front."""
    shorts = {device: short_device_name(device).replace(":", "_") for device in devices}
    clashing = {s for s in shorts.values() if list(shorts.values()).count(s) > 1}
    labels = {}
    for device, short in shorts.items():
        if short in clashing:
            parsed = parse_device_name(device)
            short = f"{parsed.job}_{parsed.replica}_{parsed.task}_{short}"
        labels[device] = re.sub(r"[^A-Za-z0-9_.\-]", "_", short)
    return labels
