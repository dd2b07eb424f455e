"""place(): constraints, colocation, kernels, soft placement, the cost model, and fixture graphs
that stay valid and compute the same values once placed."""
import json
from pathlib import Path

import numpy as np
import pytest

import graphtool.exec.kernels as kernel_registry
from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.errors import InvalidGraphError, UsageError
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef
from graphtool.placement import place
from graphtool.placement.colocation import colocation_groups
from graphtool.placement.cost_model import CostModel
from tests.helpers import const, mlp_graph, op, placeholder, while_loop

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf"
PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, CPU1, CPU2, GPU0, GPU1 = (PREFIX + d for d in ("CPU:0", "CPU:1", "CPU:2", "GPU:0", "GPU:1"))


def devices_of(graph: Graph, *names: str) -> list[str]:
    return [graph.node(name).device for name in names]


def matmul_graph(size: int = 1024, extra_matmul: bool = False) -> Graph:
    """x[size,size] @ w -> tanh; optionally a second, independent product x2 @ w2."""
    b = GraphBuilder()
    x = b.placeholder("float32", [size, size], name="x")
    w = b.const(np.ones((size, size), np.float32), name="w")
    b.tanh(b.matmul(x, w, name="big"), name="out")
    if extra_matmul:
        x2 = b.placeholder("float32", [size, size], name="x2")
        w2 = b.const(np.ones((size, size), np.float32), name="w2")
        b.tanh(b.matmul(x2, w2, name="big2"), name="out2")
    return b.graph


def shape_arithmetic_graph(heavy_neighbour: bool = False) -> Graph:
    """y = big matmul; reshape(y, [y.shape[0], -1]) through Shape/StridedSlice/Pack on int32."""
    b = GraphBuilder()
    y = b.matmul(b.placeholder("float32", [512, 512], name="x"),
                 b.const(np.ones((512, 512), np.float32), name="w"), name="big")
    if heavy_neighbour:   # independent heavy work that loads another device
        b.tanh(b.matmul(b.placeholder("float32", [512, 512], name="x2"),
                        b.const(np.ones((512, 512), np.float32), name="w2"), name="big2"), name="out2")
    shape = b.shape_of(y, name="shape")
    rows = b.op("StridedSlice", [shape, b.const(np.array([0], np.int32), name="begin"),
                                 b.const(np.array([1], np.int32), name="end"),
                                 b.const(np.array([1], np.int32), name="strides")], name="rows", shrink_axis_mask=1)
    packed = b.stack([rows, b.const(np.int32(-1), name="minus_one")], name="pack")
    b.tanh(b.reshape(y, packed, name="reshape"), name="out")
    return b.graph


SHAPE_OPS = ("shape", "begin", "end", "strides", "rows", "minus_one", "pack")


# --- constraints -------------------------------------------------------------------------------

def test_every_node_gets_a_full_canonical_name():
    graph = mlp_graph()
    report = place(graph, ["cpu:0", "cpu:1"])
    assert {n.device for n in graph.nodes} <= {CPU0, CPU1}
    assert report.assignment == {n.name: n.device for n in graph.nodes}
    assert sum(report.nodes_per_device().values()) == len(graph)


@pytest.mark.parametrize("requested, expected", [
    ("/device:CPU:1", CPU1), ("/cpu:1", CPU1), ("cpu:1", CPU1), (CPU1, CPU1),
    ("/job:localhost/device:CPU:2", CPU2), ("/device:GPU:*", GPU0), ("/gpu:0", GPU0)])
def test_explicit_devices_are_obeyed(requested, expected):
    graph = mlp_graph()
    graph.node("dense/relu").device = requested
    report = place(graph, ["cpu:0", "cpu:1", "cpu:2", "gpu:0"], soft_placement=False)
    assert graph.node("dense/relu").device == expected
    entry = next(n for n in report.nodes if n.name == "dense/relu")
    assert entry.reason == "constraint" and report.softened == []


def test_partial_spec_chooses_among_matching_devices():
    graph = matmul_graph(64)
    graph.node("big").device = "/device:GPU:*"
    place(graph, ["cpu:0", "gpu:0", "gpu:1"])
    assert graph.node("big").device in (GPU0, GPU1)


def test_default_devices_are_the_named_ones_plus_cpu0():
    graph = mlp_graph()
    graph.node("dense/matmul").device = "/device:GPU:1"
    graph.node("out/matmul").device = "/device:CPU:*"
    graph.node("logits").device = "/job:worker/device:CPU:3"   # not a device here: softened
    report = place(graph)
    assert report.devices == [CPU0, GPU1]
    assert devices_of(graph, "dense/matmul", "out/matmul") == [GPU1, CPU0]
    assert [s.node for s in report.softened] == ["logits"]


def test_a_node_goes_only_where_its_op_has_a_kernel(monkeypatch):
    real = kernel_registry.has_kernel
    monkeypatch.setattr(kernel_registry, "has_kernel", lambda op, t="CPU": real(op, t) and (op, t) != ("MatMul", "GPU"))
    graph = matmul_graph()
    report = place(graph, ["gpu:0", "cpu:0"])
    assert graph.node("big").device == CPU0
    assert next(n for n in report.nodes if n.name == "big").reason == "kernel"


# --- soft placement ------------------------------------------------------------------------------

def test_unavailable_device_is_softened_and_reported():
    graph = mlp_graph()
    graph.node("dense/matmul").device = "/device:GPU:0"
    report = place(graph, ["cpu:0", "cpu:1"])
    assert graph.node("dense/matmul").device in (CPU0, CPU1)
    [soft] = report.softened
    chosen = graph.node("dense/matmul").device
    assert (soft.node, soft.requested, soft.chosen) == ("dense/matmul", "/device:GPU:0", chosen)
    assert "no available device matches it" in soft.why and "cpu:0, cpu:1" in soft.why


def test_softening_keeps_the_device_type_when_it_can():
    graph = mlp_graph()
    graph.node("dense/matmul").device = "/device:GPU:3"
    place(graph, ["cpu:0", "gpu:0"])
    assert graph.node("dense/matmul").device == GPU0


def test_missing_kernel_on_the_requested_device_is_softened(monkeypatch):
    real = kernel_registry.has_kernel
    monkeypatch.setattr(kernel_registry, "has_kernel", lambda op, t="CPU": real(op, t) and (op, t) != ("Relu", "GPU"))
    graph = mlp_graph()
    graph.node("dense/relu").device = "/device:GPU:0"
    report = place(graph, ["cpu:0", "gpu:0"])
    assert graph.node("dense/relu").device == CPU0
    assert report.softened[0].why == "op Relu has no kernel on gpu:0"
    graph.node("dense/relu").device = "/device:GPU:0"
    with pytest.raises(InvalidGraphError, match="node 'dense/relu' \\(Relu\\) requests device '/device:GPU:0', "
                                                "but op Relu has no kernel on gpu:0"):
        place(graph, ["cpu:0", "gpu:0"], soft_placement=False)


def test_unsatisfiable_constraint_without_soft_placement_is_an_error():
    graph = mlp_graph()
    graph.node("logits").device = "/device:GPU:0"
    with pytest.raises(InvalidGraphError) as info:
        place(graph, ["cpu:0", "cpu:1"], soft_placement=False)
    message = info.value.one_line()
    assert "node 'logits' (Add) requests device '/device:GPU:0'" in message
    assert "no available device matches it (devices: cpu:0, cpu:1)" in message and info.value.exit_code == 3
    assert graph.node("logits").device == "/device:GPU:0", "a failed placement changes nothing"


def test_op_without_any_kernel_is_an_error_naming_node_and_op(monkeypatch):
    from graphtool.exec.kernels import registry as kernel_registry

    for device_type in ("CPU", "GPU"):   # a registered op that no device has a kernel for
        monkeypatch.delitem(kernel_registry._KERNELS, ("Softsign", device_type))
    graph = Graph()
    graph.add_node("Softsign", "soft", inputs=[const(graph, "c", [1.0]).output(0)], attrs={"T": dtypes.float32})
    with pytest.raises(InvalidGraphError, match="node 'soft': op Softsign has no kernel on any of "
                                                "the devices cpu:0, gpu:0"):
        place(graph, ["cpu:0", "gpu:0"])


@pytest.mark.parametrize("devices, message", [
    (["tpu:0"], "unknown device 'tpu:0': device type TPU is not one of CPU, GPU"),
    (["cpu:x"], "bad device name 'cpu:x'"),
    ([], "no devices to place on"),
])
def test_bad_device_lists_are_usage_errors(devices, message):
    with pytest.raises(UsageError, match=message):
        place(mlp_graph(), devices)


def test_bad_device_name_in_the_graph_is_an_invalid_graph():
    graph = mlp_graph()
    graph.node("logits").device = "/device:CPU:zero"
    with pytest.raises(InvalidGraphError, match="node 'logits': bad device name '/device:CPU:zero'"):
        place(graph, ["cpu:0"])


# --- colocation -------------------------------------------------------------------------------

def test_class_attr_colocates_with_an_explicitly_placed_node():
    graph = mlp_graph()
    graph.node("out/matmul").device = "/device:CPU:1"
    graph.node("dense/relu").set_attr("_class", ["loc:@out/matmul"], "list(string)")
    report = place(graph, ["cpu:0", "cpu:1"], soft_placement=False)
    assert devices_of(graph, "dense/relu", "out/matmul") == [CPU1, CPU1]
    entry = next(n for n in report.nodes if n.name in ("dense/relu", "out/matmul") and n.reason == "colocation")
    assert "_class loc:@" in entry.detail


def test_class_attr_naming_a_missing_node_is_ignored():
    graph = mlp_graph()
    graph.node("dense/relu").set_attr("_class", ["loc:@pruned_away"], "list(string)")
    place(graph, ["cpu:0"])
    assert graph.node("dense/relu").device == CPU0


def variable_graph() -> Graph:
    """v (VariableV2) <- Assign(init) ; AssignAdd(v, delta) ; read = Identity(v)."""
    g = Graph()
    v = g.add_node("VariableV2", "v", attrs={"shape": [2], "dtype": dtypes.float32})
    op(g, "Assign", "v/Assign", v, const(g, "init", [1.0, 2.0]))
    op(g, "AssignAdd", "v/AssignAdd", v, const(g, "delta", [0.5, 0.5]))
    op(g, "Identity", "read", v)
    return g


def test_reference_edges_colocate_a_variable_and_its_updates():
    graph = variable_graph()
    graph.node("v/AssignAdd").device = "/device:CPU:1"
    place(graph, ["cpu:0", "cpu:1"])
    assert devices_of(graph, "v", "v/Assign", "v/AssignAdd") == [CPU1] * 3
    group = colocation_groups(graph).group_of(graph.node("v"))
    assert {n.name for n in group.members} == {"v", "v/Assign", "v/AssignAdd"}, "Identity reads a value, not a ref"


def test_colocation_conflict_names_both_nodes_and_devices():
    graph = variable_graph()
    graph.node("v/Assign").device = "/device:CPU:0"
    graph.node("v/AssignAdd").device = "/device:CPU:1"
    with pytest.raises(InvalidGraphError) as info:
        place(graph, ["cpu:0", "cpu:1"], soft_placement=False)
    message = info.value.one_line()
    assert "colocation conflict" in message and "'v/Assign' requests '/device:CPU:0'" in message
    assert "'v/AssignAdd' requests '/device:CPU:1'" in message and "reference input" in message
    # Soft placement reconciles them: one device for the group, the other request reported.
    report = place(graph, ["cpu:0", "cpu:1"])
    assert len(set(devices_of(graph, "v", "v/Assign", "v/AssignAdd"))) == 1
    [soft] = report.softened
    assert "colocated with" in soft.why


def _assert_groups_together(graph: Graph) -> None:
    for group in colocation_groups(graph).groups:
        assert len({m.device for m in group.members}) == 1, [m.name for m in group.members]


@pytest.mark.parametrize("case, ops", [
    ("tensor_array_ops", {"TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3"}),
    ("grad_while", {"StackV2", "StackPushV2", "StackPopV2"})])
def test_tensor_arrays_and_stacks_stay_with_their_users(case, ops):
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")))
    place(graph, ["cpu:0", "cpu:1", "cpu:2"])
    _assert_groups_together(graph)
    for node in graph.nodes:
        if node.op in ops and node.op not in ("TensorArrayV3", "StackV2"):
            handle = node.inputs[0].node
            while handle.op in ("Enter", "Identity", "Switch", "Merge"):
                handle = handle.inputs[0].node
            assert node.device == handle.device, node.name


def test_loop_variables_keep_merge_switch_and_next_iteration_together():
    graph = Graph()
    op(graph, "Identity", "result", while_loop(graph, placeholder(graph, "start", [])))
    graph.node("while/NextIteration").device = "/device:CPU:1"
    place(graph, ["cpu:0", "cpu:1"], soft_placement=False)
    assert devices_of(graph, "while/Merge", "while/Switch", "while/NextIteration") == [CPU1] * 3


# --- the cost model -----------------------------------------------------------------------------

def test_large_matmul_goes_to_the_faster_device():
    graph = matmul_graph()
    report = place(graph, ["cpu:0", "gpu:0"], explain=True)
    assert graph.node("big").device == GPU0
    entry = next(n for n in report.nodes if n.name == "big")
    costs = {c.device: c for c in entry.candidates}
    assert entry.reason == "cheapest" and costs["gpu:0"].total < costs["cpu:0"].total
    assert costs["cpu:0"].compute > 10 * costs["gpu:0"].compute


def test_tiny_work_stays_on_the_cpu_where_gpu_launches_cost_more():
    graph = matmul_graph(size=2)
    place(graph, ["cpu:0", "gpu:0"])
    assert {n.device for n in graph.nodes} == {CPU0}


def test_independent_heavy_work_spreads_across_devices():
    graph = matmul_graph(extra_matmul=True)
    report = place(graph, ["cpu:0", "cpu:1"])
    assert {graph.node("big").device, graph.node("big2").device} == {CPU0, CPU1}
    # Each product keeps its inputs and consumer: nothing large crosses devices.
    assert devices_of(graph, "x", "w", "out") == [graph.node("big").device] * 3
    assert report.transfer_seconds == 0
    assert report.total_cost == pytest.approx(max(report.device_load.values()))


@pytest.mark.parametrize("devices, heavy", [(["cpu:0", "gpu:0"], False), (["cpu:0", "cpu:1"], True),
                                            (["cpu:0", "cpu:1", "gpu:0"], True)])
def test_int_shape_arithmetic_stays_next_to_its_consumers(devices, heavy):
    graph = shape_arithmetic_graph(heavy_neighbour=heavy)
    place(graph, devices)
    consumer = graph.node("reshape").device
    assert graph.node("big").device == consumer
    assert devices_of(graph, *SHAPE_OPS) == [consumer] * len(SHAPE_OPS)


def write_cost_model(tmp_path, **tables) -> str:
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"schema": "dftool.cost_model/1", **tables}))
    return str(path)


def test_measured_costs_change_decisions(tmp_path):
    graph = matmul_graph(extra_matmul=True)
    # Measured: MatMul is slow on this GPU; the node entry for big2 overrides the op entry.
    model = CostModel.load(write_cost_model(tmp_path, ops={"MatMul": {"CPU": 0.01, "GPU": 1.0}},
                                            nodes={"big2": {"GPU": 0.001}}))
    report = place(graph, ["cpu:0", "gpu:0"], cost_model=model, explain=True)
    assert devices_of(graph, "big", "big2") == [CPU0, GPU0]
    assert report.cost_model == str(tmp_path / "costs.json")
    big = next(n for n in report.nodes if n.name == "big")
    assert {c.device: c.compute for c in big.candidates}["gpu:0"] == 1.0
    # Without the file the analytic model sends both products to the GPU.
    graph = matmul_graph(extra_matmul=True)
    place(graph, ["cpu:0", "gpu:0"])
    assert devices_of(graph, "big", "big2") == [GPU0, GPU0]


def test_device_descriptions_can_be_overridden(tmp_path):
    slow_gpu = {"GPU": {"flops_per_second": 1e6, "bytes_per_second": 1e6}}
    model = CostModel.load(write_cost_model(tmp_path, device_types=slow_gpu,
                                            transfer={"latency_seconds": 0.0, "bytes_per_second": 1e12}))
    graph = matmul_graph()
    place(graph, ["cpu:0", "gpu:0"], cost_model=model)
    assert graph.node("big").device == CPU0


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable JSON file"),
    ("[1, 2]", "the top level must be a JSON object"),
    ('{"schema": "other/1"}', "schema is 'other/1', expected 'dftool.cost_model/1'"),
    ('{"schema": "dftool.cost_model/1", "nodes": {"a": {"CPU": -1}}}', "must be a non-negative number"),
    ('{"schema": "dftool.cost_model/1", "nodes": {"a": {"TPU": 1}}}', "unknown device type 'TPU'"),
    ('{"schema": "dftool.cost_model/1", "ops": {"MatMul": 3}}', "ops\\['MatMul'\\] must be an object"),
    ('{"schema": "dftool.cost_model/1", "extra": {}}', "unknown key 'extra'"),
    ('{"schema": "dftool.cost_model/1", "transfer": {"latency_seconds": 1}}', "'transfer' must set exactly"),
    ('{"schema": "dftool.cost_model/1", "device_types": {"GPU": {"flops_per_second": 0}}}', "must be positive"),
])
def test_bad_cost_model_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InvalidGraphError, match=message) as info:
        CostModel.load(str(path))
    assert f"cost model '{path}'" in str(info.value) and info.value.exit_code == 3
    with pytest.raises(InvalidGraphError, match="no such file"):
        CostModel.load(str(tmp_path / "missing.json"))


# --- reports -----------------------------------------------------------------------------------

def test_report_json_schema_and_explanations():
    graph = matmul_graph(64)
    graph.node("out").device = "/device:GPU:0"
    data = place(graph, ["cpu:0", "cpu:1"], explain=True).to_json()
    assert data["schema"] == "dftool.place/2" and data["devices"] == [CPU0, CPU1]
    assert [s["node"] for s in data["softened"]] == ["out"]
    assert sum(d["nodes"] for d in data["per_device"]) == len(graph)
    assert data["estimated_cost_seconds"] == pytest.approx(
        max(d["compute_seconds"] for d in data["per_device"]) + data["transfer_seconds"])
    reasons = {n["name"]: n["reason"] for n in data["nodes"]}
    assert reasons["big"] == "cheapest" and reasons["w"] == "consumer"
    assert {"device", "compute", "transfer", "parallel_credit", "total"} <= set(data["nodes"][0]["candidates"][0])


# --- fixtures ------------------------------------------------------------------------------------

def _fixture(case: str):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    return graph, spec, dict(np.load(FIXTURES / case / "feeds.npz"))


ALL_FIXTURES = sorted(p.parent.name for p in FIXTURES.glob("*/case.json"))


@pytest.mark.parametrize("case", ALL_FIXTURES)
def test_fixture_placement_is_valid(case):
    graph, _, _ = _fixture(case)
    place(graph, ["cpu:0", "cpu:1", "gpu:0"])
    graph.verify()
    assert all(n.device in (CPU0, CPU1, GPU0) for n in graph.nodes)
    _assert_groups_together(graph)


@pytest.mark.parametrize("case", ["mlp_frozen", "cond", "while_loop", "nested_while", "tensor_array_ops",
                                  "grad_while", "two_device", "dynamic_lstm"])
def test_placed_fixtures_compute_the_same_values(case):
    graph, spec, feeds = _fixture(case)
    want = Session(graph, threads=1).run(spec["fetches"], feeds, timeout=60).values
    place(graph, ["cpu:0", "cpu:1", "cpu:2"])
    got = Session(graph, threads=1).run(spec["fetches"], feeds, timeout=60).values
    for name, a, b in zip(spec["fetches"], want, got):
        np.testing.assert_array_equal(a, b, err_msg=name)
