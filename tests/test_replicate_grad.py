"""`dftool replicate` of a training graph whose gradients come from `dftool grad` (not from
TensorFlow): a linear regression built with graphtool's builder, differentiated by the grad
pass, updated by ApplyGradientDescent, trains replicated (both modes, 2 and 4 replicas) to the
single-device losses (float64, rtol 1e-10)."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import api
from graphtool.builder import GraphBuilder
from graphtool.dtypes import float64, int32
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


def recurrent() -> Graph:
    """h <- tanh(h @ w) three times in a while loop, then a linear read-out; gradients of both
    variables by `dftool grad` (a backward loop with stacks), plain SGD updates."""
    b = GraphBuilder()
    x = b.placeholder("float64", [None, 3], name="x")
    y = b.placeholder("float64", [None, 1], name="y")
    init = b.op("NoOp", [], name="init")
    reads = {}
    for name, value in (("w", np.eye(3) * 0.8 + 0.1), ("v", np.array([[0.5], [-0.25], [1.0]]))):
        variable = b.op("VariableV2", [], name=name, dtype=float64, shape=Shape.of(value.shape))
        init.add_control_input(b.op("Assign", [variable, value], name=f"{name}/Assign").node)
        reads[name] = b.identity(variable, name=f"{name}/read")
    _, h = b.while_loop(lambda i, h: b.less(i, 3),
                        lambda i, h: (b.add(i, 1), b.tanh(b.matmul(h, reads["w"]))), [b.const(0), x])
    error = b.sub(b.matmul(h, reads["v"], name="pred"), y, name="error")
    b.op("Mean", [b.op("Square", [error], name="square"), np.array([0, 1], np.int32)], name="loss")
    graph, _ = api.grad(b.graph, "loss", ["w", "v"], inplace=True, report=True)
    rate = graph.add_node("Const", "learning_rate", attrs={"value": _tensor(0.2), "dtype": float64})
    updates = [graph.add_node("ApplyGradientDescent", f"train/{name}", [graph.tensor(name), rate.output(0),
                                                                       graph.tensor(f"grad/{name}")],
                              attrs={"T": float64}) for name in ("w", "v")]
    graph.add_node("NoOp", "train", control_inputs=updates)
    graph.verify()
    return graph


@pytest.mark.parametrize("mode", ["allreduce", "ps"])
def test_a_training_graph_with_a_while_loop_replicates(mode):
    graph = recurrent()
    out, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "y"], mode=mode))
    frames = {node.attr("frame_name") for node in out if node.op == "Enter"}
    assert len(frames) == 2 * len({node.attr("frame_name") for node in graph if node.op == "Enter"})
    # each replica's backward loop pushes and pops stacks of its own
    assert sum(node.op == "StackV2" for node in out) == 2 * sum(node.op == "StackV2" for node in graph) > 0
    assert report.gradients_reduced == 2
    _, expected = train(graph, batch())
    _, losses = train(out, batch())
    np.testing.assert_allclose(losses, expected, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("mode", ["allreduce", "ps"])
def test_a_per_batch_statistic_assigned_to_a_variable_is_averaged(mode):
    """A moving mean of the inputs (as batch normalization keeps): its Assign reads per-batch
    values, so the replicas' values are averaged before it, which gives the full batch's mean."""
    graph = regression()
    moving = graph.add_node("VariableV2", "moving_mean", attrs={"dtype": float64, "shape": Shape.of([3])})
    zeros = graph.add_node("Const", "moving_mean/zeros", attrs={"value": _tensor_of(np.zeros(3)), "dtype": float64})
    graph.node("init").add_control_input(graph.add_node("Assign", "moving_mean/Assign", [moving.output(0),
                                                                                        zeros.output(0)],
                                                        attrs={"T": float64}))
    axis = graph.add_node("Const", "batch_mean/axis", attrs={"value": _tensor_of(np.int32(0)), "dtype": int32})
    mean = graph.add_node("Mean", "batch_mean", [graph.tensor("x"), axis.output(0)], attrs={"T": float64})
    decay = graph.add_node("Const", "decay", attrs={"value": _tensor_of(np.float64(0.5)), "dtype": float64})
    step = graph.add_node("Mul", "moving_mean/step", [graph.tensor("moving_mean"), decay.output(0)],
                          attrs={"T": float64})
    new = graph.add_node("AddV2", "moving_mean/new", [step.output(0), mean.output(0)], attrs={"T": float64})
    update = graph.add_node("Assign", "moving_mean/update", [moving.output(0), new.output(0)], attrs={"T": float64})
    graph.node("train").add_control_input(update)
    out, report = replicate(graph, ReplicateOptions(replicas=4, split=["x", "y"], mode=mode))
    assert {"node": "moving_mean/update", "op": "Assign", "averaged": ["moving_mean/new:0"]} in report.updates
    reference, expected = train(graph, batch(), steps=5)
    session, losses = train(out, batch(), steps=5)
    np.testing.assert_allclose(losses, expected, rtol=1e-10, atol=0)
    np.testing.assert_allclose(session.run(["moving_mean:0"]).values[0],
                               reference.run(["moving_mean:0"]).values[0], rtol=1e-12)


def _tensor_of(value):
    from graphtool.proto.attr_value_pb2 import AttrValue
    from graphtool.tensor import from_ndarray

    array = np.asarray(value)
    return AttrValue(tensor=from_ndarray(array, float64 if array.dtype == np.float64 else int32))
