"""`dftool replicate` of a training graph whose gradients come from `dftool grad` (not from
TensorFlow): a linear regression built with graphtool's builder, differentiated by the grad
pass, updated by ApplyGradientDescent, trains replicated (both modes, 2 and 4 replicas) to the
single-device losses (float64, rtol 1e-10)."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import api
from graphtool.builder import GraphBuilder
from graphtool.dtypes import float64
from graphtool.ir import Graph
from graphtool.replicate import ReplicateOptions, replicate
from graphtool.shapes import Shape

from .replicate_cases import train


def regression() -> Graph:
    b = GraphBuilder()
    x = b.placeholder("float64", [None, 3], name="x")
    y = b.placeholder("float64", [None, 1], name="y")
    w = b.op("VariableV2", [], name="w", dtype=float64, shape=Shape.of([3, 1]))
    assign = b.op("Assign", [w, np.array([[0.5], [-0.25], [1.0]])], name="w/Assign")
    b.op("NoOp", [], name="init").add_control_input(assign.node)
    error = b.sub(b.matmul(x, b.identity(w, name="w/read"), name="pred"), y, name="error")
    b.op("Mean", [b.op("Square", [error], name="square"), np.array([0, 1], np.int32)], name="loss")
    graph, result = api.grad(b.graph, "loss", ["w"], inplace=True, report=True)
    assert [entry.name for entry in result.gradients] == ["grad/w"]
    rate = graph.add_node("Const", "learning_rate", attrs={"value": _tensor(0.1), "dtype": float64})
    graph.add_node("ApplyGradientDescent", "train", [graph.tensor("w"), rate.output(0), graph.tensor("grad/w")],
                   attrs={"T": float64})
    graph.verify()
    return graph


def _tensor(value: float):
    from graphtool.proto.attr_value_pb2 import AttrValue
    from graphtool.tensor import from_ndarray

    return AttrValue(tensor=from_ndarray(np.asarray(value, np.float64), float64))


def batch() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(19)
    x = rng.normal(size=(8, 3))
    return {"x": x, "y": x @ np.array([[1.0], [2.0], [-1.0]]) + 0.1 * rng.normal(size=(8, 1))}


@pytest.mark.parametrize("mode", ["allreduce", "ps"])
@pytest.mark.parametrize("replicas", [2, 4])
def test_gradients_from_dftool_grad_are_averaged(mode, replicas):
    graph = regression()
    out, report = replicate(graph, ReplicateOptions(replicas=replicas, split=["x", "y"], mode=mode))
    assert report.losses == ["loss"] and report.updates == [{"node": "train", "op": "ApplyGradientDescent",
                                                             "averaged": ["grad/w:0"]}]
    _, expected = train(graph, batch())
    _, losses = train(out, batch())
    np.testing.assert_allclose(losses, expected, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0] / 4
