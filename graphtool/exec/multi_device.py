"""Multi-device execution: one executor per device, connected by a rendezvous per step.

A Session whose graph names more than one device, or holds `_Send`/`_Recv` nodes, compiles each
(fetches, feeds) signature here instead of into one plan:

1. the pruned copy of the graph (Session prunes first, following each needed `_Recv` to its
   `_Send`) is placed (`graphtool.placement.place`, soft placement on) and partitioned
   (`graphtool.partition.partition`) unless it is partitioned already, so every cross-device edge
   is a `_Send`/`_Recv` pair and every device holding part of a loop has its own copy of the
   loop's control skeleton;
2. it is split into one subgraph per device, each compiled into a Plan for its Device (CPUs
   `cpu:N` are separate CPUDevices; GPU names map to the cupy GPU, or to the FakeGPUDevice test
   double when the session's own device is one);
3. a MultiDeviceExecutor runs all of them at once, each on its own thread (and its own worker
   pool), sharing a fresh Rendezvous (one per step) and the step's resources. No central scheduler: each device
   reacts to its own inputs and to values arriving from its peers.

Feeds go to the device whose partition holds the fed node, fetches come back from theirs. A
failure on one device aborts the rendezvous, which wakes every device; the error raised is the
first one, naming its node and device.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import DeviceUnavailable, DftoolError, InvalidGraphError, UsageError
from ..ir import Graph, Node, TensorRef
from ..partition.collectives import instance_members, is_collective
from ..placement.device_names import DEFAULT_JOB, canonical_device_name, matches, parse_device_name, short_device_name
from .device_factory import create_device
from .devices import CPUDevice, Device, FakeGPUDevice
from .executor import Executor, StepStats
from .plan import compile_plan
from .collective.spec import resolve_if_needed
from .rendezvous import Rendezvous

SEND_OPS = frozenset({"_Send", "_HostSend"})
RECV_OPS = frozenset({"_Recv", "_HostRecv"})


# --- which graphs run here ------------------------------------------------------------------------

def has_transfers(graph: Graph) -> bool:
    """Whether `graph` is (part of) a partitioned graph: it holds `_Send`/`_Recv` nodes."""
    return any(node.op in SEND_OPS or node.op in RECV_OPS for node in graph.nodes)


def node_device(node: Node, default: str) -> str:
    """The canonical full name of the device `node` asks for (`default` when it names none)."""
    if not node.device:
        return default
    try:
        return canonical_device_name(node.device)
    except UsageError as exc:
        raise InvalidGraphError(f"node '{node.name}': {exc}", hint=exc.hint) from None


def named_devices(graph: Graph, default: str) -> list[str]:
    """The devices the nodes of `graph` name, nodes without a device counting as `default`."""
    return sorted({node_device(node, default) for node in graph.nodes})


def needs_multi_device(graph: Graph, default_device: Device) -> bool:
    """Whether a Session must run `graph` on several executors."""
    return has_transfers(graph) or len(named_devices(graph, default_device.name)) > 1


def transfer_peers(graph: Graph) -> dict[tuple, list[Node]]:
    """The `_Send` nodes of `graph` by (tensor_name, send_device, recv_device): what a `_Recv`
    with the same three attrs receives from."""
    sends: dict[tuple, list[Node]] = {}
    for node in graph.nodes:
        if node.op in SEND_OPS:
            sends.setdefault(_transfer_id(node), []).append(node)
    return sends


def _transfer_id(node: Node) -> tuple:
    return (node.attr("tensor_name"), node.attr("send_device"), node.attr("recv_device"))


def with_peer_sends(graph: Graph, needed: set[Node], fed: set[Node]) -> set[Node]:
    """`needed` (from prune.needed_nodes) closed over the rendezvous: a needed `_Recv` needs the
    `_Send` it receives from, and a needed collective every other member of its instance, with
    everything those need, on whichever device."""
    from ..prune import needed_nodes

    sends = transfer_peers(graph)
    members = instance_members(graph) if any(is_collective(n) for n in needed) else {}
    if not sends and not members:
        return needed
    instance_of = {node: nodes for nodes in members.values() for node in nodes}

    def peers(node: Node) -> list[Node]:
        if node.op in RECV_OPS:
            return list(sends.get(_transfer_id(node), ()))
        return instance_of.get(node, [])

    result, frontier = set(needed), [n for n in needed if n.op in RECV_OPS or n in instance_of]
    while frontier:
        wanted = [p for node in frontier for p in peers(node) if p not in result]
        added = needed_nodes(graph, wanted, fed) - result
        result |= added
        frontier = [n for n in added if n.op in RECV_OPS or n in instance_of]
    return result


# --- devices --------------------------------------------------------------------------------------

def local_device(name: str, gpu_double: bool, task: tuple = (DEFAULT_JOB, 0, 0)) -> Device:
    """The Device for a canonical device name of `task` (job, replica, task index: this process's
    own); DeviceUnavailable (exit 4) for another task's device or a device type/GPU not here."""
    parsed = parse_device_name(name).completed()
    assert parsed.index is not None   # completed() fills every field
    if (parsed.job, parsed.replica, parsed.task) != task:
        raise DeviceUnavailable(f"device '{name}' is not on this machine",
                                hint="only /job:localhost/replica:0/task:0 devices run in this process; "
                                     "run it with --cluster to use other jobs and tasks")
    if parsed.type == "CPU":
        return CPUDevice(parsed.index)
    if parsed.type == "GPU":
        return FakeGPUDevice(parsed.index) if gpu_double else create_device(f"gpu:{parsed.index}")
    raise DeviceUnavailable(f"device '{name}': device type {parsed.type} is not supported",
                            hint="use CPU or GPU devices")


def usable_devices(names: list[str], gpu_double: bool) -> list[str]:
    """The names in `names` that can run here (soft placement moves the other nodes)."""
    usable = []
    for name in names:
        try:
            local_device(name, gpu_double)
        except DeviceUnavailable:
            continue
        usable.append(name)
    return usable


# --- preparing the graph ----------------------------------------------------------------------

def place_and_partition(graph: Graph, default_device: Device, gpu_double: bool) -> list[Moved]:
    """Place (soft placement on) and partition `graph` in place, over the devices its nodes name
    that exist here and the default device; returns each device request that soft placement
    could not honour. Nodes that name no device (nor does anything they must be
    colocated with) go to the default device, as `dftool run` promises."""
    from ..placement.colocation import colocation_groups
    from ..partition import partition
    from ..placement import place

    default = default_device.name
    for group in colocation_groups(graph).groups:
        if not any(node.device for node in group.members):
            for node in group.members:
                node.device = default
    devices = usable_devices(named_devices(graph, default), gpu_double)
    if default not in devices:   # somewhere for soft placement to put what asks for no device here
        devices.append(default)
    report = place(graph, devices, soft_placement=True)
    partition(graph)
    return [Moved(s.node, _short(s.requested), short_device_name(s.chosen), s.why) for s in report.softened]


@dataclass(frozen=True)
class Moved:
    """A node that does not run on the device it asks for (short device names)."""

    node: str
    requested: str
    runs_on: str
    why: str

    def note(self) -> str:
        return f"node '{self.node}' asked for {self.requested}, runs on {self.runs_on} ({self.why})"


def single_device_moves(nodes, device: Device, gpu_double: bool) -> list[Moved]:
    """The nodes among `nodes` that ask for a device other than `device`, which a single-device
    run puts on `device` all the same (a graph pinned whole to a GPU this machine lacks)."""
    moves, usable = [], {}
    for node in nodes:
        if not node.device or matches(node.device, device.name):
            continue
        requested = node_device(node, device.name)
        if requested not in usable:
            usable[requested] = bool(usable_devices([requested], gpu_double))
        why = (f"the run is on {short_device_name(device.name)}" if usable[requested]
               else "no such device here")
        moves.append(Moved(node.name, _short(requested), short_device_name(device.name), why))
    return sorted(moves, key=lambda m: m.node)


def _short(name: str) -> str:
    """`cpu:1` for a local device name, the name itself for one elsewhere."""
    parsed = parse_device_name(name).completed()
    local = (parsed.job, parsed.replica, parsed.task) == (DEFAULT_JOB, 0, 0)
    return short_device_name(parsed) if local else name


def split_per_device(graph: Graph, default: str) -> list[tuple[str, Graph]]:
    """(device name, subgraph) per device of a partitioned graph, CPUs first, by index; nodes that
    name no device go to `default`. An edge between devices (not a `_Send`/`_Recv` pair) is an
    InvalidGraphError naming it."""
    from ..partition import split_by_device

    for node in graph.nodes:
        if not node.device:
            node.device = default
    return sorted(split_by_device(graph).items(), key=lambda part: _device_order(part[0]))


def _device_order(name: str) -> tuple:
    parsed = parse_device_name(name)
    return (parsed.type != "CPU", parsed.type, parsed.index)


# --- running ----------------------------------------------------------------------------------

class DevicePart:
    """One device's share of a multi-device run: its Device and the Executor of its partition."""

    def __init__(self, name: str, device: Device, executor: Executor):
        self.name = name
        self.device = device
        self.executor = executor


class MultiDeviceExecutor:
    """Runs several per-device Executors as one step. Shaped like Executor for the Session
    (run(), last_stats, device_names, close()); fed and fetched items are the per-device plans'
    items, and `feed_device` is the device the Session put the fed values on."""

    def __init__(self, parts: list[DevicePart], feed_device: Device):
        self.parts = parts
        self.feed_device = feed_device
        self.part_of = {item: part for part in parts for item in part.executor.plan.items}
        self.last_stats = StepStats()   # the latest step's (concurrent steps: use run_step)
        self.notes: list[str] = []
        self.moves: list[Moved] = []

    @property
    def device_names(self) -> list[str]:
        return [part.name for part in self.parts]

    def close(self) -> None:
        for part in self.parts:
            part.executor.close()

    def run(self, feeds: dict, fetches: list, **options) -> list:
        return self.run_step(feeds, fetches, **options)[0]

    def run_step(self, feeds: dict, fetches: list, *, timeout: float | None = None, resources=None,
                 allow_dead: bool = False, stats=None, rendezvous: Rendezvous | None = None) -> tuple[list, StepStats]:
        """Run every device's executor once; returns the fetched values (host arrays) in order,
        and the step's counts. `stats` (a StepStats) gets one DeviceStats per device: each
        executor records its own. Each step starts its own thread per device (but the first, which
        runs on the caller's): a step never waits for a thread another step holds, so concurrent
        steps cannot starve each other (a shared pool of one thread per device could run device 0
        of two steps, each waiting for its device 1 queued behind). A cluster worker passes the
        `rendezvous` that also reaches the other tasks."""
        if rendezvous is None:
            rendezvous = Rendezvous(participants=[part.name for part in self.parts])
        jobs = []
        for part in self.parts:
            part_feeds = {item: self._to_part(part, values) for item, values in feeds.items()
                          if self.part_of[item] is part}
            positions = [i for i, (item, _) in enumerate(fetches) if self.part_of[item] is part]
            job = _PartJob(part, rendezvous, part_feeds, [fetches[i] for i in positions], positions,
                           dict(timeout=timeout, resources=resources, allow_dead=allow_dead, stats=stats))
            jobs.append(job)
        threads = [threading.Thread(target=job.run, name=f"dftool-device-{job.part.name}", daemon=True)
                   for job in jobs[1:]]
        for thread in threads:
            thread.start()
        jobs[0].run()
        for thread in threads:
            thread.join()
        results: list = [None] * len(fetches)
        for job in jobs:
            for position, value in zip(job.positions, job.values or ()):
                results[position] = value
        step_stats = self._merge_stats([job.stats for job in jobs])
        if any(job.failed for job in jobs):
            raise self._step_error(rendezvous)
        return results, step_stats

    def _to_part(self, part: DevicePart, values: tuple) -> tuple:
        return tuple(None if v is None else part.device.to_device(self.feed_device.to_host(v)) for v in values)


    def _step_error(self, rendezvous: Rendezvous) -> BaseException:
        """The first failure, with the device it happened on added to its message."""
        error = rendezvous.error
        assert error is not None   # called once the step has failed
        if not isinstance(error, DftoolError) or rendezvous.origin is None:
            return error
        origin = rendezvous.origin
        assert isinstance(origin, str)   # this runner's participants are its parts' device names
        tagged = type(error)(f"{error} (on {short_device_name(origin)})", hint=error.hint)
        tagged.__cause__ = error.__cause__
        return tagged

    def _merge_stats(self, part_stats_list: list) -> StepStats:
        stats = StepStats()
        for part_stats in part_stats_list:
            if part_stats is None:
                continue
            stats.nodes_executed += part_stats.nodes_executed
            # Every device holding part of a loop runs all of its iterations: count them once.
            for frame, count in part_stats.iterations.items():
                stats.iterations[frame] = max(stats.iterations.get(frame, 0), count)
        self.last_stats = stats
        return stats


class _PartJob:
    """One device's share of one step: run on its thread, its results and counts kept here."""

    def __init__(self, part: DevicePart, rendezvous: Rendezvous, feeds, fetches, positions, options):
        self.part, self.rendezvous, self.feeds, self.fetches = part, rendezvous, feeds, fetches
        self.positions, self.options = positions, options
        self.values: list | None = None
        self.stats: StepStats | None = None
        self.failed = False

    def run(self) -> None:
        part, rendezvous = self.part, self.rendezvous
        try:
            values, self.stats = part.executor.run_step(self.feeds, self.fetches, rendezvous=rendezvous,
                                                        participant=part.name, **self.options)
            self.values = [None if v is None else part.device.to_host(v) for v in values]
        except BaseException as exc:
            self.failed = True
            self.stats = part.executor.last_stats
            rendezvous.abort(exc, part.name)   # no-op when this failure came from the rendezvous
            return
        rendezvous.finished(part.name)


def compile_multi_device(session, pruned: Graph, fed_nodes: set[Node], fetch_refs: list[TensorRef],
                         target_nodes: list[Node]):
    """Session._compile's multi-device form: (executor, (item, port) per fetch, fed items) for a pruned copy
    of the session's graph (placed and partitioned here, in place, when it is not yet)."""
    gpu_double = isinstance(session.device, FakeGPUDevice)
    # A graph holding _Send/_Recv is partitioned already (a pruned piece of it may hold none).
    moves = [] if has_transfers(session.graph) else place_and_partition(pruned, session.device, gpu_double)
    resolve_if_needed(pruned, session.device.name)   # (a graph partitioned elsewhere)
    fed_names = {node.name for node in fed_nodes}
    target_names = {node.name for node in target_nodes}
    parts, item_of, moved = [], {}, {}
    for name, graph in split_per_device(pruned, session.device.name):
        device = local_device(name, gpu_double)
        if getattr(session, "jit", False):   # clusters are per device: one JIT pass per partition
            local_fetches = [r for r in fetch_refs if r.node.name in graph]
            moved.update(session.jit_compile(graph, name, local_fetches,
                                             [n for n in fed_nodes if n.name in graph],
                                             [n for n in target_nodes if n.name in graph]))
        plan = compile_plan(graph, device, {n for n in fed_names if n in graph})
        targets = [plan.item_of[n] for n in target_names if n in plan.item_of]
        parts.append(DevicePart(name, device, Executor(plan, session.threads, check_numerics=session.check_numerics,
                                                       targets=targets)))
        item_of.update(plan.item_of)
    executor = MultiDeviceExecutor(parts, session.device)
    executor.moves = moves
    executor.notes = [move.note() for move in moves]
    fetch_pairs = []
    for ref in fetch_refs:
        target = moved.get((ref.node.name, ref.index), ref)   # a fetch a cluster now computes
        fetch_pairs.append((item_of[target.node.name], target.index))
    fed_items = {item_of[node.name]: [TensorRef(node, i) for i in range(node.num_outputs)] for node in fed_nodes}
    return executor, fetch_pairs, fed_items
