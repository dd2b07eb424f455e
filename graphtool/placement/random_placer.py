"""Random placement that honours every constraint the greedy placer honours (for tests and fuzzing).

    report = random_placement(graph, ["worker:0/cpu:0", "worker:1/cpu:0", "ps:0/cpu:0"], seed=3)

Each colocation group (colocation.py: `_class`, reference and resource edges, a loop variable's
Merge/Switch/NextIteration) goes, as one unit, to a device drawn from a seeded numpy Generator
among the devices its constraints allow (constraints.py: requested devices, kernels, soft
placement), exactly the candidates greedy.py chooses among. So every random placement is one the
partitioner and the runtime accept, and runs to the same values as any other placement: what
tests need to exercise transfers, loop skeletons and rendezvous keys in ways the cost model never
chooses. Groups are drawn in topological order of their first node, one draw per group with more
than one candidate, so a seed gives the same placement of the same graph on every machine.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from .colocation import colocation_groups
from .constraints import available_devices, op_runs_on, resolve_group
from .cost_model import CostEstimator, CostModel
from .outcome import Decision, forced_reason, placement_report
from .report import PlacementReport


def random_placement(graph: Graph, devices: list[str] | None = None, seed: int = 0, *,
                     soft_placement: bool = True, cost_model: CostModel | None = None) -> PlacementReport:
    """Set every node's device to a full canonical name drawn at random among the devices its
    colocation group may use, and report it like place() does (reason 'random' for a drawn
    group; the estimated cost is that of the drawn placement under `cost_model`). `devices` and
    `soft_placement` as for place(); the same errors for constraints that cannot hold."""
    from ..shape_inference import infer_shapes

    op_runs_on.cache_clear()
    device_list = available_devices(graph, devices)
    groups = colocation_groups(graph, graph.topological_order())
    constraints = {g: resolve_group(g, device_list, soft_placement) for g in groups.groups}
    rng = np.random.default_rng(seed)
    assigned: dict = {}
    decisions: dict = {}
    for group in groups.groups:
        candidates = constraints[group].candidates
        if len(candidates) == 1:
            assigned[group] = candidates[0]
            decisions[group] = (*forced_reason(group, constraints[group]), [])
            continue
        assigned[group] = candidates[int(rng.integers(len(candidates)))]
        decisions[group] = _drawn(seed, len(candidates))
    requested = {n: n.device for n in graph.nodes}
    for group, device in assigned.items():
        for member in group.members:
            member.device = device
    model = cost_model or CostModel()
    estimator = CostEstimator(model, infer_shapes(graph))
    return placement_report(graph, assigned, decisions, requested, constraints, estimator, device_list, model,
                            soft_placement, explain=False)


def _drawn(seed: int, choices: int) -> Decision:
    return "random", f"drawn at random (seed {seed}) among {choices} allowed devices", []
