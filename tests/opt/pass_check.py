"""The one helper every pass test uses (docs/architecture.md): precondition, run (changed as expected),
verify(), structural assertions, numerical equivalence on random feeds, and idempotence."""
from __future__ import annotations

from graphtool.ir import Graph
from graphtool.opt.base import PassContext, PassResult, registered_passes
from graphtool.opt.equivalence import differences, random_feeds


def check_pass(pass_name: str, graph: Graph, fetches: list[str], *, structure=None, feeds=None,
               expect_changed: bool = True, keep=(), strict_fp: bool = False, rtol: float = 1e-5,
               atol: float = 1e-6, idempotent: bool = True) -> PassResult:
    """Run pass `pass_name` on `graph` (in place) and check everything a pass must guarantee.
    `structure(graph)` makes the structural assertions about the result."""
    graph.verify()
    original = graph.copy()
    ctx = PassContext(fetches=[graph.tensor(f) for f in fetches], keep=set(keep), strict_fp=strict_fp)
    pass_ = registered_passes()[pass_name]()
    result = pass_.run(graph, ctx)
    assert result.changed == expect_changed, f"{pass_name}: changed={result.changed}, stats {result.stats}"
    graph.verify()
    ctx.refresh(graph)
    for fetch in fetches:
        graph.tensor(fetch)  # fetched tensors keep their names
    if structure is not None:
        structure(graph)
    feeds = random_feeds(original) if feeds is None else feeds
    problems = differences(original, graph, fetches, feeds, rtol=rtol, atol=atol)
    assert not problems, f"{pass_name} changed what the graph computes: {problems}"
    if idempotent:
        again = pass_.run(graph, ctx)
        assert not again.changed, f"{pass_name} is not idempotent: second run changed {again.stats}"
    return result


def ops(graph: Graph) -> list[str]:
    """The graph's op types, sorted (for structural assertions)."""
    return sorted(n.op for n in graph.nodes)
