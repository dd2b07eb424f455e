"""loop_invariant hoists what a loop recomputes unchanged each iteration, and nothing else."""
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.ir import from_graphdef
from graphtool.opt.equivalence import differences

from .pass_check import check_pass

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"


def frame_of(graph, name):
    """The frame name ('' for the root) the node `name` executes in."""
    return graph.frames().frame_of[graph.node(name)].name


def ops_in_frame(graph, frame_name):
    return sorted(n.op for n in graph.frames().frames[frame_name].nodes)


def loop_over(b, body, init, trips=4, name="loop"):
    """A counted loop: var 0 counts to `trips`, `body(x)` gives the next value of var 1."""
    return b.while_loop(lambda i, x: b.less(i, trips), lambda i, x: [b.add(i, 1), body(x)],
                        [b.const(0), init], name=name)[1]


def only_op(graph, op):
    (node,) = [n for n in graph.nodes if n.op == op]
    return node


def test_matmul_of_a_loop_constant_is_hoisted():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    x0 = b.placeholder(dtypes.float32, [3, 3], name="x0")
    b.identity(loop_over(b, lambda x: b.add(x, b.matmul(w, w)), x0), name="out")
    loop_ops_before = ops_in_frame(b.graph, "loop/while_context")

    def structure(g):
        assert frame_of(g, only_op(g, "MatMul").name) == ""
        loop_ops = ops_in_frame(g, "loop/while_context")
        assert "MatMul" not in loop_ops and len(loop_ops) == len(loop_ops_before) - 1
        enter = g.node("loop/MatMul/loop_invariant_enter")
        assert enter.attr("is_constant") and enter.attr("frame_name") == "loop/while_context"
        assert enter.attr("parallel_iterations") == 10 and enter.attr("T") == dtypes.float32

    result = check_pass("loop_invariant", b.graph, ["out"], structure=structure)
    assert result.stats == {"nodes_hoisted": 1, "enters_added": 1}


def test_mul_by_a_constant_takes_the_constant_along():
    b = GraphBuilder()
    c = b.placeholder(dtypes.float32, [4], name="c")
    b.identity(loop_over(b, lambda x: b.add(x, b.mul(c, 2.0, name="scaled")), c), name="out")

    def structure(g):
        scaled = g.node("loop/scaled/loop_invariant")
        assert frame_of(g, scaled.name) == ""
        const = scaled.inputs[1].node
        assert const.op == "Const" and not const.control_inputs  # the pivot edge is gone
        assert "Mul" not in ops_in_frame(g, "loop/while_context")

    check_pass("loop_invariant", b.graph, ["out"], structure=structure)


def test_a_chain_of_invariant_ops_leaves_together_through_one_enter():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    x0 = b.placeholder(dtypes.float32, [3, 3], name="x0")
    b.identity(loop_over(b, lambda x: b.add(x, b.tanh(b.mul(b.matmul(w, w), 0.5))), x0), name="out")

    def structure(g):
        for op in ("MatMul", "Mul", "Tanh"):
            assert frame_of(g, only_op(g, op).name) == ""
        assert sum(1 for n in g.nodes if n.name.endswith("loop_invariant_enter")) == 1

    result = check_pass("loop_invariant", b.graph, ["out"], structure=structure)
    assert result.stats == {"nodes_hoisted": 4, "enters_added": 1}


def test_a_node_reading_the_loop_variable_stays():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    x0 = b.placeholder(dtypes.float32, [3, 3], name="x0")
    b.identity(loop_over(b, lambda x: b.tanh(b.matmul(x, w)), x0), name="out")
    check_pass("loop_invariant", b.graph, ["out"], expect_changed=False)


def test_a_stateful_node_stays():
    b = GraphBuilder()
    shape = b.placeholder(dtypes.int32, [2], name="shape")
    x0 = b.placeholder(dtypes.float32, [2, 2], name="x0")
    noise = lambda x: b.add(x, b.op("RandomUniform", [shape], dtype=dtypes.float32, seed=1, seed2=2))
    b.identity(loop_over(b, noise, x0), name="out")
    feeds = {"shape": [2, 2], "x0": [[0.0, 1.0], [2.0, 3.0]]}
    check_pass("loop_invariant", b.graph, ["out"], feeds=feeds, expect_changed=False)


def test_a_protected_node_stays():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    x0 = b.placeholder(dtypes.float32, [3, 3], name="x0")
    b.identity(loop_over(b, lambda x: b.add(x, b.matmul(w, w, name="kept")), x0), name="out")
    check_pass("loop_invariant", b.graph, ["out"], keep=["loop/kept"], expect_changed=False)


def test_an_ordering_constraint_inside_the_loop_is_respected():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    x0 = b.placeholder(dtypes.float32, [3, 3], name="x0")

    def body(x):
        first = b.tanh(x, name="first")
        with b.control_dependencies([first]):
            return b.add(first, b.matmul(w, w, name="after_first"))

    b.identity(loop_over(b, body, x0), name="out")
    check_pass("loop_invariant", b.graph, ["out"], expect_changed=False)


def test_a_loop_var_set_to_an_invariant_value_is_not_hoisted():
    """Mul(w, 2) tied to the body pivot is dead in the last iteration; hoisted, the NextIteration
    reading it would be live there and start an iteration too many."""
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3], name="w")
    b.identity(loop_over(b, lambda x: b.mul(w, 2.0), w), name="out")
    check_pass("loop_invariant", b.graph, ["out"], expect_changed=False)


def test_its_invariant_inputs_may_still_leave():
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    b.identity(loop_over(b, lambda x: b.mul(b.matmul(w, w), 2.0, name="next"), w), name="out")

    def structure(g):
        assert frame_of(g, only_op(g, "MatMul").name) == ""
        assert frame_of(g, "loop/next") == "loop/while_context"

    check_pass("loop_invariant", b.graph, ["out"], structure=structure)


def nested_loops(inner_body):
    """An outer loop over y (3 trips) running an inner loop over x (2 trips) per iteration."""
    b = GraphBuilder()
    w = b.placeholder(dtypes.float32, [3, 3], name="w")
    y0 = b.placeholder(dtypes.float32, [3, 3], name="y0")
    inner = lambda y: loop_over(b, lambda x: inner_body(b, w, y, x), y, trips=2, name="inner")
    b.identity(loop_over(b, inner, y0, trips=3, name="outer"), name="out")
    return b.graph


def test_inner_invariant_outer_variant_value_leaves_one_level():
    graph = nested_loops(lambda b, w, y, x: b.add(x, b.mul(b.tanh(y), 0.25, name="scaled")))

    def structure(g):
        assert frame_of(g, only_op(g, "Tanh").name) == "outer/while_context"
        assert frame_of(g, only_op(g, "Mul").name) == "outer/while_context"
        const = only_op(g, "Mul").inputs[1].node
        assert const.op == "Const" and frame_of(g, const.name) == "outer/while_context"
        enter = g.node("outer/inner/scaled/loop_invariant_enter")
        assert enter.attr("frame_name") == "outer/inner/while_context"
        assert frame_of(g, enter.name) == "outer/while_context"

    check_pass("loop_invariant", graph, ["out"], structure=structure)


def test_a_value_invariant_in_both_loops_leaves_both():
    graph = nested_loops(lambda b, w, y, x: b.add(x, b.add(y, b.matmul(w, w))))

    def structure(g):
        assert frame_of(g, only_op(g, "MatMul").name) == ""
        # the inner loop reads y + (w @ w) computed once per outer iteration
        assert "AddV2" in ops_in_frame(g, "outer/while_context")

    check_pass("loop_invariant", graph, ["out"], structure=structure)


FIXTURE_CASES = sorted(p.parent.name for p in FIXTURES.glob("*/graph.pb"))
# What loop_invariant hoists in the TensorFlow fixtures: Grappler-made graphs keep most loop work
# tied to the loop variables; train_loop recomputes its loss gradient's seed every step.
EXPECTED_HOISTED = {"train_loop": 10,
                    "gradref_nested_while": 2}  # the inner trip count i + 1 (outer i) and its 1


def load_case(case):
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    return graph, json.loads((FIXTURES / case / "case.json").read_text())


def feed_sets(case, spec):
    """The case's recorded feed sets: the default run and its extra runs (zero iterations, ...)."""
    files = ["feeds.npz"] + [extra["feeds"] for extra in spec.get("extra_runs", [])]
    return [dict(np.load(FIXTURES / case / name)) for name in files]


@pytest.mark.parametrize("case", FIXTURE_CASES)
def test_tensorflow_fixture(case):
    graph, spec = load_case(case)
    original = graph.copy()
    default_feeds, *extra_feeds = feed_sets(case, spec)
    hoisted = EXPECTED_HOISTED.get(case, 0)
    result = check_pass("loop_invariant", graph, spec["fetches"], feeds=default_feeds,
                        expect_changed=bool(hoisted))
    assert result.stats.get("nodes_hoisted", 0) == hoisted
    for feeds in extra_feeds:
        assert not differences(original, graph, spec["fetches"], feeds)
