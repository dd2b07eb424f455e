"""`loc:@NODE` colocation entries never outlive NODE: TensorFlow refuses to import a graph whose
_class names a node it does not have, so optimize and prune drop such entries (others stay)."""
from __future__ import annotations

import numpy as np

from graphtool.ir import Graph
from graphtool.opt.base import PassContext
from graphtool.opt.manager import optimize
from graphtool.prune import prune

from .helpers import const, op, placeholder


def _class_targets(graph: Graph) -> dict[str, list[str]]:
    return {node.name: [entry.decode() if isinstance(entry, bytes) else entry for entry in node.attr("_class")]
            for node in graph.nodes if node.has_attr("_class")}


def _colocated_graph() -> Graph:
    """x + (a * b) where the Mul is colocated with the Const a and the Add with both a and x."""
    g = Graph()
    x = placeholder(g, "x", [2])
    a, b = const(g, "a", np.ones(2)), const(g, "b", np.full(2, 3.0))
    product = op(g, "Mul", "product", a, b, _class=["loc:@a"])
    op(g, "Add", "out", x, product, _class=["loc:@a", "loc:@x"])
    return g


def test_optimize_drops_colocation_with_folded_nodes():
    graph = _colocated_graph()
    ctx = PassContext(fetches=[graph.tensor("out")])
    report = optimize(graph, ctx)
    assert "a" not in graph   # folded into the product constant
    targets = _class_targets(graph)
    assert targets.get("out") == ["loc:@x"]
    assert all(t[len("loc:@"):] in graph for entries in targets.values() for t in entries)
    assert report.colocation_dropped >= 1


def test_prune_drops_colocation_with_pruned_nodes():
    graph = _colocated_graph()
    pruned, _ = prune(graph, ["out"], feeds=["product"])
    assert "a" not in pruned
    assert _class_targets(pruned)["out"] == ["loc:@x"]
    # The input graph is untouched.
    assert _class_targets(graph)["out"] == ["loc:@a", "loc:@x"]
