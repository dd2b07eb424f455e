"""Gradients through conds, while loops (plain, nested, in conds, with conds inside) and
TensorArrays, against central finite differences in float64; the structure the driver builds
(stacks, the backward loop's frame); and the same values after the optimizer."""
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.grad.driver import add_gradients
from graphtool.ir import from_graphdef
from graphtool.opt.base import PassContext
from graphtool.opt.manager import optimize

from .grad_check import check_gradients, random_feeds

AXIS0 = np.array([0], np.int32)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"


def _sum(b, x, name="y"):
    return b.op("Sum", [x, np.arange(len(b.shape(x)), dtype=np.int32)], name=name)


def _inputs(b, n: bool = False):
    x = b.placeholder("float64", [3], name="x")
    w = b.placeholder("float64", [3], name="w")
    return (x, w, b.placeholder("int32", [], name="n")) if n else (x, w)


def _cond_graph():
    b = GraphBuilder()
    x, w = _inputs(b)
    p = b.placeholder("bool", [], name="p")
    chosen = b.cond(p, lambda: b.tanh(b.mul(x, w)), lambda: b.add(b.sigmoid(x), w))
    _sum(b, b.mul(chosen, x))
    return b.graph


def _while_graph(parallel_iterations: int = 10):
    """h = tanh(h * w + x), n times from h = x."""
    b = GraphBuilder()
    x, w, n = _inputs(b, n=True)
    _, h = b.while_loop(lambda i, h: b.less(i, n), lambda i, h: (b.add(i, 1), b.tanh(b.add(b.mul(h, w), x))),
                        [0, x], parallel_iterations=parallel_iterations)
    _sum(b, h)
    return b.graph


def _nested_while_graph():
    """Outer i < n: an inner loop runs i times (its trip count varies per outer iteration, and is
    0 in the first)."""
    b = GraphBuilder()
    x, w, n = _inputs(b, n=True)

    def outer(i, h):
        _, inner = b.while_loop(lambda j, g: b.less(j, i),
                                lambda j, g: (b.add(j, 1), b.tanh(b.add(b.mul(g, w), x))), [0, h], name="inner")
        return b.add(i, 1), b.mul(inner, 1.5)

    _, h = b.while_loop(lambda i, h: b.less(i, n), outer, [0, x], name="outer")
    _sum(b, h)
    return b.graph


def _while_in_cond_graph():
    b = GraphBuilder()
    x, w = _inputs(b)
    p = b.placeholder("bool", [], name="p")

    def looped():
        return b.while_loop(lambda i, h: b.less(i, 3), lambda i, h: (b.add(i, 1), b.tanh(b.mul(h, w))), [0, x])[1]

    _sum(b, b.cond(p, looped, lambda: b.mul(x, w)))
    return b.graph


def _cond_in_while_graph():
    """Each iteration takes the tanh branch when the state sums to > 0, else the sigmoid one."""
    b = GraphBuilder()
    x, w, n = _inputs(b, n=True)

    def body(i, h):
        positive = b.greater(_sum(b, h, name="total"), 0.0)
        h = b.cond(positive, lambda: b.tanh(b.mul(h, w)), lambda: b.add(b.sigmoid(h), w))
        return b.add(i, 1), h

    _, h = b.while_loop(lambda i, h: b.less(i, n), body, [0, x])
    _sum(b, h)
    return b.graph


CASES = {
    "cond-true": (_cond_graph, {"p": np.bool_(True)}),
    "cond-false": (_cond_graph, {"p": np.bool_(False)}),
    "while-0": (_while_graph, {"n": np.int32(0)}),
    "while-4": (_while_graph, {"n": np.int32(4)}),
    "while-sequential": (lambda: _while_graph(parallel_iterations=1), {"n": np.int32(3)}),
    "nested-while": (_nested_while_graph, {"n": np.int32(3)}),
    "while-in-cond-true": (_while_in_cond_graph, {"p": np.bool_(True)}),
    "while-in-cond-false": (_while_in_cond_graph, {"p": np.bool_(False)}),
    "cond-in-while": (_cond_in_while_graph, {"n": np.int32(5)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_control_flow_gradients_match_finite_differences(case):
    make, extra = CASES[case]
    feeds = {**random_feeds(sorted(CASES).index(case), x=3, w=3), **extra}
    check_gradients(make(), "y", ["x", "w"], feeds)


def test_backward_loop_structure():
    graph = _while_graph()
    report = add_gradients(graph, "y", ["x", "w"])
    assert report.loops == 1 and report.stacks >= 1
    frames = graph.frames()
    assert "grad/while/while_context" in frames.frames
    forward = frames.frames["while/while_context"]
    pushes = [n for n in forward.nodes if n.op == "StackPushV2"]
    assert len(pushes) == report.stacks
    pops = [n for n in frames.frames["grad/while/while_context"].nodes if n.op == "StackPopV2"]
    assert len(pops) == report.stacks
    # w is a loop invariant: its gradient is summed over the iterations and leaves by an Exit.
    # x is one too (read in the body) and also h's initial value: two Exits, added up.
    backward_exits = set(frames.frames["grad/while/while_context"].exits)
    assert graph.get("grad/w").inputs[0].node in backward_exits
    summed = graph.get("grad/x").inputs[0].node
    assert summed.op == "AddN" and {ref.node for ref in summed.inputs} <= backward_exits


def test_pops_in_a_cond_branch_are_guarded_by_the_saved_predicate():
    graph = _cond_in_while_graph()
    add_gradients(graph, "y", ["x", "w"])
    guarded = [n for n in graph.nodes if n.op == "StackPopV2" and n.inputs[0].node.op == "Switch"]
    assert guarded, "a value saved in a cond branch must be popped through a Switch"
    for pop in guarded:
        predicate = pop.inputs[0].node.inputs[1].node
        assert predicate.op == "StackPopV2"


def test_nested_loop_saves_the_inner_trip_count_per_outer_iteration():
    graph = _nested_while_graph()
    report = add_gradients(graph, "y", ["x", "w"])
    assert report.loops == 2
    frames = graph.frames().frames
    assert {"grad/outer/while_context", "grad/outer/inner/while_context"} <= set(frames)
    outer_pushes = [n for n in frames["outer/while_context"].nodes if n.op == "StackPushV2"]
    assert any(p.inputs[1].node.name == "grad/outer/inner/f_count/Exit" for p in outer_pushes)


def test_tensor_array_lstm_matches_finite_differences():
    """A dynamic LSTM like tf.nn.dynamic_rnn's: inputs unstacked into a TensorArray, one step per
    iteration, outputs written to a TensorArray and stacked."""
    steps, batch, depth, units = 4, 2, 3, 2
    b = GraphBuilder()
    x = b.placeholder("float64", [steps, batch, depth], name="x")
    kernel = b.placeholder("float64", [depth + units, 4 * units], name="kernel")
    bias = b.placeholder("float64", [4 * units], name="bias")
    inputs = b.tensor_array("float64", steps, element_shape=[batch, depth]).unstack(x)

    def step(t, out, c, h):
        z = b.bias_add(b.matmul(b.concat([inputs.read(t), h], 1), kernel), bias)
        i, j, f, o = b.op("Split", [1, z], num_split=4)
        c = b.add(b.mul(b.sigmoid(f), c), b.mul(b.sigmoid(i), b.tanh(j)))
        h = b.mul(b.sigmoid(o), b.tanh(c))
        return b.add(t, 1), out.write(t, h), c, h

    zeros = np.zeros((batch, units))
    outputs = b.tensor_array("float64", steps, element_shape=[batch, units])
    _, outputs, _, _ = b.while_loop(lambda t, *_: b.less(t, steps), step, [0, outputs, zeros, zeros])
    stacked = outputs.stack()
    _sum(b, b.mul(stacked, stacked))
    feeds = random_feeds(10, x=(steps, batch, depth), kernel=(depth + units, 4 * units), bias=4 * units)
    check_gradients(b.graph, "y", ["x", "kernel", "bias"], feeds)
    assert any(n.op == "TensorArrayGradV3" for n in b.graph.nodes)


def test_tensor_array_gather_scatter_split_concat():
    b = GraphBuilder()
    x = b.placeholder("float64", [4, 3], name="x")
    scattered = b.tensor_array("float64", 4, element_shape=[3]).scatter(np.array([2, 0, 3, 1], np.int32), x)
    picked = scattered.gather(b.const(np.array([3, 1], np.int32)))
    pieces = b.tensor_array("float64", 2)
    split = b.op("TensorArraySplitV3", [pieces.handle, b.tanh(x), np.array([2, 2], np.int64), pieces.flow])
    joined, _ = b.op("TensorArrayConcatV3", [pieces.handle, split], dtype="float64", element_shape_except0=[3])
    b.add(_sum(b, b.mul(picked, picked), name="picked_sq"), _sum(b, b.mul(joined, x), name="joined_x"), name="y")
    check_gradients(b.graph, "y", ["x"], random_feeds(11, x=(4, 3)))


def test_dynamic_lstm_fixture_differentiates():
    """TensorFlow's dynamic_rnn graph (tests/fixtures/tf/dynamic_lstm): the gradient of its
    outputs with respect to x, against float32 finite differences along random directions."""
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / "dynamic_lstm" / "graph.pb")))
    report = add_gradients(graph, "outputs", ["x"])
    assert report.loops == 1 and not report.warnings
    with np.load(FIXTURES / "dynamic_lstm" / "feeds.npz") as archive:
        feeds = {key: archive[key] for key in archive.files}
    session = Session(graph, threads=2)
    grad = session.run(["grad/x"], feeds).values[0].astype(np.float64)
    x = feeds["x:0"].astype(np.float64)
    rng = np.random.default_rng(12)
    for _ in range(3):
        direction = rng.normal(size=x.shape)
        eps = 1e-2
        ends = [np.sum(session.run(["outputs"], {**feeds, "x:0": (x + s * eps * direction).astype(np.float32)}
                                   ).values[0].astype(np.float64)) for s in (1, -1)]
        np.testing.assert_allclose(np.sum(grad * direction), (ends[0] - ends[1]) / (2 * eps), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("make, extra", [(_cond_in_while_graph, {"n": np.int32(5)}),
                                         (_nested_while_graph, {"n": np.int32(3)})],
                         ids=["cond-in-while", "nested-while"])
def test_optimized_gradient_graphs_give_the_same_values(make, extra):
    graph = make()
    add_gradients(graph, "y", ["x", "w"])
    fetches = ["y", "grad/x", "grad/w"]
    optimized = graph.copy()
    optimize(optimized, PassContext(fetches=[optimized.tensor(name) for name in fetches]))
    optimized.verify()
    feeds = {**random_feeds(13, x=3, w=3), **extra}
    before = Session(graph).run(fetches, feeds).values
    after = Session(optimized).run(fetches, feeds).values
    for name, want, got in zip(fetches, before, after):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
