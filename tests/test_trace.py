"""Chrome traces of recorded steps: valid trace-event-format JSON (checked by
tests/trace_format.py), one process per device, every execution once, Send->Recv flows,
memory counters, gzip when asked, atomic writes."""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool.errors import UsageError
from graphtool.exec.session import Session
from graphtool.exec.step_stats import DeviceStats, NodeExecution, StepStats, TensorInfo
from graphtool.exec.trace import MEMORY_COUNTER, chrome_trace, write_trace
from graphtool.placement.device_names import short_device_name
from tests.exec.test_step_stats import mlp, sample
from tests.helpers import while_loop_graph
from tests.trace_format import enclosing_slice, validate_trace


def step_stats(graph, fetches, feeds, threads=2) -> StepStats:
    return Session(graph, threads=threads).run(fetches, feeds, trace=True).step_stats


def complete_events(document) -> list[dict]:
    return [e for e in document["traceEvents"] if e["ph"] == "X"]


def metadata(document, kind: str) -> dict:
    """(pid) or (pid, tid) -> name, for process_name / thread_name metadata."""
    return {(e["pid"], e["tid"]) if "tid" in e else e["pid"]: e["args"]["name"]
            for e in document["traceEvents"] if e["ph"] == "M" and e["name"] == kind}


def test_the_trace_of_an_mlp_step_is_valid_and_shows_every_execution():
    graph, feeds = mlp()
    stats = step_stats(graph, ["probs"], feeds)
    document = chrome_trace(stats, metadata={"graph": "mlp"})
    assert validate_trace(document) == []
    events = complete_events(document)
    assert len(events) == stats.nodes_executed
    assert sorted(e["name"] for e in events) == sorted(n.name for n in stats.nodes)
    probs = next(e for e in events if e["name"] == "probs")
    assert probs["cat"] == "Softmax" and probs["args"]["inputs"] == ["add2"]
    assert probs["args"]["outputs"] == ["float32[8,10]"] and probs["args"]["output_bytes"] == 320
    assert metadata(document, "process_name") == {1: short_device_name(next(iter(stats.devices)))} == {1: "cpu:0"}
    assert metadata(document, "thread_name")[(1, 1)] == "scheduler"
    counters = [e for e in document["traceEvents"] if e["ph"] == "C"]
    (device,) = stats.devices.values()
    assert [e["name"] for e in counters] == [MEMORY_COUNTER] * len(device.memory)
    assert max(e["args"]["bytes_in_use"] for e in counters) == max(stats.peak_bytes.values())
    assert document["otherData"]["graph"] == "mlp" and document["otherData"]["nodes_executed"] == stats.nodes_executed


def test_loop_nodes_appear_once_per_iteration():
    stats = step_stats(while_loop_graph(), ["result"], {"start": np.float32(1)})
    document = chrome_trace(stats)
    assert validate_trace(document) == []
    merges = [e for e in complete_events(document) if e["name"] == "while/Merge"]
    assert sorted(e["args"]["iteration"] for e in merges) == [0, 1, 2, 3, 4]
    assert all(e["args"]["frame"] == "while/ctx" for e in merges)
    assert document["otherData"]["loop_iterations"] == {"while/ctx": 5}
    assert any(e["args"].get("dead") for e in complete_events(document))


def test_a_multi_device_trace_has_a_process_per_device_and_flows_from_send_to_recv():
    graph, feeds = sample("multi_device")
    stats = step_stats(graph, ["y"], feeds)
    document = chrome_trace(stats)
    assert validate_trace(document) == []
    processes = metadata(document, "process_name")
    assert sorted(processes.values()) == sorted(short_device_name(d) for d in stats.devices)
    events = document["traceEvents"]
    assert len(complete_events(document)) == stats.nodes_executed
    flows = {}
    for event in events:
        if event["ph"] in "sf":
            flows.setdefault(event["id"], {})[event["ph"]] = event
    assert len(flows) == sum(n.op == "_Send" for n in stats.nodes) >= 2
    for pair in flows.values():
        send = enclosing_slice(events, pair["s"]["pid"], pair["s"]["tid"], pair["s"]["ts"])
        recv = enclosing_slice(events, pair["f"]["pid"], pair["f"]["tid"], pair["f"]["ts"])
        assert (send["cat"], recv["cat"]) == ("_Send", "_Recv")
        assert send["args"]["rendezvous"] == recv["args"]["rendezvous"]
        assert send["pid"] != recv["pid"]
        assert processes[send["pid"]] == short_device_name(send["args"]["rendezvous"].split(";")[0])
        assert metadata(document, "thread_name")[(recv["pid"], recv["tid"])] == "rendezvous"
        # The arrow and the Recv say what moved: the bytes the Recv got, how long since the Send began.
        assert pair["s"]["args"] == pair["f"]["args"] == recv["args"]["transfer"]
        assert pair["s"]["cat"] == "rendezvous"   # one process: no network
        moved = recv["args"]["transfer"]
        assert moved["bytes"] == recv["args"]["output_bytes"] > 0
        assert moved["latency_us"] == pytest.approx(recv["ts"] + recv["dur"] - send["ts"], abs=0.01)
        assert moved["latency_us"] >= 0 and moved["from"] == processes[send["pid"]]
        assert moved["to"] == processes[recv["pid"]] and moved["tensor"] == send["args"]["inputs"][0] + ":0"


def test_overlapping_executions_of_one_lane_get_tracks_of_their_own():
    device = DeviceStats("/device:CPU:0", [
        NodeExecution("a", "_Recv", "/device:CPU:0", 0, 100, lane="rendezvous"),
        NodeExecution("b", "_Recv", "/device:CPU:0", 50, 150, lane="rendezvous"),
        NodeExecution("c", "_Recv", "/device:CPU:0", 120, 130, lane="rendezvous")],
        lanes=["scheduler", "rendezvous"])
    stats = StepStats(origin_ns=0)
    stats.device(device.device).absorb(device)
    document = chrome_trace(stats)
    assert validate_trace(document) == []
    threads = metadata(document, "thread_name")
    track = {e["name"]: threads[(e["pid"], e["tid"])] for e in complete_events(document)}
    assert track == {"a": "rendezvous", "b": "rendezvous #2", "c": "rendezvous"}


def test_the_validator_catches_broken_traces():
    good = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "cpu"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
        {"ph": "s", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "f", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 25, "bp": "e"}]}
    assert validate_trace(good) == []
    broken = [
        ({"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 5, "dur": 10}, "overlap"),
        ({"ph": "X", "name": "c", "pid": 2, "tid": 1, "ts": 50, "dur": 1}, "no process_name"),
        ({"ph": "s", "name": "f", "cat": "c", "id": 2, "pid": 1, "tid": 1, "ts": 5}, "expected one 's' and one 'f'"),
        ({"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": -1, "dur": 1}, "negative ts"),
        ({"ph": "Q", "pid": 1}, "unknown phase"),
    ]
    for event, problem in broken:
        found = validate_trace({"traceEvents": good["traceEvents"] + [event]})
        assert any(problem in p for p in found), (problem, found)


def test_write_trace_gzips_when_the_name_asks_and_writes_atomically(tmp_path: Path):
    graph, feeds = mlp()
    stats = step_stats(graph, ["probs"], feeds)
    plain, zipped = tmp_path / "step.json", tmp_path / "step.json.gz"
    write_trace(stats, str(plain))
    write_trace(stats, str(zipped))
    assert json.loads(plain.read_text()) == json.loads(gzip.decompress(zipped.read_bytes()))
    with pytest.raises(UsageError, match="does not exist"):
        write_trace(stats, str(tmp_path / "missing" / "step.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step.json", "step.json.gz"]


def test_cluster_devices_are_processes_in_task_order_and_transfers_between_tasks_are_network_flows():
    task = "/job:worker/replica:0/task:{}/device:CPU:0".format
    key = (task(10), task(2), "edge_y", ())
    value = (TensorInfo("float32", (4,), 16),)
    stats = StepStats(origin_ns=0)
    for execution in (NodeExecution("y", "Relu", task(10), 0, 10),
                      NodeExecution("send", "_Send", task(10), 10, 12, inputs=("y",), rendezvous=key),
                      NodeExecution("recv", "_Recv", task(2), 5, 40, lane="rendezvous", outputs=value, rendezvous=key)):
        stats.device(execution.device).absorb(DeviceStats(execution.device, [execution]))
    document = chrome_trace(stats)
    assert validate_trace(document) == []
    assert [e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"] == \
        ["worker:2/cpu:0", "worker:10/cpu:0"]
    start, finish = [e for e in document["traceEvents"] if e["ph"] in "sf"]
    assert start["cat"] == finish["cat"] == "network"
    assert start["args"] == {"tensor": "y:0", "from": "worker:10/cpu:0", "to": "worker:2/cpu:0", "bytes": 16,
                             "latency_us": 0.03}
