"""The master: places and partitions a signature once, registers the parts, then only issues steps.

For each (fetches, feeds, targets) signature a Session compiles, the master
1. places the pruned graph over every task's devices (soft placement; the cost model knows that a
   cross-task edge costs the network latency plus bytes over bandwidth measured at start-up) and
   partitions it (`--compress` narrows only cross-task transfers);
2. serializes each device's partition and registers each task's share on its worker once, under a
   fingerprint of the whole signature (the workers compile and cache them);
3. runs a step as one concurrent `run_graph` call per task, carrying only that task's feeds,
   fetches and the step id. Workers exchange tensors among themselves; the master never relays a
   tensor and never schedules a node.

While a step runs the master checks every task's health once a second (a ping each; Ray also
reports a dead process or node at once). A task that dies, or does not answer within
PING_TIMEOUT_S, aborts the step on every other task, and the error names the task, its Ray node
and what the others were waiting for from it. So does a kernel error on one task (reported as
locally, with the task added), a `timeout`, and a deadlock across tasks (every task idle on
Recvs, no value in flight, twice in a row).
"""
from __future__ import annotations

import hashlib
import itertools
import statistics
import time
import uuid

import numpy as np

from ..errors import DftoolError, InvalidGraphError, RuntimeFailure, TaskLost, UsageError
from ..exec.executor import StepStats
from ..exec.multi_device import Moved, has_transfers, split_per_device
from ..exec.rendezvous import describe_key
from ..exec.step_errors import StepTimeout
from ..exec.step_stats import StepStats as TracedStep  # what a traced step recorded (not the executor's tally)
from ..exec.step_stats import perf_clock_id
from ..ir import Graph, Node, TensorRef
from ..placement.cost_model import CostModel, Link
from ..placement.device_names import DEFAULT_JOB, parse_device_name
from .ray_engine import RayCluster, TaskInfo, WorkerLost, first_line
from .spec import ClusterSpec, parse_cluster
from .worker import error_from_result, task_of

HEALTH_INTERVAL_S = 1.0     # how often the master pings each task during a step
WATCH_TICK_S = 0.25         # how often it looks at the answers (and Ray's news of deaths)
PING_TIMEOUT_S = 2.5        # a task that has not answered a ping for this long is lost
PROGRESS_WAIT_S = 0.5       # how long an error message waits to learn what the others awaited
ABORT_GRACE_S = 3.0         # how long the other tasks get to stop after an abort
TIMEOUT_GRACE_S = 2.0       # a worker's own timeout fires first and says what was running
SAME_CLOCK_TOLERANCE_NS = 1_000_000_000   # see _clock_offset


class Cluster:
    """A running cluster as the Session sees it: its tasks, their devices, the measured network,
    and `compile` (what Session._compile calls for each signature)."""

    def __init__(self, engine: RayCluster, compress: str = "none", cost_model: CostModel | None = None):
        self.engine = engine
        self.compress = compress
        self.network = measure_network(engine)
        self.cost_model = cost_model
        self._ids = itertools.count()
        self.lost: set[str] = set()    # tasks whose worker a step lost; replaced before the next step
        self._placements: dict[str, tuple[dict[str, str], list[Moved]]] = {}
        self.session_id = uuid.uuid4().hex[:12]

    @property
    def spec(self) -> ClusterSpec:
        return self.engine.spec

    @property
    def tasks(self) -> list[TaskInfo]:
        return [self.engine.infos[task.name] for task in self.engine.tasks]

    @property
    def device_names(self) -> list[str]:
        return [device for task in self.engine.tasks for device in task.devices]

    @property
    def _device_set(self) -> frozenset[str]:
        return frozenset(self.device_names)

    def placement_cost_model(self) -> CostModel:
        """The cost model placement uses: the given one (or the built-in) with the measured network."""
        model = self.cost_model or CostModel()
        with_network = getattr(model, "with_network", None)
        return with_network(self.network) if with_network is not None else model

    def describe(self) -> list[dict]:
        """One row per task: its name, Ray node, process and devices."""
        return [{"task": info.task.name, "job": info.task.job, "index": info.task.index,
                 "node_id": info.node_id, "node_ip": info.node_ip, "host": info.host, "pid": info.pid,
                 "cpus": info.task.cpus, "gpus": info.task.gpus, "devices": list(info.task.devices)}
                for info in self.tasks]

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- compiling a signature -------------------------------------------------------------------
    def compile(self, session, pruned: Graph, fed_nodes: set[Node], fetch_refs: list[TensorRef],
                target_nodes: list[Node]):
        """Session._compile's cluster form: (executor, fetch pairs, fed items), items being node
        names (the master has no plans; the workers do)."""
        moves = self._place_and_partition(pruned, self._session_placement(session))
        default = self.device_names[0]
        fed_names = sorted(node.name for node in fed_nodes)
        target_names = sorted(node.name for node in target_nodes)
        by_task: dict[str, dict[str, bytes]] = {}
        node_task: dict[str, str] = {}
        from ..ir.export import to_graphdef

        for device, graph in split_per_device(pruned, default):
            task = task_of(device)
            if task not in self.engine.infos:
                raise InvalidGraphError(f"node '{graph.nodes[0].name}' is placed on {device}, "
                                        f"which is not a device of the cluster",
                                        hint=f"the cluster's devices: {', '.join(self.device_names)}")
            by_task.setdefault(task, {})[device] = to_graphdef(graph).SerializeToString()
            for node in graph.nodes:
                node_task[node.name] = task
        digest = hashlib.sha256()
        for task in sorted(by_task):
            for device in sorted(by_task[task]):
                digest.update(f"{task}|{device}|".encode())
                digest.update(by_task[task][device])
        # Each Session has its own state on the workers (variables, random generators), as each
        # has its own in one process: the fingerprint covers the session too.
        session_key = _session_key(session)
        digest.update(repr((fed_names, target_names, session.check_numerics, session_key)).encode())
        fingerprint = digest.hexdigest()
        registration = _Registration(fingerprint, by_task, fed_names, target_names, session.check_numerics,
                                     session_key)
        self.register(registration)
        executor = ClusterExecutor(self, registration, node_task)
        executor.moves = moves
        executor.notes = [move.note() for move in moves]
        fetch_pairs = [(ref.node.name, ref.index) for ref in fetch_refs]
        fed_items = {node.name: [TensorRef(node, i) for i in range(node.num_outputs)] for node in fed_nodes}
        return executor, fetch_pairs, fed_items

    def register(self, registration: "_Registration") -> None:
        """Have every task of a signature compile its partitions (a worker that has them already
        only confirms). Workers lost by an earlier step are replaced first: a new signature's first
        run registers before its step starts."""
        self.recover()
        calls = {task: self.engine.submit(task, "register", registration.fingerprint, parts, registration.fed,
                                          registration.targets, check_numerics=registration.check_numerics,
                                          session_key=registration.session_key)
                 for task, parts in registration.by_task.items()}
        for task, call in calls.items():
            try:
                self.engine.result(task, call)
            except WorkerLost as exc:
                self.lost.add(task)
                raise TaskLost(f"task {self._short(task)} ({self._where(task)}) was lost while "
                               f"compiling its partitions: {exc.why}", task=self._short(task)) from None
            except Exception as exc:   # the worker raised while compiling (a RayTaskError)
                cause = getattr(exc, "cause", None)
                if isinstance(cause, DftoolError):
                    raise type(cause)(f"{cause} (on {self._short(task)})", hint=cause.hint) from None
                raise RuntimeFailure(f"task {self._short(task)} could not compile its partitions: "
                                     f"{first_line(exc)}") from None
        registration.generation = self.engine.generation

    def recover(self) -> None:
        """Before a step: replace the workers an earlier step lost, so that the cluster is usable
        again (their state is gone; restoring it from a checkpoint is `--restore`'s job)."""
        if not self.lost:
            return
        lost, self.lost = sorted(self.lost), set()
        self.engine.restart(lost)

    def _session_placement(self, session) -> tuple[dict[str, str], list[Moved]]:
        """Where each node of the session's whole graph runs, placed once per Session (as
        TensorFlow's master places the full graph): every signature then agrees on where a
        variable lives, so the state one run leaves is there for the next."""
        from ..placement import place
        from ..placement.device_names import short_device_name

        key = _session_key(session)
        cached = self._placements.get(key)
        if cached is not None:
            return cached
        graph = session.graph
        if has_transfers(graph):
            foreign = sorted({n.device for n in graph.nodes if n.device and task_of(n.device) not in self.engine.infos})
            if foreign:
                raise UsageError(f"the graph is partitioned already, for {foreign[0]}, which is not a "
                                 "device of the cluster",
                                 hint="run it without --cluster, or partition the unpartitioned graph "
                                      "with --cluster")
            placement: tuple[dict[str, str], list[Moved]] = ({n.name: n.device for n in graph.nodes}, [])
        elif all(node.device in self._device_set for node in graph.nodes):
            # Placed for this cluster already, every node on one of its devices (static placement).
            placement = ({n.name: n.device for n in graph.nodes}, [])
        else:
            graph = graph.copy()
            for node in graph.nodes:   # this machine's devices mean "that kind of device, on any task"
                if node.device and parse_device_name(node.device).job in (DEFAULT_JOB, None):
                    parsed = parse_device_name(node.device)
                    node.device = "" if parsed.type is None else \
                        f"/device:{parsed.type}:{'*' if parsed.index is None else parsed.index}"
            report = place(graph, self.device_names, soft_placement=True, cost_model=self.placement_cost_model())
            moves = [Moved(s.node, s.requested, short_device_name(s.chosen), s.why) for s in report.softened
                     if s.requested and not s.requested.startswith("/device:")]
            placement = ({n.name: n.device for n in graph.nodes}, moves)
        self._placements[key] = placement
        return placement

    def _place_and_partition(self, graph: Graph, placement: tuple[dict[str, str], list[Moved]]) -> list[Moved]:
        """Give the pruned copy of a signature the session's placement (a node the pruning made,
        such as a fed tensor's placeholder, is placed with what it replaces or by the placer) and
        partition it; returns the requests soft placement could not honour."""
        from ..partition import partition
        from ..placement import place

        if has_transfers(graph):
            return []
        devices, moves = placement
        unplaced = False
        for node in graph.nodes:
            device = devices.get(node.name)
            if device is None:
                unplaced = True
                node.device = ""
            else:
                node.device = device
        if unplaced:
            place(graph, self.device_names, soft_placement=True, cost_model=self.placement_cost_model())
        partition(graph, compress=self.compress, compress_across_tasks_only=True)
        return [move for move in moves if move.node in graph]

    # --- names for messages ------------------------------------------------------------------------
    def _short(self, task: str) -> str:
        info = self.engine.infos.get(task)
        return info.task.short_name if info else task

    def _where(self, task: str) -> str:
        info = self.engine.infos.get(task)
        return f"Ray node {info.short_node}, pid {info.pid}" if info else "unknown node"

    def next_step_id(self) -> str:
        return f"{self.session_id}-{next(self._ids)}"


class _Registration:
    """What the master sent the workers for one signature, kept to send again to a replaced worker."""

    def __init__(self, fingerprint: str, by_task: dict[str, dict[str, bytes]], fed: list[str], targets: list[str],
                 check_numerics: bool, session_key: str):
        self.fingerprint, self.by_task, self.fed, self.targets = fingerprint, by_task, fed, targets
        self.check_numerics, self.session_key = check_numerics, session_key
        self.generation = -1     # the engine generation it was registered in


class ClusterExecutor:
    """Runs one registered signature as cluster steps; shaped like Executor for the Session."""

    def __init__(self, cluster: Cluster, registration: _Registration, node_task: dict[str, str]):
        self.cluster, self.registration, self.node_task = cluster, registration, node_task
        self.fingerprint = registration.fingerprint
        self.tasks = sorted(registration.by_task)
        self.last_stats = StepStats()
        self.notes: list[str] = []
        self.moves: list[Moved] = []
        self.last_transfer_bytes = 0

    @property
    def device_names(self) -> list[str]:
        return [d for t in self.tasks for d in self.cluster.engine.infos[t].task.devices]

    def close(self) -> None:
        pass   # the workers keep their compiled partitions until the cluster closes

    def run(self, feeds: dict, fetches: list, **options) -> list:
        return self.run_step(feeds, fetches, **options)[0]

    def run_step(self, feeds: dict, fetches: list, *, timeout: float | None = None, resources=None,
                 allow_dead: bool = False, stats=None) -> tuple[list, StepStats]:
        """One step on every task holding part of the signature; fetched values in order."""
        self.cluster.recover()
        engine = self.cluster.engine
        if self.registration.generation != engine.generation:   # workers were replaced since
            self.cluster.register(self.registration)
        step_id = self.cluster.next_step_id()
        per_task: dict[str, tuple[dict, list, list]] = {task: ({}, [], []) for task in self.tasks}
        for name, outputs in feeds.items():
            per_task[self.node_task[name]][0][name] = tuple(None if v is None else np.asarray(v) for v in outputs)
        for position, (name, port) in enumerate(fetches):
            task_feeds, task_fetches, positions = per_task[self.node_task[name]]
            task_fetches.append((name, port))
            positions.append(position)
        calls = {task: engine.submit(task, "run_graph", self.fingerprint, step_id, task_feeds, task_fetches,
                                     timeout=timeout, allow_dead=allow_dead, trace=stats is not None)
                 for task, (task_feeds, task_fetches, _) in per_task.items()}
        results = _StepWatch(self.cluster, step_id, calls, timeout).wait()
        values: list = [None] * len(fetches)
        step_stats = StepStats()
        self.last_transfer_bytes = 0
        for task, result in results.items():
            for position, value in zip(per_task[task][2], result["values"]):
                values[position] = value
            step_stats.nodes_executed += result["nodes"]
            for frame, count in result["iterations"].items():
                step_stats.iterations[frame] = max(step_stats.iterations.get(frame, 0), count)
            self.last_transfer_bytes += result.get("bytes_sent", 0)
            if stats is not None and "stats" in result:
                _merge_remote_stats(stats, result["stats"])
        step_stats.transfer_bytes = self.last_transfer_bytes
        self.last_stats = step_stats
        return values, step_stats


class _StepWatch:
    """Waits for one step's run_graph calls while checking health, deadlock and the timeout."""

    def __init__(self, cluster: Cluster, step_id: str, calls: dict, timeout: float | None):
        self.cluster, self.engine, self.step_id = cluster, cluster.engine, step_id
        self.calls = dict(calls)
        self.task_of_call = {call: task for task, call in calls.items()}
        self.deadline = None if timeout is None else time.monotonic() + timeout + TIMEOUT_GRACE_S
        self.timeout = timeout
        self.results: dict[str, dict] = {}
        self.pings: dict[str, tuple[object, float]] = {}       # task -> (ping call, sent at)
        self.progress: dict[str, tuple[object, float]] = {}    # task -> (progress call, sent at)
        self.snapshots: list = []
        self.progress_calls: dict = {}

    def wait(self) -> dict[str, dict]:
        try:
            return self._wait()
        except BaseException as exc:   # KeyboardInterrupt included: stop the step everywhere
            self._abort_all(exc)
            raise

    def _wait(self) -> dict[str, dict]:
        next_round = time.monotonic() + HEALTH_INTERVAL_S
        while len(self.results) < len(self.calls):
            pending = [call for task, call in self.calls.items() if task not in self.results]
            now = time.monotonic()
            wait_for = min(WATCH_TICK_S, max(0.0, next_round - now))
            if self.deadline is not None:
                wait_for = min(wait_for, max(0.0, self.deadline - now))
            for call in self.engine.wait(pending, wait_for):
                self._collect(self.task_of_call[call], call)
            if len(self.results) == len(self.calls):
                break
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                raise StepTimeout(f"the step ran past its {self.timeout:g} s timeout on the cluster"
                                  f"{self._waiting_on(None)}",
                                  hint="raise --timeout, or profile the run to see what is slow")
            self._check_pings(now)
            if now >= next_round:   # once a second: a ping to each task, and a progress report
                self._check_deadlock()
                self._send_round(now)
                next_round = now + HEALTH_INTERVAL_S
        return self.results

    def _collect(self, task: str, call) -> None:
        try:
            result = self.engine.result(task, call)
        except WorkerLost as exc:
            raise self._lost(task, exc.why) from None
        except Exception as exc:
            raise RuntimeFailure(f"task {self.cluster._short(task)} failed: {first_line(exc)}") from None
        if "error" in result:
            error = result["error"]
            # An error from a device says which one already (worker:1/cpu:0); others get the task.
            where = None if error.get("origin") else f"on task {self.cluster._short(task)}"
            raise error_from_result(error, where)
        self.results[task] = result

    # --- health ------------------------------------------------------------------------------------
    def _running(self) -> list[str]:
        return [task for task in self.calls if task not in self.results]

    def _send_round(self, now: float) -> None:
        """Ping each running task (unless its last ping is unanswered) and ask every task of the
        step for its progress; both are read later, without blocking (`_check_pings`,
        `_check_deadlock`)."""
        for task in self._running():
            if task not in self.pings:
                self.pings[task] = (self.engine.submit(task, "ping"), now)
        self.progress_calls = {task: self.engine.submit(task, "progress", self.step_id) for task in self.calls}

    def _check_pings(self, now: float) -> None:
        """A task whose process died (Ray says so) or whose ping is unanswered for longer than
        PING_TIMEOUT_S is lost."""
        for task in self._running():
            sent = self.pings.get(task)
            if sent is None:
                continue
            call, at = sent
            if self.engine.wait([call], 0):
                try:
                    self.engine.result(task, call)
                except WorkerLost as exc:
                    raise self._lost(task, exc.why) from None
                self.pings.pop(task)
            elif now - at > PING_TIMEOUT_S:
                info = self.engine.infos[task]
                why = "its Ray node is gone" if not self.engine.node_alive(info.node_id) else \
                    f"it has not answered a health check for {now - at:.1f} s"
                raise self._lost(task, why)

    def _check_deadlock(self) -> None:
        """From the progress reports asked for a round ago: every running task idle on Recvs
        only, nothing sent that was not received, and no change over two rounds: no value can
        ever arrive."""
        calls, self.progress_calls = self.progress_calls, {}
        if not calls or not all(self.engine.wait([call], 0) for call in calls.values()):
            self.snapshots.clear()
            return
        snapshot = {}
        for task, call in calls.items():
            try:
                snapshot[task] = self.engine.result(task, call)
            except WorkerLost as exc:
                raise self._lost(task, exc.why) from None
        running = self._running()
        sent = sum(p["sent"] for p in snapshot.values() if p) + \
            sum(r.get("sent", 0) for t, r in self.results.items() if not snapshot.get(t))
        received = sum(p["received"] for p in snapshot.values() if p) + \
            sum(r.get("received", 0) for t, r in self.results.items() if not snapshot.get(t))
        stuck = all(p is None or p["stuck"] for t, p in snapshot.items() if t in running)
        if not stuck or sent != received:
            self.snapshots.clear()
            return
        self.snapshots.append((sent, received, tuple(sorted(t for t, p in snapshot.items() if p))))
        if len(self.snapshots) >= 2 and self.snapshots[-1] == self.snapshots[-2]:
            missing = [describe_key(key, _short_device) for p in snapshot.values() if p for key in p["waiting_keys"]]
            shown = "; ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
            raise RuntimeFailure(f"the graph cannot finish on the cluster: no task sends {shown or 'what is awaited'}",
                                 hint="every _Recv needs a _Send with the same tensor_name, send_device "
                                      "and recv_device that runs in the same step")

    def _lost(self, task: str, why: str) -> TaskLost:
        self.cluster.lost.add(task)
        info = self.engine.infos[task]
        waiting = self._waiting_on(task)
        return TaskLost(f"task {info.task.short_name} (Ray node {info.short_node}, pid {info.pid}) was lost "
                        f"during the step: {why}{waiting}", task=info.task.short_name,
                        hint="the step was stopped on every task; rerun it (a multi-step run restarts from "
                             "its latest checkpoint with --checkpoint-dir and --max-restarts, or resumes with --restore)")

    def _waiting_on(self, task: str | None) -> str:
        """'; worker:0 was waiting for tensor 'x:0' from worker:1/cpu:0 ...' (at most 3): what
        the other running tasks await from `task` (from anyone, when None). Asked of all at once,
        for at most PROGRESS_WAIT_S."""
        others = [t for t in self.calls if t != task and t not in self.results and t not in self.cluster.lost]
        calls = {}
        for other in others:
            try:
                calls[other] = self.engine.submit(other, "progress", self.step_id)
            except Exception:
                continue
        deadline = time.monotonic() + PROGRESS_WAIT_S
        lines = []
        for other, call in calls.items():
            if not self.engine.wait([call], max(0.0, deadline - time.monotonic())):
                continue
            try:
                progress = self.engine.result(other, call)
            except Exception:
                continue
            if not progress:
                continue
            keys = progress["waiting_keys"]
            if task is not None:
                keys = [k for k in keys if task_of(k[0]) == task]
            for key in keys[:3]:
                lines.append(f"{self.cluster._short(other)} was waiting for {describe_key(key, _short_device)}")
        return ("; " + "; ".join(lines[:3])) if lines else ""

    def _abort_all(self, error: BaseException) -> None:
        message = f"step stopped: {first_line(error)}"
        running = [task for task in self.calls if task not in self.results and task not in self.cluster.lost]
        for task in running:
            try:
                self.engine.submit(task, "abort", self.step_id, message)
            except Exception:
                continue
        deadline = time.monotonic() + ABORT_GRACE_S
        pending = [self.calls[t] for t in running]
        while pending and time.monotonic() < deadline:
            done = self.engine.wait(pending, deadline - time.monotonic())
            if not done:
                break
            pending = [c for c in pending if c not in done]


def _session_key(session) -> str:
    key = getattr(session, "_cluster_session_key", None)
    if key is None:
        key = session._cluster_session_key = uuid.uuid4().hex
    return key


def _merge_remote_stats(stats: TracedStep, remote: dict) -> None:
    """Fold a worker's device stats into the master's, on the master's clock."""
    offset = _clock_offset(stats, remote)
    for device_stats in remote["devices"]:
        shifted = device_stats.shifted(offset)
        if device_stats.device in stats.devices:
            stats.devices[device_stats.device].absorb(shifted)
        else:
            stats.devices[device_stats.device] = shifted
    stats.wall_ns = max(stats.wall_ns, remote["wall_ns"] + offset)


def _clock_offset(stats: TracedStep, remote: dict) -> int:
    """Nanoseconds to add to a worker's step times to put them on the master's clock. A worker
    on this machine reads the same perf counter (same perf_clock_id): the two origins compare
    exactly, so a _Recv never seems to end before its _Send began. Workers elsewhere are
    matched by wall clock (as good as the machines' clocks agree). A same-clock offset far from
    the wall-clock one means the ids lied (a clock namespace): the wall clock wins."""
    master_origin_wall_ns = time.time_ns() - (time.perf_counter_ns() - stats.origin_ns)
    by_wall = remote["origin_wall_ns"] - master_origin_wall_ns
    clock = remote.get("clock")
    if clock is not None and clock == perf_clock_id() and "origin_ns" in remote:
        by_perf = remote["origin_ns"] - stats.origin_ns
        if abs(by_perf - by_wall) < SAME_CLOCK_TOLERANCE_NS:
            return by_perf
    return by_wall


def measure_network(engine: RayCluster, rounds: int = 5) -> Link:
    """Latency and bandwidth between the master and the first task, measured once at start-up
    (small echoes for latency, a 4 MiB echo for bandwidth)."""
    task = engine.tasks[0].name
    engine.result(task, engine.submit(task, "echo", b""))    # warm the path
    small = []
    for _ in range(rounds):
        start = time.perf_counter()
        engine.result(task, engine.submit(task, "echo", b"x"))
        small.append(time.perf_counter() - start)
    latency = statistics.median(small) / 2
    payload = np.zeros(1 << 20, np.float32)
    start = time.perf_counter()
    engine.result(task, engine.submit(task, "echo", payload))
    elapsed = max(time.perf_counter() - start - 2 * latency, 1e-6)
    return Link(latency_seconds=latency, bytes_per_second=2 * payload.nbytes / elapsed)


def open_cluster(text: str, *, threads: int | None = None, compress: str = "none",
                 cost_model: CostModel | None = None) -> Cluster:
    """Start or join the cluster `--cluster TEXT` names (see spec.py); close it when done."""
    spec = parse_cluster(text)
    engine = RayCluster(spec, threads)
    try:
        return Cluster(engine, compress, cost_model)
    except BaseException:
        engine.close()
        raise


def _short_device(name: str) -> str:
    from ..placement.device_names import short_device_name

    try:
        return short_device_name(name)
    except DftoolError:
        return name
