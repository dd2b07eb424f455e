"""Traced steps as TensorFlow's RunMetadata (graphtool/profiling/run_metadata.py): the schema is
TensorFlow's, every node execution is there with wall-clock times, devices, labels, memory and
outputs, and TensorBoard reads it back from an event file."""
import re
import time
from collections import Counter

import numpy as np
import pytest

from graphtool.exec.session import Session
from graphtool.exec.step_stats import DeviceStats, NodeExecution, StepStats
from graphtool.profiling import run_metadata, run_metadata_bytes
from graphtool.proto.run_metadata_pb2 import RunMetadata
from graphtool.proto.types_pb2 import DataType
from tests.exec.test_step_stats import mlp, sample
from tests.helpers import while_loop_graph

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
# The Graphs dashboard lists (and joins the stats of) only devices whose names match this
# (tf-graph-controls: DEVICE_NAMES_INCLUDE, which leaves out GPU stream devices).
TENSORBOARD_DEVICE = re.compile(r"device:([^:]+:[0-9]+)$")


def traced(graph, fetches, feeds, threads=2) -> StepStats:
    return Session(graph, threads=threads).run(fetches, feeds, trace=True).step_stats


def node_stats(metadata: RunMetadata) -> list:
    return [node for device in metadata.step_stats.dev_stats for node in device.node_stats]


# --- the schema -----------------------------------------------------------------------------------

def _fields(descriptor, out=None) -> dict:
    """{message name without package: {field: (number, type, repeated)}} for everything reachable."""
    out = {} if out is None else out
    name = descriptor.full_name.split(".", 1)[1]
    if name in out:
        return out
    out[name] = {f.name: (f.number, f.type, f.is_repeated) for f in descriptor.fields}
    for field in descriptor.fields:
        if field.message_type is not None:
            _fields(field.message_type, out)
    return out


def test_the_schema_has_tensorflows_names_and_numbers():
    # TensorBoard ships a copy of TensorFlow's config.proto and step_stats.proto.
    config_pb2 = pytest.importorskip("tensorboard.compat.proto.config_pb2")
    theirs, ours = _fields(config_pb2.RunMetadata.DESCRIPTOR), _fields(RunMetadata.DESCRIPTOR)
    for message, fields in ours.items():
        for field, spec in fields.items():
            assert theirs[message][field] == spec, f"{message}.{field}"
    step_stats = ("StepStats", "DeviceStepStats", "NodeExecStats", "AllocatorMemoryUsed", "AllocationRecord",
                  "NodeOutput", "MemoryStats", "TensorDescription", "AllocationDescription")
    assert all(ours[m] == theirs[m] for m in step_stats)   # these in full
    assert set(ours["RunMetadata"]) == {"step_stats", "partition_graphs"}
    assert RunMetadata.DESCRIPTOR.full_name == "dftool.RunMetadata"


def test_tensorflows_run_metadata_parses_with_our_schema():
    from tests.test_summaries import FIXTURES, MERGED, _accumulator
    pytest.importorskip("tensorboard")
    theirs = _accumulator(FIXTURES / "tf_events").RunMetadata(MERGED["run_metadata_tag"])
    ours = RunMetadata.FromString(theirs.SerializeToString())
    assert ours.step_stats.SerializeToString(deterministic=True) == \
        theirs.step_stats.SerializeToString(deterministic=True)
    assert len(node_stats(ours)) == len(theirs.step_stats.dev_stats[0].node_stats) > 0


# --- conversion -----------------------------------------------------------------------------------

def test_every_execution_of_an_mlp_step_is_there_with_wall_clock_times():
    graph, feeds = mlp()
    before_us = time.time_ns() // 1000
    stats = traced(graph, ["probs"], feeds)
    metadata = RunMetadata.FromString(run_metadata_bytes(stats))
    after_us = time.time_ns() // 1000
    (device,) = metadata.step_stats.dev_stats
    assert device.device == CPU0
    assert Counter(n.node_name for n in device.node_stats) == Counter(n.name for n in stats.nodes)
    starts = [n.all_start_nanos for n in device.node_stats]
    assert starts == sorted(starts)
    for node in device.node_stats:
        # Allow for the two clocks being read a few microseconds apart when anchoring.
        assert before_us - 1000 <= node.all_start_micros <= node.all_start_micros + node.all_end_rel_micros <= after_us + 1000
        assert node.all_start_micros == node.all_start_nanos // 1000
        assert node.op_start_rel_nanos == 0 <= node.op_end_rel_nanos == node.all_end_rel_nanos
        assert node.op_end_rel_micros == node.all_end_rel_micros >= 0
        assert device.thread_names[node.thread_id] in stats.devices[CPU0].lanes
    assert device.thread_names[1] == "scheduler"
    by_name = {n.node_name: n for n in device.node_stats}
    probs = by_name["probs"]
    assert probs.timeline_label == "probs = Softmax(add2)"
    assert by_name["mm1"].timeline_label == "mm1 = MatMul(x, w1)"
    (output,) = probs.output
    assert output.slot == 0 and output.tensor_description.dtype == DataType.DT_FLOAT
    assert [d.size for d in output.tensor_description.shape.dim] == [8, 10]
    assert output.tensor_description.allocation_description.requested_bytes == 320
    (memory,) = probs.memory
    assert memory.allocator_name == "cpu" and memory.total_bytes == memory.peak_bytes == 320
    assert 320 <= memory.allocator_bytes_in_use <= max(stats.peak_bytes.values())


def test_a_given_wall_clock_origin_makes_the_bytes_reproducible():
    graph, feeds = mlp()
    stats = traced(graph, ["probs"], feeds)
    origin = 1_700_000_000_123_456_789
    data = run_metadata_bytes(stats, origin_wall_ns=origin)
    assert data == run_metadata_bytes(stats, origin_wall_ns=origin)
    first = min(stats.nodes, key=lambda n: n.start_ns)
    earliest = min(node_stats(RunMetadata.FromString(data)), key=lambda n: n.all_start_nanos)
    assert earliest.node_name == first.name and earliest.all_start_nanos == origin + first.start_ns
    assert earliest.all_start_micros == (origin + first.start_ns) // 1000


def test_multi_device_steps_name_every_device_and_label_transfers_like_tensorflow():
    graph, feeds = sample("multi_device")
    stats = traced(graph, ["y"], feeds)
    metadata = run_metadata(stats)
    devices = [d.device for d in metadata.step_stats.dev_stats]
    assert devices == [CPU0, CPU0[:-1] + "1"]
    assert all(TENSORBOARD_DEVICE.search(device) for device in devices)
    assert len(node_stats(metadata)) == stats.nodes_executed
    labels = {n.node_name: n.timeline_label for n in node_stats(metadata)}
    sends = [n for n in stats.nodes if n.op == "_Send"]
    assert len(sends) >= 2
    for send in sends:
        _, recv_device, tensor, _ = send.rendezvous
        assert labels[send.name] == f"{send.name} = _Send({tensor} @{recv_device})"
    recv = next(n for n in stats.nodes if n.op == "_Recv")
    assert labels[recv.name] == f"{recv.name} = _Recv({recv.rendezvous[2]} @{recv.rendezvous[0]})"


def test_loop_nodes_appear_once_per_iteration_and_dead_ones_without_outputs():
    stats = traced(while_loop_graph(), ["result"], {"start": np.float32(1)})
    nodes = node_stats(run_metadata(stats, origin_wall_ns=0))   # all_start_nanos == start_ns
    assert sum(n.node_name == "while/Merge" for n in nodes) == 5
    assert len(nodes) == stats.nodes_executed
    by_execution = {(n.node_name, n.all_start_nanos): n for n in nodes}
    dead = [e for e in stats.nodes if e.dead]
    assert dead and all(not by_execution[(e.name, e.start_ns)].output for e in dead)
    for execution in (e for e in stats.nodes if not e.dead):
        # A Switch outputs on one port only: the other slot has no output.
        produced = [slot for slot, info in enumerate(execution.outputs) if info is not None]
        assert [o.slot for o in by_execution[(execution.name, execution.start_ns)].output] == produced


def test_large_allocations_are_labelled_and_partition_graphs_are_kept():
    stats = StepStats(origin_ns=0)
    stats.devices["gpu:1"] = DeviceStats("gpu:1", [NodeExecution(
        "big", "Fill", "gpu:1", 10, 2010, inputs=("dims", "value"), allocated_bytes=3 * 1048576)],
        memory=[(2000, 3 * 1048576)], lanes=["scheduler"])
    from graphtool.proto import GraphDef, NodeDef
    graph = GraphDef(node=[NodeDef(name="big", op="Fill")])
    metadata = run_metadata(stats, origin_wall_ns=0, partition_graphs=[graph, graph.SerializeToString()])
    (device,) = metadata.step_stats.dev_stats
    assert device.device == "/job:localhost/replica:0/task:0/device:GPU:1"
    (node,) = device.node_stats
    assert node.timeline_label == "[GPU_1_bfc 3.0MB 3.0MB] big = Fill(dims, value)"
    assert node.memory[0].allocator_bytes_in_use == 3 * 1048576
    assert node.all_start_nanos == 10 and node.all_end_rel_nanos == 2000
    assert [g.node[0].name for g in metadata.partition_graphs] == ["big", "big"]


# --- TensorBoard reads it back --------------------------------------------------------------------

def test_tensorboard_reads_the_run_metadata_back_from_an_event_file(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator

    from graphtool.summary.event_log import EventLog

    graph, feeds = mlp()
    stats = traced(graph, ["probs"], feeds)
    with EventLog(tmp_path) as log:
        log.add_run_metadata(run_metadata_bytes(stats), tag="step_3", step=3)
    accumulator = event_accumulator.EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert accumulator.Tags()["run_metadata"] == ["step_3"]
    read = accumulator.RunMetadata("step_3")   # TensorBoard's own RunMetadata message
    (device,) = read.step_stats.dev_stats
    assert device.device == CPU0
    assert Counter(n.node_name for n in device.node_stats) == Counter(n.name for n in stats.nodes)
    probs = next(n for n in device.node_stats if n.node_name == "probs")
    assert probs.timeline_label == "probs = Softmax(add2)" and probs.memory[0].total_bytes == 320
    assert [d.size for d in probs.output[0].tensor_description.shape.dim] == [8, 10]
