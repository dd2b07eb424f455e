"""Readable reprs of Graph, Node and TensorRef (what a notebook shows for `g`, `node`, `ref`).

Short and safe: a repr never raises (a malformed attr shows as '?') and never lists more than a
few names, however large the graph.
"""
from __future__ import annotations

from collections import Counter

# How many op types, inputs, outputs or placeholders a repr names before it says "+N more".
SHOWN = 6
PLACEHOLDER_OPS = ("Placeholder", "PlaceholderWithDefault")


def _some(items: list[str], limit: int = SHOWN) -> str:
    more = f", +{len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def short_device(device: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:0' -> 'CPU:0' (other jobs/tasks kept)."""
    return device.replace("/job:localhost/replica:0/task:0", "").removeprefix("/device:")


def _signature(node) -> str:
    """'float32[?,16]' of a placeholder, from its attrs; '?' for what cannot be read."""
    try:
        dtype = node.attr("dtype", None)
    except Exception:   # a malformed attr: verify() reports it, a repr must not raise
        dtype = None
    try:
        shape = node.attr("shape", None)
    except Exception:
        shape = None
    return f"{dtype if dtype is not None else '?'}{shape if shape is not None else ''}"


def graph_repr(graph) -> str:
    nodes = graph.nodes
    ops = Counter(node.op for node in nodes)
    parts = [f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}"]
    if ops:
        parts[0] += " (" + _some([f"{op} {count}" for op, count in ops.most_common()]) + ")"
    inputs = [f"{n.name} {_signature(n)}" for n in nodes if n.op in PLACEHOLDER_OPS]
    if inputs:
        parts.append("inputs: " + _some(inputs))
    outputs = [n.name for n in nodes if not n.consumers() and n.op not in PLACEHOLDER_OPS]
    if outputs:
        parts.append("outputs: " + _some(outputs))
    devices = sorted({short_device(n.device) for n in nodes if n.device})
    if devices:
        parts.append("devices: " + _some(devices))
    return f"<Graph {'; '.join(parts)}>"


def node_repr(node) -> str:
    args = [ref.name for ref in node.inputs] + [f"^{n.name}" for n in node.control_inputs]
    text = f"<Node {node.name} = {node.op}({_some(args, 4)})"
    if node.op in PLACEHOLDER_OPS:
        text += f" {_signature(node)}"
    if node.device:
        text += f" on {short_device(node.device)}"
    return text + ">"


def tensor_repr(ref) -> str:
    return f"<TensorRef {ref.node.name}:{ref.index} of {ref.node.op}>"
