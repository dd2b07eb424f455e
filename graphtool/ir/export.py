"""The IR as a GraphDef (the way out; convert.py is the way in). It needs no Graph class, only
what a graph and its nodes hold, so Graph itself can write files (Graph.save) without an import
cycle."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..proto.graph_pb2 import GraphDef
from ..proto.node_def_pb2 import NodeDef

if TYPE_CHECKING:
    from .graph import Graph


def node_to_nodedef(node) -> NodeDef:
    node_def = NodeDef(name=node.name, op=node.op, device=node.device)
    node_def.input.extend(ref.name for ref in node.inputs)
    node_def.input.extend("^" + control.name for control in node.control_inputs)
    for key, value in node.attrs.items():
        node_def.attr[key].CopyFrom(value)
    for field, value in node.extras.items():
        getattr(node_def, field).CopyFrom(value)
    return node_def


def to_graphdef(graph: "Graph") -> GraphDef:
    """Serialize the IR; nodes keep their insertion order, inputs their TensorFlow spelling."""
    graph_def = GraphDef()
    graph_def.node.extend(node_to_nodedef(node) for node in graph.nodes)
    if graph.versions.ListFields():
        graph_def.versions.CopyFrom(graph.versions)
    if graph.deprecated_version:
        graph_def.version = graph.deprecated_version
    if graph.library.ListFields():
        graph_def.library.CopyFrom(graph.library)
    if graph.debug_info.ListFields():
        graph_def.debug_info.CopyFrom(graph.debug_info)
    return graph_def
