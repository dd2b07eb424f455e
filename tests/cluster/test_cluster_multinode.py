"""Several machines, simulated by Ray's multi-node test cluster (three Ray nodes on this machine,
loopback only): dftool joins it, places across the nodes, gives the local values; killing a worker
process, and separately a whole node, mid-step fails cleanly within 5 s; nothing survives."""
from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

from graphtool.ir.export import to_graphdef

from .graphs import big_crossing, ping_pong
from .processes import Dftool, alive, process_tree, wait_gone

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
TASK = "/job:worker/replica:0/task:{}/device:CPU:0"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """A head node and two more; yields (cluster, spec file pinning worker:k to node k, files)."""
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from graphtool.cluster.ray_engine import loopback_only

    loopback_only()
    root = tmp_path_factory.mktemp("multinode")
    before = process_tree(os.getpid())   # (a cluster this process started earlier is not ours here)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    own = set()
    try:
        cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        own = process_tree(os.getpid()) - before
        node_ids = [cluster.head_node.node_id] + [n.node_id for n in cluster.worker_nodes]
        spec = {"address": cluster.address, "jobs": {"worker": [{"node": node_id} for node_id in node_ids]}}
        (root / "cluster.json").write_text(json.dumps(spec))
        (root / "ping_pong.pb").write_bytes(to_graphdef(ping_pong(TASK.format(1), TASK.format(2))).SerializeToString())
        (root / "crossing.pb").write_bytes(to_graphdef(big_crossing(1 << 16)).SerializeToString())
        np.save(root / "forever.npy", np.int32(10**8))
        np.save(root / "five.npy", np.int32(5))
        np.save(root / "x.npy", np.arange(1 << 16, dtype=np.float32))
        yield cluster, root, node_ids
    finally:
        cluster.shutdown()
        assert not wait_gone(own), "Ray processes of the test cluster survived its shutdown"


def _run(root, *args: str) -> Dftool:
    return Dftool("run", *args, "--cluster", str(root / "cluster.json"), "-v")


def test_tasks_are_pinned_to_their_nodes_and_values_match(nodes):
    _, root, node_ids = nodes
    dftool = _run(root, str(root / "crossing.pb"), "--feed", f"x={root / 'x.npy'}", "--output", str(root / "out.npz"))
    try:
        tasks = dftool.tasks(3)
        code, _, _ = dftool.finish(timeout=120)
    finally:
        dftool.kill()
    assert code == 0, dftool.lines
    assert [tasks[f"worker:{k}"]["node"] for k in range(3)] == [node_id[:12] for node_id in node_ids]
    x = np.load(root / "x.npy")
    np.testing.assert_array_equal(np.load(root / "out.npz")["out"], x * 2 + 1)
    assert any("worker:0/cpu:0, worker:1/cpu:0" in line for line in dftool.lines), dftool.lines
    assert not wait_gone(dftool.tree - process_tree(os.getpid()))


def test_a_loop_spanning_nodes_runs_and_the_cluster_stays_usable(nodes):
    _, root, _ = nodes
    for _ in range(2):   # the second run joins the same cluster: the first left nothing behind
        dftool = _run(root, str(root / "ping_pong.pb"), "--feed", f"n={root / 'five.npy'}", "--fetch", "out")
        try:
            code, _, _ = dftool.finish(timeout=120)
        finally:
            dftool.kill()
        assert code == 0, dftool.lines
        assert "out  float32[]  [5.]" in dftool.process.stdout.read(), dftool.lines


def _stop_mid_step(root, kill) -> tuple[int, float, str, Dftool, dict]:
    dftool = _run(root, str(root / "ping_pong.pb"), "--feed", f"n={root / 'forever.npy'}")
    try:
        tasks = dftool.tasks(3)
        time.sleep(3.0)
        kill(tasks)
        killed = time.monotonic()
        code, _, line = dftool.finish(timeout=60)
    finally:
        dftool.kill()
    assert dftool.error_at is not None, dftool.lines
    return code, dftool.error_at - killed, line, dftool, tasks


def test_killing_a_worker_process_on_another_node_fails_the_step_within_5_s(nodes):
    _, root, _ = nodes
    code, elapsed, line, dftool, tasks = _stop_mid_step(root, lambda t: os.kill(t["worker:2"]["pid"], signal.SIGKILL))
    assert code == 1 and elapsed < 5, (elapsed, dftool.lines)
    assert line.startswith(f"error: task worker:2 (Ray node {tasks['worker:2']['node']}"), line
    assert "worker:1 was waiting for tensor" in line, line
    assert not alive({tasks[k]["pid"] for k in tasks})


def test_killing_a_whole_node_fails_the_step_within_5_s(nodes):
    cluster, root, node_ids = nodes
    victim = next(n for n in cluster.worker_nodes if n.node_id == node_ids[2])
    code, elapsed, line, dftool, tasks = _stop_mid_step(root, lambda t: cluster.remove_node(victim))
    assert code == 1 and elapsed < 5, (elapsed, dftool.lines)
    assert line.startswith(f"error: task worker:2 (Ray node {tasks['worker:2']['node']}"), line
    assert not alive({tasks[k]["pid"] for k in tasks})
