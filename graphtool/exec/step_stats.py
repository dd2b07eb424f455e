"""Step statistics: what one step did, node execution by node execution, and byte by byte.

The executor records them when asked (`Executor.run(..., stats=StepStats())`,
`Session.run(..., trace=True)`); the recording itself lives in step_recorder.py so that an
untraced step runs the executor's code unchanged. `dftool run --trace` turns them into a Chrome
trace (trace.py); `dftool profile` into tables, a critical path and a measured cost model
(graphtool/profiling/).

    StepStats          one step on every device; one clock origin for all of them
      DeviceStats      one device: its executor's node executions, memory in use over time,
                       loop iterations per frame
        NodeExecution  one execution of one node instance (a node in a loop: once per iteration)

Times are integer nanoseconds of `time.perf_counter_ns()` relative to `StepStats.origin_ns`. The
clock is process-wide, so executions on different devices (executors on other threads) share it;
`StepStats.merge` re-bases stats recorded against another origin. Stats a cluster's workers
recorded in their own processes are re-based by the master; processes with the same
`perf_clock_id` read the same clock (one machine), others are matched by wall clock.

`transfers(stats)` lists the values the rendezvous moved (a _Send and the _Recv that got its
value), with their bytes and latency: the flows of a trace, the edge table of a profile.

Memory (see step_recorder.py for how it is watched) counts the buffers behind node outputs: a buffer is
allocated when the first output backed by it is produced and released when the last reference to
it goes away (the executor drops input slots as soon as their consumer runs). A view or an alias
(Identity, Reshape, a Switch passing its input on) shares its input's buffer and adds nothing.
"""
from __future__ import annotations

import functools
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, NamedTuple

from ..errors import DftoolError
from ..placement.device_names import parse_device_name

SEND_OPS = frozenset({"_Send", "_HostSend"})
RECV_OPS = frozenset({"_Recv", "_HostRecv"})


class TensorInfo(NamedTuple):
    """One output of one execution: dtype name, shape and the bytes of its array."""

    dtype: str
    shape: tuple
    bytes: int

    def describe(self) -> str:
        """'float32[2,3]' for tables and trace arguments."""
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass(slots=True)
class NodeExecution:
    """One execution of one node instance.

    `frame`/`iteration` locate it in its while loop ("" and 0 in the root frame); `frame_id` tells
    apart the instances of one frame on one device (an inner loop runs once per outer iteration).
    `lane` is the thread that ran it: "scheduler" for nodes run inline by the executor's
    scheduling thread, the thread's name for the thread pool, "rendezvous" for a _Recv's wait. `rendezvous` is the rendezvous key of a _Send/_Recv: (send_device, recv_device,
    tensor_name, ((frame, iteration), ...)), the same on both sides of one transfer.
    `allocated_bytes` counts the buffers its outputs brought into use (not those of outputs that
    alias an input or a buffer already counted). A dead execution (on an untaken cond branch) ran
    no kernel and has no outputs."""

    name: str
    op: str
    device: str
    start_ns: int
    end_ns: int
    lane: str = "scheduler"
    frame: str = ""
    iteration: int = 0
    frame_id: int = 0
    inputs: tuple = ()
    outputs: tuple = ()
    dead: bool = False
    rendezvous: tuple | None = None
    allocated_bytes: int = 0

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def output_bytes(self) -> int:
        """Bytes of the arrays this execution output (aliases of inputs included)."""
        return sum(info.bytes for info in self.outputs if info is not None)

    def input_node_names(self) -> list[str]:
        """Producer names of its data and control inputs ('x:1' and '^x' both name 'x')."""
        return [text.lstrip("^").split(":", 1)[0] for text in self.inputs]


class DeviceStats:
    """What one device's executor did in one step.

    `nodes` are its executions in the order they finished; `memory` holds (time_ns, bytes in use)
    after every allocation and release, in time order; `lanes` lists the threads that ran
    kernels, the scheduling thread first; `iterations` counts loop iterations per frame.

    A recorder hands over its raw records with `add_recording`: the lists are built from them on
    first use, after the step, so that recording during the step stays cheap."""

    def __init__(self, device: str, nodes: list[NodeExecution] | None = None,
                 memory: list[tuple[int, int]] | None = None, iterations: dict[str, int] | None = None,
                 lanes: list[str] | None = None):
        self.device = device
        self._nodes = list(nodes or [])
        self._memory = list(memory or [])
        self._lanes = list(lanes or [])
        self.iterations = dict(iterations or {})
        self._pending: list[Callable[[], tuple[list, list, list]]] = []

    def add_recording(self, build: Callable[[], tuple[list, list, list]], iterations: dict[str, int]) -> None:
        """Add what a recorder saw: `build()` returns its (nodes, memory, lanes) when needed."""
        self._pending.append(build)
        self._add_iterations(iterations)

    def absorb(self, other: "DeviceStats") -> None:
        """Add another recording of the same device and step (already on this origin)."""
        self._merge(other.nodes, other.memory, other.lanes)
        self._add_iterations(other.iterations)

    @property
    def nodes(self) -> list[NodeExecution]:
        self._build()
        return self._nodes

    @property
    def memory(self) -> list[tuple[int, int]]:
        self._build()
        return self._memory

    @property
    def lanes(self) -> list[str]:
        self._build()
        return self._lanes

    @property
    def peak_bytes(self) -> int:
        """The most memory in use at any moment of the step on this device."""
        return max((in_use for _, in_use in self.memory), default=0)

    def shifted(self, offset_ns: int) -> "DeviceStats":
        """A copy with every time moved by `offset_ns` (used to re-base onto another origin)."""
        return DeviceStats(
            self.device,
            [replace(n, start_ns=n.start_ns + offset_ns, end_ns=n.end_ns + offset_ns) for n in self.nodes],
            [(t + offset_ns, in_use) for t, in_use in self.memory], self.iterations, self.lanes)

    def _build(self) -> None:
        while self._pending:
            self._merge(*self._pending.pop(0)())

    def _merge(self, nodes: list, memory: list, lanes: list) -> None:
        # Two recordings of one device each counted their own buffers: their bytes add up.
        if self._nodes or self._memory:
            self._nodes = sorted(self._nodes + nodes, key=lambda n: n.end_ns)
            self._memory = _sum_timelines(self._memory, memory)
        else:
            self._nodes, self._memory = list(nodes), list(memory)
        self._lanes.extend(lane for lane in lanes if lane not in self._lanes)

    def _add_iterations(self, iterations: dict[str, int]) -> None:
        # Every executor holding part of a loop runs all of its iterations: count them once.
        for frame, count in iterations.items():
            self.iterations[frame] = max(self.iterations.get(frame, 0), count)


def _sum_timelines(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two (time, in use) timelines as one: at each event, the sum of both current values."""
    tagged = sorted([(t, 0, b) for t, b in first] + [(t, 1, b) for t, b in second])
    current, result = [0, 0], []
    for t, which, in_use in tagged:
        current[which] = in_use
        result.append((t, current[0] + current[1]))
    return result


class StepStats:
    """The statistics of one step on all its devices.

    Create it right before the step (its creation time is the clock origin) and hand it to every
    executor of the step; each records into `device(name)`. Call `stop()` when the step is over."""

    def __init__(self, origin_ns: int | None = None):
        self.origin_ns = time.perf_counter_ns() if origin_ns is None else origin_ns
        self.wall_ns = 0
        self.devices: dict[str, DeviceStats] = {}
        self._lock = threading.Lock()  # executors of a multi-device step register concurrently

    def device(self, name: str) -> DeviceStats:
        """The record of device `name`, created on first use."""
        with self._lock:
            stats = self.devices.get(name)
            if stats is None:
                stats = self.devices[name] = DeviceStats(name)
            return stats

    def stop(self) -> "StepStats":
        """Mark the end of the step: `wall_ns` is the time since the origin."""
        self.wall_ns = time.perf_counter_ns() - self.origin_ns
        return self

    def merge(self, other: "StepStats") -> "StepStats":
        """Fold in the stats another recorder kept for the same step (e.g. one executor per
        device, each with its own StepStats): times are re-based onto this origin, devices seen
        by both are combined. Returns self."""
        offset = other.origin_ns - self.origin_ns
        for name, device_stats in other.devices.items():
            shifted = device_stats.shifted(offset)
            if name in self.devices:
                self.devices[name].absorb(shifted)
            else:
                self.devices[name] = shifted
        self.wall_ns = max(self.wall_ns, other.wall_ns + offset)
        return self

    # --- views over every device ----------------------------------------------------------------
    @property
    def nodes(self) -> list[NodeExecution]:
        """Every execution on every device, in order of start time."""
        return sorted((n for d in self.devices.values() for n in d.nodes), key=lambda n: (n.start_ns, n.end_ns))

    @property
    def nodes_executed(self) -> int:
        return sum(len(d.nodes) for d in self.devices.values())

    @property
    def iterations(self) -> dict[str, int]:
        """Loop iterations per frame. Each device runs its own copy of a partitioned loop's
        control skeleton, so the devices agree; the largest count is the loop's."""
        merged: dict[str, int] = {}
        for device_stats in self.devices.values():
            for frame, count in device_stats.iterations.items():
                merged[frame] = max(merged.get(frame, 0), count)
        return merged

    @property
    def peak_bytes(self) -> dict[str, int]:
        """Peak memory in use per device."""
        return {name: d.peak_bytes for name, d in self.devices.items()}


def transfer_pairs(stats: StepStats) -> list[tuple[NodeExecution, NodeExecution]]:
    """(send, recv) executions that met in the rendezvous, matched by key. Values on one key
    arrive in the order they were sent, so the k-th Send of a key pairs with its k-th Recv."""
    sends: dict[tuple, list[NodeExecution]] = {}
    recvs: dict[tuple, list[NodeExecution]] = {}
    for execution in stats.nodes:
        if execution.rendezvous is None:
            continue
        side = sends if execution.op in SEND_OPS else recvs if execution.op in RECV_OPS else None
        if side is not None:
            side.setdefault(execution.rendezvous, []).append(execution)
    pairs: list[tuple[NodeExecution, NodeExecution]] = []
    for key, senders in sends.items():
        senders.sort(key=lambda n: n.start_ns)
        receivers = sorted(recvs.get(key, ()), key=lambda n: n.end_ns)
        pairs.extend(zip(senders, receivers))
    return pairs


class Transfer(NamedTuple):
    """One value moved by the rendezvous: its _Send and _Recv executions, the tensor the Send
    was given (`y:0`; a Cast's output when --compress narrowed it), the bytes the Recv
    received (0 for a dead value) and the latency from the Send's start to the Recv's end (what
    moving it cost the step; a Recv that began after the value arrived counts the time the value
    waited for it too)."""

    send: NodeExecution
    recv: NodeExecution
    tensor: str
    bytes: int
    latency_ns: int

    @property
    def send_device(self) -> str:
        return self.send.rendezvous[0] if self.send.rendezvous else self.send.device

    @property
    def recv_device(self) -> str:
        return self.recv.rendezvous[1] if self.recv.rendezvous else self.recv.device

    @property
    def across_tasks(self) -> bool:
        """Whether the value went from one task to another (over the network on a cluster)."""
        return _task_of(self.send_device) != _task_of(self.recv_device)


def _task_of(device: str) -> tuple:
    """(job, replica, task) of a device name; a name that does not parse is its own task."""
    try:
        parsed = parse_device_name(device).completed()
    except DftoolError:
        return (device,)
    return (parsed.job, parsed.replica, parsed.task)


def transfers(stats: StepStats) -> list[Transfer]:
    """Every transfer of the step (see transfer_pairs), in order of the Send's start."""
    found = []
    for send, recv in transfer_pairs(stats):
        data_inputs = [text for text in send.inputs if not text.startswith("^")]
        tensor = data_inputs[0] if data_inputs else send.name
        if ":" not in tensor:
            tensor += ":0"
        size = 0 if recv.dead else recv.output_bytes
        found.append(Transfer(send, recv, tensor, size, recv.end_ns - send.start_ns))
    found.sort(key=lambda t: (t.send.start_ns, t.recv.end_ns))
    return found


@functools.cache
def perf_clock_id() -> str | None:
    """Which `perf_counter_ns` clock this process reads: processes that return the same id
    read the same clock (Linux: CLOCK_MONOTONIC, one per booted kernel), so their step times
    can be compared directly. None where that cannot be told (another OS)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            boot = file.read().strip()
    except OSError:
        return None
    return f"{socket.gethostname()}/{boot}" if boot else None
