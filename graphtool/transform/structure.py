"""sort_by_execution_order, strip_unused_nodes, obfuscate_names: the graph's shape and names."""
from __future__ import annotations

import re

from .. import dtypes
from ..errors import UsageError
from ..ir import Graph, Node
from ..placement.colocation import COLOCATION_ATTR, class_entries
from .base import Param, Transform, TransformContext, TransformResult, register_transform


@register_transform
class SortByExecutionOrder(Transform):
    name = "sort_by_execution_order"
    description = "write the nodes in an order where each comes after its inputs (loops: after their entry)"

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        return TransformResult.from_counts(nodes_moved=graph.reorder(graph.topological_order()))


_DIM = re.compile(r"^(-1|\?|\d+)$")


def parse_shape(text: str) -> list[int] | None:
    """'1,224,224,3' -> [1, 224, 224, 3]; -1 or ? is an unknown dim; '' or '[]' a scalar."""
    body = text.strip().strip("[]").strip()
    if not body:
        return []
    dims = [d.strip() for d in body.split(",")]
    if not all(_DIM.match(d) for d in dims):
        return None
    return [-1 if d in ("-1", "?") else int(d) for d in dims]


@register_transform
class StripUnusedNodes(Transform):
    name = "strip_unused_nodes"
    description = ("keep only what computes the outputs from the inputs; each input becomes a Placeholder, "
                   "optionally of a given dtype and shape")
    params = (Param("name", "an input tensor (default: the inputs given to the command, else the graph's "
                            "Placeholders)", repeatable=True),
              Param("type", "dtype of the input Placeholders (default: the tensor's own)"),
              Param("shape", "dims of the input Placeholders, e.g. \"1,224,224,3\" (-1: unknown); one for "
                             "every input, or one per name in order", repeatable=True))

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        from ..ops.core import FED_INPUT_OPS
        from ..prune import prune

        inputs = params["name"] or ctx.inputs or [n.name for n in graph.nodes if n.op in FED_INPUT_OPS]
        shapes = params["shape"]
        if len(shapes) > 1 and len(shapes) != len(inputs):
            raise UsageError(f"strip_unused_nodes: {len(shapes)} shapes for {len(inputs)} inputs",
                             hint="give one shape for all inputs, or one per name= in the same order")
        parsed = []
        for text in shapes:
            dims = parse_shape(text)
            if dims is None:
                raise UsageError(f"strip_unused_nodes(shape={text}): not a shape",
                                 hint='dims separated by commas, -1 for unknown: shape="1,224,224,3"')
            parsed.append(dims)
        dtype = None
        if params["type"] is not None:
            try:
                dtype = dtypes.from_name(params["type"])
            except UsageError:
                raise UsageError(f"strip_unused_nodes(type={params['type']}): unknown dtype",
                                 hint="e.g. float, float32, int32, uint8, bool, string") from None
        if not ctx.outputs:
            raise UsageError("strip_unused_nodes: the graph has no outputs to keep", hint="name them with --outputs")
        for name in inputs:
            try:
                graph.tensor(name)
            except UsageError as exc:
                raise UsageError(f"strip_unused_nodes(name={name}): {exc}", hint=exc.hint) from None
        pruned, report = prune(graph, list(ctx.outputs), inputs)
        retyped = 0
        for index, feed in enumerate(report.feeds):
            node = pruned.node(feed.node)
            if node.op not in ("Placeholder", "PlaceholderV2"):
                continue
            if dtype is not None and node.attr("dtype") != dtype:
                node.set_attr("dtype", dtype)
                retyped += 1
            if parsed:
                node.set_attr("shape", parsed[index] if len(parsed) > 1 else parsed[0])
                retyped += 1
        if parsed or dtype is not None:
            _check_shapes(graph, pruned)
        ctx.inputs = [feed.node for feed in report.feeds]
        result = TransformResult.from_counts(
            [f"input {feed.tensor} is Placeholder '{feed.node}'" for feed in report.feeds if feed.tensor != feed.node],
            nodes_removed=len(report.removed), placeholders_added=len(report.added),
            placeholders_changed=retyped)
        result.graph = pruned  # prune builds a new graph: the runner continues with it
        return result


def _check_shapes(original: Graph, pruned: Graph) -> None:
    """UsageError when the new input dtypes or shapes make a node fail shape inference that did
    not fail before (an override that contradicts the graph)."""
    from ..shape_inference import infer_shapes

    before = {node.name for node in infer_shapes(original).errors}
    for node, message in infer_shapes(pruned).errors.items():
        if node.name not in before:
            raise UsageError(f"strip_unused_nodes: the input types/shapes do not fit the graph: {message}",
                             hint="check shape= and type= against the tensors they replace (dftool inspect --nodes)")


def _short_names():
    """a, b, ..., z, ba, bb, ... (bijective base 26 after the first letter): short and unique."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    index = 0
    while True:
        n, text = index, ""
        while True:
            text = letters[n % 26] + text
            n //= 26
            if n == 0:
                break
        yield text
        index += 1


@register_transform
class ObfuscateNames(Transform):
    name = "obfuscate_names"
    description = "replace node names by short meaningless ones, keeping the inputs' and outputs' names"

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        keep = ctx.protected()
        movable = [n for n in graph.nodes if n.name not in keep]
        old_names = {n: n.name for n in movable}
        for node in movable:  # first out of the way, so a new name never meets an old one
            graph.rename(node, graph.unique_name(f"__obfuscate_{len(graph)}"))
        names = (name for name in _short_names() if name not in keep)
        renamed: dict[str, str] = {}
        for node in movable:
            new = next(names)
            graph.rename(node, new)
            renamed[old_names[node]] = new
        for node in graph.nodes:
            _rename_colocation(node, renamed)
        return TransformResult.from_counts(nodes_renamed=sum(1 for old, new in renamed.items() if old != new))


def _rename_colocation(node: Node, renamed: dict[str, str]) -> None:
    entries = class_entries(node)
    if not entries:
        return
    prefix = "loc:@"
    new = [prefix + renamed.get(e[len(prefix):], e[len(prefix):]) if e.startswith(prefix) else e for e in entries]
    if new != entries:
        node.set_attr(COLOCATION_ATTR, [e.encode() for e in new], "list(string)")
