"""Replace each cluster by one `_JitCluster` node (cluster_op.py), through the IR's mutators.

    before:  x -> Mul -> Tanh -> Add -> y         after:  x -> _JitCluster -> y
                 c ---^                                    (body: Mul, Tanh, Add, c)

The cluster's inputs are the tensors its members read from outside; its outputs are the member
tensors read outside, or fetched (`keep`). Control inputs from outside move to the cluster node,
and `^member` users wait for it. A small constant that nodes outside still read is copied into
the body rather than becoming an output. Fetched tensors are renamed: the returned map sends
(member name, port) to the cluster output that now carries it.
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Callable

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..shape_inference import infer_shapes
from ..shapes import Shape
from . import candidates as cand
from .cluster_op import OP, ClusterProgram
from .lowerings import registry


@dataclass
class RewrittenCluster:
    node: Node                 # the _JitCluster node
    program: ClusterProgram
    size: int                  # nodes it replaced
    copied: int = 0            # static nodes (constants, shapes) copied in from outside


def rewrite_clusters(graph: Graph, clusters: list[list[Node]], static: set[Node], keep: set[TensorRef],
                     shapes=None, protected: AbstractSet[str] = frozenset(), *, interpreter: Callable
                     ) -> tuple[list[RewrittenCluster], dict[tuple[str, int], TensorRef]]:
    """Rewrite every cluster; then drop static nodes nothing reads any more (their values were
    copied into the clusters), except the `protected` ones (fetched, fed, targets). `interpreter`
    runs a cluster's body that XLA cannot compile (see cluster_op.ClusterProgram)."""
    shapes = shapes or infer_shapes(graph)
    position = {node: i for i, node in enumerate(graph.topological_order())}
    moved: dict[tuple[str, int], TensorRef] = {}
    done = []
    for number, members in enumerate(clusters):
        done.append(_rewrite_one(graph, members, static, keep, shapes, moved, number, position, interpreter))
    _drop_unread_static(graph, static, protected)
    return done, moved


def _drop_unread_static(graph: Graph, static: set[Node], protected: AbstractSet[str]) -> None:
    pending = [n for n in static if n.graph is graph and n.name in graph]
    while pending:
        node = pending.pop()
        if node.name in protected or node.has_users or graph.get(node.name) is not node:
            continue
        producers = [p for p in node.input_nodes() if p in static]
        graph.remove_node(node)
        pending.extend(producers)


def _small(shapes, node: Node) -> bool:
    for ref in node.outputs:
        count = shapes.shape(ref).num_elements() if shapes.shape(ref).rank is not None else None
        if count is None or count > cand.MAX_EMBEDDED_CONST_ELEMENTS:
            return False
    return True


def _static_copies(members: list[Node], group: set[Node], static: set[Node], shapes) -> list[Node]:
    """Static producers (constants, shapes and what is computed from them) to copy into the body:
    they become compile-time values instead of inputs, and clusters never merge through them. A
    Shape of a tensor outside stays outside (its small value is a compile-time argument)."""
    copied: set[Node] = set()
    stack = [ref for node in members for ref in node.inputs]
    while stack:
        producer = stack.pop().node
        if producer in group or producer in copied or producer not in static:
            continue
        if producer.op in cand.SHAPE_OPS and not all(r.node in group or r.node in copied for r in producer.inputs):
            continue
        if not _small(shapes, producer):
            continue
        copied.add(producer)
        stack.extend(producer.inputs)
    return list(copied)


def _rewrite_one(graph, members, static, keep, shapes, moved, number, position, interpreter) -> RewrittenCluster:
    group = set(members)
    # Constants still read outside stay there (a copy goes into the body).
    shared_consts = {n for n in members if n.op == "Const" and any(c not in group for c in n.consumers())}
    copies = _static_copies(members, group, static, shapes)
    inside = group | set(copies)
    body_nodes = sorted(inside, key=position.__getitem__)
    inputs = list(dict.fromkeys(ref for node in body_nodes for ref in node.inputs if ref.node not in inside))
    outputs: list[TensorRef] = []
    for node in members:
        if node in shared_consts:
            continue
        for ref in node.outputs:
            used_outside = any(c not in group for c, _ in node.uses(ref.index))
            if used_outside or ref in keep:
                outputs.append(ref)

    body = Graph()
    body.library.CopyFrom(graph.library)
    body.versions.CopyFrom(graph.versions)
    body_ref: dict[TensorRef, TensorRef] = {}
    for k, ref in enumerate(inputs):
        dtype = shapes.dtype(ref)
        placeholder = body.add_node("Placeholder", f"_jit_arg_{k}", attrs={"dtype": dtype.base})
        body_ref[ref] = placeholder.output(0)
    for node in body_nodes:
        copy = body.add_node(node.op, node.name, inputs=[body_ref[r] for r in node.inputs],
                             attrs=dict(node.attrs), device=node.device)
        for port in range(node.num_outputs):
            body_ref[TensorRef(node, port)] = copy.output(port)

    static_positions = _static_positions(members, inside, static, inputs)
    ops = [n.op for n in members]
    # A list passed out keeps its declared element shape (what TensorListElementShape answers).
    list_outputs = {k: _declared_element_shape(shapes, r) for k, r in enumerate(outputs)
                    if shapes.dtype(r).base is dtypes.variant}
    program = ClusterProgram(body, [body_ref[r] for r in inputs], [body_ref[r] for r in outputs],
                             static_positions, ops, list_outputs,
                             held_inputs=[k for k, r in enumerate(inputs) if r.node.op == "Const"],
                             interpreter=interpreter)
    scope = _common_scope(members)
    cluster = graph.add_node(
        OP, graph.unique_name(f"{scope}jit_cluster_{number}"), inputs=inputs,
        attrs={"Tin": [shapes.dtype(r).base for r in inputs], "Tout": [shapes.dtype(r).base for r in outputs],
               "cluster": program.key, "output_shapes": [_known(shapes.shape(r)) for r in outputs]},
        device=members[0].device)
    for node in members:
        for control in node.control_inputs:
            if control not in group:
                cluster.add_control_input(control)
    for port, ref in enumerate(outputs):
        graph.replace_all_uses_with(ref, cluster.output(port))
        moved[(ref.node.name, ref.index)] = cluster.output(port)
        if ref in shapes.info:   # later clusters may read this output: what is known of it moves too
            shapes.info[cluster.output(port)] = shapes.info[ref]
    for node in members:
        if node not in shared_consts:
            graph.move_control_uses(node, cluster)
    graph.remove_nodes([n for n in members if n not in shared_consts])
    return RewrittenCluster(cluster, program, len(members), len(copies))


def _declared_element_shape(shapes, ref: TensorRef) -> Shape:
    info = shapes.info.get(ref)
    handle = info.handle if info is not None else None
    return handle.element_shape if handle is not None else Shape.unknown()


def _known(shape: Shape) -> Shape:
    return shape if shape.rank is not None else Shape.unknown()


def _common_scope(members: list[Node]) -> str:
    parts = [n.name.split("/")[:-1] for n in members]
    common = parts[0]
    for other in parts[1:]:
        k = 0
        while k < min(len(common), len(other)) and common[k] == other[k]:
            k += 1
        common = common[:k]
    return "/".join(common) + "/" if common else ""


def _static_positions(members, group, static, inputs) -> tuple[int, ...]:
    """Cluster inputs XLA needs as constants: read at a lowering's static slot, directly or
    through static nodes of the cluster (a Pack of a Shape and an input, say)."""
    needed: set[TensorRef] = set()
    stack: list[TensorRef] = []
    for node in members:
        lowering = registry.lookup(node.op)
        if lowering is not None:
            stack.extend(node.inputs[s] for s in registry.static_slots(lowering, len(node.inputs)))
    while stack:
        ref = stack.pop()
        if ref in needed:
            continue
        needed.add(ref)
        producer = ref.node
        if producer in group and producer in static and producer.op not in cand.SHAPE_OPS and producer.op not in cand.LIST_SHAPE_OPS:
            stack.extend(producer.inputs)
    return tuple(k for k, ref in enumerate(inputs) if ref in needed)
