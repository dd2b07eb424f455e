"""Ray underneath the cluster: starting or joining Ray, one actor per task, calls and their failures.

Ray does what a distributed runtime needs below the dataflow layer: it starts and supervises the
worker processes (one actor per task, on the Ray node a task is pinned to), moves numpy arrays
through its object store (zero-copy between processes of one node), reports an actor's death,
and schedules GPUs. This is the only module that imports Ray; the master (master.py) sees calls
(`submit`), their completion (`wait`) and their results (`result`, which raises WorkerLost when
the task's process or node is gone).

A private instance (`local:N`) is bound to loopback and shut down on every way out: normal return,
an error, Ctrl-C or SIGTERM (the CLI's signal handler calls `shutdown_all`), a timeout.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
import weakref
from dataclasses import dataclass

from ..errors import DeviceUnavailable, RuntimeFailure, UsageError
from .spec import ClusterSpec, TaskSpec
from .worker import WorkerService

INSTALL_HINT = "install the cluster extra: pip install 'dftool[cluster]'"
# A private instance's settings. Ray passes a call's arguments of up to 100 KiB inside the call
# and puts larger ones into the object store, which its raylet process manages: every
# activation of a mid-sized layer (a 64x512 float32 state is 128 KiB) then costs the raylet
# about as much CPU as the sending and receiving workers together (measured on the 8-layer RNN
# of tests/bench/bench_cluster.py: 0.8 of its 3.9 CPU-seconds per step). Up to 1 MiB travels
# inside the call (one copy, no raylet); larger arrays still go zero-copy through the store.
# Task events (Ray's per-call records for its dashboard) are not read by dftool.
PRIVATE_RAY_CONFIG = {"max_direct_call_object_size": 1 << 20, "task_events_report_interval_ms": 0}
START_TIMEOUT_S = 120.0      # a task whose process is not up by then cannot be scheduled
MAX_CONCURRENT_CALLS = 64    # per worker: run_graph of concurrent steps, deliveries, pings

_open_clusters: "weakref.WeakSet[RayCluster]" = weakref.WeakSet()


def available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _ray():
    try:
        import ray
    except ImportError:
        raise UsageError("--cluster needs Ray, which is not installed", hint=INSTALL_HINT) from None
    return ray


def loopback_only() -> None:
    """Make a Ray instance started from this process listen on loopback only. Ray advertises
    (and binds its gRPC servers to) the node's IP address; where clusters are disabled (its
    Windows/macOS default) it uses the loopback address instead. The variable reaches the Ray
    processes this one starts; the constant is read when Ray is imported, hence both."""
    os.environ[LOOPBACK_ENV] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        setattr(constants, "ENABLE_RAY_CLUSTER", False)


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class WorkerLost(RuntimeFailure):
    """A task's process died or its node went away."""

    def __init__(self, task: str, why: str):
        super().__init__(why)
        self.task = task
        self.why = why


@dataclass
class TaskInfo:
    """A running task: where Ray put it."""

    task: TaskSpec
    node_id: str
    node_ip: str
    pid: int
    host: str

    @property
    def short_node(self) -> str:
        return self.node_id[:12]


class _RayTransport:
    """A worker's way to its peers: fire-and-forget calls of their `deliver`, made by one sender
    thread per worker. A `_Send` only queues its value and goes on: a Ray call costs its caller
    about a millisecond on a busy machine, more than most tiny kernels, and the executor should
    not wait for it. What queued for one peer while the sender was making its previous calls
    leaves as one call, so a chatty graph (a loop whose control values cross to every task each
    iteration) pays the per-call cost once per burst rather than once per tensor.

    A call carries one argument (Ray serializes each argument on its own, a fixed cost apiece).
    A large array inside it still travels as Ray's zero-copy numpy: written into the object store
    once by the sender, mapped read-only by the receiver. The order of arrival does not matter:
    every key of a step (edge, frame and iteration) is sent once."""

    def __init__(self):
        self.peers: dict = {}
        self._pending: dict[str, list] = {}   # task -> messages not yet handed to Ray
        self._wake = threading.Condition()
        self._sender: threading.Thread | None = None

    def deliver(self, task: str, fingerprint: str, step_id: str, key: tuple, value, is_dead: bool) -> None:
        with self._wake:
            self._pending.setdefault(task, []).append((fingerprint, step_id, key, value, is_dead))
            if self._sender is None:
                self._sender = threading.Thread(target=self._send_forever, name="dftool-transport", daemon=True)
                self._sender.start()
            self._wake.notify()

    def _send_forever(self) -> None:
        while True:
            with self._wake:
                while not self._pending:
                    self._wake.wait()
                batches, self._pending = self._pending, {}
            for task, messages in batches.items():
                try:
                    self.peers[task].deliver.remote(messages)
                except Exception:   # the peer is gone: the master's health check names it
                    continue


class WorkerActor:
    """The Ray actor of one task: a WorkerService with a Ray transport. Its executors use the
    CPUs the task reserves unless `threads` says otherwise: Ray packs tasks onto a node by their
    reservations, so a worker that used every core of its machine would fight its neighbours
    (and numpy's BLAS threads follow the executor's, thread_budget.py)."""

    def __init__(self, task: TaskSpec, threads: int | None):
        import gc

        # As the dftool process does (cli/main.py): steps make many small objects, and at the
        # default thresholds the cycle collector walks the worker's heap every 700 allocations.
        gc.set_threshold(50_000, 20, 20)
        self.transport = _RayTransport()
        self.service = WorkerService(task, self.transport, threads if threads is not None else task_threads(task))

    def set_peers(self, peers: dict) -> None:
        self.transport.peers = peers

    def info(self) -> dict:
        import ray

        info = self.service.info()
        info["node_id"] = node_id = ray.get_runtime_context().get_node_id()
        info["node_ip"] = next((n.get("NodeManagerAddress") for n in ray.nodes() if n["NodeID"] == node_id), "")
        return info

    def invoke(self, call: tuple):
        """The master's calls, each as one argument (see _RayTransport): (method of the service,
        its positional arguments, its keyword arguments)."""
        method, args, kwargs = call
        if method not in SERVICE_METHODS:
            raise AttributeError(f"a worker has no method '{method}'")
        return getattr(self.service, method)(*args, **kwargs)

    def deliver(self, messages: list) -> None:
        for message in messages:
            self.service.deliver(*message)


# What the master may call on a worker (RayCluster.submit).
SERVICE_METHODS = frozenset({"register", "run_graph", "abort", "progress", "ping", "echo"})


def task_threads(task: TaskSpec) -> int:
    """Executor threads for a task: the whole CPUs it reserves, at least one."""
    return max(1, int(task.cpus))


class RayCluster:
    """A started (or joined) Ray with one actor per task. Use as a context manager, or close()."""

    def __init__(self, spec: ClusterSpec, threads: int | None = None):
        if spec.private:
            loopback_only()
        ray = _ray()
        self.spec = spec
        self.owns_ray = False
        self.tasks: list[TaskSpec] = list(spec.tasks)
        self.infos: dict[str, TaskInfo] = {}
        self._actors: dict = {}
        self._threads: int | None = threads
        self.generation = 0          # +1 each time workers are replaced (registrations are lost)
        self._closed = False
        self._lock = threading.Lock()
        _open_clusters.add(self)
        try:
            self._connect(ray)
            if not self.tasks:   # joined without a spec file: one task per alive node
                self.tasks = self._task_per_node(ray)
            self._start_workers(ray, threads)
        except BaseException:
            self.close()
            raise

    # --- starting ----------------------------------------------------------------------------
    def _connect(self, ray) -> None:
        if ray.is_initialized():
            return    # a caller (a test, a notebook) already connected this process
        quiet = dict(log_to_driver=False, logging_level=logging.ERROR, configure_logging=True,
                     include_dashboard=False)
        env = {"env_vars": {"RAY_IGNORE_UNHANDLED_ERRORS": "1", "PYTHONWARNINGS": "ignore"}}
        with _quiet_stderr():
            if self.spec.private:
                cpus = sum(task.cpus for task in self.tasks)
                gpus = sum(task.gpus for task in self.tasks)
                options = dict(address="local", num_cpus=max(1, int(cpus + 0.999)), runtime_env=env,
                               _system_config=PRIVATE_RAY_CONFIG)
                if gpus:
                    options["num_gpus"] = _gpus_here()
                ray.init(**options, **quiet)
            else:
                try:
                    ray.init(address=self.spec.address, runtime_env=env, **quiet)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise DeviceUnavailable(f"cannot join the Ray cluster at {self.spec.address}: "
                                            f"{first_line(exc)}",
                                            hint="start one with `ray start --head`, or use --cluster local:N") from None
        self.owns_ray = True

    def _task_per_node(self, ray) -> list[TaskSpec]:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        return [TaskSpec("worker", k, 1.0, int(n.get("Resources", {}).get("GPU", 0)), n["NodeID"])
                for k, n in enumerate(sorted(nodes, key=lambda n: n["NodeID"]))]

    def _start_workers(self, ray, threads: int | None) -> None:
        self._threads = threads
        self._start(ray, self.tasks)

    def _start(self, ray, tasks: list[TaskSpec]) -> None:
        """Start an actor for each of `tasks`, wait until all are up, then tell every worker
        where its peers are."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        actor_class = ray.remote(WorkerActor)
        nodes = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}
        # Machines other than this one may lack dftool: then its code travels with the workers
        # (shipping costs seconds per start, so not when every node is here).
        ship = None if all(_is_this_machine(n.get("NodeManagerAddress", "")) for n in nodes.values()) \
            else _shipped_env()
        for task in tasks:
            # On a private instance every task shares this machine anyway; reserving no Ray CPU
            # lets a second cluster of this process (a notebook, a test) reuse the instance.
            cpus = 0 if self.spec.private else task.cpus
            options: dict = dict(num_cpus=cpus, num_gpus=task.gpus, max_concurrency=MAX_CONCURRENT_CALLS,
                                 max_restarts=0)
            if task.node is not None:
                node_id = _node_id(task, nodes)
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
            if ship is not None:
                options["runtime_env"] = ship
            self._actors[task.name] = actor_class.options(**options).remote(task, self._threads)
        pending = {self._actors[t.name].info.remote(): t for t in tasks}
        ready, waiting = ray.wait(list(pending), num_returns=len(pending), timeout=START_TIMEOUT_S)
        if waiting:
            task = pending[waiting[0]]
            raise DeviceUnavailable(f"task {task.short_name} did not start within {START_TIMEOUT_S:.0f} s "
                                    f"(it asks for {task.cpus:g} CPU, {task.gpus} GPU"
                                    f"{', node ' + task.node if task.node else ''})",
                                    hint="the Ray cluster lacks the resources; see `ray status`")
        for ref in ready:
            task = pending[ref]
            try:
                info = ray.get(ref)
            except Exception as exc:
                raise DeviceUnavailable(f"task {task.short_name} failed to start: {first_line(exc)}") from None
            self.infos[task.name] = TaskInfo(task, info["node_id"], info["node_ip"], info["pid"], info["host"])
        ray.get([actor.set_peers.remote(self._actors) for actor in self._actors.values()])

    def restart(self, tasks: list[str]) -> None:
        """Replace the workers of `tasks` (lost, or stuck) by fresh ones: what they held (compiled
        partitions, variables) is gone, the other tasks keep theirs."""
        ray = _ray()
        for name in tasks:
            actor = self._actors.pop(name, None)
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
            self.infos.pop(name, None)
        self.generation += 1
        self._start(ray, [task for task in self.tasks if task.name in tasks])

    # --- calls -------------------------------------------------------------------------------
    def submit(self, task: str, method: str, *args, **kwargs):
        """Start `method` on the task's worker; returns a handle for wait/result."""
        return self._actors[task].invoke.remote((method, args, kwargs))

    def wait(self, calls: list, timeout: float) -> list:
        """The calls among `calls` that have finished, waiting up to `timeout` for the first."""
        import ray

        if not calls:
            return []
        done, _ = ray.wait(list(calls), num_returns=1, timeout=max(0.0, timeout))
        if done:   # and any others that are done too, without waiting
            more, _ = ray.wait(list(calls), num_returns=len(calls), timeout=0)
            done = list(set(done) | set(more))
        return done

    def result(self, task: str, call, timeout: float | None = None):
        """The call's value; WorkerLost when the task's process or node is gone."""
        import ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayActorError

        try:
            return ray.get(call, timeout=timeout)
        except GetTimeoutError:
            raise
        except (RayActorError, ActorDiedError, ActorUnavailableError) as exc:
            raise WorkerLost(task, _death_reason(exc)) from None

    def is_timeout(self, exc: BaseException) -> bool:
        from ray.exceptions import GetTimeoutError

        return isinstance(exc, GetTimeoutError)

    def node_alive(self, node_id: str) -> bool:
        import ray

        return any(n["NodeID"] == node_id and n.get("Alive") for n in ray.nodes())

    # --- stopping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every task's process; a private Ray instance is shut down too."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            import ray
        except ImportError:
            return
        if not ray.is_initialized():
            return
        with _quiet_stderr():
            for actor in self._actors.values():
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
            self._actors.clear()
            if self.owns_ray:
                with contextlib.suppress(Exception):
                    ray.shutdown()

    def __enter__(self) -> "RayCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def shutdown_all() -> None:
    """Close every open cluster (called by the CLI's signal handler before it exits)."""
    for cluster in list(_open_clusters):
        with contextlib.suppress(BaseException):
            cluster.close()


def _node_id(task: TaskSpec, nodes: dict) -> str:
    assert task.node is not None
    for node_id, node in nodes.items():
        if task.node in (node_id, node.get("NodeManagerAddress"), node.get("NodeName")):
            return node_id
    known = ", ".join(f"{i[:12]} ({n.get('NodeManagerAddress')})" for i, n in nodes.items())
    raise DeviceUnavailable(f"task {task.short_name}: no alive Ray node '{task.node}'",
                            hint=f"the nodes are: {known}")


def _gpus_here() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def _shipped_env() -> dict:
    """Workers on machines without dftool get the graphtool package shipped along."""
    import graphtool

    return {"py_modules": [os.path.dirname(graphtool.__file__)],
            "env_vars": {"RAY_IGNORE_UNHANDLED_ERRORS": "1", "PYTHONWARNINGS": "ignore"}}


def _is_this_machine(address: str) -> bool:
    import socket

    if address in ("127.0.0.1", "::1", "localhost", ""):
        return True
    try:
        return address in socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return False


def _death_reason(exc: BaseException) -> str:
    text = first_line(exc)
    lowered = str(exc).lower()
    # Ray's text names the node (its id, its address) whatever died, so the process phrases are
    # looked for first: "its worker process has died", "killed", "exited".
    if any(phrase in lowered for phrase in ("process has died", "process died", "killed", "sigkill", "exited")):
        return "its process died"
    if any(phrase in lowered for phrase in ("node has died", "node died", "node is dead", "node was removed",
                                            "node removed")):
        return "its Ray node died"
    if "died" in lowered or "dead" in lowered:
        return "its process died"
    return text


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's text (Ray's errors span many)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


@contextlib.contextmanager
def _quiet_stderr():
    """Ray prints start-up banners and shutdown notes through Python logging and to fd 2 of this
    process: keep them off the user's terminal (dftool's own lines are the only output)."""
    saved = logging.getLogger("ray").level
    logging.getLogger("ray").setLevel(logging.ERROR)
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            yield
        finally:
            logging.getLogger("ray").setLevel(saved)

