"""`inspect`, `prune`, `place` and `optimize` do work linear in the graph's size.

Wall time on a shared machine is too noisy to test, so this counts work instead: the Python
function calls a command makes (cProfile's call counts are exact and do not depend on the
machine's load), on graphs of 250 and of 2,000 nodes
(a long chain, and a node with 500 outputs each read once). Work that grows linearly grows 8x (a
little less: each command has a fixed part); a scan of the whole graph per node, a topological
sort per pass or a verify per node would grow 64x and push the ratio far above the bound. (What
counting calls cannot see, a quadratic loop inside one C call or the cycle collector's walks, is
what tests/bench/bench_large_graphs.py shows in seconds at 10,000 and 100,000 nodes.)
"""
from __future__ import annotations

import contextlib
import cProfile
import io

import pytest

from cli.main import main
from graphtool.proto.graph_pb2 import GraphDef

SMALL, LARGE = 250, 2000
# 8x the nodes: linear work is at most 8x the calls; 10% to spare.
BOUND = 8 * 1.10


def _graph(path, nodes: int) -> None:
    """Half the nodes a chain (x -> Tanh -> ... -> n{k}), a quarter the outputs of one Unpack,
    each read by a Tanh, and one AddN summing them: `out`. Long paths and wide nodes both."""
    width = max(2, nodes // 4)
    graph = GraphDef()
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["shape"].shape.dim.add().size = width
    previous = "x"
    for i in range(1, nodes - 2 * width - 1):
        node = graph.node.add(name=f"n{i}", op="Tanh", input=[previous])
        node.attr["T"].type = 1
        previous = node.name
    unpack = graph.node.add(name="parts", op="Unpack", input=[previous])
    unpack.attr["T"].type = 1
    unpack.attr["num"].i = width
    unpack.attr["axis"].i = 0
    for i in range(width):
        node = graph.node.add(name=f"part{i}", op="Tanh", input=[f"parts:{i}" if i else "parts"])
        node.attr["T"].type = 1
    total = graph.node.add(name="out", op="AddN", input=[f"part{i}" for i in range(width)])
    total.attr["T"].type = 1
    total.attr["N"].i = width
    path.write_bytes(graph.SerializeToString())


def _argv(command: str, graph, out, nodes: int) -> list[str]:
    return {"inspect": ["inspect", str(graph)],
            "prune": ["prune", str(graph), str(out), "--fetch", "out", "--feed", "x"],
            "place": ["place", str(graph), str(out), "--devices", "cpu:0"],
            "optimize": ["optimize", str(graph), str(out)]}[command]


def _calls(argv: list[str]) -> int:
    profiler = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        profiler.enable()
        try:
            code = main(argv)
        finally:
            profiler.disable()
    assert code == 0, err.getvalue()
    return sum(entry.callcount for entry in profiler.getstats())


@pytest.mark.parametrize("command", ["inspect", "prune", "place", "optimize"])
def test_work_grows_linearly_with_the_graph(tmp_path, command):
    graphs = {}
    for nodes in (10, SMALL, LARGE):
        graphs[nodes] = tmp_path / f"graph_{nodes}.pb"
        _graph(graphs[nodes], nodes)
    out = tmp_path / "out.pb"
    _calls(_argv(command, graphs[10], out, 10))   # imports and first-use caches, not counted
    small = _calls(_argv(command, graphs[SMALL], out, SMALL))
    large = _calls(_argv(command, graphs[LARGE], out, LARGE))
    assert large / small <= BOUND, f"{command}: {small:,} calls at {SMALL} nodes, {large:,} at {LARGE}"
