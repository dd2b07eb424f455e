"""Graphs the cluster tests run: built here, written where a test wants them."""
from __future__ import annotations

import numpy as np

from graphtool.builder import GraphBuilder
from graphtool.ir import Graph

TASK0 = "/job:worker/replica:0/task:0/device:CPU:0"
TASK1 = "/job:worker/replica:0/task:1/device:CPU:0"


def ping_pong(first: str = TASK0, second: str = TASK1) -> Graph:
    """A while loop of `n` (fed) iterations whose body crosses from `first` to `second` and back
    each iteration: a step as long as you like, with each task always waiting on the other.
    Fetch `out` (= n as float32)."""
    b = GraphBuilder()
    n = b.placeholder("int32", [], name="n")

    def body(i, x):
        with b.device(first):
            y = b.add(x, b.const(np.float32(1)))
        with b.device(second):
            z = b.mul(y, b.const(np.float32(1)))
        return b.add(i, b.const(np.int32(1))), z

    _, x = b.while_loop(lambda i, x: b.less(i, n), body, [b.const(np.int32(0)), b.const(np.float32(0))],
                        parallel_iterations=1)
    b.identity(x, name="out")
    return b.graph


def failing_on(device: str = TASK1) -> Graph:
    """`out` = CheckNumerics(x * 2) on `device`: feeding a NaN makes that task's kernel fail."""
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    with b.device(TASK0):
        doubled = b.mul(x, b.const(np.float32(2)))
    with b.device(device):
        checked = b.op("CheckNumerics", [doubled], name="check", message="x went bad")
    b.identity(checked, name="out")
    return b.graph


def waiting_for_a_ghost() -> Graph:
    """A partitioned graph whose `_Recv` on task 1 has no `_Send` anywhere: it cannot finish."""
    b = GraphBuilder()
    with b.device(TASK1):
        received = b.op("_Recv", [], name="recv_ghost", tensor_type="float32", tensor_name="ghost",
                        send_device=TASK0, send_device_incarnation=1, recv_device=TASK1)
        b.identity(received, name="out")
    with b.device(TASK0):
        b.const(np.float32(1), name="unrelated")
    return b.graph


def big_crossing(elements: int = 1 << 18) -> Graph:
    """`out` = (x * 2 on task 0) + 1 on task 1: one float32 tensor of `elements` crosses tasks."""
    b = GraphBuilder()
    x = b.placeholder("float32", [elements], name="x")
    with b.device(TASK0):
        doubled = b.mul(x, b.const(np.float32(2)))
    with b.device(TASK1):
        b.add(doubled, b.const(np.float32(1)), name="out")
    return b.graph
