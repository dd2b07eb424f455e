"""Step statistics as TensorFlow's RunMetadata: what TensorBoard's Graphs dashboard shows per node
(compute time, memory, output shapes) for a profiled step.

    log.add_run_metadata(run_metadata_bytes(result.step_stats), tag="step_3", step=3)

One DeviceStepStats per device, named in full as TensorFlow writes it
(/job:localhost/replica:0/task:0/device:CPU:0: the dashboard shows only devices whose names end
in `device:TYPE:N`), and one NodeExecStats per node execution (a node
in a loop: once per iteration; a dead execution too, without outputs, as TensorFlow records it):

- times: `all_start_micros`/`all_start_nanos` are absolute wall-clock times (since the Unix
  epoch), the others relative to them. dftool times one interval per execution, so the op starts
  with the execution (`op_start_rel_* = 0`) and ends with it (`op_end_rel_* = all_end_rel_*`).
  StepStats keeps perf-counter times only; the wall clock of its origin is taken, unless
  given, from the clocks now: `time_ns() - (perf_counter_ns() - origin_ns)` (the master's rule
  for its own origin, graphtool/cluster/master.py), right in the process that ran the step or on
  its machine (the perf counter is the machine's monotonic clock). Nothing is recorded about
  when a node was scheduled: `scheduled_*` stay 0.
- `thread_id`: the execution's lane, numbered per device from 1 in the order of
  `DeviceStats.lanes` (the scheduling thread first); `thread_names` names them.
- `timeline_label`: TensorFlow's "name = Op(input, input)"; "name = _Send(tensor @recv_device)"
  and "name = _Recv(tensor @send_device)" for transfers, prefixed with "[allocator X.XMB X.XMB] "
  when the node allocated 0.1 MiB or more (TensorFlow's NodeExecStatsWrapper::Done).
- `memory`: one AllocatorMemoryUsed when the execution brought buffers into use
  (`NodeExecution.allocated_bytes`; dftool sees no temporaries, so total = peak = live), with the
  device's bytes in use when it ended. `output`: a TensorDescription per array output.
"""
from __future__ import annotations

import bisect
import time
from typing import Iterable

from .. import dtypes
from ..errors import DftoolError
from ..exec.step_stats import RECV_OPS, SEND_OPS, DeviceStats, NodeExecution, StepStats, TensorInfo
from ..placement.device_names import canonical_device_name, device_order, parse_device_name
from ..proto.graph_pb2 import GraphDef
from ..proto.run_metadata_pb2 import RunMetadata
from ..proto.step_stats_pb2 import DeviceStepStats, NodeExecStats
from ..proto.types_pb2 import DataType

_MIB = 1048576.0
_LABEL_MEMORY_BYTES = 0.1 * _MIB   # TensorFlow labels only allocations this large


def run_metadata_bytes(stats: StepStats, *, origin_wall_ns: int | None = None,
                       partition_graphs: Iterable[GraphDef | bytes] = ()) -> bytes:
    """The serialized RunMetadata of a traced step (`Session.run(..., trace=True).step_stats`),
    for `EventLog.add_run_metadata`. `origin_wall_ns`: wall-clock nanoseconds of
    `stats.origin_ns` (default: derived from the clocks now, see the module docstring);
    `partition_graphs`: the graphs the devices ran, as GraphDefs or serialized."""
    return run_metadata(stats, origin_wall_ns=origin_wall_ns,
                        partition_graphs=partition_graphs).SerializeToString(deterministic=True)


def run_metadata(stats: StepStats, *, origin_wall_ns: int | None = None,
                 partition_graphs: Iterable[GraphDef | bytes] = ()) -> RunMetadata:
    """The RunMetadata message of a traced step (see run_metadata_bytes)."""
    if origin_wall_ns is None:
        origin_wall_ns = time.time_ns() - (time.perf_counter_ns() - stats.origin_ns)
    metadata = RunMetadata()
    for name in sorted(stats.devices, key=device_order):
        _fill_device(metadata.step_stats.dev_stats.add(), stats.devices[name], origin_wall_ns)
    for graph in partition_graphs:
        added = metadata.partition_graphs.add()
        if isinstance(graph, (bytes, bytearray, memoryview)):
            added.ParseFromString(bytes(graph))
        else:
            added.CopyFrom(graph)
    return metadata


def _fill_device(out: DeviceStepStats, device: DeviceStats, origin_wall_ns: int) -> None:
    out.device = _full_name(device.device)
    allocator = _allocator_name(device.device)
    thread_ids: dict[str, int] = {}
    for lane in list(device.lanes) + [n.lane for n in device.nodes]:
        thread_ids.setdefault(lane, len(thread_ids) + 1)
    for lane, thread_id in thread_ids.items():
        out.thread_names[thread_id] = lane
    memory_times = [t for t, _ in device.memory]
    for execution in sorted(device.nodes, key=lambda n: (n.start_ns, n.end_ns)):
        node = out.node_stats.add()
        _fill_times(node, execution, origin_wall_ns)
        node.node_name = execution.name
        node.thread_id = thread_ids[execution.lane]
        if execution.allocated_bytes > 0:
            used = node.memory.add(allocator_name=allocator, total_bytes=execution.allocated_bytes,
                                   peak_bytes=execution.allocated_bytes, live_bytes=execution.allocated_bytes)
            at_end = bisect.bisect_right(memory_times, execution.end_ns) - 1
            if at_end >= 0:
                used.allocator_bytes_in_use = device.memory[at_end][1]
        if not execution.dead:
            for slot, info in enumerate(execution.outputs):
                if info is not None:
                    _fill_output(node.output.add(slot=slot), info, allocator)
        node.timeline_label = _timeline_label(execution, allocator)


def _fill_times(node: NodeExecStats, execution: NodeExecution, origin_wall_ns: int) -> None:
    # TensorFlow takes micros from the same nanosecond reading: micros = nanos // 1000.
    start_ns = origin_wall_ns + execution.start_ns
    end_ns = origin_wall_ns + execution.end_ns
    node.all_start_nanos = start_ns
    node.op_end_rel_nanos = node.all_end_rel_nanos = end_ns - start_ns
    node.all_start_micros = start_ns // 1000
    node.op_end_rel_micros = node.all_end_rel_micros = end_ns // 1000 - start_ns // 1000


def _fill_output(output, info: TensorInfo, allocator: str) -> None:
    description = output.tensor_description
    description.dtype = _dtype_enum(info.dtype)
    for size in info.shape:
        description.shape.dim.add(size=size)
    description.allocation_description.requested_bytes = info.bytes
    description.allocation_description.allocated_bytes = info.bytes
    description.allocation_description.allocator_name = allocator


def _timeline_label(execution: NodeExecution, allocator: str) -> str:
    memory = ""
    if execution.allocated_bytes >= _LABEL_MEMORY_BYTES:
        # TensorFlow prints total and peak; dftool's are the same.
        megabytes = execution.allocated_bytes / _MIB
        memory = f"[{allocator} {megabytes:.1f}MB {megabytes:.1f}MB] "
    key = execution.rendezvous
    if key is not None and execution.op in SEND_OPS:
        arguments = f"{key[2]} @{key[1]}"
    elif key is not None and execution.op in RECV_OPS:
        arguments = f"{key[2]} @{key[0]}"
    else:
        arguments = ", ".join(execution.inputs)
    return f"{memory}{execution.name} = {execution.op}({arguments})"


def _dtype_enum(name: str) -> int:
    try:
        return dtypes.as_dtype(name).enum
    except DftoolError:
        return DataType.DT_INVALID


def _full_name(device: str) -> str:
    try:
        return canonical_device_name(device)
    except DftoolError:
        return device


def _allocator_name(device: str) -> str:
    """TensorFlow's names: "cpu" for the host allocator (oneDNN builds call theirs "mklcpu"),
    "GPU_0_bfc" for a GPU's."""
    try:
        parsed = parse_device_name(device).completed()
    except DftoolError:
        return "cpu"
    if parsed.type == "CPU":
        return "cpu"
    return f"{parsed.type}_{parsed.index}_bfc"


