"""Execution streams on a GPU: which stream each node runs on, and the events that order streams.

A GPU runs the kernels queued on one stream in order, and kernels on different streams
concurrently. TensorFlow (gpu_stream_util.cc) and OneFlow give a chain of dependent nodes one
stream, so that it needs no synchronization, and give independent chains other streams, so that
they overlap. `assign_streams` does this once per compiled plan, as a pure function of it:

- walking the plan in topological order, a kernel node continues the stream of its first producer
  whose chain nobody has continued yet (the first consumer of a value inherits its stream; a
  second consumer is a branch that may run beside it, so it starts a new chain);
- a node that continues no chain starts one on the next stream, round-robin over `max_streams`
  (beyond that, chains share streams: more streams than the GPU can overlap only add
  synchronization);
- values that enter the device (fed tensors, `_Recv`) arrive on the copy stream, so that transfers
  overlap compute;
- control-flow nodes (Switch, Merge, Enter, ...) run no kernel: they are looked through, so a
  kernel inside a loop body is ordered after the kernels that produced its inputs outside it.

A node on stream B that consumes a value made on stream A must not start before the value is
complete: `waits[item]` lists those other streams. At launch the runtime records an event on A
(everything queued on A so far, which includes the producer, since a consumer only becomes ready
after its producers were launched) and makes B wait for it; the GPU then orders the two without
blocking the host. `StreamRuntime` does that for the executor; it works with cupy streams
(gpu.py) and with the logical streams of the test double (sim_gpu.py), which record what would have
been queued so that tests can check the ordering.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from .plan import FED, NORMAL, RECV, Item, Plan

# Stream ids: 0..n-1 are compute streams; COPY_STREAM carries host<->device transfers.
COPY_STREAM = -1
DEFAULT_MAX_STREAMS = 4


@dataclass(frozen=True)
class StreamAssignment:
    """The static stream plan of one compiled Plan (indexed by item id)."""

    # stream_of[item.id]: a compute stream (0..num_streams-1), COPY_STREAM for values arriving on
    # the device, None for nodes that run no kernel (control flow, _Send).
    stream_of: tuple
    # waits[item.id]: the other streams whose work the item must wait for (sorted ids).
    waits: tuple
    num_streams: int

    def stream_name(self, stream: int | None) -> str:
        """A lane name for traces: 'compute:0', 'copy', or 'host' for nodes without a stream."""
        if stream is None:
            return "host"
        return "copy" if stream == COPY_STREAM else f"compute:{stream}"


def assign_streams(plan: Plan, max_streams: int = DEFAULT_MAX_STREAMS) -> StreamAssignment:
    """Give every kernel node of `plan` a stream and list the cross-stream waits it needs."""
    if max_streams < 1:
        raise ValueError(f"max_streams must be at least 1, not {max_streams}")
    items = plan.items
    sources = _kernel_sources(items)
    stream_of: list = [None] * len(items)
    continued: set[int] = set()     # producers whose chain a consumer has already continued
    next_chain = 0
    for item in items:
        if _arrives_on_copy_stream(item):
            stream_of[item.id] = COPY_STREAM
        elif item.kind == NORMAL:
            stream = _continue_chain(item, sources, stream_of, continued)
            if stream is None:
                stream, next_chain = next_chain % max_streams, next_chain + 1
            stream_of[item.id] = stream
    waits = tuple(_waits_of(item, sources, stream_of) for item in items)
    used = {s for s in stream_of if s is not None and s != COPY_STREAM}
    return StreamAssignment(tuple(stream_of), waits, max(used) + 1 if used else 0)


def _arrives_on_copy_stream(item: Item) -> bool:
    """Fed values are uploaded, and _Recv values copied in, on the copy stream."""
    return item.kind == FED or (item.kind == RECV and item.node.op == "_Recv")


def _continue_chain(item: Item, sources, stream_of, continued) -> int | None:
    """The stream of the item's first data producer whose chain is still open, claiming it."""
    for producer_id in sources.data[item.id]:
        stream = stream_of[producer_id]
        if stream is not None and stream != COPY_STREAM and producer_id not in continued:
            continued.add(producer_id)
            return stream
    return None


def _waits_of(item: Item, sources, stream_of) -> tuple:
    """The streams, other than the item's own, that made any of its inputs (data or control).
    Nodes without a stream wait for nothing here: a _Send's copy out (Device.to_host) waits for
    every compute stream itself."""
    own = stream_of[item.id]
    if own is None:
        return ()
    producers = sources.data[item.id] + sources.control[item.id]
    return tuple(sorted({stream_of[p] for p in producers} - {own, None}))


class _Sources:
    """Per item, the kernel-running items its data inputs and its control inputs come from, found
    by looking through control-flow nodes (which only pass values along)."""

    def __init__(self, num_items: int):
        self.data: list[list[int]] = [[] for _ in range(num_items)]
        self.control: list[list[int]] = [[] for _ in range(num_items)]


def _kernel_sources(items: list[Item]) -> _Sources:
    item_of = {item.name: item for item in items}
    through = _pass_through_sets(items, item_of)
    sources = _Sources(len(items))
    for item in items:
        if item.kind == FED:
            continue    # a fed node's inputs are not computed
        sources.data[item.id] = _resolve([item_of[r.node.name] for r in item.node.inputs
                                          if r.node.name in item_of], through)
        sources.control[item.id] = _resolve([item_of[n.name] for n in item.node.control_inputs
                                             if n.name in item_of], through)
    return sources


def _resolve(producers: list[Item], through: dict[int, set[int]]) -> list[int]:
    """Producer items -> kernel-running item ids, in input order, without duplicates."""
    resolved: list[int] = []
    for producer in producers:
        for item_id in ([producer.id] if producer.id not in through else sorted(through[producer.id])):
            if item_id not in resolved:
                resolved.append(item_id)
    return resolved


def _is_pass_through(item: Item) -> bool:
    """Nodes that forward values without running a kernel on a stream."""
    return item.kind not in (NORMAL, FED, RECV)


def _pass_through_sets(items: list[Item], item_of: dict[str, Item]) -> dict[int, set[int]]:
    """For each pass-through item, the kernel-running items whose values may flow through it.
    Loops make cycles (Merge <- NextIteration), so iterate to a fixed point."""
    through: dict[int, set[int]] = {item.id: set() for item in items if _is_pass_through(item)}
    changed = True
    while changed:
        changed = False
        for item in items:
            if item.id not in through:
                continue
            found = through[item.id]
            before = len(found)
            for node in item.node.input_nodes():
                producer = item_of.get(node.name)
                if producer is not None:
                    found |= through.get(producer.id, {producer.id})
            changed |= len(found) != before
    return through


class StreamRuntime:
    """Launches a plan's kernels on their streams with the event waits the assignment asks for.

    `device` supplies the streams: `device.compute_stream(i)` -> its i-th compute stream (shared
    by the device's executors), with `record()` -> event (with a `done` property), `wait(event)`,
    `activate()` (a context manager that makes kernels launched by this thread go to the stream),
    `launched(name, outputs)` (bookkeeping after a launch) and `synchronize()`; and
    `device.copy_stream`. One runtime serves one executor; kernels of a step may launch from
    several threads at once."""

    def __init__(self, plan: Plan, device, max_streams: int = DEFAULT_MAX_STREAMS):
        self.assignment = assign_streams(plan, max_streams)
        self.device = device
        self.streams = [device.compute_stream(i) for i in range(self.assignment.num_streams)]
        self._lock = threading.Lock()
        # Inputs a kernel read from another stream's memory stay referenced until the kernel's
        # stream has passed an event recorded after it: the memory pool hands freed blocks to
        # new work on the stream that allocated them, which is not ordered after the reader.
        self._retained: deque = deque()

    def stream(self, stream_id: int):
        return self.device.copy_stream if stream_id == COPY_STREAM else self.streams[stream_id]

    def launch(self, item: Item, inputs):
        """Run `item`'s kernel on its stream after the waits it needs; returns its outputs."""
        stream_id = self.assignment.stream_of[item.id]
        stream = self.stream(stream_id)
        waits = self.assignment.waits[item.id]
        for other in waits:
            stream.wait(self.stream(other).record())
        with stream.activate():
            outputs = item.kernel(item.ctx, *inputs)
            stream.launched(item.name, outputs if type(outputs) is tuple else (outputs,))
        if waits:
            self._retain(stream, inputs)
        return outputs

    def _retain(self, stream, inputs) -> None:
        with self._lock:
            self._retained.append((stream.record(), tuple(inputs)))
            while self._retained and self._retained[0][0].done:
                self._retained.popleft()

    def finish_step(self) -> None:
        """Wait until every stream has finished the step's work; release what was retained."""
        for stream in self.streams:
            stream.synchronize()
        self.device.copy_stream.synchronize()
        with self._lock:
            self._retained.clear()
