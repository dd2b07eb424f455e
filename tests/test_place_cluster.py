"""Placement on a cluster's devices (other jobs and tasks): requests such as /job:ps and colocation
hold; an edge between tasks costs the network (latency + bytes / bandwidth), so a slow network keeps
a big tensor inside one task and a fast one lets independent work spread; the cost-model file and
CostModel.with_network set that link; `dftool place --devices worker:0/cpu:0,...` end to end, and
`dftool run` of such a graph says the devices are elsewhere."""
from __future__ import annotations

import json

import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import InvalidGraphError
from graphtool.ir import Graph
from graphtool.placement import place
from graphtool.placement.colocation import colocation_groups
from graphtool.placement.cost_model import BUILTIN_NETWORK, CostEstimator, CostModel, Link
from graphtool.placement.device_names import canonical_device_name
from graphtool.shape_inference import infer_shapes

from .helpers import error_line, mlp_graph, run_dftool, write_graph
from .test_place import variable_graph
from .test_report_schemas import validation_errors

CLUSTER = ["worker:0/cpu:0", "worker:1/cpu:0", "ps:0/cpu:0"]
WORKER0, WORKER1, PS = (canonical_device_name(d) for d in CLUSTER)
BIG = 1024 * 1024 * 4   # bytes of one float32[1024, 1024]
SLOW = Link(latency_seconds=1e-3, bytes_per_second=1e6)
FAST = Link(latency_seconds=0.0, bytes_per_second=1e13)


def shared_input_graph() -> Graph:
    """x[1024,1024] feeds two heavy products whose sum is the output: running them in parallel
    on two devices means moving x (and one product) between them."""
    b = GraphBuilder()
    x = b.placeholder("float32", [1024, 1024], name="x")
    left = b.matmul(x, b.const(np.ones((1024, 1024), np.float32), name="w1"), name="left")
    right = b.matmul(x, b.const(np.ones((1024, 1024), np.float32), name="w2"), name="right")
    b.op("AddV2", [left, right], name="out")
    return b.graph


# --- requests and colocation on cluster devices ------------------------------------------------------

def test_a_variable_asking_for_ps_goes_there_with_its_updates():
    graph = variable_graph()
    graph.node("v").device = "/job:ps"
    report = place(graph, CLUSTER, soft_placement=False)
    assert [graph.node(n).device for n in ("v", "v/Assign", "v/AssignAdd")] == [PS] * 3
    assert report.devices == [PS, WORKER0, WORKER1]
    assert {n.device for n in graph.nodes} <= {PS, WORKER0, WORKER1}


def test_requests_for_a_task_and_class_colocation_hold():
    graph = mlp_graph()
    graph.node("dense/matmul").device = "/job:worker/task:1"
    graph.node("dense/relu").set_attr("_class", ["loc:@logits"], "list(string)")
    graph.node("logits").device = "ps:0/cpu:0"
    place(graph, CLUSTER, soft_placement=False)
    assert graph.node("dense/matmul").device == WORKER1
    assert graph.node("logits").device == graph.node("dense/relu").device == PS


def test_a_request_for_a_job_not_in_the_list_is_softened_or_fails():
    graph = mlp_graph()
    graph.node("logits").device = "/job:chief/task:0"
    with pytest.raises(InvalidGraphError, match="requests device '/job:chief/task:0', but no available device "
                                                "matches it \\(devices: ps:0/cpu:0, worker:0/cpu:0, worker:1/cpu:0\\)"):
        place(graph.copy(), CLUSTER, soft_placement=False)
    report = place(graph, CLUSTER)
    assert [s.node for s in report.softened] == ["logits"]


# --- the network in the cost model ---------------------------------------------------------------

def _split(graph: Graph) -> bool:
    return graph.node("left").device != graph.node("right").device


def test_a_slow_network_keeps_the_big_tensor_inside_one_task():
    graph = shared_input_graph()
    place(graph, CLUSTER[:2], cost_model=CostModel().with_network(SLOW))
    assert len({n.device for n in graph.nodes}) == 1


def test_a_fast_network_lets_the_products_run_on_two_tasks():
    graph = shared_input_graph()
    report = place(graph, CLUSTER[:2], cost_model=CostModel().with_network(FAST))
    assert _split(graph)
    assert 0 < report.transfer_seconds < 1e-5


def test_inside_one_task_the_network_does_not_count():
    # The same slow network, but two CPUs of one task: host-memory transfers, so they split.
    graph = shared_input_graph()
    place(graph, ["worker:0/cpu:0", "worker:0/cpu:1"], cost_model=CostModel().with_network(SLOW))
    assert _split(graph)


def test_the_report_counts_each_cross_task_edge_at_network_cost():
    graph = shared_input_graph()
    report = place(graph, CLUSTER[:2], explain=True)   # the built-in network: the products split
    assert _split(graph)
    crossings = {(ref, node.device) for node in graph.nodes for ref in node.inputs
                 if ref.node.device != node.device}
    assert crossings
    per_edge = BUILTIN_NETWORK.latency_seconds + BIG / BUILTIN_NETWORK.bytes_per_second
    assert report.transfer_seconds == pytest.approx(len(crossings) * per_edge)
    # --explain: the product placed second saw moving x to the other task among its candidates.
    second = next(n for n in report.nodes if n.name == "right")
    costs = {c.device: c.transfer for c in second.candidates}
    assert set(costs) == {"worker:0/cpu:0", "worker:1/cpu:0"}
    assert sorted(costs.values()) == [0.0, pytest.approx(per_edge)]


def test_estimator_transfers_by_device_name():
    estimator = CostEstimator(CostModel().with_network(SLOW), infer_shapes(Graph()))
    assert estimator.transfer(1e6, WORKER0, WORKER1) == pytest.approx(1e-3 + 1.0)
    assert estimator.transfer(1e6, "worker:0/cpu:0", "worker:0/cpu:1") == pytest.approx(1e-5 + 1e6 / 2e10)
    assert estimator.transfer(0, "cpu:0", "gpu:0") == pytest.approx(2e-5)   # PCIe inside the task
    assert estimator.transfer(0, "CPU", "GPU") == pytest.approx(2e-5)       # bare types: this task
    assert estimator.min_latency([WORKER0, WORKER1]) == pytest.approx(1e-3)
    assert estimator.min_latency([WORKER0, WORKER1, "/job:worker/replica:0/task:0/device:CPU:1"]) == \
        pytest.approx(1e-5)
    assert estimator.min_latency(["cpu:0", "gpu:0"]) == estimator.min_latency() == pytest.approx(1e-5)


# --- CostModel: the file and with_network ------------------------------------------------------------

def test_with_network_returns_a_copy():
    measured = Link(latency_seconds=5e-5, bytes_per_second=3e9)
    model = CostModel.from_json({"schema": "dftool.cost_model/1", "nodes": {"a": {"CPU": 1.0}}}, "costs.json")
    copy = model.with_network(measured)
    assert copy.network == measured and model.network == BUILTIN_NETWORK
    assert copy.node_costs == model.node_costs and copy.source == "costs.json"
    assert copy.link_between(WORKER0, PS) == measured
    assert copy.link_between(WORKER0, "/job:worker/replica:0/task:0/device:GPU:0") == copy.link("CPU", "GPU")


def test_the_cost_model_file_sets_the_network():
    document = {"schema": "dftool.cost_model/1", "network": {"latency_seconds": 1e-4, "bytes_per_second": 2e9},
                "transfer": {"latency_seconds": 1e-6, "bytes_per_second": 4e10}}
    assert validation_errors("cost_model", document) == []
    model = CostModel.from_json(document)
    assert model.network == Link(1e-4, 2e9)
    assert model.link_between(WORKER0, WORKER1) == Link(1e-4, 2e9)
    assert model.link_between(WORKER0, "worker:0/cpu:1") == Link(1e-6, 4e10)   # `transfer`: inside a task


@pytest.mark.parametrize("network, message", [
    ({"latency_seconds": 1e-4}, "'network' must set exactly bytes_per_second, latency_seconds"),
    ({"latency_seconds": 1e-4, "bytes_per_second": 0}, "network bytes_per_second must be positive"),
    ({"latency_seconds": -1, "bytes_per_second": 1e9}, "network['latency_seconds'] must be a non-negative number"),
    ("fast", "'network' must set exactly"),
])
def test_a_bad_network_entry_names_the_file(network, message):
    with pytest.raises(InvalidGraphError, match="cost model 'c.json': " + message.replace("[", "\\[")):
        CostModel.from_json({"schema": "dftool.cost_model/1", "network": network}, "c.json")
    assert validation_errors("cost_model", {"schema": "dftool.cost_model/1", "network": network}) != []


# --- the command line ------------------------------------------------------------------------------

def test_place_on_cluster_devices_then_run_says_they_are_elsewhere(tmp_path):
    graph = mlp_graph()
    graph.node("dense/relu").set_attr("_class", ["loc:@logits"], "list(string)")
    graph.node("logits").device = "/job:ps"
    graph.node("dense/matmul").device = "worker:1"
    source = write_graph(graph, tmp_path / "mlp.pb")
    placed, split = tmp_path / "placed.pb", tmp_path / "split.pb"
    code, stdout, stderr = run_dftool("place", source, placed, "--devices", ",".join(CLUSTER), "--json",
                                      "--explain")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["devices"] == [PS, WORKER0, WORKER1]
    devices = {n["name"]: n["device"] for n in report["nodes"]}
    assert devices["logits"] == devices["dense/relu"] == PS and devices["dense/matmul"] == WORKER1
    assert validation_errors("place", report) == []
    for short in ("ps:0/cpu:0", "worker:0/cpu:0", "worker:1/cpu:0"):   # the device table
        assert short in stderr
    assert run_dftool("partition", placed, split)[0] == 0
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 4), np.float32))
    code, _, stderr = run_dftool("run", split, "--feed", f"x={x}", "--fetch", "logits")
    line = error_line(stderr)
    assert code == 4, stderr
    assert "is not on this machine" in line and "--cluster" in line, line


def test_explain_shows_the_network_transfer_of_a_candidate(tmp_path):
    source = write_graph(shared_input_graph(), tmp_path / "g.pb")
    code, stdout, stderr = run_dftool("place", source, tmp_path / "o.pb", "--devices", ",".join(CLUSTER[:2]),
                                      "--explain")
    assert code == 0, stderr
    row = next(line for line in stdout.splitlines() if line.startswith("right "))
    # x (4 MiB) to the other task: 200 us latency + 4.19 ms at 1 GB/s.
    assert "worker:1/cpu:0" in row and "+ 4.39 ms" in row, row


def test_bad_cluster_device_lists_are_usage_errors(tmp_path):
    source = write_graph(mlp_graph(), tmp_path / "mlp.pb")
    code, _, stderr = run_dftool("place", source, tmp_path / "o.pb", "--devices", "worker:0/cpu:0,worker:x/cpu:0")
    assert code == 2 and error_line(stderr).startswith("error: --devices: bad device name 'worker:x/cpu:0'")


def test_groups_stay_whole_on_cluster_devices():
    graph = variable_graph()
    place(graph, CLUSTER)
    for group in colocation_groups(graph).groups:
        assert len({m.device for m in group.members}) == 1
