"""Faults on a cluster, through the CLI: a worker process that dies or stops answering, a kernel
error on one task, a timeout, Ctrl-C. Each stops the step on every task within 5 s with one line
naming the task, its Ray node and what was waiting on it; nothing of the cluster survives."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import time

import numpy as np
import pytest

from graphtool.ir.export import to_graphdef

from .graphs import failing_on, ping_pong
from .processes import Dftool, wait_gone

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
STEP_RUNNING_S = 2.0     # the cluster is up (pids printed); the step is running this much later


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    pytest.importorskip("ray")
    root = tmp_path_factory.mktemp("cluster_faults")
    (root / "ping_pong.pb").write_bytes(to_graphdef(ping_pong()).SerializeToString())
    (root / "failing.pb").write_bytes(to_graphdef(failing_on()).SerializeToString())
    np.save(root / "forever.npy", np.int32(10**8))
    np.save(root / "nan.npy", np.array([1, 2, np.nan], np.float32))
    return root


def _long_step(files, *extra: str, cluster: str = "local:2") -> Dftool:
    return Dftool("run", str(files / "ping_pong.pb"), "--feed", f"n={files / 'forever.npy'}",
                  "--cluster", cluster, "-v", *extra)


def _assert_nothing_left(dftool: Dftool) -> None:
    assert not wait_gone(dftool.tree), f"processes left running: {sorted(dftool.tree)}"


def _signal_a_worker_mid_step(files, task: str, signum: int, cluster: str = "local:2"):
    """Run the endless step, send `signum` to `task`'s worker once it runs; returns (dftool, its
    tasks, exit code, the last line). Asserts the step stopped within 5 s of the signal and the
    command exited soon after (the cluster's shutdown included)."""
    dftool = _long_step(files, cluster=cluster)
    tasks: dict = {}
    try:
        tasks = dftool.tasks(2)
        time.sleep(STEP_RUNNING_S)
        os.kill(tasks[task]["pid"], signum)
        signalled = time.monotonic()
        code, exited, line = dftool.finish()
    finally:
        if signum == signal.SIGSTOP and tasks:
            with contextlib.suppress(ProcessLookupError):   # (gone: the cluster's shutdown killed it)
                os.kill(tasks[task]["pid"], signal.SIGCONT)
        dftool.kill()
    assert code == 1, dftool.lines
    assert dftool.error_at is not None and dftool.error_at - signalled < 5, "the step was not stopped within 5 s"
    assert exited < 5 + 5, f"exit took {exited:.1f} s (the cluster's shutdown included)"
    return dftool, tasks, code, line


def test_a_worker_that_dies_mid_step_fails_the_step_within_5_s(files):
    dftool, tasks, _, line = _signal_a_worker_mid_step(files, "worker:1", signal.SIGKILL)
    assert line.startswith("error: task worker:1 (Ray node "), line
    assert tasks["worker:1"]["node"] in line and str(tasks["worker:1"]["pid"]) in line
    assert "worker:0 was waiting for tensor" in line and "from worker:1/cpu:0" in line
    _assert_nothing_left(dftool)


def test_a_worker_that_stops_answering_fails_the_step_within_5_s(files, join_spec):
    dftool, tasks, _, line = _signal_a_worker_mid_step(files, "worker:0", signal.SIGSTOP, cluster=str(join_spec))
    assert line.startswith("error: task worker:0 (Ray node ") and "health check" in line, line
    _assert_nothing_left(dftool)
    assert not wait_gone({task["pid"] for task in tasks.values()}), "a worker of the run survived it"


def test_a_kernel_error_on_a_worker_names_node_op_and_task(files, join_spec):
    dftool = Dftool("run", str(files / "failing.pb"), "--feed", f"x={files / 'nan.npy'}", "--cluster", str(join_spec))
    try:
        code, _, line = dftool.finish(timeout=120)
    finally:
        dftool.kill()
    assert code == 1, dftool.lines
    assert "node 'check' (CheckNumerics)" in line and "x went bad" in line, line
    assert line.count("worker:1/cpu:0") == 1, line
    _assert_nothing_left(dftool)


def test_the_timeout_holds_across_the_cluster(files, join_spec):
    dftool = _long_step(files, "--timeout", "4", cluster=str(join_spec))
    try:
        tasks = dftool.tasks(2)
        started = time.monotonic()
        code, _, line = dftool.finish(timeout=120)
        elapsed = time.monotonic() - started
    finally:
        dftool.kill()
    assert code == 1 and "timed out after 4 s" in line, dftool.lines
    assert elapsed < 4 + 5 + 3
    _assert_nothing_left(dftool)
    assert not wait_gone({task["pid"] for task in tasks.values()}), "a worker of the run survived it"


def test_ctrl_c_stops_the_cluster_and_leaves_nothing_running(files):
    dftool = _long_step(files)
    try:
        dftool.tasks(2)
        time.sleep(STEP_RUNNING_S)
        dftool.signal(signal.SIGINT)
        code, elapsed, line = dftool.finish()
    finally:
        dftool.kill()
    assert code == 130 and line == "error: interrupted", dftool.lines
    _assert_nothing_left(dftool)


def test_cluster_and_run_reports_validate_against_their_schemas(files, join_spec, tmp_path):
    """`dftool cluster local:2 --json` and `run --cluster local:2 --json` (the report's cluster part)."""
    from tests.test_report_schemas import validation_errors

    listing = Dftool("cluster", str(join_spec), "--json")
    code, _, _ = listing.finish(timeout=120)
    report = json.loads(listing.process.stdout.read())
    assert code == 0 and validation_errors("cluster", report) == []
    assert [task["task"] for task in report["tasks"]] == ["/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
    _assert_nothing_left(listing)
    np.save(tmp_path / "x.npy", np.arange(1 << 16, dtype=np.float32))
    from .graphs import big_crossing

    (tmp_path / "crossing.pb").write_bytes(to_graphdef(big_crossing(1 << 16)).SerializeToString())
    run = Dftool("run", str(tmp_path / "crossing.pb"), "--feed", f"x={tmp_path / 'x.npy'}", "--cluster",
                 str(join_spec), "--json")
    code, _, _ = run.finish(timeout=120)
    report = json.loads(run.process.stdout.read())
    assert code == 0 and validation_errors("run", report) == []
    assert report["cluster"] == {"spec": str(join_spec), "tasks": 2, "nodes": 1, "transfer_bytes": 4 << 16}
    assert report["devices"] == ["worker:0/cpu:0", "worker:1/cpu:0"]
    _assert_nothing_left(run)


def test_place_over_a_cluster_uses_its_devices_and_measured_network(files, join_spec, tmp_path):
    """`place --cluster`: every node on one of the cluster's devices; --devices must be among them."""
    from graphtool import graph_io

    out = tmp_path / "placed.pb"
    place = Dftool("place", str(files / "ping_pong.pb"), str(out), "--cluster", str(join_spec), "--json")
    code, _, _ = place.finish(timeout=120)
    report = json.loads(place.process.stdout.read())
    assert code == 0, place.lines
    assert any(line.startswith(f"cluster {join_spec}: 2 task(s)") for line in place.lines), place.lines
    devices = {node.device for node in graph_io.load_graphdef(str(out)).node}
    assert devices <= {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"}
    assert set(report["devices"]) <= {"/job:worker/replica:0/task:0/device:CPU:0",
                                      "/job:worker/replica:0/task:1/device:CPU:0"}
    wrong = Dftool("place", str(files / "ping_pong.pb"), str(tmp_path / "x.pb"), "--cluster", str(join_spec),
                   "--devices", "worker:5/cpu:0")
    code, _, line = wrong.finish(timeout=120)
    assert code == 2 and "'worker:5/cpu:0' is not a device of the cluster" in line, wrong.lines
    assert not (tmp_path / "x.pb").exists()
