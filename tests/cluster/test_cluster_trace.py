"""Traces and profiles of cluster steps: one process per task and device, a flow per transfer
carrying its bytes and latency on the master's clock (a Recv never ends before its Send began),
the profile's transfers per edge with the network totals, and the critical path across tasks."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.exec.step_stats import StepStats, perf_clock_id, transfers
from graphtool.exec.trace import chrome_trace
from graphtool.placement.device_names import short_device_name
from graphtool.profiling import critical_path, profile_report, profile_steps, summarize
from tests.helpers import run_dftool, write_graph
from tests.test_profile import assert_consistent
from tests.test_report_schemas import validation_errors
from tests.trace_format import enclosing_slice, validate_trace

pytestmark = pytest.mark.cluster

MIB = 1 << 20
TASK = "/job:worker/replica:0/task:{}/device:CPU:0"


def three_task_chain():
    """x -> y = relu(x) on task 0; its 1 MiB float32 output to task 1 (z = tanh(y)); z's sum to task 2."""
    b = GraphBuilder()
    with b.device(TASK.format(0)):
        x = b.placeholder(dtypes.float32, [512, 512], name="x")
        y = b.relu(x, name="y")
    with b.device(TASK.format(1)):
        z = b.tanh(y, name="z")
    with b.device(TASK.format(2)):
        b.reduce_sum(z, [0, 1], name="total")
    return b.graph


FEEDS = {"x": np.random.default_rng(0).normal(size=(512, 512)).astype(np.float32)}


def traced_steps(cluster, count: int) -> list[StepStats]:
    session = Session(three_task_chain(), cluster=cluster)
    return profile_steps(session, ["total"], FEEDS, repeat=count, warmup=1, timeout=60).steps


def flows(document: dict) -> list[dict]:
    pairs: dict[int, dict] = {}
    for event in document["traceEvents"]:
        if event["ph"] in "sf":
            pairs.setdefault(event["id"], {})[event["ph"]] = event
    return list(pairs.values())


def test_a_cluster_trace_has_a_process_per_task_and_a_flow_per_transfer(cluster3):
    for stats in traced_steps(cluster3, 4):
        document = chrome_trace(stats)
        assert validate_trace(document) == []
        processes = {e["pid"]: e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"}
        assert sorted(processes.values()) == ["worker:0/cpu:0", "worker:1/cpu:0", "worker:2/cpu:0"]
        moved = transfers(stats)
        assert len(flows(document)) == len(moved) == 2
        for pair in flows(document):
            send = enclosing_slice(document["traceEvents"], pair["s"]["pid"], pair["s"]["tid"], pair["s"]["ts"])
            recv = enclosing_slice(document["traceEvents"], pair["f"]["pid"], pair["f"]["tid"], pair["f"]["ts"])
            assert (send["cat"], recv["cat"]) == ("_Send", "_Recv")
            args = pair["s"]["args"]
            assert pair["s"]["cat"] == "network" and args == pair["f"]["args"] == recv["args"]["transfer"]
            assert (args["from"], args["to"]) == (processes[send["pid"]], processes[recv["pid"]])
            assert args["bytes"] == recv["args"]["output_bytes"]
            # On the master's clock: the value arrived after the Send began, never before.
            assert args["latency_us"] >= 0
            assert recv["ts"] + recv["dur"] >= send["ts"]
        big = next(f["s"]["args"] for f in flows(document) if f["s"]["args"]["tensor"] == "y:0")
        assert (big["from"], big["to"], big["bytes"]) == ("worker:0/cpu:0", "worker:1/cpu:0", MIB)
        for transfer in moved:
            assert transfer.across_tasks and transfer.latency_ns >= 0
            assert transfer.recv.end_ns <= stats.wall_ns and transfer.send.start_ns >= 0


def test_the_profile_of_a_cluster_step_lists_the_network_edges_and_the_path_crosses_tasks(cluster3):
    steps = traced_steps(cluster3, 3)
    summary = summarize(steps)
    edges = {(e.tensor, e.send_device, e.recv_device): e for e in summary.edges}
    assert set(edges) == {("y:0", TASK.format(0), TASK.format(1)), ("z:0", TASK.format(1), TASK.format(2))}
    big = edges["y:0", TASK.format(0), TASK.format(1)]
    assert big.across_tasks and big.count == 1 and big.bytes == MIB and big.time_ns > 0
    per_step = [[t.latency_ns for t in transfers(step) if t.tensor == "y:0"] for step in steps]
    assert big.time_ns == pytest.approx(np.mean(per_step))
    network = summary.network
    assert network.count == 2 and network.bytes == MIB + edges["z:0", TASK.format(1), TASK.format(2)].bytes
    assert network.time_ns == pytest.approx(sum(e.time_ns for e in summary.edges))

    document = {"command": "profile", **profile_report(summary, graph="chain", repeat=3, warmup=1)}
    assert validation_errors("profile", document) == []
    entry = next(e for e in document["transfers"]["edges"] if e["tensor"] == "y:0")
    assert (entry["from"], entry["to"], entry["bytes"], entry["count"]) == (TASK.format(0), TASK.format(1), MIB, 1)

    for step in steps:
        assert_consistent(step)
        path = critical_path(step)
        # The chain runs from task 0's work through both transfers to the sum on task 2.
        assert [s.execution.op for s in path.steps if s.execution.op in ("_Send", "_Recv")] == ["_Send", "_Recv"] * 2
        assert {short_device_name(s.execution.device) for s in path.steps} == \
            {"worker:0/cpu:0", "worker:1/cpu:0", "worker:2/cpu:0"}
        assert path.names[-1] == "total" and "y" in path.names


def test_workers_on_this_machine_are_put_on_the_masters_clock_exactly():
    pytest.importorskip("ray")
    from graphtool.cluster.master import _clock_offset

    if perf_clock_id() is None:
        pytest.skip("this OS does not tell which perf counter a process reads")
    stats = StepStats()
    master_wall_origin = time.time_ns() - (time.perf_counter_ns() - stats.origin_ns)
    # A worker that began its step 12.345 us after the master (its wall clock read a little late).
    worker = {"origin_ns": stats.origin_ns + 12_345, "origin_wall_ns": master_wall_origin + 12_345 + 40_000,
              "clock": perf_clock_id()}
    assert _clock_offset(stats, worker) == 12_345
    # Another machine: only the wall clocks can be compared.
    assert abs(_clock_offset(stats, {**worker, "clock": "elsewhere/boot"}) - 52_345) < 5_000_000
    # The same id but wall clocks an hour apart: the ids lied (a clock namespace); the wall wins.
    hour = 3600 * 10**9
    shifted = {**worker, "origin_wall_ns": worker["origin_wall_ns"] + hour}
    assert abs(_clock_offset(stats, shifted) - (52_345 + hour)) < 5_000_000


@pytest.mark.slow
def test_profile_on_a_two_task_cluster_reports_the_network_and_traces_each_task(tmp_path):
    pytest.importorskip("ray")
    b = GraphBuilder()
    with b.device(TASK.format(0)):
        y = b.relu(b.placeholder(dtypes.float32, [512, 512], name="x"), name="y")
    with b.device(TASK.format(1)):
        b.tanh(y, name="z")
    graph, feed, trace = write_graph(b.graph, tmp_path / "chain.pb"), tmp_path / "x.npy", tmp_path / "t.json"
    np.save(feed, FEEDS["x"])
    code, stdout, stderr = run_dftool("profile", graph, "--feed", f"x={feed}", "--fetch", "z", "--cluster", "local:2",
                                      "--repeat", 2, "--warmup", 1, "--json", "--trace", trace, timeout=180)
    assert code == 0, stderr
    document = json.loads(stdout)
    assert validation_errors("profile", document) == []
    (edge,) = document["transfers"]["edges"]
    assert (edge["tensor"], edge["from"], edge["to"]) == ("y:0", TASK.format(0), TASK.format(1))
    assert edge["across_tasks"] and edge["bytes"] == MIB and edge["count"] == 1 and edge["latency_ms"] >= 0
    assert document["transfers"]["network"]["bytes"] == MIB
    assert "transfers per edge" in stderr and "network (between tasks)" in stderr
    timeline = json.loads(trace.read_text())
    assert validate_trace(timeline) == []
    processes = sorted(e["args"]["name"] for e in timeline["traceEvents"] if e["name"] == "process_name")
    assert processes == ["worker:0/cpu:0", "worker:1/cpu:0"]
    (arrow,) = [e for e in timeline["traceEvents"] if e["ph"] == "s"]
    assert arrow["cat"] == "network" and arrow["args"]["bytes"] == MIB
