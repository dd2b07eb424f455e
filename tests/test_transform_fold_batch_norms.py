"""Batch norms folded into contractions: the remapper's rules in `optimize` and `dftool transform
fold_batch_norms` (graphtool/opt/batch_norm_folding.py, graphtool/transform/fold.py).

Each case builds a contraction followed by a batch norm in one of its frozen forms, folds it, and
checks the structure (the Mul/Add/FusedBatchNorm gone, a BiasAdd or fused kernel left) and the
values against the unfolded graph on random inputs. Then the acceptance test: the frozen Keras
MobileNetV2 fixture optimized has no more nodes than TensorFlow's Grappler left
(tests/fixtures/tf2/grappler_counts.json, tools/grappler_counts.py --fixtures tests/fixtures/tf2)
and still computes TensorFlow's outputs.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef
from graphtool.opt.base import PassContext
from graphtool.opt.manager import optimize
from graphtool.transform import TransformContext, parse_apply, run_transforms

from .helpers import run_dftool

RNG = np.random.default_rng(11)
TF2 = Path(__file__).resolve().parent / "fixtures" / "tf2"


def weights(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


def contraction(b: GraphBuilder, kind: str):
    """x -> Conv2D / DepthwiseConv2dNative / MatMul (transpose_b) with 4 output channels."""
    if kind == "MatMul":
        x = b.placeholder(dtypes.float32, [3, 5], name="x")
        return b.matmul(x, b.const(weights(4, 5)), transpose_b=True, name="contraction"), 4
    x = b.placeholder(dtypes.float32, [2, 5, 5, 2], name="x")
    if kind == "Conv2D":
        return b.conv2d(x, weights(3, 3, 2, 4), name="contraction"), 4
    conv = b.op("DepthwiseConv2dNative", [x, b.const(weights(3, 3, 2, 3))], name="contraction",
                strides=[1, 1, 1, 1], padding="SAME")
    return conv, 6


def mul_add_graph(kind: str, scale_shape=None, add_op="AddV2") -> tuple[Graph, int]:
    """contraction -> Mul(scale) -> Add(shift) -> Relu 'out' (a Keras batch norm after folding)."""
    b = GraphBuilder()
    conv, channels = contraction(b, kind)
    scale = positive(*(scale_shape or [channels]))
    scaled = b.mul(conv, b.const(scale), name="bn/mul")
    shifted = b.op(add_op, [scaled, b.const(weights(channels))], name="bn/add")
    b.op("Relu", [shifted], name="out")
    return b.graph, channels


def keras_chain_graph(kind: str) -> Graph:
    """contraction -> x * (gamma * rsqrt(var + eps)) + (beta - mean * gamma * rsqrt(var + eps)):
    the unfused chain a frozen Keras graph holds before constant folding."""
    b = GraphBuilder()
    conv, channels = contraction(b, kind)
    var, gamma = b.const(positive(channels), name="bn/var"), b.const(weights(channels), name="bn/gamma")
    mean, beta = b.const(weights(channels), name="bn/mean"), b.const(weights(channels), name="bn/beta")
    factor = b.mul(b.op("Rsqrt", [b.add(var, b.const(np.float32(1e-3)))]), gamma, name="bn/factor")
    shift = b.sub(beta, b.mul(mean, factor), name="bn/shift")
    b.op("Relu6", [b.add(b.mul(conv, factor, name="bn/mul_1"), shift, name="bn/add_1")], name="out")
    return b.graph


def fused_batch_norm_graph(kind: str) -> Graph:
    b = GraphBuilder()
    conv, channels = contraction(b, kind)
    stats = [b.const(v) for v in (weights(channels), weights(channels), weights(channels), positive(channels))]
    bn = b.op("FusedBatchNormV3", [conv, *stats], name="bn", is_training=False, epsilon=0.001)
    b.op("Relu", [bn[0]], name="out")
    return b.graph


def feeds_for(graph: Graph) -> dict[str, np.ndarray]:
    x = graph.node("x")
    shape = [d.size for d in x.attrs["shape"].shape.dim]
    return {"x": RNG.normal(size=shape).astype(np.float32)}


def values(graph: Graph, feeds) -> np.ndarray:
    return Session(graph, threads=1).run(["out"], feeds).values[0]


def transformed(graph: Graph, apply: str = "fold_batch_norms"):
    ctx = TransformContext(inputs=["x"], outputs=["out"])
    return run_transforms(graph, parse_apply(apply), ctx)


def assert_same_values(before: Graph, after: Graph) -> None:
    feeds = feeds_for(before)
    np.testing.assert_allclose(values(after, feeds), values(before, feeds), rtol=1e-5, atol=1e-5)


# --- dftool transform fold_batch_norms ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["Conv2D", "DepthwiseConv2dNative", "MatMul"])
@pytest.mark.parametrize("add_op", ["AddV2", "Add", "Sub"])
def test_transform_folds_mul_and_add_into_weights_and_bias(kind, add_op):
    graph, _ = mul_add_graph(kind, add_op=add_op)
    original = graph.copy()
    graph, [applied] = transformed(graph)
    assert applied.result.counts == {"scales_folded": 1, "adds_to_bias": 1}
    ops = Counter(n.op for n in graph.nodes)
    assert ops["Mul"] == 0 and ops[add_op] == 0 and ops["BiasAdd"] == 1 and ops[kind] == 1
    assert graph.node("bn/add").op == "BiasAdd"  # the BiasAdd takes the name of the Add it replaces
    assert sorted(n.op for n in graph.nodes) == sorted(["Placeholder", kind, "Const", "BiasAdd", "Const", "Relu"])
    assert_same_values(original, graph)
    _, [again] = transformed(graph)
    assert again.result.counts == {}


@pytest.mark.parametrize("kind", ["Conv2D", "DepthwiseConv2dNative", "MatMul"])
def test_transform_folds_the_unfused_keras_chain(kind):
    graph = keras_chain_graph(kind)
    original = graph.copy()
    graph, [applied] = transformed(graph)
    assert applied.result.counts == {"scales_folded": 1, "adds_to_bias": 1}
    # The Rsqrt/Mul/Sub chain and the statistics it read are gone with the Mul and the Add.
    assert Counter(n.op for n in graph.nodes) == Counter(
        {"Placeholder": 1, kind: 1, "Const": 2, "BiasAdd": 1, "Relu6": 1})
    assert_same_values(original, graph)


@pytest.mark.parametrize("kind", ["Conv2D", "DepthwiseConv2dNative"])
def test_transform_folds_an_inference_fused_batch_norm(kind):
    graph = fused_batch_norm_graph(kind)
    original = graph.copy()
    graph, [applied] = transformed(graph)
    assert applied.result.counts == {"fused_batch_norms_folded": 1}
    assert Counter(n.op for n in graph.nodes) == Counter(
        {"Placeholder": 1, kind: 1, "Const": 2, "BiasAdd": 1, "Relu": 1})
    assert graph.node("bn").op == "BiasAdd"
    assert_same_values(original, graph)


def test_scale_of_rank_four_per_channel_folds_and_a_spatial_one_does_not():
    graph, _ = mul_add_graph("Conv2D", scale_shape=[1, 1, 1, 4])
    graph, [applied] = transformed(graph)
    assert applied.result.counts["scales_folded"] == 1
    graph, _ = mul_add_graph("Conv2D", scale_shape=[1, 5, 1, 1])  # varies along W: not a batch norm
    graph, [applied] = transformed(graph)
    assert "scales_folded" not in applied.result.counts
    assert graph.node("bn/mul").op == "Mul"


def test_declines_when_the_contraction_has_another_user_or_the_mul_is_an_output():
    graph, _ = mul_add_graph("Conv2D")
    graph.add_node("Identity", "peek", inputs=[graph.node("contraction").output(0)], attrs={"T": dtypes.float32})
    graph, [applied] = run_transforms(graph, parse_apply("fold_batch_norms"),
                                      TransformContext(inputs=["x"], outputs=["out", "peek"]))
    assert applied.result.counts == {}
    graph, _ = mul_add_graph("Conv2D")
    graph, [applied] = run_transforms(graph, parse_apply("fold_batch_norms"),
                                      TransformContext(inputs=["x"], outputs=["out", "bn/mul"]))
    assert applied.result.counts == {}


def test_training_batch_norm_is_left_alone():
    b = GraphBuilder()
    conv, channels = contraction(b, "Conv2D")
    stats = [b.const(weights(channels)), b.const(weights(channels)), b.const(np.zeros(0, np.float32)),
             b.const(np.zeros(0, np.float32))]
    bn = b.op("FusedBatchNormV3", [conv, *stats], name="bn", is_training=True)
    b.op("Relu", [bn[0]], name="out")
    graph, [applied] = transformed(b.graph)
    assert applied.result.counts == {}


# --- optimize's remapper ----------------------------------------------------------------------

@pytest.mark.parametrize("kind, fused", [("Conv2D", "_FusedConv2D"), ("MatMul", "_FusedMatMul"),
                                         ("DepthwiseConv2dNative", None)])
def test_remapper_folds_mul_add_batch_norm_and_fuses(kind, fused):
    graph, _ = mul_add_graph(kind)
    original = graph.copy()
    ctx = PassContext(fetches=[graph.tensor("out")])
    report = optimize(graph, ctx, passes=["remapper"])
    stats = Counter()
    for run in report.runs:
        stats.update(run.stats)
    assert stats["scales_folded"] == 1 and stats["adds_to_bias"] == 1
    ops = Counter(n.op for n in graph.nodes)
    if fused:  # Conv2D/MatMul + BiasAdd + Relu become one kernel named 'out'
        assert ops == Counter({"Placeholder": 1, fused: 1, "Const": 2}) and graph.node("out").op == fused
    else:      # no fused depthwise kernel: the BiasAdd stays
        assert ops == Counter({"Placeholder": 1, kind: 1, "Const": 2, "BiasAdd": 1, "Relu": 1})
    assert_same_values(original, graph)


def test_remapper_under_strict_fp_keeps_the_mul_but_still_makes_an_add_a_fused_bias():
    graph, _ = mul_add_graph("Conv2D")
    optimize(graph, PassContext(fetches=[graph.tensor("out")], strict_fp=True), passes=["remapper"])
    assert Counter(n.op for n in graph.nodes)["Mul"] == 1  # folding the scale rounds differently
    b = GraphBuilder()
    conv, channels = contraction(b, "Conv2D")
    b.op("Relu", [b.add(conv, b.const(weights(channels)), name="bias")], name="out")
    graph = b.graph
    original = graph.copy()
    optimize(graph, PassContext(fetches=[graph.tensor("out")], strict_fp=True), passes=["remapper"])
    assert Counter(n.op for n in graph.nodes) == Counter({"Placeholder": 1, "_FusedConv2D": 1, "Const": 2})
    feeds = feeds_for(original)
    np.testing.assert_array_equal(values(graph, feeds), values(original, feeds))  # exact: x + b either way


# --- acceptance: frozen Keras MobileNetV2 -----------------------------------------------------

MOBILENET = TF2 / "keras_mobilenet_v2"


@pytest.mark.parametrize("name", ["keras_mobilenet_v2", "keras_mobilenet_v2_1000"])
def test_optimized_keras_mobilenet_v2_has_no_more_nodes_than_grappler_and_computes_the_same(name):
    grappler = json.loads((TF2 / "grappler_counts.json").read_text())["cases"][name]
    case = json.loads((TF2 / name / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(TF2 / name / "graph.pb")), name)
    original = graph.copy()
    optimize(graph, PassContext(fetches=[graph.tensor(f) for f in case["fetches"]]))
    assert len(graph) <= grappler["nodes_after"], (len(graph), grappler["nodes_after"])
    ops = Counter(n.op for n in graph.nodes)
    assert ops["Mul"] == 0 and ops["Rsqrt"] == 0  # every batch norm folded
    feeds = dict(np.load(TF2 / name / "feeds.npz"))
    expected = np.load(TF2 / name / "expected.npz")
    ours = Session(graph, threads=1).run(case["fetches"], feeds).values
    theirs = Session(original, threads=1).run(case["fetches"], feeds).values
    for fetch, after, before in zip(case["fetches"], ours, theirs):
        np.testing.assert_allclose(after, expected[fetch], rtol=case["rtol"], atol=case["atol"])
        # vs the unfolded graph: folding rounds differently; the case's own (looser) tolerances,
        # as tests/opt/test_optimize_fixtures.py allows a fixture that documents them.
        np.testing.assert_allclose(after, before, rtol=max(case["rtol"], 1e-5), atol=max(case["atol"], 1e-6))


def test_optimize_verify_passes_on_keras_mobilenet_v2(tmp_path):
    grappler = json.loads((TF2 / "grappler_counts.json").read_text())["cases"]["keras_mobilenet_v2"]
    code, stdout, stderr = run_dftool("optimize", MOBILENET / "graph.pb", tmp_path / "out.pb", "--verify", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["verified"] and report["nodes"]["after"] <= grappler["nodes_after"]


def test_transform_fold_batch_norms_on_keras_mobilenet_v2_keeps_tensorflows_outputs():
    case = json.loads((MOBILENET / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(MOBILENET / "graph.pb")), "mobilenet")
    graph, [applied] = run_transforms(graph, parse_apply("fold_batch_norms"),
                                      TransformContext(inputs=["x"], outputs=["Identity"]))
    assert applied.result.counts == {"scales_folded": 52, "adds_to_bias": 52}
    ops = Counter(n.op for n in graph.nodes)
    assert ops["Mul"] == 0 and ops["Rsqrt"] == 0 and ops["Sub"] == 0 and ops["BiasAdd"] == 53
    feeds = dict(np.load(MOBILENET / "feeds.npz"))
    expected = np.load(MOBILENET / "expected.npz")
    [value] = Session(graph, threads=1).run(case["fetches"], feeds).values
    np.testing.assert_allclose(value, expected[case["fetches"][0]], rtol=case["rtol"], atol=case["atol"])
