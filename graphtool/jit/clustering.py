"""Auto-clustering (TensorFlow's mark-for-compilation pass): group maximal connected sets of
candidate nodes (candidates.py) into clusters that each compile to one XLA program.

    clustering = find_clusters(graph, default_device="/job:localhost/...", fed={...}, targets={...})
    clustering.clusters      # lists of nodes, each in topological order
    clustering.reasons       # node -> why it stays in the interpreter (every node left out)

Nodes are merged along their edges in topological order, in an acyclic graph that refuses a merge
when another path joins the two sides (graph_cycles.py): contracting a cluster never makes a path
cluster -> outside -> cluster. Two nodes share a cluster only when they run on the same device, in
the same control-flow frame and are dead together (a cluster node runs whole). A node whose
static input (a shape, an axis: the lowering's `static_inputs`) is computed from traced values
must not join its producer's cluster; from outside a cluster that input becomes a compile-time
argument (its value is part of the compile cache key). Clusters of only free ops (Identity,
Reshape, constants) or of a single op are not worth a compile and stay in the interpreter.
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from .. import dtypes
from ..ir import Graph, Node
from ..ir.graph import NEXT_ITERATION_OPS
from . import candidates as cand
from .graph_cycles import GraphCycles
from .lowerings import registry

# Interpreter ops that may read a TensorList a cluster made (an array: every element set, unset
# ones as zeros); others (ConcatV2's leading_dims, PushBack, ...) see set and unset elements differ.
LIST_READERS = frozenset({"TensorListStack", "TensorListGather", "TensorListGetItem", "TensorListLength",
                          "TensorListElementShape"})
# A cluster must hold this many ops that do work (not FREE_OPS), or a control-flow op.
MIN_CLUSTER_OPS = 2


@dataclass
class Clustering:
    clusters: list[list[Node]] = field(default_factory=list)
    reasons: dict[Node, str] = field(default_factory=dict)
    static: set[Node] = field(default_factory=set)   # nodes whose values are known when compiling


def find_clusters(graph: Graph, default_device: str = "", fed: AbstractSet[str] = frozenset(),
                  targets: AbstractSet[str] = frozenset(), min_ops: int = MIN_CLUSTER_OPS) -> Clustering:
    order = graph.topological_order()
    index = {node: i for i, node in enumerate(order)}
    result = Clustering(static=cand.static_nodes(graph))
    reasons = result.reasons
    for node in order:
        reason = cand.exclusion_reason(node, fed, targets, result.static)
        if reason is not None:
            reasons[node] = reason
    _exclude_variant_edges_to_interpreter(order, reasons)

    frame_of = graph.frames().frame_of
    dead = cand.deadness_signatures(graph)
    has_transfers = any(n.op in cand.TRANSFER_OPS for n in order)
    side = _transfer_sides(order, reasons) if has_transfers else {}

    def key(node):
        return (node.device or default_device, frame_of[node].name, dead[node], side.get(node))

    cycles = GraphCycles(len(order))
    for node in order:
        if node.op in NEXT_ITERATION_OPS:
            continue   # loop back edges: a cluster runs within one iteration
        for consumer in node.consumers():
            cycles.insert_edge(index[node], index[consumer])

    root = list(range(len(order)))   # union-find over node indexes; a root is a GraphCycles node
    members: dict[int, set[Node]] = {}
    # Per cluster: producers that must not join it (traced values a member needs statically).
    forbidden: dict[int, set[Node]] = {}
    for node in order:
        if node not in reasons:
            i = index[node]
            members[i] = {node}
            forbidden[i] = _traced_static_producers(node, result.static)

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for node in order:
        if node in reasons:
            continue
        for producer in _producers(node):
            if producer in reasons or producer.op in NEXT_ITERATION_OPS or key(producer) != key(node):
                continue
            a, b = find(index[producer]), find(index[node])
            if a == b or members[a] & forbidden[b] or members[b] & forbidden[a]:
                continue
            keep = cycles.contract_edge(a, b)
            if keep is not None:
                gone = b if keep == a else a
                root[gone] = keep
                absorbed = members.pop(gone)
                if len(absorbed) > len(members[keep]):   # union the smaller set into the larger
                    absorbed, members[keep] = members[keep], absorbed
                members[keep] |= absorbed
                forbidden[keep] |= forbidden.pop(gone)

    _merge_independent(members, forbidden, cycles, root, key)
    for group in members.values():
        ordered = sorted(group, key=index.__getitem__)
        problem = _not_worth_it(ordered, min_ops, result.static) or _variant_boundary(group)
        if problem is None:
            result.clusters.append(ordered)
        else:
            for node in ordered:
                reasons[node] = problem
    result.clusters.sort(key=lambda c: index[c[0]])
    return result


def _transfer_sides(order: list[Node], reasons: dict) -> dict[Node, str]:
    """In one device's partition, where a node stands to the _Send/_Recv pairs joining it to the
    other devices, whose waits the graph here does not show: 'D' downstream of a _Recv, 'U' the
    rest. A node both downstream of a _Recv and upstream of a _Send stays out: a cluster waits
    for all its inputs, so holding one might make a send wait for a receive that waits for it.
    Clusters never mix 'D' nodes with nodes upstream of a send ('U' key), so none can."""
    downstream: set[Node] = set()
    for node in order:   # topological: producers first
        if node.op in cand.RECV_OPS or any(p in downstream for p in node.input_nodes()):
            downstream.add(node)
    upstream: set[Node] = set()
    for node in reversed(order):
        if node.op in cand.SEND_OPS or any(c in upstream for c in node.consumers()):
            upstream.add(node)
    for node in downstream & upstream:
        reasons.setdefault(node, "between a _Recv and a _Send of its device's partition")
    return {node: "D" if node in downstream else "U" for node in order}


def _merge_independent(members, forbidden, cycles, root, key, tries: int = 8) -> None:
    """Clusters of one device, frame and deadness with no path between them become one: a step
    then makes one call instead of several (each call costs tens of microseconds)."""
    by_key: dict = {}
    for r in sorted(members):
        by_key.setdefault(key(next(iter(members[r]))), []).append(r)
    for roots in by_key.values():
        targets: list[int] = []
        for r in roots:
            for t in targets[:tries]:
                if members[t] & forbidden[r] or members[r] & forbidden[t]:
                    continue
                if cycles.merge_unconnected(t, r):
                    root[r] = t
                    members[t] |= members.pop(r)
                    forbidden[t] |= forbidden.pop(r)
                    break
            else:
                targets.append(r)


def _producers(node: Node) -> list[Node]:
    seen: dict[Node, None] = {}
    for producer in node.input_nodes():
        seen[producer] = None
    return list(seen)


def _traced_static_producers(node: Node, static: set[Node]) -> set[Node]:
    lowering = registry.lookup(node.op)
    if lowering is None:
        return set()
    return {node.inputs[slot].node for slot in registry.static_slots(lowering, len(node.inputs))
            if node.inputs[slot].node not in static}


def _output_dtype(ref) -> object:
    spec = ref.node.spec
    try:
        return spec.output_dtypes(ref.node)[ref.index].base if spec is not None else None
    except Exception:
        return None


def _exclude_variant_edges_to_interpreter(order: list[Node], reasons: dict) -> None:
    """A TensorList (variant) is an array only inside a compiled program: a candidate that would
    receive one from the interpreter stays out too (repeated until nothing changes)."""
    changed = True
    while changed:
        changed = False
        for node in order:
            if node in reasons:
                continue
            # (A list a cluster passes out is converted: cluster_op.py.)
            crossing = any(_output_dtype(ref) is dtypes.variant and ref.node in reasons for ref in node.inputs)
            if crossing:
                reasons[node] = "a TensorList made by the interpreter"
                changed = True


def _not_worth_it(nodes: list[Node], min_ops: int, static: set[Node]) -> str | None:
    if any(n.op in cand.CONTROL_FLOW_OPS for n in nodes):
        return None
    # Static nodes are computed once, when compiling: they do no work per step.
    working = [n for n in nodes if n.op not in cand.FREE_OPS and n not in static]
    if len(working) >= min_ops:
        return None
    if not working:
        return "its cluster would hold only free ops (constants, identities, shapes and what they compute)"
    return f"its cluster would hold a single op ({working[0].op}): not worth a compile"


def _variant_boundary(group: set[Node]) -> str | None:
    for node in group:
        for ref in node.inputs:
            if ref.node not in group and _output_dtype(ref) is dtypes.variant:
                return "its cluster would receive a TensorList from the interpreter"
        for consumer, slot in node.uses():
            if consumer not in group and consumer.op not in LIST_READERS and \
                    _output_dtype(consumer.inputs[slot]) is dtypes.variant:
                return f"its cluster would pass a TensorList to {consumer.op}, which tells unset elements apart"
    return None
