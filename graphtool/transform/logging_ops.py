"""insert_logging: Print nodes that log chosen nodes' values as the graph runs.

    before: conv -> relu
    after:  conv -> Print(conv, [conv], message="conv;Conv2D;") 'conv/print' -> relu

The Print passes its input through (so users read the same value) and writes
`message[values]` to standard error each time it runs (the first `first_n` times; -1: always),
showing at most `summarize` elements per tensor, as TensorFlow's Print does. A graph output keeps
its name: the Print takes it and the logged node becomes 'NAME/logged'.
"""
from __future__ import annotations

from .. import dtypes
from ..ir import Graph, Node
from .base import Param, Transform, TransformContext, TransformResult, register_transform

def _printable(dtype) -> bool:
    """Values Print can show: numbers, bools and strings (not references, handles or variants)."""
    if dtype.is_ref:
        return False
    return dtype.is_floating or dtype.is_integer or dtype.is_complex or dtype.is_bool or dtype == dtypes.string


@register_transform
class InsertLogging(Transform):
    name = "insert_logging"
    description = "log the values of chosen nodes (by op type and/or name prefix) with Print nodes"
    params = (Param("op", "log nodes of this op type (default: any op)", repeatable=True),
              Param("prefix", "log nodes whose name starts with this (default: any name)", repeatable=True),
              Param("show_name", "start the message with the node's name", bool, False),
              Param("show_op", "start the message with the node's op type", bool, False),
              Param("message", "text at the start of every message", default=""),
              Param("first_n", "log only the first N runs of each node (-1: every run)", int, -1),
              Param("summarize", "elements shown per tensor (-1: all)", int, 1024))

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        ops, prefixes = set(params["op"]), tuple(params["prefix"])
        chosen = [n for n in graph.nodes
                  if (not ops or n.op in ops) and (not prefixes or n.name.startswith(prefixes))]
        logged, skipped = 0, []
        for node in chosen:
            outputs = self._outputs(node)
            is_output = node.name in ctx.outputs and node.name not in ctx.inputs
            if outputs is None or (is_output and node.num_outputs != 1):
                skipped.append(node.name)
                continue
            self._insert(graph, ctx, node, outputs, params)
            logged += 1
        notes = []
        if skipped:
            notes.append(f"not logged (control flow, no printable output, or a multi-output graph output): "
                         f"{', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}")
        if chosen and not logged:
            notes.append("no node could be logged")
        return TransformResult.from_counts(notes, nodes_logged=logged, nodes_skipped=len(skipped))

    @staticmethod
    def _outputs(node: Node):
        spec = node.spec
        if spec is None or spec.control_flow or node.op == "Print" or node.num_outputs == 0:
            return None
        try:
            types = spec.output_dtypes(node)
        except Exception:  # malformed attrs: verify() reports them; such a node is not logged
            return None
        if not _printable(types[0]):
            return None
        return [node.output(i) for i, t in enumerate(types) if _printable(t)], types

    @staticmethod
    def _insert(graph: Graph, ctx: TransformContext, node: Node, outputs, params) -> None:
        refs, types = outputs
        is_output = node.name in ctx.outputs and node.name not in ctx.inputs
        message = params["message"] + (f"{node.name};" if params["show_name"] else "") + \
            (f"{node.op};" if params["show_op"] else "")
        users = node.uses(0)
        printer = graph.add_node("Print", graph.unique_name(f"{node.name}/print"), inputs=[node.output(0), *refs],
                                 device=node.device,
                                 attrs={"T": types[0], "U": [types[r.index] for r in refs], "message": message,
                                        "first_n": params["first_n"], "summarize": params["summarize"]})
        for consumer, slot in users:
            consumer.set_input(slot, printer.output(0))
        if is_output:
            name = node.name
            graph.rename(node, graph.unique_name(f"{name}/logged"))
            graph.rename(printer, name)
