"""graphtool.compare: the error statistics of one tensor, and the --all-tensors plan and walk."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool.compare import compare_values, plan_tensors, walk
from graphtool.compare.walk import HANDLE, IN_LOOP, NOT_IN_B, chunked

from .helpers import F32, mlp_graph, op, while_loop_graph


def test_float_statistics_and_smallest_passing_tolerances():
    a = np.array([[1.0, 2.0], [4.0, -8.0]])
    b = np.array([[1.0, 2.5], [4.0, -7.0]])
    c = compare_values("y", a, b, rtol=1e-5, atol=1e-8)
    assert (c.passed, c.kind, c.mismatches, c.size) == (False, "float", 2, 4)
    assert c.abs_error.max == 1.0 and c.abs_error.max_index == [1, 1]
    assert (c.abs_error.max_a, c.abs_error.max_b) == (-8.0, -7.0)
    assert c.abs_error.mean == pytest.approx(0.375) and c.abs_error.median == pytest.approx(0.25)
    assert c.abs_error.p99 == pytest.approx(np.percentile([0, 0.5, 0, 1.0], 99))
    assert c.rel_error.max == pytest.approx(0.2) and c.rel_error.max_index == [0, 1]   # 0.5 / 2.5
    # the smallest rtol with atol 1e-8: max((|a-b| - atol) / |b|); the smallest atol with rtol 1e-5
    assert c.min_rtol == pytest.approx((0.5 - 1e-8) / 2.5)
    assert c.min_atol == pytest.approx(1.0 - 1e-5 * 7.0)
    assert compare_values("y", a, b, rtol=c.min_rtol * (1 + 1e-9), atol=1e-8).passed
    assert compare_values("y", a, b, rtol=1e-5, atol=c.min_atol * (1 + 1e-9)).passed
    assert not compare_values("y", a, b, rtol=c.min_rtol * (1 - 1e-6), atol=1e-8).passed
    assert c.summary() == "y: 2 of 4 values differ (max abs error 1, max rel error 0.2)"


def test_nan_is_equal_to_nan_only_and_counted():
    same = compare_values("y", np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.0]))
    assert same.passed and same.abs_error.max == 0.0 and same.min_rtol == 0.0
    c = compare_values("y", np.array([np.nan, 1.0, np.inf, 2.0]), np.array([1.0, 1.0, 5.0, 2.0]), rtol=1, atol=1)
    assert (c.passed, c.mismatches, c.nonfinite_mismatches) == (False, 2, 2)
    assert c.min_rtol is None and c.min_atol is None          # no tolerance passes a NaN against 1
    assert c.abs_error.max == 0.0                             # the statistics leave the non-finite pairs out
    assert c.to_json()["min_rtol"] is None


def test_zero_reference_has_infinite_relative_error():
    c = compare_values("y", np.array([0.0, 1e-3]), np.array([0.0, 0.0]), atol=1e-8)
    assert c.rel_error.max == np.inf and c.rel_error.p99 == np.inf
    assert c.min_rtol is None and c.min_atol == pytest.approx(1e-3)
    assert c.to_json()["rel_error"]["max"] == "Infinity"
    assert compare_values("y", np.array([0.0, 1e-9]), np.array([0.0, 0.0]), atol=1e-8).passed


def test_complex_and_mixed_float_widths():
    c = compare_values("z", np.array([1 + 1j], np.complex64), np.array([1 + 2j], np.complex128))
    assert c.abs_error.max == pytest.approx(1.0) and c.to_json()["abs_error"]["max_at"]["a"] == [1.0, 1.0]
    assert compare_values("y", np.float32([0.1]), np.float64([0.1]), rtol=1e-6).passed


def test_exact_comparisons_for_integers_bools_strings():
    c = compare_values("i", np.array([1, 2, 3]), np.array([1, 5, 6]))
    assert (c.kind, c.passed, c.mismatches) == ("exact", False, 2)
    assert c.first_difference == {"index": [1], "a": 2, "b": 5}
    assert compare_values("b", np.array([True]), np.array([True])).passed
    assert compare_values("s", np.array([b"x", b"y"], dtype=object), np.array(["x", "y"])).passed
    c = compare_values("s", np.array([b"x"], dtype=object), np.array([b"z"], dtype=object))
    assert c.first_difference == {"index": [0], "a": "x", "b": "z"}
    held = np.empty(2, dtype=object)                     # a variant holding arrays
    held[0], held[1] = np.arange(3), np.ones(2)
    other = np.empty(2, dtype=object)
    other[0], other[1] = np.arange(3), np.zeros(2)
    assert compare_values("v", held, held.copy()).passed
    assert compare_values("v", held, other).mismatches == 1


def test_shape_dtype_and_dead_live_differences():
    assert compare_values("y", np.zeros(2), np.zeros(3)).problem == "shape [2] vs [3]"
    assert compare_values("y", np.zeros(2, np.float32), np.zeros(2, np.int32)).problem == "dtype float32 vs int32"
    assert compare_values("y", None, np.zeros(2)).problem == "dead in A, live in B"
    assert compare_values("y", np.zeros(2), None).problem == "dead in B, live in A"
    both = compare_values("y", None, None)
    assert both.passed and both.kind == "dead"


def test_empty_tensors_pass():
    c = compare_values("y", np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert c.passed and c.abs_error.max == 0.0 and c.to_json()["abs_error"]["max_at"]["index"] == []


def test_chunks_keep_under_the_budget():
    sizes = {"a": 40, "b": 40, "c": 30, "d": 100, "e": 1}
    assert chunked(list(sizes), sizes, 100) == [["a", "b"], ["c"], ["d"], ["e"]]
    assert chunked(list(sizes), sizes, 1000) == [list(sizes)]


def _perturbed(graph, name: str, delta: float):
    copy = graph.copy()
    node = copy.node(name)
    value = np.array(node.attr("value"))
    value.flat[0] += delta
    node.set_attr("value", value)
    return copy


def _evaluate(graph):
    """A tiny evaluator for the walk: run the graph with the interpreter."""
    from graphtool.exec.session import Session

    session = Session(graph, threads=1)
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4) / 8}
    return lambda names: list(session.run(names, feeds, allow_dead=True).values)


def test_walk_names_the_perturbed_consts_first_consumer():
    graph = mlp_graph()
    names = [n.name for n in graph.topological_order()]
    weight = next(n for n in graph.topological_order() if n.op == "Const" and n.consumers())
    consumer = min(weight.consumers(), key=lambda node: names.index(node.name))
    changed = _perturbed(graph, weight.name, 0.01)
    fetches = [graph.node(names[-1]).output(0)]
    plan = plan_tensors(graph, changed, fetches)
    result = walk(plan, _evaluate(graph), _evaluate(changed), 1e-5, 1e-8, chunk_bytes=16)
    assert [c.name for c in result.sources] == [weight.name]
    assert result.first is not None and result.first.name == consumer.name
    assert result.chunks == len(plan.tensors)         # 16 bytes: every tensor is a chunk of its own
    assert result.compared == len(plan.tensors)
    same = walk(plan, _evaluate(graph), _evaluate(graph), 1e-5, 1e-8)
    assert same.diverging == [] and same.first is None and same.chunks == 1


def test_plan_leaves_out_loops_handles_and_what_b_lacks():
    graph = while_loop_graph()
    result = graph.node("result").output(0)
    plan = plan_tensors(graph, graph, [result])
    assert plan.skipped[IN_LOOP] > 0 and NOT_IN_B not in plan.skipped
    assert plan.tensors == ["start", "while/Exit", "result"]    # the loop's final value, not its insides
    smaller = graph.copy()
    smaller.remove_node(smaller.node("result"))
    assert plan_tensors(graph, smaller, [result]).skipped[NOT_IN_B] == 1

    g = mlp_graph()
    handle = g.add_node("VarHandleOp", "v", attrs={"dtype": F32, "shape": [3], "container": "", "shared_name": "v"})
    read = g.add_node("ReadVariableOp", "read", inputs=[handle.output(0)], attrs={"dtype": F32})
    total = op(g, "AddV2", "total", g.node("logits"), read)
    plan = plan_tensors(g, g, [total.output(0)])
    assert plan.skipped[HANDLE] == 1 and "read" in plan.tensors and "v" not in plan.tensors


def test_plan_leaves_out_what_is_inside_a_loop_in_b_only():
    from graphtool.ir.graph import Graph

    from .helpers import placeholder

    a = Graph()
    op(a, "Identity", "result", op(a, "Identity", "while/Identity", placeholder(a, "start", [])))
    plan = plan_tensors(a, while_loop_graph(), [a.node("result").output(0)])
    assert plan.tensors == ["start", "result"] and plan.skipped == {IN_LOOP: 1}
