"""Step statistics as a Chrome trace (the trace event format that chrome://tracing and Perfetto open).

    write_trace(stats, "step.json")        # or "step.json.gz": gzipped because the name asks

The timeline has one process per device, named by `process_name` metadata in the short spelling
of tables (`cpu:0`; `worker:1/cpu:0` for a cluster task's device, so a cluster step shows one
process per task and device, ordered by job, task and device), and one thread per lane that
ran kernels (`thread_name`: the scheduling thread, each pool thread, and "rendezvous" for
_Recvs waiting on their values). Every node execution is a complete ("X") event named after
the node, with its op, inputs, frame/iteration and outputs in `args`; a loop body's nodes appear
once per iteration. A flow ("s" -> "f", same id) joins each _Send to the _Recv that got its
value, so the viewer draws the transfer as an arrow; its `args` (and the _Recv's, under
"transfer") carry the tensor, the bytes moved and the latency from the Send's start to the
Recv's end. Flows between tasks have the category "network", the others "rendezvous". A
counter ("C") per device plots the bytes in use over the step.

Events on one thread must not partly overlap (viewers drop or mis-nest them). Lanes are threads,
so their kernels are sequential, except the rendezvous lane where several _Recvs can wait at
once; such overlaps go to extra tracks ("rendezvous #2", ...).
"""
from __future__ import annotations

import gzip
import json
from typing import Any

from .. import graph_io
from ..errors import DftoolError
from ..placement.device_names import device_order, parse_device_name, short_device_name
from .step_stats import DeviceStats, NodeExecution, StepStats, Transfer, transfers

TRACE_SCHEMA = "dftool.trace/1"
_FLOW_NAME = "transfer"
_LOCAL_FLOW, _NETWORK_FLOW = "rendezvous", "network"
MEMORY_COUNTER = "memory"


def chrome_trace(stats: StepStats, *, metadata: dict | None = None) -> dict:
    """The trace document (a JSON-ready dict) for one step."""
    events: list[dict] = []
    placed: dict[int, tuple[int, int]] = {}       # id(execution) -> (pid, tid)
    moved = transfers(stats)
    received = {id(transfer.recv): transfer for transfer in moved}
    for pid, name in enumerate(sorted(stats.devices, key=device_order), start=1):
        events.extend(_device_events(stats.devices[name], pid, placed, received))
    events.extend(_flow_events(moved, placed))
    other = {"schema": TRACE_SCHEMA, "wall_time_us": _us(stats.wall_ns),
             "nodes_executed": stats.nodes_executed, "loop_iterations": stats.iterations}
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {**other, **(metadata or {})}}


def write_trace(stats: StepStats, path: str, *, metadata: dict | None = None) -> None:
    """Write the trace to `path` atomically; gzipped when the name ends in .gz."""
    data = json.dumps(chrome_trace(stats, metadata=metadata), separators=(",", ":")).encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, mtime=0)   # mtime 0: the same step writes the same bytes
    graph_io.write_atomic(path, data)


def _us(ns: int) -> float:
    """Trace timestamps are microseconds; keep nanosecond precision."""
    return round(ns / 1000.0, 3)


def _short(name: str) -> str:
    try:
        return short_device_name(name)
    except DftoolError:
        return name


# --- one device -------------------------------------------------------------------------------

def _device_events(device: DeviceStats, pid: int, placed: dict, received: dict[int, Transfer]) -> list[dict]:
    events = [_metadata("process_name", pid, None, name=_short(device.device)),
              _metadata("process_sort_index", pid, None, sort_index=pid)]
    tracks = _assign_tracks(device)
    for tid, (track_name, executions) in enumerate(tracks, start=1):
        events.append(_metadata("thread_name", pid, tid, name=track_name))
        events.append(_metadata("thread_sort_index", pid, tid, sort_index=tid))
        for execution in executions:
            placed[id(execution)] = (pid, tid)
            events.append(_complete_event(execution, pid, tid, received.get(id(execution))))
    events.extend({"ph": "C", "name": MEMORY_COUNTER, "pid": pid, "ts": _us(t),
                   "args": {"bytes_in_use": in_use}} for t, in_use in device.memory)
    return events


def _metadata(kind: str, pid: int, tid: int | None, **args) -> dict:
    event = {"ph": "M", "name": kind, "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def _assign_tracks(device: DeviceStats) -> list[tuple[str, list[NodeExecution]]]:
    """(track name, its executions) per lane, with overlapping executions of one lane spread
    over extra tracks so that no two events on a track overlap."""
    by_lane: dict[str, list[NodeExecution]] = {lane: [] for lane in device.lanes}
    for execution in device.nodes:
        by_lane.setdefault(execution.lane, []).append(execution)
    tracks = []
    for lane, executions in by_lane.items():
        lane_tracks: list[list[NodeExecution]] = []
        for execution in sorted(executions, key=lambda n: (n.start_ns, n.end_ns)):
            free = next((t for t in lane_tracks if t[-1].end_ns <= execution.start_ns), None)
            if free is None:
                free = []
                lane_tracks.append(free)
            free.append(execution)
        for index, track in enumerate(lane_tracks or [[]]):
            tracks.append((lane if index == 0 else f"{lane} #{index + 1}", track))
    return tracks


def _complete_event(execution: NodeExecution, pid: int, tid: int, transfer: Transfer | None) -> dict:
    args: dict[str, Any] = {"name": execution.name, "op": execution.op, "inputs": list(execution.inputs)}
    if execution.frame:
        args["frame"], args["iteration"] = execution.frame, execution.iteration
    if execution.dead:
        args["dead"] = True
    else:
        args["outputs"] = [info.describe() if info is not None else "-" for info in execution.outputs]
        args["output_bytes"] = execution.output_bytes
    if execution.rendezvous is not None:
        args["rendezvous"] = _describe_key(execution.rendezvous)
    if transfer is not None:
        args["transfer"] = _transfer_args(transfer)
    return {"ph": "X", "name": execution.name, "cat": execution.op, "pid": pid, "tid": tid,
            "ts": _us(execution.start_ns), "dur": _us(execution.duration_ns), "args": args}


def _describe_key(key: tuple) -> str:
    send_device, recv_device, tensor_name, frame_iter = key
    where = "".join(f";{frame}:{it}" for frame, it in frame_iter)
    return f"{send_device};{recv_device};{tensor_name}{where}"


# --- transfers --------------------------------------------------------------------------------

def _transfer_args(transfer: Transfer) -> dict:
    return {"tensor": transfer.tensor, "from": _short(transfer.send_device), "to": _short(transfer.recv_device),
            "bytes": transfer.bytes, "latency_us": _us(transfer.latency_ns)}


def _flow_events(moved: list[Transfer], placed: dict) -> list[dict]:
    """An arrow from each _Send to the _Recv that received its value. The start sits at the
    Send's start, the end 1 ns before the Recv's end: each inside its slice, so the start binds to
    the Send and the end ("bp": "e": the enclosing slice) to the Recv; and the Send began before
    the value arrived, so the arrow never points back in time (on a cluster too: workers on the
    master's machine share its clock, see graphtool/cluster/master.py)."""
    events = []
    for flow_id, transfer in enumerate(moved, start=1):
        send, recv = transfer.send, transfer.recv
        args = _transfer_args(transfer)
        category = _NETWORK_FLOW if transfer.across_tasks else _LOCAL_FLOW
        ends = (("s", send, send.start_ns), ("f", recv, max(recv.start_ns, recv.end_ns - 1)))
        for phase, execution, ts in ends:
            pid, tid = placed[id(execution)]
            event = {"ph": phase, "id": flow_id, "name": _FLOW_NAME, "cat": category,
                     "pid": pid, "tid": tid, "ts": _us(ts), "args": args}
            if phase == "f":
                event["bp"] = "e"
            events.append(event)
    return events
