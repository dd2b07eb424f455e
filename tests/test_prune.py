"""prune(): minimal node sets (against an independent fixed-point computation), feeds of any
output port, call frames, loops kept whole, and pruned graphs computing what the original does."""
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.errors import UsageError
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef
from graphtool.prune import prune
from tests.helpers import const, mlp_graph, op, placeholder, while_loop

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf"
PLACEHOLDERS = ("Placeholder", "PlaceholderV2")


# --- an independent expectation ------------------------------------------------------------------

def _outermost_loops(node, info) -> set[str]:
    found = set()
    for frame in {info.frame_of[node], info.output_frame(node)}:
        chain = []
        while frame is not None and not frame.is_root:
            chain.append(frame)
            frame = frame.parent
        if chain:
            found.add(chain[-1].name)
    return found


def expected_kept(graph: Graph, fetches: list[str], feeds: list[str]) -> set[str]:
    """Fixed point of 'producers of needed nodes (not through a feed) and every node of a loop a
    needed node is in', starting at the fetched nodes; plus the fed Placeholders themselves."""
    info = graph.frames()
    fed = {graph.tensor(name) for name in feeds}
    fed_placeholders = {ref.node for ref in fed if ref.node.op in PLACEHOLDERS}
    needed = {graph.tensor(name).node for name in fetches if graph.tensor(name) not in fed}
    while True:
        grow = set()
        for node in needed:
            grow |= {ref.node for ref in node.inputs if ref not in fed}
            grow |= {c for c in node.control_inputs if c not in fed_placeholders}
        loops = set().union(*[_outermost_loops(n, info) for n in needed]) if needed else set()
        grow |= {n for n in graph.nodes if _outermost_loops(n, info) & loops}
        if grow <= needed:
            return {n.name for n in needed | fed_placeholders}
        needed |= grow


def load_fixture(case: str):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    return graph, spec, dict(np.load(FIXTURES / case / "feeds.npz"))


def assert_same_values(original, pruned, fetches, pruned_fetches, feeds, pruned_feeds=None):
    want = Session(original, threads=1).run(fetches, feeds, timeout=60).values
    got = Session(pruned, threads=1).run(pruned_fetches, pruned_feeds or feeds, timeout=60).values
    for name, a, b in zip(fetches, want, got):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)


# --- small graphs ----------------------------------------------------------------------------------

def diamond() -> Graph:
    """x -> a -> {b, c} -> d;  e = Neg(x) (unused by d);  d has ^init (a NoOp after k)."""
    g = Graph()
    x = placeholder(g, "x", [3])
    a = op(g, "Tanh", "a", x)
    b, c = op(g, "Neg", "b", a), op(g, "Abs", "c", a)
    k = const(g, "k", [1.0, 2.0, 3.0])
    init = g.add_node("NoOp", "init", control_inputs=[k])
    d = op(g, "AddV2", "d", b, c)
    d.add_control_input(init)
    op(g, "Neg", "e", x)
    return g


def test_minimal_set_of_a_diamond():
    graph = diamond()
    pruned, report = prune(graph, ["d"])
    assert set(report.kept) == {"x", "a", "b", "c", "k", "init", "d"}
    assert set(report.removed) == {"e"} and report.added == []
    assert set(report.kept) == expected_kept(graph, ["d"], [])
    assert len(graph) == 8, "the input graph is not changed"


def test_feed_cuts_the_producers():
    graph = diamond()
    pruned, report = prune(graph, ["d"], feeds=["a"])
    assert set(report.kept) == {"b", "c", "k", "init", "d"}
    assert report.added == ["a"] and pruned.node("a").op == "Placeholder"
    assert pruned.node("a").attr("dtype") == dtypes.float32 and pruned.node("a").attr("shape").dims == (3,)
    assert set(report.removed) == {"x", "a", "e"}
    assert set(report.kept) == expected_kept(graph, ["d"], ["a"])
    value = np.array([0.5, -1.0, 2.0], np.float32)
    assert_same_values(graph, pruned, ["d"], ["d"], {"a": value})


def test_fetching_a_fed_tensor_returns_the_feed():
    pruned, report = prune(diamond(), ["a", "d"], feeds=["a"])
    assert report.fetches == {"a": "a", "d": "d"}
    value = np.ones(3, np.float32)
    got = Session(pruned).run(["a"], {"a": value}).values[0]
    np.testing.assert_array_equal(got, value)


def test_control_edges_from_a_fed_placeholder_move_to_its_replacement():
    g = Graph()
    x = placeholder(g, "x", [2])
    y = op(g, "Neg", "y", const(g, "c", [1.0, 2.0]))
    y.add_control_input(x)
    pruned, report = prune(g, ["y"], feeds=["x"], call_frame=True)
    arg = pruned.node("x")
    assert arg.op == "_Arg" and pruned.node("y").control_inputs == (arg,)
    # A fed non-Placeholder keeps running for its control users, as in TensorFlow.
    g2 = Graph()
    p = placeholder(g2, "p", [2])
    t = op(g2, "Tanh", "t", p)
    u = op(g2, "Neg", "u", const(g2, "c", [1.0]))
    u.add_control_input(t)
    op(g2, "AddV2", "v", t, t)
    _, report2 = prune(g2, ["u", "v"], feeds=["t"])
    assert {"t", "p", "u", "v", "c"} <= set(report2.kept) | set(report2.added)
    assert "p" in report2.kept


def test_unused_feed_stays_an_input_and_is_reported():
    pruned, report = prune(diamond(), ["e"], feeds=["x", "k"])
    assert [(f.tensor, f.used) for f in report.feeds] == [("x:0", True), ("k:0", False)]
    assert pruned.node("k").op == "Placeholder" and not pruned.node("k").has_users


def test_target_nodes_run_without_outputs():
    pruned, report = prune(diamond(), ["^init"])
    assert set(report.kept) == {"k", "init"}
    _, report = prune(diamond(), ["init"])
    assert set(report.kept) == {"k", "init"}


# --- feeds of non-zero output ports -----------------------------------------------------------------

def split_graph(extra_name: str | None = None) -> Graph:
    g = Graph()
    x = placeholder(g, "x", [4, 6])
    axis = const(g, "axis", 1, dtype=dtypes.int32)
    split = g.add_node("Split", "split", inputs=[axis.output(0), x.output(0)],
                       attrs={"T": dtypes.float32, "num_split": 2})
    op(g, "Tanh", "a", split.output(0))
    op(g, "Neg", "b", split.output(1))
    if extra_name:
        op(g, "Abs", extra_name, x)
    return g


def test_feed_of_output_one_becomes_node_k():
    graph = split_graph()
    pruned, report = prune(graph, ["b"], feeds=["split:1"])
    assert report.feeds[0].node == "split_1" and set(report.kept) == {"b"}
    assert "split" not in pruned and pruned.node("split_1").attr("shape").dims == (4, 3)
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    # The original session feeds split:1 directly; the pruned graph by either name.
    assert_same_values(graph, pruned, ["b"], ["b"], {"split:1": value})
    assert_same_values(graph, pruned, ["b"], ["b"], {"split:1": value}, {"split_1": value})


def test_feed_of_one_port_while_another_is_needed():
    graph = split_graph(extra_name="split_1")   # the natural name is taken
    pruned, report = prune(graph, ["a", "b", "split_1"], feeds=["split:1"])
    feed = report.feeds[0].node
    assert feed == "split_1/fed" and set(report.kept) == {"split", "x", "axis", "a", "b", "split_1"}
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    fed = np.full((4, 3), 7.0, np.float32)
    for key in ("split:1", feed):
        a, b = Session(pruned).run(["a", "b"], {"x": x, key: fed}).values
        np.testing.assert_allclose(a, np.tanh(x[:, :3]), rtol=1e-6)
        np.testing.assert_array_equal(b, -fed)


# --- call frames --------------------------------------------------------------------------------

def test_call_frame_args_and_retvals_follow_the_option_order():
    graph = mlp_graph()
    pruned, report = prune(graph, ["logits", "dense/relu"], feeds=["dense/bias", "x"], call_frame=True)
    args = {n.name: n.attr("index") for n in pruned.nodes if n.op == "_Arg"}
    retvals = sorted((n.attr("index"), n.name, n.inputs[0].name) for n in pruned.nodes if n.op == "_Retval")
    assert args == {"dense/bias": 0, "x": 1}
    assert retvals == [(0, "_retval_logits_0_0", "logits"), (1, "_retval_dense/relu_0_1", "dense/relu")]
    assert pruned.node("dense/bias").attr("T") == dtypes.float32
    assert report.fetches == {"logits": "_retval_logits_0_0", "dense/relu": "_retval_dense/relu_0_1"}
    assert "dense/w" not in pruned and "dense/matmul" not in pruned


def test_call_frame_graph_runs_with_default_fetches():
    graph = mlp_graph()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4)).astype(np.float32)
    hidden, logits = Session(graph).run(["dense/bias", "logits"], {"x": x}).values
    pruned, _ = prune(graph, ["logits", "dense/bias"], feeds=["dense/bias"], call_frame=True)
    session = Session(pruned)
    assert session.default_fetches() == ["_retval_logits_0_0", "_retval_dense/bias_0_1"]
    got = session.run(session.default_fetches(), {"dense/bias": hidden}).values
    np.testing.assert_array_equal(got[0], logits)
    np.testing.assert_array_equal(got[1], hidden)


def test_call_frame_refuses_what_cannot_be_returned():
    with pytest.raises(UsageError, match="--fetch init: node 'init' \\(NoOp\\) has no output"):
        prune(diamond(), ["init"], call_frame=True)
    g = Graph()
    op(g, "Identity", "result", while_loop(g, placeholder(g, "start", [])))
    with pytest.raises(UsageError, match="while-loop frame 'while/ctx'"):
        prune(g, ["while/mul"], call_frame=True)


# --- loops ---------------------------------------------------------------------------------------

def test_fetching_inside_a_loop_keeps_the_loop_whole():
    g = Graph()
    exit_node = while_loop(g, placeholder(g, "start", []))
    op(g, "Identity", "result", exit_node)
    op(g, "Neg", "unrelated", const(g, "c", 1.0))
    _, report = prune(g, ["while/mul"])
    loop_nodes = {n.name for n in g.nodes if n.name.startswith("while/")}
    assert set(report.kept) == loop_nodes | {"start"} == expected_kept(g, ["while/mul"], [])
    assert report.loops_kept == ["while/ctx"]


def test_feed_inside_a_loop_is_an_error_naming_it():
    g = Graph()
    op(g, "Identity", "result", while_loop(g, placeholder(g, "start", [])))
    with pytest.raises(UsageError, match="--feed while/Identity: the tensor lives inside while-loop frame"):
        prune(g, ["result"], feeds=["while/Identity"])
    # The Enter's input is outside the loop and may be fed.
    pruned, report = prune(g, ["result"], feeds=["start"])
    assert report.loops_kept == ["while/ctx"]


@pytest.mark.parametrize("case, fetch", [("while_loop", "iterations:0"), ("while_loop", "grown:0"),
                                         ("nested_while", "out:0"), ("cond_in_while", "out:0"),
                                         ("while_in_cond", "out:0")])
def test_loops_in_fixtures_are_kept_whole(case, fetch):
    graph, spec, feeds = load_fixture(case)
    pruned, report = prune(graph, [fetch], spec["feeds"])
    info = graph.frames()
    kept_frames = {info.frame_of[graph.node(name)].name for name in report.kept}
    for frame in info.loops:
        members = {n.name for n in frame.nodes}
        assert members <= set(report.kept) or not members & set(report.kept), frame.name
    assert kept_frames - {""}, "the fetch needs a loop"
    assert set(report.kept) == expected_kept(graph, [fetch], spec["feeds"])
    assert_same_values(graph, pruned, [fetch], [report.fetches[fetch]], feeds)


# --- fixtures ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["mlp_frozen", "cond", "while_loop", "tensor_array_ops", "dynamic_lstm",
                                  "grad_while", "train_loop", "op_array_misc"])
def test_fixture_fetches_one_at_a_time(case):
    graph, spec, feeds = load_fixture(case)
    for fetch in spec["fetches"][:4]:
        pruned, report = prune(graph, [fetch], spec["feeds"])
        assert set(report.kept) == expected_kept(graph, [fetch], spec["feeds"]), fetch
        pruned.verify()
        assert_same_values(graph, pruned, [fetch], [report.fetches[fetch]], feeds)


@pytest.mark.parametrize("case, fed", [("mlp_frozen", "Relu:0"), ("mlp_frozen", "MatMul_1:0"),
                                       ("cond", "cond/pred_id:0"), ("train_loop", "steps:0")])
def test_fixture_with_an_intermediate_feed(case, fed):
    graph, spec, feeds = load_fixture(case)
    all_feeds = {**feeds, fed: Session(graph).run([fed], feeds).values[0]}
    pruned, report = prune(graph, spec["fetches"], list(all_feeds))
    assert set(report.kept) == expected_kept(graph, spec["fetches"], list(all_feeds))
    assert_same_values(graph, pruned, spec["fetches"], [report.fetches[f] for f in spec["fetches"]], all_feeds)


# --- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fetches, feeds, message", [
    (["nope"], [], "--fetch nope: no node named 'nope'"),
    (["a:3"], [], "--fetch a:3: tensor 'a:3': node 'a' \\(Tanh\\) has 1 output"),
    (["d"], ["missing:0"], "--feed missing:0: no node named 'missing'"),
    (["d"], ["a:x"], "malformed tensor name 'a:x'"),
    ([], [], "at least one --fetch"),
])
def test_bad_names_are_usage_errors(fetches, feeds, message):
    with pytest.raises(UsageError, match=message):
        prune(diamond(), fetches, feeds)


def test_resource_handles_cannot_be_fed():
    graph, spec, _ = load_fixture("tensor_array_ops")
    handle = next(n.name for n in graph.nodes if n.op == "TensorArrayV3")
    with pytest.raises(UsageError, match=f"--feed {handle}: a resource handle cannot be fed"):
        prune(graph, spec["fetches"][:1], [handle])
