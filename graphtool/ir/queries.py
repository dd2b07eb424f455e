"""Questions about a whole graph that several layers ask: which nodes are its outputs and sinks.

`inspect` reports them, and `Session` (what `dftool run` fetches by default) and `optimize` (what
must survive) use the same answer, so it lives with the IR rather than in a command's module.
"""
from __future__ import annotations

from ..ops.core import FED_INPUT_OPS
from .graph import Graph
from .node import Node

# Nodes a user feeds (PlaceholderWithDefault may be fed, or left to its default).
PLACEHOLDER_OPS = FED_INPUT_OPS | {"PlaceholderWithDefault"}


def graph_outputs(graph: Graph) -> list[Node]:
    """Nodes that have outputs but whose outputs nobody uses (by data or control edge), and whose
    outputs live outside any while loop (a value inside a loop exists once per iteration, so only
    a loop's Exit can be an output). Placeholders are inputs, not outputs, even when unused (that
    is reported as a finding)."""
    frames = graph.frames()
    return [n for n in graph.nodes
            if not n.has_users and n.num_outputs > 0 and n.op not in PLACEHOLDER_OPS
            and frames.output_frame(n).is_root]


def graph_sinks(graph: Graph) -> list[Node]:
    """Nodes with no outputs that nothing depends on: NoOp targets, _Retval, Assert-like ops."""
    return [n for n in graph.nodes if not n.has_users and n.num_outputs == 0]
