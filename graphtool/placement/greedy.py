"""Placement: give every node a full device name (what `dftool place` runs).

    report = place(graph, ["cpu:0", "gpu:0"])      # sets node.device on every node
    graph.node("dense/matmul").device             # '/job:localhost/replica:0/task:0/device:GPU:0'

1. Colocation groups (colocation.py) are placed as one unit.
2. Each group's allowed devices come from requested devices, kernels and soft placement
   (constraints.py).
3. Groups are placed greedily in topological order (of their first member). For each allowed
   device d the cost of putting the group there is

       compute(d) + transfer_in(d) - parallel_credit(d)

   compute: the members' estimated (or measured) seconds on d's type (cost_model.py);
   transfer_in: moving the inputs from the devices their producers went to (latency + bytes /
   bandwidth, zero on the same device; over the network between devices of different tasks);
   parallel_credit = min(compute, busiest_load - load(d)):
   work on a less loaded device overlaps with the busiest one, so it lengthens the step by less.
   This is the greedy step of minimising `max device load + total transfer time`, which spreads
   independent heavy work and keeps cheap work where its data is. Ties go to the first device.
4. Cheap source groups (Const, Placeholder: no inputs, cheaper than a transfer) wait for their
   first consumer and go to its device; afterwards every cheap unconstrained group moves, in
   reverse topological order, to the device minimising compute + transfers in + transfers out,
   so cheap int shape arithmetic ends up next to its consumers.

The estimated total cost is `max device load + sum of cross-device transfers` (one transfer per
tensor and destination device; a control edge counts one latency).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, TensorRef
from .colocation import ColocationGroup, colocation_groups
from .constraints import GroupConstraint, available_devices, device_type, op_runs_on, resolve_group
from .cost_model import CostEstimator, CostModel
from .device_names import short_device_name
from .outcome import forced_reason, placement_report
from .report import Candidate, PlacementReport

# Cheap = cheaper on every allowed device than this many of the cheapest transfers.
_CHEAP_TRANSFERS = 2.0
_PULL_SWEEPS = 4


def place(graph: Graph, devices: list[str] | None = None, *, soft_placement: bool = True,
          cost_model: CostModel | None = None, explain: bool = False) -> PlacementReport:
    """Set every node's device to a full canonical name and report the placement (see the
    module docstring). `devices` in any spelling ('cpu:0', '/device:GPU:1'); None: the devices
    the graph names plus cpu:0. Raises UsageError for bad `devices`, InvalidGraphError for
    constraints that cannot hold (see graphtool.placement.constraints)."""
    from ..shape_inference import infer_shapes

    op_runs_on.cache_clear()
    device_list = available_devices(graph, devices)
    order = graph.topological_order()
    groups = colocation_groups(graph, order)
    constraints = {g: resolve_group(g, device_list, soft_placement) for g in groups.groups}
    model = cost_model or CostModel()
    estimator = CostEstimator(model, infer_shapes(graph))
    placer = _GreedyPlacer(groups, constraints, estimator, device_list)
    placer.run()
    requested = {n: n.device for n in graph.nodes}
    for group, device in placer.assigned.items():
        for member in group.members:
            member.device = device
    return placement_report(graph, placer.assigned, placer.decisions, requested, constraints, placer.estimator,
                            placer.devices, model, soft_placement, explain)


@dataclass(eq=False)
class _GroupEdges:
    """A group's data and control edges to other groups, each once (dicts as ordered sets)."""

    inputs: dict[tuple[TensorRef, ColocationGroup], None] = field(default_factory=dict)
    control_inputs: dict[ColocationGroup, None] = field(default_factory=dict)
    outputs: dict[tuple[TensorRef, ColocationGroup], None] = field(default_factory=dict)
    control_outputs: dict[ColocationGroup, None] = field(default_factory=dict)


def _group_edges(groups) -> dict[ColocationGroup, _GroupEdges]:
    edges = {g: _GroupEdges() for g in groups.groups}
    for group in groups.groups:
        for member in group.members:
            for ref in member.inputs:
                producer = groups.group_of(ref.node)
                if producer is not group:
                    edges[group].inputs[(ref, producer)] = None
                    edges[producer].outputs[(ref, group)] = None
            for control in member.control_inputs:
                producer = groups.group_of(control)
                if producer is not group:
                    edges[group].control_inputs[producer] = None
                    edges[producer].control_outputs[group] = None
    return edges


class _GreedyPlacer:
    def __init__(self, groups, constraints: dict[ColocationGroup, GroupConstraint],
                 estimator: CostEstimator, devices: list[str]):
        self.groups = groups.groups            # in topological order of their first member
        self.constraints = constraints
        self.estimator = estimator
        self.devices = devices
        self.types = {d: device_type(d) for d in devices}
        self.short_names = {d: short_device_name(d) for d in devices}
        self.edges = _group_edges(groups)
        self.assigned: dict[ColocationGroup, str] = {}
        self.load = {d: 0.0 for d in devices}
        self.decisions: dict[ColocationGroup, tuple[str, str, list[Candidate]]] = {}
        self.cheap_seconds = _CHEAP_TRANSFERS * estimator.min_latency(devices)

    # --- costs --------------------------------------------------------------------------------
    def compute(self, group: ColocationGroup, device: str) -> float:
        return sum(self.estimator.compute(m, self.types[device]) for m in group.members)

    def _move(self, ref: TensorRef | None, src: str, dst: str) -> float:
        nbytes = 0 if ref is None else self.estimator.tensor_bytes(ref)
        return self.estimator.transfer(nbytes, src, dst)

    def transfer_in(self, group: ColocationGroup, device: str) -> float:
        """Moving the group's inputs from where their producers are (unplaced ones: free)."""
        edges = self.edges[group]
        total = sum(self._move(ref, self.assigned[p], device) for ref, p in edges.inputs
                    if self.assigned.get(p, device) != device)
        sources = {self.assigned.get(p, device) for p in edges.control_inputs} - {device}
        return total + sum(self._move(None, src, device) for src in sources)

    def transfer_out(self, group: ColocationGroup, device: str) -> float:
        edges = self.edges[group]
        moves = {(ref, self.assigned[c]) for ref, c in edges.outputs if self.assigned.get(c, device) != device}
        controls = {self.assigned.get(c, device) for c in edges.control_outputs} - {device}
        return sum(self._move(ref, device, dst) for ref, dst in moves) + \
            sum(self._move(None, device, dst) for dst in controls)

    def greedy_candidate(self, group: ColocationGroup, device: str) -> Candidate:
        compute = self.compute(group, device)
        busiest = max(self.load.values())
        credit = min(compute, busiest - self.load[device])
        return Candidate(self.short_names[device], compute, self.transfer_in(group, device), credit)

    def local_candidate(self, group: ColocationGroup, device: str) -> Candidate:
        transfer = self.transfer_in(group, device) + self.transfer_out(group, device)
        return Candidate(self.short_names[device], self.compute(group, device), transfer, 0.0)

    # --- the passes ------------------------------------------------------------------------------
    def run(self) -> None:
        deferred = set()
        for group in self.groups:
            if self._is_cheap_source(group):
                deferred.add(group)
                continue
            self._place_cheapest(group)
            self._place_waiting_sources(group, deferred)
        for group in self.groups:
            if group not in self.assigned:   # sources nothing placed consumes
                self._place_cheapest(group)
        self._pull_cheap_groups()

    def _is_cheap_source(self, group: ColocationGroup) -> bool:
        edges = self.edges[group]
        return not edges.inputs and not edges.control_inputs and self._is_cheap(group)

    def _is_cheap(self, group: ColocationGroup) -> bool:
        """Cheap enough to follow its neighbours. So is a group of opaque nodes (ops dftool does
        not know): their cost is a guess, and moving them away from their data is the worse risk."""
        candidates = self.constraints[group].candidates
        if self.constraints[group].constrained or len(candidates) < 2:
            return False
        return (all(self.compute(group, d) <= self.cheap_seconds for d in candidates)
                or all(m.spec is None for m in group.members))

    def _assign(self, group: ColocationGroup, device: str, reason: str, detail: str, candidates) -> None:
        previous = self.assigned.get(group)
        if previous is not None:
            self.load[previous] -= self.compute(group, previous)
        self.assigned[group] = device
        self.load[device] += self.compute(group, device)
        self.decisions[group] = (reason, detail, candidates)

    def _place_cheapest(self, group: ColocationGroup) -> None:
        constraint = self.constraints[group]
        candidates = [self.greedy_candidate(group, d) for d in constraint.candidates]
        best = min(range(len(candidates)), key=lambda i: (candidates[i].total, candidates[i].compute
                                                         + candidates[i].transfer, i))
        reason, detail = forced_reason(group, constraint) if len(candidates) == 1 else ("cheapest", "lowest cost")
        self._assign(group, constraint.candidates[best], reason, detail, candidates)

    def _place_waiting_sources(self, consumer: ColocationGroup, deferred: set) -> None:
        """Cheap sources feeding `consumer` follow it to its device."""
        device = self.assigned[consumer]
        for _, producer in self.edges[consumer].inputs:
            if producer in deferred and producer not in self.assigned:
                if device in self.constraints[producer].candidates:
                    candidates = [self.local_candidate(producer, d) for d in self.constraints[producer].candidates]
                    self._assign(producer, device, "consumer", f"next to its consumer '{consumer.leader.name}'",
                                 candidates)
                else:
                    self._place_cheapest(producer)

    def _pull_cheap_groups(self) -> None:
        """Move cheap groups to where their inputs and outputs cost least to move."""
        cheap = [g for g in reversed(self.groups) if self._is_cheap(g)]
        for _ in range(_PULL_SWEEPS):
            moved = False
            for group in cheap:
                devices = self.constraints[group].candidates
                candidates = [self.local_candidate(group, d) for d in devices]
                current = devices.index(self.assigned[group])
                best = min(range(len(devices)), key=lambda i: (candidates[i].total, i != current, i))
                if best != current and candidates[best].total < candidates[current].total - 1e-12:
                    self._assign(group, devices[best], "consumer", _pulled_detail(group), candidates)
                    moved = True
            if not moved:
                return


def _pulled_detail(group: ColocationGroup) -> str:
    if all(m.spec is None for m in group.members):
        return "unknown op: placed with its neighbours (where moving its inputs and outputs costs least)"
    return "cheap: placed where moving its inputs and outputs costs least"
