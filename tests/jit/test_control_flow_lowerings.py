"""The lowerings of functional control flow and TensorLists (lowerings/control_flow.py,
tensor_list.py), compared with the interpreter (which runs the same graphs lowered to v1 control
flow) on TensorFlow-made graphs.

The TF2 fixtures guard their branches with CheckNumerics, which stays in the interpreter (it may
fail the step); here it becomes an Identity in both runs, so the If/Case/call compiles whole.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from graphtool import graph_io  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _without_check_numerics(graph):
    for function in graph.library.function:
        for node in function.node_def:
            if node.op == "CheckNumerics":
                node.op = "Identity"
                del node.attr["message"]
    for node in graph.nodes:
        if node.op == "CheckNumerics":
            node.op = "Identity"
            node.del_attr("message")
    return graph


def _load(case):
    folder = FIXTURES / case
    spec = json.loads((folder / "case.json").read_text())
    graph = _without_check_numerics(from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb"))))
    with np.load(folder / "feeds.npz") as archive:
        feeds = {k: archive[k] for k in archive.files}
    return graph, spec["fetches"], feeds


@pytest.mark.parametrize("case, ops", [
    ("tf2/tf2_cond", {"If", "StatelessIf"}),
    ("tf2/tf2_switch_case", {"Case"}),
    ("tf2/tf2_nested_calls", {"StatefulPartitionedCall"}),
    ("tf2/tf2_while", {"StatelessWhile"}),
    ("tf2/tf2_nested_while", {"StatelessWhile", "While"}),
    ("tf2/tf2_while_no_trips", {"StatelessWhile", "While"}),
    ("tf2/tf2_map_fn", {"StatelessWhile", "While"}),
    ("functional/switch_case", {"StatelessCase"}),
    ("functional/loop_calls_function", {"PartitionedCall", "StatelessWhile"}),
])
def test_functional_op_compiles_and_matches_the_interpreter(case, ops):
    graph, fetches, feeds = _load(case)
    want = Session(graph, jit=False).run(fetches, feeds).values
    session = Session(graph, jit=True)
    got = session.run(fetches, feeds).values
    compiled = set()
    for cluster in session.jit_report.clusters:
        assert not cluster.program.failure, cluster.program.failure
        compiled |= set(cluster.program.ops)
        compiled |= {n.op for f in cluster.program.body.library.function for n in f.node_def
                     if any(n.op == op for op in ops)}
    assert compiled & ops, session.jit_report.lines()
    for name, a, b in zip(fetches, got, want):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", ["tf/op_tensor_list_basic", "tf/op_tensor_list_gather_scatter", "tf/dynamic_lstm",
                                  "tf/tensor_array_ops"])
def test_tensor_list_graphs_match_the_interpreter(case):
    graph, fetches, feeds = _load(case)
    want = Session(graph, jit=False).run(fetches, feeds).values
    got = Session(graph, jit=True).run(fetches, feeds).values
    for name, a, b in zip(fetches, got, want):
        assert a.shape == b.shape, name
        if b.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)
