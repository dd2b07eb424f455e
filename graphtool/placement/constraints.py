"""Where a colocation group may go: requested devices, kernel availability and soft placement.

For one group the allowed devices are those (a) where every member's op has a kernel and (b) that
match the members' requested devices merged into one specification (TensorFlow's MergeDevNames:
`/device:GPU:*` and `/device:GPU:1` merge to `/device:GPU:1`; `CPU:0` and `GPU:0` conflict).

With soft placement (the default) an unsatisfiable request is relaxed: first any device of the
requested type, then any device with kernels; conflicting fields inside a group are dropped.
Every member that ends up elsewhere than it asked is reported with the reason.
Without soft placement, an unsatisfiable request or a colocation conflict is an InvalidGraphError
(exit 3: the graph's constraints cannot hold on these devices), naming the node(s) and devices.
A node whose op has no kernel on any of the devices is an InvalidGraphError either way; a node
whose op dftool does not know at all (opaque) is not checked.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from ..errors import InvalidGraphError, UsageError
from ..ir import Graph, Node
from .colocation import ColocationGroup
from .device_names import DeviceName, canonical_device_name, matches, parse_device_name, short_device_name

PLACEABLE_TYPES = ("CPU", "GPU")
LOCAL = DeviceName(job="localhost", replica=0, task=0)
# Ops the session feeds, reads or routes itself: they need no kernel on any device.
_RUN_ANYWHERE_OPS = frozenset({"Placeholder", "PlaceholderV2", "_Arg", "_Retval", "_FedOutputs",
                               "_Send", "_Recv", "_HostSend", "_HostRecv"})
_FIELDS = ("job", "replica", "task", "type", "index")
_SOFT_HINT = "soft placement (the default; drop --no-soft-placement) would pick another device"


@lru_cache(maxsize=None)   # place() clears it, so kernels registered since then count
def op_runs_on(op: str, device_type: str) -> bool:
    """Whether an `op` node can run on a device of `device_type` (control flow runs anywhere).
    An op the registry does not know (an opaque node) is not checked: where its kernels are is
    unknown, so it stays where it asks or goes with its neighbours (place.py)."""
    from ..exec.kernels import has_kernel
    from ..exec.plan import runs_without_kernel
    from ..ops import registry

    return op in _RUN_ANYWHERE_OPS or registry.lookup(op) is None or runs_without_kernel(op) or has_kernel(op, device_type)


def requested_device(node: Node) -> DeviceName | None:
    """The node's device constraint, None when it has none; InvalidGraphError for a bad name."""
    if not node.device.strip():
        return None
    try:
        return parse_device_name(node.device)
    except UsageError:
        raise InvalidGraphError(f"node '{node.name}': bad device name '{node.device}'",
                                hint="use e.g. /device:CPU:0 or /job:localhost/replica:0/task:0/device:GPU:1") from None


def available_devices(graph: Graph, devices: list[str] | None) -> list[str]:
    """Canonical full names of the devices to place on, sorted (CPU before GPU, by index).

    None means the devices the graph's nodes name (a partial spec counts as its canonical
    completion, e.g. `/device:GPU:*` as GPU:0) plus cpu:0."""
    if devices is None:
        named = {spec.completed() for node in graph.nodes if (spec := requested_device(node)) is not None}
        # Only devices that can exist here: local ones of a known type (others get softened).
        wanted = {name.to_string() for name in named if name.type in PLACEABLE_TYPES and matches(LOCAL, name)}
        wanted.add(canonical_device_name("cpu:0"))
    else:
        if not devices:
            raise UsageError("no devices to place on", hint="e.g. --devices cpu:0,cpu:1")
        wanted = {_checked_device(text) for text in devices}
    return sorted(wanted, key=_device_order)


def _checked_device(text: str) -> str:
    name = parse_device_name(text).completed()
    if name.type not in PLACEABLE_TYPES:
        raise UsageError(f"unknown device '{text}': device type {name.type} is not one of "
                         f"{', '.join(PLACEABLE_TYPES)}")
    return name.to_string()   # any job and task: placing on a cluster's devices needs no cluster


def _device_order(full_name: str):
    name = parse_device_name(full_name)
    return (name.job, name.replica, name.task, PLACEABLE_TYPES.index(name.type) if name.type in
            PLACEABLE_TYPES else len(PLACEABLE_TYPES), name.type, name.index)


def device_type(full_name: str) -> str:
    """The type of a full device name (the devices placement chooses among, and puts nodes on)."""
    type_ = parse_device_name(full_name).type
    assert type_ is not None, f"not a full device name: '{full_name}'"
    return type_


@dataclass
class GroupConstraint:
    """The devices one group may go to, and why when that is fewer than all."""

    candidates: list[str]
    constrained: bool                 # some member requests a device
    soften_why: dict[Node, str] = field(default_factory=dict)   # member -> why its request may be relaxed


def resolve_group(group: ColocationGroup, devices: list[str], soft: bool) -> GroupConstraint:
    """The allowed devices of `group` (see the module docstring); raises when none fits."""
    requests = {m: spec for m in group.members if (spec := requested_device(m)) is not None}
    capable = [d for d in devices if all(op_runs_on(m.op, device_type(d)) for m in group.members)]
    if not capable:
        raise _no_kernel_error(group, devices)
    merged, conflict = _merge(requests)
    if conflict and not soft:
        raise _conflict_error(group, *conflict)
    matching = [d for d in capable if matches(merged, d)]
    why = {m: _why_not_honoured(m, spec, group, requests, devices, capable) for m, spec in requests.items()}
    if matching:
        return GroupConstraint(matching, bool(requests), why)
    # A collective member's device is its place in its group: moved, the group would lose a
    # member (or gain two on one device), so soft placement does not move it.
    pinned = [m for m in requests if _is_collective(m)]
    if not soft or pinned:
        unsatisfied = [m for m, spec in requests.items() if not any(matches(spec, d) for d in capable)]
        member = (pinned or unsatisfied or list(requests))[0]
        raise InvalidGraphError(f"node '{member.name}' ({member.op}) requests device '{member.device}', but "
                                f"{why[member]}",
                                hint="a collective's device is its rank in its group, so it is never moved"
                                if pinned else _SOFT_HINT)
    for relaxed in (replace(merged, index=None), DeviceName()):
        matching = [d for d in capable if matches(relaxed, d)]
        if matching:
            return GroupConstraint(matching, bool(requests), why)
    raise AssertionError("capable devices exist, so the empty spec matches one")  # pragma: no cover


def _is_collective(node: Node) -> bool:
    from ..ops import registry

    spec = registry.lookup(node.op)
    return spec is not None and spec.family == "collective"


def _merge(requests: dict[Node, DeviceName]):
    """One spec every request agrees with; a disagreeing field is dropped (soft placement) and the
    first disagreement is returned as (node, other node)."""
    merged: dict[str, Any] = {}   # DeviceName field -> its value (a str or an int, per field)
    setter: dict[str, Node] = {}
    dropped: set[str] = set()
    conflict = None
    for node, spec in requests.items():
        for name in _FIELDS:
            value = getattr(spec, name)
            if value is None or name in dropped:
                continue
            if name in merged and merged[name] != value:
                conflict = conflict or (setter[name], node)
                dropped.add(name)
                merged.pop(name)
                if name == "type":   # another type's index means nothing
                    dropped.add("index")
                    merged.pop("index", None)
                continue
            merged[name], setter[name] = value, node
    return DeviceName(**merged), conflict


def _why_not_honoured(member: Node, spec: DeviceName, group: ColocationGroup, requests: dict,
                      devices: list[str], capable: list[str]) -> str:
    """Why `member`'s own request could be relaxed (used only if it is)."""
    if not any(matches(spec, d) for d in devices):
        return f"no available device matches it (devices: {', '.join(short_device_name(d) for d in devices)})"
    wanted = [d for d in devices if matches(spec, d)]
    if not any(op_runs_on(member.op, device_type(d)) for d in wanted):
        return f"op {member.op} has no kernel on {', '.join(short_device_name(d) for d in wanted)}"
    if not any(matches(spec, d) for d in capable):
        lacking = next(m for m in group.members if not any(op_runs_on(m.op, device_type(d)) for d in wanted))
        return (f"it is colocated with '{lacking.name}' ({group.why_joined(lacking) or 'same group'}), "
                f"whose op {lacking.op} has no kernel there")
    for other, other_spec in requests.items():
        if other is not member and not any(matches(spec, d) and matches(other_spec, d) for d in capable):
            return f"it is colocated with '{other.name}', which requests '{other.device}'"
    return "soft placement chose another device"


def _no_kernel_error(group: ColocationGroup, devices: list[str]) -> InvalidGraphError:
    names = ", ".join(short_device_name(d) for d in devices)
    for member in group.members:
        if not any(op_runs_on(member.op, device_type(d)) for d in devices):
            return InvalidGraphError(f"node '{member.name}': op {member.op} has no kernel on any of the "
                                     f"devices {names}", hint="add a device type that implements it")
    a, b = _kernel_disagreement(group, devices)
    return InvalidGraphError(f"colocation conflict: '{a.name}' ({a.op}) and '{b.name}' ({b.op}) must share a "
                             f"device ({group.why_joined(b) or group.why_joined(a)}), but no device among "
                             f"{names} has kernels for both")


def _kernel_disagreement(group: ColocationGroup, devices: list[str]) -> tuple[Node, Node]:
    types = {device_type(d) for d in devices}
    runs = {m: {t for t in types if op_runs_on(m.op, t)} for m in group.members}
    for a in group.members:
        for b in group.members:
            if not runs[a] & runs[b]:
                return a, b
    return group.members[0], group.members[-1]


def _conflict_error(group: ColocationGroup, first: Node, second: Node) -> InvalidGraphError:
    return InvalidGraphError(
        f"colocation conflict: node '{first.name}' requests '{first.device}' but node '{second.name}' "
        f"requests '{second.device}', and they must share a device "
        f"({group.why_joined(second) or group.why_joined(first)})", hint=_SOFT_HINT)
