"""A task's worker: holds the task's partitions and runs its share of each step (TF's worker service).

The master registers each signature's partitions once (`register`: one GraphDef per device of
this task, compiled here into one Executor per device and cached under the signature's
fingerprint); each step is then one `run_graph` call carrying only the feeds, the fetches and a
step id. Transfers to other tasks go straight to their workers through `transport` (the master
never relays a tensor); transfers from them arrive through `deliver`, possibly before this task's
`run_graph` for that step has started, so a step's rendezvous is created by whichever comes first.

Nothing here knows Ray: `ray_engine.py` wraps this class in a Ray actor and gives it a transport
made of actor handles; tests can wire workers together in one process.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from collections import OrderedDict, deque
from dataclasses import replace
from typing import Protocol

from .. import errors
from ..errors import DftoolError, RuntimeFailure
from ..exec.step_errors import StepTimeout
from ..exec.devices import CPUDevice
from ..exec.executor import Executor
from ..exec.multi_device import DevicePart, MultiDeviceExecutor, local_device
from ..exec.plan import compile_plan
from ..exec.resources import SessionResources, StepResources
from ..exec.step_stats import DeviceStats, StepStats, perf_clock_id
from ..placement.device_names import parse_device_name
from .remote_rendezvous import RemoteRendezvous
from .spec import TaskSpec

MAX_SIGNATURES = 64        # compiled signatures kept per worker (least recently used dropped)
MAX_SESSIONS = 64          # master Sessions whose state a worker keeps (least recently used dropped)
FINISHED_STEPS_KEPT = 4096  # late deliveries for these steps are dropped, not buffered forever


class Transport(Protocol):
    def deliver(self, task: str, fingerprint: str, step_id: str, key: tuple, value, is_dead: bool) -> None:
        """Hand a value to the worker of `task` (`/job:worker/replica:0/task:1`); never blocks."""


def task_of(device: str) -> str:
    """`/job:worker/replica:0/task:1` for a device name of that task."""
    parsed = parse_device_name(device).completed()
    return f"/job:{parsed.job}/replica:{parsed.replica}/task:{parsed.task}"


class _Signature:
    """One registered signature: this task's executors and where its fed and fetched nodes are."""

    def __init__(self, executor: MultiDeviceExecutor, item_of: dict, devices: list[str], resources: SessionResources):
        self.executor, self.item_of, self.devices = executor, item_of, devices
        self.resources = resources   # the state of the master's Session this signature belongs to


class WorkerService:
    def __init__(self, task: TaskSpec, transport: Transport | None = None, threads: int | None = None,
                 gpu_double: bool = False):
        self.task = task
        self.transport = transport
        self.threads = threads
        self.gpu_double = gpu_double
        # Variables and random generators of each master Session (most recently used kept).
        self._session_resources: OrderedDict[str, SessionResources] = OrderedDict()
        self._signatures: OrderedDict[str, _Signature] = OrderedDict()
        self._steps: dict[str, tuple[RemoteRendezvous, str]] = {}
        self._finished: deque[str] = deque(maxlen=FINISHED_STEPS_KEPT)
        self._finished_set: set[str] = set()
        self._lock = threading.Lock()

    # --- about this worker ---------------------------------------------------------------------
    def info(self) -> dict:
        return {"task": self.task.name, "pid": os.getpid(), "host": socket.gethostname(),
                "devices": list(self.task.devices)}

    def ping(self) -> float:
        return time.time()

    def echo(self, value):
        """Returns `value`: the master measures the network with it at start-up."""
        return value

    # --- signatures -------------------------------------------------------------------------------
    def register(self, fingerprint: str, partitions: dict[str, bytes], fed: list[str], targets: list[str],
                 check_numerics: bool = False, session_key: str = "") -> list[str]:
        """Compile this task's partitions of one signature (serialized GraphDefs by device);
        a fingerprint seen before is not compiled again. Returns the devices compiled."""
        with self._lock:
            known = self._signatures.get(fingerprint)
            if known is not None:
                self._signatures.move_to_end(fingerprint)
                return known.devices
        from ..ir.convert import from_graphdef
        from ..proto import GraphDef

        parts, item_of = [], {}
        for device_name in sorted(partitions):
            graph_def = GraphDef()
            graph_def.ParseFromString(partitions[device_name])
            graph = from_graphdef(graph_def, f"partition for {device_name}", verify=False)
            device = self._device(device_name)
            names = {node.name for node in graph.nodes}
            plan = compile_plan(graph, device, {n for n in fed if n in names})
            executor = Executor(plan, self.threads, check_numerics=check_numerics,
                                targets=[plan.item_of[n] for n in targets if n in plan.item_of])
            parts.append(DevicePart(device_name, device, executor))
            item_of.update(plan.item_of)
        with self._lock:
            resources = self._session_resources.get(session_key)
            if resources is None:
                resources = self._session_resources[session_key] = SessionResources()
            self._session_resources.move_to_end(session_key)
            while len(self._session_resources) > MAX_SESSIONS:
                self._session_resources.popitem(last=False)
        signature = _Signature(MultiDeviceExecutor(parts, CPUDevice(0)), item_of, sorted(partitions), resources)
        with self._lock:
            self._signatures[fingerprint] = signature
            while len(self._signatures) > MAX_SIGNATURES:
                _, dropped = self._signatures.popitem(last=False)
                dropped.executor.close()
        return signature.devices

    def _device(self, name: str):
        parsed = parse_device_name(name).completed()
        here = parse_device_name(self.task.name).completed()
        if (parsed.job, parsed.replica, parsed.task) != (here.job, here.replica, here.task):
            raise RuntimeFailure(f"device '{name}' is not on task {self.task.short_name}")
        return local_device(name, self.gpu_double, task=(parsed.job, parsed.replica, parsed.task))

    # --- steps ------------------------------------------------------------------------------------
    def run_graph(self, fingerprint: str, step_id: str, feeds: dict, fetches: list, *,
                  timeout: float | None = None, allow_dead: bool = False, trace: bool = False) -> dict:
        """Run this task's share of one step. `feeds` maps fed node names to their output tuples
        (host arrays), `fetches` lists (node name, port). Returns {"values": [...], "nodes":
        executed count, "iterations": {...}, "stats": {...} with trace} or {"error": ...}: an
        error is returned, not raised, so that the master can name the task and keep its class."""
        signature = self._signatures.get(fingerprint)
        if signature is None:
            return _error_result(RuntimeFailure(f"task {self.task.short_name}: signature {fingerprint[:12]} "
                                                "was never registered here (the worker restarted?)"), None)
        rendezvous = self._rendezvous(fingerprint, step_id, signature)
        if rendezvous is None:   # the master stopped this step before its call got here
            return _error_result(RuntimeFailure(f"the step was stopped before it started on {self.task.short_name}"),
                                 None)
        stats = StepStats() if trace else None
        origin_wall_ns = time.time_ns()
        try:
            step_feeds = {signature.item_of[name]: values for name, values in feeds.items()}
            step_fetches = [(signature.item_of[name], port) for name, port in fetches]
            values, step = signature.executor.run_step(
                step_feeds, step_fetches, timeout=timeout, resources=StepResources(signature.resources),
                allow_dead=allow_dead, stats=stats, rendezvous=rendezvous)
        except BaseException as exc:
            return _error_result(exc, rendezvous.origin)
        finally:
            self._finish(step_id)
        result = {"values": values, "nodes": step.nodes_executed, "iterations": dict(step.iterations),
                  "bytes_sent": rendezvous.bytes_sent, "sent": rendezvous.sent_remote,
                  "received": rendezvous.received_remote}
        if stats is not None:
            stats.stop()
            # The executors here record under this process's local device names; the master
            # wants the cluster's (`/job:worker/.../task:1/device:CPU:0`).
            cluster_name = {part.device.name: part.name for part in signature.executor.parts}
            result["stats"] = {"origin_wall_ns": origin_wall_ns, "wall_ns": stats.wall_ns,
                               "devices": [_portable(d, cluster_name.get(d.device, d.device))
                                           for d in stats.devices.values()],
                               "origin_ns": stats.origin_ns, "clock": perf_clock_id()}
        return result

    def deliver(self, fingerprint: str, step_id: str, key: tuple, value, is_dead: bool) -> None:
        """A value another task sent to one of this task's devices."""
        signature = self._signatures.get(fingerprint)
        if signature is None:
            return
        rendezvous = self._rendezvous(fingerprint, step_id, signature)
        if rendezvous is not None:
            rendezvous.deliver(key, value, is_dead)

    def abort(self, step_id: str, message: str) -> None:
        """Stop this task's share of a step (another task failed, or the master gave up)."""
        with self._lock:
            entry = self._steps.get(step_id)
            if entry is None:
                self._mark_finished(step_id)
                return
        entry[0].abort(RuntimeFailure(message))

    def progress(self, step_id: str) -> dict | None:
        """What the master's deadlock check needs (None: the step is not running here)."""
        entry = self._steps.get(step_id)
        return None if entry is None else entry[0].progress()

    def _rendezvous(self, fingerprint: str, step_id: str, signature: _Signature) -> RemoteRendezvous | None:
        with self._lock:
            entry = self._steps.get(step_id)
            if entry is None:
                if step_id in self._finished_set:
                    return None    # a late value for a step that is over (aborted)
                transport = self.transport
                local = set(self.task.devices)

                def forward(key: tuple, value, is_dead: bool) -> None:
                    assert transport is not None, "a worker with peers needs a transport"
                    transport.deliver(task_of(key[1]), fingerprint, step_id, key, value, is_dead)

                rendezvous = RemoteRendezvous(sorted(local), signature.devices, forward)
                entry = self._steps[step_id] = (rendezvous, fingerprint)
            return entry[0]

    def _finish(self, step_id: str) -> None:
        with self._lock:
            self._steps.pop(step_id, None)
            self._mark_finished(step_id)

    def _mark_finished(self, step_id: str) -> None:
        if len(self._finished) == self._finished.maxlen:
            self._finished_set.discard(self._finished[0])
        self._finished.append(step_id)
        self._finished_set.add(step_id)

    def close(self) -> None:
        for signature in self._signatures.values():
            signature.executor.close()
        self._signatures.clear()


def _portable(device: DeviceStats, name: str) -> DeviceStats:
    """A DeviceStats named `name`, without pending recordings (those hold closures, which do
    not pickle)."""
    nodes = [replace(n, device=name) for n in device.nodes]
    return DeviceStats(name, nodes, device.memory, device.iterations, device.lanes)


def _error_result(exc: BaseException, origin) -> dict:
    """The error a step failed with, as plain data (the master re-raises it with the task named):
    its class when it is one of dftool's, the message, hint, and the device it came from."""
    if isinstance(exc, DftoolError):
        kind = "StepTimeout" if isinstance(exc, StepTimeout) else type(exc).__name__
        return {"error": {"class": kind, "message": str(exc), "hint": exc.hint, "origin": origin}}
    import traceback

    # Not one of dftool's errors: a bug. Its traceback goes along (`--debug` shows it).
    return {"error": {"class": "RuntimeFailure", "message": f"{type(exc).__name__}: {exc}", "hint": None,
                      "origin": origin, "traceback": "".join(traceback.format_exception(exc))}}


def error_from_result(error: dict, where: str | None) -> DftoolError:
    """The exception `_error_result` described, its message ending with `(where)` if given."""
    kind = StepTimeout if error["class"] == "StepTimeout" else getattr(errors, error["class"], RuntimeFailure)
    if not (isinstance(kind, type) and issubclass(kind, DftoolError)):
        kind = RuntimeFailure
    exc = kind(error["message"] + (f" ({where})" if where else ""), hint=error["hint"])
    if error.get("traceback"):
        exc.add_note(f"on the worker:\n{error['traceback']}")
    return exc
