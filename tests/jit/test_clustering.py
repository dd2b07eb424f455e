"""The auto-clustering pass and the cluster rewrite: clusters never create cycles, what cannot be
compiled stays in the interpreter with its reason, static inputs and dead branches are respected,
and the rewritten graph computes what the original computes."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

pytest.importorskip("jax")

from graphtool import dtypes  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import Graph  # noqa: E402
from graphtool.jit.clustering import find_clusters  # noqa: E402
from graphtool.jit.engine import compile_graph  # noqa: E402
from graphtool.jit.graph_cycles import GraphCycles  # noqa: E402
from graphtool.jit.lowerings import registry  # noqa: E402

from ..helpers import const, op, placeholder  # noqa: E402

F32 = dtypes.float32


def _decline(monkeypatch, op_name: str, marker: str):
    """Make the lowering of `op_name` decline nodes whose name contains `marker`."""
    lowering = registry.lookup(op_name)
    patched = dataclasses.replace(lowering, supports=lambda node: "declined by the test" if marker in node.name else None)
    monkeypatch.setitem(registry._LOWERINGS, op_name, patched)


def _same_results(graph: Graph, fetches, feeds):
    want = Session(graph, jit=False).run(fetches, feeds).values
    session = Session(graph, jit=True)
    got = session.run(fetches, feeds).values
    for name, a, b in zip(fetches, got, want):
        assert a.dtype == b.dtype, name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    return session


# --- GraphCycles ----------------------------------------------------------------------------------

def test_contracting_an_edge_is_refused_when_another_path_joins_its_ends():
    cycles = GraphCycles(3)          # 0 -> 1 -> 2 and 0 -> 2
    for a, b in ((0, 1), (1, 2), (0, 2)):
        assert cycles.insert_edge(a, b)
    assert cycles.contract_edge(0, 2) is None     # 0 -> 1 -> 2 would become a cycle through 1
    merged = cycles.contract_edge(0, 1)
    assert merged is not None
    assert cycles.contract_edge(merged, 2) is not None   # now the only path


def test_an_edge_closing_a_cycle_is_refused_and_ranks_stay_topological():
    rng = random.Random(3)
    cycles = GraphCycles(30)
    edges = set()
    for _ in range(200):
        a, b = rng.randrange(30), rng.randrange(30)
        if cycles.insert_edge(a, b):
            edges.add((a, b))
    assert all(cycles.rank[a] < cycles.rank[b] for a, b in edges if a != b)


# --- random DAGs ------------------------------------------------------------------------------------

def _random_dag(seed: int, size: int = 40) -> tuple[Graph, list[str]]:
    """Tanh/Mul/AddV2 over two placeholders; about a third of the Tanh nodes are 'x_' ones the
    test makes the lowering decline, so clusters must route around them."""
    rng = random.Random(seed)
    g = Graph()
    values = [placeholder(g, "a", [3]), placeholder(g, "b", [3])]
    for k in range(size):
        kind = rng.choice(["Tanh", "Tanh", "Mul", "AddV2"])
        if kind == "Tanh":
            name = f"x_{k}" if rng.random() < 0.35 else f"t_{k}"
            values.append(op(g, "Tanh", name, rng.choice(values[-8:])))
        else:
            values.append(op(g, kind, f"n_{k}", rng.choice(values[-8:]), rng.choice(values)))
    fetches = [n.name for n in g.nodes if not n.has_users]
    return g, fetches


@pytest.mark.parametrize("seed", range(12))
def test_clusters_of_random_dags_create_no_cycle_and_compute_the_same(seed, monkeypatch):
    _decline(monkeypatch, "Tanh", "x_")
    graph, fetches = _random_dag(seed)
    feeds = {"a": np.linspace(-1, 1, 3, dtype=np.float32), "b": np.array([0.5, -0.25, 2], np.float32)}
    session = _same_results(graph, fetches, feeds)
    report = session.jit_report
    assert report.clusters, report.lines()
    assert all(reason == "declined by the test" for name, reason in report.left_out.items() if name.startswith("x_"))
    assert not any(name.startswith("x_") for c in report.clusters for name in (n.name for n in c.program.body.nodes))
    # The rewritten graph, every cluster contracted to one node, is still a valid DAG.
    rewritten = graph.copy()
    compile_graph(rewritten, "", {(f, 0) for f in fetches}, {"a", "b"}, set(),
                  interpreter=lambda body, device: Session(body, device=device, jit=False))
    rewritten.verify()
    assert [n.op for n in rewritten.topological_order()].count("_JitCluster") >= 1


def test_contraction_never_creates_a_path_out_of_a_cluster_and_back(monkeypatch):
    """a -> t1 -> x (declined) -> t2, and t1 -> t2: t1 and t2 cannot share a cluster."""
    _decline(monkeypatch, "Tanh", "x_")
    g = Graph()
    a = placeholder(g, "a", [2])
    t1 = op(g, "Mul", "t1", a, a)
    x = op(g, "Tanh", "x_mid", t1)
    op(g, "AddV2", "t2", t1, x)
    clustering = find_clusters(g)
    assert not any({"t1", "t2"} <= {n.name for n in c} for c in clustering.clusters)
    _same_results(g, ["t2"], {"a": np.array([0.5, 2], np.float32)})


# --- what stays out -------------------------------------------------------------------------------

def test_stateful_and_string_nodes_stay_out_with_reasons():
    g = Graph()
    shape = const(g, "shape", [4], dtype=dtypes.int32)
    rand = g.add_node("RandomUniform", "rand", inputs=[shape.output(0)], attrs={"dtype": F32, "T": dtypes.int32})
    y = op(g, "Tanh", "y", op(g, "Mul", "sq", rand, rand))
    text = g.add_node("AsString", "text", inputs=[y.output(0)], attrs={"T": F32})
    clustering = find_clusters(g)
    assert clustering.reasons[rand].startswith("stateful op RandomUniform")
    assert "string" in clustering.reasons[text]
    assert [sorted(n.name for n in c) for c in clustering.clusters] == [["sq", "y"]]


def test_a_lone_op_is_not_worth_a_cluster():
    g = Graph()
    op(g, "Tanh", "y", placeholder(g, "a", [2]))
    clustering = find_clusters(g)
    assert not clustering.clusters
    assert "single op" in clustering.reasons[g.get("y")]


def test_fed_and_target_nodes_stay_out():
    g = Graph()
    a = placeholder(g, "a", [2])
    m = op(g, "Mul", "m", a, a)
    op(g, "Tanh", "t", op(g, "Mul", "m2", m, m))
    clustering = find_clusters(g, fed={"m"}, targets={"t"})
    assert clustering.reasons[g.get("m")] == "fed by the caller"
    assert clustering.reasons[g.get("t")] == "a target of the step"


def test_nodes_on_different_devices_do_not_share_a_cluster():
    g = Graph()
    a = placeholder(g, "a", [2])
    m = op(g, "Mul", "m", a, a)
    m.device = "/job:localhost/replica:0/task:0/device:CPU:0"
    t = op(g, "Tanh", "t", m)
    t.device = "/job:localhost/replica:0/task:0/device:CPU:1"
    clustering = find_clusters(g)
    assert not any(len(c) > 1 for c in clustering.clusters)


# --- static inputs ----------------------------------------------------------------------------------

@pytest.fixture
def reshape_lowering(monkeypatch):
    """A Reshape lowering whose shape input must be static (as h-lower's is)."""
    if registry.lookup("Reshape") is None:
        def reshape(ctx, x, shape):
            return ctx.jnp.reshape(x, tuple(int(d) for d in shape))
        monkeypatch.setitem(registry._LOWERINGS, "Reshape",
                            registry.LoweringDef("Reshape", reshape, static_inputs=(1,)))


def _reshape_graph(shape_from_traced: bool) -> Graph:
    g = Graph()
    a = placeholder(g, "a", [2, 3])
    sq = op(g, "Mul", "sq", a, a)
    if shape_from_traced:   # the shape is a traced value: Cast(sq[...]) would do; here sq's elements
        shape = g.add_node("Cast", "shape", inputs=[op(g, "Tanh", "tn", sq).output(0)],
                           attrs={"SrcT": F32, "DstT": dtypes.int32})
    else:                   # [5, 5] - Shape(sq) = [3, 2]: known when compiling
        dims = g.add_node("Shape", "dims", inputs=[sq.output(0)], attrs={"T": F32, "out_type": dtypes.int32})
        shape = op(g, "Sub", "shape", const(g, "five", [5, 5], dtype=dtypes.int32), dims, dtype=dtypes.int32)
    r = g.add_node("Reshape", "r", inputs=[sq.output(0), shape.output(0)], attrs={"T": F32, "Tshape": dtypes.int32})
    op(g, "Tanh", "out", op(g, "Mul", "r2", r, r))
    return g


def test_a_static_input_from_shapes_compiles_in_the_cluster(reshape_lowering):
    g = _reshape_graph(shape_from_traced=False)
    clustering = find_clusters(g)
    assert any("r" in {n.name for n in c} and "sq" in {n.name for n in c} for c in clustering.clusters)
    _same_results(g, ["out"], {"a": np.arange(6, dtype=np.float32).reshape(2, 3) / 6})


def test_a_static_input_computed_from_traced_values_keeps_its_consumer_out(reshape_lowering):
    g = _reshape_graph(shape_from_traced=True)
    clustering = find_clusters(g)
    for cluster in clustering.clusters:
        names = {n.name for n in cluster}
        assert not ({"r", "shape"} <= names), names


# --- fetches, deadness ---------------------------------------------------------------------------

def test_a_fetched_tensor_inside_a_cluster_is_a_cluster_output():
    g = Graph()
    a = placeholder(g, "a", [3])
    m = op(g, "Mul", "m", a, a)
    op(g, "Tanh", "t", op(g, "AddV2", "s", m, a))
    session = _same_results(g, ["t", "m", "s"], {"a": np.array([1, -2, 0.5], np.float32)})
    assert len(session.jit_report.clusters) == 1


def test_nodes_of_the_two_branches_of_a_cond_are_not_clustered_together():
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    p = b.placeholder("bool", [], name="p")
    b.cond(p, lambda: b.tanh(b.mul(x, x)), lambda: b.tanh(b.add(x, x)), name="c")
    graph = b.graph
    dead = __import__("graphtool.jit.candidates", fromlist=["x"]).deadness_signatures(graph)
    for cluster in find_clusters(graph).clusters:
        assert len({dead[n] for n in cluster}) == 1
    fetch = [n.name for n in graph.nodes if n.op == "Merge"][0]
    for pred in (True, False):
        _same_results(graph, [fetch], {"x": np.array([1, 2, -3], np.float32), "p": np.array(pred)})


def test_an_assert_guarding_a_cluster_still_fails_the_step():
    """The JIT drops the control edge out of an Assert (so clusters are not cut around it); the
    Assert still runs and fails the step on bad input, as without the JIT."""
    from graphtool.errors import DftoolError

    g = Graph()
    x = placeholder(g, "x", [3])
    positive = g.add_node("Greater", "positive", inputs=[x.output(0), const(g, "zero", 0.0).output(0)],
                          attrs={"T": F32})
    all_positive = g.add_node("All", "all_positive", inputs=[positive.output(0), const(g, "axis", [0], dtype=dtypes.int32).output(0)],
                              attrs={"Tidx": dtypes.int32})
    check = g.add_node("Assert", "check", inputs=[all_positive.output(0), x.output(0)], attrs={"T": [F32]})
    y = op(g, "Tanh", "y", op(g, "Mul", "sq", x, x))
    y.add_control_input(check)
    good = {"x": np.array([1, 2, 3], np.float32)}
    assert np.allclose(Session(g, jit=True).run(["y"], good).values[0], np.tanh(good["x"] ** 2))
    for jit in (False, True):
        with pytest.raises(DftoolError, match="check|assert|Assert"):
            Session(g, jit=jit).run(["y"], {"x": np.array([1, -2, 3], np.float32)})
