"""graphtool/costs.py: FLOPs and MACs by formula on hand-built graphs, sums per op type, and a
sample graph's totals."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtool import api
from graphtool.builder import GraphBuilder
from graphtool.costs import graph_costs, node_costs

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"


def _conv_graph():
    b = GraphBuilder()
    x = b.placeholder("float32", [2, 16, 16, 3], name="x")
    k = b.const(np.zeros((3, 3, 3, 8), np.float32), name="k")
    conv = b.conv2d(x, k, strides=2, padding="SAME", name="conv")           # -> [2, 8, 8, 8]
    dw_k = b.const(np.zeros((5, 5, 8, 2), np.float32), name="dwk")
    dw = b.op("DepthwiseConv2dNative", [conv, dw_k], name="dw", strides=[1, 1, 1, 1], padding="VALID",
              data_format="NHWC", dilations=[1, 1, 1, 1])                      # -> [2, 4, 4, 16]
    relu = b.relu(dw, name="relu")
    pool = b.max_pool(relu, ksize=2, strides=2, name="pool")                 # -> [2, 2, 2, 16]
    flat = b.op("Reshape", [pool, b.const(np.array([2, 64], np.int32), name="flat_shape")], name="flat")
    w = b.const(np.zeros((64, 10), np.float32), name="w")
    mm = b.matmul(flat, w, name="mm")                                         # -> [2, 10]
    b.op("Sum", [mm, b.const(np.array([1], np.int32), name="axis")], name="sum", keep_dims=False)
    return b.graph


def test_conv_depthwise_matmul_pool_by_formula():
    costs = node_costs(_conv_graph())
    conv = costs["conv"]
    assert (conv.macs, conv.flops) == (2 * 8 * 8 * 8 * 3 * 3 * 3, 2 * 2 * 8 * 8 * 8 * 3 * 3 * 3)
    dw = costs["dw"]
    assert (dw.macs, dw.flops) == (2 * 4 * 4 * 16 * 5 * 5, 2 * 2 * 4 * 4 * 16 * 5 * 5)
    assert (costs["mm"].macs, costs["mm"].flops) == (2 * 10 * 64, 2 * 2 * 10 * 64)
    assert (costs["relu"].flops, costs["relu"].macs) == (2 * 4 * 4 * 16, 0)
    assert (costs["pool"].flops, costs["pool"].macs) == (2 * 2 * 2 * 16 * 4, 0)
    assert costs["sum"].flops == 2 * 10                                       # a reduction reads its input
    assert costs["flat"].flops == 0 and costs["flat"].bytes_accessed == 2 * (2 * 64 * 4) + 2 * 4
    assert costs["x"].flops == 0 and costs["x"].bytes_accessed == 0 and costs["k"].bytes_accessed == 0
    # conv reads x and k and writes its output, float32
    assert conv.bytes_accessed == 4 * (2 * 16 * 16 * 3 + 3 * 3 * 3 * 8 + 2 * 8 * 8 * 8)
    assert not any(c.assumed for c in costs.values())


def test_totals_per_op_and_model_size():
    costs = graph_costs(_conv_graph())
    by_node = costs.nodes
    assert costs.total.flops == sum(c.flops or 0 for c in by_node.values())
    assert costs.total.macs == by_node["conv"].macs + by_node["dw"].macs + by_node["mm"].macs
    assert list(costs.by_op)[0] == "Conv2D"                                   # most FLOPs first
    assert costs.by_op["Conv2D"].nodes == 1 and costs.by_op["Const"].flops == 0
    assert costs.parameters["elements"] == 3 * 3 * 3 * 8 + 5 * 5 * 8 * 2 + 64 * 10
    assert costs.model_bytes == 4 * costs.parameters["elements"] + 4 * 2 + 4 * 1
    assert costs.notes == []
    body = costs.to_json()
    assert body["total"]["flops"] == costs.total.flops and body["by_op"]["MatMul"]["macs"] == 1280


def test_batch_matmul_transposed_matmul_and_einsum():
    b = GraphBuilder()
    a = b.placeholder("float32", [4, 5, 6], name="a")
    c = b.placeholder("float32", [4, 6, 7], name="c")
    b.op("BatchMatMulV2", [a, c], name="bmm")                                # [4,5,7], K = 6
    m = b.placeholder("float32", [6, 5], name="m")
    n = b.placeholder("float32", [6, 3], name="n")
    b.matmul(m, n, transpose_a=True, name="mt")                              # [5,3], K = 6
    b.op("Einsum", [[a, c]], name="ein", equation="bij,bjk->bik")
    costs = node_costs(b.graph)
    assert costs["bmm"].macs == 4 * 5 * 7 * 6 and costs["bmm"].flops == 2 * 4 * 5 * 7 * 6
    assert costs["mt"].macs == 5 * 3 * 6
    assert costs["ein"].macs == 4 * 5 * 6 * 7


def test_conv3d_and_fused_batch_norm():
    b = GraphBuilder()
    x = b.placeholder("float32", [1, 4, 6, 6, 2], name="x")
    k = b.const(np.zeros((2, 3, 3, 2, 5), np.float32), name="k")
    b.op("Conv3D", [x, k], name="c3", strides=[1, 1, 1, 1, 1], padding="SAME")   # [1,4,6,6,5]
    y = b.placeholder("float32", [1, 4, 4, 3], name="y")
    ones = b.const(np.ones(3, np.float32), name="ones")
    b.op("FusedBatchNormV3", [y, ones, ones, ones, ones], name="bn", is_training=False, epsilon=1e-3)
    costs = node_costs(b.graph)
    assert costs["c3"].macs == 4 * 6 * 6 * 5 * (2 * 3 * 3 * 2)
    assert (costs["bn"].macs, costs["bn"].flops) == (48, 96)


def test_unknown_batch_counts_as_one_and_says_so():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 8], name="x")
    b.matmul(x, b.const(np.zeros((8, 4), np.float32), name="w"), name="mm")
    graph = b.graph
    costs = graph_costs(graph)
    assert costs.nodes["mm"].macs == 8 * 4 and costs.nodes["mm"].assumed
    assert costs.total.assumed == 1
    assert costs.notes == ["1 node(s) counted with unknown dims = 1 (e.g. batch 1)"]
    fed = node_costs(graph, feed_shapes={"x:0": [16, 8]})
    assert fed["mm"].macs == 16 * 8 * 4 and not fed["mm"].assumed


def test_unknown_rank_is_unknown_not_summed():
    b = GraphBuilder()
    x = b.placeholder("float32", None, name="x")
    b.relu(x, name="r")
    costs = graph_costs(b.graph)
    assert costs.nodes["r"].flops is None and costs.total.unknown == 1 and costs.total.flops == 0


def test_sample_convnet_totals():
    graph = api.load(str(SAMPLES / "convnet.pb"))
    costs = graph_costs(graph)
    # x is [?, 8, 8, 3]: counted at batch 1. conv1 3x3x3->8 SAME: 8*8*8 outputs x 27; conv2
    # 3x3x8->16 stride 2 on the pooled 4x4: 2*2*16 outputs x 72; logits 16 -> 10; batch norm
    # one MAC per element.
    assert costs.nodes["conv1/Conv2D"].macs == 8 * 8 * 8 * 27
    assert costs.nodes["conv2/Conv2D"].macs == 2 * 2 * 16 * 72
    assert costs.nodes["logits/MatMul"].macs == 16 * 10
    assert costs.nodes["conv2/FusedBatchNormV3"].macs == 2 * 2 * 16
    assert costs.total.to_json() == {"nodes": 23, "flops": 39036, "macs": 18656, "bytes_accessed": 22776,
                                     "unknown_nodes": 0, "assumed_nodes": 12}
    assert costs.total.flops == sum(t.flops for t in costs.by_op.values())
    assert costs.notes == ["12 node(s) counted with unknown dims = 1 (e.g. batch 1)"]


def test_fused_ops_keep_the_arithmetic_of_what_they_fused():
    b = GraphBuilder()
    x = b.placeholder("float32", [1, 4, 4, 2], name="x")
    k = b.const(np.zeros((1, 1, 2, 3), np.float32), name="k")
    bias = b.const(np.zeros(3, np.float32), name="bias")
    b.op("_FusedConv2D", [x, k, [bias], []], name="fused", strides=[1, 1, 1, 1], padding="SAME",
         fused_ops=["BiasAdd", "Relu"], num_args=1)
    cost = node_costs(b.graph)["fused"]
    outputs = 4 * 4 * 3
    assert cost.macs == outputs * 2 and cost.flops == 2 * outputs * 2 + 2 * outputs


def test_optimize_reports_costs_before_and_after(tmp_path):
    import json

    from tests.helpers import run_dftool

    code, stdout, stderr = run_dftool("optimize", SAMPLES / "convnet.pb", tmp_path / "out.pb", "--json")
    assert code == 0, stderr
    costs = json.loads(stdout)["costs"]
    before = graph_costs(api.load(str(SAMPLES / "convnet.pb")))
    assert costs["before"] == {"parameters": 1610, "model_bytes": 6448, "flops": 39036, "macs": 18656,
                               "bytes_accessed": 22776, "notes": before.notes}
    # batch norm folded into conv2's weights: its 64 MACs go, the fused BiasAdd+Relu keep their FLOPs
    assert costs["after"]["macs"] == 18592 and costs["after"]["flops"] == 38972
    assert costs["after"]["parameters"] == 1562
    assert """\
costs before/after (one run)
figure                 before   after   delta
parameters              1,610   1,562     -48
model size (bytes)      6,448   6,256    -192
FLOPs                  39,036  38,972     -64
MACs                   18,656  18,592     -64
""" in stderr


def test_backprops_and_maxpool_v2():
    b = GraphBuilder()
    dy = b.placeholder("float32", [2, 4, 4, 6], name="dy")
    k = b.const(np.zeros((3, 3, 5, 6), np.float32), name="k")
    b.op("Conv2DBackpropInput", [b.const(np.array([2, 4, 4, 5], np.int32), name="sizes"), k, dy], name="dx",
         strides=[1, 1, 1, 1], padding="SAME")
    x = b.placeholder("float32", [2, 4, 4, 5], name="x")
    b.op("Conv2DBackpropFilter", [x, b.const(np.array([3, 3, 5, 6], np.int32), name="fsizes"), dy], name="dk",
         strides=[1, 1, 1, 1], padding="SAME")
    dwk = b.const(np.zeros((3, 3, 5, 2), np.float32), name="dwk")
    ddw = b.placeholder("float32", [2, 4, 4, 10], name="ddw")
    b.op("DepthwiseConv2dNativeBackpropInput", [b.const(np.array([2, 4, 4, 5], np.int32), name="dsizes"), dwk, ddw],
         name="ddx", strides=[1, 1, 1, 1], padding="SAME")
    b.op("MaxPoolV2", [x, b.const(np.array([1, 2, 2, 1], np.int32), name="ks"),
                       b.const(np.array([1, 2, 2, 1], np.int32), name="st")], name="pool", padding="VALID")
    costs = node_costs(b.graph)
    assert costs["dx"].macs == costs["dk"].macs == 2 * 4 * 4 * 6 * (3 * 3 * 5)
    assert costs["ddx"].macs == 2 * 4 * 4 * 10 * 3 * 3
    assert costs["pool"].flops == 2 * 2 * 2 * 5 * 4


def test_loops_count_one_iteration_and_calls_are_unknown():
    loop = graph_costs(api.load(str(SAMPLES / "while_loop.pb")))
    assert loop.notes == ["28 node(s) inside while loops counted once (one iteration)"]
    fixture = Path(__file__).resolve().parent / "fixtures" / "tf2" / "keras_lstm_functional" / "graph.pb"
    called = graph_costs(api.load(str(fixture)))
    calls = [c for c in called.nodes.values() if c.flops is None]
    assert len(calls) == 1 and called.total.unknown == 1
    assert called.notes == ["1 function call(s) (If, While, PartitionedCall, ...): their bodies are not counted"]
