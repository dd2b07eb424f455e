"""A Picture as Graphviz DOT text: expanded scopes as nested clusters, boxes for collapsed scopes
(box3d) and loops (a double octagon), nodes as rounded boxes, filled by device with a legend,
data edges labelled with their shape and control edges dashed."""
from __future__ import annotations

from .layout import MIXED, UNPLACED, Item, Picture

# Light fills that keep black text readable; devices take them in sorted order.
PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada",
           "#fccde5", "#d9d9d9", "#80b1d3", "#ccebc5")
UNPLACED_FILL = "#ffffff"
MIXED_FILL = "#e0e0e0"


def quote(text: str) -> str:
    """A DOT double-quoted ID: backslashes and quotes escaped, newlines as DOT's centred line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def device_fills(devices: list[str]) -> dict[str, str]:
    fills = {UNPLACED: UNPLACED_FILL, MIXED: MIXED_FILL}
    real = [d for d in devices if d not in fills]
    for i, device in enumerate(real):
        fills[device] = PALETTE[i % len(PALETTE)]
    return fills


def _item_line(item: Item, fills: dict[str, str]) -> str:
    if item.kind == "node":
        op = next(iter(item.ops))
        label, shape, style = f"{item.label}\n{op}", "box", "rounded,filled"
    else:
        top = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in item.ops.most_common(3))
        more = ", ..." if len(item.ops) > 3 else ""
        label = f"{item.label}\n{item.nodes} nodes: {top}{more}"
        shape, style = ("box3d", "filled") if item.kind == "scope" else ("doubleoctagon", "filled")
    tooltip = item.id.split(":", 1)[1] if item.kind != "node" else item.id
    return (f"{quote(item.id)} [label={quote(label)}, shape={shape}, style={quote(style)}, "
            f"fillcolor={quote(fills[item.device])}, tooltip={quote(tooltip)}];")


def to_dot(picture: Picture) -> str:
    """The DOT text of `picture` (a digraph; deterministic for a given picture)."""
    fills = device_fills(picture.devices)
    lines = [f"digraph {quote(picture.title)} {{",
             "  graph [rankdir=TB, fontname=Helvetica, compound=true];",
             "  node [fontname=Helvetica, fontsize=10];",
             "  edge [fontname=Helvetica, fontsize=9];"]
    by_cluster: dict[str, list[Item]] = {}
    for item in picture.items.values():
        by_cluster.setdefault(item.cluster, []).append(item)
    children: dict[str, list[str]] = {}
    for cluster in picture.clusters:
        parent = cluster.rsplit("/", 1)[0] if "/" in cluster else ""
        children.setdefault(parent, []).append(cluster)

    def emit(cluster: str, indent: str) -> None:
        for item in by_cluster.get(cluster, []):
            lines.append(indent + _item_line(item, fills))
        for child in children.get(cluster, []):
            lines.append(f"{indent}subgraph {quote('cluster_' + child)} {{")
            lines.append(f"{indent}  label={quote(child + '/')}; style=rounded; color=gray50;")
            emit(child, indent + "  ")
            lines.append(indent + "}")

    emit("", "  ")
    for edge in picture.edges:
        attrs = []
        if edge.label:
            attrs.append(f"label={quote(edge.label)}")
        if edge.control:
            attrs.append("style=dashed")
        lines.append(f"  {quote(edge.src)} -> {quote(edge.dst)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append('  subgraph "cluster_legend" {')
    lines.append('    label="devices"; style=rounded; color=gray70;')
    for device in picture.devices:
        lines.append(f"    {quote('legend:' + device)} [label={quote(device)}, shape=box, style=filled, "
                     f"fillcolor={quote(fills[device])}];")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
