"""Stream assignment (a pure function of the compiled plan) and the event ordering the stream
runtime imposes, observed on the simulated GPU's logical streams."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.exec.devices import CPUDevice
from graphtool.exec.executor import Executor
from graphtool.exec.plan import NORMAL, compile_plan
from graphtool.exec.session import Session
from graphtool.exec.sim_gpu import SimulatedGPUDevice
from graphtool.exec.streams import COPY_STREAM, assign_streams


def two_branches():
    """x -> a1 -> a2 and x -> b1 -> b2, joined by an Add."""
    b = GraphBuilder()
    x = b.placeholder("float32", [4, 4], name="x")
    a2 = b.op("Tanh", [b.op("MatMul", [x, x], name="a1")], name="a2")
    b2 = b.op("Sigmoid", [b.op("Exp", [x], name="b1")], name="b2")
    b.op("AddV2", [a2, b2], name="join")
    return b.graph


def plan_of(graph, device=None, fed=("x",)):
    return compile_plan(graph, device or SimulatedGPUDevice(), set(fed))


def streams_by_name(plan, assignment):
    return {item.name: assignment.stream_of[item.id] for item in plan.items}


def test_a_chain_shares_a_stream_and_a_branch_gets_another():
    plan = plan_of(two_branches())
    assignment = assign_streams(plan, max_streams=4)
    stream = streams_by_name(plan, assignment)
    assert stream["x"] == COPY_STREAM                      # fed values arrive on the copy stream
    assert stream["a1"] == stream["a2"] == stream["join"]  # the first consumer continues the chain
    assert stream["b1"] == stream["b2"] != stream["a1"]     # the second consumer of x branches off
    waits = {item.name: assignment.waits[item.id] for item in plan.items}
    assert waits["a1"] == waits["b1"] == (COPY_STREAM,)
    assert waits["a2"] == waits["b2"] == ()
    assert waits["join"] == (stream["b2"],)
    assert assignment.num_streams == 2
    assert assignment.stream_name(stream["b1"]) == f"compute:{stream['b1']}"
    assert assignment.stream_name(COPY_STREAM) == "copy" and assignment.stream_name(None) == "host"


def test_one_stream_needs_no_waits_between_compute_nodes():
    plan = plan_of(two_branches())
    assignment = assign_streams(plan, max_streams=1)
    compute = [item for item in plan.items if item.kind == NORMAL]
    assert {assignment.stream_of[item.id] for item in compute} == {0}
    assert all(assignment.waits[item.id] in ((), (COPY_STREAM,)) for item in compute)


def test_stream_count_is_bounded():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    branches = [b.op("Neg", [x], name=f"branch{i}") for i in range(7)]
    b.op("AddN", [branches], name="total")
    plan = plan_of(b.graph)
    assignment = assign_streams(plan, max_streams=3)
    used = {assignment.stream_of[plan.item_of[f"branch{i}"].id] for i in range(7)}
    assert used == {0, 1, 2} and assignment.num_streams == 3
    with pytest.raises(ValueError):
        assign_streams(plan, max_streams=0)


def loop_graph():
    """A while loop whose body reads a value computed before the loop on another branch."""
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    scale = b.op("Exp", [b.op("Neg", [x], name="neg")], name="scale")
    other = b.op("Square", [x], name="other")
    _, total = b.while_loop(lambda i, v: b.op("Less", [i, np.int32(5)]),
                            lambda i, v: [b.op("AddV2", [i, np.int32(1)]), b.op("Mul", [v, scale], name="body_mul")],
                            [np.int32(0), other], parallel_iterations=1)
    b.op("Identity", [total], name="result")
    return b.graph


def test_waits_look_through_control_flow_nodes():
    graph = loop_graph()
    plan = plan_of(graph)
    assignment = assign_streams(plan)
    stream = streams_by_name(plan, assignment)
    body = plan.item_of["while/body_mul"]
    producer_streams = {stream["scale"], stream["other"]}
    assert len(producer_streams) == 2    # two chains from x
    assert set(assignment.waits[body.id]) == producer_streams - {stream["while/body_mul"]}
    assert stream["while/Enter"] is None and stream["while/Merge"] is None   # no kernels there


def cross_stream_edges(plan, assignment):
    """(producer name, consumer name, producer stream) for kernel edges between compute streams."""
    edges = []
    for item in plan.items:
        if item.kind != NORMAL:
            continue
        for ref in item.node.inputs:
            producer = plan.item_of[ref.node.name]
            mine, theirs = assignment.stream_of[item.id], assignment.stream_of[producer.id]
            if producer.kind == NORMAL and theirs != mine:
                edges.append((producer.name, item.name, theirs))
    return edges


def assert_consumers_waited_for_producers(device, plan, assignment):
    """For every cross-stream edge and every launch of its consumer: the consumer's stream waited
    for an event on the producer's stream recorded after the producer's latest launch (one
    scheduling thread: the trace is the order things happened)."""
    names = {assignment.stream_of[i.id]: assignment.stream_name(assignment.stream_of[i.id]) for i in plan.items}
    checked = 0
    for producer, consumer, producer_stream in cross_stream_edges(plan, assignment):
        producer_lane = names[producer_stream]
        consumer_lane = assignment.stream_name(assignment.stream_of[plan.item_of[consumer].id])
        latest_producer = None
        waited_up_to = -1
        for entry in device.trace.entries:
            if entry[0] == "launch" and entry[1] == producer_lane and entry[2] == producer:
                latest_producer = entry[3]
            elif entry[0] == "wait" and entry[1] == consumer_lane and entry[2] == producer_lane:
                waited_up_to = max(waited_up_to, entry[3])
            elif entry[0] == "launch" and entry[1] == consumer_lane and entry[2] == consumer:
                assert latest_producer is not None, f"{consumer} launched before {producer}"
                assert waited_up_to >= latest_producer, f"{consumer} did not wait for {producer}"
                checked += 1
    return checked


@pytest.mark.parametrize("make_graph, feeds, fetch", [
    (two_branches, {"x": np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)}, "join:0"),
    (loop_graph, {"x": np.array([0.5, -1.0, 2.0], np.float32)}, "result:0"),
])
def test_each_consumer_waits_for_its_producers_event(make_graph, feeds, fetch):
    graph = make_graph()
    device = SimulatedGPUDevice()
    session = Session(graph, device=device, threads=1)
    gpu_value = session.run([fetch], feeds).values[0]
    np.testing.assert_allclose(gpu_value, Session(graph, threads=1).run([fetch], feeds).values[0], rtol=1e-6)
    executor, _, _ = next(iter(session._executors.values()))
    plan, assignment = executor.plan, executor.streams.assignment
    assert cross_stream_edges(plan, assignment), "the graph should have cross-stream edges"
    assert assert_consumers_waited_for_producers(device, plan, assignment) > 0
    # The feed went in, and the result came out, on the copy stream.
    assert device.trace.launches("copy") == ["to_device", "to_host"]


def test_parallel_kernels_still_wait_on_producer_streams():
    """With a thread pool the order of launches varies, but every cross-stream launch is
    preceded by a wait on each producer stream."""
    graph = two_branches()
    device = SimulatedGPUDevice()
    feeds = {"x": np.ones((4, 4), np.float32)}
    Session(graph, device=device, threads=2).run(["join:0"], feeds)
    waits_before_join = set()
    for entry in device.trace.entries:
        if entry[0] == "wait":
            waits_before_join.add((entry[1], entry[2]))
        if entry[0] == "launch" and entry[2] == "join":
            break
    join_lane = [e[1] for e in device.trace.entries if e[0] == "launch" and e[2] == "join"][0]
    branch_lane = [e[1] for e in device.trace.entries if e[0] == "launch" and e[2] == "b2"][0]
    assert (join_lane, branch_lane) in waits_before_join


def test_cpu_executors_run_without_streams():
    plan = plan_of(two_branches(), CPUDevice())
    assert Executor(plan, threads=1).streams is None


def test_values_are_released_after_their_last_consumer():
    """A chain of 12 ops on 256 KiB values: device memory never holds more than a few of them."""
    b = GraphBuilder()
    value = b.placeholder("float32", [256, 256], name="x")
    for i in range(12):
        value = b.op("Neg", [value], name=f"step{i}")
    device = SimulatedGPUDevice()
    feeds = {"x": np.ones((256, 256), np.float32)}
    result = Session(b.graph, device=device, threads=1).run([value.name], feeds).values[0]
    assert float(result[0, 0]) == 1.0
    value_bytes = 256 * 256 * 4
    assert device.memory.peak <= 3 * value_bytes
    assert device.memory_in_use() == 0
