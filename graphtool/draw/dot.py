"""A Picture as Graphviz DOT, built with the `graphviz` package: expanded scopes as nested
clusters, boxes for collapsed scopes (box3d) and loops (a double octagon), nodes as rounded boxes,
filled by device with a legend, data edges labelled with their shape and control edges dashed."""
from __future__ import annotations

import graphviz

from .layout import MIXED, UNPLACED, Item, Picture

# Light fills that keep black text readable; devices take them in sorted order.
PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada",
           "#fccde5", "#d9d9d9", "#80b1d3", "#ccebc5")
UNPLACED_FILL = "#ffffff"
MIXED_FILL = "#e0e0e0"


def dot_id(item_id: str) -> str:
    """The DOT node ID of a drawn item. A node keeps its name; a box's 'scope:dense' becomes
    'scope dense' and a legend entry 'legend /device:CPU:0' -> colons are escaped (%3A), because
    Graphviz reads 'a:b' in an edge as node a, port b."""
    kind, _, rest = item_id.partition(":")
    if kind in ("scope", "loop", "legend") and rest:
        item_id = f"{kind} {rest}"
    return item_id.replace("%", "%25").replace(":", "%3A")


def text(value: str) -> str:
    """User text (a node or device name) for a label: backslashes kept literally, since Graphviz
    reads backslash sequences in labels as escapes."""
    return value.replace("\\", "\\\\")


def device_fills(devices: list[str]) -> dict[str, str]:
    fills = {UNPLACED: UNPLACED_FILL, MIXED: MIXED_FILL}
    real = [d for d in devices if d not in fills]
    for i, device in enumerate(real):
        fills[device] = PALETTE[i % len(PALETTE)]
    return fills


def _add_item(graph: graphviz.Digraph, item: Item, fills: dict[str, str]) -> None:
    if item.kind == "node":
        op = next(iter(item.ops))
        label, shape, style = f"{text(item.label)}\\n{op}", "box", "rounded,filled"
    else:
        top = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in item.ops.most_common(3))
        more = ", ..." if len(item.ops) > 3 else ""
        label = f"{text(item.label)}\\n{item.nodes} nodes: {top}{more}"
        shape, style = ("box3d", "filled") if item.kind == "scope" else ("doubleoctagon", "filled")
    tooltip = item.id.split(":", 1)[1] if item.kind != "node" else item.id
    graph.node(dot_id(item.id), label=label, shape=shape, style=style, fillcolor=fills[item.device],
               tooltip=text(tooltip))


def to_dot(picture: Picture) -> str:
    """The DOT text of `picture` (a digraph; deterministic for a given picture)."""
    fills = device_fills(picture.devices)
    graph = graphviz.Digraph(name=text(picture.title),
                             graph_attr={"rankdir": "TB", "fontname": "Helvetica", "compound": "true"},
                             node_attr={"fontname": "Helvetica", "fontsize": "10"},
                             edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    by_cluster: dict[str, list[Item]] = {}
    for item in picture.items.values():
        by_cluster.setdefault(item.cluster, []).append(item)
    children: dict[str, list[str]] = {}
    for cluster in picture.clusters:
        parent = cluster.rsplit("/", 1)[0] if "/" in cluster else ""
        children.setdefault(parent, []).append(cluster)

    def emit(cluster: str, into: graphviz.Digraph) -> None:
        for item in by_cluster.get(cluster, []):
            _add_item(into, item, fills)
        for child in children.get(cluster, []):
            # A subgraph whose name starts with "cluster" is drawn as a box around its nodes.
            with into.subgraph(name=dot_id(f"cluster_{child}")) as box:
                box.attr(label=text(child + "/"), style="rounded", color="gray50")
                emit(child, box)

    emit("", graph)
    for edge in picture.edges:
        attrs = {}
        if edge.label:
            attrs["label"] = edge.label
        if edge.control:
            attrs["style"] = "dashed"
        graph.edge(dot_id(edge.src), dot_id(edge.dst), **attrs)
    with graph.subgraph(name="cluster_legend") as legend:
        legend.attr(label="devices", style="rounded", color="gray70")
        for device in picture.devices:
            legend.node(dot_id(f"legend:{device}"), label=text(device), shape="box", style="filled",
                        fillcolor=fills[device])
    return graph.source
