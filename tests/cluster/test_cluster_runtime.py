"""The cluster runtime through the Python API, on the session's `local:3` cluster: placement once
per Session, errors named by task, deadlocks across tasks, lost workers replaced, compression."""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from graphtool.errors import RuntimeFailure, UsageError
from graphtool.exec.session import Session

from .graphs import TASK0, TASK1, big_crossing, failing_on, ping_pong, waiting_for_a_ghost

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
TASK2 = "/job:worker/replica:0/task:2/device:CPU:0"


def test_the_cluster_lists_its_tasks_on_loopback(cluster3):
    rows = cluster3.describe()
    assert [row["task"] for row in rows] == [f"/job:worker/replica:0/task:{k}" for k in range(3)]
    assert {row["node_ip"] for row in rows} == {"127.0.0.1"}
    assert len({row["pid"] for row in rows}) == 3 and os.getpid() not in {row["pid"] for row in rows}
    assert cluster3.network.latency_seconds > 0 and cluster3.network.bytes_per_second > 0


def test_a_step_crosses_tasks_and_gives_the_local_values(cluster3):
    x = np.arange(1 << 18, dtype=np.float32)
    result = Session(big_crossing(), cluster=cluster3).run(["out"], {"x": x})
    np.testing.assert_array_equal(result.values[0], x * 2 + 1)
    assert set(result.devices) == {TASK0, TASK1}


def test_a_kernel_error_names_node_op_and_task(cluster3):
    session = Session(failing_on(TASK1), cluster=cluster3)
    with pytest.raises(RuntimeFailure, match=r"node 'check' \(CheckNumerics\).*x went bad.*worker:1/cpu:0"):
        session.run(["out"], {"x": np.array([1, 2, np.nan], np.float32)})
    # the same session goes on working
    np.testing.assert_array_equal(session.run(["out"], {"x": np.ones(3, np.float32)}).values[0], [2, 2, 2])


def test_a_deadlock_across_tasks_is_reported_not_waited_out(cluster3):
    started = time.monotonic()
    with pytest.raises(RuntimeFailure, match=r"cannot finish on the cluster: no task sends tensor 'ghost' "
                                             r"from worker:0/cpu:0 to worker:1/cpu:0"):
        Session(waiting_for_a_ghost(), cluster=cluster3).run(["out"], {})
    assert time.monotonic() - started < 10


def test_the_timeout_holds_across_tasks(cluster3):
    session = Session(ping_pong(TASK0, TASK2), cluster=cluster3)
    started = time.monotonic()
    with pytest.raises(RuntimeFailure, match="timed out after 2 s"):
        session.run(["out"], {"n": np.int32(10**8)}, timeout=2)
    assert time.monotonic() - started < 2 + 5
    assert session.run(["out"], {"n": np.int32(5)}, timeout=30).values[0] == 5


def test_a_lost_worker_fails_the_step_and_is_replaced_for_the_next(cluster3):
    session = Session(ping_pong(TASK1, TASK2), cluster=cluster3)
    assert session.run(["out"], {"n": np.int32(3)}).values[0] == 3
    victim = next(t for t in cluster3.tasks if t.task.index == 2)
    killer = threading.Timer(2.0, os.kill, (victim.pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(RuntimeFailure, match=rf"task worker:2 \(Ray node {victim.short_node}, pid {victim.pid}\) "
                                                 r"was lost during the step: .*worker:1 was waiting for tensor"):
            session.run(["out"], {"n": np.int32(10**8)}, timeout=60)
    finally:
        killer.cancel()
    # The next step runs on a fresh worker:2 (a new process), the signature registered again.
    assert session.run(["out"], {"n": np.int32(4)}).values[0] == 4
    replaced = next(t for t in cluster3.tasks if t.task.index == 2)
    assert replaced.pid != victim.pid


def test_compression_narrows_only_cross_task_float32_transfers(cluster3):
    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32)
    plain = Session(big_crossing(), cluster=cluster3)
    exact = plain.run(["out"], {"x": x}).values[0]
    plain_bytes = plain._executors and next(iter(plain._executors.values()))[0].last_transfer_bytes
    cluster3.compress = "bf16"
    try:
        narrowed = Session(big_crossing(), cluster=cluster3)
        approx = narrowed.run(["out"], {"x": x}).values[0]
        narrowed_bytes = next(iter(narrowed._executors.values()))[0].last_transfer_bytes
    finally:
        cluster3.compress = "none"
    np.testing.assert_array_equal(exact, x * 2 + 1)
    assert approx.dtype == np.float32
    np.testing.assert_allclose(approx, exact, rtol=2 ** -8, atol=2 ** -7)
    assert plain_bytes == x.nbytes and narrowed_bytes == x.nbytes // 2


def test_jit_and_cluster_do_not_combine(cluster3):
    pytest.importorskip("jax")
    with pytest.raises(UsageError, match="--jit and --cluster"):
        Session(big_crossing(), cluster=cluster3, jit=True)
