"""Step statistics recorded by the executor: every execution, its timing, thread, frame and
outputs; memory in use over the step; loop iterations; Send/Recv rendezvous keys; merging."""
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec import step_recorder
from graphtool.exec.session import Session
from graphtool.exec.step_stats import (DeviceStats, NodeExecution, StepStats, TensorInfo,
                                       transfer_pairs)
from graphtool.ir import from_graphdef
from graphtool.shape_inference import infer_shapes
from tests.helpers import while_loop_graph

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def traced(graph, fetches, feeds=None, threads=1):
    result = Session(graph, threads=threads).run(fetches, feeds or {}, trace=True)
    return result, result.step_stats


def sample(name: str):
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / f"{name}.pb")))
    return graph, dict(np.load(SAMPLES / f"{name}.feeds.npz"))


def mlp(batch=8):
    """x[batch,16] -> dense 32 + relu -> dense 10 -> softmax, every shape known."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [batch, 16], name="x")
    h = b.relu(b.bias_add(b.matmul(x, b.const(rng.normal(size=(16, 32)).astype(np.float32), name="w1"),
                                   name="mm1"), b.const(np.zeros(32, np.float32), name="b1"), name="add1"),
               name="relu")
    logits = b.bias_add(b.matmul(h, b.const(rng.normal(size=(32, 10)).astype(np.float32), name="w2"), name="mm2"),
                        b.const(np.zeros(10, np.float32), name="b2"), name="add2")
    b.softmax(logits, name="probs")
    return b.graph, {"x": rng.normal(size=(batch, 16)).astype(np.float32)}


# --- what is recorded -----------------------------------------------------------------------------

def test_every_executed_node_is_recorded_once_with_its_outputs():
    graph, feeds = mlp()
    result, stats = traced(graph, ["probs"], feeds)
    assert stats.nodes_executed == result.nodes_executed == len(graph.nodes)
    assert sorted(n.name for n in stats.nodes) == sorted(node.name for node in graph.nodes)
    probs = next(n for n in stats.nodes if n.name == "probs")
    assert probs.op == "Softmax" and probs.inputs == ("add2",) and not probs.dead
    assert probs.outputs == (TensorInfo("float32", (8, 10), 320),)
    assert probs.device == Session(graph).device.name and probs.lane == "scheduler"
    assert list(stats.devices) == [probs.device] and stats.devices[probs.device].lanes == ["scheduler"]


def test_times_lie_within_the_step_and_one_lane_runs_one_node_at_a_time():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [96, 96], name="x")
    for k in range(4):   # independent heavy branches: some go to the thread pool
        b.tanh(b.matmul(x, b.const(np.eye(96, dtype=np.float32), name=f"w{k}"), name=f"mm{k}"), name=f"out{k}")
    result, stats = traced(b.graph, [f"out{k}" for k in range(4)], {"x": np.ones((96, 96), np.float32)}, threads=2)
    (device,) = stats.devices.values()
    assert len(device.lanes) >= 2, "a matmul should have run on a pool thread"
    for execution in stats.nodes:
        assert 0 <= execution.start_ns <= execution.end_ns <= stats.wall_ns
    for lane in device.lanes:
        spans = sorted((n.start_ns, n.end_ns) for n in device.nodes if n.lane == lane)
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:])), lane


def test_loop_nodes_are_recorded_once_per_iteration():
    # i = 1; while i < 16: i *= 2  ->  5 iterations, the body live in 4 of them
    result, stats = traced(while_loop_graph(), ["result"], {"start": np.float32(1)})
    assert stats.iterations == result.iterations == {"while/ctx": 5}
    in_loop = Counter(n.name for n in stats.nodes if n.frame == "while/ctx")
    assert set(in_loop.values()) == {5}, in_loop
    for name in in_loop:
        assert sorted(n.iteration for n in stats.nodes if n.name == name) == [0, 1, 2, 3, 4]
    live_multiplies = [n for n in stats.nodes if n.name == "while/mul" and not n.dead]
    assert [n.iteration for n in live_multiplies] == [0, 1, 2, 3]
    dead = next(n for n in stats.nodes if n.name == "while/mul" and n.dead)
    assert dead.outputs == () and dead.iteration == 4
    enter = next(n for n in stats.nodes if n.name == "while/Enter")
    assert enter.frame == "" and enter.frame_id == 0      # Enter runs in the parent frame


def test_statistics_off_records_nothing(monkeypatch):
    def refuse(*args):
        raise AssertionError("an untraced step must not record")
    monkeypatch.setattr(step_recorder.TracedStep, "start_recording", refuse)
    graph, feeds = mlp()
    result = Session(graph).run(["probs"], feeds)
    assert result.step_stats is None and result.nodes_executed == len(graph.nodes)


# --- memory ---------------------------------------------------------------------------------------

def expected_peak(graph, order: list[str], fetched: set[str]) -> int:
    """Peak bytes by liveness, from inferred shapes: a node's outputs are allocated when it runs;
    an input is freed after its last consumer ran, unless it is a Const or a feed (held outside
    the step) or a fetched result (held to the end)."""
    shapes = infer_shapes(graph)
    size = {name: sum(int(np.prod(shapes.shape(ref).as_list())) * np.dtype(shapes.dtype(ref).numpy).itemsize
                      for ref in graph.get(name).outputs) for name in order}
    last_use = {}
    for position, name in enumerate(order):
        for ref in graph.get(name).inputs:
            last_use[ref.node.name] = position
    held = {name for name in order if graph.get(name).op in ("Const", "Placeholder")} | fetched
    live = peak = 0
    for position, name in enumerate(order):
        live += size[name]
        peak = max(peak, live)
        for producer in {ref.node.name for ref in graph.get(name).inputs}:
            if last_use[producer] == position and producer not in held:
                live -= size[producer]
    return peak


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_peak_memory_of_an_mlp_is_the_sum_of_live_buffers(batch):
    graph, feeds = mlp(batch)
    _, stats = traced(graph, ["probs"], feeds)
    order = [n.name for n in stats.nodes]
    (device,) = stats.devices.values()
    assert device.peak_bytes == expected_peak(graph, order, {"probs"})
    # At the end only what is held outside the step is in use: weights, the feed, the result.
    held = sum(n.allocated_bytes for n in stats.nodes if n.op in ("Const", "Placeholder") or n.name == "probs")
    assert device.memory[-1][1] == held
    assert [t for t, _ in device.memory] == sorted(t for t, _ in device.memory)


def test_a_release_is_timed_by_the_next_finish_and_comes_before_its_allocation():
    # Raw records are (tagged, start, end, now, thread, dead, allocated, ...); a freed buffer's
    # weak reference lands between them. A release after the last record counts at the close.
    class Freed:
        def __init__(self, nbytes):
            self.nbytes = nbytes

    raw = [(None, 0, 10, 10, 0, False, 8), Freed(8), (None, 12, 20, 20, 0, False, 4), Freed(4)]
    deltas = step_recorder._memory_deltas(raw, 30)
    assert step_recorder.memory_timeline(deltas, 0) == [(10, 8), (20, 0), (20, 4), (30, 0)]


def test_aliases_and_views_allocate_nothing():
    b = GraphBuilder()
    big = b.const(np.ones((64, 64), np.float32), name="big")
    alias = b.identity(b.identity(big, name="id1"), name="id2")
    view = b.reshape(b.op("Neg", [alias], name="neg"), b.const(np.array([4096], np.int32), name="shape"), name="flat")
    b.identity(view, name="out")
    _, stats = traced(b.graph, ["out"])
    allocated = {n.name: n.allocated_bytes for n in stats.nodes}
    assert allocated["big"] == allocated["neg"] == 64 * 64 * 4
    assert allocated["id1"] == allocated["id2"] == allocated["flat"] == allocated["out"] == 0
    assert {n.name: n.output_bytes for n in stats.nodes}["id2"] == 64 * 64 * 4
    (device,) = stats.devices.values()
    assert device.peak_bytes == 2 * 64 * 64 * 4 + allocated["shape"]


# --- several devices --------------------------------------------------------------------------------

def test_a_multi_device_step_has_one_record_per_device_and_matched_transfers():
    graph, feeds = sample("multi_device")
    result, stats = traced(graph, ["y"], feeds, threads=2)
    assert len(stats.devices) == 2 and sorted(stats.devices) == sorted(result.devices)
    assert stats.nodes_executed == result.nodes_executed
    pairs = transfer_pairs(stats)
    sends = [n for n in stats.nodes if n.op == "_Send"]
    recvs = [n for n in stats.nodes if n.op == "_Recv"]
    assert len(pairs) == len(sends) == len(recvs) >= 2
    for send, recv in pairs:
        assert send.rendezvous == recv.rendezvous
        send_device, recv_device, _, frame_iter = send.rendezvous
        assert (send.device, recv.device) == (send_device, recv_device) and frame_iter == ()
        assert recv.lane == step_recorder.RENDEZVOUS_LANE
        assert send.start_ns <= recv.end_ns
    for device in stats.devices.values():
        assert device.peak_bytes > 0


def execution(name, start, end, device="/device:CPU:0", **fields):
    return NodeExecution(name, fields.pop("op", "Op"), device, start, end, **fields)


def test_merging_stats_recorded_against_another_origin_rebases_their_times():
    first, second = StepStats(origin_ns=1_000), StepStats(origin_ns=1_500)
    first.device("a").absorb(DeviceStats("a", [execution("x", 0, 100, "a")], [(0, 8), (100, 0)], {"loop": 3}))
    second.device("b").absorb(DeviceStats("b", [execution("y", 10, 20, "b")], [(10, 4)], {"loop": 3}))
    first.wall_ns, second.wall_ns = 200, 200
    first.merge(second)
    assert [(n.name, n.start_ns, n.end_ns) for n in first.nodes] == [("x", 0, 100), ("y", 510, 520)]
    assert first.devices["b"].memory == [(510, 4)]
    assert first.wall_ns == 700 and first.iterations == {"loop": 3}
    assert first.peak_bytes == {"a": 8, "b": 4}


def test_two_recordings_of_one_device_add_their_memory():
    stats = StepStats(origin_ns=0)
    stats.device("a").absorb(DeviceStats("a", [execution("x", 0, 5, "a")], [(0, 10), (20, 0)]))
    stats.device("a").absorb(DeviceStats("a", [execution("y", 10, 15, "a")], [(10, 5), (30, 0)]))
    assert stats.devices["a"].memory == [(0, 10), (10, 15), (20, 5), (30, 0)]
    assert stats.devices["a"].peak_bytes == 15 and [n.name for n in stats.nodes] == ["x", "y"]
