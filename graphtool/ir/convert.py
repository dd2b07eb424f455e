"""GraphDef -> Graph (the way in; export.py is the way out). The only place where 'node:k' and '^node' strings are
parsed."""
from __future__ import annotations

from ..errors import InvalidGraphError
from ..proto.graph_pb2 import GraphDef
from .graph import Graph, parse_tensor_name
from .node import TensorRef

_EXTRA_FIELDS = ("experimental_debug_info", "experimental_type")


def from_graphdef(graph_def: GraphDef, source: str = "graph", *, verify: bool = True,
                  problems: list[str] | None = None) -> Graph:
    """Build the IR from a GraphDef. Raises InvalidGraphError (naming `source` and the node) for
    duplicate names, inputs that name missing nodes, malformed input strings, and, when `verify`,
    for anything Graph.verify() rejects.

    With a `problems` list (for a report on a broken graph, as `inspect` gives), the build
    problems are appended to it instead of raised and the offending node or input is left out;
    verification is then the caller's (Graph.problems())."""
    def fail(message: str) -> None:
        if problems is None:
            raise InvalidGraphError(f"{source}: {message}")
        problems.append(message)

    graph = Graph()
    graph.versions.CopyFrom(graph_def.versions)
    graph.deprecated_version = graph_def.version
    graph.library.CopyFrom(graph_def.library)
    graph.debug_info.CopyFrom(graph_def.debug_info)

    built = []
    for node_def in graph_def.node:
        if not node_def.name:
            fail(f"a node ({node_def.op or 'no op'}) has an empty name")
            continue
        if node_def.name.startswith("^") or ":" in node_def.name:
            # Such a node cannot be named in an input string ('^x' reads as a control input of
            # 'x', 'a:1' as port 1 of 'a'), so its users and the graph's own indexes would disagree.
            fail(f"node name '{node_def.name}' is not valid (a name may not start with '^' or contain ':')")
            continue
        if node_def.name in graph:
            fail(f"duplicate node name '{node_def.name}'")
            continue
        if not node_def.op:
            fail(f"node '{node_def.name}' has no op")
            continue
        node = graph.add_node(node_def.op, node_def.name, device=node_def.device)
        for key in sorted(node_def.attr):
            node.attrs[key] = node_def.attr[key]
        for field in _EXTRA_FIELDS:
            if node_def.HasField(field):
                node.extras[field] = getattr(node_def, field)
        built.append((node, node_def))

    for node, node_def in built:
        seen_control = False
        for text in node_def.input:
            where = f"node '{node_def.name}' input '{text}'"
            if text.startswith("^"):
                seen_control = True
                producer = graph.get(text[1:])
                if producer is None:
                    fail(f"{where} names a missing node '{text[1:]}'")
                    continue
                node.add_control_input(producer)
                continue
            if seen_control:
                fail(f"{where}: data input after a control input")
                continue
            try:
                name, port = parse_tensor_name(text)
            except Exception:
                fail(f"{where} is not a valid tensor name")
                continue
            producer = graph.get(name)
            if producer is None:
                fail(f"{where} names a missing node '{name}'")
                continue
            producer._num_outputs_hint = max(producer._num_outputs_hint, port + 1)
            node.add_input(TensorRef(producer, port))

    if verify and problems is None:
        found = graph.problems()
        if found:
            more = f" (and {len(found) - 1} more problem(s))" if len(found) > 1 else ""
            raise InvalidGraphError(f"{source}: {found[0]}{more}")
    return graph
