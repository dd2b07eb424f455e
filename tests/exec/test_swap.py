"""swap_memory: stacks on the simulated GPU move saved values to host memory and bring them back,
prefetching the next value to be popped; device bytes held by stacks stay small."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.exec.sim_gpu import SimulatedGPUDevice
from graphtool.exec.swap import SwapPolicy
from graphtool.ir import from_graphdef

from .test_tf_fixtures_run import assert_matches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
STEPS, WIDTH = 12, 64
ELEMENT_BYTES = WIDTH * 4


def push_pop_loops(swap_memory: bool):
    """A forward loop pushing each iteration's value onto a stack, then a backward loop popping
    them all (last first) into a weighted sum: the shape of a while-loop gradient."""
    b = GraphBuilder()
    float32 = dtypes.as_dtype("float32")
    x = b.placeholder("float32", [WIDTH], name="x")
    stack = b.op("StackV2", [np.int32(-1)], name="saved", elem_type=float32)

    def forward(i, v):
        value = b.op("AddV2", [b.op("Sin", [v]), np.float32(0.5)])
        pushed = b.op("StackPushV2", [stack, value], name="push", swap_memory=swap_memory)
        return [b.op("AddV2", [i, np.int32(1)]), pushed]

    def backward(total, j):
        popped = b.op("StackPopV2", [stack], name="pop", elem_type=float32)
        return [b.op("AddV2", [b.op("Mul", [total, np.float32(0.5)]), popped]), b.op("AddV2", [j, np.int32(1)])]

    _, last = b.while_loop(lambda i, _: b.op("Less", [i, np.int32(STEPS)]), forward, [np.int32(0), x],
                           parallel_iterations=1, name="forward")
    # The backward loop's first var depends on the forward loop's result, so its pivot (which the
    # pops hang on) waits for every push.
    start = b.op("Mul", [last, np.float32(0.0)], name="start")
    total, _ = b.while_loop(lambda _, j: b.op("Less", [j, np.int32(STEPS)]), backward, [start, np.int32(0)],
                            parallel_iterations=1, name="backward")
    b.op("Identity", [total], name="total")
    return b.graph


FEEDS = {"x": np.linspace(-2, 2, WIDTH, dtype=np.float32)}


def run_loops(device, swap_memory: bool):
    return Session(push_pop_loops(swap_memory), device=device, threads=1).run(["total:0"], FEEDS).values[0]


def test_swapped_values_come_back_equal_and_prefetched():
    expected = run_loops("cpu", swap_memory=True)
    device = SimulatedGPUDevice()
    np.testing.assert_array_equal(run_loops(device, swap_memory=True), expected)
    stats = device.swapper.stats
    assert stats.swapped_out == stats.swapped_in == STEPS
    assert stats.bytes_out == STEPS * ELEMENT_BYTES
    # Every pop but the first found its value already on the way back (LIFO: the next is known).
    assert stats.prefetched == stats.prefetch_hits == STEPS - 1
    # Held by stacks on the device at any time: at most one prefetched value (plus the one being
    # copied out), never the whole history.
    assert stats.peak_stack_device_bytes <= 2 * ELEMENT_BYTES
    assert stats.stack_device_bytes == 0


def test_without_swap_memory_the_stack_holds_every_value_on_the_device():
    device = SimulatedGPUDevice()
    run_loops(device, swap_memory=False)
    stats = device.swapper.stats
    assert stats.swapped_out == 0
    assert stats.peak_stack_device_bytes == STEPS * ELEMENT_BYTES


@pytest.mark.parametrize("threshold, swaps", [(0, STEPS), (1 << 40, 0)])
def test_memory_threshold_swaps_without_the_attr(threshold, swaps):
    device = SimulatedGPUDevice(swap_threshold_bytes=threshold)
    np.testing.assert_array_equal(run_loops(device, swap_memory=False), run_loops("cpu", swap_memory=False))
    assert device.swapper.stats.swapped_out == swaps


def test_swap_policy():
    assert SwapPolicy().should_swap(True, 0)
    assert not SwapPolicy().should_swap(False, 1 << 40)
    assert SwapPolicy(100).should_swap(False, 101) and not SwapPolicy(100).should_swap(False, 100)


def test_swaps_run_on_the_copy_stream_and_pops_wait_for_them():
    device = SimulatedGPUDevice()
    run_loops(device, swap_memory=True)
    copies = device.trace.launches("copy")
    assert copies.count("swap_out") == STEPS and copies.count("swap_in") == STEPS
    pop_lanes = {e[1] for e in device.trace.entries if e[0] == "launch" and e[2] == "backward/pop"}
    waits_on_copy = [e for e in device.trace.entries if e[0] == "wait" and e[1] in pop_lanes and e[2] == "copy"]
    assert len(waits_on_copy) >= STEPS


def test_lstm_gradient_with_swap_memory_matches_tensorflow():
    """The TensorFlow LSTM gradient fixture with every StackPushV2 set to swap."""
    spec = json.loads((FIXTURES / "grad_lstm" / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / "grad_lstm" / "graph.pb")), "grad_lstm")
    pushes = [node for node in graph.nodes if node.op == "StackPushV2"]
    for node in pushes:
        node.set_attr("swap_memory", True)
    device = SimulatedGPUDevice(strict=True)
    result = Session(graph, device=device, threads=2).run(spec["fetches"], dict(np.load(FIXTURES / "grad_lstm" / "feeds.npz")))
    expected = np.load(FIXTURES / "grad_lstm" / "expected.npz")
    for name, value in zip(spec["fetches"], result.values):
        assert_matches(name, value, expected[name], max(spec.get("rtol", 0), 1e-4), max(spec.get("atol", 0), 1e-5))
    stats = device.swapper.stats
    assert stats.swapped_out >= len(pushes) and stats.swapped_in == stats.swapped_out
    assert stats.stack_device_bytes == 0
