"""Multi-device execution of hand-partitioned graphs: one executor per device, joined by a
rendezvous; transfers at the root, under a cond (dead values), inside a while loop with
parallel iterations; Recvs that hold no thread; FakeGPU copies; errors, timeouts, deadlocks."""
import time

import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import DeviceUnavailable, InvalidGraphError, RuntimeFailure
from graphtool.exec import devices as devices_module
from graphtool.exec.multi_device import MultiDeviceExecutor
from graphtool.exec.session import Session
from graphtool.ir import Graph

from ..helpers import const, error_line, op, placeholder, run_dftool, write_graph
from .hand_partitioned import (CPU0, CPU1, GPU0, F32, cond_graph, loop_graph, on, ping_pong_graph,
                               root_transfer_graph, transfer)

W = np.array([0.9, -1.1], np.float32)


def tanh_loop_reference(x, steps):
    for _ in range(steps):
        x = np.tanh(x * W)
    return x


def test_root_transfers_feeds_fetches_and_targets_on_both_devices():
    session = Session(root_transfer_graph(), threads=1)
    x, b = np.arange(3, dtype=np.float32), np.full(3, 2, np.float32)
    result = session.run(["back", "zb", "z"], {"x": x, "b": b}, targets=["after_z"], timeout=10)
    z = x * 2 + 1
    for got, want in zip(result.values, [z + x, z * b, z]):
        np.testing.assert_array_equal(got, want)
    assert result.devices == [CPU0, CPU1]
    assert isinstance(session._executors[next(iter(session._executors))][0], MultiDeviceExecutor)


def test_a_fetch_on_one_device_prunes_the_other_devices_work_it_does_not_need():
    result = Session(root_transfer_graph(), threads=1).run(["y"], {"x": np.ones(3, np.float32)})
    assert result.devices == [CPU0] and result.nodes_executed == 3


@pytest.mark.parametrize("threads", [1, 2])
def test_a_waiting_recv_holds_no_thread(threads):
    # Each device meets a Recv before the Send its peer waits for; one thread per device suffices.
    result = Session(ping_pong_graph(rounds=6), threads=threads).run(["result"], {"x": np.float32(0)}, timeout=20)
    assert result.values[0] == 6


@pytest.mark.parametrize("taken", [True, False])
def test_cond_across_devices_sends_dead_values(taken):
    session = Session(cond_graph(), threads=1)
    x = np.array([1.0, 2.0], np.float32)
    out, late, after_late = session.run(["out", "late_value", "after_late"], {"p": np.array(taken), "x": x},
                                        allow_dead=True, timeout=10).values
    np.testing.assert_array_equal(out, 3 * x if taken else -x)
    # A Recv whose control input is dead still receives the live value it was sent ...
    np.testing.assert_array_equal(late, x)
    # ... but its control edges carry its own deadness, as in TensorFlow.
    assert (after_late is None) == (not taken)


def test_a_dead_fetch_across_devices_is_an_error_unless_allowed():
    with pytest.raises(RuntimeFailure, match="fetch 'after_late:0' is dead"):
        Session(cond_graph(), threads=1).run(["after_late"], {"p": np.array(False), "x": np.ones(2, np.float32)},
                                             timeout=10)


@pytest.mark.parametrize("parallel_iterations", [1, 4, 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_loop_spanning_two_devices(parallel_iterations, threads):
    x = np.array([0.5, -0.3], np.float32)
    session = Session(loop_graph(steps=12, parallel_iterations=parallel_iterations), threads=threads)
    for _ in range(2):  # the executors are reused across steps with a fresh rendezvous
        result = session.run(["out"], {"x": x}, timeout=20)
        np.testing.assert_array_equal(result.values[0], tanh_loop_reference(x, 12))
    assert result.iterations == {"loop/ctx": 13}


def test_fake_gpu_edges_copy_both_ways(monkeypatch):
    copies = []
    for method in ("to_device", "to_host"):
        original = getattr(devices_module.FakeGPUDevice, method)

        def counted(self, array, original=original, method=method):
            copies.append(method)
            return original(self, array)
        monkeypatch.setattr(devices_module.FakeGPUDevice, method, counted)
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [2, 2]))
    w = on(GPU0, const(g, "w", [[1.0, 2.0], [3.0, 4.0]]))
    product = on(GPU0, op(g, "MatMul", "product", transfer(g, x, CPU0, GPU0, "x:0"), w))
    on(CPU0, op(g, "AddV2", "y", transfer(g, product, GPU0, CPU0, "product:0"), x))
    x_value = np.array([[1.0, 0.0], [0.5, 2.0]], np.float32)
    result = Session(g, device="fakegpu", threads=1).run(["y"], {"x": x_value}, timeout=10)
    np.testing.assert_array_equal(result.values[0], x_value @ np.array([[1, 2], [3, 4]], np.float32) + x_value)
    assert copies.count("to_device") >= 1 and copies.count("to_host") >= 1   # onto and off the GPU
    assert result.devices == [CPU0, GPU0]


def failing_graph() -> Graph:
    """CPU:1 waits on a Recv whose value CPU:0 computes with a MatMul that fails at run time."""
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [None, None]))
    bad = on(CPU0, op(g, "MatMul", "bad", x, x))
    on(CPU1, op(g, "Identity", "result", transfer(g, bad, CPU0, CPU1, "bad:0")))
    return g


def test_an_error_on_one_device_wakes_the_others_and_names_node_and_device():
    start = time.monotonic()
    with pytest.raises(RuntimeFailure) as caught:
        Session(failing_graph(), threads=1).run(["result"], {"x": np.ones((2, 3), np.float32)})
    assert "node 'bad' (MatMul) failed" in str(caught.value) and "(on cpu:0)" in str(caught.value)
    assert time.monotonic() - start < 10


def test_check_numerics_names_the_device():
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [2]))
    on(CPU1, op(g, "Log", "log", transfer(g, x, CPU0, CPU1, "x:0")))
    with pytest.raises(RuntimeFailure, match=r"node 'log' \(Log\) produced NaN.*\(on cpu:1\)"):
        Session(g, threads=1, check_numerics=True).run(["log"], {"x": np.array([-1.0, 1.0], np.float32)})


def endless_loop_graph() -> Graph:
    """CPU:0 runs a loop that never ends (i stays 0); CPU:1 waits for its result."""
    g = Graph()
    frame = {"frame_name": "endless", "parallel_iterations": 1}
    enter = on(CPU0, op(g, "Enter", "enter", const(g, "zero", 0.0, device=CPU0), **frame))
    merge = on(CPU0, op(g, "Merge", "merge", enter, enter, N=2))
    cond = on(CPU0, g.add_node("LoopCond", "cond", inputs=[on(CPU0, op(
        g, "Less", "less", merge, const(g, "ten", 10.0, device=CPU0, control_inputs=[merge]))).output(0)]))
    switch = on(CPU0, op(g, "Switch", "switch", merge, cond))
    body = on(CPU0, op(g, "Identity", "body", switch.output(1)))
    merge.set_input(1, on(CPU0, op(g, "NextIteration", "next", body)).output(0))
    done = on(CPU0, op(g, "Exit", "exit", switch.output(0)))
    on(CPU1, op(g, "Identity", "result", transfer(g, done, CPU0, CPU1, "exit:0")))
    return g


def test_timeout_stops_every_device():
    start = time.monotonic()
    with pytest.raises(RuntimeFailure, match="timed out after 0.3 s"):
        Session(endless_loop_graph(), threads=1).run(["result"], timeout=0.3)
    assert time.monotonic() - start < 10


def test_a_recv_nobody_sends_is_a_deadlock_error_not_a_hang():
    g = Graph()
    on(CPU0, const(g, "c", 1.0))
    attrs = dict(tensor_name="ghost:0", send_device=CPU0, recv_device=CPU1, send_device_incarnation=1)
    recv = g.add_node("_Recv", "ghost/recv", attrs={"tensor_type": F32, **attrs}, device=CPU1)
    on(CPU1, op(g, "Identity", "result", recv))
    with pytest.raises(RuntimeFailure, match="cannot finish: no device sends tensor 'ghost:0' from CPU:0 to CPU:1"):
        Session(g, threads=1).run(["result", "c"])


def test_a_cross_device_edge_in_a_partitioned_graph_is_invalid():
    g = root_transfer_graph()
    on(CPU1, op(g, "AddV2", "stray", g.node("z"), g.node("x")))
    with pytest.raises(InvalidGraphError, match="edge 'x' -> 'stray' crosses from .*CPU:0 to .*CPU:1"):
        Session(g).run(["stray"], {"x": np.ones(3, np.float32), "b": np.ones(3, np.float32)})


def test_a_remote_device_is_unavailable():
    remote = "/job:worker/replica:0/task:1/device:CPU:0"
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [3]))
    on(remote, op(g, "Identity", "far", transfer(g, x, CPU0, remote, "x:0")))
    with pytest.raises(DeviceUnavailable, match="device '/job:worker/replica:0/task:1/device:CPU:0' is not on"):
        Session(g).run(["far"], {"x": np.ones(3, np.float32)})


def test_cli_runs_a_partitioned_graph_and_says_how_many_devices_ran(tmp_path):
    path = write_graph(loop_graph(steps=5, parallel_iterations=4), tmp_path / "loop.pb")
    feed = tmp_path / "x.npy"
    np.save(feed, np.array([0.5, -0.3], np.float32))
    code, out, err = run_dftool("run", path, "--feed", f"x={feed}", "--fetch", "out", "--json")
    assert code == 0, err
    assert '"devices": [' in out and "cpu:1" in err and "2 devices" in err
    np.save(feed, np.ones((2, 3), np.float32))
    code, out, err = run_dftool("run", write_graph(failing_graph(), tmp_path / "bad.pb"),
                                "--feed", f"x={feed}", "--fetch", "result")
    assert code == 1 and "node 'bad' (MatMul) failed" in error_line(err) and "(on cpu:0)" in err


# --- graphs that name devices but are not partitioned: placed and partitioned on a copy ---------

def unpartitioned_graph(second_device: str) -> Graph:
    """x (CPU:0) @ w on `second_device`, + x on a node that names no device (the default)."""
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [2, 2]))
    product = on(second_device, op(g, "MatMul", "product", x, const(g, "w", [[1.0, 2.0], [3.0, 4.0]])))
    op(g, "AddV2", "y", product, x)
    return g


def test_an_unpartitioned_graph_is_placed_and_partitioned_on_a_copy():
    graph = unpartitioned_graph(CPU1)
    before = [(n.name, n.device) for n in graph.nodes]
    x = np.array([[1.0, 0.0], [0.5, 2.0]], np.float32)
    result = Session(graph, threads=1).run(["y"], {"x": x})
    np.testing.assert_array_equal(result.values[0], x @ np.array([[1, 2], [3, 4]], np.float32) + x)
    assert result.devices == [CPU0, CPU1] and result.notes == []
    assert [(n.name, n.device) for n in graph.nodes] == before   # the user's graph is untouched


def test_gpu_nodes_run_on_the_fake_gpu_when_the_session_asks_for_the_double():
    x = np.eye(2, dtype=np.float32)
    result = Session(unpartitioned_graph(GPU0), device="fakegpu", threads=1).run(["y"], {"x": x})
    # Nodes without a device follow the session's device (here the fake GPU).
    assert result.devices == [CPU0, GPU0]
    np.testing.assert_array_equal(result.values[0], np.array([[2, 2], [3, 5]], np.float32))


def test_a_device_that_is_not_here_is_soft_placed_and_said():
    result = Session(unpartitioned_graph("/device:TPU:0"), threads=1).run(["y"], {"x": np.eye(2, dtype=np.float32)})
    assert result.devices == [CPU0]
    assert result.notes == ["node 'product' asked for tpu:0, runs on cpu:0 "
                            "(no available device matches it (devices: cpu:0))"]


def test_a_fed_placeholder_with_default_pinned_to_a_device_runs_across_devices():
    """TF Savers' filename tensor: a PlaceholderWithDefault on /device:CPU:0, fed, in a graph that
    spans devices (its default is not needed once fed)."""
    from graphtool.exec.sim_gpu import SimulatedGPUDevice

    graph = Graph()
    default = const(graph, "default", 1.0)
    fed = graph.add_node("PlaceholderWithDefault", "p", inputs=[default.output(0)],
                         attrs={"dtype": F32, "shape": None}, device="/device:CPU:0")
    op(graph, "Identity", "y", fed)
    session = Session(graph, device=SimulatedGPUDevice(strict=True))
    assert session.run(["y:0"], {"p:0": np.float32(7.0)}).values[0] == 7.0
    assert session.run(["y:0"]).values[0] == 1.0


def test_fed_outputs_of_a_node_with_inputs_run_on_several_devices():
    """Feeding a node that has inputs (a Saver's RestoreV2, here an Unpack) in a multi-device run:
    its inputs are not needed, and the pruned graph stays valid for placement and partitioning."""
    b = GraphBuilder()
    with b.device("/device:CPU:0"):
        x = b.placeholder("float32", [2, 3], name="x")
        parts = b.op("Unpack", [b.op("Neg", [x])], num=2, axis=0, name="parts")
        single = b.op("Square", [x], name="single")
    with b.device("/device:CPU:1"):
        b.op("AddV2", [parts[0], parts[1]], name="total")
        b.op("Identity", [single], name="copy")
    session = Session(b.graph)
    fed = {"parts:0": np.float32([1, 2, 3]), "parts:1": np.float32([10, 20, 30]), "single:0": np.ones((2, 3), np.float32)}
    result = session.run(["total", "copy"], fed, timeout=60)
    np.testing.assert_array_equal(result.values[0], [11, 22, 33])
    np.testing.assert_array_equal(result.values[1], np.ones((2, 3)))
    assert len(result.devices) == 2
