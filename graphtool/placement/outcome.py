"""What a placer's choices come to: every node's device and the PlacementReport saying why.

The placers (greedy.py, random_placer.py) choose one device per colocation group and a reason
for it; placement_report() sets nothing, it describes: each group's first node carries the reason,
the other members 'colocation', requests soft placement did not honour are listed, and the
estimated cost (compute per device, transfers) is that of the graph as placed.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..ir import Graph, Node
from .colocation import ColocationGroup
from .constraints import GroupConstraint, device_type
from .cost_model import CostEstimator, CostModel
from .device_names import matches, parse_device_name
from .report import Candidate, NodePlacement, PlacementReport, Softened

# A group's decision: (reason, detail, candidates considered), see report.py for the reasons.
Decision = tuple[str, str, list[Candidate]]


def forced_reason(group: ColocationGroup, constraint: GroupConstraint) -> tuple[str, str]:
    """Why a group that may go to one device only went there."""
    if constraint.constrained:
        requests = sorted({m.device for m in group.members if m.device})
        return "constraint", "requested " + ", ".join(f"'{r}'" for r in requests)
    return "kernel", "the only device with kernels for its ops"


def placement_report(graph: Graph, assigned: dict[ColocationGroup, str], decisions: dict[ColocationGroup, Decision],
                     requested: dict[Node, str], constraints: dict[ColocationGroup, GroupConstraint],
                     estimator: CostEstimator, devices: Sequence[str], model: CostModel, soft: bool,
                     explain: bool) -> PlacementReport:
    """The report on `graph` as placed: `assigned` device and `decisions` per group, `requested`
    the nodes' devices before placement."""
    nodes = {}
    softened = []
    for group, device in assigned.items():
        reason, detail, candidates = decisions[group]
        for member in group.members:
            if member is group.leader:
                nodes[member] = NodePlacement(member.name, member.op, device, reason, detail,
                                              candidates if explain else [])
            else:
                nodes[member] = NodePlacement(member.name, member.op, device, "colocation",
                                              f"with '{group.leader.name}': {group.why_joined(member)}", [])
            soft_entry = _softened(member, requested[member], device, constraints[group])
            if soft_entry is not None:
                softened.append(soft_entry)
    load, transfer = estimated_cost(graph, estimator, devices)
    return PlacementReport(devices=list(devices), nodes=[nodes[n] for n in graph.nodes],
                           opaque=[n.name for n in graph.nodes if n.spec is None],
                           softened=sorted(softened, key=lambda s: s.node), device_load=load,
                           transfer_seconds=transfer, soft_placement=soft, cost_model=model.source,
                           explain=explain)


def _softened(node: Node, requested: str, chosen: str, constraint: GroupConstraint) -> Softened | None:
    """The report entry for a node placed elsewhere than it asked, else None."""
    why = constraint.soften_why.get(node)
    if why is None or matches(parse_device_name(requested), chosen):
        return None
    return Softened(node.name, requested, chosen, why)


def estimated_cost(graph: Graph, estimator: CostEstimator,
                   devices: Sequence[str] = ()) -> tuple[dict[str, float], float]:
    """(seconds of compute per device, seconds of transfers) of the graph as it is placed."""
    load: dict[str, float] = {device: 0.0 for device in devices}
    moves: dict[tuple, float] = {}
    for node in graph.nodes:
        dst = device_type(node.device)
        load[node.device] = load.get(node.device, 0.0) + estimator.compute(node, dst)
        for ref in node.inputs:
            if ref.node.device != node.device:
                moves[(ref, node.device)] = estimator.transfer(estimator.tensor_bytes(ref), ref.node.device,
                                                               node.device)
        for control in node.control_inputs:
            if control.device != node.device:
                moves[(control, node.device)] = estimator.transfer(0, control.device, node.device)
    return load, sum(moves.values())
